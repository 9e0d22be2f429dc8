//! What a transport needs to serve a [`Server`]: a [`Connection`] per stream of messages,
//! the [`Reply`] to each message, and the [`RequestOrigin`] of each.
//!
//! A transport that carries a stream of messages (stdio, a socket, an in-process pipe)
//! makes one [`Connection`] per stream and hands it every incoming message; the connection
//! decides the era from the first request (a legacy `initialize` opens a 2025-era session),
//! routes `notifications/cancelled` to the request it names, answers to the server's own
//! requests to the legacy request waiting for them, and tracks what is in flight so the
//! transport can drain it. The built-in stdio and in-memory transports work this way, and
//! so does the Streamable HTTP transport for each legacy session (its 2026-07-28 requests
//! are independent and go to [`Server::handle`]).
//!
//! ```no_run
//! use arctern::server::{McpServer, Server};
//! use arctern::server::connection::{Reply, RequestOrigin, TransportKind};
//!
//! # async fn run(server: Server<arctern::server::McpHandler>, lines: Vec<Vec<u8>>) {
//! let connection = server.connection(TransportKind::Other);
//! for line in lines {
//!     match connection.handle_bytes(&line, RequestOrigin::new(TransportKind::Other)).await {
//!         Reply::Message { body, .. } => { /* write `body` */ }
//!         Reply::Stream(_stream) => { /* write each message of the stream */ }
//!         _ => {}
//!     }
//! }
//! connection.close();
//! # }
//! ```

mod in_flight;
mod origin;
mod reply;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcRequest};
use arctern_types::notifications::CancelledNotificationParams;
use arctern_types::{ErrorObject, ProtocolVersion, methods};
use bytes::Bytes;
use futures::Stream;
use futures::future::{AbortHandle, Abortable};
use tokio_util::sync::CancellationToken;

use super::engine::{Served, encode_error};
use super::handler::Handler;
use super::legacy::{Initialized, Outbound, is_legacy_initialize};
use super::{Server, engine::Scope};
use crate::Era;
use in_flight::{InFlight, Registered};

pub use origin::{RequestOrigin, TransportKind, WireHeaders};
pub(crate) use reply::{BoxedResponse, respond_lazily};
pub use reply::{MessageKind, Reply, ReplyStream};

/// One stream of messages from one client, served by a [`Server`]: the era its first
/// request decided, its legacy session if it has one, and its requests in flight.
///
/// Cheap to clone (an `Arc`); clones serve the same connection. Closing it
/// ([`close`](Self::close)) cancels what is in flight and ends its legacy session; so does
/// dropping the last clone.
pub struct Connection<H> {
    server: Server<H>,
    inner: Arc<Inner>,
}

