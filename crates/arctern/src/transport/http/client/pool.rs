//! The built-in HTTP service: HTTP/1.1 keep-alive connections over TCP (and TLS with the
//! `tls` feature), opened on demand up to a limit, reused while idle.

use std::fmt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::HOST;
use http::uri::{PathAndQuery, Uri};
use http::{HeaderValue, Request, Response};
use http_body::{Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::transport_error;
use crate::{Error, ErrorKind, Result};

/// The default limit on opening a connection (TCP, and the TLS handshake).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle connection stays in the pool by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many idle connections the pool keeps by default.
pub const DEFAULT_MAX_IDLE: usize = 64;
/// How many connections (busy or idle) the pool opens at most by default; further requests
/// wait for one to come free.
pub const DEFAULT_MAX_CONNECTIONS: usize = 128;

/// arctern's own HTTP client: a tower [`Service`](tower_service::Service) of
/// `http::Request<Full<Bytes>>` over pooled HTTP/1.1 keep-alive connections (`TCP_NODELAY`),
/// with HTTPS through rustls when the `tls` feature is on (the default).
///
/// It is what an [`HttpTransport`](super::HttpTransport) uses unless given another
/// service, and what to wrap in tower layers to add behaviour without losing it:
///
/// ```no_run
/// # fn run() -> arctern::Result<()> {
/// use arctern::transport::http::client::{HttpTransport, Pool};
///
/// let pool = Pool::builder().max_connections(16).build();
/// // ... wrap `pool` in layers (headers, tracing, retries) ...
/// let transport = HttpTransport::builder("https://mcp.example.com/mcp").service(pool).build()?;
/// # let _ = transport; Ok(()) }
/// ```
///
/// Requests must carry an absolute URI (`http://` or `https://`). Redirects are never
/// followed. A connection goes back to the pool only once its response body has been read to
/// the end; dropping a body early closes its connection.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("max_idle", &self.inner.max_idle)
            .field("connect_timeout", &self.inner.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`Pool`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until built"]
pub struct PoolBuilder {
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_idle: usize,
    max_connections: usize,
    #[cfg(feature = "tls")]
    tls: super::tls::TlsSettings,
}

impl Default for PoolBuilder {
    fn default() -> Self {
        PoolBuilder {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_idle: DEFAULT_MAX_IDLE,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            #[cfg(feature = "tls")]
            tls: super::tls::TlsSettings::default(),
        }
    }
}

impl PoolBuilder {
    /// The limit on opening a connection, TLS handshake included (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long an idle connection is kept for reuse (default [`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many idle connections are kept for reuse (default [`DEFAULT_MAX_IDLE`]).
    pub fn max_idle(mut self, connections: usize) -> Self {
        self.max_idle = connections;
        self
    }

    /// How many connections may be open at once, busy or idle, to all hosts together
    /// (default [`DEFAULT_MAX_CONNECTIONS`]); requests beyond that wait for one to come free.
    /// Long-lived streams hold theirs.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// Trusts the certificates in `pem` (one or more `CERTIFICATE` blocks) as roots, on top
    /// of the system's and the webpki roots.
    #[cfg(feature = "tls")]
    pub fn add_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self> {
        self.tls.add_pem(pem)?;
        Ok(self)
    }

    /// Trusts the certificates of the PEM file at `path` as roots (see
    /// [`add_root_certificates_pem`](Self::add_root_certificates_pem)).
    #[cfg(feature = "tls")]
    pub fn add_root_certificates_file(mut self, path: impl AsRef<std::path::Path>) -> Result<Self> {
        self.tls.add_file(path.as_ref())?;
        Ok(self)
    }

    /// Whether the operating system's trust store is used (default on).
    #[cfg(feature = "tls")]
    pub fn system_roots(mut self, enabled: bool) -> Self {
        self.tls.system = enabled;
        self
    }

    /// Whether the webpki roots (Mozilla's list, compiled in) are used (default on).
    #[cfg(feature = "tls")]
    pub fn webpki_roots(mut self, enabled: bool) -> Self {
        self.tls.webpki = enabled;
        self
    }

    /// Uses this rustls configuration for every HTTPS connection instead of building one:
    /// roots, client certificates, versions. Its ALPN protocols are replaced by `http/1.1`.
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls.custom = Some(config);
        self
    }

    /// The pool.
    pub fn build(self) -> Pool {
        Pool {
            inner: Arc::new(PoolInner {
                connect_timeout: self.connect_timeout,
                idle_timeout: self.idle_timeout,
                max_idle: self.max_idle,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(self.max_connections)),
                returned: Notify::new(),
                closed: CancellationToken::new(),
                #[cfg(feature = "tls")]
                tls: self.tls,
                #[cfg(feature = "tls")]
                tls_config: std::sync::OnceLock::new(),
            }),
        }
    }
}

