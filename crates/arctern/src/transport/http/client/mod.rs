//! The client side of Streamable HTTP: one `POST` per message over pooled keep-alive
//! connections.
//!
//! - Connections are HTTP/1.1, `TCP_NODELAY`, kept alive and reused; a connection goes back
//!   to the pool only once its response body has been read to the end.
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
//! - A response with an error status and no JSON-RPC message fails with an error whose
//!   [`source`](std::error::Error::source) is an [`HttpStatusError`].
//! - `http://` only: TLS is not built in (put a TLS-terminating proxy in front, or implement
//!   [`Transport`] over your own HTTP stack).

mod body;
mod pool;
mod sse;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Full;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::client::{MessageStream, OutgoingMessage, Transport};
use crate::{Error, ErrorKind, Result};

use body::{Body, JsonStream};
use pool::Idle;
use sse::{Resume, SseStream};

/// The default bound on one message (and on one response body that is not a stream).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;
/// The default limit on opening a TCP connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle connection stays in the pool by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many idle connections the pool keeps by default.
pub const DEFAULT_MAX_IDLE: usize = 64;
/// How many connections (busy or idle) the transport opens at most by default; further
/// requests wait for one to come free.
pub const DEFAULT_MAX_CONNECTIONS: usize = 128;

const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The legacy session header.
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version header (kept for the session's `GET` and `DELETE`).
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

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
    transport_error(message).with_source(HttpStatusError { status })
}

/// A Streamable HTTP client transport for one MCP endpoint URL.
///
/// ```no_run
/// # async fn run() -> arctern::Result<()> {
/// use arctern::client::Client;
/// use arctern::transport::http::client::HttpTransport;
///
/// let transport = HttpTransport::builder("http://127.0.0.1:8000/mcp")
///     .header("authorization", "Bearer secret")?
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
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct HttpTransportBuilder {
    url: String,
    headers: HeaderMap,
    max_message_size: usize,
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_idle: usize,
    max_connections: usize,
}

impl HttpTransportBuilder {
    /// Adds a header sent with every request (for example `Authorization`).
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

    /// The limit on opening a connection.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long an idle connection is kept for reuse.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many idle connections are kept for reuse.
    pub fn max_idle(mut self, connections: usize) -> Self {
        self.max_idle = connections;
        self
    }

    /// How many connections may be open at once (busy or idle); requests beyond that wait
    /// for a connection to come free. Long-lived subscriptions hold theirs.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The transport.
    pub fn build(self) -> Result<HttpTransport> {
        let uri: Uri = self.url.parse().map_err(|e| {
            Error::new(ErrorKind::Config, "invalid MCP endpoint URL").with_source(e)
        })?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "https is not supported by the built-in HTTP transport; use a TLS proxy or \
                     a custom Transport",
                ));
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "the MCP endpoint URL must start with http://",
                ));
            }
        }
        let authority = uri
            .authority()
            .ok_or_else(|| Error::new(ErrorKind::Config, "the MCP endpoint URL has no host"))?
            .clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(80);
        let path: Uri = uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .map_err(|e| {
                Error::new(ErrorKind::Config, "invalid MCP endpoint path").with_source(e)
            })?;
        let host_header = HeaderValue::from_str(authority.as_str())
            .map_err(|e| Error::new(ErrorKind::Config, "invalid host").with_source(e))?;
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                url: self.url,
                host,
                port,
                host_header,
                path,
                headers: self.headers,
                max_message_size: self.max_message_size,
                connect_timeout: self.connect_timeout,
                idle_timeout: self.idle_timeout,
                max_idle: self.max_idle,
                pool: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(self.max_connections)),
                returned: Notify::new(),
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
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_idle: DEFAULT_MAX_IDLE,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

struct Inner {
    url: String,
    host: String,
    port: u16,
    host_header: HeaderValue,
    path: Uri,
    headers: HeaderMap,
    max_message_size: usize,
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_idle: usize,
    pool: Mutex<Vec<Idle>>,
    /// One per open connection.
    permits: Arc<Semaphore>,
    /// Signalled when a connection goes back to the pool.
    returned: Notify,
    closed: CancellationToken,
    /// The legacy session id, from the answer to `initialize`.
    session: Mutex<Option<HeaderValue>>,
    /// The last `MCP-Protocol-Version` sent (for the session's `GET` and `DELETE`).
    version: Mutex<Option<HeaderValue>>,
}

fn transport_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::Transport, message)
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
        *request.uri_mut() = self.path.clone();
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
        let (response, conn) = self
            .exchange(|| self.build(Method::GET, &headers, None))
            .await?;
        let (parts, incoming) = response.into_parts();
        let body = Body::new(incoming, conn, self.clone());
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
            self.connect_timeout,
            self.exchange(|| self.build(Method::DELETE, &headers, None)),
        )
        .await;
        match ended {
            Ok(Ok((response, _conn))) => {
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
            let (response, conn) = inner.dispatch(&request).await?;
            let (parts, incoming) = response.into_parts();
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
            let body = Body::new(incoming, conn, inner.clone());
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
            let (response, conn) = inner.dispatch(&notification).await?;
            let status = response.status();
            let mut body = Body::new(response.into_body(), conn, inner.clone());
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
            inner.pool.lock().unwrap_or_else(|e| e.into_inner()).clear();
            Ok(())
        }
        .boxed()
    }
}
