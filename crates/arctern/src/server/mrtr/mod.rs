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
//! - **Manual form**: the handler reads [`Responses`] and [`RequestState`] itself and
//!   returns an [`Outcome`](crate::server::Outcome).
//!
//! Before anything is asked, the client's declared capabilities for this request are checked
//! (form or URL elicitation, sampling, sampling with tools, roots); a question the client
//! cannot answer fails the call with `-32021` and `data.requiredCapabilities`.

mod questions;
mod schema;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use arctern_types::ErrorObject;
use arctern_types::mrtr::{
    InputRequest, InputRequestKind, InputRequiredResult, InputResponse, InputResponses,
};
use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;
use crate::server::outcome::Outcome;
use crate::state::QuestionDigest;

pub use questions::{
    Answer, AnswerOutcome, Ask, AskContext, Asked, Collect, Decision,
    InputResponsesParam as Responses, NotYet, Question, Questions, RequestState, Roots, Sample,
    SamplingQuestion,
};

/// Returned by a run-time question that is not answered yet; propagate it with `?` and the
/// server turns the call into an `input_required` round.
///
/// Converts into any error type that implements `From<Interrupt>` (including `anyhow::Error`
/// and `Box<dyn Error>`, since it is a `std::error::Error`).
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

/// Limits on multi round-trip requests, enforced by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Cannot be asked at all.
    Failed(ErrorObject),
}

/// The carried, pinned and newly asked questions of one call.
#[derive(Default)]
pub(crate) struct InputInner {
    /// Answers of this round, as the client sent them.
    pub(crate) responses: InputResponses,
    /// Answers carried from earlier rounds in the sealed state.
    pub(crate) carried: Map<String, Value>,
    /// Pins of earlier rounds: key → digest of the question asked.
    pub(crate) pins: BTreeMap<String, QuestionDigest>,
    /// Rounds before this one.
    pub(crate) round: u32,
    /// Whether the request state was verified (pins exist only then).
    pub(crate) sealed: bool,
    /// The handler's plaintext state (manual form).
    pub(crate) request_state: Option<String>,
    /// Questions asked this round.
    pub(crate) asks: IndexMap<String, (InputRequest, QuestionDigest)>,
    /// Answers to carry into the next round; rendered as JSON only if a next round comes.
    pub(crate) next_answers: Vec<(String, Arc<InputResponse>)>,
    /// Pins to carry into the next round.
    pub(crate) next_pins: BTreeMap<String, QuestionDigest>,
    /// Memo of typed resolutions by key.
    pub(crate) resolved: HashMap<String, Resolution>,
    /// A failure found while resolving (capability missing...).
    pub(crate) failure: Option<ErrorObject>,
}

/// The multi round-trip input of one call. Lives in [`CallParts`](crate::server::CallParts).
#[derive(Default)]
pub(crate) struct InputState {
    pub(crate) inner: RefCell<InputInner>,
    /// Set when a [`Questions`] extractor shares the state with the running body.
    pub(crate) shared: Option<Arc<Mutex<InputInner>>>,
    pub(crate) interrupt: InterruptSlot,
}

/// Shared between a running handler body and the server: set when the body stops at a
/// question.
#[derive(Clone, Default)]
pub(crate) struct InterruptSlot(Option<Arc<Mutex<Option<Interrupt>>>>);

impl InterruptSlot {
    pub(crate) fn new() -> Self {
        InterruptSlot(Some(Arc::new(Mutex::new(None))))
    }

    pub(crate) fn take(&self) -> Option<Interrupt> {
        self.0
            .as_ref()
            .and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take())
    }

    pub(crate) fn set(&self, interrupt: Interrupt) {
        if let Some(slot) = &self.0 {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(interrupt);
        }
    }
}

