//! Configuration of the HTTP server transport.

use std::time::Duration;

/// The path [`HttpServer`](super::HttpServer) serves MCP on unless told otherwise.
pub const DEFAULT_PATH: &str = "/mcp";

/// The default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_SIZE: usize = 4 * 1024 * 1024;

/// The default interval of SSE keep-alive comments on an idle stream.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long [`HttpServer`](super::HttpServer) lets open connections finish after a shutdown
/// signal before closing them.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The default [`HttpConfig::header_read_timeout`]: 30 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`HttpConfig::body_read_timeout`]: 30 seconds.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`HttpConfig::max_connections`]: 50 000, so that tens of thousands of idle
/// `subscriptions/listen` streams fit beside ordinary clients.
pub const DEFAULT_MAX_CONNECTIONS: usize = 50_000;

/// The default [`HttpConfig::max_in_flight`]: 4096 requests.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;

/// Configuration of the Streamable HTTP server transport.
///
/// # DNS-rebinding protection
///
/// A page on a hostile site can point its own host name at `127.0.0.1` and then talk to a
/// local server from the victim's browser. The defence is to check `Host` (which names the
/// hostile site) and `Origin`:
///
/// - With **localhost-only** checking on, `Host` must name `localhost`, a `127.0.0.0/8`
///   address or `[::1]` (any port), or a host added with [`allow_host`](Self::allow_host);
///   a request without a host is refused. On by default for [`StreamableHttpService`]
///   and, for [`HttpServer`], whenever it is bound to a loopback address or to every
///   interface (`0.0.0.0`, `[::]`).
/// - `Origin`, when present, must be one added with [`allow_origin`](Self::allow_origin),
///   the same origin as a `Host` that was checked (allowed or loopback), or (with
///   localhost-only checking on) a loopback origin. When `Host` is not checked at all
///   (localhost-only off and no allowed host), only allowed origins pass: a rebound name
///   sends an `Origin` equal to its `Host`. The opaque origin `null` is refused unless
///   allowed explicitly.
///
/// Refused requests get `403 Forbidden`.
///
/// # Slow and greedy clients
///
/// Every wait a client controls is bounded: the request head must arrive within
/// [`header_read_timeout`](Self::header_read_timeout) (which also closes idle keep-alive
/// connections), the body within [`body_read_timeout`](Self::body_read_timeout) (`408`),
/// and at most [`max_in_flight`](Self::max_in_flight) requests are served at once (`503`
/// with `Retry-After`); [`HttpServer`] accepts at most
/// [`max_connections`](Self::max_connections) connections (more wait in the listen
/// backlog). The defaults keep serving ordinary clients while thousands of sockets trickle
/// a byte every few seconds: each such socket costs a task and a few kilobytes until its
/// deadline closes it.
///
/// 2025-era sessions are bounded too: at most [`max_sessions`](Self::max_sessions) in all
/// and [`max_sessions_per_client`](Self::max_sessions_per_client) per principal (or peer
/// address); at a limit, a session not in use makes room (one that never sent
/// `notifications/initialized` first, then the least recently used), so a flood of
/// `initialize` cannot lock other clients out. Each session belongs to the principal that
/// opened it: another principal's requests on it get `404`.
///
/// [`StreamableHttpService`]: super::StreamableHttpService
/// [`HttpServer`]: super::HttpServer
///
/// ```
/// use std::time::Duration;
/// use arctern::transport::http::HttpConfig;
///
/// let config = HttpConfig::new()
///     .localhost_only(false)
///     .allow_host("mcp.example.com")
///     .allow_origin("https://app.example.com")
///     .max_body_size(1 << 20)
///     .keep_alive(Some(Duration::from_secs(30)));
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub(crate) localhost_only: Option<bool>,
    pub(crate) allowed_hosts: Vec<HostPattern>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) any_origin: bool,
    pub(crate) max_body_size: usize,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_client: usize,
    pub(crate) uninitialized_session_timeout: Duration,
    pub(crate) unread_stream_timeout: Duration,
    pub(crate) header_read_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) instance: Option<http::HeaderValue>,
}

/// The response header naming the instance that answered (see [`HttpConfig::instance_id`]).
pub const INSTANCE_HEADER: &str = "arctern-instance";

/// An allowed `Host`: a name (lower case, IPv6 in brackets) and optionally one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPattern {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            localhost_only: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            any_origin: false,
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            session_idle_timeout: super::legacy::DEFAULT_SESSION_IDLE_TIMEOUT,
            max_sessions: super::legacy::DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: super::legacy::DEFAULT_MAX_SESSIONS_PER_CLIENT,
            uninitialized_session_timeout: super::legacy::DEFAULT_UNINITIALIZED_SESSION_TIMEOUT,
            unread_stream_timeout: super::legacy::DEFAULT_UNREAD_STREAM_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            instance: None,
        }
    }
}

