//! The stdio transport: newline-delimited JSON-RPC over a byte stream.
//!
//! One JSON-RPC message per line, UTF-8, no embedded newlines. The client launches the server
//! as a subprocess, writes to its stdin and reads its stdout; stderr is free for logs. The
//! same framing works over any reliable bidirectional byte stream (a Unix socket, a TCP
//! connection, an in-memory pipe), which is why the server side is generic over
//! [`AsyncRead`](tokio::io::AsyncRead) and [`AsyncWrite`](tokio::io::AsyncWrite).
//!
//! - [`StdioServer`] (feature `server`): serves a [`Server`](crate::server::Server) on
//!   stdin/stdout (or any reader/writer pair). The shortcuts
//!   [`Server::serve_stdio`](crate::server::Server::serve_stdio) and
//!   [`McpServer::serve_stdio`](crate::server::McpServer::serve_stdio) cover the common case.
//! - `client` (feature `client`): launches a server as a child process and talks to it.
//!
//! Nothing in this module writes anything but MCP messages to stdout: diagnostics go through
//! [`tracing`], so install a subscriber that writes to stderr.

#[cfg(feature = "server")]
mod frame;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod writer;

#[cfg(feature = "server")]
pub use server::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_LENGTH, DEFAULT_SHUTDOWN_GRACE, StdioServer,
};

#[cfg(feature = "client")]
pub mod client;

/// The fuzz targets' way into the framer (see `crate::__fuzz`): the frames of `chunks`, as
/// `frame::split` reads them.
#[cfg(all(fuzzing, feature = "server"))]
pub(crate) fn fuzz_frames(max: usize, chunks: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
    frame::split(max, chunks)
}
