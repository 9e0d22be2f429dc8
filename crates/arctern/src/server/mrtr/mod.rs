//! Multi round-trip requests on the server.
//!
//! A handler that needs something only the user has asks for it; the server answers the
//! call with `input_required`, the client answers and retries, and the handler runs again
//! with the answers. Two forms exist, and one handler uses one of them:
//!
//! - **Dependency form**: parameters that are answers. [`Answer<Q>`] (the accepted answer to
//!   question `Q`), [`AnswerOutcome<Q>`] (accepted, declined or cancelled), [`Sample<Q>`] (an
//!   LLM completion), [`Roots`] (the client's roots), and [`Questions`] for questions phrased
//!   at run time. Missing answers do not fail: every independent question of the round is
//!   asked in one `input_required` result and the body does not run until all are answered.
//!   Questions that depend on an earlier answer ([`AskContext::answer`]) come in a later
//!   round. Each answer is pinned, inside the sealed request state, to the exact question it
//!   answers: an answer to a question that was never asked in this form is ignored and the
//!   question asked again.
//! - **Manual form**: the handler reads [`Responses`] and [`HandlerState`] itself and
//!   returns an [`Outcome`].
//!
//! Before anything is asked, the client's declared capabilities for this request are checked
//! (form or URL elicitation, sampling, sampling with tools, roots); a question the client
//! cannot answer fails the call with `-32021` and `data.requiredCapabilities`.

mod questions;
mod round;
mod schema;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use arctern_types::ErrorObject;
use arctern_types::mrtr::{
    InputRequest, InputRequestKind, InputRequiredResult, InputResponse, InputResponses,
};
use indexmap::IndexMap;

use crate::Outcome;
use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;

pub use questions::{
    Answer, AnswerOutcome, Ask, AskContext, Asked, Collect, Decision, HandlerState, NotYet,
    Question, Questions, Responses, Roots, Sample, SamplingQuestion,
};
pub use round::Round;
pub(crate) use round::digest_of;

/// Returned by a run-time question ([`Questions`]) that is not answered yet, or was declined;
/// propagate it with `?` and the server turns the call into an `input_required` round (or
/// ends it, for a refusal).
///
/// Converts into any error type that implements `From<Interrupt>` (including `anyhow::Error`
/// and `Box<dyn Error>`, since it is a `std::error::Error`). What counts is what the body
/// returns: if it returns an error after a question interrupted it, the interruption
/// decides the call; if it catches the `Interrupt` and returns a result, that result is
/// sent and the question is not asked. [`NotYet`] is the same signal inside
/// [`Question::ask`].
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    pub(crate) reason: InterruptReason,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InterruptReason {
    /// Questions are pending.
    Pending,
    /// A required answer was declined or cancelled.
    Refused { key: String, declined: bool },
    /// The call cannot proceed (capability missing, too many questions).
    Failed(ErrorObject),
}

impl fmt::Display for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            InterruptReason::Pending => f.write_str("input required from the client"),
            InterruptReason::Refused {
                key,
                declined: true,
            } => write!(f, "the user declined to answer {key:?}"),
            InterruptReason::Refused {
                key,
                declined: false,
            } => write!(f, "the user cancelled the question {key:?}"),
            InterruptReason::Failed(e) => write!(f, "{}", e.message),
        }
    }
}

impl std::error::Error for Interrupt {}

/// Limits on multi round-trip requests, enforced by the server's request-state boundary on
/// both eras and for every handler style.
///
/// ```
/// use arctern::server::mrtr::MrtrLimits;
///
/// let limits = MrtrLimits::default().max_rounds(8).max_input_requests(4);
/// assert_eq!(limits.rounds(), 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MrtrLimits {
    /// Most input requests in one round (default 16).
    pub max_input_requests: usize,
    /// Most rounds one call may take (default 32); a hostile client cannot keep a server
    /// busy forever.
    pub max_rounds: u32,
}

impl Default for MrtrLimits {
    fn default() -> Self {
        MrtrLimits {
            max_input_requests: 16,
            max_rounds: 32,
        }
    }
}

impl MrtrLimits {
    /// Sets the most input requests in one round.
    pub fn max_input_requests(mut self, requests: usize) -> Self {
        self.max_input_requests = requests;
        self
    }

    /// Sets the most rounds one call may take.
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// The most rounds one call may take.
    pub fn rounds(&self) -> u32 {
        self.max_rounds
    }
}

/// What the answer to one typed question resolved to this round.
#[derive(Debug, Clone)]
pub(crate) enum Resolution {
    /// Answered: the response as received (decoded for the kind asked). Shared, because the
    /// memo of resolutions, the answers carried to the next round and the handler each hold
    /// it.
    Answered(Arc<InputResponse>),
    /// Not answered yet; its question is queued for this round.
    Pending,
    /// Cannot be asked yet: it depends on an answer that is not there.
    Deferred,
}

