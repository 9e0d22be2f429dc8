//! Multi round-trip requests on the client: the automatic loop, the manual step, and the
//! serde-able continuation that lets another process resume a flow.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arctern_types::logging::LoggingLevel;
use arctern_types::meta::JsonObject;
use arctern_types::methods;
use arctern_types::mrtr::{InputRequiredResult, InputResponse, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::error::{InputRequiredError, InputRequiredReason};
use super::handler::InputOrigin;
use super::notify::{LogFn, Observer, ProgressFn};
use super::wire::{self, Kind, Retry};
use crate::{ErrorKind, Result};

pub use crate::Outcome;

/// What a retry carries: the answers to the last round's input requests (under the same
/// keys) and the last round's `requestState`, echoed exactly.
///
/// Serializable, so that a flow can be suspended and resumed elsewhere: store the tool name,
/// its arguments and the `Continuation`, and another process (another [`Client`]) resumes
/// with [`Client::call_tool_once`] or with [`CallOptions::resume`].
///
/// ```
/// use arctern::client::Continuation;
/// use arctern::types::elicitation::ElicitResult;
/// use arctern::types::mrtr::InputRequiredResult;
///
/// let round: InputRequiredResult =
///     serde_json::from_str(r#"{"resultType":"input_required","requestState":"opaque"}"#).unwrap();
/// let next = Continuation::after(&round).with_response("confirm", ElicitResult::decline());
/// let saved = serde_json::to_string(&next).unwrap();
/// let back: Continuation = serde_json::from_str(&saved).unwrap();
/// assert_eq!(back, next);
/// assert_eq!(back.request_state.as_deref(), Some("opaque"));
/// ```
///
/// [`Client`]: super::Client
/// [`Client::call_tool_once`]: super::Client::call_tool_once
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Continuation {
    /// Answers to the previous round's input requests, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Continuation {
    /// A first attempt: no answers, no state.
    pub fn new() -> Self {
        Continuation::default()
    }

    /// The retry after `round`: its `requestState` (if any) echoed, no answers yet.
    pub fn after(round: &InputRequiredResult) -> Self {
        Continuation {
            input_responses: None,
            request_state: round.request_state.clone(),
        }
    }

    /// Adds an answer under `key`.
    pub fn with_response(
        mut self,
        key: impl Into<String>,
        answer: impl Into<InputResponse>,
    ) -> Self {
        self.input_responses
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), answer.into());
        self
    }

    /// Sets all answers at once (replacing any).
    pub fn with_responses(mut self, answers: InputResponses) -> Self {
        self.input_responses = Some(answers);
        self
    }

    /// Whether this is a first attempt.
    pub fn is_empty(&self) -> bool {
        self.input_responses.is_none() && self.request_state.is_none()
    }

    pub(crate) fn retry(&self) -> Retry<'_> {
        Retry {
            input_responses: self.input_responses.as_ref(),
            request_state: self.request_state.as_deref(),
        }
    }
}

/// Per-call settings of the automatic loop: round cap, deadline, callbacks, and a
/// continuation to resume from.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) max_rounds: Option<u32>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) observer: Observer,
    pub(crate) resume: Option<Continuation>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("max_rounds", &self.max_rounds)
            .field("deadline", &self.deadline)
            .field("timeout", &self.timeout)
            .field("observer", &self.observer)
            .field("resume", &self.resume)
            .finish()
    }
}

impl CallOptions {
    /// The client's defaults.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// How many `input_required` results the call accepts before it fails (overrides the
    /// client's cap, 10 by default). With a cap of `n` the server is sent at most `n + 1`
    /// requests.
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = Some(rounds);
        self
    }

    /// A limit on the whole call, all rounds and answers included (overrides the client's).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// A limit on each request of the call (overrides the client's).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Called with the progress notifications of this call (instead of the client's
    /// callback). Each request of the call then carries a progress token.
    pub fn on_progress(
        mut self,
        f: impl Fn(arctern_types::progress::ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.observer.progress = Some(Arc::new(f) as ProgressFn);
        self
    }

    /// Called with the log messages of this call at `level` or more severe (instead of the
    /// client's callback). Each request of the call then opts in with `logLevel`.
    pub fn on_log(
        mut self,
        level: LoggingLevel,
        f: impl Fn(arctern_types::logging::LoggingMessageNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.observer.log = Some((level, Arc::new(f) as LogFn));
        self
    }

    /// Starts from a continuation (a flow suspended earlier, perhaps by another process)
    /// instead of a first attempt.
    pub fn resume(mut self, continuation: Continuation) -> Self {
        self.resume = Some(continuation);
        self
    }
}

/// The request a flow retries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    Tool {
        name: &'a str,
        arguments: Option<&'a JsonObject>,
    },
    Prompt {
        name: &'a str,
        arguments: Option<&'a BTreeMap<String, String>>,
    },
    Resource {
        uri: &'a str,
    },
}

