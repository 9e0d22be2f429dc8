//! Benchmarks of `requestState` sealing: seal, open, seal + open, and the per-request
//! binding (argument digest and field digests).

use std::hint::black_box;

use arctern::state::{
    KeyId, KeyRing, StateBinding, StateKey, StatePayload, StateSealer, args_digest, question_digest,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn sealer() -> StateSealer {
    let material: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    let key = StateKey::from_bytes(KeyId::new("k1").unwrap(), &material).unwrap();
    StateSealer::with_keys("bench-server", KeyRing::single(key)).unwrap()
}

/// A typical small payload: a little handler state, one carried answer and its pin.
fn small_payload() -> StatePayload {
    let mut p = StatePayload::with_state("{\"step\":2,\"order\":\"o-123\"}");
    p.round = 1;
    p.answers.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"ok": true}}),
    );
    p.asked.insert(
        "confirm".into(),
        question_digest("elicitation/create", &json!({"message": "Go ahead?"})),
    );
    p
}

fn bench(c: &mut Criterion) {
    let sealer = sealer();
    let args = json!({"region": "eu-west-1", "size": 3, "tags": ["web", "prod"]});
    let binding =
        StateBinding::for_request("tools/call", "provision", Some(&args)).with_principal("alice");
    let anonymous = StateBinding::for_request("tools/call", "provision", Some(&args));
    let small = small_payload();
    let state_only = StatePayload::with_state("step-2");
    let token = sealer.seal(&binding, &small).unwrap();
    let state_only_token = sealer.seal(&anonymous, &state_only).unwrap();
    eprintln!(
        "token lengths: small payload with principal {} chars, state-only without principal {} chars",
        token.len(),
        state_only_token.len()
    );

    let mut g = c.benchmark_group("state");
    g.bench_function("seal/small", |b| {
        b.iter(|| sealer.seal(black_box(&binding), black_box(&small)).unwrap())
    });
    g.bench_function("open/small", |b| {
        b.iter(|| sealer.open(black_box(&token), black_box(&binding)).unwrap())
    });
    g.bench_function("seal+open/small", |b| {
        b.iter(|| {
            let t = sealer.seal(black_box(&binding), black_box(&small)).unwrap();
            sealer.open(&t, black_box(&binding)).unwrap()
        })
    });
    g.bench_function("seal+open/state-only", |b| {
        b.iter(|| {
            let t = sealer
                .seal(black_box(&anonymous), black_box(&state_only))
                .unwrap();
            sealer.open(&t, black_box(&anonymous)).unwrap()
        })
    });
    g.bench_function("open/rejected-tampered", |b| {
        let mut bad = token.clone().into_bytes();
        let mid = bad.len() / 2;
        bad[mid] = if bad[mid] == b'A' { b'B' } else { b'A' };
        let bad = String::from_utf8(bad).unwrap();
        b.iter(|| {
            sealer
                .open(black_box(&bad), black_box(&binding))
                .unwrap_err()
        })
    });
    g.bench_function("binding/per-request", |b| {
        b.iter(|| {
            StateBinding::for_request("tools/call", black_box("provision"), Some(black_box(&args)))
                .with_principal(black_box("alice"))
        })
    });
    g.bench_function("binding+seal+open/small", |b| {
        b.iter(|| {
            let binding = StateBinding::for_request(
                "tools/call",
                black_box("provision"),
                Some(black_box(&args)),
            )
            .with_principal(black_box("alice"));
            let t = sealer.seal(&binding, black_box(&small)).unwrap();
            sealer.open(&t, &binding).unwrap()
        })
    });
    g.bench_function("args_digest", |b| {
        b.iter(|| args_digest(Some(black_box(&args))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
