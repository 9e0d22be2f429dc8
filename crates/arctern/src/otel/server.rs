//! The server's side: one `SERVER` span per request, its metrics, and multi round-trip
//! flows linked through the sealed request state.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use arctern_types::{ErrorObject, RequestId, RequestMeta};
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{MetaExtractor, TracerKind, attr, is_caller_error, names, seconds_since};
use crate::Era;
use crate::server::connection::{Reply, TransportKind};
use crate::state::{FlowTrace, INVALID_STATE_MESSAGE, RejectReason};

/// What a server does with the trace context a client sends in `_meta`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteParent {
    /// The client's context is the parent of the server span, and the ambient context (an
    /// HTTP server span, say) is linked: what the conventions say by default.
    #[default]
    Parent,
    /// The server span keeps the ambient parent (or starts a trace) and only links to the
    /// client's context: for public servers that do not let callers join their traces.
    LinkOnly,
}

/// The server's OpenTelemetry instrumentation: where its tracer and meter come from, and
/// how it treats a client's trace context.
///
/// [`ServerTelemetry::global`] (what a server uses unless told otherwise when the `otel`
/// feature is on) takes the global providers when the server serves its first request;
/// [`ServerTelemetry::new`] takes providers of its own (tests, several pipelines).
#[derive(Clone)]
pub struct ServerTelemetry {
    source: Arc<OnceLock<Instruments>>,
    remote_parent: RemoteParent,
    link_rounds: bool,
}

impl fmt::Debug for ServerTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTelemetry")
            .field("remote_parent", &self.remote_parent)
            .field("link_rounds", &self.link_rounds)
            .finish_non_exhaustive()
    }
}

impl Default for ServerTelemetry {
    fn default() -> Self {
        Self::global()
    }
}

/// The tracer and instruments of one server.
pub(crate) struct Instruments {
    tracer: BoxedTracer,
    /// Whether `tracer` is OpenTelemetry's no-op, as its spans have shown.
    tracer_kind: TracerKind,
    /// Whether the meter records (false for OpenTelemetry's no-op meter).
    metering: bool,
    operation: Histogram<f64>,
    session: Histogram<f64>,
    /// Requests the server sends (the legacy shim's questions to a 2025-era client).
    outgoing: Histogram<f64>,
    flow_duration: Histogram<f64>,
    flow_rounds: Histogram<u64>,
    rejected: Counter<u64>,
    over_budget: Counter<u64>,
}

impl Instruments {
    fn new(tracer: BoxedTracer, meter: &Meter, metering: bool) -> Self {
        let seconds = |name, description| super::seconds_histogram(meter, name, description);
        let (flow_duration, flow_rounds) = super::flow_histograms(meter);
        Instruments {
            tracer,
            tracer_kind: TracerKind::default(),
            metering,
            operation: seconds(
                names::SERVER_OPERATION_DURATION,
                "Duration of one MCP request, from receipt to the answer",
            ),
            session: seconds(
                names::SERVER_SESSION_DURATION,
                "Duration of an MCP session (2025-era clients)",
            ),
            outgoing: super::client_operation_histogram(meter),
            flow_duration,
            flow_rounds,
            rejected: meter
                .u64_counter(names::STATE_REJECTED)
                .with_unit("{state}")
                .with_description("Request states the server refused, by reason")
                .build(),
            over_budget: meter
                .u64_counter(names::BUDGET_REFUSED)
                .with_unit("{call}")
                .with_description("Calls refused over a budget, by budget and scope")
                .build(),
        }
    }
}

impl ServerTelemetry {
    /// Instrumentation through the global tracer and meter providers, as they are when the
    /// server serves its first request (install the SDK before serving).
    pub fn global() -> Self {
        ServerTelemetry {
            source: Arc::new(OnceLock::new()),
            remote_parent: RemoteParent::default(),
            link_rounds: true,
        }
    }

    /// Instrumentation through these providers.
    pub fn new<T, P, M>(tracer_provider: &P, meter_provider: &M) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
        P: TracerProvider<Tracer = T>,
        M: MeterProvider,
    {
        ServerTelemetry {
            source: super::scoped_instruments(tracer_provider, meter_provider, Instruments::new),
            remote_parent: RemoteParent::default(),
            link_rounds: true,
        }
    }

