//! Multi round-trip requests on the server.
//!
//! A handler that needs something only the user has asks for it; the server answers the
//! call with `input_required`, the client answers and retries, and the handler runs again
//! with the answers. A question is a value, [`Ask`]: its key, what is asked (a form, a
//! choice among options computed at run time, a confirmation, a URL to open, an LLM
//! completion, the client's roots), and the type of its answer. Two forms exist, and one
//! handler uses one of them:
//!
//! - **Dependency form**: the handler says which answers it needs and the server gets them
//!   before the body runs, or while it runs. Parameters [`Answer<Q>`] (the accepted answer
//!   to question type `Q`) and [`AnswerOutcome<Q>`] (accepted, declined or cancelled) for
//!   questions known from the call's arguments and earlier answers ([`Question`]); and
//!   [`Questions`] for questions phrased in the body. Missing answers do not fail: every
//!   independent question of the round is asked in one `input_required` result. Questions
//!   that depend on an earlier answer ([`AskContext::answer`]) come in a later round.
//! - **Manual form**: the handler reads [`Responses`] and [`HandlerState`] itself and
//!   returns an [`Outcome`].
//!
//! # What the server guarantees
//!
//! With request-state sealing on (the default of `McpServer`), the server's request-state
//! boundary makes these hold on both eras:
//!
//! - **Every answer is pinned** to the exact question it answers (a digest of the rendered
//!   question, choices included): an answer to a question that was never asked in that form
//!   is ignored and the question asked again. Only the keys the previous round asked are
//!   taken as fresh answers; an answer accepted in an earlier round cannot be replaced.
//! - **Every answer is checked** before the handler sees it: the kind of answer, and for a
//!   form the fields against the schema that was asked (types, bounds, formats, the offered
//!   options). An answer that does not fit is refused and the question asked again with the
//!   reason added to its message.
//! - **Rounds are bounded** ([`MrtrLimits`]), and before anything is asked the client's
//!   declared capabilities are checked (form or URL elicitation, sampling, sampling with
//!   tools, roots); a question the client cannot answer fails the call with `-32021` and
//!   `data.requiredCapabilities`.
//! - **Every round of a flow shares one flow id** ([`RequestContext::flow_id`]): random,
//!   minted in the flow's first round and carried sealed.
//!
//! What it does **not** guarantee by default: that the final round runs once. The handler
//! runs afresh in every round, and a client may present a round's request state again while
//! it is valid (its time window, ten minutes by default); the handler then runs again with
//! the same answers. Make a side effect idempotent on the flow id, or give the server a
//! [`OneTimeStore`]: with one, a flow completes at most once, and presenting any of its
//! rounds again afterwards gets the fixed request-state error.
//!
//! [`RequestContext::flow_id`]: crate::server::RequestContext::flow_id

mod ask;
mod one_time;
mod questions;
mod round;
mod schema;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use arctern_types::ErrorObject;
use arctern_types::elicitation::ElicitAction;
use arctern_types::mrtr::{
    InputRequest, InputRequestKind, InputRequiredResult, InputResponse, InputResponses,
};
use indexmap::IndexMap;

use crate::Outcome;
use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;

use crate::server::extract::Rejection;
pub use crate::state::FlowId;
use crate::state::QuestionDigest;
/// Derives [`Question`](trait@Question) for a form with a fixed key and message (the
/// `macros` feature); see the trait for what it writes.
#[cfg(feature = "macros")]
pub use arctern_macros::Question;
pub use ask::{Ask, Choice, DEFAULT_SAMPLE_MAX_TOKENS};
use ask::{check, with_reason};
pub(crate) use ask::{check as check_answer, with_reason as question_with_reason};
pub use one_time::{
    Claim, DEFAULT_ONE_TIME_CAPACITY, DEFAULT_ONE_TIME_MEMORY, DEFAULT_ONE_TIME_SHARE_DIVISOR,
    MemoryOneTimeStore, ONE_TIME_BYTES_PER_FLOW, OneTimeStore, OneTimeStoreError, StoreFuture,
};
use questions::Step;
pub use questions::{
    Answer, AnswerOutcome, AskContext, Asked, Collect, Decision, HandlerState, NoArgs, NotYet,
    Question, QuestionSignature, Questions, Responses, Roots,
};
pub use round::Round;
pub(crate) use round::{digest_of, write_question};

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

/// What one question key resolved to in this call, so that asking it again (from a
/// dependent question and a parameter, say) gives the same result.
#[derive(Debug, Clone)]
pub(crate) struct Memo {
    /// The question, without a refusal reason: one key asks one question per call.
    identity: QuestionDigest,
    /// The accepted answer, or `None` while the question is asked.
    answer: Option<Arc<InputResponse>>,
}

