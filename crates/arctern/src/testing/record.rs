//! Recording rounds: a transport wrapper that reads every `tools/call`, `prompts/get` and
//! `resources/read` going out and the answer coming back, as they are on the wire.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arctern_types::ErrorObject;
use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use arctern_types::legacy::ServerRequest;
use arctern_types::methods;
use arctern_types::mrtr::{
    InputRequests, InputRequiredResult, InputResponse, InputResponses, Outcome,
};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::script::{Shared, describe};
use crate::Result;
use crate::client::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};
use crate::server::Handler;
use crate::transport::memory::{MemoryTransport, lock};

/// One round of a multi round-trip request, as it went over the wire: the request the
/// client sent (its target, arguments, the answers and the `requestState` it carried) and
/// what the server answered (`input_required` with its questions and new state, the
/// complete result, or a JSON-RPC error).
///
/// On a legacy (2025-era) session there is no `input_required` on the wire: the server's
/// shim asks each question with a server→client request while the call is open, so a call
/// is one round, whose [`questions`](Self::questions) are the ones the shim asked (under the
/// keys the shim named) and whose [`answers`](Self::answers) are the client's answers to
/// them.
#[derive(Clone, PartialEq)]
pub struct RecordedRound {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) arguments: Option<Value>,
    pub(crate) sent_answers: Option<InputResponses>,
    pub(crate) sent_state: Option<String>,
    pub(crate) questions: InputRequests,
    pub(crate) outcome: RoundOutcome,
    pub(crate) legacy: bool,
}

/// How the server answered a round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RoundOutcome {
    InputRequired(InputRequiredResult),
    Complete(Value),
    Error(ErrorObject),
}

impl RecordedRound {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The arguments the request carried (`None` for a resource, or a call without any).
    pub fn arguments(&self) -> Option<&Value> {
        self.arguments.as_ref()
    }

    /// The questions of this round, by key: the `inputRequests` of an `input_required`
    /// answer, or, on a legacy session, the questions the shim asked during the call. Empty
    /// when the server asked nothing.
    pub fn questions(&self) -> &InputRequests {
        &self.questions
    }

    /// The keys of [`questions`](Self::questions), in order.
    pub fn keys(&self) -> Vec<&str> {
        self.questions.keys().map(String::as_str).collect()
    }

    /// The answers the request carried, by key (answers to the previous round's
    /// questions); on a legacy session, the client's answers to this round's questions.
    /// Empty when there were none.
    pub fn answers(&self) -> &InputResponses {
        static NONE: InputResponses = InputResponses::new();
        self.sent_answers.as_ref().unwrap_or(&NONE)
    }

    /// Whether the request carried a `requestState` (echoed from the previous round).
    pub fn carried_state(&self) -> bool {
        self.sent_state.is_some()
    }

    /// The `requestState` the request carried, if any.
    pub fn sent_state(&self) -> Option<&str> {
        self.sent_state.as_deref()
    }

    /// The `requestState` the server answered with, for the next round to echo (only on an
    /// `input_required` answer that has one).
    pub fn request_state(&self) -> Option<&str> {
        match &self.outcome {
            RoundOutcome::InputRequired(irr) => irr.request_state.as_deref(),
            _ => None,
        }
    }

    /// Whether the server answered `input_required`.
    pub fn is_input_required(&self) -> bool {
        matches!(self.outcome, RoundOutcome::InputRequired(_))
    }

    /// Whether the server answered with a complete result.
    pub fn is_complete(&self) -> bool {
        matches!(self.outcome, RoundOutcome::Complete(_))
    }

    /// The `input_required` answer, if that is what the server sent.
    pub fn input_required(&self) -> Option<&InputRequiredResult> {
        match &self.outcome {
            RoundOutcome::InputRequired(irr) => Some(irr),
            _ => None,
        }
    }

    /// The complete result, as JSON, if that is what the server sent.
    pub fn result(&self) -> Option<&Value> {
        match &self.outcome {
            RoundOutcome::Complete(value) => Some(value),
            _ => None,
        }
    }

