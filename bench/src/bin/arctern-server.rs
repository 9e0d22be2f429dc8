//! The arctern server of the benchmark, built with `McpServer` the way a user would: `echo`
//! and `confirm` (the benchmark contract); with `--many`, `echo` and 99 generated tools; with
//! `--listen`, `echo` and `publish`, with resources (and `resources.subscribe`) enabled (the
//! open-streams scenario: `publish {uri}` announces `notifications/resources/updated` for
//! `uri` to every open `subscriptions/listen` stream subscribed to it, through the server's
//! `ChangeNotifier`).
//!
//! ```text
//! arctern-server [--many | --listen] (--port N [--tls-cert PEM --tls-key PEM] | --stdio)
//! arctern-server --in-process (echo | round1 | round2) [--iterations N]
//!     built with the otel feature, both also take [--otel (noop | sdk | disabled)]
//! ```
//!
//! With `--tls-cert` and `--tls-key` it serves HTTPS with arctern's built-in TLS
//! (`HttpServer::tls`, rustls on ring), otherwise the same as `serve_http`.
//!
//! `--in-process` serves nothing: it feeds the built server the load generator's request
//! bytes `N` times through `Server::handle_bytes` (the engine's entry point, with the HTTP
//! transport's mirrored headers), on a current-thread runtime, checks the last reply, and
//! prints the time per request. It leaves out HTTP and the kernel, which is what a profiler
//! wants to see (`valgrind --tool=callgrind`, `perf record`): `echo` is one echo call,
//! `round1` the first round of `confirm` (asks, seals the state), `round2` its retry with the
//! answer and that state (opens and checks it, runs the body).
//!
//! Built with `--features otel`, arctern's OpenTelemetry instrumentation is compiled in and
//! `--otel` says what it reports to: `noop` (the default) installs nothing, so the server's
//! spans and instruments come from the global no-op providers; `sdk` installs what an
//! application would in production (an SDK tracer provider with a batch span processor, an
//! SDK meter provider with a periodic reader, the W3C trace-context propagator) with
//! exporters that drop what they receive, so the cost measured is arctern's instrumentation
//! and the SDK's own, not an exporter's; `disabled` turns the instrumentation off in the
//! server's configuration (`McpServer::telemetry(None)`).

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use arctern::server::connection::{Reply, RequestOrigin, WireHeaders};
use arctern::server::extract::{Args, State};
use arctern::server::{ChangeNotifier, McpHandler, McpServer, Server};
use arctern_bench::contract;
use arctern_bench::many::*;
use clap::Parser;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Parser)]
#[command(about = "arctern benchmark server")]
struct Cli {
    /// Port to listen on (127.0.0.1).
    #[arg(long, required_unless_present_any = ["stdio", "in_process"])]
    port: Option<u16>,
    /// Serve on stdin/stdout instead.
    #[arg(long)]
    stdio: bool,
    /// Register `echo` and 99 generated tools instead of `echo` and `confirm`.
    #[arg(long, conflicts_with = "listen")]
    many: bool,
    /// Register `echo` and `publish` and enable resources (with `resources.subscribe`) instead.
    #[arg(long)]
    listen: bool,
    /// Serve HTTPS with this certificate chain (PEM, leaf first).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Feed one kind of request to the server in process instead of serving.
    #[arg(long, value_enum, conflicts_with_all = ["port", "stdio", "many", "listen"])]
    in_process: Option<InProcess>,
    /// Requests to feed with `--in-process`.
    #[arg(long, default_value_t = 100_000)]
    iterations: u64,
    /// What arctern's OpenTelemetry instrumentation reports to.
    #[cfg(feature = "otel")]
    #[arg(long, value_enum, default_value_t = otel::Otel::Noop)]
    otel: otel::Otel,
}

/// What `--in-process` feeds the server.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum InProcess {
    /// `tools/call echo`.
    Echo,
    /// Round 1 of `confirm`: `input_required` with a sealed state.
    Round1,
    /// Round 2 of `confirm`: the retry with the answer and the state of one round 1.
    Round2,
}

/// Arguments of `publish`.
#[derive(Deserialize, JsonSchema)]
struct PublishArg {
    /// The resource that changed.
    uri: String,
}

/// The server's change notifier, set once the server is built (`publish` needs it, and it
/// exists only then).
type Notifier = Arc<OnceLock<ChangeNotifier>>;

async fn publish(State(notifier): State<Notifier>, Args(a): Args<PublishArg>) -> String {
    match notifier.get() {
        Some(n) => {
            n.resource_updated(a.uri);
            "published".into()
        }
        None => "not ready".into(),
    }
}

include!(concat!(env!("OUT_DIR"), "/many_arctern.rs"));

fn server(cli: &Cli, notifier: Notifier) -> McpServer<Notifier> {
    let server = McpServer::with_state("arctern-bench", notifier)
        .version(env!("CARGO_PKG_VERSION"))
        .tool("echo", contract::ECHO, contract::echo);
    #[cfg(feature = "otel")]
    let server = match cli.otel {
        otel::Otel::Disabled => server.telemetry(None),
        otel::Otel::Noop | otel::Otel::Sdk => server,
    };
    if cli.many {
        register_many(server)
    } else if cli.listen {
        server
            .tool(
                "publish",
                "Announces that a resource changed to every listen stream subscribed to it.",
                publish,
            )
            .enable_resources()
            // The open-streams scenario holds 10,000 and more (the default allows 1,024).
            .max_listen_streams(1_000_000)
    } else {
        server.tool("confirm", contract::CONFIRM, contract::confirm)
    }
}

/// Checks the last reply of an `--in-process` loop.
type Check = fn(&[u8]) -> Result<(), String>;

