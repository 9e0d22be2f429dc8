//! OpenTelemetry (feature `otel`): span shapes and attributes, error classification,
//! trace context in `_meta` both ways, a three-round flow as one trace with linked rounds,
//! rejected request states, and the histograms, checked with the SDK's in-memory exporters
//! against real in-process servers and clients.

use std::sync::Arc;

use arctern::client::{Client, Continuation, Outcome as ClientOutcome};
use arctern::otel::{ClientTelemetry, DURATION_BUCKETS, RemoteParent, ServerTelemetry};
use arctern::server::connection::{Reply, RequestOrigin, TransportKind};
use arctern::server::mrtr::{Ask, Interrupt, Questions};
use arctern::server::{BuiltServer, McpServer, ResourceSpec};
use arctern::types::elicitation::ElicitResult;
use arctern::types::tools::CallToolResult;
use arctern::{ErrorKind, ErrorObject};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{
    SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue, global};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};

// ------------------------------------------------------------------ fixture

/// One tracer provider (spans of both sides land in one exporter, as in one collector) and
/// a meter provider per side.
struct Otel {
    spans: InMemorySpanExporter,
    tracer: SdkTracerProvider,
    server_metrics: InMemoryMetricExporter,
    server_meter: SdkMeterProvider,
    client_metrics: InMemoryMetricExporter,
    client_meter: SdkMeterProvider,
}

fn meter() -> (InMemoryMetricExporter, SdkMeterProvider) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    (exporter, provider)
}

/// The application's propagators (the same in every test of this binary).
fn propagators() {
    global::set_text_map_propagator(opentelemetry::propagation::TextMapCompositePropagator::new(
        vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ],
    ));
}

impl Otel {
    fn new() -> Self {
        propagators();
        let spans = InMemorySpanExporter::default();
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let (server_metrics, server_meter) = meter();
        let (client_metrics, client_meter) = meter();
        Otel {
            spans,
            tracer,
            server_metrics,
            server_meter,
            client_metrics,
            client_meter,
        }
    }

    fn server(&self) -> ServerTelemetry {
        ServerTelemetry::new(&self.tracer, &self.server_meter)
    }

    fn client(&self) -> ClientTelemetry {
        ClientTelemetry::new(&self.tracer, &self.client_meter)
    }

    fn spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().unwrap()
    }

    fn of_kind(&self, kind: SpanKind) -> Vec<SpanData> {
        self.spans()
            .into_iter()
            .filter(|s| s.span_kind == kind)
            .collect()
    }

    fn server_metrics(&self) -> Vec<ResourceMetrics> {
        self.server_meter.force_flush().unwrap();
        self.server_metrics.get_finished_metrics().unwrap()
    }

    fn client_metrics(&self) -> Vec<ResourceMetrics> {
        self.client_meter.force_flush().unwrap();
        self.client_metrics.get_finished_metrics().unwrap()
    }
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn attr_str(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

/// A histogram's data points (last export): bounds, count, attributes.
struct Point {
    bounds: Vec<f64>,
    count: u64,
    sum: f64,
    attributes: Vec<KeyValue>,
}

fn histogram(metrics: &[ResourceMetrics], name: &str) -> (String, Vec<Point>) {
    let metric = metrics
        .iter()
        .rev()
        .flat_map(|rm| rm.scope_metrics())
        .flat_map(|sm| sm.metrics())
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no metric {name}"));
    let points = match metric.data() {
        AggregatedMetrics::F64(MetricData::Histogram(h)) => h
            .data_points()
            .map(|p| Point {
                bounds: p.bounds().collect(),
                count: p.count(),
                sum: p.sum(),
                attributes: p.attributes().cloned().collect(),
            })
            .collect(),
        AggregatedMetrics::U64(MetricData::Histogram(h)) => h
            .data_points()
            .map(|p| Point {
                bounds: p.bounds().collect(),
                count: p.count(),
                sum: p.sum() as f64,
                attributes: p.attributes().cloned().collect(),
            })
            .collect(),
        other => panic!("{name} is not a histogram: {other:?}"),
    };
    (metric.unit().to_owned(), points)
}

fn counter(metrics: &[ResourceMetrics], name: &str) -> Vec<(u64, Vec<KeyValue>)> {
    let Some(metric) = metrics
        .iter()
        .rev()
        .flat_map(|rm| rm.scope_metrics())
        .flat_map(|sm| sm.metrics())
        .find(|m| m.name() == name)
    else {
        return Vec::new();
    };
    match metric.data() {
        AggregatedMetrics::U64(MetricData::Sum(s)) => s
            .data_points()
            .map(|p| (p.value(), p.attributes().cloned().collect()))
            .collect(),
        other => panic!("{name} is not a counter: {other:?}"),
    }
}

fn has(attributes: &[KeyValue], key: &str, value: &str) -> bool {
    attributes
        .iter()
        .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value)
}

