//! Multi round-trip requests on the client: the calls that may ask for input, the automatic
//! loop that answers every round (`drive`), the manual step, and the serde-able continuation
//! that lets another process resume a flow.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arctern_types::base::Cacheable;
use arctern_types::logging::LoggingLevel;
use arctern_types::meta::JsonObject;
use arctern_types::methods;
use arctern_types::mrtr::{InputRequest, InputRequiredResult, InputResponse, InputResponses};
use arctern_types::prompts::GetPromptResult;
use arctern_types::resources::ReadResourceResult;
use arctern_types::tools::CallToolResult;
use futures::{StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::Client;
use super::error::{InputRequiredError, InputRequiredReason};
use super::exchange::{Req, ServerMeta};
use super::handler::InputOrigin;
use super::notify::{LogFn, Observer, ProgressFn};
use super::wire::{self, Kind, Retry};
use crate::{Error, ErrorKind, Outcome, Result};

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
    /// The flow's W3C `traceparent`, so that whoever resumes the flow continues its trace
    /// (with the `otel` feature, [`after`](Self::after) takes it from the current span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The flow's W3C `tracestate`, with [`traceparent`](Self::traceparent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl Continuation {
    /// A first attempt: no answers, no state.
    pub fn new() -> Self {
        Continuation::default()
    }

    /// The retry after `round`: its `requestState` (if any) echoed, no answers yet. With
    /// the `otel` feature it also carries the current span's trace context (the
    /// application's span around the flow), which the resumed round continues.
    pub fn after(round: &InputRequiredResult) -> Self {
        #[allow(unused_mut)]
        let mut next = Continuation {
            input_responses: None,
            request_state: round.request_state.clone(),
            traceparent: None,
            tracestate: None,
        };
        #[cfg(feature = "otel")]
        {
            next = next.with_trace_context(&opentelemetry::Context::current());
        }
        next
    }

    /// Carries the trace context of `cx` (feature `otel`): the round sent with this
    /// continuation is parented to it when no span is current there.
    #[cfg(feature = "otel")]
    pub fn with_trace_context(mut self, cx: &opentelemetry::Context) -> Self {
        let fields = crate::otel::TraceFields::inject(cx);
        if fields.traceparent.is_some() {
            self.traceparent = fields.traceparent;
            self.tracestate = fields.tracestate;
        }
        self
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

    /// The trace context carried, as `_meta` fields.
    #[cfg(feature = "otel")]
    pub(crate) fn trace_fields(&self) -> crate::otel::TraceFields {
        crate::otel::TraceFields {
            traceparent: self.traceparent.clone(),
            tracestate: self.tracestate.clone(),
            baggage: None,
        }
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
    pub(crate) task_status: Option<TaskStatusFn>,
}

/// Called with a task's state whenever its status message changes (see
/// [`CallOptions::on_task_status`]).
pub type TaskStatusFn = Arc<dyn Fn(&arctern_types::tasks::Task) + Send + Sync>;

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("max_rounds", &self.max_rounds)
            .field("deadline", &self.deadline)
            .field("timeout", &self.timeout)
            .field("observer", &self.observer)
            .field("resume", &self.resume)
            .field("task_status", &self.task_status.is_some())
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

    /// Called while the call runs as a task (the tasks extension), each time the server
    /// reports a new status message (progress, what it waits for).
    pub fn on_task_status(
        mut self,
        f: impl Fn(&arctern_types::tasks::Task) + Send + Sync + 'static,
    ) -> Self {
        self.task_status = Some(Arc::new(f));
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

    /// The params of one round.
    fn params<'a>(&'a self, retry: Retry<'a>) -> wire::RoundParams<'a> {
        match *self {
            Target::Tool { name, arguments } => wire::RoundParams::Tool(wire::CallToolParams {
                name,
                arguments,
                retry,
            }),
            Target::Prompt { name, arguments } => {
                wire::RoundParams::Prompt(wire::GetPromptParams {
                    name,
                    arguments,
                    retry,
                })
            }
            Target::Resource { uri } => {
                wire::RoundParams::Resource(wire::ReadResourceParams { uri, retry })
            }
        }
    }

    pub(crate) fn origin(&self) -> InputOrigin {
        InputOrigin::new(self.method(), self.name())
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
        Kind::Complete => Outcome::Complete(wire::decode(&raw, target.method())?),
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
        // Only `tools/call` may become a task.
        Kind::Task if matches!(target, Target::Tool { .. }) => {
            Outcome::Task(wire::decode(&raw, "task")?)
        }
        Kind::Task => {
            return Err(Error::new(
                ErrorKind::Codec,
                format!("the server answered {} with a task", target.method()),
            ));
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

impl Client {
    // ---------------------------------------------------------------- MRTR methods

    /// Calls a tool, answering every round of input the server asks for.
    ///
    /// `arguments` is anything that serializes to a JSON object — a struct deriving
    /// `Serialize`, a map, `json!({..})` — or to `null` for none (`()`). Anything else, or
    /// a value that fails to serialize, fails the call before anything is sent. A tool's own
    /// failure is data, not an error: check [`CallToolResult::is_tool_error`], or take
    /// [`call_tool_json`](Self::call_tool_json) for a typed result.
    pub async fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult> {
        self.call_tool_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-call options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<CallToolResult> {
        let arguments = tool_arguments(name, arguments)?;
        let target = Target::Tool {
            name,
            arguments: arguments.as_ref(),
        };
        self.drive_noted(target, options).await
    }

    /// Calls a tool and decodes its structured output (`structuredContent`) into `T`: the
    /// typed form of [`call_tool`](Self::call_tool), as `.json::<T>()` is for an HTTP
    /// response.
    ///
    /// Fails with [`ErrorKind::Tool`] when the tool reports an error (`isError`), and with
    /// [`ErrorKind::Codec`] when the result has no `structuredContent` or it does not decode
    /// into `T`; the error's [`source`](std::error::Error::source) is then a
    /// [`StructuredError`](arctern_types::tools::StructuredError) with the details (the
    /// whole result, for a tool error). With per-call options, or to keep the whole result,
    /// call [`call_tool_with`](Self::call_tool_with) and then
    /// [`CallToolResult::json`].
    ///
    /// ```no_run
    /// # async fn run(client: arctern::client::Client) -> arctern::Result<()> {
    /// #[derive(serde::Serialize)]
    /// struct Query<'a> { city: &'a str }
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Forecast { high: f64, rain: bool }
    ///
    /// let forecast: Forecast = client.call_tool_json("forecast", Query { city: "Oslo" }).await?;
    /// println!("{} °C, rain: {}", forecast.high, forecast.rain);
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_json<T: DeserializeOwned>(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<T> {
        let result = self.call_tool(name, arguments).await?;
        result
            .json()
            .map_err(|e| Error::structured(e, format!("tool {name:?}")))
    }

    /// Sends one round of a tool call: the complete result, or the server's
    /// `input_required` answer. Pass [`Continuation::new`] for a first attempt; for a retry,
    /// the answers and the state of the previous round. `arguments` as for
    /// [`call_tool`](Self::call_tool).
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: impl Serialize,
        continuation: Continuation,
    ) -> Result<Outcome<CallToolResult>> {
        let arguments = tool_arguments(name, arguments)?;
        let target = Target::Tool {
            name,
            arguments: arguments.as_ref(),
        };
        self.round_resumed(&target, &continuation).await
    }

    /// Gets a prompt, answering every round of input the server asks for. `arguments` is
    /// anything that serializes to a JSON object of strings (a struct of `String` fields, a
    /// map, `json!({..})`), or to `null` for none (`()`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult> {
        self.get_prompt_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with per-call options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<GetPromptResult> {
        let arguments = prompt_arguments(name, arguments)?;
        let target = Target::Prompt {
            name,
            arguments: arguments.as_ref(),
        };
        self.drive_noted(target, options).await
    }

    /// Sends one round of `prompts/get`; see [`call_tool_once`](Self::call_tool_once).
    pub async fn get_prompt_once(
        &self,
        name: &str,
        arguments: impl Serialize,
        continuation: Continuation,
    ) -> Result<Outcome<GetPromptResult>> {
        let arguments = prompt_arguments(name, arguments)?;
        let target = Target::Prompt {
            name,
            arguments: arguments.as_ref(),
        };
        self.round_resumed(&target, &continuation).await
    }

    /// Reads a resource, answering every round of input the server asks for.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.read_resource_with(uri, CallOptions::new()).await
    }

    /// [`read_resource`](Self::read_resource) with per-call options.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult> {
        let first_attempt = options.resume.as_ref().is_none_or(Continuation::is_empty);
        if first_attempt
            && let Some(cache) = &self.inner.cache
            && let Some(raw) = cache.get(methods::RESOURCES_READ, uri)
            && let Ok(value) = wire::decode::<ReadResourceResult>(&raw, methods::RESOURCES_READ)
        {
            return Ok(value);
        }
        let target = Target::Resource { uri };
        let (result, raw) = self.drive::<ReadResourceResult>(target, options).await?;
        // Only a complete answer to a first attempt may be kept; `raw` is `None` otherwise.
        if first_attempt && let (Some(cache), Some(raw)) = (&self.inner.cache, raw) {
            cache.put(
                methods::RESOURCES_READ,
                uri,
                Arc::from(raw),
                result.effective_ttl_ms(),
            );
        }
        self.note_server_info(result.meta.as_ref());
        Ok(result)
    }

    /// Sends one round of `resources/read`; see [`call_tool_once`](Self::call_tool_once).
    pub async fn read_resource_once(
        &self,
        uri: &str,
        continuation: Continuation,
    ) -> Result<Outcome<ReadResourceResult>> {
        let target = Target::Resource { uri };
        self.round_resumed(&target, &continuation).await
    }

    /// Answers the input requests of an `input_required` result with this client's
    /// handlers, all at once (for the manual loop). `origin` names the request the result
    /// answered ([`InputOrigin::tool`] and its siblings).
    ///
    /// Fails before answering anything if some request has no handler.
    pub async fn answer(
        &self,
        origin: InputOrigin,
        result: &InputRequiredResult,
    ) -> Result<InputResponses> {
        self.answer_round(Arc::new(origin), result, 0).await
    }

    pub(super) async fn answer_round(
        &self,
        origin: Arc<InputOrigin>,
        result: &InputRequiredResult,
        rounds: u32,
    ) -> Result<InputResponses> {
        let Some(requests) = result.input_requests.as_ref().filter(|r| !r.is_empty()) else {
            return Ok(InputResponses::new());
        };
        let max = self.inner.limits.max_input_requests;
        if requests.len() > max {
            return Err(InputRequiredError::new(
                InputRequiredReason::TooManyInputRequests {
                    count: requests.len(),
                    max,
                },
                Some(result.clone()),
                rounds,
            )
            .into_error(ErrorKind::InputRequired));
        }
        // Preflight: every question must be answerable before anyone is asked.
        for (key, request) in requests {
            if let Err(method) = self.inner.handlers.check(request) {
                return Err(InputRequiredError::new(
                    InputRequiredReason::NoHandler {
                        key: key.clone(),
                        method,
                    },
                    Some(result.clone()),
                    rounds,
                )
                .into_error(ErrorKind::InputRequired));
            }
        }
        let server = self.negotiated().server_info.clone();
        let samplings = requests
            .values()
            .filter(|r| matches!(r, InputRequest::CreateMessage(_)))
            .count();
        let answers: Vec<_> = requests
            .iter()
            .map(|(key, request)| {
                let fut = self.inner.handlers.answer(
                    key.clone(),
                    request.clone(),
                    origin.clone(),
                    server.clone(),
                    samplings,
                );
                let key = key.clone();
                async move {
                    match fut.await {
                        Ok(answer) => Ok((key, answer)),
                        Err(e) => Err((key, e)),
                    }
                }
            })
            .collect();
        // A few at a time: a round may ask for many paid completions.
        let answered: std::result::Result<Vec<_>, _> = futures::stream::iter(answers)
            .buffer_unordered(self.inner.limits.max_concurrent_inputs)
            .try_collect()
            .await;
        match answered {
            Ok(pairs) => Ok(pairs.into_iter().collect::<BTreeMap<_, _>>()),
            Err((key, e)) => Err(InputRequiredError::new(
                InputRequiredReason::HandlerFailed { key },
                Some(result.clone()),
                rounds,
            )
            .with_source(e)
            .into_error(ErrorKind::InputRequired)),
        }
    }

    /// Sends one round of a manual flow (under the trace context the continuation
    /// carries, when no span is current): its outcome.
    async fn round_resumed<T: DeserializeOwned>(
        &self,
        target: &Target<'_>,
        continuation: &Continuation,
    ) -> Result<Outcome<T>> {
        let options = CallOptions::new();
        let round = self.round::<T>(target, continuation.retry(), &options, None);
        #[cfg(feature = "otel")]
        let round = {
            let fields = continuation.trace_fields();
            let (parent, _) = crate::otel::resumed_parent(Some(&fields));
            opentelemetry::trace::FutureExt::with_context(round, parent)
        };
        Ok(round.await?.outcome)
    }

    /// Sends one round (`number`: its place in the automatic loop).
    pub(super) async fn round<T: DeserializeOwned>(
        &self,
        target: &Target<'_>,
        retry: Retry<'_>,
        options: &CallOptions,
        number: Option<u32>,
    ) -> Result<Round<T>> {
        let observer = Observer::merged(&options.observer, &self.inner.observer);
        let raw = self
            .exchange(
                Req {
                    method: target.method(),
                    params: &target.params(retry),
                    name: Some(target.name()),
                    observer: &observer,
                    timeout: options.timeout,
                    round: number,
                    renew: true,
                },
                None,
            )
            .await?;
        read_round(raw, target)
    }

    /// The automatic loop, following a task to its end. Returns the complete result, and
    /// its raw JSON when it answered a first attempt (the only kind the cache may keep).
    /// With the `otel` feature the flow runs in a span of its own, each round's span under it.
    pub(super) async fn drive<T: DeserializeOwned>(
        &self,
        target: Target<'_>,
        options: CallOptions,
    ) -> Result<(T, Option<Box<RawValue>>)> {
        let mut sent = 0u32;
        #[cfg(feature = "otel")]
        {
            let resumed = options.resume.as_ref().map(Continuation::trace_fields);
            let flow = crate::otel::FlowSpan::start(
                self.inner.telemetry.as_ref(),
                target.method(),
                target.name(),
                resumed.as_ref(),
            );
            let cx = flow.context();
            let outcome = opentelemetry::trace::FutureExt::with_context(
                self.drive_rounds(target, options, &mut sent),
                cx,
            )
            .await;
            flow.finish(&outcome, sent);
            outcome
        }
        #[cfg(not(feature = "otel"))]
        self.drive_rounds(target, options, &mut sent).await
    }

    /// The automatic loop of `tools/call` or `prompts/get`: the complete result, with the
    /// server's identity noted from its `_meta`.
    async fn drive_noted<T: DeserializeOwned + ServerMeta>(
        &self,
        target: Target<'_>,
        options: CallOptions,
    ) -> Result<T> {
        let (result, _) = self.drive::<T>(target, options).await?;
        self.note_server_info(result.meta());
        Ok(result)
    }

    async fn drive_rounds<T: DeserializeOwned>(
        &self,
        target: Target<'_>,
        options: CallOptions,
        sent: &mut u32,
    ) -> Result<(T, Option<Box<RawValue>>)> {
        // Only a task needs these after the loop; most calls never become one.
        let task_status = options.task_status.clone();
        match self.drive_until_task::<T>(target, options, sent).await? {
            Driven::Complete(value, raw) => Ok((value, raw)),
            Driven::Task(task) => {
                let origin = Arc::new(target.origin());
                let result = self
                    .follow_task(&task.task, origin, task_status.as_ref())
                    .await?;
                let value =
                    serde_json::from_value(serde_json::Value::Object(result)).map_err(|e| {
                        Error::new(ErrorKind::Codec, "the task's result does not decode")
                            .with_source(e)
                    })?;
                Ok((value, None))
            }
        }
    }

    /// The automatic loop up to a complete result or a task.
    pub(super) async fn drive_until_task<T: DeserializeOwned>(
        &self,
        target: Target<'_>,
        mut options: CallOptions,
        sent: &mut u32,
    ) -> Result<Driven<T>> {
        let max_rounds = options.max_rounds.unwrap_or(self.inner.max_rounds);
        let deadline = options
            .deadline
            .or(self.inner.deadline)
            .map(|d| Instant::now() + d);
        let origin = Arc::new(target.origin());
        let mut continuation = options.resume.take().unwrap_or_default();
        let mut first = continuation.is_empty();
        let mut rounds = 0u32;
        let mut backoff = Backoff::new();
        let mut last: Option<InputRequiredResult> = None;
        loop {
            *sent += 1;
            let round: Round<T> = within(
                deadline,
                &last,
                rounds,
                self.round(&target, continuation.retry(), &options, Some(rounds)),
            )
            .await?;
            let irr = match round.outcome {
                Outcome::Complete(value) => {
                    return Ok(Driven::Complete(value, first.then_some(round.raw)));
                }
                Outcome::InputRequired(irr) => irr,
                Outcome::Task(task) => return Ok(Driven::Task(Box::new(task))),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InputRequired,
                        "unexpected round outcome",
                    ));
                }
            };
            first = false;
            rounds += 1;
            if rounds > max_rounds {
                return Err(InputRequiredError::new(
                    InputRequiredReason::RoundsExceeded { max_rounds },
                    Some(irr),
                    rounds,
                )
                .into_error(ErrorKind::InputRequired));
            }
            // Kept before answering, so that a deadline hit while answering or pausing
            // reports this round.
            last = Some(irr);
            let Some(irr) = last.as_ref() else {
                continue;
            };
            let has_requests = irr.input_requests.as_ref().is_some_and(|r| !r.is_empty());
            let responses = if has_requests {
                backoff.reset();
                let answers = within(
                    deadline,
                    &last,
                    rounds,
                    self.answer_round(origin.clone(), irr, rounds),
                )
                .await?;
                Some(answers)
            } else {
                let delay = backoff.next_delay();
                within(deadline, &last, rounds, async {
                    tokio::time::sleep(delay).await;
                    Ok(())
                })
                .await?;
                None
            };
            // The retry replaces the previous answers; state is echoed only if sent.
            continuation = Continuation {
                input_responses: responses,
                request_state: irr.request_state.clone(),
                ..Continuation::default()
            };
        }
    }
}

/// Where the automatic loop stopped.
pub(super) enum Driven<T> {
    /// The complete result, and its raw JSON for a first attempt.
    Complete(T, Option<Box<RawValue>>),
    /// A task.
    Task(Box<arctern_types::tasks::CreateTaskResult>),
}

/// Tool arguments as a JSON object (`None` for `null`).
pub(super) fn tool_arguments(name: &str, arguments: impl Serialize) -> Result<Option<JsonObject>> {
    match to_json(arguments, "tool", name)? {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(Error::new(
            ErrorKind::Config,
            format!(
                "the arguments of tool {name:?} must be a JSON object, not {}",
                json_kind(&other)
            ),
        )),
    }
}

/// Prompt arguments as a map of strings (`None` for `null`).
fn prompt_arguments(
    name: &str,
    arguments: impl Serialize,
) -> Result<Option<BTreeMap<String, String>>> {
    match to_json(arguments, "prompt", name)? {
        Value::Null => Ok(None),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "argument {k:?} of prompt {name:?} must be a string, not {}",
                        json_kind(&other)
                    ),
                )),
            })
            .collect::<Result<BTreeMap<_, _>>>()
            .map(Some),
        other => Err(Error::new(
            ErrorKind::Config,
            format!(
                "the arguments of prompt {name:?} must be a JSON object of strings, not {}",
                json_kind(&other)
            ),
        )),
    }
}

