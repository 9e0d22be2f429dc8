//! The client's side: one `CLIENT` span per request with its context injected into
//! `_meta`, and one span around each flow of the automatic multi round-trip loop.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::trace::{
    Link, SpanBuilder, SpanKind, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;

use super::{MetaExtractor, TraceFields, TracerKind, attr, seconds_since};
use crate::Error;
use crate::client::middleware::{Answer, BoxFuture, Middleware, Next, Request};
use crate::client::wire;

/// The client's OpenTelemetry instrumentation: where its tracer and meter come from.
///
/// [`ClientTelemetry::global`] (what a client uses unless told otherwise when the `otel`
/// feature is on) takes the global providers when the client sends its first request;
/// [`ClientTelemetry::new`] takes providers of its own.
#[derive(Clone)]
pub struct ClientTelemetry {
    source: Arc<OnceLock<Instruments>>,
    flow_spans: bool,
}

impl fmt::Debug for ClientTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTelemetry")
            .field("flow_spans", &self.flow_spans)
            .finish_non_exhaustive()
    }
}

impl Default for ClientTelemetry {
    fn default() -> Self {
        Self::global()
    }
}

struct Instruments {
    tracer: BoxedTracer,
    /// Whether `tracer` is OpenTelemetry's no-op, as its spans have shown.
    tracer_kind: TracerKind,
    /// Whether the meter records (false for OpenTelemetry's no-op meter).
    metering: bool,
    operation: Histogram<f64>,
    flow_duration: Histogram<f64>,
    flow_rounds: Histogram<u64>,
}

impl Instruments {
    fn new(tracer: BoxedTracer, meter: &Meter, metering: bool) -> Self {
        let (flow_duration, flow_rounds) = super::flow_histograms(meter);
        Instruments {
            tracer,
            tracer_kind: TracerKind::default(),
            metering,
            operation: super::client_operation_histogram(meter),
            flow_duration,
            flow_rounds,
        }
    }
}

impl Instruments {
    /// Starts a span of ours under `parent`; returns its context.
    fn start_span(&self, span: SpanBuilder, parent: Context) -> Context {
        self.tracer_kind.start(&self.tracer, span, parent)
    }
}

impl ClientTelemetry {
    /// Instrumentation through the global tracer and meter providers, as they are when the
    /// client sends its first request (install the SDK before that).
    pub fn global() -> Self {
        ClientTelemetry {
            source: Arc::new(OnceLock::new()),
            flow_spans: true,
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
        ClientTelemetry {
            source: super::scoped_instruments(tracer_provider, meter_provider, Instruments::new),
            flow_spans: true,
        }
    }

    /// Whether the automatic loop wraps each multi round-trip flow in a span of its own,
    /// with one `CLIENT` span per round under it (default: on).
    pub fn flow_spans(mut self, on: bool) -> Self {
        self.flow_spans = on;
        self
    }

    fn instruments(&self) -> &Instruments {
        self.source
            .get_or_init(|| super::global_instruments(Instruments::new))
    }
}

/// The target attributes of a request: tool or prompt name (which also names the span),
/// or resource URI.
fn target_attributes(method: &str, name: Option<&str>, out: &mut Vec<KeyValue>) -> Option<String> {
    let name = name?;
    match method {
        "tools/call" => {
            out.push(KeyValue::new(attr::TOOL, name.to_owned()));
            out.push(KeyValue::new(attr::OPERATION, "execute_tool"));
            Some(name.to_owned())
        }
        "prompts/get" => {
            out.push(KeyValue::new(attr::PROMPT, name.to_owned()));
            Some(name.to_owned())
        }
        "resources/read" => {
            out.push(KeyValue::new(attr::RESOURCE_URI, name.to_owned()));
            None
        }
        _ => None,
    }
}

/// One request being observed by the client: its `CLIENT` span, begun when the request is
/// encoded, and its clock.
pub(crate) enum ClientObservation {
    /// Telemetry is off.
    Off,
    /// Telemetry is on and nothing records (no SDK installed): the request carries the
    /// current trace context, as the no-op span's would be.
    Quiet,
    /// Spans or metrics (or both) record.
    Full(Box<Observed>),
}

/// A request or a flow being observed: its span's context and its clock.
pub(crate) struct Observed {
    telemetry: ClientTelemetry,
    /// Whether `cx` holds a span of ours (else it is the context the span would have had
    /// as its parent).
    spans: bool,
    metering: bool,
    cx: Context,
    clock: Instant,
    /// The metric's attributes.
    attributes: Vec<KeyValue>,
}

impl Observed {
    /// Starts the clock; `attributes` are the span's, of which the metric takes all but
    /// the URI (opt-in on metrics).
    fn begin(
        telemetry: &ClientTelemetry,
        spans: bool,
        metering: bool,
        cx: Context,
        mut attributes: Vec<KeyValue>,
    ) -> Box<Self> {
        attributes.retain(|kv| kv.key.as_str() != attr::RESOURCE_URI);
        Box::new(Observed {
            telemetry: telemetry.clone(),
            spans,
            metering,
            cx,
            clock: Instant::now(),
            attributes,
        })
    }