/// The answers and the newly asked questions of one call.
#[derive(Default)]
pub(crate) struct InputInner {
    /// Every answer of the flow so far, as the boundary passed them on (carried and this
    /// round's, each pinned to its question in the request's [`Round`]).
    pub(crate) responses: InputResponses,
    /// The handler's plaintext state (manual form).
    pub(crate) request_state: Option<String>,
    /// Questions asked this round.
    pub(crate) asks: IndexMap<String, InputRequest>,
    /// Memo of typed resolutions by key.
    pub(crate) resolved: HashMap<String, Resolution>,
    /// Set when a run-time question stopped the body ([`Questions`]).
    pub(crate) interrupt: Option<Interrupt>,
}

/// The multi round-trip input of one call. Lives in [`CallParts`](crate::server::extract::CallParts).
#[derive(Default)]
pub(crate) struct InputState {
    pub(crate) inner: RefCell<InputInner>,
    /// Set when a [`Questions`] extractor shares the state with the running body.
    pub(crate) shared: Option<Arc<Mutex<InputInner>>>,
}

impl InputState {
    /// The input of a call: every answer so far, and the handler's plaintext state.
    pub(crate) fn new(responses: Option<InputResponses>, request_state: Option<String>) -> Self {
        InputState {
            inner: RefCell::new(InputInner {
                responses: responses.unwrap_or_default(),
                request_state,
                ..Default::default()
            }),
            shared: None,
        }
    }

    /// The state after the body ran: the extractors' state, or the one a [`Questions`]
    /// shared with the body.
    fn into_inner(self) -> InputInner {
        match self.shared {
            Some(shared) => match Arc::try_unwrap(shared) {
                Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
                Err(arc) => std::mem::take(&mut *arc.lock().unwrap_or_else(|e| e.into_inner())),
            },
            None => self.inner.into_inner(),
        }
    }

    /// The interruption a run-time question recorded while the body ran, if any.
    pub(crate) fn interrupt(&self) -> Option<Interrupt> {
        match &self.shared {
            Some(shared) => shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .interrupt
                .clone(),
            None => self.inner.borrow().interrupt.clone(),
        }
    }

    /// Ends a round whose body did not complete: the interim result with every question
    /// queued. A required answer that was refused ends the call instead (`refusal` builds
    /// the kind's answer from the message). The request-state boundary then checks the
    /// round against the limits and the client's capabilities, pins the questions and seals
    /// the answers so far.
    pub(crate) fn finish_round<T>(
        self,
        refusal: impl FnOnce(String) -> HandlerResult<Outcome<T>>,
    ) -> HandlerResult<Outcome<T>> {
        let inner = self.into_inner();
        match inner.interrupt.map(|i| i.reason) {
            Some(InterruptReason::Failed(e)) => return Err(e),
            Some(InterruptReason::Refused { key, declined }) => {
                let verb = if declined { "declined" } else { "cancelled" };
                return refusal(format!(
                    "The user {verb} the question {key:?}; the request was not carried out."
                ));
            }
            _ => {}
        }
        if inner.asks.is_empty() {
            // Nothing could be asked (every pending question waits on another): a server bug.
            return Err(ErrorObject::internal_error(
                "The handler is waiting for answers but asked no question",
            ));
        }
        let result = InputRequiredResult {
            input_requests: Some(inner.asks.into_iter().collect()),
            request_state: inner.request_state,
            ..Default::default()
        };
        Ok(Outcome::InputRequired(result))
    }
}

impl InputInner {
    /// Resolves the answer to the question `request` under `key`: pinned answers of this
    /// round, then carried answers, else the question is queued.
    pub(crate) fn resolve(
        &mut self,
        ctx: &RequestContext,
        key: &str,
        request: InputRequest,
        fits: &dyn Fn(&InputResponse) -> bool,
    ) -> Resolution {
        if let Some(done) = self.resolved.get(key) {
            return done.clone();
        }
        let resolution = self.resolve_uncached(ctx, key, request, fits);
        self.resolved.insert(key.to_owned(), resolution.clone());
        resolution
    }

    fn resolve_uncached(
        &mut self,
        ctx: &RequestContext,
        key: &str,
        request: InputRequest,
        fits: &dyn Fn(&InputResponse) -> bool,
    ) -> Resolution {
        if let Some(response) = self.responses.get(key) {
            if ctx.round().pin(key) == Some(&digest_of(key, &request)) {
                if let Some(answer) = decode_answer(request.kind(), response).filter(|a| fits(a)) {
                    return Resolution::Answered(Arc::new(answer));
                }
                tracing::debug!(key, "an answer does not fit its question; asking again");
            } else {
                tracing::debug!(
                    key,
                    "ignored an answer to a question that was not asked in this form"
                );
            }
        }
        self.asks.insert(key.to_owned(), request);
        Resolution::Pending
    }
}

/// Decodes a response for the kind of question asked; `None` when it does not fit.
fn decode_answer(kind: InputRequestKind, response: &InputResponse) -> Option<InputResponse> {
    if response.kind() == Some(kind) {
        return Some(response.clone());
    }
    // Untagged on the wire: try again as the kind that was asked.
    let value = serde_json::to_value(response).ok()?;
    InputResponse::decode_for(kind, value)
        .ok()
        .filter(|r| r.kind() == Some(kind))
}
