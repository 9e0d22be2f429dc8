//! Typed questions and the extractors that carry their answers.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use arctern_types::ErrorObject;
use arctern_types::elicitation::ElicitAction;
use arctern_types::mrtr::{InputRequest, InputResponse};
use arctern_types::roots::Root;
use arctern_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::schema::form_schema_for;
use super::{InputInner, Interrupt, InterruptReason, Resolution};
use crate::server::context::RequestContext;
use crate::server::extract::{CallParts, Extracted, FromCall, MrtrStyle, Rejection, Signature};

/// How a question is put to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    kind: AskKind,
}

#[derive(Debug, Clone, PartialEq)]
enum AskKind {
    Form { message: String },
    Url { message: String, url: String },
}

impl Ask {
    /// A form: the user fills in the fields of the answer type (its JSON Schema must be a
    /// flat object of strings, numbers, booleans and enums).
    pub fn form(message: impl Into<String>) -> Self {
        Ask {
            kind: AskKind::Form {
                message: message.into(),
            },
        }
    }

    /// A URL the user opens out of band (for credentials, payments, OAuth...). Accepting
    /// means the user consented to open it; the server learns the outcome its own way and
    /// may ask again.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Ask {
            kind: AskKind::Url {
                message: message.into(),
                url: url.into(),
            },
        }
    }
}

/// Signals that a question cannot be put yet because it depends on an answer that is not
/// there; it will be asked in a later round. Produced by [`AskContext::answer`] with `?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotYet;

/// A question to the user, answered with a value of `Self`.
///
/// `KEY` is the stable key of the question in `inputRequests`; keep it unique within a
/// handler. The question text may read the call's arguments and earlier answers through
/// the [`AskContext`]; a question built from an earlier answer is a *dependent* question and
/// is asked in the round after that answer arrives.
///
/// ```
/// use arctern::server::mrtr::{Ask, AskContext, NotYet, Question};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Region { region: String }
///
/// impl Question for Region {
///     const KEY: &'static str = "region";
///     fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
///         Ok(Ask::form("Which region should the database live in?"))
///     }
/// }
/// ```
pub trait Question: DeserializeOwned + schemars::JsonSchema + Send + 'static {
    /// The key of the question in `inputRequests`.
    const KEY: &'static str;

    /// How to ask.
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet>;
}

/// A request for an LLM completion from the client (sampling), answered with a
/// [`CreateMessageResult`].
pub trait SamplingQuestion: Send + 'static {
    /// The key of the request in `inputRequests`.
    const KEY: &'static str;

    /// The sampling request.
    fn ask(cx: &AskContext<'_>) -> Result<CreateMessageRequestParams, NotYet>;
}

