//! A standalone HTTP server: accept loop, one hyper connection task per socket, graceful
//! shutdown.

use std::fmt;
use std::future::{Future, pending};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::body::ResponseBody;
#[cfg(feature = "tls")]
use super::config::TlsConfig;
use super::config::{DEFAULT_PATH, DEFAULT_SHUTDOWN_GRACE, HttpConfig};
use super::service::{ResponseFuture, StreamableHttpService};
use crate::server::{Handler, McpServer, Server};
use crate::{Error, ErrorKind, Result};

/// A pause after an accept error that is not about one connection (such as running out of
/// file descriptors), so that the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

#[cfg(feature = "tls")]
pub use tls::TlsReloader;

/// A standalone Streamable HTTP server for a [`Server`].
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern::transport::http::HttpServer;
///
/// # async fn run() -> arctern::Result<()> {
/// let server = McpServer::new("demo").build()?;
/// let bound = HttpServer::new(server)
///     .bind("127.0.0.1:0")
///     .path("/mcp")
///     .listen()
///     .await?;
/// println!("serving on http://{}/mcp", bound.local_addr());
/// bound
///     .serve_with_shutdown(async { let _ = tokio::signal::ctrl_c().await; })
///     .await
/// # }
/// ```
///
/// Every accepted socket gets `TCP_NODELAY` (an SSE reply otherwise waits for delayed ACKs,
/// about 40 ms per reply). The server stops on its shutdown signal or when
/// [`Server::shutdown`] is called: it stops accepting, ends open `subscriptions/listen`
/// streams with their final result, cancels in-flight requests, lets connections finish for
/// at most the grace period ([`shutdown_grace`](Self::shutdown_grace)), and returns. A
/// [`Server`] that has been shut down stays shut down: serving it again returns at once.
///
/// Localhost-only `Host`/`Origin` checking (see [`HttpConfig`]) is on by default when the
/// server is bound to a loopback address or to every interface (`0.0.0.0`, `[::]`), which
/// loopback clients reach too; name the hosts clients use with
/// [`HttpConfig::allow_host`]. A server bound to another address with no allowed host
/// checks only `Origin`, and says so at start-up with a warning.
///
/// With the `tls` feature, [`tls`](Self::tls) serves HTTPS (see [`TlsConfig`]).
pub struct HttpServer<H> {
    server: Server<H>,
    bind: Bind,
    path: String,
    config: HttpConfig,
    grace: Duration,
    #[cfg(feature = "tls")]
    tls: Option<TlsConfig>,
    #[cfg(feature = "auth")]
    protected: Option<crate::auth::resource::ProtectedResource>,
}

enum Bind {
    Unset,
    Addrs(io::Result<Vec<SocketAddr>>),
    Listener(TcpListener),
}