/// The answers and the newly asked questions of one call.
#[derive(Default)]
pub(crate) struct InputInner {
    /// Every answer of the flow so far, as the boundary passed them on (carried and this
    /// round's, each pinned to its question in the request's [`Round`]).
    pub(crate) responses: InputResponses,
    /// The handler's plaintext state (manual form), or the dependency form's own notes.
    pub(crate) request_state: Option<String>,
    /// Questions asked this round.
    pub(crate) asks: IndexMap<String, InputRequest>,
    /// Memo of resolutions by key.
    pub(crate) resolved: HashMap<String, Memo>,
    /// Set when a run-time question stopped the body ([`Questions`]).
    pub(crate) interrupt: Option<Interrupt>,
    /// The call's arguments, decoded once per type for questions.
    pub(crate) args: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
    /// Dependency form: why an answer was refused, by key, carried in the request state so
    /// that the question asked again (with the reason) is the one its answer is pinned to.
    pub(crate) refusals: Option<BTreeMap<String, String>>,
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
        let request_state = match inner.refusals {
            // The dependency form's notes replace the state it was given.
            Some(refusals) if refusals.is_empty() => None,
            Some(refusals) => serde_json::to_string(&refusals).ok(),
            None => inner.request_state,
        };
        let mut result = InputRequiredResult::new();
        result.input_requests = Some(inner.asks.into_iter().collect());
        result.request_state = request_state;
        Ok(Outcome::InputRequired(result))
    }
}

impl InputInner {
    /// Resolves one question against the answers: a pinned, fitting answer is accepted (or
    /// the user's refusal reported); a missing one queues the question; one that does not
    /// fit queues it again with the reason.
    pub(crate) fn resolve<A>(&mut self, ctx: &RequestContext, ask: Ask<A>) -> Step<A> {
        let (key, question, read) = ask.into_parts();
        let question = match question {
            Ok(question) => question,
            Err(why) => {
                tracing::error!(key = %key, %why, "a question cannot be asked");
                return Step::Failed(Rejection::protocol(ErrorObject::internal_error(format!(
                    "The question {key:?} cannot be asked"
                ))));
            }
        };
        let identity = digest_of(&key, &question);
        if let Some(memo) = self.resolved.get(key.as_ref()) {
            if memo.identity != identity {
                tracing::error!(key = %key, "two different questions use one key in one call");
                return Step::Failed(Rejection::protocol(ErrorObject::internal_error(format!(
                    "Two different questions use the key {key:?}"
                ))));
            }
            return match memo.answer.clone() {
                Some(answer) => decide(&key, &question, &answer, read).unwrap_or(Step::Pending),
                None => Step::Pending,
            };
        }
        // The question as it was last asked: with the reason its previous answer was refused.
        let asked = match self.refusal(&key) {
            Some(reason) => Cow::Owned(with_reason(&question, reason)),
            None => Cow::Borrowed(&question),
        };
        let mut refused = None;
        if let Some(response) = self.responses.get(key.as_ref()) {
            let pinned = match &asked {
                Cow::Borrowed(_) => identity,
                Cow::Owned(asked) => digest_of(&key, asked),
            };
            if ctx.round().pin(&key) == Some(&pinned) {
                let outcome = match decode_answer(asked.kind(), response) {
                    Some(decoded) => {
                        let decoded = Arc::new(decoded);
                        decide(&key, &asked, &decoded, read).map(|step| (step, decoded))
                    }
                    None => Err(check(&asked, response)
                        .err()
                        .unwrap_or_else(|| "the answer does not decode".into())),
                };
                match outcome {
                    Ok((step, decoded)) => {
                        self.memo(&key, identity, Some(decoded));
                        return step;
                    }
                    Err(why) => refused = Some(why),
                }
            } else {
                tracing::debug!(
                    key = %key,
                    "ignored an answer to a question that was not asked in this form"
                );
            }
        }
        let again = match refused {
            Some(why) => {
                tracing::debug!(key = %key, %why, "refused an answer that does not fit its question");
                let reason = format!("The previous answer was not accepted: {why}.");
                let again = with_reason(&question, &reason);
                self.refusals_mut().insert(key.to_string(), reason);
                again
            }
            None => asked.into_owned(),
        };
        self.asks.insert(key.to_string(), again);
        self.memo(&key, identity, None);
        Step::Pending
    }

    fn memo(&mut self, key: &str, identity: QuestionDigest, answer: Option<Arc<InputResponse>>) {
        self.resolved
            .insert(key.to_owned(), Memo { identity, answer });
    }

    /// Why the previous answer under `key` was refused, if it was.
    fn refusal(&mut self, key: &str) -> Option<&str> {
        self.refusals_mut().get(key).map(String::as_str)
    }

    /// The dependency form's refusal notes, read from the request state the first time.
    fn refusals_mut(&mut self) -> &mut BTreeMap<String, String> {
        let state = &self.request_state;
        self.refusals.get_or_insert_with(|| {
            state
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default()
        })
    }
}

/// The step an answer that fits its question leads to: the user's refusal, or the answer
/// read. `Err` says why the answer does not fit.
fn decide<A>(
    key: &str,
    question: &InputRequest,
    answer: &InputResponse,
    read: ask::Read<A>,
) -> Result<Step<A>, String> {
    if let InputResponse::Elicit(e) = answer {
        match e.action {
            ElicitAction::Accept => {}
            ElicitAction::Decline | ElicitAction::Cancel => {
                return Ok(Step::Refused {
                    key: key.to_owned(),
                    declined: e.action == ElicitAction::Decline,
                });
            }
        }
    }
    check(question, answer)?;
    read(key, answer).map(Step::Accepted)
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