/// A server with a plain tool, a tool that fails, one that reports a tool error, one that
/// panics, a three-round tool, a prompt and a resource.
fn server(telemetry: ServerTelemetry) -> BuiltServer {
    McpServer::new("otel-test")
        .telemetry(telemetry)
        .tool(
            "echo",
            "Echoes.",
            |args: arctern::server::extract::Args<Value>| async move { args.0.to_string() },
        )
        .tool("broken", "Fails.", || async {
            Err::<String, _>(ErrorObject::internal_error("the database is down"))
        })
        .tool("refuses", "Reports a tool error.", || async {
            CallToolResult::error("no such order")
        })
        .tool("panics", "Panics.", || async {
            if true {
                panic!("handler bug");
            }
            String::new()
        })
        .tool(
            "book",
            "Books a hotel in three rounds.",
            |q: Questions| async move {
                let city: String = q.answer(Ask::text("city", "Which city?"))?;
                let hotel: String =
                    q.answer(Ask::text("hotel", format!("Which hotel in {city}?")))?;
                Ok::<_, Interrupt>(format!("{city}/{hotel}"))
            },
        )
        .prompt("greet", "Greets.", || async { "Hello".to_owned() })
        .resource(ResourceSpec::new("file:///notes.txt", "notes"), || async {
            "notes".to_owned()
        })
        .build()
        .unwrap()
}

/// Answers every elicitation with `{key: "answer-<key>"}`.
fn answering() -> arctern::client::ClientBuilder {
    Client::builder().on_elicit(|q| async move {
        let key = q.key().to_owned();
        Ok(ElicitResult::accept([(
            key.clone(),
            format!("answer-{key}"),
        )]))
    })
}

// ------------------------------------------------------------------ server spans