impl<H> fmt::Debug for HttpServer<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("path", &self.path)
            .field("config", &self.config)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl<H: Handler> HttpServer<H> {
    /// A server for `server`, serving [`DEFAULT_PATH`] (`/mcp`) once given an address with
    /// [`bind`](Self::bind) or a listener with [`listener`](Self::listener).
    pub fn new(server: Server<H>) -> Self {
        HttpServer {
            server,
            bind: Bind::Unset,
            path: DEFAULT_PATH.to_owned(),
            config: HttpConfig::default(),
            grace: DEFAULT_SHUTDOWN_GRACE,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "auth")]
            protected: None,
        }
    }

    /// Protects the MCP endpoint as an OAuth 2.1 resource server: every request to it goes
    /// through `resource`'s checks ([`ProtectedResource::layer`]), and its metadata is
    /// served at both well-known URIs. The resource's URI should be this server's URL
    /// (bind first, or give a [`listener`](Self::listener), when the port is picked at
    /// run time). See the [authorization guide](crate::docs::authorization).
    ///
    /// [`ProtectedResource::layer`]: crate::auth::resource::ProtectedResource::layer
    #[cfg(feature = "auth")]
    pub fn protect(mut self, resource: crate::auth::resource::ProtectedResource) -> Self {
        self.protected = Some(resource);
        self
    }

    /// Serves HTTPS with this certificate and key (see [`TlsConfig`]).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The address to listen on, such as `"127.0.0.1:8000"` (port 0 picks a free port; see
    /// [`BoundHttpServer::local_addr`]). Resolved right away; a host name is looked up with
    /// the system resolver, and errors surface from [`listen`](Self::listen).
    pub fn bind(mut self, addr: impl ToSocketAddrs) -> Self {
        self.bind = Bind::Addrs(addr.to_socket_addrs().map(Iterator::collect));
        self
    }

    /// Serves on a listener bound elsewhere.
    pub fn listener(mut self, listener: TcpListener) -> Self {
        self.bind = Bind::Listener(listener);
        self
    }

    /// The path of the MCP endpoint (default `/mcp`); other paths answer `404`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The transport configuration.
    pub fn config(mut self, config: HttpConfig) -> Self {
        self.config = config;
        self
    }

    /// How long connections may take to finish after a shutdown signal before they are
    /// closed (default 10 seconds).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Binds the listener, so that the address is known before serving.
    pub async fn listen(self) -> Result<BoundHttpServer<H>> {
        if !self.path.starts_with('/') {
            return Err(Error::new(
                ErrorKind::Config,
                format!("the MCP path must start with '/', not {:?}", self.path),
            ));
        }
        let listener = match self.bind {
            Bind::Unset => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "HttpServer needs an address (bind) or a listener (listener)",
                ));
            }
            Bind::Addrs(addrs) => {
                let addrs = addrs?;
                if addrs.is_empty() {
                    return Err(Error::new(
                        ErrorKind::Config,
                        "the address to bind resolved to nothing",
                    ));
                }
                TcpListener::bind(&addrs[..]).await?
            }
            Bind::Listener(listener) => listener,
        };
        #[cfg(feature = "tls")]
        let tls = match &self.tls {
            Some(config) => Some(tls::Tls::new(config.clone())?),
            None => None,
        };
        let local_addr = listener.local_addr()?;
        // A wildcard bind (0.0.0.0, [::]) answers on loopback too, so it gets the loopback
        // default: Host must be a loopback name unless hosts are allowed explicitly.
        let ip = local_addr.ip();
        let local_default = ip.is_loopback() || ip.is_unspecified();
        warn_about_exposure(&local_addr, &self.config, local_default);
        let header_read_timeout = self.config.header_read_timeout;
        let max_connections = self.config.max_connections;
        let service =
            StreamableHttpService::with_default_localhost(self.server, self.config, local_default);
        tracing::info!(%local_addr, path = %self.path, "MCP Streamable HTTP server listening");
        Ok(BoundHttpServer {
            listener,
            local_addr,
            routed: Routed {
                #[cfg(feature = "auth")]
                protected: self.protected.map(|resource| {
                    Arc::new(Protection {
                        metadata: resource.metadata_service(),
                        paths: resource.metadata_paths(),
                        guarded: resource.layer().wrap(service.clone()),
                    })
                }),
                service,
                path: self.path.into(),
                peer: None,
            },
            header_read_timeout,
            max_connections,
            grace: self.grace,
            #[cfg(feature = "tls")]
            tls,
        })
    }

    /// Binds and serves until [`Server::shutdown`] is called.
    pub async fn serve(self) -> Result<()> {
        self.listen().await?.serve().await
    }

    /// Binds and serves until `signal` completes or [`Server::shutdown`] is called, then
    /// shuts down gracefully.
    pub async fn serve_with_shutdown(self, signal: impl Future<Output = ()>) -> Result<()> {
        self.listen().await?.serve_with_shutdown(signal).await
    }
}

/// An [`HttpServer`] whose listener is bound: its address is known, and it is ready to
/// serve.
pub struct BoundHttpServer<H> {
    listener: TcpListener,
    local_addr: SocketAddr,
    routed: Routed<H>,
    header_read_timeout: Duration,
    max_connections: usize,
    grace: Duration,
    #[cfg(feature = "tls")]
    tls: Option<tls::Tls>,
}

impl<H> fmt::Debug for BoundHttpServer<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundHttpServer")
            .field("local_addr", &self.local_addr)
            .field("path", &self.routed.path)
            .finish_non_exhaustive()
    }
}

