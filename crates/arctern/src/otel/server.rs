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

use super::{
    DURATION_BUCKETS, MetaExtractor, ROUND_BUCKETS, attr, is_caller_error, names, seconds_since,
};
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
    operation: Histogram<f64>,
    session: Histogram<f64>,
    flow_duration: Histogram<f64>,
    flow_rounds: Histogram<u64>,
    rejected: Counter<u64>,
}

impl Instruments {
    fn new(tracer: BoxedTracer, meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            tracer,
            operation: seconds(
                names::SERVER_OPERATION_DURATION,
                "Duration of one MCP request, from receipt to the answer",
            ),
            session: seconds(
                names::SERVER_SESSION_DURATION,
                "Duration of an MCP session (2025-era clients)",
            ),
            flow_duration: seconds(
                names::FLOW_DURATION,
                "Duration of a multi round-trip flow, from its first round to its last",
            ),
            flow_rounds: meter
                .u64_histogram(names::FLOW_ROUNDS)
                .with_unit("{round}")
                .with_description("Rounds of a multi round-trip flow")
                .with_boundaries(ROUND_BUCKETS.to_vec())
                .build(),
            rejected: meter
                .u64_counter(names::STATE_REJECTED)
                .with_unit("{state}")
                .with_description("Request states the server refused, by reason")
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
        let (tracer, meter) = super::scoped_instruments(tracer_provider, meter_provider);
        let source = OnceLock::new();
        let _ = source.set(Instruments::new(tracer, &meter));
        ServerTelemetry {
            source: Arc::new(source),
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
        self.source.get_or_init(|| {
            let (tracer, meter) = super::global_instruments();
            Instruments::new(tracer, &meter)
        })
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
pub(crate) struct Observation(Option<Box<Observed>>);

struct Observed {
    telemetry: ServerTelemetry,
    start: SystemTime,
    clock: Instant,
    ambient: Context,
    method: String,
    id: String,
    era: Era,
    transport: TransportKind,
    target: Option<(TargetKind, String)>,
    protocol_version: Option<String>,
    remote: Option<SpanContext>,
    remote_cx: Option<Context>,
    /// The span's context, once begun.
    cx: Option<Context>,
    round: Option<u32>,
    flow_started: Option<SystemTime>,
    flow_trace: Option<FlowTrace>,
    rejection: Option<RejectReason>,
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
            return Observation(None);
        };
        Observation(Some(Box::new(Observed {
            telemetry: telemetry.clone(),
            start: SystemTime::now(),
            clock: Instant::now(),
            ambient: Context::current(),
            method: method.to_owned(),
            id: id_string(id),
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
            input_required: false,
            error: None,
            tool_error: false,
        })))
    }

    /// The tool, prompt or resource the request names.
    pub(crate) fn target(&mut self, kind: TargetKind, target: &str) {
        if let Some(o) = &mut self.0 {
            o.target = Some((kind, target.to_owned()));
        }
    }

    /// The request's envelope: its protocol version and the client's trace context.
    pub(crate) fn envelope(&mut self, meta: &RequestMeta) {
        if let Some(o) = &mut self.0 {
            o.protocol_version.clone_from(&meta.protocol_version);
            o.extract(&meta.extra);
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
        if let Some(o) = &mut self.0 {
            o.round = Some(number);
            o.flow_started = flow_started;
            o.flow_trace = trace;
        }
    }

    /// A request state the boundary refused.
    pub(crate) fn rejected(&mut self, reason: RejectReason) {
        if let Some(o) = &mut self.0 {
            o.rejection = Some(reason);
        }
    }

    /// Begins the span (if not yet) and returns the context the handler runs in.
    pub(crate) fn begin(&mut self) -> Context {
        match &mut self.0 {
            Some(o) => o.begin().clone(),
            None => Context::current(),
        }
    }

    /// The trace context to seal for later rounds: this span's, on a first round (none when
    /// rounds are not linked or the span is not sampled into a valid context).
    pub(crate) fn first_round_trace(&mut self) -> Option<FlowTrace> {
        let o = self.0.as_mut()?;
        if !o.telemetry.link_rounds || o.round.is_some_and(|r| r > 0) {
            return None;
        }
        let cx = o.begin();
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| FlowTrace {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
        })
    }

    /// The handler's answer: an `input_required` round, a tool error, or a complete result.
    pub(crate) fn answered(&mut self, input_required: bool, tool_error: bool) {
        if let Some(o) = &mut self.0 {
            o.input_required = input_required;
            o.tool_error = tool_error;
        }
    }

    /// The error the request ended with.
    pub(crate) fn failed(&mut self, error: &ErrorObject) {
        if let Some(o) = &mut self.0 {
            o.error = Some((error.code.0, error.message.to_string()));
        }
    }

    /// Ends the span and records the metrics.
    pub(crate) fn finish(self) {
        if let Some(o) = self.0 {
            o.finish();
        }
    }

    /// Ends a request answered without reaching a handler: the error (if any) is read from
    /// the reply, the client's trace context from the raw params.
    pub(crate) fn finish_reply(mut self, reply: &Reply, raw: Option<&RawValue>) {
        let Some(o) = &mut self.0 else {
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
            o.error = Some((error.code.0, error.message.into_owned()));
        }
        self.finish();
    }
}

impl Observed {
    fn extract(&mut self, meta: &Map<String, Value>) {
        if !meta.contains_key("traceparent") {
            return;
        }
        let cx = global::get_text_map_propagator(|p| p.extract(&MetaExtractor(meta)));
        let sc = cx.span().span_context().clone();
        if sc.is_valid() {
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
                .map(str::to_owned);
            self.extract(&probe.meta);
        }
    }

