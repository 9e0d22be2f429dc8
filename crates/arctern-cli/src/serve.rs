//! `arctern serve`: the demo server, alone or as a member of a fleet behind a load balancer,
//! over HTTPS (see [`tls`]) and protected by OAuth (see [`auth`]) when asked.

mod auth;
mod tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arctern::server::mrtr::MemoryOneTimeStore;
use arctern::server::{ChangeBus, LocalChangeBus};
use arctern::state::{
    EnvelopeCodec, EnvelopeConfig, KeySource, LocalKeyService, ReloadableKeyRing, StateSealer,
};
use arctern::transport::http::{DEFAULT_PATH, HttpConfig, HttpServer};
use arctern_redis::{RedisChangeBus, RedisConfig, RedisOneTimeStore, RedisTaskStore};
use base64::Engine as _;
use clap::Args;

use arctern_cli::demo;

use crate::demo_notes::Notes;
use crate::output::{self, Format};

/// The environment variable holding the key ring when no `--key-file` is given.
const KEYS_ENV: &str = "ARCTERN_STATE_KEYS";

/// Options of `arctern serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one). With --output json, the first line on stdout
    /// is {"url": "…"} (with --auth, also "issuer": the authorization server).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Address to listen on. 0.0.0.0 (in a container, say) answers only requests whose
    /// Host is a loopback name (localhost, 127.0.0.1) unless --allow-host names others:
    /// the defence against DNS rebinding.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    bind: std::net::IpAddr,
    /// A Host the server answers besides loopback names, such as mcp.example.com or
    /// mcp.example.com:8000 (repeatable; in the environment, comma-separated).
    #[arg(
        long = "allow-host",
        value_name = "HOST",
        env = "ARCTERN_ALLOW_HOST",
        value_delimiter = ','
    )]
    allow_hosts: Vec<String>,
    /// Serve over stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    #[command(flatten)]
    auth: auth::AuthArgs,
    #[command(flatten)]
    tls: tls::TlsArgs,
    /// The request-state key ring shared by the fleet: lines (or commas) of id:base64key,
    /// the sealing key first. Re-read on SIGHUP, to rotate keys without a restart. Without
    /// it, ARCTERN_STATE_KEYS is used when set, else a process-local key.
    #[arg(long, value_name = "FILE", env = "ARCTERN_KEY_FILE")]
    key_file: Option<PathBuf>,
    /// Seal request state under data keys wrapped by a local key service whose 32-byte
    /// key-encryption key (base64) is in FILE, instead of a shared key ring: every instance
    /// makes and rotates its own data keys (envelope encryption; see the fleet guide for AWS
    /// KMS, GCP KMS and Vault transit).
    #[arg(long, value_name = "FILE", conflicts_with = "key_file")]
    kms_key_file: Option<PathBuf>,
    /// With --kms-key-file: seconds between data-key rotations.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    rotate_data_key: u64,
    /// The audience request state is bound to; every instance of a fleet uses the same one
    /// [default: the server's name].
    #[arg(long, value_name = "NAME", env = "ARCTERN_AUDIENCE")]
    audience: Option<String>,
    /// Names this instance in an Arctern-Instance header on every HTTP response.
    #[arg(long, value_name = "ID", env = "ARCTERN_INSTANCE_ID")]
    instance_id: Option<String>,
    /// Redis for what the fleet shares: notes, change notifications across instances, tasks, and
    /// the one-time flow store (a flow completes once on the whole fleet), such as
    /// redis://127.0.0.1:6379/0. Without it, each of those stays in this process.
    #[arg(long, value_name = "URL", env = "ARCTERN_REDIS_URL")]
    redis: Option<String>,
}