fn to_json(arguments: impl Serialize, kind: &str, name: &str) -> Result<Value> {
    serde_json::to_value(arguments).map_err(|e| {
        Error::new(
            ErrorKind::Codec,
            format!("the arguments of {kind} {name:?} do not serialize to JSON"),
        )
        .with_source(e)
    })
}

/// What a JSON value is, for messages (never the value itself, which may be large).
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
    fn arguments_serialize_to_an_object_or_nothing() {
        #[derive(Serialize)]
        struct Trip<'a> {
            city: &'a str,
            nights: u8,
        }
        let args = tool_arguments(
            "book",
            Trip {
                city: "Oslo",
                nights: 2,
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            Value::Object(args),
            serde_json::json!({"city": "Oslo", "nights": 2})
        );
        assert_eq!(tool_arguments("t", ()).unwrap(), None);
        assert_eq!(tool_arguments("t", Value::Null).unwrap(), None);
        assert!(
            tool_arguments("t", serde_json::json!({}))
                .unwrap()
                .unwrap()
                .is_empty()
        );

        let e = tool_arguments("t", [1, 2]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert_eq!(
            e.to_string(),
            "the arguments of tool \"t\" must be a JSON object, not an array"
        );
        // A value serde_json cannot represent: an error, never a panic.
        let bad: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let e = tool_arguments("t", bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Codec);
        assert!(
            e.to_string()
                .starts_with("the arguments of tool \"t\" do not serialize to JSON: "),
            "{e}"
        );
    }

    #[test]
    fn prompt_arguments_are_strings() {
        let map = prompt_arguments(
            "p",
            [("topic", "MRTR")].into_iter().collect::<BTreeMap<_, _>>(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(map["topic"], "MRTR");
        assert_eq!(prompt_arguments("p", ()).unwrap(), None);
        let e = prompt_arguments("p", serde_json::json!({"n": 3})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument \"n\" of prompt \"p\" must be a string, not a number"
        );
        let e = prompt_arguments("p", "topic").unwrap_err();
        assert!(
            e.to_string()
                .contains("JSON object of strings, not a string"),
            "{e}"
        );
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
