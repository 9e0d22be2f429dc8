//! Benchmarks of the wire types on the per-call path: what a server parses and writes for
//! every `tools/call`, and what a client parses for a call's result and a tool list.
//!
//! * `request/*` — a 2026-07-28 `tools/call` as the load generator of `bench/` sends it:
//!   the JSON-RPC envelope, then its params with their `_meta`; and the second round of a
//!   multi round-trip call (an answer and a `requestState`);
//! * `result/*` — the echo reply: serializing the response, and a client reading it back;
//! * `tools_list/*` — a page of 20 tools, parsed by a client and written by a server;
//! * `check/*` — checking a call's arguments against the tool's compiled `inputSchema`
//!   (what `McpServer` does before every call), for the echo tool and for arguments with
//!   bounds, a pattern and a nested list.

use std::hint::black_box;

use arctern_types::mrtr::Outcome;
use arctern_types::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use arctern_types::{ContentBlock, JsonRpcMessage, JsonRpcResponse, Meta, RequestId};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// The `_meta` every request of the benchmark carries.
const REQUEST_META: &str = concat!(
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"arctern-bench","version":"0.1.0"},"#,
    r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#
);

/// A `tools/call echo` request, byte for byte as `bench/` sends it.
fn echo_request() -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"c7-12345"}},{REQUEST_META}}}}}"#
    )
    .into_bytes()
}

/// Round 2 of `confirm`: the answer and the state of round 1.
fn retry_request() -> Vec<u8> {
    let state = format!("\"{}\"", "A".repeat(180));
    format!(
        r#"{{"jsonrpc":"2.0","id":12346,"method":"tools/call","params":{{"name":"confirm","arguments":{{"text":"c7-12345"}},"inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":{state},{REQUEST_META}}}}}"#
    )
    .into_bytes()
}

fn parse(bytes: &[u8]) -> CallToolRequestParams {
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_slice(bytes).unwrap() else {
        panic!("not a request");
    };
    serde_json::from_str(request.params.expect("params").get()).unwrap()
}

fn server_info() -> Meta {
    serde_json::from_value(json!({
        "io.modelcontextprotocol/serverInfo": {"name": "arctern-bench", "version": "0.1.0"}
    }))
    .unwrap()
}

fn reply(params: &CallToolRequestParams, info: &Meta) -> Vec<u8> {
    let text = match params.arguments.as_ref().and_then(|a| a.get("text")) {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let mut result = CallToolResult::new(vec![ContentBlock::text(text)]);
    result.meta = Some(info.clone());
    serde_json::to_vec(&JsonRpcResponse::new(RequestId::Number(12345), result)).unwrap()
}

/// A page of 20 tools, each with a title, a description, an input schema of three
/// properties and annotations.
fn tools_page() -> Vec<u8> {
    let tools: Vec<_> = (0..20)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "title": format!("Tool {i}"),
                "description": "Does one thing well, and says so in a sentence or two.",
                "inputSchema": {"type": "object", "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "units": {"enum": ["metric", "imperial"]}
                }, "required": ["city"]},
                "annotations": {"readOnlyHint": true, "openWorldHint": false}
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "resultType": "complete", "tools": tools, "ttlMs": 60000, "cacheScope": "public"
    }))
    .unwrap()
}

fn request(c: &mut Criterion) {
    let echo = echo_request();
    let retry = retry_request();
    let mut g = c.benchmark_group("request");
    g.bench_function("parse/echo", |b| b.iter(|| parse(black_box(&echo))));
    g.bench_function("parse/retry", |b| b.iter(|| parse(black_box(&retry))));
    g.finish();
}

fn result(c: &mut Criterion) {
    let info = server_info();
    let params = parse(&echo_request());
    let bytes = reply(&params, &info);
    let JsonRpcMessage::Response(response) = JsonRpcMessage::from_slice(&bytes).unwrap() else {
        panic!("not a response");
    };
    let result = response.result.get().to_owned();
    let mut g = c.benchmark_group("result");
    g.bench_function("serialize/echo", |b| {
        b.iter(|| reply(black_box(&params), &info))
    });
    g.bench_function("parse/echo", |b| {
        b.iter(|| serde_json::from_str::<Outcome<CallToolResult>>(black_box(&result)).unwrap())
    });
    g.finish();
}

fn tools_list(c: &mut Criterion) {
    let page = tools_page();
    let parsed: ListToolsResult = serde_json::from_slice(&page).unwrap();
    let mut g = c.benchmark_group("tools_list");
    g.bench_function("parse/20", |b| {
        b.iter(|| serde_json::from_slice::<ListToolsResult>(black_box(&page)).unwrap())
    });
    g.bench_function("serialize/20", |b| {
        b.iter(|| serde_json::to_vec(black_box(&parsed)).unwrap())
    });
    g.finish();
}

fn check(c: &mut Criterion) {
    let compile = |schema: serde_json::Value| {
        arctern_types::check::Checker::compile(schema.as_object().unwrap()).unwrap()
    };
    let echo = compile(json!({"type": "object", "properties": {
        "text": {"type": "string", "description": "The text to echo."}}, "required": ["text"]}));
    let order = compile(json!({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 2, "maxLength": 40},
        "postcode": {"type": "string", "pattern": "^[0-9]{4,5}$"},
        "items": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1,
            "format": "uint32"}}, "required": ["sku", "quantity"]}}},
        "required": ["city", "postcode", "items"]}));
    let echo_args = json!({"text": "c7-12345"});
    let order_args = json!({"city": "Oslo", "postcode": "0150", "items": [
        {"sku": "a", "quantity": 1}, {"sku": "b", "quantity": 2}, {"sku": "c", "quantity": 3}]});
    let mut g = c.benchmark_group("check");
    g.bench_function("echo", |b| b.iter(|| echo.check(black_box(&echo_args))));
    g.bench_function("order", |b| b.iter(|| order.check(black_box(&order_args))));
    g.finish();
}

criterion_group!(benches, request, result, tools_list, check);
criterion_main!(benches);