impl<H: Handler> BoundHttpServer<H> {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL of the MCP endpoint, such as `http://127.0.0.1:8000/mcp` (`https://` with
    /// TLS).
    pub fn url(&self) -> String {
        #[cfg(feature = "tls")]
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        #[cfg(not(feature = "tls"))]
        let scheme = "http";
        format!("{scheme}://{}{}", self.local_addr, self.routed.path)
    }

    /// The handle that reloads the certificate and key, when serving TLS.
    #[cfg(feature = "tls")]
    pub fn tls_reloader(&self) -> Option<TlsReloader> {
        self.tls.as_ref().map(|t| t.reloader.clone())
    }

    /// Serves until [`Server::shutdown`] is called.
    pub async fn serve(self) -> Result<()> {
        self.serve_with_shutdown(pending()).await
    }

    /// Serves until `signal` completes or [`Server::shutdown`] is called, then shuts down
    /// gracefully (see [`HttpServer`]).
    pub async fn serve_with_shutdown(self, signal: impl Future<Output = ()>) -> Result<()> {
        let BoundHttpServer {
            listener,
            local_addr,
            routed,
            header_read_timeout,
            max_connections,
            grace,
            #[cfg(feature = "tls")]
            tls,
        } = self;
        let server = routed.service.server().clone();
        let stopping = server.shutdown_token().clone();
        let closing = CancellationToken::new();
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .keep_alive(true);
        // One permit per open connection: at the limit the loop stops accepting, and new
        // clients wait in the listen backlog until a connection closes.
        let slots = Arc::new(Semaphore::new(max_connections));
        let at_limit = crate::log_limit::RateLimited::new(Duration::from_secs(10));
        let builder = Arc::new(builder);
        let mut connections = JoinSet::new();
        #[cfg(feature = "tls")]
        let _reloading = tls.as_ref().and_then(|t| t.watch_sighup(closing.clone()));
        let mut signal = std::pin::pin!(signal);
        loop {
            tokio::select! {
                () = &mut signal => break,
                () = stopping.cancelled() => break,
                Some(done) = connections.join_next(), if !connections.is_empty() => {
                    if let Err(e) = done
                        && e.is_panic()
                    {
                        tracing::error!("an HTTP connection task panicked");
                    }
                }
                // Boxed (once per accepted connection): the serving future stays small.
                (slot, accepted) = Box::pin(accept_within(&listener, &slots, &at_limit, max_connections)) => match accepted {
                    Ok((stream, peer)) => {
                        let routed = routed.for_peer(peer);
                        #[cfg(feature = "tls")]
                        if let Some(tls) = &tls {
                            let serving = tls::serve_tls(
                                tls.acceptor(),
                                stream,
                                peer,
                                routed,
                                builder.clone(),
                                closing.clone(),
                            );
                            spawn_connection(&mut connections, serving, slot);
                            continue;
                        }
                        let serving = serve_connection(
                            TokioIo::new(stream),
                            peer,
                            routed,
                            builder.clone(),
                            closing.clone(),
                        );
                        spawn_connection(&mut connections, serving, slot);
                    }
                    Err(e) if is_per_connection(&e) => {
                        tracing::debug!(error = %e, "a connection failed while being accepted");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting connections failed; retrying");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                },
            }
        }
        drop(listener);
        tracing::info!(%local_addr, open = connections.len(), "MCP HTTP server shutting down");
        // Listen streams send their final result; in-flight requests see cancellation.
        server.shutdown();
        closing.cancel();
        let drained = tokio::time::timeout(grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                open = connections.len(),
                "connections still open after the shutdown grace period; closing them"
            );
            connections.shutdown().await;
        }
        Ok(())
    }
}

/// Warns at start-up when the bind leaves the server open to DNS rebinding, or answers
/// fewer hosts than its operator may expect.
fn warn_about_exposure(local_addr: &SocketAddr, config: &HttpConfig, local_default: bool) {
    let localhost_only = config.localhost_only.unwrap_or(local_default);
    let ip = local_addr.ip();
    if !localhost_only && config.allowed_hosts.is_empty() && !ip.is_loopback() {
        tracing::warn!(
            %local_addr,
            "localhost-only checking is off and no host is allowed: the Host header is not \
             checked, so pages on other sites can reach this server by DNS rebinding; name \
             the host clients use with HttpConfig::allow_host"
        );
    } else if ip.is_unspecified() && localhost_only && config.allowed_hosts.is_empty() {
        tracing::warn!(
            %local_addr,
            "bound to every interface, but only requests whose Host is a loopback name \
             (localhost, 127.0.0.1, [::1]) are answered; name the host clients use with \
             HttpConfig::allow_host"
        );
    }
}

/// Serves one accepted connection as a task of `connections`, which holds the connection's
/// slot until it closes.
fn spawn_connection(
    connections: &mut JoinSet<()>,
    serving: impl Future<Output = ()> + Send + 'static,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    connections.spawn(async move {
        serving.await;
        drop(slot);
    });
}