    /// What to do with the trace context a client sends in `_meta` (default:
    /// [`RemoteParent::Parent`]).
    pub fn remote_parent(mut self, remote_parent: RemoteParent) -> Self {
        self.remote_parent = remote_parent;
        self
    }

    /// Whether later rounds of a multi round-trip flow link to its first round (default:
    /// on). Off, no trace context is sealed into the request state.
    pub fn link_rounds(mut self, on: bool) -> Self {
        self.link_rounds = on;
        self
    }

    fn instruments(&self) -> &Instruments {
        self.source
            .get_or_init(|| super::global_instruments(Instruments::new))
    }
}

/// Which kind of target a request names.
#[derive(Clone, Copy)]
pub(crate) enum TargetKind {
    Tool,
    Prompt,
    Resource,
}

/// One request being observed: what the span and the metrics will say, gathered along the
/// dispatch path, and the span once it has begun.
#[derive(Default)]
pub(crate) enum Observation {
    /// Telemetry is off.
    #[default]
    Off,
    /// Telemetry is on and nothing records (OpenTelemetry's no-op tracer and meter: no SDK
    /// installed). All that is left is what the no-op span would do: carry the client's
    /// trace context to the handler.
    Quiet(Quiet),
    /// Spans or metrics (or both) record.
    Full(Box<Observed>),
}

pub(crate) struct Quiet {
    /// The client's trace context, when it parents the handler's (boxed: rare, and the
    /// observation travels in every request's future).
    remote: Option<Box<Context>>,
    remote_parent: RemoteParent,
    link_rounds: bool,
    /// Whether this is a later round of a multi round-trip flow.
    later_round: bool,
}

pub(crate) struct Observed {
    telemetry: ServerTelemetry,
    /// Whether to start a span (the tracer is not known to be the no-op).
    spans: bool,
    /// Whether to record metrics (the meter is not the no-op).
    metering: bool,
    start: SystemTime,
    clock: Instant,
    ambient: Context,
    // Shared, not copied, between the span's attributes and the metrics'.
    method: Arc<str>,
    id: RequestId,
    era: Era,
    transport: TransportKind,
    target: Option<(TargetKind, Arc<str>)>,
    protocol_version: Option<Arc<str>>,
    remote: Option<SpanContext>,
    remote_cx: Option<Context>,
    /// The span's context, once begun.
    cx: Option<Context>,
    round: Option<u32>,
    flow_started: Option<SystemTime>,
    flow_trace: Option<FlowTrace>,
    rejection: Option<RejectReason>,
    over_budget: Option<crate::server::budget::OverBudget>,
    input_required: bool,
    error: Option<(i32, String)>,
    tool_error: bool,
}

impl Observation {
    /// Starts observing a request (nothing, without telemetry).
    pub(crate) fn start(
        telemetry: Option<&ServerTelemetry>,
        era: Era,
        transport: TransportKind,
        method: &str,
        id: &RequestId,
    ) -> Self {
        let Some(telemetry) = telemetry else {
            return Observation::Off;
        };
        let instruments = telemetry.instruments();
        let spans = !instruments.tracer_kind.is_noop();
        let metering = instruments.metering;
        if !spans && !metering {
            return Observation::Quiet(Quiet {
                remote: None,
                remote_parent: telemetry.remote_parent,
                link_rounds: telemetry.link_rounds,
                later_round: false,
            });
        }
        Observation::Full(Box::new(Observed {
            telemetry: telemetry.clone(),
            spans,
            metering,
            start: SystemTime::now(),
            clock: Instant::now(),
            ambient: Context::current(),
            method: Arc::from(method),
            id: id.clone(),
            era,
            transport,
            target: None,
            protocol_version: None,
            remote: None,
            remote_cx: None,
            cx: None,
            round: None,
            flow_started: None,
            flow_trace: None,
            rejection: None,
            over_budget: None,
            input_required: false,
            error: None,
            tool_error: false,
        }))
    }

