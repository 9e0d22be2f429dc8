//! Helpers shared by the examples (argument parsing, logging, serving until Ctrl-C), and the
//! pieces of the examples that their tests use too: three middleware
//! ([`middleware`]), three client middleware ([`client_layers`]) and a Unix-socket
//! transport ([`unix_socket`]).
//!
//! This unpublished crate also holds the doc tests of every README: the crates.io pages must
//! not read outside their packages, so the code they show is compiled from here (`cargo test
//! -p arctern-examples --doc`).

use arctern::server::{Handler, Server};
use arctern::transport::http::HttpServer;

pub mod client_layers;
pub mod middleware;
#[cfg(unix)]
pub mod unix_socket;

/// The port from `--port N` (default 8000; 0 picks a free one).
pub fn port_from_args() -> u16 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--port")
        .and_then(|i| args.get(i + 1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000)
}

/// The values that follow `flag` on the command line, in order (`--answer a --answer b`).
pub fn flag_values(flag: &str) -> Vec<String> {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .filter(|pair| pair[0] == flag)
        .map(|pair| pair[1].clone())
        .collect()
}

/// The value that follows `flag` (the first, if repeated).
pub fn flag_value(flag: &str) -> Option<String> {
    flag_values(flag).into_iter().next()
}

/// Logs to stderr (`RUST_LOG` filters), serves `server` on 127.0.0.1 at the port from the
/// command line, prints its URL on stdout, and runs until Ctrl-C.
pub async fn serve<H: Handler>(server: Server<H>) -> arctern::Result<()> {
    init_logging();
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

/// Logs to stderr, warnings and up unless `RUST_LOG` says otherwise; stdout stays for the
/// example's own output.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
}

/// The READMEs, whose Rust blocks `cargo test` compiles (and runs, unless `no_run`).
#[cfg(doctest)]
mod readmes {
    #[doc = include_str!("../../README.md")]
    struct Repository;

    #[doc = include_str!("../../crates/arctern/README.md")]
    struct Arctern;

    #[doc = include_str!("../../crates/arctern-types/README.md")]
    struct ArcternTypes;

    #[doc = include_str!("../../crates/arctern-macros/README.md")]
    struct ArcternMacros;

    #[doc = include_str!("../../crates/arctern-redis/README.md")]
    struct ArcternRedis;

    #[doc = include_str!("../../crates/arctern-cli/README.md")]
    struct ArcternCli;
}
