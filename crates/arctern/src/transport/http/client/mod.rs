//! The client side of Streamable HTTP: one `POST` per message, over arctern's own pooled
//! HTTP/1.1 client ([`Pool`], HTTPS with the `tls` feature) or over any tower
//! [`Service`](tower_service::Service) of HTTP requests.
//!
//! - The byte pipe is pluggable ([`HttpTransportBuilder::service`]); SSE parsing, session
//!   ids, `Last-Event-ID` resumption and authorization stay in the transport.
//! - HTTPS (feature `tls`, on by default): rustls on the ring provider; the roots are the
//!   operating system's trust store, the webpki roots, the PEM file named by `SSL_CERT_FILE`
//!   and any given to [`HttpTransportBuilder::add_root_certificates_pem`] or
//!   [`add_root_certificates_file`](HttpTransportBuilder::add_root_certificates_file). A
//!   certificate that does not verify fails with [`ErrorKind::Tls`].
//! - A response is a single JSON body (a concatenation of JSON values is read as several
//!   messages, which also covers newline-delimited JSON streams) or an SSE stream (comments,
//!   `event:`, `id:` and `retry:` lines are ignored; multi-line `data:` is joined).
//! - Dropping a response stream before its end closes its connection, which a 2026-07-28
//!   server treats as cancellation of the request.
//! - Every message is bounded ([`HttpTransportBuilder::max_message_size`], 16 MiB by
//!   default); malformed input fails the request it arrived on, never the process.
//! - Legacy (2025-era) sessions: the `Mcp-Session-Id` a server assigns in its answer to
//!   `initialize` is sent with every later request; [`Transport::listen`] opens the `GET`
//!   stream; [`Transport::close`] ends the session with `DELETE`. An SSE stream that ends
//!   before the final response after the server gave its events ids is resumed with `GET`
//!   and `Last-Event-ID`, after the server's `retry` delay (SEP-1699 polling).
//! - An [`Authorizer`] (OAuth 2.1: `arctern::auth::client`) adds credentials to every
//!   request — `POST`, the `GET` stream, its resumptions, `DELETE` — and answers `401` and
//!   `403` challenges, after which the request is sent again.
//! - A response with an error status and no JSON-RPC message fails with an error whose
//!   [`http_status`](crate::Error::http_status) is that status (and whose
//!   [`source`](std::error::Error::source) is an [`HttpStatusError`]).

mod body;
mod pool;
mod service;
mod sse;
#[cfg(feature = "tls")]
mod tls;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::Full;
use tokio_util::sync::CancellationToken;

use crate::transport::{MessageStream, OutgoingMessage, Transport};
use crate::{Error, ErrorKind, Result};

use body::{Body, JsonStream, RawBody};
use service::{Pipe, boxed_response, service_error};
use sse::{Resume, SseStream};
// The fuzz targets' way into the SSE parser (see `crate::__fuzz`).
#[cfg(fuzzing)]
pub(crate) use sse::SseParser;

pub use pool::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IDLE, Pool,
    PoolBody, PoolBuilder,
};
pub use service::{Authorizer, Challenge, Fetched, Fetcher};

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The default bound on one message (and on one response body that is not a stream).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// How many times one request is sent again after its [`Authorizer`] answered a challenge.
pub const MAX_CHALLENGES: u32 = 6;

/// The wait for the `DELETE` that ends a legacy session.
const END_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The protocol version header (kept for the session's `GET` and `DELETE`).
use crate::transport::headers::MCP_PROTOCOL_VERSION;
/// The legacy session header.
use crate::transport::headers::MCP_SESSION_ID;

/// The HTTP status of a response that carried no JSON-RPC message: the
/// [`source`](std::error::Error::source) of the transport error it produced. A client uses
/// it to tell a server that does not speak the modern protocol (a `4xx` without a modern
/// error body) from a connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpStatusError {
    /// The status.
    pub status: StatusCode,
}

impl fmt::Display for HttpStatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.status)
    }
}

impl std::error::Error for HttpStatusError {}

fn status_error(status: StatusCode, message: String) -> Error {
    transport_error(message)
        .with_http_status(status.as_u16())
        .with_source(HttpStatusError { status })
}

fn transport_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::Transport, message)
}

/// A Streamable HTTP client transport for one MCP endpoint URL.
///
/// ```no_run
/// # async fn run() -> arctern::Result<()> {
/// use arctern::client::Client;
/// use arctern::transport::http::client::HttpTransport;
///
/// let transport = HttpTransport::builder("https://mcp.example.com/mcp")
///     .header("x-team", "blue")?
///     .build()?;
/// let client = Client::builder().connect_with(transport).await?;
/// # let _ = client; Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpTransport {
    inner: Arc<Inner>,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.inner.url)
            .finish_non_exhaustive()
    }
}

