//! Question types, the extractors that carry their answers, and run-time questions.

use std::any::{TypeId, type_name};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use arctern_types::roots::Root;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ask::Ask;
use super::{InputInner, Interrupt, InterruptReason};
use crate::server::context::RequestContext;
use crate::server::extract::{CallParts, Extracted, FromCall, MrtrStyle, Rejection, Signature};

/// Signals that a question cannot be put yet because it depends on an answer that is not
/// there; it will be asked in a later round. Produced by [`AskContext::answer`] with `?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotYet;

/// A question as a type, for the parameter form: [`Answer<Q>`] and [`AnswerOutcome<Q>`]
/// ask it before the handler's body runs.
///
/// [`ask`](Question::ask) builds the question, an [`Ask`] value, from the call's typed
/// arguments and earlier answers. A question built from an earlier answer
/// ([`AskContext::answer`]) is a *dependent* question: it is asked in the round after that
/// answer arrives. `Args` is what [`AskContext::args`] decodes the arguments into (once per
/// call; arguments that do not decode fail the call as [`Args`](crate::server::extract::Args)
/// would); a question that reads no arguments says [`NoArgs`].
///
/// ```
/// use arctern::server::mrtr::{Ask, AskContext, NotYet, Question};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct Trip { city: String }
///
/// /// The hotel, among the ones in the city of the trip.
/// struct Hotel;
///
/// impl Question for Hotel {
///     type Args = Trip;
///     type Answer = String;
///     fn ask(cx: &AskContext<'_, Trip>) -> Result<Ask<String>, NotYet> {
///         let city = &cx.args().city;
///         let hotels = [("h1", format!("Grand {city}")), ("h2", format!("{city} Inn"))];
///         Ok(Ask::choice("hotel", format!("Which hotel in {city}?"), hotels))
///     }
/// }
/// ```
///
/// With the `macros` feature, `#[derive(Question)]` writes this for a form whose key and
/// message are fixed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a question",
    label = "not a question",
    note = "implement `arctern::server::mrtr::Question` for it (or derive it with the `macros` feature); for questions phrased at run time, take `Questions` and pass it an `Ask` value"
)]
pub trait Question: 'static {
    /// What the call's arguments are decoded into for [`ask`](Question::ask). Unless a
    /// parameter of the handler declares the arguments ([`Args<T>`](crate::server::extract::Args)),
    /// its schema is the tool's input schema.
    type Args: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static;
    /// The answer.
    type Answer: Send + 'static;

    /// Builds the question.
    fn ask(cx: &AskContext<'_, Self::Args>) -> Result<Ask<Self::Answer>, NotYet>;

    /// Says what is known of the question before any call: its key, and the type its form
    /// is made from. Read when the handler is registered, so that two questions of one
    /// handler on one key, or a form type that cannot be a form, fail
    /// [`build()`](crate::server::McpServer::build) instead of a call. The default says
    /// nothing (a key or form chosen at run time is checked when the call runs);
    /// `#[derive(Question)]` fills it in.
    ///
    /// ```
    /// use arctern::server::mrtr::{Ask, AskContext, NoArgs, NotYet, Question, QuestionSignature};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Region { region: String }
    ///
    /// impl Question for Region {
    ///     type Args = NoArgs;
    ///     type Answer = Region;
    ///     fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Region>, NotYet> {
    ///         Ok(Ask::form("region", "Which region?"))
    ///     }
    ///     fn describe(question: &mut QuestionSignature) {
    ///         question.key("region");
    ///         question.form::<Region>();
    ///     }
    /// }
    /// ```
    fn describe(question: &mut QuestionSignature) {
        let _ = question;
    }
}

/// What a [`Question`] type declares of itself when its handler is registered (see
/// [`Question::describe`]).
#[derive(Debug, Default)]
pub struct QuestionSignature {
    key: Option<Cow<'static, str>>,
    form: Option<(&'static str, String)>,
}

impl QuestionSignature {
    /// The key the question is always asked under.
    pub fn key(&mut self, key: impl Into<Cow<'static, str>>) {
        self.key = Some(key.into());
    }

    /// The question is a form made from `T`: checked now, once, that `T` can be one.
    pub fn form<T: schemars::JsonSchema + 'static>(&mut self) {
        if let Err(why) = super::schema::form_schema_for::<T>() {
            self.form = Some((type_name::<T>(), why));
        }
    }
}

/// The `Args` of a question that does not read the call's arguments: decodes from anything,
/// and declares nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoArgs;

impl schemars::JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

