//! OpenTelemetry traces and metrics by the MCP semantic conventions (feature `otel`).
//!
//! arctern depends on the OpenTelemetry **API** crate only (re-exported as [`api`]); the
//! SDK, the propagators and the exporters belong to the application. With no SDK installed
//! every span and instrument is a no-op.
//!
//! - **Server** ([`ServerTelemetry`]): one `SERVER` span per request, named
//!   `{mcp.method.name} {target}`, on both eras and every transport, including requests
//!   refused before a handler runs; the `mcp.server.operation.duration` and (legacy
//!   sessions) `mcp.server.session.duration` histograms. Multi round-trip flows are one
//!   story: the first round's trace context and start time travel sealed in the request
//!   state, later rounds link to the first, and the server records
//!   `arctern.mcp.flow.duration`, `arctern.mcp.flow.rounds` and
//!   `arctern.mcp.request_state.rejected`.
//! - **Client** ([`ClientTelemetry`]): one `CLIENT` span per request with its context
//!   injected into `_meta` (`traceparent`, `tracestate`, `baggage`); the automatic
//!   multi round-trip loop wraps a flow in one span with a child per round; a
//!   [`Continuation`](crate::client::Continuation) carries the flow's trace context.
//!
//! See the observability guide (`docs/observability.md` in the crate) for the attributes,
//! the error classification and how to install an SDK.

#[cfg(any(feature = "server", feature = "client"))]
use opentelemetry::propagation::Extractor;
#[cfg(feature = "client")]
use opentelemetry::propagation::Injector;
#[cfg(any(feature = "server", feature = "client"))]
use opentelemetry::trace::TraceContextExt as _;
#[cfg(any(feature = "server", feature = "client"))]
use serde_json::{Map, Value};

pub use opentelemetry as api;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::ClientTelemetry;
#[cfg(feature = "client")]
pub(crate) use client::{ClientTelemetryLayer, FlowSpan, resumed_parent};
#[cfg(feature = "server")]
pub(crate) use server::{InContext, Observation, SessionClock, TargetKind};
#[cfg(feature = "server")]
pub use server::{RemoteParent, ServerTelemetry};

/// The instrumentation scope of every span and instrument arctern makes.
pub const SCOPE: &str = "arctern";

/// The instruments `make` builds from a tracer and a meter in arctern's scope, from these
/// providers, and whether the meter records (see [`meter_records`]); made now, in the
/// shared cell a telemetry handle and its clones read.
#[cfg(any(feature = "server", feature = "client"))]
fn scoped_instruments<I, T, P, M>(
    tracer_provider: &P,
    meter_provider: &M,
    make: fn(opentelemetry::global::BoxedTracer, &opentelemetry::metrics::Meter, bool) -> I,
) -> std::sync::Arc<std::sync::OnceLock<I>>
where
    T: opentelemetry::trace::Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
    P: opentelemetry::trace::TracerProvider<Tracer = T>,
    M: opentelemetry::metrics::MeterProvider,
{
    let tracer = opentelemetry::global::BoxedTracer::new(Box::new(
        tracer_provider.tracer_with_scope(scope()),
    ));
    let meter = meter_provider.meter_with_scope(scope());
    let metering = meter_records(meter_provider, &meter);
    std::sync::Arc::new(std::sync::OnceLock::from(make(tracer, &meter, metering)))
}

/// The instruments `make` builds from a tracer and a meter in arctern's scope, from the
/// global providers as they are now, and whether the meter records (see
/// [`meter_records`]).
#[cfg(any(feature = "server", feature = "client"))]
fn global_instruments<I>(
    make: fn(opentelemetry::global::BoxedTracer, &opentelemetry::metrics::Meter, bool) -> I,
) -> I {
    let provider = opentelemetry::global::meter_provider();
    let meter = provider.meter_with_scope(scope());
    let metering = meter_records(&*provider, &meter);
    make(
        opentelemetry::global::tracer_with_scope(scope()),
        &meter,
        metering,
    )
}

/// A histogram of durations in seconds, with the buckets the conventions advise.
#[cfg(any(feature = "server", feature = "client"))]
fn seconds_histogram(
    meter: &opentelemetry::metrics::Meter,
    name: &'static str,
    description: &'static str,
) -> opentelemetry::metrics::Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS.to_vec())
        .build()
}

/// `mcp.client.operation.duration`: a client records it for its requests, a server for the
/// requests it sends to a 2025-era client.
#[cfg(any(feature = "server", feature = "client"))]
fn client_operation_histogram(
    meter: &opentelemetry::metrics::Meter,
) -> opentelemetry::metrics::Histogram<f64> {
    seconds_histogram(
        meter,
        names::CLIENT_OPERATION_DURATION,
        "Duration of one MCP request, from sending to the answer",
    )
}

