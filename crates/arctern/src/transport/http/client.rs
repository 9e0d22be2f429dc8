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

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream};
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::client::{MessageStream, OutgoingMessage, Transport};
use crate::{Error, ErrorKind, Result};

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
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The wait before resuming an SSE stream when the server named no `retry` delay.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry` delay honoured (a server cannot park a call for hours).
const MAX_RETRY: Duration = Duration::from_secs(60);
/// The shortest wait before a resumption, whatever `retry` says (`retry: 0` would have the
/// client reconnect in a tight loop).
const MIN_RETRY: Duration = Duration::from_millis(250);
/// Resumptions in a row that brought no message before a stream gives up.
const MAX_IDLE_RESUMPTIONS: u32 = 16;
/// Resumptions of one request's stream in all, messages or not.
const MAX_RESUMPTIONS: u32 = 256;

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

/// How a pending JSON value may grow before it is only re-parsed when the buffer doubles
/// (keeps incremental parsing of a large body linear-ish).
const INCREMENTAL_WINDOW: usize = 64 * 1024;

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

/// Aborts a task when dropped: dropping a connection closes its socket at once.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 connection.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    _task: AbortOnDrop,
    _permit: OwnedSemaphorePermit,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

fn transport_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::Transport, message)
}

impl Inner {
    fn checkout(&self) -> Option<Conn> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(idle) = pool.pop() {
            if !idle.conn.sender.is_closed() && idle.since.elapsed() < self.idle_timeout {
                return Some(idle.conn);
            }
        }
        None
    }

    fn checkin(&self, conn: Conn) {
        if self.closed.is_cancelled() || conn.sender.is_closed() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < self.max_idle {
            pool.push(Idle {
                conn,
                since: Instant::now(),
            });
            drop(pool);
            self.returned.notify_one();
        }
    }

    /// A pooled connection, or a new one once the connection limit allows it.
    async fn acquire(&self) -> Result<(Conn, bool)> {
        loop {
            let returned = self.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(conn) = self.checkout() {
                return Ok((conn, true));
            }
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return Ok((self.connect(permit).await?, false));
            }
            tokio::select! {
                () = &mut returned => {}
                permit = self.permits.clone().acquire_owned() => {
                    let permit = permit.map_err(|_| Error::new(ErrorKind::Closed, "the transport is closed"))?;
                    return Ok((self.connect(permit).await?, false));
                }
                () = self.closed.cancelled() => {
                    return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
                }
            }
        }
    }

    async fn connect(&self, permit: OwnedSemaphorePermit) -> Result<Conn> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| transport_error(format!("cannot resolve {}", self.host)).with_source(e))?
            .collect();
        let mut last = None;
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    // Small request/response messages: never wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let (sender, connection) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream))
                            .await
                            .map_err(|e| transport_error("HTTP handshake failed").with_source(e))?;
                    let task = tokio::spawn(async move {
                        if let Err(e) = connection.await {
                            tracing::debug!(error = %e, "HTTP connection ended");
                        }
                    });
                    return Ok(Conn {
                        sender,
                        _task: AbortOnDrop(task),
                        _permit: permit,
                    });
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
        Err(last.unwrap_or_else(|| transport_error(format!("no address for {}", self.host))))
    }

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

    /// Sends a message on a pooled (or new) connection.
    async fn dispatch(
        &self,
        message: &OutgoingMessage,
    ) -> Result<(http::Response<Incoming>, Conn)> {
        if let Some(version) = message.headers.get(MCP_PROTOCOL_VERSION) {
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.clone());
        }
        self.exchange(|| self.request(message)).await
    }

    /// Sends what `make` builds on a pooled (or new) connection, rebuilding it for a retry.
    async fn exchange(
        &self,
        make: impl Fn() -> Request<Full<Bytes>>,
    ) -> Result<(http::Response<Incoming>, Conn)> {
        if self.closed.is_cancelled() {
            return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
        }
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut conn, reused) = self.acquire().await?;
            if let Err(e) = conn.sender.ready().await {
                if reused && tries < 8 {
                    continue;
                }
                return Err(transport_error("the HTTP connection closed").with_source(e));
            }
            match conn.sender.send_request(make()).await {
                Ok(response) => return Ok((response, conn)),
                // Not sent at all (the pooled connection was going away): safe to retry.
                Err(e) if reused && e.is_canceled() && tries < 8 => continue,
                Err(e) => return Err(transport_error("the HTTP request failed").with_source(e)),
            }
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

/// A response body that returns its connection to the pool when read to the end, and
/// closes it when dropped early.
struct Body {
    incoming: Incoming,
    conn: Option<Conn>,
    inner: Arc<Inner>,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Body {
    fn new(incoming: Incoming, conn: Conn, inner: Arc<Inner>) -> Self {
        let closed = Box::pin(inner.closed.clone().cancelled_owned());
        Body {
            incoming,
            conn: Some(conn),
            inner,
            closed,
        }
    }

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        if self.closed.as_mut().poll(cx).is_ready() {
            self.conn = None;
            return Poll::Ready(Some(Err(Error::new(
                ErrorKind::Closed,
                "the transport is closed",
            ))));
        }
        loop {
            match ready!(Pin::new(&mut self.incoming).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Some(Err(e)) => {
                    self.conn = None;
                    return Poll::Ready(Some(Err(
                        transport_error("the HTTP response broke off").with_source(e)
                    )));
                }
                None => {
                    if let Some(conn) = self.conn.take() {
                        self.inner.checkin(conn);
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

fn parse_message(bytes: &[u8]) -> Result<JsonRpcMessage> {
    JsonRpcMessage::from_slice(bytes)
        .map_err(|e| transport_error("the server sent a malformed JSON-RPC message").with_source(e))
}

/// A JSON response body: one JSON value, or several one after another (newline-delimited
/// streams), parsed as they complete.
struct JsonStream {
    body: Body,
    status: StatusCode,
    max: usize,
    buf: Vec<u8>,
    /// Where the first unparsed byte is.
    pos: usize,
    /// Below this buffer length, a large pending value is not re-parsed.
    next_attempt: usize,
    ready: VecDeque<Result<JsonRpcMessage>>,
    ended: bool,
    yielded: bool,
}

impl JsonStream {
    fn new(body: Body, status: StatusCode, max: usize) -> Self {
        JsonStream {
            body,
            status,
            max,
            buf: Vec::new(),
            pos: 0,
            next_attempt: 0,
            ready: VecDeque::new(),
            ended: false,
            yielded: false,
        }
    }

    /// Parses every complete value in the buffer. At the end of the body, leftovers are an
    /// error.
    fn parse_available(&mut self, at_end: bool) {
        let pending = self.buf.len() - self.pos;
        if !at_end && pending > INCREMENTAL_WINDOW && self.buf.len() < self.next_attempt {
            return;
        }
        loop {
            let rest = &self.buf[self.pos..];
            let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<&RawValue>();
            match values.next() {
                None => {
                    self.pos = self.buf.len();
                    break;
                }
                Some(Ok(raw)) => {
                    let end = values.byte_offset();
                    let message = parse_message(raw.get().as_bytes());
                    self.ready.push_back(message.map_err(|e| self.explain(e)));
                    self.pos += end;
                }
                Some(Err(e)) if e.is_eof() && !at_end => {
                    self.next_attempt = self.buf.len().saturating_mul(2);
                    break;
                }
                Some(Err(e)) => {
                    self.ready.push_back(Err(self.explain(
                        transport_error("the server sent a malformed JSON body").with_source(e),
                    )));
                    self.pos = self.buf.len();
                    self.ended = true;
                    break;
                }
            }
        }
        if self.pos > 0 && (self.pos == self.buf.len() || self.pos > INCREMENTAL_WINDOW) {
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.next_attempt = 0;
        }
    }

    /// A parse failure on an error status is reported as the status.
    fn explain(&self, error: Error) -> Error {
        if self.status.is_success() {
            error
        } else {
            let snippet =
                String::from_utf8_lossy(&self.buf[..self.buf.len().min(200)]).into_owned();
            status_error(self.status, format!("HTTP {}: {snippet}", self.status))
        }
    }
}

impl Stream for JsonStream {
    type Item = Result<JsonRpcMessage>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(item) = this.ready.pop_front() {
                this.yielded = true;
                return Poll::Ready(Some(item));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match ready!(this.body.poll_chunk(cx)) {
                Some(Ok(chunk)) => {
                    if this.buf.len() - this.pos + chunk.len() > this.max {
                        this.ended = true;
                        this.body.conn = None;
                        this.ready.push_back(Err(transport_error(format!(
                            "a message from the server exceeds {} bytes",
                            this.max
                        ))));
                        continue;
                    }
                    let newline = chunk.contains(&b'\n');
                    this.buf.extend_from_slice(&chunk);
                    if newline {
                        this.parse_available(false);
                    }
                }
                Some(Err(e)) => {
                    this.ended = true;
                    this.ready.push_back(Err(e));
                }
                None => {
                    this.ended = true;
                    this.parse_available(true);
                    if !this.yielded && this.ready.is_empty() && !this.status.is_success() {
                        this.ready.push_back(Err(status_error(
                            this.status,
                            format!("HTTP {} with no JSON-RPC body", this.status),
                        )));
                    }
                }
            }
        }
    }
}

/// When an SSE stream that ends may be resumed with `GET` and `Last-Event-ID`.
enum Resume {
    /// The response stream of this request (`None`: a request without id): resumed only
    /// until its final response arrived, and only if the server gave its events ids.
    Request(Option<RequestId>),
    /// The session's `GET` stream (sent with these headers): resumed whenever it ends.
    Listen(HeaderMap),
}

/// A resumption in progress: the `retry` wait, then the `GET`.
type Resuming = Pin<Box<dyn Future<Output = Result<Option<Body>>> + Send>>;

/// An SSE response: each event's data is one JSON-RPC message.
struct SseStream {
    body: Body,
    parser: SseParser,
    ready: VecDeque<Result<JsonRpcMessage>>,
    done: bool,
    resume: Resume,
    /// The final response of the request arrived.
    answered: bool,
    /// Resumptions since the last message.
    idle_resumptions: u32,
    /// Resumptions in all, and in a row that each brought at most one message (the wait
    /// doubles with these).
    resumptions: u32,
    quick_resumptions: u32,
    /// Messages since the last resumption.
    since_resumption: u32,
    resuming: Option<Resuming>,
    inner: Arc<Inner>,
}

impl SseStream {
    fn new(body: Body, max: usize, resume: Resume, inner: Arc<Inner>) -> Self {
        SseStream {
            body,
            parser: SseParser::new(max),
            ready: VecDeque::new(),
            done: false,
            resume,
            answered: false,
            idle_resumptions: 0,
            resumptions: 0,
            quick_resumptions: 0,
            since_resumption: 0,
            resuming: None,
            inner,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let message = parse_message(data);
        if let (Ok(m), Resume::Request(Some(id))) = (&message, &self.resume)
            && matches!(m, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
            && m.id() == Some(id)
        {
            self.answered = true;
        }
        self.idle_resumptions = 0;
        self.since_resumption += 1;
        self.ready.push_back(message);
    }

    /// The body ended: a resumption to start, if this stream may be resumed.
    fn resumption(&mut self) -> Option<Resuming> {
        if self.inner.closed.is_cancelled() || self.idle_resumptions >= MAX_IDLE_RESUMPTIONS {
            return None;
        }
        if matches!(self.resume, Resume::Request(_)) && self.resumptions >= MAX_RESUMPTIONS {
            tracing::debug!("gave up resuming a response stream after {MAX_RESUMPTIONS} tries");
            return None;
        }
        let mut headers = match &self.resume {
            Resume::Request(_) if self.answered => return None,
            Resume::Request(_) if self.parser.last_id.is_none() => return None,
            Resume::Request(_) => HeaderMap::new(),
            Resume::Listen(headers) => headers.clone(),
        };
        if let Some(id) = &self.parser.last_id {
            match HeaderValue::from_str(id) {
                Ok(v) => {
                    headers.insert(LAST_EVENT_ID, v);
                }
                Err(_) => return None,
            }
        }
        self.idle_resumptions += 1;
        self.resumptions = self.resumptions.saturating_add(1);
        // A stream that keeps ending after a message or none backs off: the server's delay
        // (at least MIN_RETRY), doubled for each such resumption in a row, up to MAX_RETRY.
        if self.since_resumption <= 1 {
            self.quick_resumptions = self.quick_resumptions.saturating_add(1);
        } else {
            self.quick_resumptions = 0;
        }
        self.since_resumption = 0;
        let base = self
            .parser
            .retry
            .map_or(DEFAULT_RETRY, Duration::from_millis)
            .clamp(MIN_RETRY, MAX_RETRY);
        let doublings = self.quick_resumptions.saturating_sub(1).min(16);
        let wait = base.saturating_mul(1 << doublings).min(MAX_RETRY);
        let inner = self.inner.clone();
        Some(Box::pin(async move {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = inner.closed.cancelled() => {
                    return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
                }
            }
            inner.get(&headers).await
        }))
    }
}

impl Stream for SseStream {
    type Item = Result<JsonRpcMessage>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(item) = this.ready.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(resuming) = this.resuming.as_mut() {
                match ready!(resuming.as_mut().poll(cx)) {
                    Ok(Some(body)) => {
                        tracing::debug!("resumed an SSE stream");
                        this.body = body;
                        this.parser.restart();
                    }
                    Ok(None) => {
                        this.done = true;
                        if matches!(this.resume, Resume::Request(_)) {
                            this.ready.push_back(Err(transport_error(
                                "the server did not resume the response stream",
                            )));
                        }
                    }
                    Err(e) => {
                        this.done = true;
                        this.ready.push_back(Err(e));
                    }
                }
                this.resuming = None;
                continue;
            }
            match ready!(this.body.poll_chunk(cx)) {
                Some(Ok(chunk)) => {
                    let mut events = Vec::new();
                    if let Err(e) = this.parser.feed(&chunk, &mut events) {
                        this.done = true;
                        this.body.conn = None;
                        this.ready.push_back(Err(e));
                    }
                    // Events without data (priming events, keep-alives) carry no message.
                    for data in events
                        .iter()
                        .filter(|data| !data.iter().all(u8::is_ascii_whitespace))
                    {
                        this.push(data);
                    }
                }
                Some(Err(e)) => {
                    this.done = true;
                    this.ready.push_back(Err(e));
                }
                None => {
                    if let Some(data) = this.parser.finish()
                        && !data.iter().all(u8::is_ascii_whitespace)
                    {
                        this.push(&data);
                    }
                    match this.resumption() {
                        Some(resuming) => this.resuming = Some(resuming),
                        None => this.done = true,
                    }
                }
            }
        }
    }
}

/// An incremental parser of `text/event-stream` bodies that keeps only the data of each
/// event.
pub(crate) struct SseParser {
    /// The last event id the server set (`id:`), for `Last-Event-ID`.
    pub(crate) last_id: Option<String>,
    /// The reconnection delay the server asked for (`retry:`), in milliseconds.
    pub(crate) retry: Option<u64>,
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// A `\r` ended the last line; a `\n` right after it belongs to the same line break.
    after_cr: bool,
    max: usize,
}

impl SseParser {
    pub(crate) fn new(max: usize) -> Self {
        SseParser {
            last_id: None,
            retry: None,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            max,
        }
    }

    /// Feeds a chunk; completed events' data go to `out`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Vec<u8>>) -> Result<()> {
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while let Some(i) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..i]);
            self.check()?;
            let line = std::mem::take(&mut self.line);
            self.on_line(&line, out);
            self.line = line;
            self.line.clear();
            let cr = chunk[i] == b'\r';
            chunk = &chunk[i + 1..];
            if cr {
                if chunk.first() == Some(&b'\n') {
                    chunk = &chunk[1..];
                } else if chunk.is_empty() {
                    self.after_cr = true;
                }
            }
        }
        self.line.extend_from_slice(chunk);
        self.check()
    }

    fn check(&self) -> Result<()> {
        if self.line.len() + self.data.len() > self.max {
            Err(transport_error(format!(
                "an event from the server exceeds {} bytes",
                self.max
            )))
        } else {
            Ok(())
        }
    }

    fn on_line(&mut self, line: &[u8], out: &mut Vec<Vec<u8>>) {
        if line.is_empty() {
            if self.has_data {
                out.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // An id with NUL is ignored, as the SSE specification says.
            b"id" if !value.contains(&0) => {
                self.last_id = std::str::from_utf8(value).ok().map(str::to_owned);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    /// A new body continues the stream: the partial event is dropped, the last event id
    /// and the retry delay are kept.
    pub(crate) fn restart(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.after_cr = false;
    }

    /// The body ended: an event still being built is delivered if it has data.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let mut out = Vec::new();
            self.on_line(&line, &mut out);
        }
        let data = std::mem::take(&mut self.data);
        std::mem::take(&mut self.has_data).then_some(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            parser.feed(c, &mut out).unwrap();
        }
        out.extend(parser.finish());
        out.into_iter()
            .map(|d| String::from_utf8(d).unwrap())
            .collect()
    }

    #[test]
    fn parses_sse_with_comments_fields_and_every_line_ending() {
        assert_eq!(
            events(&[b": ping\n\nevent: message\nid: 1\ndata: {\"a\":1}\n\n"]),
            ["{\"a\":1}"]
        );
        assert_eq!(
            events(&[b"data: a\r\ndata:b\r\n\r\ndata: c\rdata: d\r\r"]),
            ["a\nb", "c\nd"]
        );
        // Split anywhere, including between \r and \n.
        assert_eq!(
            events(&[b"data: x\r", b"\n", b"\r\n", b"da", b"ta: y\n\n"]),
            ["x", "y"]
        );
        // An empty event (a priming event) carries no message.
        assert_eq!(events(&[b"id: 0\ndata:\n\n"]), [""]);
        assert_eq!(events(&[b"retry: 10\n\n"]), Vec::<String>::new());
        // A final event without its blank line is still delivered.
        assert_eq!(events(&[b"data: z"]), ["z"]);
    }

    #[test]
    fn keeps_event_ids_and_retry() {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        parser
            .feed(
                b"id: e-1\nretry: 500\ndata: \n\nretry: x\nid: bad\0\n\n",
                &mut out,
            )
            .unwrap();
        assert_eq!(parser.last_id.as_deref(), Some("e-1"));
        assert_eq!(parser.retry, Some(500));
    }

    #[test]
    fn bounds_events() {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        let big = vec![b'x'; 2048];
        assert!(parser.feed(&big, &mut out).is_err());
    }
}
