//! The client side of a transport: one request goes out, a stream of messages comes back.
//!
//! It lives here, below both the client and the transports, so that the transports need
//! nothing from the client.

use std::borrow::Cow;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RequestId};
use bytes::Bytes;
use futures::Stream;
use futures::future::BoxFuture;

/// The messages that answer one request: request-scoped notifications (progress, log
/// messages, subscription notifications) in the order the server sent them, then the final
/// response.
///
/// Dropping the stream before the final response cancels the request: the HTTP transport
/// closes the connection, the stdio transport sends `notifications/cancelled`, the in-memory
/// transport drops the handler's future.
pub type MessageStream = Pin<Box<dyn Stream<Item = crate::Result<JsonRpcMessage>> + Send>>;

/// Receives the notifications a transport cannot tie to a request (on stdio:
/// `notifications/message`, and anything else that carries no progress token or
/// subscription id of an open request).
pub type UnroutedSink = Arc<dyn Fn(JsonRpcNotification) + Send + Sync>;

/// Receives the requests a legacy (2025-era) server sends outside any response stream (on
/// stdio: every server→client request). The client answers each with
/// [`Transport::notify`], passing the serialized response.
pub type RequestSink = Arc<dyn Fn(JsonRpcRequest) + Send + Sync>;

/// One outgoing JSON-RPC message, serialized, with the HTTP headers that mirror it.
#[non_exhaustive]
pub struct OutgoingMessage {
    /// The request id; `None` for a notification.
    pub id: Option<RequestId>,
    /// The method (or notification name).
    pub method: Cow<'static, str>,
    /// The MCP headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name`, `Mcp-Param-*`). Filled only for transports whose
    /// [`Transport::mirrors_headers`] is true.
    pub headers: http::HeaderMap,
    /// The serialized message (one JSON object, no trailing newline).
    pub body: Bytes,
}

impl OutgoingMessage {
    /// A message with no mirrored headers.
    pub fn new(id: Option<RequestId>, method: impl Into<Cow<'static, str>>, body: Bytes) -> Self {
        OutgoingMessage {
            id,
            method: method.into(),
            headers: http::HeaderMap::new(),
            body,
        }
    }
}

impl fmt::Debug for OutgoingMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingMessage")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

/// How a [`Client`](crate::client::Client) reaches a server.
///
/// The built-in transports are Streamable HTTP
/// ([`HttpTransport`](crate::transport::http::client::HttpTransport)), a child process over
/// stdio ([`StdioTransport`](crate::transport::stdio::client::StdioTransport)) and an
/// in-process server ([`MemoryTransport`](crate::transport::memory::MemoryTransport)).
/// Implement this trait to carry MCP over something else, or to script a server in tests.
///
/// Implementations must never panic on malformed input from the server, must bound what
/// they buffer, and must end every [`MessageStream`] (with an error if need be) when the
/// connection breaks, so that no call waits forever.
pub trait Transport: Send + Sync + 'static {
    /// Whether requests need the HTTP headers that mirror the body (`Mcp-Method`,
    /// `Mcp-Name`, `Mcp-Param-*`, `MCP-Protocol-Version`). Also decides whether the client
    /// enforces the `x-mcp-header` rules on listed tools.
    fn mirrors_headers(&self) -> bool {
        false
    }

    /// Sends a request and returns the stream of messages that answer it.
    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, crate::Result<MessageStream>>;

    /// Sends a notification (no answer is expected).
    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, crate::Result<()>>;

    /// Registers where notifications that belong to no request go. Transports that deliver
    /// every notification on its request's stream may ignore this.
    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        let _ = sink;
    }

    /// Registers where server→client requests that arrive outside a response stream go
    /// (legacy sessions). Transports that deliver them on response streams, or that never
    /// see any, may ignore this; without a sink a transport answers them `-32601`.
    fn set_request_sink(&self, sink: RequestSink) {
        let _ = sink;
    }

    /// Opens the stream of messages a legacy server sends outside any request (the GET
    /// stream of 2025-era Streamable HTTP), with `headers` added to the request. `None`
    /// when the transport has no such stream or the server offers none.
    fn listen(
        &self,
        headers: http::HeaderMap,
    ) -> BoxFuture<'static, crate::Result<Option<MessageStream>>> {
        let _ = headers;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Shuts the transport down: in-flight requests fail with
    /// [`ErrorKind::Closed`](crate::ErrorKind::Closed), a child process is stopped.
    fn close(&self) -> BoxFuture<'static, crate::Result<()>>;
}

impl<T: Transport + ?Sized> Transport for Arc<T> {
    fn mirrors_headers(&self) -> bool {
        (**self).mirrors_headers()
    }
    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, crate::Result<MessageStream>> {
        (**self).send(request)
    }
    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, crate::Result<()>> {
        (**self).notify(notification)
    }
    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        (**self).set_unrouted_sink(sink)
    }
    fn set_request_sink(&self, sink: RequestSink) {
        (**self).set_request_sink(sink)
    }
    fn listen(
        &self,
        headers: http::HeaderMap,
    ) -> BoxFuture<'static, crate::Result<Option<MessageStream>>> {
        (**self).listen(headers)
    }
    fn close(&self) -> BoxFuture<'static, crate::Result<()>> {
        (**self).close()
    }
}