/// Waits for a free connection slot (logging, at most every few seconds, when there is
/// none), then accepts a connection. Cancel-safe: dropped before accepting, it takes
/// nothing.
async fn accept_within(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
    at_limit: &crate::log_limit::RateLimited,
    max_connections: usize,
) -> (
    tokio::sync::OwnedSemaphorePermit,
    io::Result<(TcpStream, SocketAddr)>,
) {
    let slot = match slots.clone().try_acquire_owned() {
        Ok(slot) => slot,
        Err(_) => {
            at_limit.log(|suppressed| {
                tracing::warn!(
                    limit = max_connections,
                    suppressed,
                    "at the connection limit (HttpConfig::max_connections); new connections wait"
                );
            });
            slots
                .clone()
                .acquire_owned()
                .await
                .expect("the connection semaphore is never closed")
        }
    };
    (slot, accept(listener).await)
}

/// Accepts one connection and prepares its socket.
pub(crate) async fn accept(listener: &TcpListener) -> io::Result<(TcpStream, SocketAddr)> {
    let (stream, peer) = listener.accept().await?;
    prepare_socket(&stream);
    Ok((stream, peer))
}

/// Turns Nagle's algorithm off: an SSE reply leaves in several small writes, and with Nagle
/// the last one waits for the client's delayed ACK (~40 ms per reply).
fn prepare_socket(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}

/// Accept errors that concern one connection only (the client gave up before we accepted).
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

async fn serve_connection<H: Handler, I>(
    io: I,
    peer: SocketAddr,
    routed: Routed<H>,
    builder: Arc<http1::Builder>,
    closing: CancellationToken,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let connection = builder.serve_connection(io, routed);
    let mut connection = std::pin::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = closing.cancelled() => {
            // Finish the request in flight (a listen stream ends with its final result),
            // then close instead of waiting for the next one.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
    }
}

/// The MCP service at one path (behind its protection, if any; with the metadata at the
/// well-known paths); everything else is `404`.
struct Routed<H> {
    service: StreamableHttpService<H>,
    path: Arc<str>,
    /// The remote address of the connection served.
    peer: Option<SocketAddr>,
    #[cfg(feature = "auth")]
    protected: Option<Arc<Protection<H>>>,
}

/// A protected MCP endpoint: the service behind the checks, and the metadata.
#[cfg(feature = "auth")]
struct Protection<H> {
    guarded: crate::auth::resource::AuthService<StreamableHttpService<H>>,
    metadata: crate::auth::resource::MetadataService,
    paths: [String; 2],
}

impl<H> Routed<H> {
    fn for_peer(&self, peer: SocketAddr) -> Self {
        Routed {
            service: self.service.clone(),
            path: self.path.clone(),
            peer: Some(peer),
            #[cfg(feature = "auth")]
            protected: self.protected.clone(),
        }
    }
}

fn not_found() -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::empty());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

#[cfg(not(feature = "auth"))]
impl<H: Handler> hyper::service::Service<Request<Incoming>> for Routed<H> {
    type Response = Response<ResponseBody>;
    type Error = std::convert::Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: Request<Incoming>) -> ResponseFuture {
        if request.uri().path() == &*self.path {
            self.service.dispatch(request, self.peer)
        } else {
            ResponseFuture::ready(not_found()).instance(self.service.instance_header())
        }
    }
}

#[cfg(feature = "auth")]
type RoutedFuture = futures::future::Either<
    futures::future::MapOk<
        ResponseFuture,
        fn(Response<ResponseBody>) -> Response<crate::auth::resource::AuthBody<ResponseBody>>,
    >,
    futures::future::BoxFuture<
        'static,
        std::result::Result<
            Response<crate::auth::resource::AuthBody<ResponseBody>>,
            std::convert::Infallible,
        >,
    >,
>;

#[cfg(feature = "auth")]
impl<H: Handler> hyper::service::Service<Request<Incoming>> for Routed<H> {
    type Response = Response<crate::auth::resource::AuthBody<ResponseBody>>;
    type Error = std::convert::Infallible;
    type Future = RoutedFuture;