/// Declares what a question type needs when its handler is registered, and what it says of
/// itself (its key, its form).
fn describe_question<Q: Question>(describe: &mut Signature, by: &'static str) {
    describe.style(MrtrStyle::Dependency, by);
    let mut question = QuestionSignature::default();
    Q::describe(&mut question);
    let name = type_name::<Q>();
    if let Some((form, why)) = question.form {
        describe.error(format!(
            "the question {name} cannot be asked in a form ({form}: {why})"
        ));
    }
    if let Some(key) = question.key {
        describe.question_key(key, name);
    }
    if TypeId::of::<Q::Args>() != TypeId::of::<NoArgs>() {
        describe.question_arguments_schema(
            crate::server::extract::schema_for::<Q::Args>(),
            std::any::type_name::<Q::Args>(),
        );
    }
}

impl<'de> Deserialize<'de> for NoArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| NoArgs)
    }
}

/// The client's roots, asked with `roots/list` under the key `roots`: take
/// `Answer<Roots>` for a `Vec<Root>`. To ask for the roots more than once in a call, use
/// [`Ask::roots`] with keys of your own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roots;

impl Question for Roots {
    type Args = NoArgs;
    type Answer = Vec<Root>;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Vec<Root>>, NotYet> {
        Ok(Ask::roots("roots"))
    }
    fn describe(question: &mut QuestionSignature) {
        question.key("roots");
    }
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

/// Resolves the questions of one call against its answers.
struct Resolver<'a> {
    ctx: &'a RequestContext,
    target: &'a str,
    arguments: &'a Value,
    inner: InnerRef<'a>,
    /// Question types being built, to stop a question that depends on itself.
    building: RefCell<Vec<TypeId>>,
}

/// Where resolving one question stands.
pub(crate) enum Step<A> {
    /// Answered.
    Accepted(A),
    /// Declined (or, when `declined` is false, cancelled) by the user.
    Refused { key: String, declined: bool },
    /// Asked this round.
    Pending,
    /// Waits for another answer; asked in a later round.
    Deferred,
    /// The call cannot proceed.
    Failed(Rejection),
}

impl<A> Step<A> {
    fn decision(self) -> Result<Decision<A>, Self> {
        match self {
            Step::Accepted(a) => Ok(Decision::Accepted(a)),
            Step::Refused { declined: true, .. } => Ok(Decision::Declined),
            Step::Refused {
                declined: false, ..
            } => Ok(Decision::Cancelled),
            other => Err(other),
        }
    }
}

impl<'a> Resolver<'a> {
    fn of(parts: &'a CallParts) -> Self {
        Resolver::new(
            &parts.ctx,
            &parts.target,
            &parts.arguments,
            InnerRef::Cell(&parts.input.inner),
        )
    }

    fn new(
        ctx: &'a RequestContext,
        target: &'a str,
        arguments: &'a Value,
        inner: InnerRef<'a>,
    ) -> Self {
        Resolver {
            ctx,
            target,
            arguments,
            inner,
            building: RefCell::new(Vec::new()),
        }
    }

    /// The call's arguments as `T`, decoded once per call.
    fn args<T: DeserializeOwned + Send + Sync + 'static>(&self) -> Result<Arc<T>, Rejection> {
        let id = TypeId::of::<T>();
        let cached = self.inner.with(|i| {
            i.args
                .iter()
                .find(|(t, _)| *t == id)
                .map(|(_, a)| a.clone())
        });
        if let Some(args) = cached.and_then(|a| a.downcast::<T>().ok()) {
            return Ok(args);
        }
        let args =
            Arc::new(T::deserialize(self.arguments).map_err(|e| {
                Rejection::new(format!("Invalid arguments for {}: {e}", self.target))
            })?);
        self.inner.with(|i| i.args.push((id, args.clone())));
        Ok(args)
    }

    fn question<Q: Question>(&self) -> Step<Q::Answer> {
        let id = TypeId::of::<Q>();
        if self.building.borrow().contains(&id) {
            // A question that (indirectly) depends on itself can never be asked.
            return Step::Deferred;
        }
        let args = match self.args::<Q::Args>() {
            Ok(args) => args,
            Err(rejection) => return Step::Failed(rejection),
        };
        self.building.borrow_mut().push(id);
        let asked = Q::ask(&AskContext {
            resolver: self,
            args: &args,
        });
        self.building.borrow_mut().retain(|t| *t != id);
        match asked {
            Ok(ask) => self.ask(ask),
            Err(NotYet) => Step::Deferred,
        }
    }

    fn ask<A>(&self, ask: Ask<A>) -> Step<A> {
        self.inner.with(|i| i.resolve(self.ctx, ask))
    }
}