    /// Whether the span is ours and records.
    fn recording(&self) -> bool {
        self.spans && self.cx.span().is_recording()
    }

    /// Records a failure: the span's status, `error.type` and, with `status_code`,
    /// `rpc.response.status_code` (for a JSON-RPC error).
    fn failed(&mut self, recording: bool, e: &Error, status_code: bool) {
        let (code, error_type) = super::sent_error_type(e);
        if let Some(code) = code.filter(|_| status_code) {
            self.attributes.push(KeyValue::new(attr::STATUS_CODE, code));
        }
        self.attributes
            .push(KeyValue::new(attr::ERROR_TYPE, error_type));
        if recording {
            self.cx.span().set_status(Status::error(e.to_string()));
        }
    }

    /// Ends the span (if it is ours), with the attributes (if it records).
    fn end_span(&self, recording: bool) {
        let span = self.cx.span();
        if recording {
            span.set_attributes(self.attributes.iter().cloned());
        }
        if self.spans {
            span.end();
        }
    }
}

impl ClientObservation {
    /// Begins the span of one request, under the current context (the flow's span in the
    /// automatic loop, or the application's).
    pub(crate) fn start(
        telemetry: Option<&ClientTelemetry>,
        method: &str,
        name: Option<&str>,
        round: Option<u32>,
        protocol_version: &str,
    ) -> Self {
        let Some(telemetry) = telemetry else {
            return ClientObservation::Off;
        };
        let instruments = telemetry.instruments();
        let spans = !instruments.tracer_kind.is_noop();
        let metering = instruments.metering;
        if !spans && !metering {
            return ClientObservation::Quiet;
        }
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(attr::METHOD, method.to_owned()));
        let target = target_attributes(method, name, &mut attributes);
        attributes.push(KeyValue::new(
            attr::PROTOCOL_VERSION,
            protocol_version.to_owned(),
        ));
        let parent = Context::current();
        let cx = if spans {
            let span_name = match &target {
                Some(target) => format!("{method} {target}"),
                None => method.to_owned(),
            };
            let mut span_attributes = attributes.clone();
            if let Some(round) = round {
                span_attributes.push(KeyValue::new(attr::ROUND, i64::from(round)));
            }
            let span = SpanBuilder::from_name(span_name)
                .with_kind(SpanKind::Client)
                .with_attributes(span_attributes);
            instruments.start_span(span, parent)
        } else {
            parent
        };
        ClientObservation::Full(Observed::begin(telemetry, spans, metering, cx, attributes))
    }

    /// The request's JSON-RPC id.
    pub(crate) fn id(&self, id: i64) {
        if let ClientObservation::Full(o) = self
            && o.spans
        {
            let span = o.cx.span();
            if span.is_recording() {
                span.set_attribute(KeyValue::new(attr::REQUEST_ID, id.to_string()));
            }
        }
    }

    /// The trace context to put in the request's `_meta`.
    pub(crate) fn inject(&self) -> TraceFields {
        match self {
            ClientObservation::Off => TraceFields::default(),
            ClientObservation::Quiet => TraceFields::inject(&Context::current()),
            ClientObservation::Full(o) => TraceFields::inject(&o.cx),
        }
    }

    /// Ends the span and records `mcp.client.operation.duration`: every error counts.
    pub(crate) fn finish(self, outcome: &Result<Box<RawValue>, Error>, mrtr: bool) {
        let ClientObservation::Full(mut o) = self else {
            return;
        };
        // Nothing to build for a span that drops it.
        let recording = o.recording();
        match outcome {
            Ok(raw) => {
                if mrtr {
                    let kind = result_type_of(raw);
                    o.attributes.push(KeyValue::new(attr::RESULT_TYPE, kind));
                }
                if is_tool_error_result(raw) {
                    o.attributes
                        .push(KeyValue::new(attr::ERROR_TYPE, "tool_error"));
                    if recording {
                        o.cx.span()
                            .set_status(Status::error("The tool reported an error"));
                    }
                }
            }
            Err(e) => o.failed(recording, e, true),
        }
        o.end_span(recording);
        if o.metering {
            o.telemetry
                .instruments()
                .operation
                .record(seconds_since(o.clock), &o.attributes);
        }
    }
}

/// The client's telemetry as a layer of its request pipeline (the innermost but the
/// transport end): one `CLIENT` span per request sent, its context in the request's
/// `_meta`, and `mcp.client.operation.duration`.
pub(crate) struct ClientTelemetryLayer {
    telemetry: ClientTelemetry,
}

impl ClientTelemetryLayer {
    pub(crate) fn new(telemetry: ClientTelemetry) -> Self {
        ClientTelemetryLayer { telemetry }
    }
}

impl Middleware for ClientTelemetryLayer {
    fn call(&self, mut request: Request, next: Next) -> BoxFuture<Answer> {
        let client = request.client().clone();
        let version = client.negotiated();
        let observation = ClientObservation::start(
            Some(&self.telemetry),
            request.method(),
            request.target(),
            request.round(),
            version.version.as_str(),
        );
        drop(version);
        let id = client.next_id();
        observation.id(id);
        request.id = Some(id);
        request.trace = observation.inject();
        let mrtr = arctern_types::methods::is_mrtr_method(request.method());
        Box::pin(async move {
            let answer = next.run(request).await;
            observation.finish(&answer, mrtr);
            answer
        })
    }
}

