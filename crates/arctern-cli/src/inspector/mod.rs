//! `arctern inspect`: a web inspector on loopback. One process holds the client (connected
//! like `arctern call` connects: OAuth, `--cacert`, headers, eras) and serves a page that
//! lists what the server offers, calls it, answers its questions, and shows every call as
//! one flow of rounds, with the frames underneath. The target is fixed on the command line:
//! the page can neither change it nor start processes, read files or fetch other URLs.

mod flows;
mod tap;
mod web;

use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arctern::Era;
use arctern::client::Client;
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::exit::{Exit, Failure};
use crate::output::Format;
use crate::session::{ConnectArgs, Endpoint};

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EraArg {
    /// Detect it: `server/discover`, falling back to `initialize`.
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// A 2025 session (`initialize`) only.
    Legacy,
}

/// The flags of `arctern inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The server's URL, such as http://127.0.0.1:8000/mcp (or --stdio -- COMMAND ARGS...).
    #[arg(value_name = "URL")]
    url: Option<String>,
    /// Start the server as a child process: its command and arguments follow `--`.
    #[arg(long)]
    stdio: bool,
    /// With --stdio: the server's command line.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// The protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    era: EraArg,
    /// The address the page is served on; anything but loopback needs --allow-remote.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// The port the page is served on (0: a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve on a non-loopback --bind address: whoever can reach it and has the printed URL
    /// can use the inspector (and answer as you).
    #[arg(long)]
    allow_remote: bool,
    /// Print the URL without opening a browser.
    #[arg(long)]
    no_open: bool,
    /// An HTTP header sent with every request to the server, as "Name: value" (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Trust the CA certificates of this PEM file for HTTPS (repeatable).
    #[arg(long, value_name = "FILE")]
    cacert: Vec<PathBuf>,
    /// An environment variable for a --stdio server, as NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// How long a sign-in in the browser may take, in seconds (servers that want OAuth).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    login_timeout: u64,
    /// A directory (or file:// URI) the server may see as a root (repeatable).
    #[arg(long = "root", value_name = "PATH|URI")]
    roots: Vec<String>,
    /// Frames kept in the frames log (the oldest go first).
    #[arg(long, value_name = "N", default_value_t = 2000)]
    max_frames: usize,
    /// Bytes kept of one frame; a longer one is cut, its size noted.
    #[arg(long, value_name = "BYTES", default_value_t = 65536)]
    max_frame_bytes: usize,
    /// Flows kept (the oldest go first).
    #[arg(long, value_name = "N", default_value_t = 200)]
    max_flows: usize,
    /// Rounds of one call before the inspector stops it.
    #[arg(long, value_name = "N", default_value_t = 16)]
    max_rounds: u32,
    /// How long a question waits for an answer in the page, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    answer_timeout: u64,
    /// The largest request body the page may send, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    max_body_bytes: usize,
}

