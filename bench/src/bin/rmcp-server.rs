//! The rmcp 3.11 server of the benchmark, in its fair configuration (the fastest setup a
//! careful user would choose, following the findings of the rmcp measurement):
//!
//! * `TCP_NODELAY` on every accepted socket;
//! * JSON replies (`json_response`), no legacy sessions;
//! * the tool router built **once** and shared (`#[tool_handler(router = self.router)]`
//!   over an `Arc`), instead of the default that rebuilds it on every call;
//! * the `confirm` state sealed with rmcp's `RequestStateCodec` (HMAC-SHA256, a 300 s TTL,
//!   associated data binding it to the tool and its argument), codec created once;
//! * the streamable HTTP service driven by hyper directly (no router in front).
//!
//! With `--listen` it registers `echo` and `publish` and advertises `resources.subscribe`
//! (the open-streams scenario). rmcp leaves the fan-out of changes to the server: its
//! `ServerHandler::listen` runs once per open `subscriptions/listen` stream, after the SDK
//! has sent the acknowledgement. Here each stream waits on one `tokio::sync::broadcast`
//! channel shared by the server and forwards every update through its `SubscriptionSink`
//! (which checks the accepted filter and stamps the subscription id); `publish` sends on
//! that channel.
//!
//! With `--tls-cert` and `--tls-key` it serves HTTPS: the accepted socket goes through
//! `tokio-rustls` with the same rustls configuration as arctern's built-in TLS (ring, TLS 1.2
//! and 1.3, ALPN `http/1.1`), then to the same hyper connection as over plain HTTP. rmcp has
//! no TLS of its own; this is the thinnest way to put it behind rustls.
//!
//! ```text
//! rmcp-server [--many | --listen] (--port N [--tls-cert PEM --tls-key PEM] | --stdio)
//! ```

use std::io::Read as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use arctern_bench::many::*;
use clap::Parser;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, Implementation, InputRequest, InputRequests, InputRequiredResult,
    RequestStateCodec, SealOptions, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::SubscriptionContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService, stdio_pipes};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::net::TcpListener;

#[derive(Parser)]
#[command(about = "rmcp benchmark server")]
struct Cli {
    /// Port to listen on (127.0.0.1).
    #[arg(long, required_unless_present = "stdio")]
    port: Option<u16>,
    /// Serve on stdin/stdout instead.
    #[arg(long)]
    stdio: bool,
    /// Register `echo` and 99 generated tools instead of `echo` and `confirm`.
    #[arg(long, conflicts_with = "listen")]
    many: bool,
    /// Register `echo` and `publish` and advertise `resources.subscribe` instead.
    #[arg(long)]
    listen: bool,
    /// Serve HTTPS with this certificate chain (PEM, leaf first).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
}

/// Updates queued for the listen streams; a stream further behind skips the ones it missed.
const UPDATES_BUFFER: usize = 64;

/// How long a sealed `confirm` state stays valid.
const STATE_TTL: Duration = Duration::from_secs(300);

/// Arguments of `echo` and `confirm`.
#[derive(Deserialize, JsonSchema)]
struct TextArg {
    /// Any text.
    text: String,
}

/// Arguments of `publish`.
#[derive(Deserialize, JsonSchema)]
struct PublishArg {
    /// The resource that changed.
    uri: String,
}

/// The server: everything expensive is built once and shared by every request's clone.
#[derive(Clone)]
struct RmcpBench {
    router: Arc<ToolRouter<RmcpBench>>,
    codec: Arc<RequestStateCodec>,
    confirm_schema: Arc<ElicitationSchema>,
    /// Whether `resources.subscribe` is advertised and `subscriptions/listen` served.
    listen: bool,
    /// Resource updates for the open listen streams (URIs).
    updates: tokio::sync::broadcast::Sender<Arc<str>>,
}

impl RmcpBench {
    fn new(cli: &Cli) -> Result<RmcpBench, Box<dyn std::error::Error>> {
        let router = if cli.many {
            Self::echo_router() + Self::many_router()
        } else if cli.listen {
            Self::echo_router() + Self::publish_router()
        } else {
            Self::echo_router() + Self::confirm_router()
        };
        // A fresh random key per process, like the other servers' defaults.
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
        Ok(RmcpBench {
            router: Arc::new(router),
            codec: Arc::new(RequestStateCodec::try_new(key.to_vec())?),
            confirm_schema: Arc::new(ElicitationSchema::builder().required_bool("ok").build()?),
            listen: cli.listen,
            updates: tokio::sync::broadcast::channel(UPDATES_BUFFER).0,
        })
    }