/// `arctern.mcp.flow.duration` and `arctern.mcp.flow.rounds`, which a client and a server
/// both record.
#[cfg(any(feature = "server", feature = "client"))]
fn flow_histograms(
    meter: &opentelemetry::metrics::Meter,
) -> (
    opentelemetry::metrics::Histogram<f64>,
    opentelemetry::metrics::Histogram<u64>,
) {
    let duration = seconds_histogram(
        meter,
        names::FLOW_DURATION,
        "Duration of a multi round-trip flow, from its first round to its last",
    );
    let rounds = meter
        .u64_histogram(names::FLOW_ROUNDS)
        .with_unit("{round}")
        .with_description("Rounds of a multi round-trip flow")
        .with_boundaries(ROUND_BUCKETS.to_vec())
        .build();
    (duration, rounds)
}

/// Whether `meter` (from `provider`) may record anything: false only for OpenTelemetry's
/// no-op meter provider, the global one until an application installs an SDK, so that
/// arctern builds no attributes for instruments that drop them.
///
/// The API offers no way to ask, so this goes by what the no-op is and does: its provider
/// holds nothing (a zero-sized type, where any provider that records reaches its pipeline
/// through a field), and its meter drops an observable instrument's callback at once, where
/// a meter that records keeps it to call at every collection. The second test runs only for
/// a zero-sized provider, and registers a gauge (`arctern.otel.probe`) that never observes
/// a value, so an exporter never sees it.
#[cfg(any(feature = "server", feature = "client"))]
fn meter_records<M>(provider: &M, meter: &opentelemetry::metrics::Meter) -> bool
where
    M: opentelemetry::metrics::MeterProvider + ?Sized,
{
    if std::mem::size_of_val(provider) != 0 {
        return true;
    }
    let witness = std::sync::Arc::new(());
    let held = std::sync::Arc::clone(&witness);
    let _probe = meter
        .u64_observable_gauge("arctern.otel.probe")
        .with_callback(move |_| {
            let _ = &held;
        })
        .build();
    std::sync::Arc::strong_count(&witness) > 1
}

/// What a tracer is, as learned from the spans it starts: OpenTelemetry's no-op tracer (the
/// global one until an application installs an SDK) gives every span its parent's context
/// and records nothing, where an SDK gives every span, sampled or not, an id of its own.
/// Once known to be the no-op, arctern starts no more spans with it (their contexts would
/// be their parents').
#[cfg(any(feature = "server", feature = "client"))]
#[derive(Default)]
pub(crate) struct TracerKind(std::sync::atomic::AtomicU8);

#[cfg(any(feature = "server", feature = "client"))]
impl TracerKind {
    const UNKNOWN: u8 = 0;
    const NOOP: u8 = 1;
    const REAL: u8 = 2;

    /// Whether the tracer is known to be the no-op.
    pub(crate) fn is_noop(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) == Self::NOOP
    }

    /// Starts the span `builder` describes with `tracer` (the tracer this is the kind of)
    /// under `parent`, and learns from it; returns the span's context.
    pub(crate) fn start(
        &self,
        tracer: &opentelemetry::global::BoxedTracer,
        builder: opentelemetry::trace::SpanBuilder,
        parent: opentelemetry::Context,
    ) -> opentelemetry::Context {
        let span = builder.start_with_context(tracer, &parent);
        let cx = parent.with_span(span);
        self.learn(&parent, &cx.span());
        cx
    }

    /// Learns from `span`, which the tracer started under `parent`.
    pub(crate) fn learn(
        &self,
        parent: &opentelemetry::Context,
        span: &opentelemetry::trace::SpanRef<'_>,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.0.load(Relaxed) != Self::UNKNOWN {
            return;
        }
        let own_id = span.span_context().span_id() != parent.span().span_context().span_id();
        if span.is_recording() || own_id {
            self.0.store(Self::REAL, Relaxed);
        } else if !parent.is_telemetry_suppressed() {
            // (An SDK starts no span in a suppressed context: that says nothing.)
            self.0.store(Self::NOOP, Relaxed);
        }
    }
}