    /// The JSON-RPC error, if that is what the server sent.
    pub fn error(&self) -> Option<&ErrorObject> {
        match &self.outcome {
            RoundOutcome::Error(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the round went over a legacy (2025-era) session.
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }
}

impl fmt::Debug for RecordedRound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.target)?;
        if let Some(args) = &self.arguments {
            write!(f, " {args}")?;
        }
        let answers = self.answers();
        if !answers.is_empty() {
            let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
            write!(f, ", answering {keys:?}")?;
        }
        if self.carried_state() {
            f.write_str(", with requestState")?;
        }
        f.write_str(" → ")?;
        match &self.outcome {
            RoundOutcome::InputRequired(irr) => {
                f.write_str("input_required")?;
                if irr.request_state.is_some() {
                    f.write_str(" with requestState")?;
                }
            }
            RoundOutcome::Complete(_) => f.write_str("complete")?,
            RoundOutcome::Error(e) => write!(f, "error {} {:?}", e.code.0, e.message)?,
        }
        if !self.questions.is_empty() {
            f.write_str(if self.legacy {
                ", the shim asked {"
            } else {
                ", asking {"
            })?;
            for (i, (key, question)) in self.questions.iter().enumerate() {
                if i > 0 {
                    f.write_str("; ")?;
                }
                write!(f, "{key:?}: ")?;
                let mut text = String::new();
                let _ = describe(&mut text, question);
                f.write_str(&text)?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

/// The parts of an outgoing request a round records.
#[derive(Deserialize)]
struct Sent {
    id: RequestId,
    method: String,
    #[serde(default)]
    params: Option<SentParams>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SentParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// A round whose answer has not arrived yet.
struct Open {
    /// Tells the answers to a legacy round's questions apart from other rounds'.
    token: u64,
    id: RequestId,
    round: RecordedRound,
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

impl Open {
    fn from_request(body: &[u8], legacy: bool) -> Option<Open> {
        let sent: Sent = serde_json::from_slice(body).ok()?;
        if !methods::is_mrtr_method(&sent.method) {
            return None;
        }
        let params = sent.params.unwrap_or_default();
        let target = params.name.or(params.uri).unwrap_or_default();
        Some(Open {
            token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed),
            id: sent.id,
            round: RecordedRound {
                method: sent.method,
                target,
                arguments: params.arguments,
                sent_answers: params.input_responses,
                sent_state: params.request_state,
                questions: InputRequests::new(),
                outcome: RoundOutcome::Complete(Value::Null),
                legacy,
            },
        })
    }

    /// Reads one message of the answer; returns whether it was the final one.
    fn observe(&mut self, message: &JsonRpcMessage, shared: &Shared) -> bool {
        match message {
            JsonRpcMessage::Response(r) if r.id == self.id => {
                self.round.outcome = match serde_json::from_str::<Outcome<Value>>(r.result.get()) {
                    Ok(Outcome::InputRequired(irr)) => {
                        self.round.questions = irr.input_requests.clone().unwrap_or_default();
                        RoundOutcome::InputRequired(irr)
                    }
                    Ok(Outcome::Complete(value)) => RoundOutcome::Complete(value),
                    _ => RoundOutcome::Complete(
                        serde_json::from_str(r.result.get()).unwrap_or(Value::Null),
                    ),
                };
                true
            }
            JsonRpcMessage::Error(e) if e.id.as_ref().is_none_or(|id| *id == self.id) => {
                self.round.outcome = RoundOutcome::Error(e.error.clone());
                true
            }
            // The legacy shim asking a question on the call's stream.
            JsonRpcMessage::Request(r) => {
                let params = r
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
                let Ok(request) = ServerRequest::from_parts(&r.method, params) else {
                    return false;
                };
                let Some(question) = request.to_input_request() else {
                    return false; // ping
                };
                let key = request
                    .input_key()
                    .map_or_else(|| r.id.to_string(), str::to_owned);
                lock(&shared.legacy_asks)
                    .insert(r.id.to_string(), (self.token, key.clone(), question.kind()));
                self.round.questions.insert(key, question);
                false
            }
            _ => false,
        }
    }

    fn finish(mut self, shared: &Shared) {
        if self.round.legacy {
            let answers = lock(&shared.legacy_answers).remove(&self.token);
            if let Some(answers) = answers {
                self.round.sent_answers = Some(answers);
            }
            lock(&shared.legacy_asks).retain(|_, (token, _, _)| *token != self.token);
        }
        lock(&shared.rounds).push(self.round);
    }
}

/// The transport of a [`TestClient`](super::TestClient): the in-process transport, with
/// every round recorded.
pub(crate) struct Recorder<H> {
    pub(crate) inner: MemoryTransport<H>,
    pub(crate) shared: Arc<Shared>,
}

impl<H: Handler> Recorder<H> {
    /// Notes the client's answer to a legacy server→client request.
    fn note_answer(&self, body: &[u8]) {
        let Ok(message) = JsonRpcMessage::from_slice(body) else {
            return;
        };
        let JsonRpcMessage::Response(r) = message else {
            return;
        };
        let Some((token, key, kind)) = lock(&self.shared.legacy_asks).remove(&r.id.to_string())
        else {
            return;
        };
        let Ok(value) = serde_json::from_str::<Value>(r.result.get()) else {
            return;
        };
        let answer = InputResponse::decode_for(kind, value.clone())
            .unwrap_or(InputResponse::Unrecognized(value));
        lock(&self.shared.legacy_answers)
            .entry(token)
            .or_default()
            .insert(key, answer);
    }
}

impl<H: Handler> Transport for Recorder<H> {
    fn mirrors_headers(&self) -> bool {
        self.inner.mirrors_headers()
    }

    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, Result<MessageStream>> {
        let open = Open::from_request(&request.body, self.inner.is_legacy());
        let sent = self.inner.send(request);
        let shared = self.shared.clone();
        async move {
            let stream = sent.await?;
            let Some(open) = open else {
                return Ok(stream);
            };
            let mut open = Some(open);
            let stream = stream.map(move |item| {
                if let Ok(message) = &item
                    && let Some(round) = open.as_mut()
                    && round.observe(message, &shared)
                    && let Some(round) = open.take()
                {
                    round.finish(&shared);
                }
                item
            });
            Ok(stream.boxed())
        }
        .boxed()
    }

    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, Result<()>> {
        self.note_answer(&notification.body);
        self.inner.notify(notification)
    }

    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        self.inner.set_unrouted_sink(sink)
    }

    fn set_request_sink(&self, sink: RequestSink) {
        self.inner.set_request_sink(sink)
    }

    fn listen(
        &self,
        headers: http::HeaderMap,
    ) -> BoxFuture<'static, Result<Option<MessageStream>>> {
        self.inner.listen(headers)
    }

    fn close(&self) -> BoxFuture<'static, Result<()>> {
        self.inner.close()
    }
}
