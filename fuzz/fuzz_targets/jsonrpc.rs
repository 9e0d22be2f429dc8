//! The JSON-RPC and envelope decoder: one message, as a 2026-07-28 client would send it, to
//! the conformance suite's "everything server" (`Server::handle_bytes`), once as from stdio
//! and once as from HTTP with the mirrored headers a client would add (so the envelope and
//! header checks and the handlers behind them are reached). Decoding is stable (a decoded
//! message, written and read again, is the same); malformed input gets -32700 or -32600;
//! whatever the input, the server answers with valid JSON-RPC and never panics.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use arctern::server::connection::{RequestOrigin, TransportKind, WireHeaders};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    common::check_decoder(data);
    let server = common::server();
    common::run(async {
        let reply = server
            .handle_bytes(data, RequestOrigin::new(TransportKind::Stdio))
            .await;
        common::drain(reply).await;
        let origin = RequestOrigin::http(mirrored_headers(data), Default::default());
        let reply = server.handle_bytes(data, origin).await;
        common::drain(reply).await;
    });
});

/// The headers a client mirrors from a request body: version, method, and the name (tool or
/// prompt name, resource URI).
fn mirrored_headers(data: &[u8]) -> WireHeaders {
    let mut headers = WireHeaders::new();
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(data) else {
        return headers;
    };
    headers.method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let params = message.get("params");
    headers.protocol_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    headers.name = params
        .and_then(|p| p.get("name").or_else(|| p.get("uri")))
        .and_then(Value::as_str)
        .map(|name| Ok(name.to_owned()));
    headers
}
