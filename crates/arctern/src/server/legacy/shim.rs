//! The legacy shim: the input requests of an `input_required` round, asked of a 2025-era
//! client as real server→client requests on the originating request's stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arctern_types::legacy::ServerRequest;
use arctern_types::meta::INPUT_KEY_META_KEY;
use arctern_types::mrtr::{InputRequests, InputResponse, InputResponses};
use arctern_types::{ErrorCode, ErrorObject};
use serde_json::{Value, json};

use super::session::LegacySession;
use crate::ErrorKind;
use crate::server::context::NotificationSink;

/// Asks every input request of one round, in key order, and collects the answers under the
/// same keys.
///
/// Each request is checked against what the client declared at `initialize` before
/// anything is sent: a client without the capability gets [`missing_capability`], and a
/// request the session's revision cannot express (URL-mode elicitation on 2025-06-18)
/// fails the call with `-32600`. A URL-mode elicitation gets a fresh `elicitationId`, which
/// 2025-11-25 requires. Each request names its key in `_meta`
/// ([`INPUT_KEY_META_KEY`]).
pub(crate) async fn ask_client(
    session: &LegacySession,
    sink: &NotificationSink,
    requests: InputRequests,
    timeout: Duration,
) -> Result<InputResponses, ErrorObject> {
    let mut asks = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        if !request.is_supported_by(&session.capabilities) {
            let required =
                serde_json::to_value(request.required_capabilities()).unwrap_or(Value::Null);
            return Err(missing_capability(required));
        }
        let kind = request.kind();
        let mut server_request =
            ServerRequest::from_input_request(request, &session.version, elicitation_id)
                .map_err(|e| ErrorObject::invalid_request(e.to_string()))?;
        // Tells the client which question this is, so that answers it holds by key (an
        // arctern client's scripted or pre-given answers) still apply.
        server_request.insert_meta(INPUT_KEY_META_KEY, key.clone());
        asks.push((key, kind, server_request));
    }
    let mut responses = InputResponses::new();
    // One at a time: a 2025-era client shows each question as it comes, and asking in key
    // order keeps what the user sees predictable.
    for (key, kind, request) in asks {
        let answer = match session.request(sink, &request, timeout).await {
            Ok(answer) => answer,
            Err(e) => return Err(client_failed(request.method(), &e)),
        };
        let response = InputResponse::decode_for(kind, answer).map_err(|e| {
            ErrorObject::internal_error(format!(
                "The client answered {} with a malformed result: {e}",
                request.method()
            ))
        })?;
        responses.insert(key, response);
    }
    Ok(responses)
}

/// The error of a request that needs a client capability the client did not declare at
/// `initialize` (the legacy revisions have no `-32021`): `-32600` naming the capability,
/// with `data.requiredCapabilities`.
pub(crate) fn missing_capability(required: Value) -> ErrorObject {
    let names = required
        .as_object()
        .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    ErrorObject::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "This request needs the client capability {names}, which the client did not declare at initialize"
        ),
    )
    .with_data(json!({ "requiredCapabilities": required }))
}

fn client_failed(method: &str, error: &crate::Error) -> ErrorObject {
    match error.kind() {
        ErrorKind::Protocol => match error.protocol_error() {
            Some(e) => ErrorObject::internal_error(format!(
                "The client answered {method} with an error: {} ({})",
                e.message, e.code.0
            )),
            None => ErrorObject::internal_error(format!("The client failed {method}")),
        },
        ErrorKind::Timeout => {
            ErrorObject::internal_error(format!("The client did not answer {method} in time"))
        }
        _ => ErrorObject::internal_error(format!("Could not ask the client ({method}): {error}")),
    }
}

/// A fresh `elicitationId`: unique within the process, unguessable across processes.
fn elicitation_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Unique by the counter even if the generator failed (the id is a correlation id, not a
    // secret: the session it belongs to is).
    format!("{}-{n}", super::random_hex(8).unwrap_or_default())
}
