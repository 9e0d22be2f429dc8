//! Streamable HTTP: MCP 2026-07-28, and the 2025 revisions on the same endpoint.
//!
//! Every client message is one `POST` to the MCP endpoint; the answer is a single JSON body,
//! an SSE stream (request-scoped notifications, then the final response), or `202 Accepted`
//! for a notification. On 2026-07-28 there are no sessions and no `GET` stream: closing a
//! response stream cancels its request. A 2025-era client that sends `initialize` gets a
//! session instead (`Mcp-Session-Id`, the `GET` stream with `Last-Event-ID` resumption,
//! `DELETE`), tuned by the server's `LegacyConfig`.
//!
//! # Server
//!
//! - [`StreamableHttpService`]: a tower [`Service`](tower_service::Service) for any
//!   [`Server`](crate::server::Server), to mount in axum (or any tower-based framework):
//!
//!   ```no_run
//!   # use arctern::server::McpServer;
//!   # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//!   let server = McpServer::new("demo").build()?;
//!   let app: axum::Router = axum::Router::new().route_service("/mcp", server.http_service());
//!   # let _ = app; Ok(()) }
//!   ```
//!
//! - [`HttpServer`]: a standalone hyper server (accept loop, `TCP_NODELAY`, graceful
//!   shutdown), also reachable as [`Server::serve_http`](crate::server::Server::serve_http)
//!   and [`McpServer::serve_http`](crate::server::McpServer::serve_http):
//!
//!   ```no_run
//!   # use arctern::server::McpServer;
//!   # async fn run() -> arctern::Result<()> {
//!   McpServer::new("demo").serve_http("127.0.0.1:8000").await
//!   # }
//!   ```
//!
//! Both check `Host` and `Origin` against DNS rebinding ([`HttpConfig`]), limit the request
//! body, and answer wrong methods, content types and `Accept` headers with the statuses the
//! specification asks for.

#[cfg(feature = "server")]
mod sentinel;
#[cfg(feature = "server")]
pub(crate) mod server;

#[cfg(feature = "server")]
pub use server::{
    BoundHttpServer, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_PATH, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SHUTDOWN_GRACE, DEFAULT_UNINITIALIZED_SESSION_TIMEOUT, DEFAULT_UNREAD_STREAM_TIMEOUT,
    HttpConfig, HttpServer, INSTANCE_HEADER, PeerAddr, ResponseBody, ResponseFuture,
    StreamableHttpService,
};
#[cfg(all(feature = "server", feature = "tls"))]
pub use server::{DEFAULT_TLS_HANDSHAKE_TIMEOUT, TlsConfig, TlsReloader};

#[cfg(feature = "client")]
pub mod client;
