//! OTLP export of arctern's traces and metrics (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_*`).
//!
//! arctern instruments its servers and clients through the global OpenTelemetry providers
//! (the library's `otel` feature). This module installs them when export is asked for: an
//! OTLP/HTTP exporter (protobuf) per signal, sending over arctern's own HTTP client (the
//! same hyper connections and rustls as MCP traffic), a batch span processor and a periodic
//! metric reader, and the W3C trace-context and baggage propagators, so that client spans
//! are injected into `_meta` and server spans continue them. Nothing is installed, and
//! nothing is exported, when no endpoint is configured.
//!
//! Where to send, in order: `--otlp-endpoint URL` (the collector's base URL; `/v1/traces`
//! and `/v1/metrics` are added), then the standard variables
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (used as
//! they are) and `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL). `OTEL_SERVICE_NAME` names the
//! service (default `arctern-<command>`), `OTEL_EXPORTER_OTLP_PROTOCOL` must be
//! `http/protobuf` when set, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`
//! (milliseconds, default 10 000) and `OTEL_EXPORTER_OTLP_CERTIFICATE` (a PEM file of extra
//! roots for an HTTPS collector) apply, and `OTEL_SDK_DISABLED=true` turns off export from
//! the variables (the flag still exports).
//!
//! [`Telemetry::shutdown`] flushes what is buffered, so a short `arctern call` loses no span.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arctern::transport::http::client::Pool;
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Full, Limited};
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;

const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
const CERTIFICATE: &str = "OTEL_EXPORTER_OTLP_CERTIFICATE";
const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
/// The export timeout when `OTEL_EXPORTER_OTLP_TIMEOUT` is not set (the specification's).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// A collector's answer is a small status message; more is not read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// The telemetry options, global to every command.
#[derive(Args, Debug, Default)]
pub struct TelemetryArgs {
    /// Export traces and metrics over OTLP/HTTP (protobuf) to the collector at URL, such as
    /// http://127.0.0.1:4318 (/v1/traces and /v1/metrics are added). Without it, the
    /// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT
    /// variables are used when set; OTEL_SERVICE_NAME names the service.
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

/// One signal's export settings.
struct Signal {
    /// `traces` or `metrics`: the path `/v1/{name}` and the `OTEL_…_{NAME}_…` variables.
    name: &'static str,
}

impl Signal {
    const TRACES: Signal = Signal { name: "traces" };
    const METRICS: Signal = Signal { name: "metrics" };

    fn var(&self, what: &str) -> String {
        format!(
            "OTEL_EXPORTER_OTLP_{}_{what}",
            self.name.to_ascii_uppercase()
        )
    }

    /// Where this signal goes: `Some(Some(url))` for a URL given on the command line,
    /// `Some(None)` when the exporter takes it from the environment, `None` when it is not
    /// exported.
    fn endpoint(&self, flag: Option<&str>) -> Option<Option<String>> {
        if let Some(base) = flag {
            return Some(Some(format!(
                "{}/v1/{}",
                base.trim_end_matches('/'),
                self.name
            )));
        }
        let set = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        (set(&self.var("ENDPOINT")) || set(ENDPOINT)).then_some(None)
    }

    /// The signal's protocol variable, else the general one; only HTTP/protobuf is spoken.
    fn check_protocol(&self) -> Result<(), String> {
        for var in [self.var("PROTOCOL"), PROTOCOL.to_owned()] {
            if let Ok(value) = std::env::var(&var) {
                let value = value.trim();
                if value.is_empty() {
                    continue;
                }
                if value.eq_ignore_ascii_case("http/protobuf") {
                    return Ok(());
                }
                return Err(format!(
                    "{var}={value} is not supported: arctern exports OTLP over HTTP with \
                     protobuf only (http/protobuf)"
                ));
            }
        }
        Ok(())
    }