/// The `--in-process` loop; see the module documentation.
fn in_process(
    server: Server<McpHandler<Notifier>>,
    mode: InProcess,
    iterations: u64,
) -> Result<(), String> {
    use arctern_bench::wire;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let origin = |tool: &str| {
        let mut headers = WireHeaders::new();
        headers.protocol_version = Some(arctern_bench::PROTOCOL_VERSION.into());
        headers.method = Some("tools/call".into());
        headers.name = Some(Ok(tool.into()));
        RequestOrigin::http(headers, hyper::http::Extensions::new())
    };
    let text = "c0-1";
    runtime.block_on(async {
        let call = async |tool: &str, body: &[u8]| -> Result<Vec<u8>, String> {
            match server.handle_bytes(body, origin(tool)).await {
                Reply::Message { body, .. } => Ok(body.to_vec()),
                other => Err(format!("unexpected reply {other:?}")),
            }
        };
        let (tool, body, check): (_, _, Check) = match mode {
            InProcess::Echo => (
                "echo",
                wire::tools_call_body(1, "echo", text, None),
                |reply| wire::check_text_result(reply, 1, "c0-1"),
            ),
            InProcess::Round1 => (
                "confirm",
                wire::tools_call_body(1, "confirm", text, None),
                |reply| wire::check_confirm_round1(reply, 1).map(drop),
            ),
            InProcess::Round2 => {
                let first =
                    call("confirm", &wire::tools_call_body(1, "confirm", text, None)).await?;
                let state = wire::check_confirm_round1(&first, 1)?;
                (
                    "confirm",
                    wire::tools_call_body(1, "confirm", text, Some(&state)),
                    |reply| wire::check_text_result(reply, 1, "c0-1"),
                )
            }
        };
        let started = std::time::Instant::now();
        let mut last = Vec::new();
        for _ in 0..iterations {
            last = call(tool, &body).await?;
        }
        let elapsed = started.elapsed();
        if iterations > 0 {
            check(&last)?;
            println!(
                "{iterations} requests, {:.2} µs per request",
                elapsed.as_secs_f64() * 1e6 / iterations as f64
            );
        }
        Ok(())
    })
}

async fn serve(cli: &Cli) -> Result<(), String> {
    let notifier = Notifier::default();
    let server = server(cli, notifier.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let _ = notifier.set(server.change_notifier());
    let served = match (cli.port, &cli.tls_cert, &cli.tls_key) {
        (Some(port), Some(cert), Some(key)) if !cli.stdio => {
            arctern::transport::http::HttpServer::new(server)
                .bind(("127.0.0.1", port))
                .tls(arctern::transport::http::TlsConfig::from_pem_files(
                    cert, key,
                ))
                .serve()
                .await
        }
        (Some(port), _, _) if !cli.stdio => server.serve_http(("127.0.0.1", port)).await,
        _ => server.serve_stdio().await,
    };
    served.map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "otel")]
    let providers = otel::install(cli.otel);
    let done = match cli.in_process {
        Some(mode) => server(&cli, Notifier::default())
            .build()
            .map_err(|e| e.to_string())
            .and_then(|server| in_process(server, mode, cli.iterations)),
        // What `#[tokio::main]` builds.
        None => tokio::runtime::Runtime::new()
            .map_err(|e| e.to_string())
            .and_then(|runtime| runtime.block_on(serve(&cli))),
    };
    // Exports what the batch processor and the reader still hold, as an application does
    // when it stops.
    #[cfg(feature = "otel")]
    let done = done.and(providers.map_or(Ok(()), otel::Providers::shutdown));
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arctern-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The OpenTelemetry side of `--otel` (feature `otel`).
#[cfg(feature = "otel")]
mod otel {
    use arctern::otel::api::global;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::data::ResourceMetrics;
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
    use opentelemetry_sdk::metrics::{SdkMeterProvider, Temporality};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
    use std::time::Duration;

    /// What arctern's instrumentation reports to.
    #[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    pub enum Otel {
        /// Nothing installed: the global no-op providers.
        Noop,
        /// SDK providers (batch span processor, periodic metric reader) with exporters that
        /// drop what they receive.
        Sdk,
        /// The server's instrumentation turned off (`McpServer::telemetry(None)`).
        Disabled,
    }

    /// An exporter that drops every span and every metric it is given.
    #[derive(Debug)]
    struct Discard;

    impl SpanExporter for Discard {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            drop(batch);
            Ok(())
        }
    }

    impl PushMetricExporter for Discard {
        async fn export(&self, _: &ResourceMetrics) -> OTelSdkResult {
            Ok(())
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
        fn temporality(&self) -> Temporality {
            Temporality::Cumulative
        }
    }

    /// The SDK providers `--otel sdk` installed, to shut down at the end.
    pub struct Providers {
        tracer: SdkTracerProvider,
        meter: SdkMeterProvider,
    }

    impl Providers {
        /// Flushes and stops both providers.
        pub fn shutdown(self) -> Result<(), String> {
            let traces = self.tracer.shutdown();
            let metrics = self.meter.shutdown();
            traces
                .and(metrics)
                .map_err(|e| format!("OpenTelemetry shutdown: {e}"))
        }
    }

    /// Installs the global providers `otel` asks for, before the server is built.
    pub fn install(otel: Otel) -> Option<Providers> {
        if otel != Otel::Sdk {
            return None;
        }
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(Discard)
            .build();
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(Discard)
            .build();
        global::set_text_map_propagator(TraceContextPropagator::new());
        global::set_tracer_provider(tracer.clone());
        global::set_meter_provider(meter.clone());
        Some(Providers { tracer, meter })
    }
}