/// Settings of an [`HttpTransport`].
#[must_use = "a builder does nothing until built"]
pub struct HttpTransportBuilder {
    url: String,
    headers: HeaderMap,
    max_message_size: usize,
    pool: PoolBuilder,
    service: Option<Pipe>,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransportBuilder")
            .field("url", &self.url)
            .field("max_message_size", &self.max_message_size)
            .field("pool", &self.pool)
            .field("custom_service", &self.service.is_some())
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpTransportBuilder {
    /// Adds a header sent with every request.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| Error::new(ErrorKind::Config, "invalid header name").with_source(e))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| Error::new(ErrorKind::Config, "invalid header value").with_source(e))?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// The largest message (and non-streamed body) accepted from the server.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1024);
        self
    }

    /// The limit on opening a connection, TLS handshake included (built-in pool only).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.pool = self.pool.connect_timeout(timeout);
        self
    }

    /// How long an idle connection is kept for reuse (built-in pool only).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool = self.pool.idle_timeout(timeout);
        self
    }

    /// How many idle connections are kept for reuse (built-in pool only).
    pub fn max_idle(mut self, connections: usize) -> Self {
        self.pool = self.pool.max_idle(connections);
        self
    }

    /// How many connections may be open at once (busy or idle); requests beyond that wait
    /// for a connection to come free. Long-lived subscriptions hold theirs (built-in pool
    /// only).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.pool = self.pool.max_connections(connections);
        self
    }

    /// Trusts the certificates in `pem` as roots, on top of the system's and the webpki
    /// roots (built-in pool only).
    #[cfg(feature = "tls")]
    pub fn add_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self> {
        self.pool = self.pool.add_root_certificates_pem(pem)?;
        Ok(self)
    }

    /// Trusts the certificates of the PEM file at `path` as roots (built-in pool only).
    #[cfg(feature = "tls")]
    pub fn add_root_certificates_file(self, path: impl AsRef<std::path::Path>) -> Result<Self> {
        let pool = self.pool.clone().add_root_certificates_file(path)?;
        Ok(HttpTransportBuilder { pool, ..self })
    }

    /// The settings of the built-in pool, all at once (replaces those set before).
    pub fn pool(mut self, pool: PoolBuilder) -> Self {
        self.pool = pool;
        self
    }

    /// Sends every request through `service` instead of the built-in [`Pool`]: another HTTP
    /// stack, a proxy, or the pool wrapped in tower layers. Requests carry absolute URIs and
    /// a `Host` header; responses must not be redirects followed on the transport's behalf
    /// (a redirect is answered as an error status). The pool settings of this builder are
    /// then unused.
    pub fn service<S, B>(mut self, service: S) -> Self
    where
        S: tower_service::Service<Request<Full<Bytes>>, Response = Response<B>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        // Boxed here, where the service's bounds are stated: one boxed call per request.
        self.service = Some(Pipe::Service(Arc::new(
            move |request: Request<Full<Bytes>>| -> BoxFuture<'static, Result<Response<RawBody>>> {
                let mut service = service.clone();
                Box::pin(async move {
                    std::future::poll_fn(|cx| service.poll_ready(cx))
                        .await
                        .map_err(service_error)?;
                    let response = service.call(request).await.map_err(service_error)?;
                    Ok(boxed_response(response))
                })
            },
        )));
        self
    }

    /// Adds credentials to every request and answers the server's challenges (OAuth 2.1:
    /// `arctern::auth::client::OAuth`).
    pub fn authorizer(mut self, authorizer: impl Authorizer) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// The transport.
    pub fn build(self) -> Result<HttpTransport> {
        let uri: Uri = self.url.parse().map_err(|e| {
            Error::new(ErrorKind::Config, "invalid MCP endpoint URL").with_source(e)
        })?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "the MCP endpoint URL must start with http:// or https://",
                ));
            }
        }
        #[cfg(not(feature = "tls"))]
        if uri.scheme_str() == Some("https") && self.service.is_none() {
            return Err(Error::new(
                ErrorKind::Config,
                "https needs arctern's `tls` feature, or another HTTP service",
            ));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| Error::new(ErrorKind::Config, "the MCP endpoint URL has no host"))?
            .clone();
        if uri.path_and_query().is_none() {
            return Err(Error::new(
                ErrorKind::Config,
                "the MCP endpoint URL has no path",
            ));
        }
        let host_header = HeaderValue::from_str(authority.as_str())
            .map_err(|e| Error::new(ErrorKind::Config, "invalid host").with_source(e))?;
        let pipe = self
            .service
            .unwrap_or_else(|| Pipe::Pool(self.pool.build()));
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                url: self.url,
                uri,
                host_header,
                headers: self.headers,
                max_message_size: self.max_message_size,
                pipe,
                authorizer: self.authorizer,
                closed: CancellationToken::new(),
                session: Mutex::new(None),
                version: Mutex::new(None),
            }),
        })
    }
}

