//! `interop-server`: [`arctern_interop::server()`] for the Python client of the interop
//! tests.
//!
//! ```text
//! interop-server --http        Streamable HTTP on 127.0.0.1, a free port; prints
//!                              "listening http://127.0.0.1:PORT/mcp" on stdout once it accepts
//! interop-server --http-auth   the same for arctern_interop::protected_server(), protected
//!                              by an in-process test authorization server
//! interop-server --stdio       newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! Every mode stops when stdin closes, so a test that goes away takes the server with it.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use arctern::auth::resource::ProtectedResource;
use arctern::testing::TestAuthServer;
use arctern::transport::http::HttpServer;
use arctern_interop::{BASE_SCOPE, protected_server};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let served = match mode.as_str() {
        "--stdio" => match arctern_interop::server() {
            Ok(server) => server.serve_stdio().await,
            Err(e) => Err(arctern::Error::new(
                arctern::ErrorKind::Config,
                e.to_string(),
            )),
        },
        "--http" => http().await,
        "--http-auth" => http_auth().await,
        _ => {
            eprintln!("usage: interop-server --http | --http-auth | --stdio");
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

fn config(e: impl std::fmt::Display) -> arctern::Error {
    arctern::Error::new(arctern::ErrorKind::Config, e.to_string())
}

async fn http() -> arctern::Result<()> {
    let server = arctern_interop::server().map_err(config)?;
    let bound = HttpServer::new(server)
        .bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .path("/mcp")
        .listen()
        .await?;
    println!("listening {}", bound.url());
    bound.serve_with_shutdown(stdin_closed()).await
}

/// The protected server, with the test authorization server in this process.
async fn http_auth() -> arctern::Result<()> {
    let server = protected_server().map_err(config)?;
    let auth = TestAuthServer::builder().start().await?;
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
    let resource = format!("http://{}/mcp", listener.local_addr()?);
    let mut scopes = vec![BASE_SCOPE.to_owned()];
    scopes.extend(server.handler().declared_scopes());
    let protected = ProtectedResource::builder(&resource)
        .authorization_server(auth.issuer())
        .scopes_supported(scopes)
        .required_scopes([BASE_SCOPE])
        .verifier(auth.jwt_verifier(&resource).build()?)
        .build()?;
    let bound = HttpServer::new(server)
        .listener(listener)
        .protect(protected)
        .listen()
        .await?;
    println!("listening {}", bound.url());
    bound.serve_with_shutdown(stdin_closed()).await
}

/// Resolves when stdin reaches its end (or fails): the parent is gone or done.
async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 256];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}