    fn call(&self, request: Request<Incoming>) -> RoutedFuture {
        use crate::auth::resource::AuthBody;
        use futures::TryFutureExt as _;
        use futures::future::Either;
        let plain: fn(Response<ResponseBody>) -> Response<AuthBody<ResponseBody>> =
            |r| r.map(AuthBody::inner);
        let path = request.uri().path();
        match &self.protected {
            None if path == &*self.path => {
                Either::Left(self.service.dispatch(request, self.peer).map_ok(plain))
            }
            None => Either::Left(
                ResponseFuture::ready(not_found())
                    .instance(self.service.instance_header())
                    .map_ok(plain),
            ),
            Some(p) if path == &*self.path => {
                let mut guarded = p.guarded.clone();
                Either::Right(tower_service::Service::call(&mut guarded, request))
            }
            Some(p) if p.paths.iter().any(|m| m == path) => {
                let response = p.metadata.respond(&request).map(AuthBody::full);
                Either::Right(Box::pin(std::future::ready(Ok(response))))
            }
            Some(_) => Either::Left(
                ResponseFuture::ready(not_found())
                    .instance(self.service.instance_header())
                    .map_ok(plain),
            ),
        }
    }
}

impl<H: Handler> Server<H> {
    /// Serves this server over Streamable HTTP at `addr`, path `/mcp`, with the default
    /// [`HttpConfig`], until [`Server::shutdown`] is called. Use [`HttpServer`] for more
    /// control (a shutdown signal, another path, the bound address).
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<()> {
        HttpServer::new(self).bind(addr).serve().await
    }
}

impl<S: Clone + Send + Sync + 'static> McpServer<S> {
    /// Builds the server and serves it over Streamable HTTP at `addr`, path `/mcp` (see
    /// [`Server::serve_http`]). Handlers that cannot be registered fail with an
    /// [`ErrorKind::Config`] error before anything is bound.
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<()> {
        let server = self.build()?;
        server.serve_http(addr).await
    }
}

/// TLS: the acceptor, a certificate that can be swapped, and the reload triggers.
#[cfg(feature = "tls")]
mod tls {
    use std::fmt;
    use std::net::SocketAddr;
    use std::sync::Arc;

    use arc_swap::ArcSwap;
    use hyper::server::conn::http1;
    use hyper_util::rt::TokioIo;
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::server::{ClientHello, ResolvesServerCert};
    use rustls::sign::CertifiedKey;
    use tokio::net::TcpStream;
    use tokio_util::sync::CancellationToken;

    use super::{Routed, serve_connection};
    use crate::server::Handler;
    use crate::transport::http::server::config::TlsConfig;
    use crate::{Error, ErrorKind, Result};

    pub(super) struct Tls {
        acceptor: tokio_rustls::TlsAcceptor,
        pub(super) reloader: TlsReloader,
    }

