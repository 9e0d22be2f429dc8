//! The client's side: one `CLIENT` span per request with its context injected into
//! `_meta`, and one span around each flow of the automatic multi round-trip loop.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;

use super::{
    DURATION_BUCKETS, MetaExtractor, ROUND_BUCKETS, TraceFields, TracerKind, attr, error_kind_name,
    names, seconds_since,
};
use crate::Error;

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
        Instruments {
            tracer,
            tracer_kind: TracerKind::default(),
            metering,
            operation: meter
                .f64_histogram(names::CLIENT_OPERATION_DURATION)
                .with_unit("s")
                .with_description("Duration of one MCP request, from sending to the answer")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            flow_duration: meter
                .f64_histogram(names::FLOW_DURATION)
                .with_unit("s")
                .with_description(
                    "Duration of a multi round-trip flow, from its first round to its last",
                )
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            flow_rounds: meter
                .u64_histogram(names::FLOW_ROUNDS)
                .with_unit("{round}")
                .with_description("Rounds of a multi round-trip flow")
                .with_boundaries(ROUND_BUCKETS.to_vec())
                .build(),
        }
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
        let (tracer, meter, metering) = super::scoped_instruments(tracer_provider, meter_provider);
        let source = OnceLock::new();
        let _ = source.set(Instruments::new(tracer, &meter, metering));
        ClientTelemetry {
            source: Arc::new(source),
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
        self.source.get_or_init(|| {
            let (tracer, meter, metering) = super::global_instruments();
            Instruments::new(tracer, &meter, metering)
        })
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

pub(crate) struct Observed {
    telemetry: ClientTelemetry,
    /// Whether `cx` holds a span of ours (else it is the current context).
    spans: bool,
    metering: bool,
    cx: Context,
    clock: Instant,
    attributes: Vec<KeyValue>,
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
            let span = instruments
                .tracer
                .span_builder(span_name)
                .with_kind(SpanKind::Client)
                .with_attributes(span_attributes)
                .start_with_context(&instruments.tracer, &parent);
            let cx = parent.with_span(span);
            instruments.tracer_kind.learn(&parent, &cx.span());
            cx
        } else {
            parent
        };
        // The URI is opt-in on metrics: the span has it, the histogram not.
        attributes.retain(|kv| kv.key.as_str() != attr::RESOURCE_URI);
        ClientObservation::Full(Box::new(Observed {
            telemetry: telemetry.clone(),
            spans,
            metering,
            cx,
            clock: Instant::now(),
            attributes,
        }))
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
        let span = o.cx.span();
        // Nothing to build for a span that drops it.
        let recording = o.spans && span.is_recording();
        match outcome {
            Ok(raw) => {
                if mrtr {
                    let kind = crate::client::result_type_of(raw);
                    o.attributes.push(KeyValue::new(attr::RESULT_TYPE, kind));
                }
                if crate::client::is_tool_error_result(raw) {
                    o.attributes
                        .push(KeyValue::new(attr::ERROR_TYPE, "tool_error"));
                    if recording {
                        span.set_status(Status::error("The tool reported an error"));
                    }
                }
            }
            Err(e) => {
                let error_type = match e.protocol_error() {
                    Some(obj) => {
                        let code = obj.code.0.to_string();
                        o.attributes
                            .push(KeyValue::new(attr::STATUS_CODE, code.clone()));
                        code
                    }
                    None => error_kind_name(e.kind()).to_owned(),
                };
                o.attributes
                    .push(KeyValue::new(attr::ERROR_TYPE, error_type));
                if recording {
                    span.set_status(Status::error(e.to_string()));
                }
            }
        }
        if recording {
            span.set_attributes(o.attributes.iter().cloned());
        }
        if o.spans {
            span.end();
        }
        if o.metering {
            o.telemetry
                .instruments()
                .operation
                .record(seconds_since(o.clock), &o.attributes);
        }
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
    Full(Box<Flow>),
}

pub(crate) struct Flow {
    telemetry: ClientTelemetry,
    /// Whether `cx` holds a span of ours (else it is the flow's parent context).
    spans: bool,
    metering: bool,
    cx: Context,
    clock: Instant,
    attributes: Vec<KeyValue>,
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
            let span = instruments
                .tracer
                .span_builder(span_name)
                .with_kind(SpanKind::Internal)
                .with_attributes(attributes.clone())
                .with_links(links)
                .start_with_context(&instruments.tracer, &parent);
            let cx = parent.with_span(span);
            instruments.tracer_kind.learn(&parent, &cx.span());
            cx
        } else {
            parent
        };
        attributes.retain(|kv| kv.key.as_str() != attr::RESOURCE_URI);
        FlowSpan::Full(Box::new(Flow {
            telemetry: telemetry.clone(),
            spans,
            metering,
            cx,
            clock: Instant::now(),
            attributes,
        }))
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
        let span = flow.cx.span();
        let recording = flow.spans && span.is_recording();
        if let Err(e) = outcome {
            let error_type = match e.protocol_error() {
                Some(obj) => obj.code.0.to_string(),
                None => error_kind_name(e.kind()).to_owned(),
            };
            flow.attributes
                .push(KeyValue::new(attr::ERROR_TYPE, error_type));
            if recording {
                span.set_status(Status::error(e.to_string()));
            }
        }
        if recording {
            span.set_attribute(KeyValue::new(attr::FLOW_ROUNDS, i64::from(rounds)));
            span.set_attributes(flow.attributes.iter().cloned());
        }
        if flow.spans {
            span.end();
        }
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