/// arctern's instrumentation scope: its name and version.
#[cfg(any(feature = "server", feature = "client"))]
fn scope() -> opentelemetry::InstrumentationScope {
    opentelemetry::InstrumentationScope::builder(SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The bucket boundaries, in seconds, the MCP semantic conventions advise for the operation
/// and session duration histograms (arctern uses them for flow durations too).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The bucket boundaries of `arctern.mcp.flow.rounds`.
pub const ROUND_BUCKETS: [f64; 10] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];

/// Attribute names: the semantic conventions' and arctern's own.
pub mod attr {
    /// `mcp.method.name`.
    pub const METHOD: &str = "mcp.method.name";
    /// `gen_ai.tool.name`.
    pub const TOOL: &str = "gen_ai.tool.name";
    /// `gen_ai.prompt.name`.
    pub const PROMPT: &str = "gen_ai.prompt.name";
    /// `gen_ai.operation.name` (`execute_tool` for tool calls).
    pub const OPERATION: &str = "gen_ai.operation.name";
    /// `mcp.resource.uri`.
    pub const RESOURCE_URI: &str = "mcp.resource.uri";
    /// `jsonrpc.request.id`.
    pub const REQUEST_ID: &str = "jsonrpc.request.id";
    /// `rpc.response.status_code`: the JSON-RPC error code, as a string.
    pub const STATUS_CODE: &str = "rpc.response.status_code";
    /// `error.type`.
    pub const ERROR_TYPE: &str = "error.type";
    /// `mcp.protocol.version`.
    pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// `mcp.session.id` (legacy sessions only: a 2026-07-28 request has no session).
    pub const SESSION_ID: &str = "mcp.session.id";
    /// `network.transport`: `tcp` for HTTP, `pipe` for stdio.
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `network.protocol.name`: `http` for Streamable HTTP.
    pub const NETWORK_PROTOCOL: &str = "network.protocol.name";
    /// `arctern.mcp.era`: `modern` or `legacy`.
    pub const ERA: &str = "arctern.mcp.era";
    /// `arctern.mcp.round`: the 0-based round of a multi round-trip request.
    pub const ROUND: &str = "arctern.mcp.round";
    /// `arctern.mcp.result_type`: `complete` or `input_required`.
    pub const RESULT_TYPE: &str = "arctern.mcp.result_type";
    /// `arctern.mcp.flow.rounds`: the rounds of a flow (on a client's flow span).
    pub const FLOW_ROUNDS: &str = "arctern.mcp.flow.rounds";
    /// `arctern.mcp.link`: what a span link means (`mrtr.flow_start`).
    pub const LINK: &str = "arctern.mcp.link";
    /// `reason` of a rejected request state (`malformed`, `unverified`, `expired`,
    /// `mismatch`, `replayed`).
    pub const REASON: &str = "reason";
    /// `arctern.mcp.budget`: the budget a refused call was over (`oneTimeFlows`,
    /// `runningTasks`, `storedTasks`).
    pub const BUDGET: &str = "arctern.mcp.budget";
    /// `arctern.mcp.budget.scope`: `caller` (its share) or `server` (the whole budget).
    pub const BUDGET_SCOPE: &str = "arctern.mcp.budget.scope";
}

/// Metric and event names.
pub mod names {
    /// The server's duration histogram of one request (one round).
    pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// The server's duration histogram of a legacy session.
    pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
    /// The client's duration histogram of one request (one round).
    pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// A multi round-trip flow from its first round to its last, human waits included.
    pub const FLOW_DURATION: &str = "arctern.mcp.flow.duration";
    /// The rounds a multi round-trip flow took.
    pub const FLOW_ROUNDS: &str = "arctern.mcp.flow.rounds";
    /// Request states the server refused, by reason (counter and span event).
    pub const STATE_REJECTED: &str = "arctern.mcp.request_state.rejected";
    /// Calls refused because their caller was over a budget or the budget was full, by
    /// budget and scope (counter; see the budgets guide).
    pub const BUDGET_REFUSED: &str = "arctern.mcp.budget.refused";
}

/// Whether a JSON-RPC error code is the caller's fault, which the conventions say a server
/// does not count as an error: parse errors, invalid requests, unknown methods, invalid
/// params (a rejected request state among them) and the 2025 era's resource not found.
pub const fn is_caller_error(code: i32) -> bool {
    matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
}

/// Reads trace context keys from a `_meta` object.
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) struct MetaExtractor<'a>(pub(crate) &'a Map<String, Value>);

#[cfg(any(feature = "server", feature = "client"))]
impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The trace context a request carries in `_meta`, as a propagator writes it.
#[cfg(feature = "client")]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct TraceFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) traceparent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tracestate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) baggage: Option<String>,
}

#[cfg(feature = "client")]
impl TraceFields {
    /// What the global propagator injects for `cx` (nothing when no propagator is
    /// installed or the context holds no valid span).
    pub(crate) fn inject(cx: &opentelemetry::Context) -> Self {
        let mut fields = TraceFields::default();
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(cx, &mut fields));
        fields
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.traceparent.is_none() && self.tracestate.is_none() && self.baggage.is_none()
    }
}

#[cfg(feature = "client")]
impl Injector for TraceFields {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.traceparent = Some(value),
            "tracestate" => self.tracestate = Some(value),
            "baggage" => self.baggage = Some(value),
            _ => {}
        }
    }
}

/// `error.type` of a failure without a JSON-RPC error code (the side that sent the request
/// counts every failure as an error).
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) fn error_kind_name(kind: crate::ErrorKind) -> &'static str {
    use crate::ErrorKind;
    match kind {
        ErrorKind::Io => "io",
        ErrorKind::Transport => "transport",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Closed => "closed",
        ErrorKind::Codec => "codec",
        ErrorKind::Version => "version",
        ErrorKind::Tls => "tls",
        ErrorKind::Auth => "auth",
        _ => "_OTHER",
    }
}

/// The `rpc.response.status_code` of a failed request the side that sent it saw (its
/// JSON-RPC error code, if the peer answered with one) and its `error.type` (that code, or
/// else the kind of the failure).
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) fn sent_error_type(e: &crate::Error) -> (Option<String>, String) {
    match e.protocol_error() {
        Some(obj) => {
            let code = obj.code.0.to_string();
            (Some(code.clone()), code)
        }
        None => (None, error_kind_name(e.kind()).to_owned()),
    }
}

/// Time since `start`, in seconds, for a histogram.
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) fn seconds_since(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64()
}
