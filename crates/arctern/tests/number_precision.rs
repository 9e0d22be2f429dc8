//! Exact numbers in the argument digest and in carried answers, whatever serde_json's
//! features. CI also runs this file with `--features serde_json/arbitrary_precision`, which a
//! dependency may turn on by feature unification: numbers then keep their text, a handler
//! can tell `18446744073709551616` from `18446744073709551617`, and so must the digest that
//! binds a request's state to its arguments.

#![cfg(feature = "server")]

use arctern::state::{KeyRing, StateBinding, StatePayload, StateSealer, args_digest};
use serde_json::{Number, Value};

/// Whether this build keeps numbers' text (serde_json's `arbitrary_precision`).
fn keeps_text() -> bool {
    serde_json::from_str::<Number>("18446744073709551617")
        .is_ok_and(|n| n.to_string() == "18446744073709551617")
}

/// The digest of `{"n": text}`, when serde_json reads the number at all (without
/// `arbitrary_precision`, `1e400` is out of range).
fn digest(text: &str) -> Option<arctern::state::ArgsDigest> {
    let value: Value = serde_json::from_str(&format!(r#"{{"n":{text}}}"#)).ok()?;
    Some(args_digest(Some(&value)))
}

#[test]
fn equal_numbers_share_a_digest() {
    for (a, b) in [
        ("1", "1.0"),
        ("1", "1e0"),
        ("100", "1e2"),
        ("0.1", "1e-1"),
        ("0", "-0.0"),
        ("2.5", "25e-1"),
    ] {
        assert_eq!(digest(a), digest(b), "{a} and {b}");
    }
}

#[test]
fn numbers_a_handler_can_tell_apart_never_share_a_digest() {
    let pairs = [
        ("18446744073709551616", "18446744073709551617"),
        ("1", "1.00000000000000000001"),
        ("0.1", "0.10000000000000001"),
        ("1e400", "2e400"),
    ];
    for (a, b) in pairs {
        let (Some(da), Some(db)) = (digest(a), digest(b)) else {
            assert!(!keeps_text(), "with the feature every number parses");
            continue;
        };
        if keeps_text() {
            assert_ne!(da, db, "{a} and {b}");
        } else {
            // Without the feature both parse to the same f64: the handler sees one value.
            assert_eq!(da, db, "{a} and {b}");
        }
    }
}

#[test]
fn carried_answers_keep_their_exact_numbers() {
    let sealer = StateSealer::builder("precision")
        .keys(KeyRing::generate())
        .build()
        .unwrap();
    let binding = StateBinding::for_request("tools/call", "t", None);
    for text in [
        "18446744073709551617",
        "1.00000000000000000001",
        "0.5",
        "-7",
    ] {
        let number: Value = serde_json::from_str(text).unwrap();
        let mut payload = StatePayload::default();
        payload.answers.insert(
            "n".to_owned(),
            serde_json::json!({"content": {"n": number}}),
        );
        let token = sealer.seal(&binding, &payload).unwrap();
        let opened = sealer.open(&token, &binding).unwrap();
        assert_eq!(opened, payload, "{text}");
        assert_eq!(
            opened.answers["n"]["content"]["n"].to_string(),
            number.to_string(),
            "{text}"
        );
    }
}