/// Where the input of a call is kept while questions are resolved: owned by the extractors,
/// or shared with a running body.
#[derive(Clone, Copy)]
enum InnerRef<'a> {
    Cell(&'a RefCell<InputInner>),
    Shared(&'a Mutex<InputInner>),
}

impl InnerRef<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut InputInner) -> R) -> R {
        match self {
            InnerRef::Cell(c) => f(&mut c.borrow_mut()),
            InnerRef::Shared(m) => f(&mut m.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// What a question can look at while it is phrased: the call's arguments and earlier
/// answers.
pub struct AskContext<'a> {
    ctx: &'a RequestContext,
    arguments: &'a Value,
    inner: InnerRef<'a>,
    resolving: RefCell<Vec<&'static str>>,
}

impl<'a> AskContext<'a> {
    fn new(ctx: &'a RequestContext, arguments: &'a Value, inner: InnerRef<'a>) -> Self {
        AskContext {
            ctx,
            arguments,
            inner,
            resolving: RefCell::new(Vec::new()),
        }
    }

    /// The request context.
    pub fn context(&self) -> &RequestContext {
        self.ctx
    }

    /// The call's arguments decoded into `T`, or `None` if they do not decode.
    pub fn arguments<T: DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(self.arguments).ok()
    }

    /// The accepted answer to an earlier question, or [`NotYet`] (use `?`): the question
    /// being phrased then waits for a later round, and `Q` is asked now if it was not yet.
    pub fn answer<Q: Question>(&self) -> Result<Q, NotYet> {
        match self.resolve::<Q>() {
            Step::Done(Decision::Accepted(q)) => Ok(q),
            _ => Err(NotYet),
        }
    }

    fn resolve<Q: Question>(&self) -> Step<Decision<Q>> {
        if let Some(done) = self.inner.with(|i| i.resolved.get(Q::KEY).cloned()) {
            return self.interpret::<Q>(done);
        }
        if self.resolving.borrow().contains(&Q::KEY) {
            // A question that (indirectly) depends on itself can never be asked.
            return Step::Deferred;
        }
        self.resolving.borrow_mut().push(Q::KEY);
        let asked = Q::ask(self);
        self.resolving.borrow_mut().retain(|k| *k != Q::KEY);
        let request = match asked {
            Err(NotYet) => {
                self.inner
                    .with(|i| i.resolved.insert(Q::KEY.to_owned(), Resolution::Deferred));
                return Step::Deferred;
            }
            Ok(ask) => match build_request::<Q>(ask) {
                Ok(r) => r,
                Err(e) => return Step::Failed(e),
            },
        };
        let fits = |r: &InputResponse| match r {
            InputResponse::Elicit(e) if e.action == ElicitAction::Accept => {
                decode_content::<Q>(e.content.as_ref()).is_some()
            }
            InputResponse::Elicit(_) => true,
            _ => false,
        };
        let resolution = self
            .inner
            .with(|i| i.resolve(self.ctx, Q::KEY, request, &fits));
        self.interpret::<Q>(resolution)
    }

    fn interpret<Q: Question>(&self, resolution: Resolution) -> Step<Decision<Q>> {
        match resolution {
            Resolution::Answered(answer) => match &*answer {
                InputResponse::Elicit(e) => match e.action {
                    ElicitAction::Accept => match decode_content::<Q>(e.content.as_ref()) {
                        Some(q) => Step::Done(Decision::Accepted(q)),
                        None => Step::Pending,
                    },
                    ElicitAction::Decline => Step::Done(Decision::Declined),
                    ElicitAction::Cancel => Step::Done(Decision::Cancelled),
                },
                _ => Step::Pending,
            },
            Resolution::Pending => Step::Pending,
            Resolution::Deferred => Step::Deferred,
        }
    }

    fn resolve_request(
        &self,
        key: &'static str,
        request: InputRequest,
        fits: &dyn Fn(&InputResponse) -> bool,
    ) -> Resolution {
        if let Some(done) = self.inner.with(|i| i.resolved.get(key).cloned()) {
            return done;
        }
        self.inner.with(|i| i.resolve(self.ctx, key, request, fits))
    }
}

fn decode_content<Q: DeserializeOwned>(
    content: Option<&arctern_types::elicitation::ElicitContent>,
) -> Option<Q> {
    let value = match content {
        Some(c) => serde_json::to_value(c).ok()?,
        None => Value::Object(Default::default()),
    };
    Q::deserialize(&value).ok()
}

fn build_request<Q: Question>(ask: Ask) -> Result<InputRequest, ErrorObject> {
    match ask.kind {
        AskKind::Form { message } => {
            let schema = form_schema_for::<Q>().map_err(|why| {
                tracing::error!(question = Q::KEY, %why, "a question's answer type cannot be asked in a form");
                ErrorObject::internal_error(format!("The question {:?} cannot be asked in a form", Q::KEY))
            })?;
            Ok(InputRequest::elicit_form(message, schema))
        }
        AskKind::Url { message, url } => Ok(InputRequest::elicit_url(message, url)),
    }
}

/// Where resolving one answer stands.
enum Step<T> {
    Done(T),
    Pending,
    Deferred,
    Failed(ErrorObject),
}

/// The user's decision on a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<T> {
    /// The user answered.
    Accepted(T),
    /// The user explicitly declined.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

impl<T> Decision<T> {
    /// The answer, if accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Decision::Accepted(t) => Some(t),
            _ => None,
        }
    }
}

fn extract_decision<Q: Question>(parts: &mut CallParts) -> Step<Decision<Q>> {
    let CallParts {
        ctx,
        arguments,
        input,
        ..
    } = parts;
    let cx = AskContext::new(ctx, arguments, InnerRef::Cell(&input.inner));
    cx.resolve::<Q>()
}

fn describe_question<Q: Question>(describe: &mut Signature, by: &'static str) {
    describe.style(MrtrStyle::Dependency, by);
    describe.question(Q::KEY, std::any::type_name::<Q>());
    if let Err(why) = form_schema_for::<Q>() {
        describe.error(format!("question {:?}: {why}", Q::KEY));
    }
}