    /// The tool, prompt or resource the request names.
    pub(crate) fn target(&mut self, kind: TargetKind, target: &str) {
        if let Observation::Full(o) = self {
            o.target = Some((kind, Arc::from(target)));
        }
    }

    /// The request's envelope: its protocol version and the client's trace context.
    pub(crate) fn envelope(&mut self, meta: &RequestMeta) {
        match self {
            Observation::Off => {}
            Observation::Quiet(q) => {
                if q.remote_parent == RemoteParent::Parent {
                    q.remote = extract(&meta.extra).map(|(_, cx)| Box::new(cx));
                }
            }
            Observation::Full(o) => {
                o.protocol_version = meta.protocol_version.as_deref().map(Arc::from);
                o.extract(&meta.extra);
            }
        }
    }

    /// The round the request-state boundary opened: its number, the flow's start and the
    /// first round's trace context.
    pub(crate) fn round(
        &mut self,
        number: u32,
        flow_started: Option<SystemTime>,
        trace: Option<FlowTrace>,
    ) {
        match self {
            Observation::Off => {}
            Observation::Quiet(q) => q.later_round = number > 0,
            Observation::Full(o) => {
                o.round = Some(number);
                o.flow_started = flow_started;
                o.flow_trace = trace;
            }
        }
    }

    /// A request state the boundary refused.
    pub(crate) fn rejected(&mut self, reason: RejectReason) {
        if let Observation::Full(o) = self {
            o.rejection = Some(reason);
        }
    }

    /// Begins the span (if not yet) and returns the context the handler runs in, if it is
    /// not the current one.
    pub(crate) fn context(&mut self) -> Option<Context> {
        match self {
            Observation::Off => None,
            Observation::Quiet(q) => q.remote.as_deref().cloned(),
            Observation::Full(o) if o.spans => Some(o.begin().clone()),
            Observation::Full(o) => o.remote_parent().cloned(),
        }
    }

    /// The trace context to seal for later rounds: this span's, on a first round (none when
    /// rounds are not linked or the span is not sampled into a valid context).
    pub(crate) fn first_round_trace(&mut self) -> Option<FlowTrace> {
        let sc = match self {
            Observation::Off => return None,
            // What the no-op span would have: its parent's context.
            Observation::Quiet(q) => {
                if !q.link_rounds || q.later_round {
                    return None;
                }
                match &q.remote {
                    Some(remote) => remote.span().span_context().clone(),
                    None => Context::map_current(|cx| cx.span().span_context().clone()),
                }
            }
            Observation::Full(o) => {
                if !o.telemetry.link_rounds || o.round.is_some_and(|r| r > 0) {
                    return None;
                }
                o.begin().span().span_context().clone()
            }
        };
        sc.is_valid().then(|| FlowTrace {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
        })
    }

    /// The handler's answer: an `input_required` round, a tool error, or a complete result.
    pub(crate) fn answered(&mut self, input_required: bool, tool_error: bool) {
        if let Observation::Full(o) = self {
            o.input_required = input_required;
            o.tool_error = tool_error;
        }
    }

    /// The error the request ended with.
    pub(crate) fn failed(&mut self, error: &ErrorObject) {
        if let Observation::Full(o) = self {
            o.over_budget = crate::server::budget::OverBudget::from_error(error);
            o.error = Some((error.code.0, error.message.to_string()));
        }
    }

    /// Ends the span and records the metrics.
    pub(crate) fn finish(self) {
        if let Observation::Full(o) = self {
            o.finish();
        }
    }

    /// Ends a request answered without reaching a handler: the error (if any) is read from
    /// the reply, the client's trace context from the raw params.
    pub(crate) fn finish_reply(mut self, reply: &Reply, raw: Option<&RawValue>) {
        let Observation::Full(o) = &mut self else {
            return;
        };
        if o.cx.is_none() && o.remote.is_none() && o.protocol_version.is_none() {
            o.extract_raw(raw);
        }
        if o.error.is_none()
            && let Reply::Message { body, .. } = reply
            && let Some(error) = error_of(body)
        {
            // A requestState that is not one string is refused before the boundary sees
            // it, with the one fixed error.
            if error.code.0 == -32602 && error.message == INVALID_STATE_MESSAGE {
                o.rejection.get_or_insert(RejectReason::Malformed);
            }
            o.over_budget = crate::server::budget::OverBudget::from_error(&error);
            o.error = Some((error.code.0, error.message.into_owned()));
        }
        self.finish();
    }
}