    fn name(&self) -> String {
        match &self.target {
            Some((TargetKind::Tool | TargetKind::Prompt, target)) => {
                format!("{} {target}", self.method)
            }
            _ => self.method.clone(),
        }
    }

    fn begin(&mut self) -> &Context {
        if self.cx.is_none() {
            let cx = self.make_span();
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
        attributes.push(KeyValue::new(attr::REQUEST_ID, self.id.clone()));
        attributes.push(KeyValue::new(
            attr::ERA,
            match self.era {
                Era::Modern => "modern",
                Era::Legacy => "legacy",
            },
        ));
        if let Some((TargetKind::Resource, uri)) = &self.target {
            attributes.push(KeyValue::new(attr::RESOURCE_URI, uri.clone()));
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
        parent.with_span(span)
    }

    /// The attributes of both the span and the operation metric.
    fn common_attributes(&self) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(12);
        attributes.push(KeyValue::new(attr::METHOD, self.method.clone()));
        match &self.target {
            Some((TargetKind::Tool, name)) => {
                attributes.push(KeyValue::new(attr::TOOL, name.clone()));
                attributes.push(KeyValue::new(attr::OPERATION, "execute_tool"));
            }
            Some((TargetKind::Prompt, name)) => {
                attributes.push(KeyValue::new(attr::PROMPT, name.clone()));
            }
            _ => {}
        }
        if let Some(version) = &self.protocol_version {
            attributes.push(KeyValue::new(attr::PROTOCOL_VERSION, version.clone()));
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
        let cx = self.begin().clone();
        let instruments = self.telemetry.instruments();
        let span = cx.span();
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
        if let Some(reason) = self.rejection {
            let group = reason_group(reason);
            span.add_event(
                names::STATE_REJECTED,
                vec![
                    KeyValue::new(attr::REASON, group),
                    KeyValue::new("arctern.mcp.request_state.reject_reason", reason.as_str()),
                ],
            );
            instruments
                .rejected
                .add(1, &[KeyValue::new(attr::REASON, group)]);
        }
        span.set_attributes(outcome.iter().cloned());
        if error_type.is_some() {
            let message = match &self.error {
                Some((_, message)) => message.clone(),
                None => "The tool reported an error".to_owned(),
            };
            span.set_status(Status::error(message));
        }
        span.end();

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
            let mut attributes = vec![KeyValue::new(attr::METHOD, self.method.clone())];
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
        self.telemetry
            .instruments()
            .session
            .record(seconds_since(self.clock), &self.attributes);
    }
}