    fn timeout(&self) -> Duration {
        [self.var("TIMEOUT"), TIMEOUT.to_owned()]
            .iter()
            .find_map(|var| std::env::var(var).ok()?.trim().parse::<u64>().ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
    }
}

/// The installed providers, to flush and shut down when the command ends.
#[derive(Default)]
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

/// Installs the global providers when export is configured (for the command named
/// `command`, the default service name's suffix). Must run inside the Tokio runtime, before
/// any server or client is built.
pub fn start(args: &TelemetryArgs, command: &str) -> Result<Telemetry, String> {
    let disabled = std::env::var(SDK_DISABLED).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if disabled && args.otlp_endpoint.is_none() {
        return Ok(Telemetry::default());
    }
    let flag = args.otlp_endpoint.as_deref();
    if let Some(url) = flag {
        check_url(url)?;
    }
    let traces = Signal::TRACES.endpoint(flag);
    let metrics = Signal::METRICS.endpoint(flag);
    if traces.is_none() && metrics.is_none() {
        return Ok(Telemetry::default());
    }
    let pool = pool()?;
    let resource = resource(command);
    let mut telemetry = Telemetry::default();
    if let Some(endpoint) = traces {
        Signal::TRACES.check_protocol()?;
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(Exporter::new(&pool, Signal::TRACES.timeout()));
        if let Some(url) = endpoint {
            builder = builder.with_endpoint(url);
        }
        let exporter = builder
            .build()
            .map_err(|e| format!("OTLP trace export: {e}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.clone())
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]));
        telemetry.tracer = Some(provider);
    }
    if let Some(endpoint) = metrics {
        Signal::METRICS.check_protocol()?;
        let mut builder = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(Exporter::new(&pool, Signal::METRICS.timeout()));
        if let Some(url) = endpoint {
            builder = builder.with_endpoint(url);
        }
        let exporter = builder
            .build()
            .map_err(|e| format!("OTLP metric export: {e}"))?;
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        telemetry.meter = Some(provider);
    }
    Ok(telemetry)
}

impl Telemetry {
    /// Exports what is buffered and stops the providers. The exports run on this runtime,
    /// so the blocking shutdown waits on a blocking thread.
    pub async fn shutdown(self) {
        if self.tracer.is_none() && self.meter.is_none() {
            return;
        }
        let done = tokio::task::spawn_blocking(move || {
            if let Some(tracer) = self.tracer
                && let Err(e) = tracer.shutdown()
            {
                tracing::warn!("OTLP trace export at exit: {e}");
            }
            if let Some(meter) = self.meter
                && let Err(e) = meter.shutdown()
            {
                tracing::warn!("OTLP metric export at exit: {e}");
            }
        })
        .await;
        if let Err(e) = done {
            tracing::warn!("OTLP export at exit: {e}");
        }
    }
}

fn check_url(url: &str) -> Result<(), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("--otlp-endpoint {url:?}: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some() => Ok(()),
        _ => Err(format!(
            "--otlp-endpoint {url:?}: expected an http:// or https:// URL, such as http://127.0.0.1:4318"
        )),
    }
}

/// arctern's HTTP client, trusting `OTEL_EXPORTER_OTLP_CERTIFICATE` too when set.
fn pool() -> Result<Pool, String> {
    let mut builder = Pool::builder().max_connections(4);
    if let Some(file) = std::env::var_os(CERTIFICATE).filter(|f| !f.is_empty()) {
        builder = builder
            .add_root_certificates_file(&file)
            .map_err(|e| format!("{CERTIFICATE}={}: {e}", file.to_string_lossy()))?;
    }
    Ok(builder.build())
}

/// The SDK's resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), named
/// `arctern-<command>` when neither names the service.
fn resource(command: &str) -> Resource {
    let named = std::env::var(SERVICE_NAME).is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder
            .with_service_name(format!("arctern-{command}"))
            .build()
    }
}

/// The OTLP exporters' HTTP client: each export is sent with arctern's [`Pool`] on the
/// command's Tokio runtime (the SDK's batch processor and metric reader export from threads
/// of their own), within the export timeout.
struct Exporter {
    pool: Pool,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
    /// A failing collector is reported once, not at every export.
    warned: Arc<AtomicBool>,
}

impl Exporter {
    fn new(pool: &Pool, timeout: Duration) -> Exporter {
        Exporter {
            pool: pool.clone(),
            runtime: tokio::runtime::Handle::current(),
            timeout,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl HttpClient for Exporter {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let uri = request.uri().clone();
        let pool = self.pool.clone();
        let timeout = self.timeout;
        let sent = self.runtime.spawn(async move {
            tokio::time::timeout(timeout, async move {
                let response = pool.send(request.map(Full::new)).await?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, MAX_RESPONSE_BYTES)
                    .collect()
                    .await
                    .map_err(|e| format!("reading the collector's answer: {e}"))?
                    .to_bytes();
                Ok::<_, HttpError>(Response::from_parts(parts, body))
            })
            .await
            .map_err(|_| format!("no answer within {timeout:?}"))?
        });
        let outcome = match sent.await {
            Ok(outcome) => outcome,
            Err(e) => Err(format!("the export task stopped: {e}").into()),
        };
        let failure = match &outcome {
            Ok(r) if !r.status().is_success() => Some(format!("HTTP {}", r.status())),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        if let Some(failure) = failure
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!("OTLP export to {uri} failed: {failure}");
        }
        outcome
    }
}