/// The client's trace context in `_meta`, if it carries a valid one.
fn extract(meta: &Map<String, Value>) -> Option<(SpanContext, Context)> {
    if !meta.contains_key("traceparent") {
        return None;
    }
    let cx = global::get_text_map_propagator(|p| p.extract(&MetaExtractor(meta)));
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some((sc, cx))
}

impl Observed {
    fn extract(&mut self, meta: &Map<String, Value>) {
        if let Some((sc, cx)) = extract(meta) {
            self.remote = Some(sc);
            self.remote_cx = Some(cx);
        }
    }

    fn extract_raw(&mut self, raw: Option<&RawValue>) {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(rename = "_meta", default)]
            meta: Map<String, Value>,
        }
        if let Some(raw) = raw
            && let Ok(probe) = serde_json::from_str::<Probe>(raw.get())
        {
            self.protocol_version = probe
                .meta
                .get("io.modelcontextprotocol/protocolVersion")
                .and_then(Value::as_str)
                .map(Arc::from);
            self.extract(&probe.meta);
        }
    }

    fn name(&self) -> String {
        match &self.target {
            Some((TargetKind::Tool | TargetKind::Prompt, target)) => {
                let mut name = String::with_capacity(self.method.len() + 1 + target.len());
                name.push_str(&self.method);
                name.push(' ');
                name.push_str(target);
                name
            }
            _ => self.method.to_string(),
        }
    }

    /// The client's trace context, when it parents the span.
    fn remote_parent(&self) -> Option<&Context> {
        match self.telemetry.remote_parent {
            RemoteParent::Parent => self.remote_cx.as_ref(),
            RemoteParent::LinkOnly => None,
        }
    }

    /// The span's context (without spans, its parent's, as the no-op span's would be).
    fn begin(&mut self) -> &Context {
        if self.cx.is_none() {
            let cx = if self.spans {
                self.make_span()
            } else {
                self.remote_parent().unwrap_or(&self.ambient).clone()
            };
            self.cx = Some(cx);
        }
        self.cx.as_ref().expect("just begun")
    }

    fn make_span(&self) -> Context {
        let instruments = self.telemetry.instruments();
        let mut links = Vec::new();
        let ambient_span = self.ambient.span().span_context().clone();
        let parent = match (&self.remote_cx, self.telemetry.remote_parent) {
            (Some(remote), RemoteParent::Parent) => {
                if ambient_span.is_valid() {
                    links.push(Link::with_context(ambient_span));
                }
                remote.clone()
            }
            (Some(_), RemoteParent::LinkOnly) => {
                if let Some(remote) = &self.remote {
                    links.push(Link::with_context(remote.clone()));
                }
                self.ambient.clone()
            }
            (None, _) => self.ambient.clone(),
        };
        if let (Some(trace), Some(round)) = (self.flow_trace, self.round)
            && round > 0
        {
            let first = SpanContext::new(
                TraceId::from_bytes(trace.trace_id),
                SpanId::from_bytes(trace.span_id),
                TraceFlags::new(trace.flags),
                true,
                TraceState::default(),
            );
            if first.is_valid() {
                links.push(Link::new(
                    first,
                    vec![KeyValue::new(attr::LINK, "mrtr.flow_start")],
                    0,
                ));
            }
        }
        let mut attributes = self.common_attributes();
        attributes.push(KeyValue::new(attr::REQUEST_ID, id_string(&self.id)));
        attributes.push(KeyValue::new(
            attr::ERA,
            match self.era {
                Era::Modern => "modern",
                Era::Legacy => "legacy",
            },
        ));
        if let Some((TargetKind::Resource, uri)) = &self.target {
            attributes.push(KeyValue::new(attr::RESOURCE_URI, Arc::clone(uri)));
        }
        if self.transport == TransportKind::Http {
            attributes.push(KeyValue::new(attr::NETWORK_PROTOCOL, "http"));
        }
        if let Some(round) = self.round {
            attributes.push(KeyValue::new(attr::ROUND, i64::from(round)));
        }
        let span = instruments
            .tracer
            .span_builder(self.name())
            .with_kind(SpanKind::Server)
            .with_start_time(self.start)
            .with_attributes(attributes)
            .with_links(links)
            .start_with_context(&instruments.tracer, &parent);
        let cx = parent.with_span(span);
        instruments.tracer_kind.learn(&parent, &cx.span());
        cx
    }

    /// The attributes of both the span and the operation metric.
    fn common_attributes(&self) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(12);
        attributes.push(KeyValue::new(attr::METHOD, Arc::clone(&self.method)));
        match &self.target {
            Some((TargetKind::Tool, name)) => {
                attributes.push(KeyValue::new(attr::TOOL, Arc::clone(name)));
                attributes.push(KeyValue::new(attr::OPERATION, "execute_tool"));
            }
            Some((TargetKind::Prompt, name)) => {
                attributes.push(KeyValue::new(attr::PROMPT, Arc::clone(name)));
            }
            _ => {}
        }
        if let Some(version) = &self.protocol_version {
            attributes.push(KeyValue::new(attr::PROTOCOL_VERSION, Arc::clone(version)));
        }
        match self.transport {
            TransportKind::Http => attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "tcp")),
            TransportKind::Stdio => {
                attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "pipe"));
            }
            TransportKind::Memory | TransportKind::Other => {}
        }
        attributes
    }

    fn finish(mut self) {
        let error_type: Option<Cow<'static, str>> = match &self.error {
            Some((code, _)) if !is_caller_error(*code) => Some(code.to_string().into()),
            Some(_) => None,
            None if self.tool_error => Some("tool_error".into()),
            None => None,
        };
        let mut outcome = Vec::with_capacity(3);
        if let Some((code, _)) = &self.error {
            outcome.push(KeyValue::new(attr::STATUS_CODE, code.to_string()));
        }
        if let Some(error_type) = &error_type {
            outcome.push(KeyValue::new(attr::ERROR_TYPE, error_type.clone()));
        }
        if self.round.is_some() && self.error.is_none() {
            outcome.push(KeyValue::new(
                attr::RESULT_TYPE,
                if self.input_required {
                    "input_required"
                } else {
                    "complete"
                },
            ));
        }
        if self.spans {
            let cx = self.begin().clone();
            let span = cx.span();
            // A span that does not record drops all of this: nothing to build for it.
            if span.is_recording() {
                if let Some(reason) = self.rejection {
                    span.add_event(
                        names::STATE_REJECTED,
                        vec![
                            KeyValue::new(attr::REASON, reason_group(reason)),
                            KeyValue::new(
                                "arctern.mcp.request_state.reject_reason",
                                reason.as_str(),
                            ),
                        ],
                    );
                }
                span.set_attributes(outcome.iter().cloned());
                if error_type.is_some() {
                    let message = match &self.error {
                        Some((_, message)) => message.clone(),
                        None => "The tool reported an error".to_owned(),
                    };
                    span.set_status(Status::error(message));
                }
            }
            span.end();
        }
        if !self.metering {
            return;
        }
        let instruments = self.telemetry.instruments();
        if let Some(reason) = self.rejection {
            instruments
                .rejected
                .add(1, &[KeyValue::new(attr::REASON, reason_group(reason))]);
        }
        if let Some(refusal) = self.over_budget {
            instruments.over_budget.add(
                1,
                &[
                    KeyValue::new(attr::BUDGET, refusal.budget().as_str()),
                    KeyValue::new(attr::BUDGET_SCOPE, refusal.scope().as_str()),
                ],
            );
        }
        let mut attributes = self.common_attributes();
        attributes.extend(outcome);
        instruments
            .operation
            .record(seconds_since(self.clock), &attributes);

        // A flow that ends (completes or fails) after more than one round.
        if let (Some(round), Some(started)) = (self.round, self.flow_started)
            && round > 0
            && !self.input_required
        {
            let mut attributes = vec![KeyValue::new(attr::METHOD, Arc::clone(&self.method))];
            match self.target.take() {
                Some((TargetKind::Tool, name)) => attributes.push(KeyValue::new(attr::TOOL, name)),
                Some((TargetKind::Prompt, name)) => {
                    attributes.push(KeyValue::new(attr::PROMPT, name));
                }
                _ => {}
            }
            if let Some(error_type) = error_type {
                attributes.push(KeyValue::new(attr::ERROR_TYPE, error_type));
            }
            let seconds = SystemTime::now()
                .duration_since(started)
                .unwrap_or_default()
                .as_secs_f64();
            instruments.flow_duration.record(seconds, &attributes);
            instruments
                .flow_rounds
                .record(u64::from(round) + 1, &attributes);
        }
    }
}

