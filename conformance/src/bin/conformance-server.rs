//! `conformance-server`: the fixture server the official MCP conformance suite tests.
//!
//! ```text
//! conformance-server [--port N]   Streamable HTTP on http://127.0.0.1:N/mcp (default 3000)
//! conformance-server --stdio      newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! Logs go to stderr only (filter with `RUST_LOG`); stdout carries nothing but MCP messages
//! in stdio mode.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use arctern::transport::http::HttpServer;
use arctern_conformance::fixture;
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Serves the conformance fixture over Streamable HTTP or stdio.
#[derive(Debug, Parser)]
#[command(name = "conformance-server", version, about)]
struct Cli {
    /// Port to listen on (127.0.0.1 only); the endpoint is /mcp.
    #[arg(long, default_value_t = 3000, conflicts_with = "stdio")]
    port: u16,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_ansi(false)
        .init();
    let server = match fixture::server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = if cli.stdio {
        eprintln!("conformance-server: serving on stdio");
        server.serve_stdio().await
    } else {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port));
        match HttpServer::new(server)
            .bind(addr)
            .path("/mcp")
            .listen()
            .await
        {
            Ok(bound) => {
                eprintln!("conformance-server: serving {}", bound.url());
                bound.serve_with_shutdown(shutdown_signal()).await
            }
            Err(e) => Err(e),
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Ctrl-C, or SIGTERM (what the conformance scripts send), on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