#[tokio::test]
async fn one_server_span_per_request_named_and_attributed_by_the_conventions() {
    let otel = Otel::new();
    let client = Client::builder()
        .telemetry(None)
        .connect_memory(server(otel.server()))
        .await
        .unwrap();
    client.call_tool("echo", json!({"x": 1})).await.unwrap();
    client.get_prompt("greet", Value::Null).await.unwrap();
    client.read_resource("file:///notes.txt").await.unwrap();
    client.list_tools().await.unwrap();

    let spans = otel.of_kind(SpanKind::Server);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    for expected in [
        "tools/call echo",
        "prompts/get greet",
        "resources/read",
        "tools/list",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // The client sent no trace context: each span starts a trace of its own.
    assert!(spans.iter().all(|s| s.parent_span_id == SpanId::INVALID));
    let call = spans.iter().find(|s| s.name == "tools/call echo").unwrap();
    assert_eq!(
        attr_str(call, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attr_str(call, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(
        attr_str(call, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr_str(call, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr_str(call, "arctern.mcp.era").as_deref(), Some("modern"));
    assert!(attr(call, "jsonrpc.request.id").is_some());
    assert_eq!(
        attr_str(call, "arctern.mcp.result_type").as_deref(),
        Some("complete")
    );
    // No session on the 2026-07-28 wire; no error.
    assert!(attr(call, "mcp.session.id").is_none());
    assert!(attr(call, "error.type").is_none());
    assert_eq!(call.status, Status::Unset);

    let prompt = spans
        .iter()
        .find(|s| s.name == "prompts/get greet")
        .unwrap();
    assert_eq!(
        attr_str(prompt, "gen_ai.prompt.name").as_deref(),
        Some("greet")
    );
    let read = spans.iter().find(|s| s.name == "resources/read").unwrap();
    // The URI is an attribute, never part of the name (cardinality).
    assert_eq!(
        attr_str(read, "mcp.resource.uri").as_deref(),
        Some("file:///notes.txt")
    );
}

#[tokio::test]
async fn errors_are_classified_as_the_conventions_say() {
    let otel = Otel::new();
    let built = server(otel.server());
    let client = Client::builder()
        .telemetry(None)
        .connect_memory(built.clone())
        .await
        .unwrap();
    // The caller's faults: an unknown tool (-32602).
    let e = client.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(e.protocol_error().unwrap().code.0, -32602);
    // The server's faults: an internal error, a panicking handler.
    let e = client.call_tool("broken", json!({})).await.unwrap_err();
    assert_eq!(e.protocol_error().unwrap().code.0, -32603);
    let e = client.call_tool("panics", json!({})).await.unwrap_err();
    assert_eq!(e.protocol_error().unwrap().code.0, -32603);
    // A tool error is a result, but an error of the operation.
    let r = client.call_tool("refuses", json!({})).await.unwrap();
    assert!(r.is_tool_error());
    // An unknown method, straight at the engine (the client has no way to send one).
    let reply = built
        .clone()
        .handle_bytes(
            br#"{"jsonrpc":"2.0","id":"u-1","method":"tools/explode","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
            RequestOrigin::new(TransportKind::Stdio),
        )
        .await;
    drop(reply);

    let spans = otel.of_kind(SpanKind::Server);
    let find = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span {name}"))
    };
    let unknown_tool = find("tools/call nope");
    assert_eq!(
        attr_str(unknown_tool, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert!(attr(unknown_tool, "error.type").is_none());
    assert_eq!(unknown_tool.status, Status::Unset);

    let unknown_method = find("tools/explode");
    assert_eq!(
        attr_str(unknown_method, "rpc.response.status_code").as_deref(),
        Some("-32601")
    );
    assert!(attr(unknown_method, "error.type").is_none());
    assert_eq!(unknown_method.status, Status::Unset);
    assert_eq!(
        attr_str(unknown_method, "network.transport").as_deref(),
        Some("pipe")
    );
    assert_eq!(
        attr_str(unknown_method, "jsonrpc.request.id").as_deref(),
        Some("u-1")
    );

    for name in ["tools/call broken", "tools/call panics"] {
        let span = find(name);
        assert_eq!(
            attr_str(span, "error.type").as_deref(),
            Some("-32603"),
            "{name}"
        );
        assert_eq!(
            attr_str(span, "rpc.response.status_code").as_deref(),
            Some("-32603")
        );
        assert!(matches!(span.status, Status::Error { .. }), "{name}");
    }
    let refuses = find("tools/call refuses");
    assert_eq!(
        attr_str(refuses, "error.type").as_deref(),
        Some("tool_error")
    );
    assert!(attr(refuses, "rpc.response.status_code").is_none());
    assert!(matches!(refuses.status, Status::Error { .. }));

    // The operation histogram carries the same classification.
    let (_, points) = histogram(&otel.server_metrics(), "mcp.server.operation.duration");
    assert!(
        points
            .iter()
            .any(|p| has(&p.attributes, "error.type", "-32603")
                && has(&p.attributes, "gen_ai.tool.name", "broken"))
    );
    assert!(points.iter().any(|p| {
        has(&p.attributes, "rpc.response.status_code", "-32602")
            && !p
                .attributes
                .iter()
                .any(|kv| kv.key.as_str() == "error.type")
    }));
}

#[tokio::test]
async fn the_clients_context_in_meta_parents_the_server_span_or_is_only_linked() {
    let otel = Otel::new();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"00-{trace}-{parent}-01","baggage":"tenant=acme"}}}}}}"#
    );
    let trusting = server(otel.server());
    trusting
        .handle_bytes(request.as_bytes(), RequestOrigin::new(TransportKind::Http))
        .await;
    let public = server(otel.server().remote_parent(RemoteParent::LinkOnly));
    public
        .handle_bytes(request.as_bytes(), RequestOrigin::new(TransportKind::Http))
        .await;
    // An invalid traceparent is ignored: a new trace.
    let invalid = request.replace(trace, "not-a-trace-id-at-all-0000000000");
    trusting
        .handle_bytes(invalid.as_bytes(), RequestOrigin::new(TransportKind::Http))
        .await;

    let spans = otel.of_kind(SpanKind::Server);
    assert_eq!(spans.len(), 3);
    let (parented, linked, fresh) = (&spans[0], &spans[1], &spans[2]);
    assert_eq!(
        parented.span_context.trace_id(),
        TraceId::from_hex(trace).unwrap()
    );
    assert_eq!(parented.parent_span_id, SpanId::from_hex(parent).unwrap());
    assert!(parented.parent_span_is_remote);
    assert_eq!(
        attr_str(parented, "network.transport").as_deref(),
        Some("tcp")
    );
    assert_eq!(
        attr_str(parented, "network.protocol.name").as_deref(),
        Some("http")
    );

    assert_ne!(
        linked.span_context.trace_id(),
        TraceId::from_hex(trace).unwrap()
    );
    assert_eq!(linked.parent_span_id, SpanId::INVALID);
    assert_eq!(linked.links.links.len(), 1);
    assert_eq!(
        linked.links.links[0].span_context.span_id(),
        SpanId::from_hex(parent).unwrap()
    );

    assert_ne!(
        fresh.span_context.trace_id(),
        TraceId::from_hex(trace).unwrap()
    );
    assert_eq!(fresh.parent_span_id, SpanId::INVALID);
}