pin_project_lite::pin_project! {
    /// A future that runs in a trace context, or as it is without one (where
    /// [`opentelemetry::trace::FutureExt::with_context`] would attach the current context at
    /// every poll for nothing).
    pub(crate) struct InContext<F> {
        #[pin]
        inner: F,
        cx: Option<Context>,
    }
}

impl<F> InContext<F> {
    pub(crate) fn new(inner: F, cx: Option<Context>) -> Self {
        InContext { inner, cx }
    }
}

impl<F: std::future::Future> std::future::Future for InContext<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        task: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _attached = this.cx.as_ref().map(|cx| cx.clone().attach());
        this.inner.poll(task)
    }
}

/// The low-cardinality group of a rejection reason, for the counter.
fn reason_group(reason: RejectReason) -> &'static str {
    match reason {
        RejectReason::TooLarge
        | RejectReason::Malformed
        | RejectReason::UnsupportedVersion
        | RejectReason::MalformedClaims
        | RejectReason::UnsupportedClaimsVersion => "malformed",
        RejectReason::UnknownKey | RejectReason::AuthFailed | RejectReason::Codec => "unverified",
        RejectReason::Expired | RejectReason::ExpiryTooFar => "expired",
        RejectReason::WrongMethod
        | RejectReason::WrongTarget
        | RejectReason::WrongArguments
        | RejectReason::WrongAudience
        | RejectReason::WrongPrincipal => "mismatch",
        RejectReason::Replayed => "replayed",
    }
}