/// What a question can look at while it is built: the call's arguments, decoded into the
/// question's `Args`, and earlier answers.
pub struct AskContext<'a, A> {
    resolver: &'a Resolver<'a>,
    args: &'a A,
}

impl<A> AskContext<'_, A> {
    /// The call's arguments.
    pub fn args(&self) -> &A {
        self.args
    }

    /// The request context.
    pub fn context(&self) -> &RequestContext {
        self.resolver.ctx
    }

    /// The accepted answer to an earlier question, or [`NotYet`] (use `?`): the question
    /// being built then waits for a later round, and `Q` is asked now if it was not yet.
    pub fn answer<Q: Question>(&self) -> Result<Q::Answer, NotYet> {
        match self.resolver.question::<Q>() {
            Step::Accepted(answer) => Ok(answer),
            _ => Err(NotYet),
        }
    }
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

fn refusal(key: &str, declined: bool) -> Rejection {
    let verb = if declined { "declined" } else { "cancelled" };
    Rejection::new(format!(
        "The user {verb} the question {key:?}; the request was not carried out."
    ))
}

/// The accepted answer to question `Q`. If the user declines or cancels, the call ends with
/// an `isError` result saying so (use [`AnswerOutcome`] to handle that in the body).
pub struct Answer<Q: Question>(pub Q::Answer);

impl<Q: Question> std::fmt::Debug for Answer<Q>
where
    Q::Answer: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Answer").field(&self.0).finish()
    }
}

impl<Q: Question, S> FromCall<S> for Answer<Q> {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        match Resolver::of(parts).question::<Q>() {
            Step::Accepted(answer) => Extracted::Ready(Answer(answer)),
            Step::Refused { key, declined } => Extracted::Rejected(refusal(&key, declined)),
            Step::Pending | Step::Deferred => Extracted::Pending,
            Step::Failed(rejection) => Extracted::Rejected(rejection),
        }
    }

    fn describe(describe: &mut Signature) {
        describe_question::<Q>(describe, "Answer");
    }
}

/// The user's decision on question `Q`: accepted (with the answer), declined or cancelled.
pub struct AnswerOutcome<Q: Question>(pub Decision<Q::Answer>);

impl<Q: Question> std::fmt::Debug for AnswerOutcome<Q>
where
    Q::Answer: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnswerOutcome").field(&self.0).finish()
    }
}

impl<Q: Question, S> FromCall<S> for AnswerOutcome<Q> {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        match Resolver::of(parts).question::<Q>().decision() {
            Ok(decision) => Extracted::Ready(AnswerOutcome(decision)),
            Err(Step::Failed(rejection)) => Extracted::Rejected(rejection),
            Err(_) => Extracted::Pending,
        }
    }

    fn describe(describe: &mut Signature) {
        describe_question::<Q>(describe, "AnswerOutcome");
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
/// Collect several [`Ask`] values with [`Questions::ask`] and wait for all of them with
/// [`Questions::ready`]: missing answers end the body with an [`Interrupt`] (propagate it
/// with `?`) and are asked together in one round. A question asked after a `?` is a
/// dependent question and comes in a later round.
///
/// **The body runs again in every round** (the handler is called afresh with the answers so
/// far), so the code before the last `?` runs once per round; keep side effects after the
/// last question. Even then a round can be replayed while its request state is valid: make
/// the side effect idempotent on [`RequestContext::flow_id`], or turn on a
/// [`OneTimeStore`](super::OneTimeStore) (see the [module docs](super)).
///
/// What the body returns decides the round: an error after an [`Interrupt`] (the usual `?`)
/// makes the call an `input_required` round with the questions collected so far, or ends it
/// if a required answer was refused. A body that catches the `Interrupt` and returns a
/// result sends that result, and nothing is asked. [`try_answer`](Self::try_answer) reads an
/// answer without asking for it at all.
///
/// ```no_run
/// use arctern::server::extract::Args;
/// use arctern::server::mrtr::{Ask, Interrupt, Questions};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Trip { city: String }
///
/// async fn book(Args(trip): Args<Trip>, q: Questions) -> Result<String, Interrupt> {
///     let hotels = ["Avenida", "Rio"].map(|h| format!("{h} {}", trip.city));
///     let hotel = q.ask(Ask::choice("hotel", "Which hotel?", &hotels));
///     let breakfast = q.ask(Ask::confirm("breakfast", "Breakfast included?"));
///     let (hotel, breakfast) = q.ready((hotel, breakfast))?;
///     Ok(format!("Booked {hotel}, breakfast: {breakfast}"))
/// }
/// ```
pub struct Questions {
    ctx: RequestContext,
    target: String,
    arguments: Value,
    shared: Arc<Mutex<InputInner>>,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").finish_non_exhaustive()
    }
}