impl HttpConfig {
    /// The defaults: DNS-rebinding protection as described on [`HttpConfig`], a 4 MiB body
    /// limit, keep-alive comments every 15 seconds.
    pub fn new() -> Self {
        HttpConfig::default()
    }

    /// Turns localhost-only `Host`/`Origin` checking on or off, overriding the default (on
    /// for the tower service; for the standalone server, on when bound to a loopback
    /// address or to every interface). Turn it off for a server reached under a public
    /// name, and list that name with [`allow_host`](Self::allow_host) to keep `Host`
    /// checked.
    pub fn localhost_only(mut self, enabled: bool) -> Self {
        self.localhost_only = Some(enabled);
        self
    }

    /// Allows a `Host`: `"mcp.example.com"` (any port) or `"mcp.example.com:8443"` (that
    /// port only); IPv6 addresses in brackets. Once a host is allowed, `Host` is checked
    /// even with localhost-only checking off. An entry that is not a valid host is ignored
    /// (and logged).
    pub fn allow_host(mut self, host: impl AsRef<str>) -> Self {
        let host = host.as_ref();
        match super::guard::parse_authority(host) {
            Some((name, port)) => self.allowed_hosts.push(HostPattern {
                host: name.to_ascii_lowercase(),
                port,
            }),
            None => tracing::warn!(host, "ignored an allowed host that is not host[:port]"),
        }
        self
    }

    /// Allows an `Origin` such as `"https://app.example.com"` or `"http://localhost:5173"`
    /// (compared case-insensitively, a trailing `/` ignored). `"*"` allows every origin,
    /// which turns the `Origin` check off; `"null"` allows the opaque origin.
    pub fn allow_origin(mut self, origin: impl AsRef<str>) -> Self {
        let origin = origin.as_ref().trim();
        if origin == "*" {
            self.any_origin = true;
        } else {
            let origin = origin.strip_suffix('/').unwrap_or(origin);
            self.allowed_origins.push(origin.to_ascii_lowercase());
        }
        self
    }

    /// The largest request body accepted, in bytes; larger bodies get `413` without being
    /// read further. Default 4 MiB.
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = bytes;
        self
    }

    /// How often an idle SSE stream gets a `: keep-alive` comment (so proxies and clients
    /// do not time it out, and a vanished client is noticed); `None` sends none. Default
    /// 15 seconds.
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.keep_alive = interval.filter(|d| !d.is_zero());
        self
    }

    /// How long a 2025-era session may sit idle (no request running, no stream open) before
    /// the server closes it, so that sessions whose client never sends `DELETE` do not
    /// pile up. Default 30 minutes.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// The most 2025-era sessions open at once (at least 1). At the limit, a new session
    /// closes one not in use (one that never sent `notifications/initialized` first, then
    /// the least recently used); when every session is in use, `initialize` gets `503`.
    /// Default 10 000.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// The most 2025-era sessions one client may have open at once (at least 1): one
    /// principal, or, for sessions opened without one, one peer IP address (known to
    /// [`HttpServer`](super::HttpServer); a service mounted elsewhere counts only requests
    /// carrying a [`PeerAddr`](super::PeerAddr) extension). At the limit, a new session
    /// closes the client's own least recently used session not in use; when all are in
    /// use, `initialize` gets `429`. Default 256.
    pub fn max_sessions_per_client(mut self, sessions: usize) -> Self {
        self.max_sessions_per_client = sessions.max(1);
        self
    }

    /// How long a 2025-era session that never sent `notifications/initialized` may sit
    /// idle before it is closed (a session that did gets
    /// [`session_idle_timeout`](Self::session_idle_timeout)). Default 1 minute.
    pub fn uninitialized_session_timeout(mut self, timeout: Duration) -> Self {
        self.uninitialized_session_timeout = timeout;
        self
    }

    /// How long a 2025-era request may go on while no client reads its stream (the client
    /// went away and did not resume with `GET` and `Last-Event-ID`); after that it is
    /// cancelled, like with `notifications/cancelled`. Default 1 minute.
    pub fn unread_stream_timeout(mut self, timeout: Duration) -> Self {
        self.unread_stream_timeout = timeout;
        self
    }

    /// How long [`HttpServer`](super::HttpServer) waits for a request's head, from its
    /// first byte, or on an idle keep-alive connection for the next request; then it closes
    /// the connection. Default 30 seconds.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive in full, from the end of its head;
    /// then the request gets `408` and the connection is closed. Default 30 seconds.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// The most connections [`HttpServer`](super::HttpServer) serves at once (at least 1);
    /// at the limit it stops accepting until one closes, and further clients wait in the
    /// listen backlog. Keep it below the process's file-descriptor limit (past that limit,
    /// accepting fails and the server pauses briefly before it tries again). Default 50 000:
    /// each idle `subscriptions/listen` stream holds a connection.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The most requests served at once, counted from the end of the body to the response
    /// head (at least 1); beyond it a request gets `503` with `Retry-After: 1`. Default
    /// 4096.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.max(1);
        self
    }

    /// Names this instance in an `Arctern-Instance: <id>` header on every response, so that
    /// operators and tests behind a load balancer see which instance answered. An id that
    /// cannot be a header value (control characters) is ignored and logged. Off by default.
    ///
    /// When the id is a plain token (`A-Z a-z 0-9 _ -`), the ids of 2025-era sessions start
    /// with it and a dot (`i2.3f9c…`), so that a load balancer can send every request of a
    /// session to the instance that holds it (for nginx, a `map` of `$http_mcp_session_id`
    /// to one upstream per instance; see the fleet guide).
    pub fn instance_id(mut self, id: impl AsRef<str>) -> Self {
        match http::HeaderValue::from_str(id.as_ref()) {
            Ok(value) if !id.as_ref().is_empty() => self.instance = Some(value),
            _ => tracing::warn!("ignored an instance id that cannot be a header value"),
        }
        self
    }

    /// The instance id sent in `Arctern-Instance`, when set.
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_ref().and_then(|v| v.to_str().ok())
    }

    /// The request body limit in bytes.
    pub fn body_limit(&self) -> usize {
        self.max_body_size
    }

    /// The localhost-only setting: `Some` when set explicitly, `None` for the default.
    pub fn localhost_only_setting(&self) -> Option<bool> {
        self.localhost_only
    }
}