fn id_string(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => s.to_string(),
    }
}

/// The error of an encoded JSON-RPC reply, if it is one.
fn error_of(body: &[u8]) -> Option<ErrorObject> {
    #[derive(Deserialize)]
    struct Probe {
        error: Option<ErrorObject>,
    }
    serde_json::from_slice::<Probe>(body).ok()?.error
}

/// Times a legacy session: records `mcp.server.session.duration` when the session ends
/// (when the last handle to it is dropped).
pub(crate) struct SessionClock {
    telemetry: ServerTelemetry,
    clock: Instant,
    attributes: Vec<KeyValue>,
}

impl SessionClock {
    pub(crate) fn start(
        telemetry: &ServerTelemetry,
        version: &str,
        transport: TransportKind,
    ) -> Self {
        let mut attributes = vec![KeyValue::new(attr::PROTOCOL_VERSION, version.to_owned())];
        match transport {
            TransportKind::Http => attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "tcp")),
            TransportKind::Stdio => {
                attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "pipe"));
            }
            TransportKind::Memory | TransportKind::Other => {}
        }
        SessionClock {
            telemetry: telemetry.clone(),
            clock: Instant::now(),
            attributes,
        }
    }
}

impl fmt::Debug for SessionClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionClock").finish_non_exhaustive()
    }
}

impl Drop for SessionClock {
    fn drop(&mut self) {
        let instruments = self.telemetry.instruments();
        if instruments.metering {
            instruments
                .session
                .record(seconds_since(self.clock), &self.attributes);
        }
    }
}

