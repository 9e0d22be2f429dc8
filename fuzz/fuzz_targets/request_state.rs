//! The request-state open path: a sealer with a fixed key, clock and binding opens whatever a
//! client echoes as `requestState`. The first byte picks what the rest is:
//!
//! - 0..=127: the token itself (the codec's framing: base64url, version, key id, nonce, tag);
//! - 128..=191: a payload (round, state, carried answers, question pins) sealed under the
//!   right claims, so that the payload decoder sees arbitrary bytes behind a genuine seal;
//! - 192..=255: a whole plaintext (claims and payload) sealed with the right key.
//!
//! Opening never panics; every refusal is the one fixed client error; a payload that opens
//! seals again and opens to the same payload.
#![no_main]

use std::sync::OnceLock;

use arctern::state::{
    INVALID_STATE_MESSAGE, KeyId, KeyRing, ManualClock, StateBinding, StateKey, StatePayload,
    StateSealer, args_digest,
};
use libfuzzer_sys::fuzz_target;

/// The claims before the payload, when no principal is bound.
const CLAIMS_LEN: usize = 1 + 8 + 16 + 32 + 32 + 16 + 1;

struct Fixture {
    sealer: StateSealer,
    binding: StateBinding,
    /// The claims of a genuine token for `binding`, without its payload.
    claims: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let key = StateKey::from_bytes(
            KeyId::new("fuzz").unwrap(),
            b"arctern fuzz key, fixed, 32 byte",
        )
        .unwrap();
        let sealer = StateSealer::builder("fuzz-audience")
            .keys(KeyRing::single(key))
            .clock(ManualClock::new(1_800_000_000))
            .build()
            .unwrap();
        let args = serde_json::json!({"name": "orders"});
        let binding = StateBinding::new("tools/call", "provision", args_digest(Some(&args)));
        let token = sealer.seal(&binding, &StatePayload::new()).unwrap();
        let plaintext = sealer.codec().unseal(&token).unwrap();
        assert_eq!(plaintext[CLAIMS_LEN - 1], 0, "no principal bound");
        let claims = plaintext[..CLAIMS_LEN].to_vec();
        Fixture {
            sealer,
            binding,
            claims,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let token = match mode {
        0..=127 => String::from_utf8_lossy(rest).into_owned(),
        128..=191 => {
            let mut plaintext = f.claims.clone();
            plaintext.extend_from_slice(rest);
            f.sealer.codec().seal(&plaintext).unwrap()
        }
        _ => f.sealer.codec().seal(rest).unwrap(),
    };
    match f.sealer.open(&token, &f.binding) {
        Ok(payload) => {
            let again = f
                .sealer
                .seal(&f.binding, &payload)
                .expect("an opened payload seals again");
            assert_eq!(f.sealer.open(&again, &f.binding), Ok(payload));
        }
        Err(rejection) => {
            let error = rejection.to_error_object();
            assert_eq!(error.code.0, -32602);
            assert_eq!(error.message, INVALID_STATE_MESSAGE);
        }
    }
});