/// The accepted answer to question `Q`. If the user declines or cancels, the call ends with
/// an `isError` result saying so (use [`AnswerOutcome`] to handle that in the body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<Q>(pub Q);

impl<Q: Question, S> FromCall<S> for Answer<Q> {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        match extract_decision::<Q>(parts) {
            Step::Done(Decision::Accepted(q)) => Extracted::Ready(Answer(q)),
            Step::Done(Decision::Declined) => Extracted::Rejected(Rejection::new(format!(
                "The user declined the question {:?}; the request was not carried out.",
                Q::KEY
            ))),
            Step::Done(Decision::Cancelled) => Extracted::Rejected(Rejection::new(format!(
                "The user cancelled the question {:?}; the request was not carried out.",
                Q::KEY
            ))),
            Step::Pending | Step::Deferred => Extracted::Pending,
            Step::Failed(e) => Extracted::Rejected(Rejection::protocol(e)),
        }
    }

    fn describe(describe: &mut Signature) {
        describe_question::<Q>(describe, "Answer");
    }
}

/// The user's decision on question `Q`: accepted (with the answer), declined or cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerOutcome<Q>(pub Decision<Q>);

impl<Q: Question, S> FromCall<S> for AnswerOutcome<Q> {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        match extract_decision::<Q>(parts) {
            Step::Done(d) => Extracted::Ready(AnswerOutcome(d)),
            Step::Pending | Step::Deferred => Extracted::Pending,
            Step::Failed(e) => Extracted::Rejected(Rejection::protocol(e)),
        }
    }

    fn describe(describe: &mut Signature) {
        describe_question::<Q>(describe, "AnswerOutcome");
    }
}

/// An LLM completion from the client for sampling request `Q`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<Q>(
    pub CreateMessageResult,
    pub std::marker::PhantomData<fn() -> Q>,
);

impl<Q> Sample<Q> {
    /// The completion.
    pub fn result(&self) -> &CreateMessageResult {
        &self.0
    }

    /// The completion, owned.
    pub fn into_result(self) -> CreateMessageResult {
        self.0
    }
}

impl<Q: SamplingQuestion, S> FromCall<S> for Sample<Q> {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        let CallParts {
            ctx,
            arguments,
            input,
            ..
        } = parts;
        let cx = AskContext::new(ctx, arguments, InnerRef::Cell(&input.inner));
        let params = match Q::ask(&cx) {
            Ok(p) => p,
            Err(NotYet) => return Extracted::Pending,
        };
        let fits = |r: &InputResponse| matches!(r, InputResponse::CreateMessage(_));
        match cx.resolve_request(Q::KEY, InputRequest::sample(params), &fits) {
            Resolution::Answered(answer) => match Arc::unwrap_or_clone(answer) {
                InputResponse::CreateMessage(result) => {
                    Extracted::Ready(Sample(result, std::marker::PhantomData))
                }
                _ => Extracted::Pending,
            },
            _ => Extracted::Pending,
        }
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Dependency, "Sample");
        describe.question(Q::KEY, std::any::type_name::<Q>());
    }
}

/// The client's roots (`file://` URIs it exposes), asked with `roots/list` under the key
/// `roots`.
#[derive(Debug, Clone, PartialEq)]
pub struct Roots(pub Vec<Root>);

impl Roots {
    /// The key of the roots request in `inputRequests`.
    pub const KEY: &'static str = "roots";
}

impl<S> FromCall<S> for Roots {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        let CallParts {
            ctx,
            arguments,
            input,
            ..
        } = parts;
        let cx = AskContext::new(ctx, arguments, InnerRef::Cell(&input.inner));
        let fits = |r: &InputResponse| matches!(r, InputResponse::ListRoots(_));
        match cx.resolve_request(Roots::KEY, InputRequest::list_roots(), &fits) {
            Resolution::Answered(answer) => match Arc::unwrap_or_clone(answer) {
                InputResponse::ListRoots(list) => Extracted::Ready(Roots(list.roots)),
                _ => Extracted::Pending,
            },
            _ => Extracted::Pending,
        }
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Dependency, "Roots");
        describe.question(Roots::KEY, "Roots");
    }
}