#[tokio::test]
async fn the_client_injects_each_requests_own_span_into_meta() {
    let otel = Otel::new();
    let seen: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
    let sink = seen.clone();
    let transport = arctern::transport::memory::MemoryTransport::new(server(ServerTelemetry::new(
        &otel.tracer,
        &otel.server_meter,
    )))
    .observe(move |message| {
        if let Ok(v) = serde_json::from_slice::<Value>(&message.body) {
            sink.lock().unwrap().push(v);
        }
    });
    let client = Client::builder()
        .telemetry(otel.client())
        .build(transport)
        .unwrap();
    // Baggage from the application's context passes through.
    let cx = Context::current_with_baggage(vec![KeyValue::new("tenant", "acme")]);
    opentelemetry::trace::FutureExt::with_context(client.call_tool("echo", json!({})), cx)
        .await
        .unwrap();

    let clients = otel.of_kind(SpanKind::Client);
    assert_eq!(clients.len(), 1);
    let client_span = &clients[0];
    assert_eq!(client_span.name, "tools/call echo");
    let sent = seen.lock().unwrap().clone();
    let call = sent
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call was sent");
    let traceparent = call["params"]["_meta"]["traceparent"].as_str().unwrap();
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-01",
            client_span.span_context.trace_id(),
            client_span.span_context.span_id()
        )
    );
    assert_eq!(call["params"]["_meta"]["baggage"], "tenant=acme");

    // The server span is the client span's child, in the same trace.
    let servers = otel.of_kind(SpanKind::Server);
    let server_span = servers
        .iter()
        .find(|s| s.name == "tools/call echo")
        .unwrap();
    assert_eq!(
        server_span.span_context.trace_id(),
        client_span.span_context.trace_id()
    );
    assert_eq!(
        server_span.parent_span_id,
        client_span.span_context.span_id()
    );

    // The client's operation histogram.
    let (unit, points) = histogram(&otel.client_metrics(), "mcp.client.operation.duration");
    assert_eq!(unit, "s");
    assert!(
        points
            .iter()
            .any(|p| has(&p.attributes, "gen_ai.tool.name", "echo"))
    );
}

#[tokio::test]
async fn without_an_sdk_nothing_is_injected() {
    // The global providers of this binary are never set: telemetry on, but no-op.
    let seen: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
    let sink = seen.clone();
    let transport = arctern::transport::memory::MemoryTransport::new(
        McpServer::new("plain")
            .tool("echo", "", || async { "ok" })
            .build()
            .unwrap(),
    )
    .observe(move |message| {
        if let Ok(v) = serde_json::from_slice::<Value>(&message.body) {
            sink.lock().unwrap().push(v);
        }
    });
    let client = Client::builder()
        .telemetry(ClientTelemetry::global())
        .build(transport)
        .unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    let sent = seen.lock().unwrap().clone();
    let call = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert!(call["params"]["_meta"].get("traceparent").is_none());
}

// ------------------------------------------------------------------ multi round-trip flows

#[tokio::test]
async fn a_three_round_flow_is_one_trace_with_rounds_linked_to_the_first() {
    let otel = Otel::new();
    let client = answering()
        .telemetry(otel.client())
        .connect_memory(server(otel.server()))
        .await
        .unwrap();
    let result = client.call_tool("book", json!({})).await.unwrap();
    assert!(!result.is_tool_error());

    let flows = otel.of_kind(SpanKind::Internal);
    assert_eq!(flows.len(), 1);
    let flow = &flows[0];
    assert_eq!(flow.name, "execute_tool book");
    assert_eq!(
        attr(flow, "arctern.mcp.flow.rounds").map(|v| v.as_str().into_owned()),
        Some("3".into())
    );
    let trace = flow.span_context.trace_id();

    let mut rounds: Vec<SpanData> = otel
        .of_kind(SpanKind::Client)
        .into_iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    rounds.sort_by_key(|s| s.start_time);
    assert_eq!(rounds.len(), 3);
    let mut ids = std::collections::HashSet::new();
    for (i, round) in rounds.iter().enumerate() {
        assert_eq!(round.parent_span_id, flow.span_context.span_id());
        assert_eq!(round.span_context.trace_id(), trace);
        assert_eq!(
            attr(round, "arctern.mcp.round").map(|v| v.as_str().into_owned()),
            Some(i.to_string())
        );
        ids.insert(attr_str(round, "jsonrpc.request.id").unwrap());
        // input_required is not an error.
        assert_eq!(round.status, Status::Unset);
    }
    assert_eq!(ids.len(), 3, "each round has its own request id");
    assert_eq!(
        attr_str(&rounds[0], "arctern.mcp.result_type").as_deref(),
        Some("input_required")
    );
    assert_eq!(
        attr_str(&rounds[2], "arctern.mcp.result_type").as_deref(),
        Some("complete")
    );

    let mut served: Vec<SpanData> = otel
        .of_kind(SpanKind::Server)
        .into_iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    served.sort_by_key(|s| s.start_time);
    assert_eq!(served.len(), 3);
    let first = served[0].span_context.span_id();
    for (i, (server_span, client_span)) in served.iter().zip(&rounds).enumerate() {
        assert_eq!(server_span.span_context.trace_id(), trace);
        assert_eq!(
            server_span.parent_span_id,
            client_span.span_context.span_id()
        );
        assert_eq!(
            attr(server_span, "arctern.mcp.round").map(|v| v.as_str().into_owned()),
            Some(i.to_string())
        );
        assert_eq!(server_span.status, Status::Unset);
        // (In process, the client's flow span is also the server's ambient context: it is
        // linked as the transport's context would be.)
        let flow_start = server_span
            .links
            .links
            .iter()
            .find(|l| has(&l.attributes, "arctern.mcp.link", "mrtr.flow_start"));
        if i == 0 {
            assert!(flow_start.is_none());
        } else {
            let link = flow_start.expect("a link to the first round");
            assert_eq!(link.span_context.span_id(), first, "round {i}");
        }
    }

    // Flow metrics: recorded once per flow, on both sides.
    let server_metrics = otel.server_metrics();
    let (_, rounds_hist) = histogram(&server_metrics, "arctern.mcp.flow.rounds");
    assert_eq!(rounds_hist.len(), 1);
    assert_eq!(rounds_hist[0].count, 1);
    assert_eq!(rounds_hist[0].sum, 3.0);
    let (unit, flow_hist) = histogram(&server_metrics, "arctern.mcp.flow.duration");
    assert_eq!(unit, "s");
    assert_eq!(flow_hist[0].count, 1);
    assert!(has(&flow_hist[0].attributes, "gen_ai.tool.name", "book"));
    let (_, ops) = histogram(&server_metrics, "mcp.server.operation.duration");
    let book_rounds: u64 = ops
        .iter()
        .filter(|p| has(&p.attributes, "gen_ai.tool.name", "book"))
        .map(|p| p.count)
        .sum();
    assert_eq!(book_rounds, 3);
    // The flow, human waits included, lasts at least as long as its rounds.
    let round_total: f64 = ops
        .iter()
        .filter(|p| has(&p.attributes, "gen_ai.tool.name", "book"))
        .map(|p| p.sum)
        .sum();
    assert!(
        flow_hist[0].sum + 0.002 >= round_total,
        "{} < {round_total}",
        flow_hist[0].sum
    );

    let (_, client_rounds) = histogram(&otel.client_metrics(), "arctern.mcp.flow.rounds");
    assert_eq!(client_rounds[0].count, 1);
    assert_eq!(client_rounds[0].sum, 3.0);
}