impl<H> Clone for Connection<H> {
    fn clone(&self) -> Self {
        Connection {
            server: self.server.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<H> fmt::Debug for Connection<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("transport", &self.inner.transport)
            .field("era", &self.era())
            .field("in_flight", &self.inner.in_flight.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    transport: TransportKind,
    /// Decided by the first request.
    era: OnceLock<Served>,
    /// Where a legacy session's unsolicited messages go.
    outbound: Mutex<Option<Outbound>>,
    in_flight: Arc<InFlight>,
    /// The parent of every request's cancellation token.
    cancel: CancellationToken,
    /// Ends open `subscriptions/listen` streams with their final result.
    closing: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(Served::Legacy(session)) = self.era.get() {
            session.close();
        }
    }
}

impl<H: Handler> Connection<H> {
    pub(crate) fn new(server: Server<H>, transport: TransportKind) -> Self {
        let cancel = server.shutdown_token().child_token();
        let closing = server.shutdown_token().child_token();
        Connection {
            server,
            inner: Arc::new(Inner {
                transport,
                era: OnceLock::new(),
                outbound: Mutex::new(None),
                in_flight: InFlight::new(),
                cancel,
                closing,
            }),
        }
    }

    /// Where messages that answer no request go once a legacy session is open: list
    /// changes and updates of resources the client subscribed to (the `GET` stream of
    /// Streamable HTTP, the output of stdio). Set it before the first message; without it,
    /// such messages are dropped.
    pub fn on_unsolicited(self, sink: impl Fn(Bytes) + Send + Sync + 'static) -> Self {
        *self
            .inner
            .outbound
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(sink));
        self
    }

    /// Serves one incoming message: returns at once a future of what to send back.
    ///
    /// Everything that must happen in the order messages arrive happens before this returns:
    /// the first request decides the era, a request is registered as in flight (so a
    /// `notifications/cancelled` right behind it finds it), cancellations and session
    /// notifications take effect, and the client's answers to the server's requests are
    /// delivered. The rest of a request runs when the future is polled, so a transport can
    /// spawn it and go on reading.
    ///
    /// A request cancelled with `notifications/cancelled` resolves to
    /// [`Reply::Cancelled`] (its handler is dropped), and so does a request still running
    /// when the connection closes. A request whose id is still in flight is refused with
    /// `-32600`.
    pub fn handle(&self, message: JsonRpcMessage, origin: RequestOrigin) -> Handling {
        let reply = match message {
            JsonRpcMessage::Request(request) => return self.request(request, origin),
            JsonRpcMessage::Notification(note) => {
                if note.method == methods::NOTIFICATIONS_CANCELLED {
                    self.cancel(note.params.as_deref().map(|p| p.get()));
                }
                self.server.serve_notification(&self.era_or_modern(), &note);
                Reply::Accepted
            }
            response => self.server.serve_response(&self.era_or_modern(), response),
        };
        Handling::ready(reply)
    }

    /// [`handle`](Self::handle) for a message given as bytes; malformed input is answered
    /// with the right JSON-RPC error (`-32700` or `-32600`).
    pub fn handle_bytes(&self, bytes: &[u8], origin: RequestOrigin) -> Handling {
        match JsonRpcMessage::from_slice(bytes) {
            Ok(message) => self.handle(message, origin),
            Err(e) => Handling::ready(Reply::Message {
                body: encode_error(e.id.as_ref(), &e.error),
                kind: MessageKind::Invalid,
            }),
        }
    }

    fn request(&self, request: JsonRpcRequest, origin: RequestOrigin) -> Handling {
        let era = match self.inner.era.get() {
            Some(era) => era.clone(),
            None => {
                if self.server.serves_legacy()
                    && is_legacy_initialize(&request.method, request.params.as_deref())
                {
                    return Handling::ready(self.open_legacy(&request));
                }
                self.inner.era.get_or_init(|| Served::Modern).clone()
            }
        };
        let id = request.id.clone();
        let (abort, registration) = AbortHandle::new_pair();
        let Some(registered) = self.inner.in_flight.register(&id, abort) else {
            tracing::warn!(%id, "refused a request whose id is still in flight");
            return Handling::ready(Reply::Message {
                body: encode_error(
                    Some(&id),
                    &ErrorObject::invalid_request("A request with this id is still in flight"),
                ),
                kind: MessageKind::Invalid,
            });
        };
        let this = self.clone();
        Handling(Box::pin(async move {
            let served = this
                .server
                .serve_request(&era, request, origin, this.scope());
            match Abortable::new(served, registration).await {
                Err(_) => Reply::Cancelled,
                Ok(Reply::Stream(stream)) => {
                    // The stream goes on after this future is done: it stays cancellable,
                    // and in flight, until it ends.
                    let (abort, registration) = AbortHandle::new_pair();
                    if !registered.replace(abort) {
                        return Reply::Cancelled;
                    }
                    Reply::Stream(ReplyStream::new(Tracked {
                        stream: Abortable::new(stream, registration),
                        _registered: registered,
                    }))
                }
                Ok(reply) => reply,
            }
        }))
    }

    /// Answers the `initialize` that makes this connection a legacy session.
    fn open_legacy(&self, request: &JsonRpcRequest) -> Reply {
        let outbound = self
            .inner
            .outbound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| {
                Arc::new(|_| tracing::debug!("dropped an unsolicited message: no sink"))
            });
        match self
            .server
            .legacy_initialize(request, outbound, &self.inner.cancel)
        {
            Initialized::Session(session, body) => {
                if self.inner.era.set(Served::Legacy(session.clone())).is_err() {
                    // Another request decided the era first.
                    session.close();
                    let error = ErrorObject::invalid_request("This connection is already open");
                    return Reply::Message {
                        body: encode_error(Some(&request.id), &error),
                        kind: MessageKind::Invalid,
                    };
                }
                Reply::response(body)
            }
            // A refused initialize decides nothing; the client may try again.
            Initialized::Refused(body) => Reply::Message {
                body,
                kind: MessageKind::Invalid,
            },
        }
    }