/// The answers of the flow so far (manual form): this round's answers to the questions
/// of the previous round, and the answers of earlier rounds, which the server carries
/// forward. Each is pinned to the question it answers
/// ([`RequestContext::round`](crate::server::RequestContext::round)). Read them, decide, and
/// return an [`Outcome`](crate::Outcome).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Responses(pub arctern_types::mrtr::InputResponses);

impl<S> FromCall<S> for Responses {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        Extracted::Ready(Responses(parts.input.inner.borrow().responses.clone()))
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Manual, "Responses");
    }
}

/// The handler's own request state from the previous round, in plaintext (manual form). With
/// sealing on (the default of `McpServer`) it was verified: it is exactly what this server
/// returned for this request, principal and audience, within its time window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandlerState(pub Option<String>);

impl<S> FromCall<S> for HandlerState {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        Extracted::Ready(HandlerState(
            parts.input.inner.borrow().request_state.clone(),
        ))
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Manual, "HandlerState");
    }
}

/// Questions asked from the body, for questions that can only be phrased at run time.
///
/// Collect several with [`Questions::ask`] and wait for all of them with
/// [`Questions::ready`]: missing answers end the body with an [`Interrupt`] (propagate it
/// with `?`) and are asked together in one round. A question asked after a `?` is a dependent
/// question and comes in a later round.
///
/// **The code before the last `?` runs again in every round** (the handler is called afresh
/// with the answers so far); only the code after it runs once. Keep side effects after the
/// last question.
///
/// What the body returns decides the round: an error after an [`Interrupt`] (the usual `?`)
/// makes the call an `input_required` round with the questions collected so far, or ends it
/// if a required answer was refused. A body that catches the `Interrupt` and returns a
/// result sends that result, and nothing is asked. [`try_answer`](Self::try_answer) reads an
/// answer without asking for it at all.
///
/// ```no_run
/// use arctern::server::mrtr::{Ask, AskContext, Interrupt, NotYet, Question, Questions};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Confirm { ok: bool }
/// impl Question for Confirm {
///     const KEY: &'static str = "confirm";
///     fn ask(_: &AskContext<'_>) -> Result<Ask, NotYet> { Ok(Ask::form("Go ahead?")) }
/// }
///
/// async fn delete(q: Questions) -> Result<String, Interrupt> {
///     let confirm = q.ask::<Confirm>();
///     let Confirm { ok } = q.ready(confirm)?;
///     Ok(if ok { "deleted".into() } else { "kept".into() })
/// }
/// ```
pub struct Questions {
    ctx: RequestContext,
    arguments: Value,
    shared: Arc<Mutex<InputInner>>,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").finish_non_exhaustive()
    }
}

/// A question collected by [`Questions::ask`]; turn it into its answer with
/// [`Questions::ready`].
#[must_use = "pass it to Questions::ready"]
pub struct Asked<T> {
    step: StepSlot<T>,
}

enum StepSlot<T> {
    Done(Decision<T>),
    Waiting,
    Failed(ErrorObject),
}

impl Questions {
    fn cx(&self) -> AskContext<'_> {
        AskContext::new(&self.ctx, &self.arguments, InnerRef::Shared(&self.shared))
    }

    /// Collects question `Q`: its answer if there is one, else it is queued for this round.
    pub fn ask<Q: Question>(&self) -> Asked<Q> {
        Asked {
            step: match self.cx().resolve::<Q>() {
                Step::Done(d) => StepSlot::Done(d),
                Step::Pending | Step::Deferred => StepSlot::Waiting,
                Step::Failed(e) => StepSlot::Failed(e),
            },
        }
    }

    /// Waits for collected questions: the accepted answers, or an [`Interrupt`] when any is
    /// still missing (they are all asked together) or was declined. Takes one [`Asked`] or a
    /// tuple of them.
    pub fn ready<T: Collect>(&self, asked: T) -> Result<T::Output, Interrupt> {
        asked
            .collect()
            .inspect_err(|interrupt| self.record(interrupt))
    }

    /// Like [`ready`](Self::ready) for one question, but returns the user's decision
    /// (accepted, declined or cancelled) instead of failing on a refusal.
    pub fn decision<Q>(&self, asked: Asked<Q>) -> Result<Decision<Q>, Interrupt> {
        match asked.step {
            StepSlot::Done(d) => Ok(d),
            StepSlot::Waiting => Err(self.interrupt(InterruptReason::Pending)),
            StepSlot::Failed(e) => Err(self.interrupt(InterruptReason::Failed(e))),
        }
    }

    /// Asks `Q` alone and waits for it: `q.answer::<Q>()?`.
    pub fn answer<Q: Question>(&self) -> Result<Q, Interrupt> {
        let asked = self.ask::<Q>();
        self.ready(asked)
    }

    /// The accepted answer to `Q` if the user already gave it, without asking: `None` when
    /// it is missing, declined or cancelled, and the question is not asked this round.
    pub fn try_answer<Q: Question>(&self) -> Option<Q> {
        let step = self.cx().resolve::<Q>();
        // Not asked after all: only questions a body waits for go out.
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .asks
            .shift_remove(Q::KEY);
        match step {
            Step::Done(Decision::Accepted(q)) => Some(q),
            _ => None,
        }
    }

    fn interrupt(&self, reason: InterruptReason) -> Interrupt {
        let interrupt = Interrupt { reason };
        self.record(&interrupt);
        interrupt
    }

    /// Remembers why the body stopped; the server reads it if the body returns an error.
    fn record(&self, interrupt: &Interrupt) {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .interrupt = Some(interrupt.clone());
    }
}