/// The span around one flow of the automatic multi round-trip loop: `execute_tool {tool}`
/// for a tool call (the GenAI execute-tool span), `{method} {target}` otherwise, kind
/// `INTERNAL`. Its rounds' `CLIENT` spans are its children.
pub(crate) enum FlowSpan {
    /// Telemetry or flow spans are off.
    Off,
    /// Nothing records (no SDK installed): the rounds run in the flow's parent context, as
    /// they would under the no-op span.
    Quiet(Context),
    /// The span or the metrics (or both) record.
    Full(Box<Observed>),
}

impl FlowSpan {
    /// Begins a flow. `resumed` is the trace context a [`Continuation`] carried: the
    /// parent when there is no current span, a link otherwise.
    ///
    /// [`Continuation`]: crate::client::Continuation
    pub(crate) fn start(
        telemetry: Option<&ClientTelemetry>,
        method: &str,
        name: &str,
        resumed: Option<&TraceFields>,
    ) -> Self {
        let Some(telemetry) = telemetry.filter(|t| t.flow_spans) else {
            return FlowSpan::Off;
        };
        let instruments = telemetry.instruments();
        let spans = !instruments.tracer_kind.is_noop();
        let metering = instruments.metering;
        let (parent, links) = resumed_parent(resumed);
        if !spans && !metering {
            return FlowSpan::Quiet(parent);
        }
        let mut attributes = vec![KeyValue::new(attr::METHOD, method.to_owned())];
        let target = target_attributes(method, Some(name), &mut attributes);
        let cx = if spans {
            let span_name = match (method, &target) {
                ("tools/call", Some(tool)) => format!("execute_tool {tool}"),
                (_, Some(target)) => format!("{method} {target}"),
                (_, None) => method.to_owned(),
            };
            let span = SpanBuilder::from_name(span_name)
                .with_kind(SpanKind::Internal)
                .with_attributes(attributes.clone())
                .with_links(links);
            instruments.start_span(span, parent)
        } else {
            parent
        };
        FlowSpan::Full(Observed::begin(telemetry, spans, metering, cx, attributes))
    }

    /// The context the flow's rounds run in.
    pub(crate) fn context(&self) -> Context {
        match self {
            FlowSpan::Off => Context::current(),
            FlowSpan::Quiet(parent) => parent.clone(),
            FlowSpan::Full(flow) => flow.cx.clone(),
        }
    }

    /// Ends the flow after `rounds` rounds.
    pub(crate) fn finish<T>(self, outcome: &Result<T, Error>, rounds: u32) {
        let FlowSpan::Full(mut flow) = self else {
            return;
        };
        let recording = flow.recording();
        if let Err(e) = outcome {
            flow.failed(recording, e, false);
        }
        if recording {
            flow.cx
                .span()
                .set_attribute(KeyValue::new(attr::FLOW_ROUNDS, i64::from(rounds)));
        }
        flow.end_span(recording);
        if flow.metering && rounds > 1 {
            let instruments = flow.telemetry.instruments();
            instruments
                .flow_duration
                .record(seconds_since(flow.clock), &flow.attributes);
            instruments
                .flow_rounds
                .record(u64::from(rounds), &flow.attributes);
        }
    }
}

/// The parent of a resumed flow's span: the carried context when the application has no
/// span of its own current, else the current one with a link to the carried context.
pub(crate) fn resumed_parent(resumed: Option<&TraceFields>) -> (Context, Vec<Link>) {
    let current = Context::current();
    let Some(fields) = resumed.filter(|f| !f.is_empty()) else {
        return (current, Vec::new());
    };
    let mut meta = serde_json::Map::new();
    for (key, value) in [
        ("traceparent", &fields.traceparent),
        ("tracestate", &fields.tracestate),
        ("baggage", &fields.baggage),
    ] {
        if let Some(value) = value {
            meta.insert(key.to_owned(), value.clone().into());
        }
    }
    let carried = global::get_text_map_propagator(|p| p.extract(&MetaExtractor(&meta)));
    let carried_span = carried.span().span_context().clone();
    if !carried_span.is_valid() {
        return (current, Vec::new());
    }
    if current.span().span_context().is_valid() {
        (current, vec![Link::with_context(carried_span)])
    } else {
        (carried, Vec::new())
    }
}

/// A raw result's `resultType`, as a span attribute names it.
fn result_type_of(raw: &RawValue) -> &'static str {
    match wire::result_kind(raw) {
        Ok(wire::Kind::InputRequired) => "input_required",
        Ok(wire::Kind::Complete) => "complete",
        Ok(wire::Kind::Task) => "task",
        Ok(wire::Kind::Unknown(_)) | Err(_) => "unknown",
    }
}

/// Whether a raw result is a tool's error (`isError: true`).
fn is_tool_error_result(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Probe>(raw.get()).is_ok_and(|p| p.is_error == Some(true))
}
