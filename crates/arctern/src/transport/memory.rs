//! An in-process transport: a [`Client`](crate::client::Client) talking to a
//! [`Server`] in the same process.
//!
//! Nothing is short-circuited: every request is serialized, handed to
//! [`Server::handle_bytes`](crate::server::Server::handle_bytes) as bytes, and every message
//! of the answer is parsed back, exactly as over a wire. The handler runs inside the
//! caller's future, so dropping a call drops the handler (cancellation).
//!
//! With [`MemoryTransport::with_http_headers`] the client also builds the HTTP headers that
//! mirror each request, and the server validates them as the Streamable HTTP transport
//! would (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), which makes the header logic
//! testable without sockets.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::client::headers::{self, decode_value};
use crate::client::{MessageStream, OutgoingMessage, Transport};
use crate::server::{Handler, Reply, RequestOrigin, Server, TransportKind, WireHeaders};
use crate::{Error, ErrorKind, Result};
use arctern_types::jsonrpc::JsonRpcMessage;

type Observe = Arc<dyn Fn(&OutgoingMessage) + Send + Sync>;

/// A transport to an in-process [`Server`].
pub struct MemoryTransport<H> {
    server: Server<H>,
    http_headers: bool,
    closed: CancellationToken,
    observe: Option<Observe>,
}

impl<H> std::fmt::Debug for MemoryTransport<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport")
            .field("http_headers", &self.http_headers)
            .field("closed", &self.closed.is_cancelled())
            .finish()
    }
}

impl<H: Handler> MemoryTransport<H> {
    /// A transport to `server`.
    pub fn new(server: Server<H>) -> Self {
        MemoryTransport {
            server,
            http_headers: false,
            closed: CancellationToken::new(),
            observe: None,
        }
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
        if !self.http_headers {
            return RequestOrigin::new(TransportKind::Memory);
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
        RequestOrigin::http(wire, http::Extensions::new())
    }
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
        async move {
            if closed.is_cancelled() {
                return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
            }
            let reply = tokio::select! {
                reply = server.handle_bytes(&request.body, origin) => reply,
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
                Reply::Accepted => {
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
        async move {
            match server.handle_bytes(&notification.body, origin).await {
                Reply::Accepted => Ok(()),
                other => Err(Error::new(
                    ErrorKind::Transport,
                    format!("the server rejected a notification: {other:?}"),
                )),
            }
        }
        .boxed()
    }

    fn close(&self) -> BoxFuture<'static, Result<()>> {
        self.closed.cancel();
        std::future::ready(Ok(())).boxed()
    }
}