impl<S> FromCall<S> for Questions {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        let inner = std::mem::take(&mut *parts.input.inner.borrow_mut());
        let shared = Arc::new(Mutex::new(inner));
        parts.input.shared = Some(shared.clone());
        Extracted::Ready(Questions {
            ctx: parts.ctx.clone(),
            arguments: parts.arguments.clone(),
            shared,
        })
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Dependency, "Questions");
    }
}

/// One [`Asked`] or a tuple of them, for [`Questions::ready`].
pub trait Collect: sealed::Sealed {
    /// The answers.
    type Output;
    #[doc(hidden)]
    fn collect(self) -> Result<Self::Output, Interrupt>;
}

mod sealed {
    pub trait Sealed {}
}

impl<Q> sealed::Sealed for Asked<Q> {}

impl<T> Asked<T> {
    fn state(&self) -> Result<(), InterruptReason> {
        match &self.step {
            StepSlot::Done(_) => Ok(()),
            StepSlot::Waiting => Err(InterruptReason::Pending),
            StepSlot::Failed(e) => Err(InterruptReason::Failed(e.clone())),
        }
    }

    fn value(self, key: &str) -> Result<T, InterruptReason> {
        match self.step {
            StepSlot::Done(Decision::Accepted(t)) => Ok(t),
            StepSlot::Done(Decision::Declined) => Err(InterruptReason::Refused {
                key: key.to_owned(),
                declined: true,
            }),
            StepSlot::Done(Decision::Cancelled) => Err(InterruptReason::Refused {
                key: key.to_owned(),
                declined: false,
            }),
            StepSlot::Waiting => Err(InterruptReason::Pending),
            StepSlot::Failed(e) => Err(InterruptReason::Failed(e)),
        }
    }
}

impl<Q: Question> Collect for Asked<Q> {
    type Output = Q;
    fn collect(self) -> Result<Q, Interrupt> {
        self.value(Q::KEY).map_err(|reason| Interrupt { reason })
    }
}

macro_rules! collect_tuple {
    ($($t:ident),+) => {
        impl<$($t),+> sealed::Sealed for ($(Asked<$t>,)+) {}

        impl<$($t: Question),+> Collect for ($(Asked<$t>,)+) {
            type Output = ($($t,)+);
            #[allow(non_snake_case)]
            fn collect(self) -> Result<Self::Output, Interrupt> {
                let ($($t,)+) = self;
                // Failures first, then anything pending (all asked together), then values.
                let states = [$($t.state()),+];
                if let Some(Err(e)) = states.iter().find(|s| matches!(s, Err(InterruptReason::Failed(_)))) {
                    return Err(Interrupt { reason: e.clone() });
                }
                if states.iter().any(|s| s.is_err()) {
                    return Err(Interrupt { reason: InterruptReason::Pending });
                }
                let values = ($($t.value($t::KEY)),+,);
                let ($($t,)+) = values;
                Ok(($($t.map_err(|reason| Interrupt { reason })?,)+))
            }
        }
    };
}

collect_tuple!(A);
collect_tuple!(A, B);
collect_tuple!(A, B, C);
collect_tuple!(A, B, C, D);
collect_tuple!(A, B, C, D, E);
collect_tuple!(A, B, C, D, E, F);