impl HttpTransport {
    /// A transport for the endpoint at `url` with default settings.
    pub fn new(url: &str) -> Result<Self> {
        Self::builder(url).build()
    }

    /// Settings for the endpoint at `url`.
    pub fn builder(url: &str) -> HttpTransportBuilder {
        HttpTransportBuilder {
            url: url.to_owned(),
            headers: HeaderMap::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            pool: PoolBuilder::default(),
            service: None,
            authorizer: None,
        }
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The transport's HTTP service, for requests beside MCP's own (no authorizer on them).
    pub fn fetcher(&self) -> Fetcher {
        Fetcher::new(self.inner.pipe.clone(), self.inner.closed.clone())
    }
}

struct Inner {
    url: String,
    /// The endpoint, absolute.
    uri: Uri,
    host_header: HeaderValue,
    headers: HeaderMap,
    max_message_size: usize,
    pipe: Pipe,
    authorizer: Option<Arc<dyn Authorizer>>,
    closed: CancellationToken,
    /// The legacy session id, from the answer to `initialize`.
    session: Mutex<Option<HeaderValue>>,
    /// The last `MCP-Protocol-Version` sent (for the session's `GET` and `DELETE`).
    version: Mutex<Option<HeaderValue>>,
}

impl Inner {
    fn session(&self) -> Option<HeaderValue> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn request(&self, message: &OutgoingMessage) -> Request<Full<Bytes>> {
        self.build(Method::POST, &message.headers, Some(&message.body))
    }

    /// A request to the endpoint: `body` makes it a JSON `POST`, else it asks for SSE.
    fn build(
        &self,
        method: Method,
        extra: &HeaderMap,
        body: Option<&Bytes>,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body.cloned().unwrap_or_default()));
        *request.method_mut() = method;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.reserve(7 + extra.len() + self.headers.len());
        headers.insert(HOST, self.host_header.clone());
        match body {
            Some(body) => {
                headers.insert(CONTENT_TYPE, JSON);
                headers.insert(ACCEPT, ACCEPT_BOTH);
                headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
            }
            None => {
                headers.insert(ACCEPT, EVENT_STREAM);
            }
        }
        if let Some(session) = self.session() {
            headers.insert(MCP_SESSION_ID, session);
        }
        for (name, value) in extra {
            headers.append(name, value.clone());
        }
        for (name, value) in &self.headers {
            headers.append(name, value.clone());
        }
        request
    }

    /// Sends a message.
    async fn dispatch(&self, message: &OutgoingMessage) -> Result<Response<RawBody>> {
        if let Some(version) = message.headers.get(MCP_PROTOCOL_VERSION) {
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.clone());
        }
        self.exchange(|| self.request(message)).await
    }

    /// Sends what `make` builds, with credentials when there is an authorizer, and again
    /// (rebuilt) after the authorizer answered a challenge.
    async fn exchange(&self, make: impl Fn() -> Request<Full<Bytes>>) -> Result<Response<RawBody>> {
        if self.closed.is_cancelled() {
            return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
        }
        let Some(authorizer) = &self.authorizer else {
            return self.pipe.send(make()).await;
        };
        let fetcher = Fetcher::new(self.pipe.clone(), self.closed.clone());
        let mut attempt = 0;
        loop {
            let mut request = make();
            authorizer.authorize(&fetcher, &mut request).await?;
            let method = request.method().clone();
            let sent = request.headers().clone();
            let response = self.pipe.send(request).await?;
            let status = response.status();
            if attempt < MAX_CHALLENGES
                && (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
            {
                attempt += 1;
                let challenge = Challenge {
                    method: &method,
                    uri: &self.uri,
                    request_headers: &sent,
                    status,
                    headers: response.headers(),
                    attempt,
                };
                if authorizer.challenge(&fetcher, challenge).await? {
                    continue;
                }
            }
            return Ok(response);
        }
    }
}

