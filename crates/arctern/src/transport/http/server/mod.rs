//! The Streamable HTTP server: a tower service and a standalone hyper server.

mod body;
mod config;
pub(crate) mod guard;
mod legacy;
mod negotiate;
mod service;
mod standalone;

pub use body::ResponseBody;
pub use config::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_PATH,
    DEFAULT_SHUTDOWN_GRACE, HttpConfig, INSTANCE_HEADER,
};
#[cfg(feature = "tls")]
pub use config::{DEFAULT_TLS_HANDSHAKE_TIMEOUT, TlsConfig};
pub use legacy::{
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_UNINITIALIZED_SESSION_TIMEOUT, DEFAULT_UNREAD_STREAM_TIMEOUT, PeerAddr,
};
pub use service::{ResponseFuture, StreamableHttpService};
#[cfg(feature = "tls")]
pub use standalone::TlsReloader;
pub use standalone::{BoundHttpServer, HttpServer};
