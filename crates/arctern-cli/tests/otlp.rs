//! OTLP export end to end: `arctern serve` and `arctern call` as child processes export their
//! traces and metrics over OTLP/HTTP (protobuf) to a receiver in this test, on loopback. The
//! receiver decodes the export requests with the OpenTelemetry protocol's own types.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

use common::{ARCTERN, run_with, runtime, scratch};

/// How long the children may take to start, answer and export.
const DEADLINE: Duration = Duration::from_secs(60);

/// The semantic conventions' duration buckets (arctern::otel::DURATION_BUCKETS).
const BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// What the receiver was sent.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Content types of the requests (the exporter speaks protobuf).
    content_types: Vec<String>,
}

type Shared = Arc<Mutex<Received>>;

/// An OTLP/HTTP receiver on 127.0.0.1: its base URL and what it received. It serves until
/// the test process ends.
fn receiver() -> (String, Shared) {
    let received = Shared::default();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let url = runtime().block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    });
    (url, received)
}

fn content_type(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// An empty protobuf message is the export service's success answer.
fn ok() -> axum::response::Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::<u8>::new(),
    )
        .into_response()
}

async fn traces(
    State(received): State<Shared>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            let mut r = received.lock().unwrap();
            r.content_types.push(content_type(&headers));
            r.traces.push(request);
            ok()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

async fn metrics(
    State(received): State<Shared>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    match ExportMetricsServiceRequest::decode(body) {
        Ok(request) => {
            let mut r = received.lock().unwrap();
            r.content_types.push(content_type(&headers));
            r.metrics.push(request);
            ok()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

/// A span with the service that exported it.
#[derive(Debug, Clone)]
struct Seen {
    service: String,
    span: Span,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<String> {
        attr(&self.span.attributes, key)
    }

    fn kind(&self) -> SpanKind {
        SpanKind::try_from(self.span.kind).unwrap_or(SpanKind::Unspecified)
    }
}

fn text(value: &Option<AnyValue>) -> Option<String> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| text(&kv.value))
}

fn spans(received: &Shared) -> Vec<Seen> {
    let r = received.lock().unwrap();
    let mut out = Vec::new();
    for request in &r.traces {
        for rs in &request.resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|res| attr(&res.attributes, "service.name"))
                .unwrap_or_default();
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    out.push(Seen {
                        service: service.clone(),
                        span: span.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Every metric received, with its service.
fn metric_list(received: &Shared) -> Vec<(String, Metric)> {
    let r = received.lock().unwrap();
    let mut out = Vec::new();
    for request in &r.metrics {
        for rm in &request.resource_metrics {
            let service = rm
                .resource
                .as_ref()
                .and_then(|res| attr(&res.attributes, "service.name"))
                .unwrap_or_default();
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    out.push((service.clone(), m.clone()));
                }
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `arctern serve` exporting telemetry, stopped with SIGTERM (a graceful stop, which flushes)
/// or killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(env: &[(&str, &str)], extra: &[&str]) -> Served {
        let mut child = Command::new(ARCTERN)
            .args(["serve", "--port", "0"])
            .args(extra)
            .env_remove("OTEL_SERVICE_NAME")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start arctern serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("arctern serve printed its URL")
                .expect("read arctern serve's stderr");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Served { child, url }
    }

    /// SIGTERM, then waits (bounded) for the process to end; its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM");
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll arctern serve") {
                return status;
            }
            assert!(Instant::now() < deadline, "arctern serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_and_call_export_one_trace_and_the_duration_metrics_over_otlp() {
    let (otlp, received) = receiver();
    // The server takes its collector from the standard variable, the client from the flag;
    // the client's signal-specific variable points nowhere and the flag wins over it.
    let served = Served::start(&[("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str())], &[]);
    let dir = scratch("otlp-e2e");
    let call = run_with(
        &dir,
        &[
            "call",
            &served.url,
            "book_hotel",
            "--arg",
            "city=Oslo",
            "--answer",
            "hotel=osl-opera",
            "--otlp-endpoint",
            &otlp,
        ],
        &[
            ("OTEL_SERVICE_NAME", "otlp-e2e-client"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:9/v1/traces",
            ),
        ],
    );
    assert_eq!(call.code, 0, "{call:?}");
    assert_eq!(call.stdout, "Booked Opera Lodge in Oslo.\n");
    // `arctern call` has exited: its spans and metrics were flushed on the way out.
    let client: Vec<Seen> = spans(&received)
        .into_iter()
        .filter(|s| s.service == "otlp-e2e-client")
        .collect();
    assert!(
        !client.is_empty(),
        "the client's spans arrived before it exited: {call:?}"
    );
    let status = served.stop();
    assert!(
        status.success(),
        "arctern serve stopped cleanly: {status:?}"
    );

    let all = spans(&received);
    let server: Vec<&Seen> = all
        .iter()
        .filter(|s| s.service == "arctern-serve")
        .collect();
    let client: Vec<&Seen> = all
        .iter()
        .filter(|s| s.service == "otlp-e2e-client")
        .collect();
    let names = |v: &[&Seen]| {
        v.iter()
            .map(|s| format!("{} {:?}", s.span.name, s.kind()))
            .collect::<Vec<_>>()
    };

    // The client: a flow span around two CLIENT rounds, and the tools/list before.
    let flow: Vec<&&Seen> = client
        .iter()
        .filter(|s| s.span.name == "execute_tool book_hotel")
        .collect();
    assert_eq!(flow.len(), 1, "one flow span: {:?}", names(&client));
    let flow = flow[0];
    assert_eq!(flow.kind(), SpanKind::Internal);
    assert_eq!(flow.attr("arctern.mcp.flow.rounds").as_deref(), Some("2"));
    let mut rounds: Vec<&&Seen> = client
        .iter()
        .filter(|s| s.span.name == "tools/call book_hotel")
        .collect();
    rounds.sort_by_key(|s| s.attr("arctern.mcp.round"));
    assert_eq!(rounds.len(), 2, "two client rounds: {:?}", names(&client));
    for (i, round) in rounds.iter().enumerate() {
        assert_eq!(round.kind(), SpanKind::Client);
        assert_eq!(round.span.trace_id, flow.span.trace_id);
        assert_eq!(round.span.parent_span_id, flow.span.span_id);
        assert_eq!(round.attr("mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(
            round.attr("gen_ai.tool.name").as_deref(),
            Some("book_hotel")
        );
        assert_eq!(
            round.attr("gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(
            round.attr("mcp.protocol.version").as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(round.attr("arctern.mcp.round"), Some(i.to_string()));
        assert!(round.attr("jsonrpc.request.id").is_some(), "{round:?}");
    }
    assert_eq!(
        rounds[0].attr("arctern.mcp.result_type").as_deref(),
        Some("input_required")
    );
    assert_eq!(
        rounds[1].attr("arctern.mcp.result_type").as_deref(),
        Some("complete")
    );
    assert!(
        client
            .iter()
            .any(|s| s.span.name == "tools/list" && s.kind() == SpanKind::Client),
        "{:?}",
        names(&client)
    );

    // The server: a SERVER span per round, each the child of the client's round (the
    // context travelled in `_meta`), all in the flow's one trace.
    let server_rounds: Vec<&&Seen> = server
        .iter()
        .filter(|s| s.span.name == "tools/call book_hotel")
        .collect();
    assert_eq!(
        server_rounds.len(),
        2,
        "two server rounds: {:?}",
        names(&server)
    );
    for client_round in &rounds {
        let id = client_round.attr("jsonrpc.request.id");
        let twin = server_rounds
            .iter()
            .find(|s| s.attr("jsonrpc.request.id") == id)
            .unwrap_or_else(|| panic!("a server span for request {id:?}"));
        assert_eq!(twin.kind(), SpanKind::Server);
        assert_eq!(
            hex(&twin.span.trace_id),
            hex(&flow.span.trace_id),
            "one trace across client and server"
        );
        assert_eq!(
            hex(&twin.span.parent_span_id),
            hex(&client_round.span.span_id),
            "the server span's parent is the client's round span"
        );
        assert_eq!(twin.attr("mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(twin.attr("gen_ai.tool.name").as_deref(), Some("book_hotel"));
        assert_eq!(
            twin.attr("gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(
            twin.attr("mcp.protocol.version").as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(twin.attr("network.transport").as_deref(), Some("tcp"));
        assert_eq!(twin.attr("network.protocol.name").as_deref(), Some("http"));
        assert_eq!(
            twin.attr("arctern.mcp.round"),
            client_round.attr("arctern.mcp.round")
        );
        assert_eq!(twin.attr("error.type"), None);
    }
    // The second round links to the first (the flow start sealed in the request state).
    let first = server_rounds
        .iter()
        .find(|s| s.attr("arctern.mcp.round").as_deref() == Some("0"))
        .expect("round 0 on the server");
    let second = server_rounds
        .iter()
        .find(|s| s.attr("arctern.mcp.round").as_deref() == Some("1"))
        .expect("round 1 on the server");
    assert!(
        second
            .span
            .links
            .iter()
            .any(|l| l.span_id == first.span.span_id && l.trace_id == first.span.trace_id),
        "round 1 links to round 0: {:?}",
        second.span.links
    );

    // Metrics: both operation-duration histograms, in seconds, with the conventions'
    // buckets and the tool's name.
    let metrics = metric_list(&received);
    for (service, name) in [
        ("otlp-e2e-client", "mcp.client.operation.duration"),
        ("arctern-serve", "mcp.server.operation.duration"),
    ] {
        let found: Vec<&Metric> = metrics
            .iter()
            .filter(|(s, m)| s == service && m.name == name)
            .map(|(_, m)| m)
            .collect();
        assert!(!found.is_empty(), "{name} from {service}");
        let mut tool_points = 0;
        for m in found {
            assert_eq!(m.unit, "s", "{name}");
            let Some(metric::Data::Histogram(h)) = &m.data else {
                panic!("{name} is a histogram: {m:?}")
            };
            for p in &h.data_points {
                assert_eq!(p.explicit_bounds, BUCKETS, "{name}");
                if attr(&p.attributes, "gen_ai.tool.name").as_deref() == Some("book_hotel") {
                    assert_eq!(
                        attr(&p.attributes, "mcp.method.name").as_deref(),
                        Some("tools/call")
                    );
                    tool_points += p.count;
                }
            }
        }
        assert_eq!(tool_points, 2, "{name}: one measurement per round");
    }
    let server_flow = metrics
        .iter()
        .any(|(s, m)| s == "arctern-serve" && m.name == "arctern.mcp.flow.rounds");
    assert!(server_flow, "the server's flow-rounds histogram");

    let r = received.lock().unwrap();
    assert!(
        r.content_types
            .iter()
            .all(|c| c == "application/x-protobuf"),
        "{:?}",
        r.content_types
    );
}

#[test]
fn an_unsupported_protocol_or_a_bad_endpoint_is_a_usage_error() {
    let dir = scratch("otlp-usage");
    let r = run_with(
        &dir,
        &["tools", "http://127.0.0.1:9/mcp"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"),
        "{r:?}"
    );
    let r = run_with(
        &dir,
        &[
            "tools",
            "http://127.0.0.1:9/mcp",
            "--otlp-endpoint",
            "127.0.0.1:4318",
        ],
        &[],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--otlp-endpoint"), "{r:?}");
    // Every command documents the flag and the variables.
    for command in ["serve", "call"] {
        let r = run_with(&dir, &[command, "--help"], &[]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(
            r.stdout.contains("--otlp-endpoint <URL>")
                && r.stdout.contains("OTEL_EXPORTER_OTLP_ENDPOINT"),
            "{r:?}"
        );
    }
}

#[test]
fn a_collector_that_is_down_costs_a_warning_not_the_command() {
    let served = Served::start(&[], &[]);
    // A port nothing listens on: the export fails, the call does not.
    let dir = scratch("otlp-down");
    let r = run_with(
        &dir,
        &[
            "call",
            &served.url,
            "echo",
            "--arg",
            "text=hi",
            "--otlp-endpoint",
            "http://127.0.0.1:9",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "hi\n");
    assert!(
        r.stderr.contains("OTLP export to http://127.0.0.1:9/v1/"),
        "{r:?}"
    );
}