impl InputState {
    /// The input of a call: this round's answers, and the request state the server opened
    /// (or the raw one, when sealing is off).
    pub(crate) fn new(
        ctx: &RequestContext,
        responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> Self {
        let mut inner = InputInner {
            responses: responses.unwrap_or_default(),
            request_state,
            ..Default::default()
        };
        if let Some(opened) = ctx.opened_state() {
            inner.carried = opened.answers.clone();
            inner.pins = opened.asked.clone();
            inner.round = opened.round;
            inner.sealed = true;
        }
        InputState {
            inner: RefCell::new(inner),
            shared: None,
            interrupt: InterruptSlot::default(),
        }
    }

    pub(crate) fn interrupt_slot(&self) -> InterruptSlot {
        self.interrupt.clone()
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

    /// Ends a round whose body did not complete: the interim result with every question
    /// queued, and the answers and pins to seal for the next round. A required answer that
    /// was refused ends the call instead.
    pub(crate) fn finish_round<T>(
        self,
        ctx: &RequestContext,
        interrupt: Option<Interrupt>,
        refusal: impl FnOnce(String) -> HandlerResult<Outcome<T>>,
    ) -> HandlerResult<Outcome<T>> {
        let inner = self.into_inner();
        if let Some(error) = inner.failure {
            return Err(error);
        }
        match interrupt.map(|i| i.reason) {
            Some(InterruptReason::Failed(e)) => return Err(e),
            Some(InterruptReason::Refused { key, declined }) => {
                let verb = if declined { "declined" } else { "cancelled" };
                return refusal(format!(
                    "The user {verb} the question {key:?}; the request was not carried out."
                ));
            }
            _ => {}
        }
        let limits = ctx.mrtr_limits();
        if inner.asks.is_empty() {
            // Nothing could be asked (every pending question waits on another): a server bug.
            return Err(ErrorObject::internal_error(
                "The handler is waiting for answers but asked no question",
            ));
        }
        if inner.asks.len() > limits.max_input_requests {
            tracing::error!(
                asks = inner.asks.len(),
                limit = limits.max_input_requests,
                "too many questions in one round"
            );
            return Err(ErrorObject::internal_error(
                "The handler asked too many questions at once",
            ));
        }
        if inner.round + 1 > limits.max_rounds {
            return Err(ErrorObject::invalid_params(format!(
                "The request needed more than {} rounds of input",
                limits.max_rounds
            )));
        }
        let mut pins = inner.next_pins;
        let mut requests = arctern_types::mrtr::InputRequests::new();
        for (key, (request, digest)) in inner.asks {
            pins.insert(key.clone(), digest);
            requests.insert(key, request);
        }
        let answers = inner
            .next_answers
            .into_iter()
            .filter_map(|(key, answer)| Some((key, serde_json::to_value(&*answer).ok()?)))
            .collect();
        ctx.set_carry(answers, pins);
        let result = InputRequiredResult {
            input_requests: Some(requests),
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
        let kind = request.kind();
        if !request.is_supported_by(ctx.client_capabilities()) {
            let required =
                serde_json::to_value(request.required_capabilities()).unwrap_or(Value::Null);
            let error = ErrorObject::missing_client_capability(required);
            self.failure.get_or_insert(error.clone());
            return Resolution::Failed(error);
        }
        let digest = digest_of(key, &request);
        let pinned = self.pins.get(key) == Some(&digest);
        if let Some(response) = self.responses.get(key) {
            if pinned {
                if let Some(answer) = decode_answer(kind, response).filter(|a| fits(a)) {
                    let answer = Arc::new(answer);
                    self.keep(key, &answer, digest);
                    return Resolution::Answered(answer);
                }
                tracing::debug!(key, "an answer does not fit its question; asking again");
            } else {
                tracing::debug!(
                    key,
                    "ignored an answer to a question that was not asked in this form"
                );
            }
        } else if pinned
            && let Some(carried) = self.carried.get(key)
            && let Ok(answer) = InputResponse::decode_for(kind, carried.clone())
            && fits(&answer)
        {
            let answer = Arc::new(answer);
            self.keep(key, &answer, digest);
            return Resolution::Answered(answer);
        }
        self.asks.insert(key.to_owned(), (request, digest));
        Resolution::Pending
    }

    fn keep(&mut self, key: &str, answer: &Arc<InputResponse>, digest: QuestionDigest) {
        self.next_answers.retain(|(k, _)| k != key);
        self.next_answers.push((key.to_owned(), answer.clone()));
        self.next_pins.insert(key.to_owned(), digest);
    }
}

/// Most question keys whose last question a thread remembers (see [`digest_of`]).
const DIGEST_MEMO_KEYS: usize = 256;

thread_local! {
    /// Per thread: question key → the last question asked under it, with its digest.
    static DIGEST_MEMO: RefCell<HashMap<String, Arc<(InputRequest, QuestionDigest)>>> =
        RefCell::new(HashMap::new());
}

/// The digest that pins answers to `request`, asked under `key`.
///
/// Rendering a question to canonical JSON and hashing it is a good part of the cost of a
/// round, and a handler usually asks the same question under the same key round after
/// round and call after call. So each thread remembers the last question seen under each
/// key with its digest, and reuses the digest when the question compares equal (equal
/// questions have the same canonical JSON, so the same digest).
fn digest_of(key: &str, request: &InputRequest) -> QuestionDigest {
    let remembered = DIGEST_MEMO.with_borrow(|memo| memo.get(key).cloned());
    if let Some(hit) = remembered
        && hit.0 == *request
    {
        return hit.1;
    }
    let params = serde_json::to_value(request)
        .ok()
        .and_then(|mut v| v.get_mut("params").map(Value::take))
        .unwrap_or(Value::Null);
    let digest = crate::state::question_digest(request.method(), &params);
    DIGEST_MEMO.with_borrow_mut(|memo| {
        if memo.len() < DIGEST_MEMO_KEYS || memo.contains_key(key) {
            memo.insert(key.to_owned(), Arc::new((request.clone(), digest)));
        }
    });
    digest
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

#[cfg(test)]
mod tests {
    use arctern_types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};

    use super::*;

    fn uncached(request: &InputRequest) -> QuestionDigest {
        let params = serde_json::to_value(request).unwrap()["params"].take();
        crate::state::question_digest(request.method(), &params)
    }

    fn form(message: &str, field: &str) -> InputRequest {
        InputRequest::elicit_form(
            message,
            RequestedSchema::new().required(field, PrimitiveSchemaDefinition::boolean()),
        )
    }

    #[test]
    fn memoised_digests_equal_fresh_ones_and_follow_changed_questions() {
        let first = form("Go ahead?", "ok");
        let digest = digest_of("memo-test", &first);
        assert_eq!(digest, uncached(&first));
        // Remembered: the same question gives the same digest.
        assert_eq!(digest_of("memo-test", &first.clone()), digest);

        // Another question under the same key is hashed afresh, and replaces the memo.
        let reworded = form("Really go ahead?", "ok");
        let other_field = form("Go ahead?", "yes");
        for changed in [&reworded, &other_field] {
            let changed_digest = digest_of("memo-test", changed);
            assert_ne!(changed_digest, digest);
            assert_eq!(changed_digest, uncached(changed));
        }
        assert_eq!(digest_of("memo-test", &first), digest);

        // Keys do not share memos: the same question under two keys has one digest.
        assert_eq!(digest_of("memo-test-2", &first), digest);
    }

    #[test]
    fn the_memo_stays_bounded() {
        let question = form("Go ahead?", "ok");
        for i in 0..DIGEST_MEMO_KEYS + 50 {
            digest_of(&format!("bounded-{i}"), &question);
        }
        let remembered = DIGEST_MEMO.with_borrow(HashMap::len);
        assert!(
            remembered <= DIGEST_MEMO_KEYS,
            "{remembered} keys remembered"
        );
        // Past the bound, digests are still right, just not remembered.
        assert_eq!(digest_of("bounded-late", &question), uncached(&question));
    }
}