impl Target<'_> {
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Target::Tool { .. } => methods::TOOLS_CALL,
            Target::Prompt { .. } => methods::PROMPTS_GET,
            Target::Resource { .. } => methods::RESOURCES_READ,
        }
    }

    /// The value `Mcp-Name` mirrors.
    pub(crate) fn name(&self) -> &str {
        match self {
            Target::Tool { name, .. } | Target::Prompt { name, .. } => name,
            Target::Resource { uri } => uri,
        }
    }

    pub(crate) fn origin(&self) -> InputOrigin {
        InputOrigin::new(self.method(), self.name())
    }

    pub(crate) fn what(&self) -> &'static str {
        match self {
            Target::Tool { .. } => "tools/call",
            Target::Prompt { .. } => "prompts/get",
            Target::Resource { .. } => "resources/read",
        }
    }
}

/// One round's result, with the raw JSON (for the cache).
pub(crate) struct Round<T> {
    pub(crate) outcome: Outcome<T>,
    pub(crate) raw: Box<RawValue>,
}

/// Reads a round's result by its `resultType`.
pub(crate) fn read_round<T: serde::de::DeserializeOwned>(
    raw: Box<RawValue>,
    target: &Target<'_>,
) -> Result<Round<T>> {
    let outcome = match wire::result_kind(&raw)? {
        Kind::Complete => Outcome::Complete(wire::decode(&raw, target.what())?),
        Kind::InputRequired => {
            let irr: InputRequiredResult = wire::decode(&raw, "input_required")?;
            if !irr.is_well_formed() {
                return Err(
                    InputRequiredError::new(InputRequiredReason::Malformed, Some(irr), 0)
                        .into_error(ErrorKind::InputRequired),
                );
            }
            Outcome::InputRequired(irr)
        }
        Kind::Unknown(t) => {
            return Err(InputRequiredError::new(
                InputRequiredReason::UnknownResultType(t),
                None,
                0,
            )
            .into_error(ErrorKind::InputRequired));
        }
    };
    Ok(Round { outcome, raw })
}

/// The pause before retrying a round that carried only state: 50 ms, doubling to 250 ms;
/// reset by any round that carried input requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff(Duration);

impl Backoff {
    pub(crate) const FIRST: Duration = Duration::from_millis(50);
    pub(crate) const MAX: Duration = Duration::from_millis(250);

    pub(crate) fn new() -> Self {
        Backoff(Self::FIRST)
    }

    pub(crate) fn reset(&mut self) {
        self.0 = Self::FIRST;
    }

    /// The delay to wait now; the next one doubles.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(Self::MAX);
        d
    }
}

/// Runs `fut` against an optional deadline; on expiry the error carries the flow's last
/// `input_required` result.
pub(crate) async fn within<F: std::future::Future<Output = Result<T>>, T>(
    deadline: Option<Instant>,
    last: &Option<InputRequiredResult>,
    rounds: u32,
    fut: F,
) -> Result<T> {
    match deadline {
        None => fut.await,
        Some(at) => match tokio::time::timeout_at(at, fut).await {
            Ok(r) => r,
            Err(_) => Err(InputRequiredError::new(
                InputRequiredReason::DeadlineExceeded,
                last.clone(),
                rounds,
            )
            .into_error(ErrorKind::Timeout)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_and_resets() {
        let mut b = Backoff::new();
        let ms: Vec<u128> = (0..5).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(ms, [50, 100, 200, 250, 250]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 50);
    }

    #[test]
    fn continuation_round_trips_through_json() {
        let c = Continuation::new()
            .with_response(
                "a",
                arctern_types::elicitation::ElicitResult::accept([("x", true)]),
            )
            .with_response(
                "r",
                arctern_types::roots::ListRootsResult::new(vec![arctern_types::roots::Root::new(
                    "file:///r",
                )]),
            );
        let c = Continuation {
            request_state: Some("s\u{0}é".into()),
            ..c
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Continuation>(&json).unwrap(), c);
        assert!(Continuation::new().is_empty());
    }
}