/// 32 random bytes, hex: the launch token.
fn token() -> Result<String, Failure> {
    use rand::TryRng as _;
    let mut bytes = [0u8; 32];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| Failure::new(Exit::Local, format!("no randomness for the token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `Host` values a server on `addr` answers to: its loopback names, or the one address
/// it was bound to (and the loopback names too when that is every interface).
fn hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let ip = addr.ip();
    let shown = match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    };
    if ip.is_loopback() {
        vec![shown, format!("localhost:{port}")]
    } else if ip.is_unspecified() {
        vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
    } else {
        vec![shown]
    }
}

/// `arctern inspect`.
pub async fn inspect(a: InspectArgs, format: Format) -> Result<Exit, Failure> {
    if !a.bind.is_loopback() && !a.allow_remote {
        return Err(Failure::usage(format!(
            "--bind {}: not a loopback address; add --allow-remote to serve the inspector to \
             other machines (whoever has its URL can use it)",
            a.bind
        )));
    }
    let endpoint = match (a.stdio, a.url, a.command.is_empty()) {
        (true, None, false) => Endpoint::Stdio(a.command),
        (true, Some(_), _) => {
            return Err(Failure::usage(
                "with --stdio, give the command after -- instead of a URL",
            ));
        }
        (true, None, true) => {
            return Err(Failure::usage(
                "--stdio needs the server's command after --: arctern inspect --stdio -- CMD ARGS...",
            ));
        }
        (false, url, true) => Endpoint::resolve(url, &ConnectArgs::default())?,
        (false, _, false) => {
            return Err(Failure::usage(
                "a command after -- needs --stdio (arctern inspect --stdio -- CMD ARGS...)",
            ));
        }
    };
    let conn = ConnectArgs {
        stdio: None,
        headers: a.headers,
        timeout: None,
        env: a.env,
        cacert: a.cacert,
        login_timeout: a.login_timeout,
    };
    let roots = a
        .roots
        .iter()
        .map(|r| crate::session::root(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::usage)?;
    let start = Instant::now();
    let frames = tap::Frames::new(start, a.max_frames, a.max_frame_bytes);
    let inspector = flows::Inspector::new(
        endpoint.clone(),
        roots,
        flows::Limits {
            max_flows: a.max_flows,
            max_rounds: a.max_rounds,
            answer_timeout: Duration::from_secs(a.answer_timeout.max(1)),
        },
        frames.clone(),
    );
    let mut builder = Client::builder()
        .name("arctern-inspect")
        .version(env!("CARGO_PKG_VERSION"))
        .handler(flows::Handler(inspector.clone()));
    builder = match a.era {
        EraArg::Auto => builder,
        EraArg::Modern => builder.era(Era::Modern),
        EraArg::Legacy => builder.era(Era::Legacy),
    };
    let interactive = std::io::stdin().is_terminal();
    let client = crate::session::connect_builder(builder, &endpoint, &conn, interactive, |t| {
        Arc::new(tap::Tap::new(t, frames.clone()))
    })
    .await?;
    inspector.connected(client.clone());

    let listener = tokio::net::TcpListener::bind(SocketAddr::new(a.bind, a.port))
        .await
        .map_err(|e| {
            Failure::new(
                Exit::Local,
                format!("cannot listen on {}:{}: {e}", a.bind, a.port),
            )
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::new(Exit::Local, format!("cannot listen: {e}")))?;
    let token = token()?;
    let allowed = hosts(addr);
    let url = format!("http://{}/#k={token}", allowed[0]);
    let guard = Arc::new(web::Guard {
        token,
        hosts: allowed,
    });
    let app = web::router(inspector.clone(), guard, a.max_body_bytes);
    if !a.bind.is_loopback() {
        eprintln!(
            "arctern inspect: warning: serving on {addr}, not loopback (--allow-remote); the \
             page is plain http"
        );
    }
    match format {
        // One line, like `arctern serve`: scripts read the first line.
        Format::Json => println!("{}", json!({ "url": url })),
        Format::Text => {
            eprintln!(
                "Inspecting {} (Ctrl-C stops). Open this URL (it carries this launch's token):",
                crate::sanitize::line(&endpoint.describe())
            );
            println!("{url}");
        }
    }
    if !a.no_open
        && let Err(why) = crate::form::open_in_browser(&url)
    {
        eprintln!("arctern inspect: could not open a browser ({why}); open the URL yourself");
    }
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    let _ = client.close().await;
    served
        .map(|()| Exit::Ok)
        .map_err(|e| Failure::new(Exit::Local, format!("the web server failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_256_bits_and_fresh() {
        let a = token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, token().unwrap());
    }

    #[test]
    fn loopback_hosts() {
        let h = hosts("127.0.0.1:4000".parse().unwrap());
        assert_eq!(h, ["127.0.0.1:4000", "localhost:4000"]);
        let h = hosts("[::1]:4000".parse().unwrap());
        assert_eq!(h, ["[::1]:4000", "localhost:4000"]);
    }
}