/// Serves the demo until Ctrl-C or SIGTERM (then drains: requests in flight finish). With
/// `--output json` over HTTP, the first line on stdout is `{"url": …}`, for scripts that
/// start the server on `--port 0`.
pub async fn serve(args: ServeArgs, format: Format) -> Result<(), Box<dyn std::error::Error>> {
    let instance = args.instance_id.clone().unwrap_or_else(|| "local".into());
    let (bus, redis): (Arc<dyn ChangeBus>, _) = match &args.redis {
        Some(url) => {
            let config = RedisConfig::new(url.as_str());
            let bus = RedisChangeBus::connect(config.clone())
                .await
                .map_err(|e| format!("cannot use Redis at {url}: {e}"))?;
            (bus, Some(config))
        }
        None => (Arc::new(LocalChangeBus::default()), None),
    };
    let notes = match &redis {
        Some(config) => Notes::in_redis(config, bus.clone(), &instance).await?,
        None => Notes::in_memory(bus.clone(), &instance),
    };
    let demo = if args.auth.auth {
        demo::protected_builder()
    } else {
        demo::builder()
    };
    let mut builder = crate::demo_notes::install(demo, notes).change_bus(bus);
    // Each flow completes at most once: across the fleet with Redis, else in this process.
    builder = match &redis {
        Some(config) => builder.one_time_store(
            RedisOneTimeStore::connect(config.clone())
                .await
                .map_err(|e| format!("cannot use Redis for the one-time store: {e}"))?,
        ),
        None => builder.one_time_store(MemoryOneTimeStore::new()),
    };
    // Tasks too: any instance answers tasks/get, tasks/update and tasks/cancel for any task.
    if let Some(config) = &redis {
        let store = RedisTaskStore::connect(config.clone())
            .await
            .map_err(|e| format!("cannot use Redis for the task store: {e}"))?;
        builder = builder.tasks(demo::task_config().store(store));
    }
    let source = match &args.key_file {
        Some(file) => Some(KeySource::File(file.clone())),
        None if std::env::var_os(KEYS_ENV).is_some() => Some(KeySource::Env(KEYS_ENV.into())),
        None => None,
    };
    let keys = match source {
        Some(source) => {
            let keys = ReloadableKeyRing::from_source(source.clone())
                .map_err(|e| format!("request-state keys from {source}: {e}"))?;
            let audience = args
                .audience
                .clone()
                .unwrap_or_else(|| "arctern-demo".into());
            builder =
                builder.state_sealer(StateSealer::builder(audience).codec(keys.clone()).build()?);
            Some(keys)
        }
        None => None,
    };
    let audience = args
        .audience
        .clone()
        .unwrap_or_else(|| "arctern-demo".into());
    let mut rotating = None;
    if let Some(file) = &args.kms_key_file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the key-service key {}: {e}", file.display()))?;
        let kek: [u8; 32] = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()
            .and_then(|k| k.try_into().ok())
            .ok_or_else(|| format!("{} must hold 32 bytes in base64", file.display()))?;
        let service = Arc::new(LocalKeyService::new(audience.clone(), &kek));
        let codec = EnvelopeCodec::start(service, EnvelopeConfig::default()).await?;
        rotating = Some(codec.rotate_every(Duration::from_secs(args.rotate_data_key.max(1))));
        builder = builder.state_sealer(
            StateSealer::builder(audience.as_str())
                .codec(codec)
                .build()?,
        );
    }
    let server = builder.build()?;
    if args.stdio {
        server.serve_stdio().await?;
        return Ok(());
    }
    // Host is checked whatever the bind: loopback names, and the hosts listed.
    let mut config = args
        .allow_hosts
        .iter()
        .fold(HttpConfig::new().localhost_only(true), |c, h| {
            c.allow_host(h)
        });
    if let Some(id) = &args.instance_id {
        config = config.instance_id(id);
    }
    // Bound first: a protected resource is named by its URL, which holds the port.
    let listener = tokio::net::TcpListener::bind((args.bind, args.port))
        .await
        .map_err(|e| format!("cannot listen on {}:{}: {e}", args.bind, args.port))?;
    let tls = args.tls.config();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let addr = listener.local_addr()?;
    // Bound to every interface, the server is reached (and answers) under a loopback name.
    let host = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let url = format!("{scheme}://{host}:{}{DEFAULT_PATH}", addr.port());
    let declared = server.handler().declared_scopes();
    let mut http = HttpServer::new(server).listener(listener).config(config);
    if let Some(tls) = tls {
        http = http.tls(tls);
    }
    let sign_in = if args.auth.auth {
        if !addr.ip().is_loopback() {
            return Err("--auth signs everyone in: it serves on a loopback --bind only".into());
        }
        Some(auth::SignIn::start(&url, declared).await?)
    } else {
        None
    };
    if let Some(sign_in) = &sign_in {
        http = http.protect(sign_in.resource());
    }
    let bound = http.listen().await?;
    // Before the URL is printed: whoever reads it may send SIGHUP at once.
    let _reloading_tls = bound.tls_reloader().map(tls::watch_sighup);
    if format == Format::Json {
        let mut line = serde_json::json!({ "url": url });
        if let Some(sign_in) = &sign_in {
            line["issuer"] = sign_in.issuer().into();
        }
        output::line(false, &line.to_string());
    }
    eprintln!("arctern demo server listening on {url}");
    if let Some(text) = args.tls.describe() {
        eprintln!("{text}");
    }
    if let Some(keys) = &keys {
        let ids: Vec<String> = keys.key_ids().iter().map(|k| k.to_string()).collect();
        eprintln!(
            "request-state keys: {} (SIGHUP reloads them)",
            ids.join(", ")
        );
    }
    eprintln!();
    let arctern = crate::how_to_run();
    if let Some(sign_in) = &sign_in {
        sign_in.print_how_to_sign_in(&arctern, &url);
        eprintln!();
    }
    eprintln!("Try it from another terminal:");
    eprintln!("  {arctern} call {url} provision --arg name=orders");
    eprintln!("  {arctern} call {url} provision --arg name=orders --answer region=eu-west-1");
    eprintln!("  {arctern} call {url} book_hotel --arg city=Oslo");
    eprintln!("  {arctern} tools {url}");
    eprintln!("Or point any MCP client (protocol 2026-07-28) at {url}.");
    eprintln!("Press Ctrl-C to stop.");
    let _reloading = keys.map(watch_sighup);
    let _rotating = rotating;
    bound.serve_with_shutdown(stop_signal()).await?;
    eprintln!("arctern demo server stopped");
    Ok(())
}

/// Ctrl-C or, on Unix, SIGTERM (what `kill`, systemd and Kubernetes send).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                return;
            }
            Err(e) => eprintln!("arctern: cannot listen for SIGTERM ({e}); Ctrl-C still stops"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Reloads the key ring on SIGHUP, saying so on stderr (operators and the fleet tests read
/// it). The task ends with the process.
fn watch_sighup(keys: ReloadableKeyRing) -> Option<tokio::task::JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("arctern: cannot listen for SIGHUP ({e}); keys are not reloaded");
                return None;
            }
        };
        Some(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match keys.reload() {
                    Ok(ids) => {
                        let ids: Vec<String> = ids.iter().map(|k| k.to_string()).collect();
                        eprintln!(
                            "arctern: reloaded the request-state keys: {}",
                            ids.join(", ")
                        );
                    }
                    Err(e) => {
                        eprintln!("arctern: key reload failed, keeping the current keys: {e}")
                    }
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = keys;
        None
    }
}