/// How long a client may take to finish the TLS handshake, by default.
#[cfg(feature = "tls")]
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS for the standalone [`HttpServer`](super::HttpServer) (feature `tls`): rustls with
/// the ring provider, TLS 1.2 and 1.3, ALPN `http/1.1`, a certificate chain and its
/// private key from PEM files.
///
/// The files are read when the server starts (a bad file fails
/// [`listen`](super::HttpServer::listen)) and again on every reload: programmatically
/// with [`TlsReloader::reload`](super::TlsReloader::reload), or on `SIGHUP` with
/// [`reload_on_sighup`](Self::reload_on_sighup). A reload swaps the certificate for new
/// handshakes only; connections already open keep theirs and are not dropped. A reload
/// that fails (a half-written file, a key that does not match) keeps the old certificate
/// and logs why.
///
/// When a TLS-terminating proxy or load balancer (nginx, Envoy, a cloud load balancer)
/// already fronts the service, let it do TLS: it handles certificate automation, OCSP,
/// HTTP/2 to clients and many backends, and the server listens on plain HTTP on a private
/// address (with [`HttpConfig::allow_host`] naming the public host). Built-in TLS is for
/// servers reached directly: a single host, a VM or container without an ingress, a
/// development machine with a local CA.
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern::transport::http::{HttpServer, TlsConfig};
///
/// # async fn run() -> arctern::Result<()> {
/// let server = McpServer::new("demo").build()?;
/// HttpServer::new(server)
///     .bind("0.0.0.0:8443")
///     .tls(TlsConfig::from_pem_files("/etc/mcp/fullchain.pem", "/etc/mcp/key.pem").reload_on_sighup(true))
///     .serve()
///     .await
/// # }
/// ```
#[cfg(feature = "tls")]
#[derive(Debug, Clone)]
pub struct TlsConfig {
    pub(crate) cert: std::path::PathBuf,
    pub(crate) key: std::path::PathBuf,
    pub(crate) reload_on_sighup: bool,
    pub(crate) handshake_timeout: Duration,
}

#[cfg(feature = "tls")]
impl TlsConfig {
    /// The certificate chain (PEM, leaf first) and the private key (PEM: PKCS#8, PKCS#1
    /// or SEC1) at these paths.
    pub fn from_pem_files(
        cert: impl Into<std::path::PathBuf>,
        key: impl Into<std::path::PathBuf>,
    ) -> Self {
        TlsConfig {
            cert: cert.into(),
            key: key.into(),
            reload_on_sighup: false,
            handshake_timeout: DEFAULT_TLS_HANDSHAKE_TIMEOUT,
        }
    }

    /// Reloads the files when the process gets `SIGHUP` (Unix; off by default, because it
    /// installs a process-wide signal handler: a process with none dies on `SIGHUP`).
    pub fn reload_on_sighup(mut self, enabled: bool) -> Self {
        self.reload_on_sighup = enabled;
        self
    }

    /// How long a client may take to finish the handshake (default 10 seconds).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }
}