#[tokio::test]
async fn an_uninstrumented_client_still_gets_linked_rounds() {
    let otel = Otel::new();
    let client = answering()
        .telemetry(None)
        .connect_memory(server(otel.server()))
        .await
        .unwrap();
    client.call_tool("book", json!({})).await.unwrap();
    let mut served: Vec<SpanData> = otel
        .of_kind(SpanKind::Server)
        .into_iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    served.sort_by_key(|s| s.start_time);
    assert_eq!(served.len(), 3);
    // Three traces, tied together by links to the first round.
    let first = &served[0].span_context;
    for later in &served[1..] {
        assert_ne!(later.span_context.trace_id(), first.trace_id());
        assert_eq!(later.links.links[0].span_context.span_id(), first.span_id());
        assert_eq!(
            later.links.links[0].span_context.trace_id(),
            first.trace_id()
        );
    }
}

#[tokio::test]
async fn a_manual_flow_resumed_elsewhere_continues_its_trace() {
    let otel = Otel::new();
    let built = server(otel.server());
    let first = answering()
        .telemetry(otel.client())
        .connect_memory(built.clone())
        .await
        .unwrap();
    let app = otel.tracer.tracer("app");
    let span = app.start("checkout");
    let cx = Context::current_with_span(span);
    let app_span = cx.span().span_context().clone();
    let continuation = {
        let _entered = cx.clone().attach();
        let outcome = first
            .call_tool_once("book", json!({}), Continuation::new())
            .await
            .unwrap();
        let ClientOutcome::InputRequired(irr) = outcome else {
            panic!("the first round asks");
        };
        Continuation::after(&irr).with_response("city", ElicitResult::accept([("city", "Oslo")]))
    };
    cx.span().end();
    assert!(continuation.traceparent.is_some());
    // The continuation travels as JSON to another process, which has no span of its own.
    let saved = serde_json::to_string(&continuation).unwrap();
    let resumed: Continuation = serde_json::from_str(&saved).unwrap();
    let second = answering()
        .telemetry(otel.client())
        .connect_memory(built.clone())
        .await
        .unwrap();
    let outcome = second
        .call_tool_once("book", json!({}), resumed)
        .await
        .unwrap();
    assert!(matches!(outcome, ClientOutcome::InputRequired(_)));

    let mut rounds: Vec<SpanData> = otel
        .of_kind(SpanKind::Client)
        .into_iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    rounds.sort_by_key(|s| s.start_time);
    assert_eq!(rounds.len(), 2);
    for round in &rounds {
        assert_eq!(round.span_context.trace_id(), app_span.trace_id());
        assert_eq!(round.parent_span_id, app_span.span_id());
    }
}

