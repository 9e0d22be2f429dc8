//! Sending a recorded round's request again, changed or not, for request-state tests.

use std::fmt::Debug;

use arctern_types::methods;
use arctern_types::mrtr::{InputResponse, InputResponses};
use serde::Serialize;
use serde_json::Value;

use super::{RecordedRound, TestClient};
use crate::client::{Continuation, Outcome};
use crate::state::INVALID_STATE_MESSAGE;
use crate::{Error, ErrorCode, ErrorKind, ErrorObject, Result};

/// A recorded round's request, about to be sent again: the same method, target, arguments,
/// answers and `requestState`, unless changed. Made by [`TestClient::replay`].
///
/// Replaying a round that carried state, unchanged, shows that a token stays valid until it
/// expires (the specification leaves single use to the server); changed, it shows what the
/// server's sealing rejects. The request goes through the client like any other (a new id,
/// the `_meta` envelope) and is recorded as the only round of a new call.
#[must_use = "a replay does nothing until sent"]
#[derive(Debug)]
pub struct Replay<'a> {
    client: &'a TestClient,
    method: String,
    target: String,
    arguments: Option<Value>,
    answers: Option<InputResponses>,
    state: Option<String>,
}

impl<'a> Replay<'a> {
    pub(crate) fn new(client: &'a TestClient, round: &RecordedRound) -> Self {
        Replay {
            client,
            method: round.method.clone(),
            target: round.target.clone(),
            arguments: round.arguments.clone(),
            // On a legacy round these are the answers to the shim's requests, which the
            // request itself never carried.
            answers: if round.legacy {
                None
            } else {
                round.sent_answers.clone()
            },
            state: round.sent_state.clone(),
        }
    }

    /// Sends it to another tool or prompt (the same method), or another resource URI.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    /// Sends other arguments (a JSON object, or `null` for none).
    pub fn arguments(mut self, arguments: Value) -> Self {
        self.arguments = (!arguments.is_null()).then_some(arguments);
        self
    }

    /// Sends `state` as the `requestState`.
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// Sends no `requestState`.
    pub fn without_state(mut self) -> Self {
        self.state = None;
        self
    }

    /// Changes one character in the middle of the `requestState` to another character of
    /// the same alphabet, as an attacker editing a token would.
    ///
    /// # Panics
    ///
    /// If the round carried no `requestState` (a first round, or any round of a legacy
    /// session, whose state never leaves the server).
    #[track_caller]
    pub fn tamper_state(mut self) -> Self {
        let state = self.state.take().expect(
            "the round carried no requestState to tamper with; replay a round that echoed one",
        );
        self.state = Some(tamper(&state));
        self
    }

    /// Sends these answers instead (replacing all).
    pub fn answers(mut self, answers: InputResponses) -> Self {
        self.answers = Some(answers);
        self
    }

    /// Adds (or replaces) the answer under `key`.
    pub fn response(mut self, key: impl Into<String>, answer: impl Into<InputResponse>) -> Self {
        self.answers
            .get_or_insert_with(InputResponses::new)
            .insert(key.into(), answer.into());
        self
    }

    /// Sends the request (one round, no automatic retry) and returns the server's answer:
    /// the complete result or the `input_required` result, as JSON; a JSON-RPC error (such
    /// as the rejection of bad state) is an `Err` of kind
    /// [`ErrorKind::Protocol`](crate::ErrorKind::Protocol).
    pub async fn send(self) -> Result<Outcome<Value>> {
        let continuation = Continuation {
            input_responses: self.answers,
            request_state: self.state,
            ..Continuation::default()
        };
        let arguments = self.arguments.unwrap_or(Value::Null);
        let client = self.client.client();
        self.client.begin();
        let sent = match self.method.as_str() {
            methods::TOOLS_CALL => client
                .call_tool_once(&self.target, arguments, continuation)
                .await
                .and_then(as_json),
            methods::PROMPTS_GET => client
                .get_prompt_once(&self.target, arguments, continuation)
                .await
                .and_then(as_json),
            methods::RESOURCES_READ => client
                .read_resource_once(&self.target, continuation)
                .await
                .and_then(as_json),
            other => Err(Error::new(
                ErrorKind::Config,
                format!("{other} is not a multi round-trip method"),
            )),
        };
        self.client.end(sent)
    }
}

/// An outcome with its complete result as JSON.
fn as_json<T: Serialize>(outcome: Outcome<T>) -> Result<Outcome<Value>> {
    let codec = |e| Error::new(ErrorKind::Codec, "could not encode a result").with_source(e);
    Ok(match outcome {
        Outcome::Complete(result) => {
            Outcome::Complete(serde_json::to_value(result).map_err(codec)?)
        }
        Outcome::InputRequired(irr) => Outcome::InputRequired(irr),
        _ => {
            return Err(Error::new(
                ErrorKind::InputRequired,
                "the server answered with a result type the kit does not know",
            ));
        }
    })
}

/// `state` with the character in its middle replaced by another of its alphabet (base64url,
/// or any other: a different ASCII letter or digit).
fn tamper(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    if chars.is_empty() {
        return "A".to_owned();
    }
    let i = chars.len() / 2;
    chars[i] = match chars[i] {
        'A' => 'B',
        _ => 'A',
    };
    chars.into_iter().collect()
}

/// Whether `error` is the server's fixed rejection of a `requestState`:
/// `{"code":-32602,"message":"Invalid or expired requestState"}`.
pub fn is_invalid_state(error: &Error) -> bool {
    error.protocol_error().is_some_and(is_rejection)
}

fn is_rejection(e: &ErrorObject) -> bool {
    e.code == ErrorCode::INVALID_PARAMS && e.message == INVALID_STATE_MESSAGE && e.data.is_none()
}

/// Checks that `result` is the server's fixed rejection of a `requestState`:
/// `{"code":-32602,"message":"Invalid or expired requestState"}`, nothing more (the reason
/// stays in the server's log).
///
/// # Panics
///
/// With what the server answered instead.
#[track_caller]
pub fn assert_invalid_state<T: Debug>(result: &Result<T>) {
    match result {
        Err(e) if is_invalid_state(e) => {}
        Err(e) => panic!(
            "expected the fixed requestState rejection {{-32602, {INVALID_STATE_MESSAGE:?}}}, got the error {e}{}",
            e.protocol_error()
                .map(|o| format!(" ({} {:?}, data {:?})", o.code.0, o.message, o.data))
                .unwrap_or_default()
        ),
        Ok(value) => panic!(
            "expected the fixed requestState rejection {{-32602, {INVALID_STATE_MESSAGE:?}}}, but the server accepted the request: {value:?}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tampering_changes_exactly_one_character() {
        for token in ["abcdef", "AAAA", "x", "hello-world_09"] {
            let t = tamper(token);
            assert_eq!(t.len(), token.len());
            let diff = t.chars().zip(token.chars()).filter(|(a, b)| a != b).count();
            assert_eq!(diff, 1, "{token} → {t}");
        }
        assert_eq!(tamper(""), "A");
    }
}
