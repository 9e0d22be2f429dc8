//! Helpers shared by the examples: argument parsing and serving until Ctrl-C.

use arctern::server::{Handler, Server};
use arctern::transport::http::HttpServer;

/// The port from `--port N` (default 8000; 0 picks a free one).
pub fn port_from_args() -> u16 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--port")
        .and_then(|i| args.get(i + 1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000)
}

/// Logs to stderr (`RUST_LOG` filters), serves `server` on 127.0.0.1 at the port from the
/// command line, prints its URL on stdout, and runs until Ctrl-C.
pub async fn serve<H: Handler>(server: Server<H>) -> arctern::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", port_from_args()))
        .listen()
        .await?;
    println!("{}", bound.url());
    bound
        .serve_with_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