impl SessionClock {
    /// Observes a request the server sends to the session's client.
    pub(crate) fn outgoing(&self, method: &str, id: i64) -> Outgoing {
        let instruments = self.telemetry.instruments();
        let spans = !instruments.tracer_kind.is_noop();
        let mut attributes = Vec::with_capacity(4);
        attributes.push(KeyValue::new(attr::METHOD, method.to_owned()));
        attributes.extend(self.attributes.iter().cloned());
        // Under the call that asks (its SERVER span is current while the shim runs).
        let parent = Context::current();
        // With the no-op tracer, the request carries the asking call's context on.
        let cx = if spans {
            let mut span_attributes = attributes.clone();
            span_attributes.push(KeyValue::new(attr::REQUEST_ID, id.to_string()));
            span_attributes.push(KeyValue::new(attr::ERA, "legacy"));
            let span = instruments
                .tracer
                .span_builder(method.to_owned())
                .with_kind(SpanKind::Client)
                .with_attributes(span_attributes);
            instruments
                .tracer_kind
                .start(&instruments.tracer, span, parent)
        } else {
            parent
        };
        Outgoing(Some(Box::new(OutgoingObserved {
            telemetry: self.telemetry.clone(),
            spans,
            cx,
            clock: Instant::now(),
            attributes,
        })))
    }
}

/// A request the server sends to a 2025-era client (the legacy shim's `elicitation/create`,
/// `sampling/createMessage`, `roots/list`): as the conventions say for operations the server
/// initiates, a `CLIENT` span (under the asking call's span) whose context goes in the
/// request's `_meta`, and `mcp.client.operation.duration`. Every failure is an error, as on
/// any client; dropped unanswered, it ends as `cancelled`.
pub(crate) struct Outgoing(Option<Box<OutgoingObserved>>);

struct OutgoingObserved {
    telemetry: ServerTelemetry,
    /// Whether `cx` holds a span of ours (else it is the asking call's context).
    spans: bool,
    cx: Context,
    clock: Instant,
    attributes: Vec<KeyValue>,
}

impl Outgoing {
    /// The trace-context keys to put in the request's `_meta` (those SEP-414 reserves).
    pub(crate) fn trace_fields(&self) -> Vec<(&'static str, String)> {
        struct Fields(Vec<(&'static str, String)>);
        impl opentelemetry::propagation::Injector for Fields {
            fn set(&mut self, key: &str, value: String) {
                let key = match key {
                    "traceparent" => "traceparent",
                    "tracestate" => "tracestate",
                    "baggage" => "baggage",
                    _ => return,
                };
                self.0.push((key, value));
            }
        }
        let Some(o) = &self.0 else {
            return Vec::new();
        };
        let mut fields = Fields(Vec::new());
        global::get_text_map_propagator(|p| p.inject_context(&o.cx, &mut fields));
        fields.0
    }

    /// Ends the span with the client's answer and records the duration.
    pub(crate) fn finish(mut self, outcome: &Result<Value, crate::Error>) {
        let error = outcome.as_ref().err().map(|e| {
            let (code, error_type) = super::sent_error_type(e);
            (code, error_type, e.to_string())
        });
        if let Some(o) = self.0.take() {
            o.end(error);
        }
    }
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        if let Some(o) = self.0.take() {
            o.end(Some((
                None,
                "cancelled".to_owned(),
                "The request was given up before the client answered".to_owned(),
            )));
        }
    }
}

impl OutgoingObserved {
    /// `error`: the JSON-RPC code (if any), `error.type` and the message.
    fn end(mut self, error: Option<(Option<String>, String, String)>) {
        let span = self.cx.span();
        let recording = self.spans && span.is_recording();
        if let Some((code, error_type, message)) = error {
            if let Some(code) = code {
                self.attributes.push(KeyValue::new(attr::STATUS_CODE, code));
            }
            self.attributes
                .push(KeyValue::new(attr::ERROR_TYPE, error_type));
            if recording {
                span.set_status(Status::error(message));
            }
        }
        if recording {
            span.set_attributes(self.attributes.iter().cloned());
        }
        if self.spans {
            span.end();
        }
        let instruments = self.telemetry.instruments();
        if instruments.metering {
            instruments
                .outgoing
                .record(seconds_since(self.clock), &self.attributes);
        }
    }
}