#[tokio::test]
async fn a_rejected_state_is_counted_by_reason_and_the_client_sees_one_error() {
    let otel = Otel::new();
    let built = server(otel.server());
    let client = answering()
        .telemetry(otel.client())
        .connect_memory(built.clone())
        .await
        .unwrap();
    let ClientOutcome::InputRequired(irr) = client
        .call_tool_once("book", json!({}), Continuation::new())
        .await
        .unwrap()
    else {
        panic!("the first round asks");
    };
    let state = irr.request_state.clone().unwrap();
    // The sealed trace context is not readable from the token.
    let first_round = otel
        .of_kind(SpanKind::Server)
        .into_iter()
        .find(|s| s.name == "tools/call book")
        .unwrap();
    let trace_hex = first_round.span_context.trace_id().to_string();
    assert!(!state.contains(&trace_hex));
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&state)
        .unwrap();
    let trace_bytes = first_round.span_context.trace_id().to_bytes();
    assert!(!bytes.windows(16).any(|w| w == trace_bytes));

    // Tampered: one character in the middle changed (still base64url, no longer authentic).
    let mut chars: Vec<char> = state.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    // Another tool's arguments: a mismatch.
    let rounds = [
        (tampered, json!({})),
        (state.clone(), json!({"other": true})),
    ];
    for (token, arguments) in rounds {
        let next = Continuation {
            request_state: Some(token),
            ..Continuation::default()
        }
        .with_response("city", ElicitResult::accept([("city", "Oslo")]));
        let e = client
            .call_tool_once("book", arguments, next)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        let error = e.protocol_error().unwrap();
        assert_eq!(error.code.0, -32602);
        assert_eq!(error.message, arctern::state::INVALID_STATE_MESSAGE);
    }

    let rejected: Vec<SpanData> = otel
        .of_kind(SpanKind::Server)
        .into_iter()
        .filter(|s| attr_str(s, "rpc.response.status_code").as_deref() == Some("-32602"))
        .collect();
    assert_eq!(rejected.len(), 2);
    let mut reasons = Vec::new();
    for span in &rejected {
        // The caller's fault: not an error of the server.
        assert_eq!(span.status, Status::Unset);
        assert!(attr(span, "error.type").is_none());
        let event = span
            .events
            .events
            .iter()
            .find(|e| e.name == "arctern.mcp.request_state.rejected")
            .expect("a rejection event");
        let reason = event
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == "reason")
            .unwrap()
            .value
            .as_str()
            .into_owned();
        reasons.push(reason);
    }
    reasons.sort();
    assert_eq!(reasons, ["mismatch", "unverified"]);
    let counted = counter(&otel.server_metrics(), "arctern.mcp.request_state.rejected");
    for reason in ["mismatch", "unverified"] {
        let n: u64 = counted
            .iter()
            .filter(|(_, a)| has(a, "reason", reason))
            .map(|(n, _)| *n)
            .sum();
        assert_eq!(n, 1, "{reason}");
    }
    // The client counts every error as one.
    let client_errors = otel
        .of_kind(SpanKind::Client)
        .into_iter()
        .filter(|s| attr_str(s, "error.type").as_deref() == Some("-32602"))
        .count();
    assert_eq!(client_errors, 2);
}

// ------------------------------------------------------------------ metrics

#[tokio::test]
async fn the_histograms_use_the_conventions_units_and_buckets() {
    let otel = Otel::new();
    let client = Client::builder()
        .telemetry(otel.client())
        .connect_memory(server(otel.server()))
        .await
        .unwrap();
    client.read_resource("file:///notes.txt").await.unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    for (metrics, name) in [
        (otel.server_metrics(), "mcp.server.operation.duration"),
        (otel.client_metrics(), "mcp.client.operation.duration"),
    ] {
        let (unit, points) = histogram(&metrics, name);
        assert_eq!(unit, "s", "{name}");
        assert!(!points.is_empty());
        for point in &points {
            assert_eq!(point.bounds, DURATION_BUCKETS.to_vec(), "{name}");
            assert!(point.count >= 1);
            // The URI is opt-in on metrics: never recorded by default.
            assert!(
                !point
                    .attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "mcp.resource.uri"),
                "{name}"
            );
            assert!(has(&point.attributes, "mcp.protocol.version", "2026-07-28"));
        }
        assert!(
            points
                .iter()
                .any(|p| has(&p.attributes, "mcp.method.name", "resources/read"))
        );
    }
    assert_eq!(
        DURATION_BUCKETS,
        [
            0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0
        ]
    );
}

// ------------------------------------------------------------------ no SDK, or half of one

/// A `tools/call` of `echo` with this `_meta` (`traceparent` and `baggage` or none).
fn echo_request(id: u32, trace: Option<(&str, &str)>) -> String {
    let context = match trace {
        Some((trace, parent)) => {
            format!(r#","traceparent":"00-{trace}-{parent}-01","baggage":"tenant=acme""#)
        }
        None => String::new(),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{context}}}}}}}"#
    )
}

