//! Tests of `arctern::state`: sealing, tampering, binding, expiry, keys and digests.

// Wrapped in a module so that `cargo test -p arctern state` selects every test here.
mod state {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    use arctern::state::{
        ArgsDigest, CodecError, ConfigError, INVALID_STATE_MESSAGE, KeyError, KeyId, KeyRing,
        ManualClock, RejectReason, SealError, StateBinding, StateCodec, StateKey, StatePayload,
        StateRejection, StateSealer, UnsealError, XChaChaCodec, args_digest, canonical_json,
        question_digest,
    };
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use rand::rngs::StdRng;
    use rand::{RngExt as _, SeedableRng as _};
    use serde_json::{Map, Value, json};

    const T0: u64 = 1_800_000_000;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    fn material(seed: u8) -> Vec<u8> {
        (0u8..32)
            .map(|i| i.wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn key(id: &str, seed: u8) -> StateKey {
        StateKey::from_bytes(KeyId::new(id).unwrap(), &material(seed)).unwrap()
    }

    fn ring(keys: impl IntoIterator<Item = StateKey>) -> KeyRing {
        KeyRing::new(keys).unwrap()
    }

    fn sealer_with(ring: KeyRing, audience: &str, clock: &ManualClock) -> StateSealer {
        StateSealer::builder(audience)
            .keys(ring)
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    fn fixture() -> (StateSealer, ManualClock) {
        let clock = ManualClock::new(T0);
        (
            sealer_with(ring([key("k1", 1)]), "Provisioner", &clock),
            clock,
        )
    }

    fn binding() -> StateBinding {
        StateBinding::for_request(
            "tools/call",
            "provision",
            Some(&json!({"region": "eu", "size": 3, "tags": ["a", "b"]})),
        )
        .with_principal("alice")
    }

    fn payload() -> StatePayload {
        let mut p = StatePayload::with_state("{\"step\":2,\"order\":\"o-123\"}");
        p.round = 1;
        p.answers.insert(
            "confirm".into(),
            json!({"action": "accept", "content": {"ok": true}}),
        );
        p.asked.insert(
            "confirm".into(),
            question_digest(
                "elicitation/create",
                &json!({"message": "Provision 3 servers in eu?"}),
            ),
        );
        p
    }

    fn reason(result: Result<StatePayload, StateRejection>) -> RejectReason {
        match result {
            Ok(p) => panic!("accepted: {p:?}"),
            Err(e) => e.reason(),
        }
    }

    fn decode(token: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(token).unwrap()
    }

    fn encode(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn round_trip() {
        let (sealer, _) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(sealer.open(&token, &binding()).unwrap(), payload());
        // Opening twice works (no single-use semantics at this layer).
        assert_eq!(sealer.open(&token, &binding()).unwrap(), payload());
    }

    #[test]
    fn tokens_are_fresh_and_opaque() {
        let (sealer, _) = fixture();
        let a = sealer.seal(&binding(), &payload()).unwrap();
        let b = sealer.seal(&binding(), &payload()).unwrap();
        assert_ne!(a, b, "random nonce and salt per seal");
        let raw = decode(&a);
        let needle = b"o-123";
        assert!(!raw.windows(needle.len()).any(|w| w == needle));
        assert!(!a.contains("o-123"));
        // Header: version 1, key id "k1" in clear.
        assert_eq!(&raw[..4], &[1, 2, b'k', b'1']);
    }

    #[test]
    fn every_base64_character_substitution_is_rejected() {
        let (sealer, _) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        let original = token.as_bytes();
        let mut checked = 0;
        for i in 0..original.len() {
            for &c in ALPHABET {
                if c == original[i] {
                    continue;
                }
                let mut t = original.to_vec();
                t[i] = c;
                let t = String::from_utf8(t).unwrap();
                let r = reason(sealer.open(&t, &binding()));
                assert!(
                    matches!(
                        r,
                        RejectReason::Malformed
                            | RejectReason::AuthFailed
                            | RejectReason::UnknownKey
                            | RejectReason::UnsupportedVersion
                    ),
                    "position {i}: {r:?}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, original.len() * 63);
    }

    #[test]
    fn every_bit_flip_is_rejected() {
        let (sealer, _) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        let raw = decode(&token);
        for i in 0..raw.len() {
            for bit in 0..8 {
                let mut t = raw.clone();
                t[i] ^= 1 << bit;
                let r = reason(sealer.open(&encode(&t), &binding()));
                let expected = match i {
                    0 => RejectReason::UnsupportedVersion,
                    // Changing the id length or the id: the id no longer names a key, or the
                    // framing breaks.
                    1..=3 => r,
                    _ => RejectReason::AuthFailed,
                };
                assert_eq!(r, expected, "byte {i} bit {bit}");
                assert!(matches!(
                    r,
                    RejectReason::UnsupportedVersion
                        | RejectReason::Malformed
                        | RejectReason::UnknownKey
                        | RejectReason::AuthFailed
                ));
            }
        }
    }

    #[test]
    fn every_truncation_is_rejected() {
        let (sealer, _) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        for n in 0..token.len() {
            let r = reason(sealer.open(&token[..n], &binding()));
            assert!(
                matches!(r, RejectReason::Malformed | RejectReason::AuthFailed),
                "{n}: {r:?}"
            );
        }
        let raw = decode(&token);
        for n in 0..raw.len() {
            let r = reason(sealer.open(&encode(&raw[..n]), &binding()));
            assert!(
                matches!(r, RejectReason::Malformed | RejectReason::AuthFailed),
                "{n}: {r:?}"
            );
        }
        // Appending bytes breaks authentication too.
        let mut longer = raw.clone();
        longer.push(0);
        assert_eq!(
            reason(sealer.open(&encode(&longer), &binding())),
            RejectReason::AuthFailed
        );
    }

    #[test]
    fn garbage_is_rejected() {
        let (sealer, _) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        let b = binding();
        for bad in [
            String::new(),
            "plaintext-garbage".to_owned(),
            "é".to_owned(),
            "🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐🔐".to_owned(),
            format!("{token}é"),
            format!("é{token}"),
            format!("{token}="),
            format!("{token}=="),
            format!(" {token}"),
            format!("{token}\n"),
            token.replace('-', "+").replace('_', "/"),
            STANDARD.encode(decode(&token)),
            "{\"step\":2}".to_owned(),
            "null".to_owned(),
        ] {
            if bad == token {
                continue;
            }
            let r = reason(sealer.open(&bad, &b));
            assert!(
                matches!(
                    r,
                    RejectReason::Malformed
                        | RejectReason::UnsupportedVersion
                        | RejectReason::UnknownKey
                ),
                "{bad:?}: {r:?}"
            );
        }
    }

    #[test]
    fn crafted_headers() {
        let (sealer, _) = fixture();
        let b = binding();
        let mut body = vec![0u8; 80];
        // Unknown version.
        body[0] = 2;
        assert_eq!(
            reason(sealer.open(&encode(&body), &b)),
            RejectReason::UnsupportedVersion
        );
        // Zero-length key id.
        body[0] = 1;
        body[1] = 0;
        assert_eq!(
            reason(sealer.open(&encode(&body), &b)),
            RejectReason::Malformed
        );
        // Key id longer than the token.
        body[1] = 255;
        assert_eq!(
            reason(sealer.open(&encode(&body), &b)),
            RejectReason::Malformed
        );
        // A well-formed header naming a key that is not in the ring.
        body[1] = 2;
        body[2] = b'z';
        body[3] = b'z';
        assert_eq!(
            reason(sealer.open(&encode(&body), &b)),
            RejectReason::UnknownKey
        );
        // The right key id but random contents.
        body[2] = b'k';
        body[3] = b'1';
        assert_eq!(
            reason(sealer.open(&encode(&body), &b)),
            RejectReason::AuthFailed
        );
        // Too short to hold nonce and tag.
        assert_eq!(
            reason(sealer.open(&encode(&body[..4 + 24 + 15]), &b)),
            RejectReason::Malformed
        );
    }

    #[test]
    fn oversized_tokens_are_rejected_before_decoding() {
        let (sealer, _) = fixture();
        let huge = "A".repeat(sealer.max_token_len() + 1);
        assert_eq!(
            reason(sealer.open(&huge, &binding())),
            RejectReason::TooLarge
        );
        let huge = "é".repeat(sealer.max_token_len());
        assert_eq!(
            reason(sealer.open(&huge, &binding())),
            RejectReason::TooLarge
        );
    }

    #[test]
    fn sealing_too_much_state_fails() {
        let clock = ManualClock::new(T0);
        let sealer = StateSealer::builder("srv")
            .key(key("k1", 1))
            .clock(clock)
            .max_token_len(1024)
            .build()
            .unwrap();
        let b = binding();
        // Plaintext alone over the limit.
        let err = sealer
            .seal(&b, &StatePayload::with_state("x".repeat(2000)))
            .unwrap_err();
        assert!(
            matches!(err, SealError::TooLarge { max: 1024, .. }),
            "{err}"
        );
        // Plaintext under the limit, token (base64 + header + tag) over it.
        let err = sealer
            .seal(&b, &StatePayload::with_state("x".repeat(700)))
            .unwrap_err();
        assert!(
            matches!(err, SealError::TooLarge { len, max: 1024 } if len > 1024),
            "{err}"
        );
        // The largest that fits is accepted and opens.
        let mut size = 700;
        let token = loop {
            size -= 1;
            if let Ok(t) = sealer.seal(&b, &StatePayload::with_state("x".repeat(size))) {
                break t;
            }
        };
        assert!(token.len() <= 1024 && token.len() > 1020);
        assert_eq!(sealer.open(&token, &b).unwrap().state.unwrap().len(), size);
    }

    #[test]
    fn expiry() {
        let (sealer, clock) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        clock.advance(Duration::from_secs(599));
        assert!(sealer.open(&token, &binding()).is_ok());
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            reason(sealer.open(&token, &binding())),
            RejectReason::Expired
        );
        clock.advance(Duration::from_secs(100_000));
        assert_eq!(
            reason(sealer.open(&token, &binding())),
            RejectReason::Expired
        );
    }

    #[test]
    fn custom_ttl_and_clock_skew() {
        let keys = ring([key("k1", 1)]);
        let minter_clock = ManualClock::new(T0 + 30);
        let verifier_clock = ManualClock::new(T0);
        let minter = StateSealer::builder("srv")
            .keys(keys.clone())
            .clock(minter_clock.clone())
            .ttl(Duration::from_secs(10))
            .build()
            .unwrap();
        let verifier = StateSealer::builder("srv")
            .keys(keys)
            .clock(verifier_clock.clone())
            .ttl(Duration::from_secs(10))
            .build()
            .unwrap();
        // A sibling 30 s ahead: within the default 60 s skew.
        let token = minter.seal(&binding(), &payload()).unwrap();
        assert!(verifier.open(&token, &binding()).is_ok());
        // 61 s ahead: the expiry is further out than ttl + skew.
        minter_clock.set(T0 + 61);
        let token = minter.seal(&binding(), &payload()).unwrap();
        assert_eq!(
            reason(verifier.open(&token, &binding())),
            RejectReason::ExpiryTooFar
        );
        // A verifier with a shorter TTL refuses tokens minted with a much longer one.
        let long = StateSealer::builder("srv")
            .key(key("k1", 1))
            .clock(verifier_clock.clone())
            .ttl(Duration::from_secs(3600))
            .build()
            .unwrap();
        let token = long.seal(&binding(), &payload()).unwrap();
        assert_eq!(
            reason(verifier.open(&token, &binding())),
            RejectReason::ExpiryTooFar
        );
    }

    #[test]
    fn replay_against_another_request() {
        let (sealer, _) = fixture();
        let args = json!({"region": "eu", "size": 3, "tags": ["a", "b"]});
        let token = sealer.seal(&binding(), &payload()).unwrap();

        let other_tool = StateBinding::for_request("tools/call", "deprovision", Some(&args))
            .with_principal("alice");
        assert_eq!(
            reason(sealer.open(&token, &other_tool)),
            RejectReason::WrongTarget
        );

        let other_args = StateBinding::for_request(
            "tools/call",
            "provision",
            Some(&json!({"region": "eu", "size": 30, "tags": ["a", "b"]})),
        )
        .with_principal("alice");
        assert_eq!(
            reason(sealer.open(&token, &other_args)),
            RejectReason::WrongArguments
        );

        let other_method = StateBinding::for_request("prompts/get", "provision", Some(&args))
            .with_principal("alice");
        assert_eq!(
            reason(sealer.open(&token, &other_method)),
            RejectReason::WrongMethod
        );

        let other_principal =
            StateBinding::for_request("tools/call", "provision", Some(&args)).with_principal("bob");
        assert_eq!(
            reason(sealer.open(&token, &other_principal)),
            RejectReason::WrongPrincipal
        );

        let anonymous = StateBinding::for_request("tools/call", "provision", Some(&args));
        assert_eq!(
            reason(sealer.open(&token, &anonymous)),
            RejectReason::WrongPrincipal
        );
        let unbound = sealer.seal(&anonymous, &payload()).unwrap();
        assert!(sealer.open(&unbound, &anonymous).is_ok());
        assert_eq!(
            reason(sealer.open(&unbound, &binding())),
            RejectReason::WrongPrincipal
        );

        // Same arguments in another key order: accepted.
        let reordered = StateBinding::for_request(
            "tools/call",
            "provision",
            Some(&serde_json::from_str(r#"{"tags":["a","b"],"size":3.0,"region":"eu"}"#).unwrap()),
        )
        .with_principal("alice");
        assert!(sealer.open(&token, &reordered).is_ok());
    }

    #[test]
    fn resource_uris_are_bound() {
        let (sealer, _) = fixture();
        let a = StateBinding::new("resources/read", "file:///a.txt", args_digest(None));
        let b = StateBinding::new("resources/read", "file:///b.txt", args_digest(None));
        let token = sealer.seal(&a, &StatePayload::new()).unwrap();
        assert!(sealer.open(&token, &a).is_ok());
        assert_eq!(reason(sealer.open(&token, &b)), RejectReason::WrongTarget);
    }

    #[test]
    fn replay_against_another_server() {
        let clock = ManualClock::new(T0);
        let keys = ring([key("k1", 1)]);
        let provisioner = sealer_with(keys.clone(), "Provisioner", &clock);
        let briefing = sealer_with(keys, "Briefing", &clock);
        let token = provisioner.seal(&binding(), &payload()).unwrap();
        assert_eq!(
            reason(briefing.open(&token, &binding())),
            RejectReason::WrongAudience
        );
        // A per-request audience override is honoured on both sides.
        let tenant_a = binding().with_audience("tenant-a");
        let tenant_b = binding().with_audience("tenant-b");
        let token = provisioner.seal(&tenant_a, &payload()).unwrap();
        assert!(briefing.open(&token, &tenant_a).is_ok());
        assert_eq!(
            reason(provisioner.open(&token, &tenant_b)),
            RejectReason::WrongAudience
        );
        assert_eq!(
            reason(provisioner.open(&token, &binding())),
            RejectReason::WrongAudience
        );
    }

    #[test]
    fn unknown_key_and_same_id_other_key() {
        let clock = ManualClock::new(T0);
        let a = sealer_with(ring([key("k1", 1)]), "srv", &clock);
        let b = sealer_with(ring([key("k2", 2)]), "srv", &clock);
        let c = sealer_with(ring([key("k1", 3)]), "srv", &clock);
        let token = a.seal(&binding(), &payload()).unwrap();
        assert_eq!(reason(b.open(&token, &binding())), RejectReason::UnknownKey);
        assert_eq!(reason(c.open(&token, &binding())), RejectReason::AuthFailed);
        // Two ephemeral sealers never accept each other's tokens.
        let e1 = StateSealer::ephemeral("srv").unwrap();
        let e2 = StateSealer::ephemeral("srv").unwrap();
        assert!(e1.is_ephemeral() && !a.is_ephemeral());
        let token = e1.seal(&binding(), &payload()).unwrap();
        assert!(e1.open(&token, &binding()).is_ok());
        assert_eq!(
            reason(e2.open(&token, &binding())),
            RejectReason::UnknownKey
        );
    }

    #[test]
    fn rotation_without_downtime() {
        let clock = ManualClock::new(T0);
        let old = || key("old", 1);
        let new = || key("new", 2);
        let phase0 = sealer_with(ring([old()]), "srv", &clock);
        let phase1 = sealer_with(ring([old(), new()]), "srv", &clock);
        let phase2 = sealer_with(ring([new(), old()]), "srv", &clock);
        let phase3 = sealer_with(ring([new()]), "srv", &clock);
        let b = binding();
        let p = payload();

        let t0 = phase0.seal(&b, &p).unwrap();
        let t1 = phase1.seal(&b, &p).unwrap();
        let t2 = phase2.seal(&b, &p).unwrap();
        let t3 = phase3.seal(&b, &p).unwrap();

        // Phase 1 still seals with the old key, so phase-0 processes (mid-deploy) accept it.
        assert!(phase0.open(&t1, &b).is_ok());
        // Phase 1 verifies the new key before anyone seals with it.
        for t in [&t0, &t1, &t2, &t3] {
            assert!(phase1.open(t, &b).is_ok());
        }
        // Phase 2 seals with the new key; phase-1 siblings (mid-deploy) accept that...
        assert_eq!(decode(&t2)[2..5], *b"new");
        assert!(phase1.open(&t2, &b).is_ok());
        // ...and phase 2 keeps accepting tokens in flight sealed with the old key.
        for t in [&t0, &t1, &t2, &t3] {
            assert!(phase2.open(t, &b).is_ok());
        }
        // Phase 3, one TTL later: only the new key.
        assert!(phase3.open(&t2, &b).is_ok());
        assert!(phase3.open(&t3, &b).is_ok());
        assert_eq!(reason(phase3.open(&t0, &b)), RejectReason::UnknownKey);
        assert_eq!(reason(phase3.open(&t1, &b)), RejectReason::UnknownKey);
        // And tokens from the old key have expired by then anyway.
        clock.advance(Duration::from_secs(600));
        assert_eq!(reason(phase2.open(&t0, &b)), RejectReason::Expired);
    }

    #[test]
    fn args_digest_canonical_form() {
        let d = |v: Value| args_digest(Some(&v));
        // Key order does not matter, at any depth.
        assert_eq!(
            d(json!({"a": 1, "b": {"x": [1, 2], "y": null}})),
            args_digest(Some(
                &serde_json::from_str(r#"{"b":{"y":null,"x":[1,2]},"a":1}"#).unwrap()
            ))
        );
        // 1 and 1.0 (and 1e0) are the same number.
        let one_int: Value = serde_json::from_str(r#"{"n":1,"m":[2]}"#).unwrap();
        let one_float: Value = serde_json::from_str(r#"{"n":1.0,"m":[2.0]}"#).unwrap();
        let one_exp: Value = serde_json::from_str(r#"{"n":1e0,"m":[0.2e1]}"#).unwrap();
        assert_eq!(args_digest(Some(&one_int)), args_digest(Some(&one_float)));
        assert_eq!(args_digest(Some(&one_int)), args_digest(Some(&one_exp)));
        assert_eq!(d(json!(0)), d(json!(-0.0)));
        assert_eq!(d(json!(-5)), d(json!(-5.0)));
        assert_eq!(d(json!(9007199254740992u64)), d(json!(9007199254740992.0)));
        // Absent arguments, null and {} are the same.
        assert_eq!(args_digest(None), d(json!({})));
        assert_eq!(args_digest(None), d(Value::Null));
        // Real changes are noticed.
        let base = d(json!({"a": 1, "b": [1, {"c": "x"}]}));
        for changed in [
            json!({"a": "1", "b": [1, {"c": "x"}]}),
            json!({"a": 1.5, "b": [1, {"c": "x"}]}),
            json!({"a": 2, "b": [1, {"c": "x"}]}),
            json!({"a": 1, "b": [{"c": "x"}, 1]}),
            json!({"a": 1, "b": [1, {"c": "y"}]}),
            json!({"a": 1, "b": [1, {"c": "x", "d": null}]}),
            json!({"a": 1, "b": [1, {"C": "x"}]}),
            json!({"a": 1, "b": [1, [{"c": "x"}]]}),
            json!({"a": 1, "b": [1, {"c": "x"}], "z": false}),
            json!({"a": true, "b": [1, {"c": "x"}]}),
            json!({"b": [1, {"c": "x"}]}),
            json!([{"a": 1, "b": [1, {"c": "x"}]}]),
        ] {
            assert_ne!(base, d(changed.clone()), "{changed}");
        }
        assert_ne!(args_digest(None), d(json!([])));
        assert_ne!(d(json!({"a": ""})), d(json!({"a": null})));
        // Strings that need escaping stay distinct.
        assert_ne!(d(json!({"a": "x\"y"})), d(json!({"a": "x\\\"y"})));
        assert_ne!(d(json!({"a\"": "b"})), d(json!({"a": "\"b"})));
    }

    #[test]
    fn canonical_json_text() {
        assert_eq!(
            canonical_json(&json!({"b": 1.0, "a": [true, null, "é\u{7}"], "c": 0.5})),
            "{\"a\":[true,null,\"é\\u0007\"],\"b\":1,\"c\":5e-1}"
        );
    }

    #[test]
    fn question_digests() {
        let q = |kind: &str, v: Value| question_digest(kind, &v);
        let params = json!({"message": "Which region?", "requestedSchema": {"type": "object"}});
        let reordered: Value = serde_json::from_str(
            r#"{"requestedSchema":{"type":"object"},"message":"Which region?"}"#,
        )
        .unwrap();
        assert_eq!(
            q("elicitation/create", params.clone()),
            question_digest("elicitation/create", &reordered)
        );
        assert_ne!(
            q("elicitation/create", params.clone()),
            q("sampling/createMessage", params.clone())
        );
        assert_ne!(
            q("elicitation/create", params),
            q(
                "elicitation/create",
                json!({"message": "Which region? ", "requestedSchema": {"type": "object"}})
            )
        );
        // Question and argument digests live in separate domains.
        assert_ne!(
            q("x", json!({})).as_bytes(),
            args_digest(Some(&json!(["x", {}]))).as_bytes()
        );
    }

    fn random_string(rng: &mut StdRng) -> String {
        let len = rng.random_range(0..12);
        (0..len)
            .map(|_| match rng.random_range(0..6) {
                0 => char::from(rng.random_range(0u8..0x20)),
                1 => ['"', '\\', '/', 'é', '🔐', '\u{2028}'][rng.random_range(0..6)],
                _ => char::from(rng.random_range(b'a'..=b'z')),
            })
            .collect()
    }

    fn random_value(rng: &mut StdRng, depth: u32) -> Value {
        match rng.random_range(0..if depth > 3 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.random()),
            2 => json!(rng.random_range(-1_000_000i64..1_000_000)),
            3 => json!(rng.random_range(-1e9f64..1e9)),
            4 => Value::String(random_string(rng)),
            5 => Value::Array(
                (0..rng.random_range(0..4))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.random_range(0..4))
                    .map(|_| (random_string(rng), random_value(rng, depth + 1)))
                    .collect(),
            ),
        }
    }

    /// Serialises `value` with object members in reverse order and integers written as floats.
    fn reversed_json(value: &Value) -> String {
        match value {
            Value::Number(n) if n.is_i64() => format!("{n}.0"),
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(reversed_json).collect();
                format!("[{}]", items.join(","))
            }
            Value::Object(map) => {
                let members: Vec<String> = map
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reversed_json(v)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
            other => other.to_string(),
        }
    }

    #[test]
    fn random_payloads_round_trip() {
        let (sealer, _) = fixture();
        let mut rng = StdRng::seed_from_u64(0x5eed);
        for i in 0..500 {
            let mut p = StatePayload {
                state: rng.random_bool(0.7).then(|| random_string(&mut rng)),
                answers: Map::new(),
                asked: BTreeMap::new(),
                round: rng.random(),
                flow: rng.random_bool(0.5).then(|| arctern::state::Flow {
                    id: arctern::state::FlowId::from_bytes(rng.random()),
                    started_unix_ms: rng.random(),
                }),
                trace: rng.random_bool(0.5).then(|| arctern::state::FlowTrace {
                    trace_id: rng.random(),
                    span_id: rng.random(),
                    flags: rng.random(),
                }),
            };
            for _ in 0..rng.random_range(0..4) {
                p.answers
                    .insert(random_string(&mut rng), random_value(&mut rng, 0));
            }
            for _ in 0..rng.random_range(0..4) {
                let q = random_value(&mut rng, 0);
                p.asked.insert(
                    random_string(&mut rng),
                    question_digest("elicitation/create", &q),
                );
            }
            let args = random_value(&mut rng, 0);
            let target = random_string(&mut rng);
            let principal = random_string(&mut rng);
            let b = StateBinding::for_request("tools/call", &target, Some(&args))
                .with_principal_opt(rng.random_bool(0.5).then_some(principal.as_str()));
            let token = sealer.seal(&b, &p).unwrap();
            assert_eq!(sealer.open(&token, &b).unwrap(), p, "iteration {i}");
            // The same arguments sent with members in reverse order and integers spelled as
            // floats (`3.0`) give the same digest.
            let plain: Value = serde_json::from_str(&args.to_string()).unwrap();
            let reversed: Value = serde_json::from_str(&reversed_json(&args)).unwrap();
            assert_eq!(
                args_digest(Some(&plain)),
                args_digest(Some(&reversed)),
                "{args}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_flows_share_one_sealer() {
        let (sealer, _) = fixture();
        let sealer = Arc::new(sealer);
        let mut tasks = Vec::new();
        for i in 0..100u32 {
            let sealer = Arc::clone(&sealer);
            tasks.push(tokio::spawn(async move {
                let args = json!({"flow": i});
                let b = StateBinding::for_request("tools/call", "provision", Some(&args))
                    .with_principal(&format!("user-{i}"));
                let mut p = StatePayload::with_state(format!("flow-{i}"));
                let mut token = sealer.seal(&b, &p).unwrap();
                for round in 1..=5 {
                    tokio::task::yield_now().await;
                    let mut got = sealer.open(&token, &b).unwrap();
                    assert_eq!(got, p);
                    got.round = round;
                    got.answers.insert(format!("q{round}"), json!(round));
                    p = got;
                    token = sealer.seal(&b, &p).unwrap();
                }
                (i, token)
            }));
        }
        let mut tokens = Vec::new();
        for task in tasks {
            tokens.push(task.await.unwrap());
        }
        // No flow's token opens for another flow.
        for (i, token) in &tokens {
            let j = (i + 1) % 100;
            let other =
                StateBinding::for_request("tools/call", "provision", Some(&json!({"flow": j})))
                    .with_principal(&format!("user-{i}"));
            assert_eq!(
                reason(sealer.open(token, &other)),
                RejectReason::WrongArguments
            );
        }
    }

    #[test]
    fn rejection_is_one_fixed_error() {
        let expected = json!({"code": -32602, "message": "Invalid or expired requestState"});
        assert_eq!(INVALID_STATE_MESSAGE, "Invalid or expired requestState");
        let (sealer, clock) = fixture();
        let token = sealer.seal(&binding(), &payload()).unwrap();
        let mut rejections = vec![
            sealer.open("", &binding()).unwrap_err(),
            sealer.open(&token[1..], &binding()).unwrap_err(),
            sealer
                .open(&token, &binding().with_principal("mallory"))
                .unwrap_err(),
        ];
        clock.advance(Duration::from_secs(3600));
        rejections.push(sealer.open(&token, &binding()).unwrap_err());
        for rejection in rejections {
            assert_eq!(rejection.to_string(), INVALID_STATE_MESSAGE);
            assert_eq!(
                serde_json::to_value(rejection.to_error_object()).unwrap(),
                expected
            );
            let error: arctern_types::ErrorObject = rejection.into();
            assert_eq!(serde_json::to_value(error).unwrap(), expected);
        }
        let r = StateRejection::new(RejectReason::WrongAudience);
        assert_eq!(format!("{r}"), INVALID_STATE_MESSAGE);
        assert_eq!(r.reason().as_str(), "wrong_audience");
    }

    #[test]
    fn keys_never_print() {
        let secret = material(9);
        let b64 = STANDARD.encode(&secret);
        let k = StateKey::from_base64("prod-1", &b64).unwrap();
        let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        let ring = ring([k.clone()]);
        let sealer = StateSealer::with_keys("srv", ring.clone()).unwrap();
        let codec = XChaChaCodec::new(&ring);
        for text in [
            format!("{k:?}"),
            format!("{k:#?}"),
            format!("{ring:?}"),
            format!("{sealer:?}"),
            format!("{codec:?}"),
        ] {
            assert!(text.contains("prod-1"), "{text}");
            assert!(!text.contains(&b64[..16]), "{text}");
            assert!(!text.contains(&hex[..16]), "{text}");
            assert!(!text.contains(&format!("{:?}", &secret[..4])), "{text}");
            assert!(
                !text.contains("[0, 31, 62") && !text.contains("9, 40, 71"),
                "{text}"
            );
        }
        assert!(format!("{k:?}").contains("redacted"));
    }

    #[test]
    fn key_construction_errors() {
        assert_eq!(
            StateKey::from_base64("k", &STANDARD.encode([1u8; 16])).unwrap_err(),
            KeyError::TooShort { len: 16 }
        );
        assert_eq!(
            StateKey::from_base64("k", &STANDARD.encode([5u8; 32])).unwrap_err(),
            KeyError::Degenerate
        );
        assert_eq!(
            StateKey::from_base64("k", "not base64 at all!").unwrap_err(),
            KeyError::InvalidBase64
        );
        assert_eq!(
            StateKey::from_base64("bad id", &STANDARD.encode(material(1))).unwrap_err(),
            KeyError::InvalidId
        );
        assert!(matches!(
            StateKey::from_bytes(KeyId::new("k").unwrap(), &vec![1u8; 2000]).unwrap_err(),
            KeyError::TooLong { len: 2000 }
        ));
        // Standard and URL-safe alphabets, with or without padding, and longer material.
        let long: Vec<u8> = (0u8..=255).collect();
        for text in [
            STANDARD.encode(&long),
            URL_SAFE_NO_PAD.encode(&long),
            format!("  {}\n", STANDARD.encode(&long)),
        ] {
            let k = StateKey::from_base64("k", &text).unwrap();
            assert_eq!(k.id().as_str(), "k");
        }
        assert!(KeyRing::new([]).unwrap_err() == KeyError::EmptyRing);
        assert_eq!(
            KeyRing::new([key("a", 1), key("b", 2), key("a", 3)]).unwrap_err(),
            KeyError::DuplicateId("a".into())
        );
    }

    #[test]
    fn key_ring_from_text() {
        let a = STANDARD.encode(material(1));
        let b = URL_SAFE_NO_PAD.encode(material(2));
        let parsed = KeyRing::parse(&format!(" new:{b} ,\n old:{a},")).unwrap();
        let ids: Vec<&str> = parsed.keys().iter().map(|k| k.id().as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!(parsed.sealing_key().id().as_str(), "new");
        assert!(parsed.get("old").is_some() && parsed.get("nope").is_none());
        let same: KeyRing = format!("new:{b},old:{a}").parse().unwrap();
        // Tokens from the parsed ring open with an equivalent ring built from bytes.
        let clock = ManualClock::new(T0);
        let s1 = sealer_with(parsed, "srv", &clock);
        let s2 = sealer_with(same, "srv", &clock);
        let s3 = sealer_with(ring([key("new", 2)]), "srv", &clock);
        let t = s1.seal(&binding(), &payload()).unwrap();
        assert!(s2.open(&t, &binding()).is_ok());
        assert!(s3.open(&t, &binding()).is_ok());

        assert_eq!(KeyRing::parse(" , ").unwrap_err(), KeyError::EmptyRing);
        assert_eq!(
            KeyRing::parse(&format!("a:{a},{b}")).unwrap_err(),
            KeyError::MissingSeparator { entry: 2 }
        );
        let err = KeyRing::parse(&format!("a:{a},b:{}", &b[..20])).unwrap_err();
        assert!(
            matches!(&err, KeyError::Entry { entry: 2, source } if matches!(**source, KeyError::TooShort { .. } | KeyError::InvalidBase64))
        );
        assert!(!err.to_string().contains(&b[..20]));
        let err = KeyRing::parse(&format!("a:{a},a:{b}")).unwrap_err();
        assert_eq!(err, KeyError::DuplicateId("a".into()));
        // A key pasted where the id should be is not echoed back.
        let err = KeyRing::parse(&format!("{a}:{b}")).unwrap_err();
        assert!(!err.to_string().contains(&a[..20]), "{err}");
        assert_eq!(
            KeyRing::from_env("ARCTERN_TEST_SURELY_UNSET_VARIABLE").unwrap_err(),
            KeyError::EnvNotSet("ARCTERN_TEST_SURELY_UNSET_VARIABLE".into())
        );
    }

    #[test]
    fn builder_validation() {
        assert_eq!(
            StateSealer::builder("  ").build().unwrap_err(),
            ConfigError::EmptyAudience
        );
        assert_eq!(
            StateSealer::builder("s")
                .ttl(Duration::from_millis(500))
                .build()
                .unwrap_err(),
            ConfigError::InvalidTtl
        );
        assert_eq!(
            StateSealer::builder("s")
                .ttl(Duration::from_secs(400 * 24 * 3600))
                .build()
                .unwrap_err(),
            ConfigError::InvalidTtl
        );
        assert_eq!(
            StateSealer::builder("s")
                .max_token_len(100)
                .build()
                .unwrap_err(),
            ConfigError::MaxTokenLenTooSmall
        );
        let s = StateSealer::builder("s").build().unwrap();
        assert_eq!(s.audience(), "s");
        assert_eq!(s.ttl(), Duration::from_secs(600));
        assert_eq!(s.max_token_len(), 8192);
        assert!(s.is_ephemeral());
    }

    /// A toy codec: hex with a version prefix and a (non-cryptographic) checksum. It stands in
    /// for a KMS-backed codec to show the sealer enforces every claim whatever the codec.
    #[derive(Debug)]
    struct HexCodec;

    impl StateCodec for HexCodec {
        fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError> {
            let sum: u8 = plaintext.iter().fold(0u8, |a, b| a.wrapping_add(*b));
            let mut out = String::from("hex1.");
            for b in plaintext.iter().chain([sum].iter()) {
                out.push_str(&format!("{b:02x}"));
            }
            Ok(out)
        }

        fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError> {
            let hex = token.strip_prefix("hex1.").ok_or(UnsealError::Malformed)?;
            if hex.len() % 2 != 0 || hex.len() < 2 {
                return Err(UnsealError::Malformed);
            }
            let mut bytes = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| UnsealError::Malformed)?;
            let sum = bytes.pop().unwrap_or_default();
            if bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)) != sum {
                return Err(UnsealError::Other("checksum mismatch".into()));
            }
            Ok(bytes)
        }
    }

    #[test]
    fn custom_codec_claims_are_still_enforced() {
        let clock = ManualClock::new(T0);
        let sealer = StateSealer::builder("srv")
            .codec(HexCodec)
            .clock(clock.clone())
            .build()
            .unwrap();
        assert!(!sealer.is_ephemeral());
        let token = sealer.seal(&binding(), &payload()).unwrap();
        assert!(token.starts_with("hex1."));
        assert_eq!(sealer.open(&token, &binding()).unwrap(), payload());
        assert_eq!(
            reason(sealer.open(&token, &binding().with_principal("bob"))),
            RejectReason::WrongPrincipal
        );
        assert_eq!(
            reason(sealer.open("hex1.0000", &binding())),
            RejectReason::UnsupportedClaimsVersion
        );
        assert_eq!(
            reason(sealer.open("hex1.0101", &binding())),
            RejectReason::MalformedClaims
        );
        assert_eq!(
            reason(sealer.open("hex1.0102", &binding())),
            RejectReason::Codec
        );
        clock.advance(Duration::from_secs(600));
        assert_eq!(
            reason(sealer.open(&token, &binding())),
            RejectReason::Expired
        );
    }

    #[test]
    fn binding_accessors() {
        let b = binding();
        assert_eq!(b.method(), "tools/call");
        assert!(b.has_principal());
        assert_eq!(
            *b.args_digest(),
            args_digest(Some(
                &json!({"tags": ["a", "b"], "size": 3, "region": "eu"})
            ))
        );
        let d: ArgsDigest = *b.args_digest();
        assert_eq!(ArgsDigest::from_bytes(*d.as_bytes()), d);
        assert_eq!(d.to_hex().len(), 64);
        assert!(!format!("{b:?}").contains("alice"));
    }
}