    fn capabilities(&self) -> ServerCapabilities {
        if self.listen {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        }
    }
}

/// What the `confirm` state is bound to: the tool and its argument.
fn confirm_binding(text: &str) -> Vec<u8> {
    let mut ad = Vec::with_capacity(20 + text.len());
    ad.extend_from_slice(b"tools/call\0confirm\0");
    ad.extend_from_slice(text.as_bytes());
    ad
}

fn invalid_state() -> ErrorData {
    ErrorData::invalid_params("Invalid or expired requestState", None)
}

#[tool_router(router = echo_router)]
impl RmcpBench {
    #[tool(description = "Returns its text.")]
    async fn echo(&self, Parameters(a): Parameters<TextArg>) -> String {
        a.text
    }
}

#[tool_router(router = confirm_router)]
impl RmcpBench {
    #[tool(description = "Returns its text after the user confirms.")]
    async fn confirm(
        &self,
        Parameters(a): Parameters<TextArg>,
        InputResponses(answers): InputResponses,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let binding = confirm_binding(&a.text);
        let Some(state) = state else {
            // Round 1: ask, and seal what round 2 must prove.
            let sealed = self.codec.seal_with(
                b"confirm/1",
                &SealOptions::new().associated_data(&binding).ttl(STATE_TTL),
            );
            let question = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "Confirm?".into(),
                requested_schema: (*self.confirm_schema).clone(),
            });
            let mut asks = InputRequests::new();
            asks.insert("confirm".into(), InputRequest::Elicitation(question));
            return Ok(InputRequiredResult::new(Some(asks), Some(sealed)).into());
        };
        // Round 2: the state must be ours, for this tool and argument, and unexpired.
        let opened = self
            .codec
            .open_with(&state, &binding)
            .map_err(|_| invalid_state())?;
        if opened != b"confirm/1" {
            return Err(invalid_state());
        }
        let answer = answers.as_ref().and_then(|a| a.get("confirm"));
        let accepted = answer.is_some_and(|a| {
            a.get("action").and_then(|v| v.as_str()) == Some("accept")
                && a.pointer("/content/ok").and_then(|v| v.as_bool()) == Some(true)
        });
        let text = if accepted {
            a.text
        } else {
            "Not confirmed.".into()
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tool_router(router = publish_router)]
impl RmcpBench {
    #[tool(
        description = "Announces that a resource changed to every listen stream subscribed to it."
    )]
    async fn publish(&self, Parameters(a): Parameters<PublishArg>) -> String {
        // An error only means that no stream is open.
        let _ = self.updates.send(a.uri.into());
        "published".into()
    }
}

include!(concat!(env!("OUT_DIR"), "/many_rmcp.rs"));

#[tool_handler(router = self.router)]
impl ServerHandler for RmcpBench {
    /// What `#[tool_handler(name = …, version = …)]` generates, plus `resources.subscribe`
    /// in the listen variant.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.capabilities())
            .with_server_info(Implementation::new("rmcp-bench", "0.1.0"))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.listen
            .then(|| requested.supported_by(&self.capabilities()))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut updates = self.updates.subscribe();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                update = updates.recv() => match update {
                    Ok(uri) => {
                        // The sink drops URIs this stream did not subscribe to.
                        let _ = context.sink().notify_resource_updated(&*uri).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

async fn serve_http(
    server: RmcpBench,
    port: u16,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> Result<(), Box<dyn std::error::Error>> {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_legacy_session_mode(false);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = TowerToHyperService::new(service.clone());
        let tls = tls.clone();
        tokio::spawn(async move {
            let http = http1::Builder::new().keep_alive(true).clone();
            let _ = match tls {
                None => http.serve_connection(TokioIo::new(stream), service).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => http.serve_connection(TokioIo::new(stream), service).await,
                    Err(_) => return,
                },
            };
        });
    }
}

async fn serve_stdio(server: RmcpBench) -> Result<(), Box<dyn std::error::Error>> {
    server.serve(stdio_pipes()).await?.waiting().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let served = match RmcpBench::new(&cli) {
        Ok(server) => match cli.port {
            Some(port) if !cli.stdio => match (&cli.tls_cert, &cli.tls_key) {
                (Some(cert), Some(key)) => match arctern_bench::tls::server_config(cert, key) {
                    Ok(config) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(config);
                        serve_http(server, port, Some(acceptor)).await
                    }
                    Err(e) => Err(e.to_string().into()),
                },
                _ => serve_http(server, port, None).await,
            },
            _ => serve_stdio(server).await,
        },
        Err(e) => Err(e),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-server: {e}");
            ExitCode::FAILURE
        }
    }
}