    /// Cancels the request a `notifications/cancelled` names.
    fn cancel(&self, params: Option<&str>) {
        let Some(params) =
            params.and_then(|p| serde_json::from_str::<CancelledNotificationParams>(p).ok())
        else {
            return;
        };
        if self.inner.in_flight.abort(&params.request_id) {
            tracing::debug!(id = %params.request_id, reason = ?params.reason, "cancelled a request");
        } else {
            tracing::debug!(id = %params.request_id, "ignored a cancellation of a request that is not in flight");
        }
    }

    fn era_or_modern(&self) -> Served {
        self.inner.era.get().cloned().unwrap_or(Served::Modern)
    }

    fn scope(&self) -> Scope<'_> {
        Scope {
            cancel: &self.inner.cancel,
            closing: &self.inner.closing,
        }
    }
}

impl<H> Connection<H> {
    /// The era the first request decided (`None` before it).
    pub fn era(&self) -> Option<Era> {
        self.inner.era.get().map(|served| match served {
            Served::Modern => Era::Modern,
            Served::Legacy(_) => Era::Legacy,
        })
    }

    /// The revision a legacy session negotiated with `initialize` (`None` for a modern
    /// connection, or before the first request).
    pub fn negotiated_version(&self) -> Option<ProtocolVersion> {
        match self.inner.era.get() {
            Some(Served::Legacy(session)) => Some(session.version.clone()),
            _ => None,
        }
    }

    /// A token cancelled when the connection closes.
    #[cfg(feature = "http")]
    pub(crate) fn closed_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// The transport this connection serves.
    pub fn transport(&self) -> TransportKind {
        self.inner.transport
    }

    /// The server.
    pub fn server(&self) -> &Server<H> {
        &self.server
    }

    /// How many requests are in flight (open `subscriptions/listen` streams included).
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.len()
    }

    /// Waits until no request is in flight.
    pub async fn idle(&self) {
        self.inner.in_flight.idle().await
    }

    /// Starts a graceful close: open `subscriptions/listen` streams end with their final
    /// result; requests in flight go on. Follow with [`idle`](Self::idle) (bounded by a
    /// grace period of the transport's choosing) and [`close`](Self::close).
    pub fn close_gracefully(&self) {
        self.inner.closing.cancel();
    }

    /// Closes the connection: every request in flight is cancelled (it resolves to
    /// [`Reply::Cancelled`]), open streams end, and the legacy session, if any, ends.
    pub fn close(&self) {
        self.inner.closing.cancel();
        self.inner.cancel.cancel();
        let aborted = self.inner.in_flight.abort_all();
        if aborted > 0 {
            tracing::debug!(
                aborted,
                "cancelled the requests in flight on a closing connection"
            );
        }
        if let Some(Served::Legacy(session)) = self.inner.era.get() {
            session.close();
        }
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }
}

/// What [`Connection::handle`] returns: the reply, once the request is served.
#[must_use = "a request is served only when its future is polled"]
pub struct Handling(Pin<Box<dyn Future<Output = Reply> + Send>>);

impl Handling {
    fn ready(reply: Reply) -> Self {
        Handling(Box::pin(std::future::ready(reply)))
    }
}

impl fmt::Debug for Handling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handling")
    }
}

impl Future for Handling {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        self.0.as_mut().poll(cx)
    }
}

/// A request's stream, cancellable and in flight until it ends.
struct Tracked {
    stream: Abortable<ReplyStream>,
    _registered: Registered,
}

impl Stream for Tracked {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        Pin::new(&mut self.stream).poll_next(cx)
    }
}