/// A question collected by [`Questions::ask`]; turn it into its answer with
/// [`Questions::ready`] or [`Questions::decision`].
#[must_use = "pass it to Questions::ready"]
pub struct Asked<A> {
    step: Step<A>,
}

impl Questions {
    fn resolver(&self) -> Resolver<'_> {
        Resolver::new(
            &self.ctx,
            &self.target,
            &self.arguments,
            InnerRef::Shared(&self.shared),
        )
    }

    /// Collects a question: its answer if there is one, else it is queued for this round.
    pub fn ask<A>(&self, ask: Ask<A>) -> Asked<A> {
        Asked {
            step: self.resolver().ask(ask),
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
    pub fn decision<A>(&self, asked: Asked<A>) -> Result<Decision<A>, Interrupt> {
        asked.step.decision().map_err(|step| {
            let interrupt = Interrupt {
                reason: match step {
                    Step::Failed(rejection) => InterruptReason::Failed(rejection.into_error()),
                    _ => InterruptReason::Pending,
                },
            };
            self.record(&interrupt);
            interrupt
        })
    }

    /// Asks one question and waits for it: `q.answer(Ask::confirm("go", "Go ahead?"))?`.
    pub fn answer<A>(&self, ask: Ask<A>) -> Result<A, Interrupt> {
        let asked = self.ask(ask);
        self.ready(asked)
    }

    /// The accepted answer to a question if the user already gave it, without asking:
    /// `None` when it is missing, declined or cancelled, and the question is not asked this
    /// round.
    pub fn try_answer<A>(&self, ask: Ask<A>) -> Option<A> {
        let key = ask.key().to_owned();
        let step = self.resolver().ask(ask);
        // Not asked after all: only questions a body waits for go out.
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .asks
            .shift_remove(&key);
        match step {
            Step::Accepted(answer) => Some(answer),
            _ => None,
        }
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
            target: parts.target.clone(),
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

impl<A> sealed::Sealed for Asked<A> {}

impl<A> Asked<A> {
    /// Why this question stops the body, if it does.
    fn stop(&self) -> Option<InterruptReason> {
        match &self.step {
            Step::Accepted(_) => None,
            Step::Refused { key, declined } => Some(InterruptReason::Refused {
                key: key.clone(),
                declined: *declined,
            }),
            Step::Pending | Step::Deferred => Some(InterruptReason::Pending),
            Step::Failed(rejection) => {
                Some(InterruptReason::Failed(rejection.clone().into_error()))
            }
        }
    }

    fn value(self) -> Option<A> {
        match self.step {
            Step::Accepted(answer) => Some(answer),
            _ => None,
        }
    }
}

impl<A> Collect for Asked<A> {
    type Output = A;
    fn collect(self) -> Result<A, Interrupt> {
        match self.stop() {
            Some(reason) => Err(Interrupt { reason }),
            None => Ok(self.value().expect("accepted")),
        }
    }
}

/// Why a set of questions stops the body: a failure first, then anything still to be asked
/// (all of it goes out in one round), then a refusal.
fn first_stop(stops: impl IntoIterator<Item = Option<InterruptReason>>) -> Option<InterruptReason> {
    let mut pending = false;
    let mut refused = None;
    for stop in stops.into_iter().flatten() {
        match stop {
            InterruptReason::Failed(_) => return Some(stop),
            InterruptReason::Pending => pending = true,
            InterruptReason::Refused { .. } => {
                refused.get_or_insert(stop);
            }
        }
    }
    if pending {
        Some(InterruptReason::Pending)
    } else {
        refused
    }
}

macro_rules! collect_tuple {
    ($($t:ident),+) => {
        impl<$($t),+> sealed::Sealed for ($(Asked<$t>,)+) {}

        impl<$($t),+> Collect for ($(Asked<$t>,)+) {
            type Output = ($($t,)+);
            #[allow(non_snake_case)]
            fn collect(self) -> Result<Self::Output, Interrupt> {
                let ($($t,)+) = self;
                if let Some(reason) = first_stop([$($t.stop()),+]) {
                    return Err(Interrupt { reason });
                }
                Ok(($($t.value().expect("accepted"),)+))
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
