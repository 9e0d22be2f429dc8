//! Transports: how MCP messages travel between a client and a server.
//!
//! - [`http`]: Streamable HTTP (a hyper/tower server mountable in axum, a standalone
//!   server, and the client side).
//! - [`stdio`]: newline-delimited JSON over stdin/stdout (a server, and a client that spawns
//!   the server as a child process).
//! - [`memory`]: a client and a server in the same process, every message encoded and
//!   parsed as on a wire (the test kit's transport).
//!
//! [`Transport`] is what a client sends through; [`headers`] names the HTTP headers both
//! sides of Streamable HTTP use.

#[cfg(feature = "http")]
pub mod http;
#[cfg(all(feature = "client", feature = "server"))]
pub mod memory;
#[cfg(feature = "stdio")]
pub mod stdio;

pub mod headers;
#[cfg(feature = "client")]
mod link;

#[cfg(feature = "client")]
pub use link::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};
