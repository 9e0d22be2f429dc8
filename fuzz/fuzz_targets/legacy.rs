//! The legacy (2025) message decoder, both sides. Lines of input go to a fresh connection of
//! the conformance suite's "everything server": a 2025-11-25 `initialize` opens the session
//! first unless the input starts with its own `initialize`; every line is served concurrently,
//! as the stdio transport does, so answers to the server's own requests reach them. Each line
//! is also read as the client reads a legacy server's messages (server requests, the
//! `initialize` result) and as the server reads the legacy-only params; what decodes writes
//! and decodes again to the same value. Nothing panics; the server writes valid JSON-RPC.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use arctern::server::connection::{RequestOrigin, TransportKind};
use arctern_types::jsonrpc::JsonRpcMessage;
use arctern_types::legacy::{
    InitializeRequestParams, InitializeResult, ServerRequest, SetLevelRequestParams,
    SubscribeRequestParams,
};
use arctern_types::version::ProtocolVersion;
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fuzz_target!(|data: &[u8]| {
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .take(32)
        .collect();
    for line in &lines {
        decode_both_sides(line);
    }
    let opens_itself = lines.first().is_some_and(|first| {
        matches!(JsonRpcMessage::from_slice(first), Ok(m) if m.method() == Some("initialize"))
    });
    let server = common::server();
    common::run(async {
        let connection = server.connection(TransportKind::Stdio);
        let origin = || RequestOrigin::new(TransportKind::Stdio);
        if !opens_itself {
            common::drain(connection.handle_bytes(INITIALIZE, origin()).await).await;
            common::drain(connection.handle_bytes(INITIALIZED, origin()).await).await;
        }
        let mut tasks = Vec::new();
        for line in lines {
            let handling = connection.handle_bytes(line, origin());
            tasks.push(tokio::spawn(
                async move { common::drain(handling.await).await },
            ));
        }
        for task in tasks {
            match tokio::time::timeout(Duration::from_secs(600), task).await {
                Ok(Ok(())) | Err(_) => {}
                Ok(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Ok(Err(_)) => {}
            }
        }
        connection.close();
    });
});

/// Reads a line as each side of a legacy session would.
fn decode_both_sides(line: &[u8]) {
    let Some(message) = common::check_decoder(line) else {
        return;
    };
    // A message's params and result stay raw, and serde_json skips raw values without
    // checking their `\u` escapes (a lone surrogate passes): such a line decodes as a message
    // but not as a value, and the typed reads below refuse it too.
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    let params = value.get("params").cloned();
    match &message {
        JsonRpcMessage::Request(request) => {
            // The client: a legacy server's request.
            if let Ok(parsed) = ServerRequest::from_parts(&request.method, params.clone()) {
                let again = ServerRequest::from_parts(
                    parsed.method(),
                    parsed.params_value().expect("params serialize"),
                );
                assert_eq!(
                    again.as_ref().ok(),
                    Some(&parsed),
                    "server request round trip"
                );
                if let Some(input) = parsed.to_input_request() {
                    for version in [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25] {
                        let _ = ServerRequest::from_input_request(input.clone(), &version, || {
                            "e-1".to_owned()
                        });
                    }
                }
            }
            // The server: the legacy-only params.
            if let Some(params) = params {
                round_trip::<InitializeRequestParams>(&params);
                round_trip::<SetLevelRequestParams>(&params);
                round_trip::<SubscribeRequestParams>(&params);
            }
        }
        JsonRpcMessage::Response(_) => {
            // The client: the `initialize` result.
            if let Some(result) = value.get("result") {
                round_trip::<InitializeResult>(result);
            }
        }
        _ => {}
    }
}

/// A value that decodes as `T` writes and decodes again to the same `T`.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &Value) {
    let Ok(decoded) = serde_json::from_value::<T>(value.clone()) else {
        return;
    };
    let written = serde_json::to_value(&decoded).expect("a decoded value serializes");
    let again = serde_json::from_value::<T>(written.clone());
    assert_eq!(
        again.as_ref().ok(),
        Some(&decoded),
        "{} round trip: {written}",
        std::any::type_name::<T>()
    );
}
