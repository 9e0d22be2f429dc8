//! An in-process transport: a [`Client`](crate::client::Client) talking to a
//! [`Server`] in the same process.
//!
//! Nothing is short-circuited: every request is serialized, handed to a server
//! [`Connection`] as bytes, and every message of the answer is parsed back, exactly as over
//! a wire. The handler runs inside the caller's future, so dropping a call drops the handler
//! (cancellation).
//!
//! With [`MemoryTransport::with_http_headers`] the client also builds the HTTP headers that
//! mirror each request, and the server validates them as the Streamable HTTP transport
//! would (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), which makes the header logic
//! testable without sockets.
//!
//! Both eras are served. A legacy `initialize` (one without the 2026-07-28 `_meta`
//! envelope), sent to a server that serves the legacy era, opens a legacy session, as the
//! first request of a stdio connection does: every later message goes to that session, the
//! server's questions arrive on the call's own stream as server→client requests (the legacy
//! shim), and the client's answers go back through [`Transport::notify`]. Another legacy
//! `initialize` (a client starting over) opens a new session on a new connection.
//! [`Client::close`](crate::client::Client::close) ends the session.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::transport::headers;

/// A mirrored header's value, decoded (`None` when malformed).
fn decode_value(raw: &[u8]) -> Option<String> {
    arctern_types::headers::decode_value(raw).ok()
}
use crate::server::connection::{Connection, Reply, RequestOrigin, TransportKind, WireHeaders};
use crate::server::{Handler, Server, is_legacy_initialize};
use crate::transport::{MessageStream, OutgoingMessage, Transport, UnroutedSink};
use crate::{Era, Error, ErrorKind, Result};
use arctern_types::jsonrpc::JsonRpcMessage;

type Observe = Arc<dyn Fn(&OutgoingMessage) + Send + Sync>;

/// A transport to an in-process [`Server`].
pub struct MemoryTransport<H> {
    server: Server<H>,
    http_headers: bool,
    closed: CancellationToken,
    observe: Option<Observe>,
    extensions: http::Extensions,
    /// The server side of this transport (a new one when a client starts a legacy session
    /// over).
    connection: Arc<Mutex<Connection<H>>>,
    /// Where a legacy session's unsolicited notifications go (list changes, resource
    /// updates).
    unrouted: Arc<Mutex<Option<UnroutedSink>>>,
}

impl<H> std::fmt::Debug for MemoryTransport<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport")
            .field("http_headers", &self.http_headers)
            .field("closed", &self.closed.is_cancelled())
            .field("era", &lock(&self.connection).era())
            .finish()
    }
}

impl<H> Drop for MemoryTransport<H> {
    fn drop(&mut self) {
        // A legacy session ends with its only client (its change forwarder stops).
        lock(&self.connection).close();
    }
}