#[tokio::test]
async fn without_an_sdk_the_handler_still_runs_in_the_clients_trace_context() {
    // The global providers of this binary are never set: the server's tracer and meter are
    // the no-op ones, and after its first span the server knows it and starts no more.
    propagators();
    // What each call's handler saw: its trace and parent span, and the `tenant` baggage.
    type Seen = (TraceId, SpanId, Option<String>);
    let seen: Arc<std::sync::Mutex<Vec<Seen>>> = Arc::default();
    let sink = seen.clone();
    let server = McpServer::new("plain")
        .tool("echo", "", move || {
            let cx = Context::current();
            let sc = cx.span().span_context().clone();
            let tenant = cx.baggage().get("tenant").map(|v| v.to_string());
            sink.lock()
                .unwrap()
                .push((sc.trace_id(), sc.span_id(), tenant));
            async { "ok" }
        })
        .build()
        .unwrap();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    for (id, context) in [
        (1, Some((trace, parent))),
        (2, None),
        (3, Some((trace, parent))),
        (4, Some((trace, parent))),
    ] {
        let reply = server
            .handle_bytes(
                echo_request(id, context).as_bytes(),
                RequestOrigin::new(TransportKind::Http),
            )
            .await;
        let Reply::Message { body, .. } = reply else {
            panic!("request {id}: not one message");
        };
        let reply: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], "ok", "{reply}");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    let (trace, parent) = (
        TraceId::from_hex(trace).unwrap(),
        SpanId::from_hex(parent).unwrap(),
    );
    for i in [0, 2, 3] {
        assert_eq!(
            seen[i],
            (trace, parent, Some("acme".to_owned())),
            "request {i}"
        );
    }
    assert_eq!(seen[1], (TraceId::INVALID, SpanId::INVALID, None));
}

#[tokio::test]
async fn with_only_a_meter_or_only_a_tracer_installed_the_other_loses_nothing() {
    use opentelemetry::metrics::NoopMeterProvider;
    use opentelemetry::trace::noop::NoopTracerProvider;
    use opentelemetry_sdk::trace::Sampler;
    let otel = Otel::new();
    // Metrics only: every call is counted though no span is ever started.
    let metered = server(ServerTelemetry::new(
        &NoopTracerProvider::new(),
        &otel.server_meter,
    ));
    // Spans sampled out: the tracer is an SDK's all the same, and the metrics are kept.
    let sampled_out = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .with_simple_exporter(otel.spans.clone())
        .build();
    let unsampled = server(ServerTelemetry::new(&sampled_out, &otel.server_meter));
    // Spans only: every span keeps its attributes.
    let traced = server(ServerTelemetry::new(
        &otel.tracer,
        &NoopMeterProvider::new(),
    ));
    for built in [&metered, &unsampled, &traced] {
        for id in 1..=3 {
            built
                .handle_bytes(
                    echo_request(id, None).as_bytes(),
                    RequestOrigin::new(TransportKind::Http),
                )
                .await;
        }
    }
    let (_, points) = histogram(&otel.server_metrics(), "mcp.server.operation.duration");
    let echo: u64 = points
        .iter()
        .filter(|p| has(&p.attributes, "gen_ai.tool.name", "echo"))
        .map(|p| p.count)
        .sum();
    assert_eq!(echo, 6);
    let spans = otel.of_kind(SpanKind::Server);
    assert_eq!(spans.len(), 3);
    for span in &spans {
        assert_eq!(span.name, "tools/call echo");
        assert_eq!(attr_str(span, "gen_ai.tool.name").as_deref(), Some("echo"));
        assert_eq!(attr_str(span, "network.transport").as_deref(), Some("tcp"));
        assert!(attr(span, "jsonrpc.request.id").is_some());
    }
}

// ------------------------------------------------------------------ the legacy era