    impl Tls {
        pub(super) fn new(config: TlsConfig) -> Result<Self> {
            let current = Arc::new(Current(ArcSwap::from(load(&config)?)));
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut server = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::new(ErrorKind::Config, "TLS configuration").with_source(e))?
                .with_no_client_auth()
                .with_cert_resolver(current.clone());
            server.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Tls {
                acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
                reloader: TlsReloader { config, current },
            })
        }

        /// The acceptor and the handshake deadline.
        pub(super) fn acceptor(&self) -> (tokio_rustls::TlsAcceptor, std::time::Duration) {
            (
                self.acceptor.clone(),
                self.reloader.config.handshake_timeout,
            )
        }

        /// Reloads on `SIGHUP` until `closing`, when configured; the task's handle.
        pub(super) fn watch_sighup(&self, closing: CancellationToken) -> Option<AbortOnDrop> {
            if !self.reloader.config.reload_on_sighup {
                return None;
            }
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                let mut hangups = match signal(SignalKind::hangup()) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for SIGHUP; TLS reload on signal is off");
                        return None;
                    }
                };
                let reloader = self.reloader.clone();
                let task = tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            () = closing.cancelled() => return,
                            got = hangups.recv() => {
                                if got.is_none() {
                                    return;
                                }
                                tracing::info!("SIGHUP: reloading the TLS certificate");
                                let _ = reloader.reload();
                            }
                        }
                    }
                });
                Some(AbortOnDrop(task))
            }
            #[cfg(not(unix))]
            {
                let _ = closing;
                tracing::warn!("TLS reload on SIGHUP needs Unix");
                None
            }
        }
    }

    /// Aborts the signal task when the server stops.
    pub(super) struct AbortOnDrop(tokio::task::JoinHandle<()>);

    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }

    /// The certificate new handshakes get.
    #[derive(Debug)]
    struct Current(ArcSwap<CertifiedKey>);

    impl ResolvesServerCert for Current {
        fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            Some(self.0.load_full())
        }
    }

    /// Reloads the standalone server's certificate and key from their files (see
    /// [`TlsConfig`]). Cheap to clone.
    #[derive(Clone)]
    pub struct TlsReloader {
        config: TlsConfig,
        current: Arc<Current>,
    }

    impl fmt::Debug for TlsReloader {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("TlsReloader")
                .field("cert", &self.config.cert)
                .field("key", &self.config.key)
                .finish()
        }
    }

    impl TlsReloader {
        /// Reads the files again and uses them for new handshakes; open connections keep
        /// theirs. On failure the old certificate stays, and the error says why.
        pub fn reload(&self) -> Result<()> {
            match load(&self.config) {
                Ok(key) => {
                    self.current.0.store(key);
                    tracing::info!(cert = %self.config.cert.display(), "reloaded the TLS certificate");
                    Ok(())
                }
                Err(e) => {
                    tracing::error!(error = %e, "TLS reload failed; keeping the current certificate");
                    Err(e)
                }
            }
        }
    }

    fn load(config: &TlsConfig) -> Result<Arc<CertifiedKey>> {
        let bad = |what: String| Error::new(ErrorKind::Config, what);
        let cert_pem = std::fs::read(&config.cert).map_err(|e| {
            bad(format!(
                "cannot read the TLS certificate {}",
                config.cert.display()
            ))
            .with_source(e)
        })?;
        let key_pem = std::fs::read(&config.key).map_err(|e| {
            bad(format!("cannot read the TLS key {}", config.key.display())).with_source(e)
        })?;
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| bad(format!("invalid PEM in {}", config.cert.display())).with_source(e))?;
        if certs.is_empty() {
            return Err(bad(format!("no certificate in {}", config.cert.display())));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            bad(format!("no private key in {}", config.key.display())).with_source(e)
        })?;
        let signer = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| bad("unsupported TLS private key".to_owned()).with_source(e))?;
        let certified = CertifiedKey::new(certs, signer);
        certified.keys_match().map_err(|e| {
            bad("the TLS key does not match the certificate".to_owned()).with_source(e)
        })?;
        Ok(Arc::new(certified))
    }

    /// Does the handshake (bounded by the configured timeout), then serves the connection.
    pub(super) async fn serve_tls<H: Handler>(
        (acceptor, timeout): (tokio_rustls::TlsAcceptor, std::time::Duration),
        stream: TcpStream,
        peer: SocketAddr,
        routed: Routed<H>,
        builder: Arc<http1::Builder>,
        closing: CancellationToken,
    ) {
        let handshake = tokio::time::timeout(timeout, acceptor.accept(stream));
        let tls = tokio::select! {
            done = handshake => match done {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            },
            () = closing.cancelled() => return,
        };
        serve_connection(TokioIo::new(tls), peer, routed, builder, closing).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_sockets_have_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(TcpStream::connect(addr));
        let (stream, _) = accept(&listener).await.unwrap();
        assert!(socket2::SockRef::from(&stream).tcp_nodelay().unwrap());
        drop(client.await.unwrap().unwrap());
    }

    #[test]
    fn the_serving_future_is_small() {
        // It sits in the caller's future (often `main`'s, on the main thread's stack), so it
        // holds the listener and the accept loop, not a connection's state.
        let server = crate::server::McpServer::new("t").build().unwrap();
        let serving = server.serve_http(("127.0.0.1", 0));
        let size = std::mem::size_of_val(&serving);
        assert!(size <= 2048, "serve_http's future is {size} bytes");
    }

    #[test]
    fn per_connection_errors() {
        assert!(is_per_connection(&io::Error::from(
            io::ErrorKind::ConnectionAborted
        )));
        assert!(!is_per_connection(&io::Error::other("EMFILE")));
    }
}
