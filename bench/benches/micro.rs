//! Micro-benchmarks of the per-request work that is not I/O:
//!
//! * `envelope/*` — parsing a 2026-07-28 `tools/call` request (JSON-RPC envelope, then the
//!   params with their `_meta`) and serializing its `CallToolResult` response, the way
//!   arctern's engine does it; the same for rmcp's message types, for comparison;
//! * `state/*` — arctern's request-state sealing for the `confirm` flow (a payload pinning
//!   one question, bound to method, tool, arguments and audience): seal, open, and both;
//!   the per-request binding; rmcp's HMAC `RequestStateCodec` with associated data and a
//!   TTL, for comparison.
//!
//! `run.sh` reads the medians from `target/criterion/<group>/<name>/new/estimates.json`.

use std::hint::black_box;
use std::time::Duration;

use arctern::state::{
    KeyId, KeyRing, StateBinding, StateKey, StatePayload, StateSealer, question_digest,
};
use arctern::types::tools::{CallToolRequestParams, CallToolResult};
use arctern::types::{ContentBlock, JsonRpcMessage, JsonRpcResponse, Meta, RequestId};
use arctern_bench::wire;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// A `tools/call echo` request exactly as the load generator sends it.
fn request_bytes() -> Vec<u8> {
    wire::tools_call_body(12345, "echo", "c7-12345", None)
}

fn arctern_parse(bytes: &[u8]) -> CallToolRequestParams {
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_slice(bytes).unwrap() else {
        panic!("not a request");
    };
    let params = request.params.expect("params");
    serde_json::from_str(params.get()).unwrap()
}

fn arctern_reply(params: CallToolRequestParams, server_info: &Meta) -> Vec<u8> {
    let text = match params.arguments.as_ref().and_then(|a| a.get("text")) {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let mut result = CallToolResult::new(vec![ContentBlock::text(text)]);
    result.meta = Some(server_info.clone());
    serde_json::to_vec(&JsonRpcResponse::new(RequestId::Number(12345), result)).unwrap()
}

fn server_info() -> Meta {
    serde_json::from_value(json!({
        "io.modelcontextprotocol/serverInfo": {"name": "arctern-bench", "version": "0.1.0"}
    }))
    .unwrap()
}

fn envelope(c: &mut Criterion) {
    let bytes = request_bytes();
    let info = server_info();
    let mut g = c.benchmark_group("envelope");
    g.bench_function("arctern/parse", |b| {
        b.iter(|| arctern_parse(black_box(&bytes)))
    });
    let parsed = arctern_parse(&bytes);
    g.bench_function("arctern/serialize", |b| {
        b.iter(|| arctern_reply(black_box(parsed.clone()), &info))
    });
    g.bench_function("arctern/parse+serialize", |b| {
        b.iter(|| arctern_reply(arctern_parse(black_box(&bytes)), &info))
    });

    g.bench_function("rmcp/parse", |b| {
        b.iter(|| {
            serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(black_box(&bytes)).unwrap()
        })
    });
    let result =
        rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text("c7-12345")]);
    g.bench_function("rmcp/serialize", |b| {
        b.iter(|| {
            let message = rmcp::model::ServerJsonRpcMessage::response(
                rmcp::model::ServerResult::CallToolResult(black_box(result.clone())),
                rmcp::model::NumberOrString::Number(12345),
            );
            serde_json::to_vec(&message).unwrap()
        })
    });
    g.finish();
}

fn arctern_sealer() -> StateSealer {
    let material: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(29).wrapping_add(7))
        .collect();
    let key = StateKey::from_bytes(KeyId::new("k1").unwrap(), &material).unwrap();
    StateSealer::with_keys("arctern-bench", KeyRing::single(key)).unwrap()
}

/// What `McpServer` seals in round 1 of `confirm`: the pin of the one question asked.
fn confirm_payload() -> StatePayload {
    let mut payload = StatePayload::new();
    payload.round = 1;
    payload.asked.insert(
        "confirm".into(),
        question_digest(
            "elicitation/create",
            &json!({"mode": "form", "message": "Confirm?", "requestedSchema": {
                "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
        ),
    );
    payload
}

fn state(c: &mut Criterion) {
    let sealer = arctern_sealer();
    let args = json!({"text": "c7-12345"});
    let binding = StateBinding::for_request("tools/call", "confirm", Some(&args));
    let payload = confirm_payload();
    let token = sealer.seal(&binding, &payload).unwrap();

    let mut g = c.benchmark_group("state");
    g.bench_function("arctern/seal", |b| {
        b.iter(|| {
            sealer
                .seal(black_box(&binding), black_box(&payload))
                .unwrap()
        })
    });
    g.bench_function("arctern/open", |b| {
        b.iter(|| sealer.open(black_box(&token), black_box(&binding)).unwrap())
    });
    g.bench_function("arctern/seal+open", |b| {
        b.iter(|| {
            let token = sealer
                .seal(black_box(&binding), black_box(&payload))
                .unwrap();
            sealer.open(&token, black_box(&binding)).unwrap()
        })
    });
    g.bench_function("arctern/binding", |b| {
        b.iter(|| {
            StateBinding::for_request("tools/call", black_box("confirm"), Some(black_box(&args)))
        })
    });

    let codec = rmcp::model::RequestStateCodec::try_new(vec![42u8; 32]).unwrap();
    let ad = b"tools/call\0confirm\0c7-12345";
    let options = rmcp::model::SealOptions::new()
        .associated_data(ad)
        .ttl(Duration::from_secs(300));
    let sealed = codec.seal_with(b"confirm/1", &options);
    g.bench_function("rmcp/seal", |b| {
        b.iter(|| codec.seal_with(black_box(b"confirm/1"), black_box(&options)))
    });
    g.bench_function("rmcp/open", |b| {
        b.iter(|| codec.open_with(black_box(&sealed), black_box(ad)).unwrap())
    });
    g.bench_function("rmcp/seal+open", |b| {
        b.iter(|| {
            let sealed = codec.seal_with(black_box(b"confirm/1"), black_box(&options));
            codec.open_with(&sealed, black_box(ad)).unwrap()
        })
    });
    g.finish();
    eprintln!(
        "token lengths: arctern {} chars, rmcp {} chars",
        token.len(),
        sealed.len()
    );
}

criterion_group!(benches, envelope, state);
criterion_main!(benches);