#[tokio::test]
async fn legacy_sessions_get_server_spans_and_a_session_duration() {
    let otel = Otel::new();
    let client = answering()
        .era(arctern::Era::Legacy)
        .telemetry(None)
        .connect_memory(server(otel.server()))
        .await
        .unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    // On a legacy session the shim asks the client itself: one request, one span.
    let booked = client.call_tool("book", json!({})).await.unwrap();
    assert!(!booked.is_tool_error());
    drop(client);

    let spans = otel.of_kind(SpanKind::Server);
    let echo = spans.iter().find(|s| s.name == "tools/call echo").unwrap();
    assert_eq!(attr_str(echo, "arctern.mcp.era").as_deref(), Some("legacy"));
    assert_eq!(
        attr_str(echo, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    let book: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    assert_eq!(book.len(), 1);
    assert_eq!(book[0].status, Status::Unset);

    // The session ends when its last handle goes: its duration is recorded then.
    let mut recorded = false;
    for _ in 0..50 {
        let metrics = otel.server_metrics();
        let found = metrics
            .iter()
            .flat_map(|rm| rm.scope_metrics())
            .flat_map(|sm| sm.metrics())
            .any(|m| m.name() == "mcp.server.session.duration");
        if found {
            let (unit, points) = histogram(&metrics, "mcp.server.session.duration");
            assert_eq!(unit, "s");
            assert_eq!(points[0].bounds, DURATION_BUCKETS.to_vec());
            assert!(has(
                &points[0].attributes,
                "mcp.protocol.version",
                "2025-11-25"
            ));
            recorded = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(recorded, "no session duration after the session ended");
}

/// A legacy session driven on the wire: `initialize`, then one message at a time.
async fn legacy_connection(
    server: &BuiltServer,
) -> arctern::server::connection::Connection<arctern::server::McpHandler> {
    let connection = server.connection(TransportKind::Other);
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "wire", "version": "1"}
        }
    });
    let reply = send(&connection, &init).await;
    assert!(
        matches!(reply, arctern::server::connection::Reply::Message { .. }),
        "initialize answered"
    );
    send(
        &connection,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    connection
}

async fn send(
    connection: &arctern::server::connection::Connection<arctern::server::McpHandler>,
    message: &Value,
) -> arctern::server::connection::Reply {
    connection
        .handle_bytes(
            message.to_string().as_bytes(),
            RequestOrigin::new(TransportKind::Other),
        )
        .await
}

#[tokio::test]
async fn the_legacy_shims_questions_are_client_spans_with_their_context_in_meta() {
    use arctern::server::connection::Reply;
    use futures::StreamExt;

    let otel = Otel::new();
    let server = server(otel.server());
    let connection = legacy_connection(&server).await;

    // Call `book` twice: the first time every question is answered, the second time the
    // client answers the first question with an error.
    let mut asked: Vec<Value> = Vec::new();
    for (call_id, fail) in [(2, false), (3, true)] {
        let call = json!({
            "jsonrpc": "2.0", "id": call_id, "method": "tools/call",
            "params": {"name": "book", "arguments": {}}
        });
        let Reply::Stream(mut stream) = send(&connection, &call).await else {
            panic!("a call that asks answers with a stream")
        };
        let last = loop {
            let next = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
                .await
                .expect("the server goes on")
                .expect("the stream ends with the call's answer");
            let message: Value = serde_json::from_slice(&next).unwrap();
            if message["method"] == "elicitation/create" {
                asked.push(message.clone());
                let key = message["params"]["_meta"][arctern::types::meta::INPUT_KEY_META_KEY]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let answer = if fail {
                    json!({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32603, "message": "the user's terminal is gone"}})
                } else {
                    json!({"jsonrpc": "2.0", "id": message["id"],
                           "result": {"action": "accept", "content": {key.clone(): format!("{key}!")}}})
                };
                send(&connection, &answer).await;
            } else if message["id"] == json!(call_id) {
                break message;
            }
        };
        if fail {
            assert!(last.get("error").is_some(), "{last}");
        } else {
            assert_eq!(
                last["result"]["content"][0]["text"], "city!/hotel!",
                "{last}"
            );
        }
    }
    connection.close();

    let calls: Vec<SpanData> = otel
        .of_kind(SpanKind::Server)
        .into_iter()
        .filter(|s| s.name == "tools/call book")
        .collect();
    assert_eq!(calls.len(), 2);
    let outgoing = otel.of_kind(SpanKind::Client);
    assert_eq!(outgoing.len(), 3, "one CLIENT span per question asked");
    assert_eq!(asked.len(), 3);
    for message in &asked {
        let id = message["id"].to_string();
        let span = outgoing
            .iter()
            .find(|s| attr_str(s, "jsonrpc.request.id").as_deref() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("a span for the server's request {id}"));
        assert_eq!(span.name, "elicitation/create");
        assert_eq!(
            attr_str(span, "mcp.method.name").as_deref(),
            Some("elicitation/create")
        );
        assert_eq!(
            attr_str(span, "mcp.protocol.version").as_deref(),
            Some("2025-11-25")
        );
        assert_eq!(attr_str(span, "arctern.mcp.era").as_deref(), Some("legacy"));
        // Under the call that asks, in its trace.
        let call = calls
            .iter()
            .find(|c| c.span_context.span_id() == span.parent_span_id)
            .expect("the parent is the asking call's SERVER span");
        assert_eq!(call.span_context.trace_id(), span.span_context.trace_id());
        // Its own context travelled in the request's `_meta`.
        assert_eq!(
            message["params"]["_meta"]["traceparent"],
            format!(
                "00-{}-{}-01",
                span.span_context.trace_id(),
                span.span_context.span_id()
            ),
            "{message}"
        );
    }
    let failed: Vec<&SpanData> = outgoing
        .iter()
        .filter(|s| attr_str(s, "error.type").is_some())
        .collect();
    assert_eq!(failed.len(), 1, "only the question answered with an error");
    assert_eq!(attr_str(failed[0], "error.type").as_deref(), Some("-32603"));
    assert_eq!(
        attr_str(failed[0], "rpc.response.status_code").as_deref(),
        Some("-32603")
    );
    assert!(matches!(failed[0].status, Status::Error { .. }));

    // The server's client-side histogram: one measurement per question.
    let (unit, points) = histogram(&otel.server_metrics(), "mcp.client.operation.duration");
    assert_eq!(unit, "s");
    let elicitations: Vec<&Point> = points
        .iter()
        .filter(|p| has(&p.attributes, "mcp.method.name", "elicitation/create"))
        .collect();
    assert_eq!(elicitations.iter().map(|p| p.count).sum::<u64>(), 3);
    assert!(
        elicitations
            .iter()
            .any(|p| has(&p.attributes, "error.type", "-32603") && p.count == 1)
    );
    assert_eq!(elicitations[0].bounds, DURATION_BUCKETS.to_vec());
}