impl Inner {
    /// A `GET` for the SSE stream, with `extra` headers; `None` when the server answers with
    /// anything but a 2xx event stream.
    async fn get(self: &Arc<Self>, extra: &HeaderMap) -> Result<Option<Body>> {
        let mut headers = extra.clone();
        if !headers.contains_key(MCP_PROTOCOL_VERSION)
            && let Some(version) = self
                .version
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        let response = self
            .exchange(|| self.build(Method::GET, &headers, None))
            .await?;
        let (parts, raw) = response.into_parts();
        let body = Body::new(raw, self);
        if parts.status.is_success() && is_event_stream(&parts.headers) {
            return Ok(Some(body));
        }
        if parts.status == StatusCode::NOT_FOUND && self.session().is_some() {
            self.forget_session();
        }
        tracing::debug!(status = %parts.status, "the server offers no GET stream");
        // Dropping the body closes that connection; nothing in it is worth reading.
        Ok(None)
    }

    fn forget_session(&self) {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Ends the legacy session, if there is one (best effort: the server may not allow it).
    async fn end_session(&self) {
        let Some(session) = self.session() else {
            return;
        };
        let mut headers = HeaderMap::new();
        if let Some(version) = self
            .version
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        let ended = tokio::time::timeout(
            END_SESSION_TIMEOUT,
            self.exchange(|| self.build(Method::DELETE, &headers, None)),
        )
        .await;
        match ended {
            Ok(Ok(response)) => {
                tracing::debug!(status = %response.status(), "ended the session");
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "could not end the session"),
            Err(_) => tracing::debug!("ending the session timed out"),
        }
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(session);
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

impl Transport for HttpTransport {
    fn mirrors_headers(&self) -> bool {
        true
    }

    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, Result<MessageStream>> {
        let inner = self.inner.clone();
        async move {
            let had_session = inner.session().is_some();
            let response = inner.dispatch(&request).await?;
            let (parts, raw) = response.into_parts();
            if request.method == "initialize"
                && parts.status.is_success()
                && let Some(session) = parts.headers.get(MCP_SESSION_ID)
            {
                // Visible ASCII only (2025-11-25); anything else is not sent back.
                if session.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
                    *inner.session.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(session.clone());
                } else {
                    tracing::warn!("ignored a session id with characters outside visible ASCII");
                }
            }
            if parts.status == StatusCode::NOT_FOUND && had_session {
                // The server forgot the session: the client must initialize again.
                inner.forget_session();
                return Err(status_error(
                    parts.status,
                    "the server no longer knows this session (HTTP 404)".to_owned(),
                ));
            }
            if parts.status == StatusCode::ACCEPTED {
                return Err(transport_error(
                    "the server answered a request with 202 Accepted",
                ));
            }
            let content_type = parts
                .headers
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let body = Body::new(raw, &inner);
            let max = inner.max_message_size;
            let stream: MessageStream =
                if parts.status.is_success() && content_type.starts_with("text/event-stream") {
                    Box::pin(SseStream::new(
                        body,
                        max,
                        Resume::Request(request.id.clone()),
                        inner.clone(),
                    ))
                } else {
                    Box::pin(JsonStream::new(body, parts.status, max))
                };
            Ok(stream)
        }
        .boxed()
    }

    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, Result<()>> {
        let inner = self.inner.clone();
        async move {
            let response = inner.dispatch(&notification).await?;
            let status = response.status();
            let mut body = Body::new(response.into_body(), &inner);
            // Drain (bounded) so the connection can be reused.
            let mut seen = 0usize;
            while let Some(chunk) = std::future::poll_fn(|cx| body.poll_chunk(cx)).await {
                seen += chunk?.len();
                if seen > inner.max_message_size {
                    break;
                }
            }
            if status.is_success() {
                Ok(())
            } else {
                Err(status_error(
                    status,
                    format!("the server refused a message with HTTP {status}"),
                ))
            }
        }
        .boxed()
    }

    fn listen(&self, headers: HeaderMap) -> BoxFuture<'static, Result<Option<MessageStream>>> {
        let inner = self.inner.clone();
        async move {
            let Some(body) = inner.get(&headers).await? else {
                return Ok(None);
            };
            let max = inner.max_message_size;
            let stream: MessageStream = Box::pin(SseStream::new(
                body,
                max,
                Resume::Listen(headers),
                inner.clone(),
            ));
            Ok(Some(stream))
        }
        .boxed()
    }

    fn close(&self) -> BoxFuture<'static, Result<()>> {
        let inner = self.inner.clone();
        async move {
            if !inner.closed.is_cancelled() {
                inner.end_session().await;
            }
            inner.closed.cancel();
            if let Pipe::Pool(pool) = &inner.pipe {
                pool.close();
            }
            Ok(())
        }
        .boxed()
    }
}
