//! Trace context in `_meta` (SEP-414) between arctern and the Python reference SDK
//! (`mcp` 2.3.0), both directions: the Python client's context parents arctern's server
//! span, and arctern's client span is the context the Python server's tool runs under.
//!
//! The Python side has the OpenTelemetry API only (the SDK is not in the pinned
//! virtualenv): its spans are non-recording and carry their parent's ids, which is enough to
//! see what travelled (see `python/trace.py`). arctern's side is recorded with the SDK's
//! in-memory exporter.

mod common;

use std::process::Stdio;

use arctern::client::{Client, StdioCommand};
use arctern::otel::{ClientTelemetry, ServerTelemetry};
use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::transport::http::HttpServer;
use common::{PATIENCE, fixture, python, text};
use opentelemetry::global;
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Value, json};
use tokio::process::Command;

/// What arctern records: spans in memory.
fn tracing() -> (InMemorySpanExporter, SdkTracerProvider, SdkMeterProvider) {
    global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    let spans = InMemorySpanExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    (spans, tracer, SdkMeterProvider::builder().build())
}

#[tokio::test]
async fn the_python_clients_context_parents_arcterns_server_span() {
    let Some(python) = python() else { return };
    let (spans, tracer, meter) = tracing();
    let server = McpServer::new("arctern-trace")
        .telemetry(ServerTelemetry::new(&tracer, &meter))
        .tool(
            "echo",
            "Returns its text.",
            |Args(a): Args<Value>| async move { a["text"].as_str().unwrap_or_default().to_owned() },
        )
        .build()
        .unwrap();
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", 0))
        .listen()
        .await
        .unwrap();
    let url = bound.url().to_string();
    let serving = tokio::spawn(bound.serve_with_shutdown(std::future::pending()));

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let span_id = "00f067aa0ba902b7";
    let mut command = Command::new(&python);
    command
        .arg(fixture("trace.py"))
        .args(["client", &url, trace_id, span_id])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(PATIENCE, command.output())
        .await
        .expect("the Python client finishes in time")
        .expect("the Python client starts");
    serving.abort();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok echo"),
        "the Python client failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let finished = spans.get_finished_spans().unwrap();
    let echo = finished
        .iter()
        .find(|s| s.name == "tools/call echo")
        .unwrap_or_else(|| panic!("arctern's span of the call: {finished:?}"));
    assert_eq!(echo.span_kind, SpanKind::Server);
    assert_eq!(echo.span_context.trace_id().to_string(), trace_id);
    assert_eq!(echo.parent_span_id.to_string(), span_id);
}

#[tokio::test]
async fn arcterns_client_span_is_the_context_of_the_python_servers_tool() {
    let Some(python) = python() else { return };
    let (spans, tracer, meter) = tracing();
    let command = StdioCommand::new(&python)
        .arg(fixture("trace.py"))
        .arg("server");
    let client = Client::builder()
        .telemetry(ClientTelemetry::new(&tracer, &meter))
        .connect_stdio(command)
        .await
        .unwrap();
    let result = tokio::time::timeout(PATIENCE, client.call_tool("current_trace", json!({})))
        .await
        .expect("the Python server answers in time")
        .unwrap();
    client.close().await.unwrap();
    let seen = text(&result.content);

    let finished = spans.get_finished_spans().unwrap();
    let call = finished
        .iter()
        .find(|s| s.name == "tools/call current_trace" && s.span_kind == SpanKind::Client)
        .unwrap_or_else(|| panic!("arctern's CLIENT span of the call: {finished:?}"));
    assert_eq!(
        seen,
        format!(
            "{}-{}",
            call.span_context.trace_id(),
            call.span_context.span_id()
        ),
        "the Python tool ran under arctern's client span"
    );
}
