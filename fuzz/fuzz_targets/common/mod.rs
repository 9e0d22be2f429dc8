//! What the server-side targets share: the conformance suite's "everything server", a runtime
//! whose clock only moves when every task waits (a handler's sleep or timeout costs no wall
//! time), and the checks every reply must pass.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use arctern::server::McpHandler;
use arctern::server::Server;
use arctern::server::connection::Reply;
use arctern_conformance::fixture::Fixture;
use arctern_types::jsonrpc::JsonRpcMessage;
use futures::StreamExt as _;

/// Messages read from one reply stream at most (a `subscriptions/listen` stream never ends).
const MAX_STREAM_ITEMS: usize = 64;
/// How long, in the runtime's virtual time, a reply may take.
const REPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// The server, built once.
pub fn server() -> &'static Server<McpHandler<Fixture>> {
    static SERVER: OnceLock<Server<McpHandler<Fixture>>> = OnceLock::new();
    SERVER.get_or_init(|| arctern_conformance::fixture::server().expect("the fixture builds"))
}

/// Runs `f` on a fresh single-threaded runtime with a paused clock; everything it spawned is
/// dropped with the runtime.
pub fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Reads a reply to the end (or `MAX_STREAM_ITEMS`, or the timeout), checking that every
/// message the server wrote is a well-formed JSON-RPC message.
pub async fn drain(reply: Reply) {
    match reply {
        Reply::Message { body, .. } => check_written(&body),
        Reply::Stream(mut stream) => {
            for _ in 0..MAX_STREAM_ITEMS {
                match tokio::time::timeout(REPLY_TIMEOUT, stream.next()).await {
                    Ok(Some(body)) => check_written(&body),
                    Ok(None) | Err(_) => break,
                }
            }
        }
        _ => {}
    }
}

/// Whatever the input, the server writes valid JSON-RPC.
pub fn check_written(body: &[u8]) {
    if let Err(e) = JsonRpcMessage::from_slice(body) {
        panic!(
            "the server wrote an invalid message ({e}): {}",
            String::from_utf8_lossy(body)
        );
    }
}

/// Reading a message, writing it and reading it again gives the same message.
pub fn check_decoder(bytes: &[u8]) -> Option<JsonRpcMessage> {
    match JsonRpcMessage::from_slice(bytes) {
        Ok(message) => {
            let written = serde_json::to_vec(&message).expect("a message serializes");
            let again = JsonRpcMessage::from_slice(&written).unwrap_or_else(|e| {
                panic!(
                    "a decoded message, written again, does not decode ({e}): {}",
                    String::from_utf8_lossy(&written)
                )
            });
            assert_eq!(
                serde_json::to_vec(&again).unwrap(),
                written,
                "writing is not stable"
            );
            Some(message)
        }
        Err(e) => {
            assert!(
                e.error.code.0 == -32700 || e.error.code.0 == -32600,
                "unexpected code {:?}",
                e.error
            );
            None
        }
    }
}