impl Pool {
    /// A pool with default settings.
    pub fn new() -> Self {
        PoolBuilder::default().build()
    }

    /// Settings for a pool.
    pub fn builder() -> PoolBuilder {
        PoolBuilder::default()
    }

    /// Sends a request (absolute URI) on a pooled or new connection.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<PoolBody>> {
        self.inner.send(request).await
    }

    /// Closes every idle connection; requests waiting for a connection fail with
    /// [`ErrorKind::Closed`], and no connection is pooled any more.
    pub fn close(&self) {
        self.inner.closed.cancel();
        self.inner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

impl Default for Pool {
    fn default() -> Self {
        Self::new()
    }
}

impl tower_service::Service<Request<Full<Bytes>>> for Pool {
    type Response = Response<PoolBody>;
    type Error = Error;
    type Future = BoxFuture<'static, Result<Response<PoolBody>>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Full<Bytes>>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await })
    }
}

/// Where a connection goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    tls: bool,
    host: String,
    port: u16,
}

impl Origin {
    fn matches(&self, tls: bool, host: &str, port: u16) -> bool {
        self.tls == tls && self.port == port && self.host == host
    }
}

struct PoolInner {
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_idle: usize,
    idle: Mutex<Vec<Idle>>,
    /// One per open connection.
    permits: Arc<Semaphore>,
    /// Signalled when a connection goes back to the pool.
    returned: Notify,
    closed: CancellationToken,
    #[cfg(feature = "tls")]
    tls: super::tls::TlsSettings,
    /// Built at the first HTTPS connection (reading the system's roots takes a while).
    #[cfg(feature = "tls")]
    tls_config: std::sync::OnceLock<std::result::Result<tokio_rustls::TlsConnector, String>>,
}

/// Aborts a task when dropped: dropping a connection closes its socket at once.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 connection.
struct Conn {
    origin: Origin,
    sender: SendRequest<Full<Bytes>>,
    _task: AbortOnDrop,
    _permit: OwnedSemaphorePermit,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

fn closed_error() -> Error {
    Error::new(ErrorKind::Closed, "the transport is closed")
}

impl PoolInner {
    /// An idle connection to this origin. The newest is tried first (the likeliest alive);
    /// closed and stale ones met on the way are dropped.
    fn checkout(&self, tls: bool, host: &str, port: u16) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(at) = idle
            .iter()
            .rposition(|i| i.conn.origin.matches(tls, host, port))
        {
            let candidate = idle.remove(at);
            if !candidate.conn.sender.is_closed() && candidate.since.elapsed() < self.idle_timeout {
                return Some(candidate.conn);
            }
        }
        None
    }

    /// Closes the oldest idle connection (to make room for one to another origin).
    fn evict_one(&self) -> bool {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.is_empty() {
            return false;
        }
        idle.remove(0);
        true
    }

    fn checkin(&self, conn: Conn) {
        if self.closed.is_cancelled() || conn.sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() >= self.max_idle {
            // Full: make room by dropping the closed and stale ones, if any.
            idle.retain(|i| !i.conn.sender.is_closed() && i.since.elapsed() < self.idle_timeout);
        }
        if idle.len() < self.max_idle {
            idle.push(Idle {
                conn,
                since: Instant::now(),
            });
            drop(idle);
            self.returned.notify_one();
        }
    }

