//! `interop-server`: [`arctern_interop::server()`] for the Python client of the interop
//! tests.
//!
//! ```text
//! interop-server --http    Streamable HTTP on 127.0.0.1, a free port; prints
//!                          "listening http://127.0.0.1:PORT/mcp" on stdout once it accepts
//! interop-server --stdio   newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! Both modes stop when stdin closes, so a test that goes away takes the server with it.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use arctern::transport::http::HttpServer;
use tokio::io::AsyncReadExt;

#[tokio::main]
async fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let server = match arctern_interop::server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("interop-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = match mode.as_str() {
        "--stdio" => server.serve_stdio().await,
        "--http" => {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
            match HttpServer::new(server)
                .bind(addr)
                .path("/mcp")
                .listen()
                .await
            {
                Ok(bound) => {
                    println!("listening {}", bound.url());
                    bound.serve_with_shutdown(stdin_closed()).await
                }
                Err(e) => Err(e),
            }
        }
        _ => {
            eprintln!("usage: interop-server --http | --stdio");
            return ExitCode::from(2);
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("interop-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves when stdin reaches its end (or fails): the parent is gone or done.
async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 256];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}