/// Locks `m`; a poisoned lock still guards a valid value (nothing panics while holding one).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<H: Handler> MemoryTransport<H> {
    /// A transport to `server`.
    pub fn new(server: Server<H>) -> Self {
        let unrouted = Arc::default();
        let connection = connect(&server, &unrouted);
        MemoryTransport {
            server,
            http_headers: false,
            closed: CancellationToken::new(),
            observe: None,
            extensions: http::Extensions::new(),
            connection: Arc::new(Mutex::new(connection)),
            unrouted,
        }
    }

    /// Hands `extensions` to the server with every message, as an authentication layer in
    /// front of an HTTP server would: a [`Principal`](crate::server::Principal) there binds
    /// the request state the server mints to that principal.
    pub fn with_extensions(mut self, extensions: http::Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Whether a legacy `initialize` opened a legacy session on this transport.
    pub fn is_legacy(&self) -> bool {
        lock(&self.connection).era() == Some(Era::Legacy)
    }

    /// Builds and validates the mirrored HTTP headers as Streamable HTTP does.
    pub fn with_http_headers(mut self) -> Self {
        self.http_headers = true;
        self
    }

    /// Calls `f` with every outgoing message before the server sees it (for tests and
    /// tracing).
    pub fn observe(mut self, f: impl Fn(&OutgoingMessage) + Send + Sync + 'static) -> Self {
        self.observe = Some(Arc::new(f));
        self
    }

    fn origin(&self, message: &OutgoingMessage) -> RequestOrigin {
        let extensions = self.extensions.clone();
        // A legacy session's messages mirror nothing but the version header, which the
        // engine does not check (the HTTP transport does, before the engine).
        if !self.http_headers || self.is_legacy() {
            return RequestOrigin::new(TransportKind::Memory).with_extensions(extensions);
        }
        let text = |name: &http::HeaderName| {
            message
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let wire = WireHeaders {
            protocol_version: text(&headers::MCP_PROTOCOL_VERSION),
            method: text(&headers::MCP_METHOD),
            name: message
                .headers
                .get(headers::MCP_NAME)
                .map(|v| decode_value(v.as_bytes()).ok_or_else(|| "malformed Mcp-Name".to_owned())),
            params: message
                .headers
                .iter()
                .filter_map(|(name, v)| {
                    let param = name.as_str().strip_prefix(headers::MCP_PARAM_PREFIX)?;
                    let value = decode_value(v.as_bytes())
                        .ok_or_else(|| "malformed Mcp-Param header".to_owned());
                    Some((param.to_owned(), value))
                })
                .collect(),
        };
        RequestOrigin::http(wire, extensions)
    }
}

/// A connection whose legacy session sends what belongs to no request to the client's
/// unrouted sink.
fn connect<H: Handler>(
    server: &Server<H>,
    unrouted: &Arc<Mutex<Option<UnroutedSink>>>,
) -> Connection<H> {
    let unrouted = unrouted.clone();
    server
        .connection(TransportKind::Memory)
        .on_unsolicited(move |bytes: Bytes| match parse(&bytes) {
            Ok(JsonRpcMessage::Notification(note)) => {
                let sink = lock(&unrouted).clone();
                match sink {
                    Some(sink) => sink(note),
                    None => {
                        tracing::debug!(method = %note.method, "dropped a session notification: no sink")
                    }
                }
            }
            _ => tracing::debug!("dropped an unsolicited session message that is no notification"),
        })
}

/// Hands one message to the server. A legacy `initialize` on a connection that already has
/// a session starts over on a new connection.
async fn deliver<H: Handler>(
    server: &Server<H>,
    connection: &Arc<Mutex<Connection<H>>>,
    unrouted: &Arc<Mutex<Option<UnroutedSink>>>,
    body: &[u8],
    origin: RequestOrigin,
) -> Reply {
    let message = match JsonRpcMessage::from_slice(body) {
        Ok(message) => message,
        Err(_) => {
            let current = lock(connection).clone();
            return current.handle_bytes(body, origin).await;
        }
    };
    let current = {
        let mut current = lock(connection);
        if let JsonRpcMessage::Request(request) = &message
            && current.era() == Some(Era::Legacy)
            && is_legacy_initialize(&request.method, request.params.as_deref())
        {
            current.close();
            *current = connect(server, unrouted);
        }
        current.clone()
    };
    current.handle(message, origin).await
}

/// Parses one message of the server's answer.
fn parse(bytes: &[u8]) -> Result<JsonRpcMessage> {
    JsonRpcMessage::from_slice(bytes).map_err(|e| {
        Error::new(ErrorKind::Transport, "the server sent a malformed message").with_source(e)
    })
}

impl<H: Handler> Transport for MemoryTransport<H> {
    fn mirrors_headers(&self) -> bool {
        self.http_headers
    }

    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, Result<MessageStream>> {
        if let Some(f) = &self.observe {
            f(&request);
        }
        let server = self.server.clone();
        let origin = self.origin(&request);
        let closed = self.closed.clone();
        let connection = self.connection.clone();
        let unrouted = self.unrouted.clone();
        async move {
            if closed.is_cancelled() {
                return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
            }
            let reply = tokio::select! {
                reply = deliver(&server, &connection, &unrouted, &request.body, origin) => reply,
                _ = closed.cancelled() => {
                    return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
                }
            };
            let stream: MessageStream = match reply {
                Reply::Message { body, .. } => {
                    futures::stream::once(async move { parse(&body) }).boxed()
                }
                Reply::Stream(stream) => {
                    // A closed transport ends open streams (subscriptions) with an error.
                    let after = closed.clone();
                    let tail = futures::stream::once(async move { after.is_cancelled() })
                        .filter_map(|closed| {
                            std::future::ready(closed.then(|| {
                                Err(Error::new(ErrorKind::Closed, "the transport is closed"))
                            }))
                        });
                    stream
                        .map(|bytes: Bytes| parse(&bytes))
                        .take_until(closed.cancelled_owned())
                        .chain(tail)
                        .boxed()
                }
                Reply::Cancelled => {
                    return Err(Error::new(ErrorKind::Closed, "the request was cancelled"));
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::Transport,
                        "the server accepted a request as if it were a notification",
                    ));
                }
            };
            Ok(stream)
        }
        .boxed()
    }

    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, Result<()>> {
        if let Some(f) = &self.observe {
            f(&notification);
        }
        let server = self.server.clone();
        let origin = self.origin(&notification);
        let connection = self.connection.clone();
        let unrouted = self.unrouted.clone();
        async move {
            match deliver(&server, &connection, &unrouted, &notification.body, origin).await {
                Reply::Accepted => Ok(()),
                other => Err(Error::new(
                    ErrorKind::Transport,
                    format!("the server rejected a notification: {other:?}"),
                )),
            }
        }
        .boxed()
    }

    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        *lock(&self.unrouted) = Some(sink);
    }

    fn close(&self) -> BoxFuture<'static, Result<()>> {
        self.closed.cancel();
        lock(&self.connection).close();
        std::future::ready(Ok(())).boxed()
    }
}