    /// A pooled connection, or a new one once the connection limit allows it.
    async fn acquire(&self, tls: bool, host: &str, port: u16) -> Result<(Conn, bool)> {
        loop {
            let returned = self.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(conn) = self.checkout(tls, host, port) {
                return Ok((conn, true));
            }
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return Ok((self.connect(permit, tls, host, port).await?, false));
            }
            // Every connection is taken; an idle one to another origin can make room.
            if self.evict_one() {
                continue;
            }
            tokio::select! {
                () = &mut returned => {}
                permit = self.permits.clone().acquire_owned() => {
                    let permit = permit.map_err(|_| closed_error())?;
                    return Ok((self.connect(permit, tls, host, port).await?, false));
                }
                () = self.closed.cancelled() => return Err(closed_error()),
            }
        }
    }

    async fn connect(
        &self,
        permit: OwnedSemaphorePermit,
        tls: bool,
        host: &str,
        port: u16,
    ) -> Result<Conn> {
        let stream = self.connect_tcp(host, port).await?;
        let origin = Origin {
            tls,
            host: host.to_owned(),
            port,
        };
        if tls {
            #[cfg(feature = "tls")]
            {
                let connector = self.tls_connector()?;
                let stream =
                    super::tls::handshake(connector, host, stream, self.connect_timeout).await?;
                return self.handshake(TokioIo::new(stream), origin, permit).await;
            }
            #[cfg(not(feature = "tls"))]
            return Err(Error::new(
                ErrorKind::Config,
                "https needs arctern's `tls` feature (or another HTTP service)",
            ));
        }
        self.handshake(TokioIo::new(stream), origin, permit).await
    }

    #[cfg(feature = "tls")]
    fn tls_connector(&self) -> Result<tokio_rustls::TlsConnector> {
        self.tls_config
            .get_or_init(|| self.tls.connector().map_err(|e| e.to_string()))
            .clone()
            .map_err(|message| Error::new(ErrorKind::Config, message))
    }

    async fn connect_tcp(&self, host: &str, port: u16) -> Result<TcpStream> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| transport_error(format!("cannot resolve {host}")).with_source(e))?
            .collect();
        let mut last = None;
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    // Small request/response messages: never wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(e)) => last = Some(Error::from(e)),
                Err(_) => {
                    last = Some(Error::new(
                        ErrorKind::Timeout,
                        format!("connecting to {addr} timed out"),
                    ))
                }
            }
        }
        Err(last.unwrap_or_else(|| transport_error(format!("no address for {host}"))))
    }

    async fn handshake<I>(
        &self,
        io: I,
        origin: Origin,
        permit: OwnedSemaphorePermit,
    ) -> Result<Conn>
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| transport_error("HTTP handshake failed").with_source(e))?;
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended");
            }
        });
        Ok(Conn {
            origin,
            sender,
            _task: AbortOnDrop(task),
            _permit: permit,
        })
    }

    async fn send(
        self: &Arc<Self>,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<PoolBody>> {
        if self.closed.is_cancelled() {
            return Err(closed_error());
        }
        let uri = request.uri().clone();
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("{uri} is not an absolute http:// or https:// URL"),
                ));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| Error::new(ErrorKind::Config, format!("{uri} has no host")))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        if !request.headers().contains_key(HOST) {
            let value = HeaderValue::from_str(authority.as_str())
                .map_err(|e| Error::new(ErrorKind::Config, "invalid host").with_source(e))?;
            request.headers_mut().insert(HOST, value);
        }
        // HTTP/1.1 to an origin server: the request line carries the path only.
        *request.uri_mut() = Uri::from(
            uri.path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
        );
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut conn, reused) = self.acquire(tls, host, port).await?;
            if let Err(e) = conn.sender.ready().await {
                if reused && tries < 8 {
                    continue;
                }
                return Err(transport_error("the HTTP connection closed").with_source(e));
            }
            match conn.sender.try_send_request(request).await {
                Ok(response) => {
                    return Ok(response.map(|incoming| PoolBody {
                        incoming,
                        conn: Some(conn),
                        pool: self.clone(),
                    }));
                }
                Err(mut e) => match e.take_message() {
                    // Not sent at all (the pooled connection was going away): safe to retry.
                    Some(again) if reused && tries < 8 => request = again,
                    _ => {
                        return Err(
                            transport_error("the HTTP request failed").with_source(e.into_error())
                        );
                    }
                },
            }
        }
    }
}

/// The body of a response from a [`Pool`]: its connection goes back to the pool when the
/// body has been read to the end, and is closed when the body is dropped before.
pub struct PoolBody {
    incoming: Incoming,
    conn: Option<Conn>,
    pool: Arc<PoolInner>,
}

impl fmt::Debug for PoolBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBody").finish_non_exhaustive()
    }
}

impl http_body::Body for PoolBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.incoming).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                if let Some(conn) = this.conn.take() {
                    this.pool.checkin(conn);
                }
            }
            Poll::Ready(Some(Err(_))) => this.conn = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
