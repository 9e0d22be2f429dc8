//! What the server hands back to a transport for one incoming message.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::server::note_channel::NoteReceiver;
use bytes::Bytes;
use futures::Stream;

/// How a transport should answer one incoming message.
#[non_exhaustive]
pub enum Reply {
    /// Exactly one JSON-RPC message: a result, or an error.
    Message {
        /// The serialized JSON-RPC message.
        body: Bytes,
        /// What kind of answer it is (an HTTP transport picks its status from it).
        kind: MessageKind,
    },
    /// Several messages: request-scoped notifications (and, on a legacy session, the
    /// server's own requests), then the final response unless the stream is cut. HTTP sends
    /// this as an SSE stream, stdio as lines. Dropping the stream cancels the request.
    Stream(ReplyStream),
    /// Nothing to send: a notification, or a response to one of the server's requests, was
    /// accepted (HTTP 202).
    Accepted,
    /// Nothing to send: the request was cancelled (`notifications/cancelled`) before it was
    /// answered, and a cancelled request gets no answer.
    Cancelled,
}

/// What kind of message a [`Reply::Message`] is. Only the HTTP transport cares: it answers
/// `Response` with 200, `Invalid` with 400, `UnknownMethod` with 404,
/// `InsufficientScope` with 403 and `OverBudget` with 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// A result, or the error a method answered with.
    Response,
    /// The message, its envelope or its mirrored headers were refused before any method
    /// ran (malformed JSON, a missing or unsupported protocol version, a header that does
    /// not match the body, a rejected `requestState`).
    Invalid,
    /// The method does not exist, or the server does not offer it.
    UnknownMethod,
    /// The call was refused because the caller's token lacks scopes it needs (the error
    /// is an [`InsufficientScope`](crate::server::InsufficientScope)).
    InsufficientScope,
    /// The call was refused because its caller is over a budget (the error is an
    /// [`OverBudget`](crate::server::budget::OverBudget)); HTTP adds `Retry-After`.
    OverBudget,
}

impl Reply {
    /// A single message answering a request.
    pub(crate) fn response(body: Bytes) -> Self {
        Reply::Message {
            body,
            kind: MessageKind::Response,
        }
    }

    /// The single message's body, if this is a single message.
    pub fn body(&self) -> Option<&Bytes> {
        match self {
            Reply::Message { body, .. } => Some(body),
            _ => None,
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Message { body, kind } => f
                .debug_struct("Message")
                .field("kind", kind)
                .field("body", &String::from_utf8_lossy(body))
                .finish(),
            Reply::Stream(_) => f.write_str("Stream"),
            Reply::Accepted => f.write_str("Accepted"),
            Reply::Cancelled => f.write_str("Cancelled"),
        }
    }
}

/// A stream of serialized JSON-RPC messages answering one request.
pub struct ReplyStream {
    inner: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
}

impl ReplyStream {
    /// Wraps any stream of serialized messages.
    pub fn new(stream: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        ReplyStream {
            inner: Box::pin(stream),
        }
    }
}

impl Stream for ReplyStream {
    type Item = Bytes;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// A response in the making: its body and kind once the handler is done.
pub(crate) type BoxedResponse = Pin<Box<dyn Future<Output = (Bytes, MessageKind)> + Send>>;

/// Runs a handler whose request may emit notifications, and decides between a single
/// message and a stream lazily: if the handler finishes before it notifies anything, the
/// answer is one plain message; if a notification comes first, the answer becomes a stream
/// that carries it, any later ones, then the final response.
///
/// The response future is on the heap already, so that the caller's future holds a pointer
/// instead of the whole response future.
pub(crate) async fn respond_lazily(mut response: BoxedResponse, mut rx: NoteReceiver) -> Reply {
    tokio::select! {
        biased;
        (body, kind) = &mut response => {
            match rx.try_recv() {
                Ok(first) => {
                    let mut queued = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        queued.push(more);
                    }
                    queued.push(body);
                    Reply::Stream(ReplyStream::new(futures::stream::iter(queued)))
                }
                Err(_) => Reply::Message { body, kind },
            }
        }
        Some(first) = rx.recv() => Reply::Stream(ReplyStream::new(NotifyThenRespond {
            first: Some(first),
            response: Some(response),
            rx: Some(rx),
            last: None,
        })),
    }
}

/// Notifications as they come, then the final response; nothing after it.
struct NotifyThenRespond {
    first: Option<Bytes>,
    response: Option<BoxedResponse>,
    rx: Option<NoteReceiver>,
    last: Option<Bytes>,
}

impl Stream for NotifyThenRespond {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(first));
        }
        if let Some(response) = this.response.as_mut() {
            if let Poll::Ready((body, _)) = response.as_mut().poll(cx) {
                this.response = None;
                this.last = Some(body);
            } else if let Some(rx) = this.rx.as_mut() {
                return match ready!(rx.poll_recv(cx)) {
                    Some(note) => Poll::Ready(Some(note)),
                    None => {
                        // Every sender is gone; only the response is left to wait for.
                        this.rx = None;
                        Poll::Pending
                    }
                };
            } else {
                return Poll::Pending;
            }
        }
        // The response is ready: flush what was already queued, then the response.
        if let Some(rx) = this.rx.as_mut() {
            if let Ok(note) = rx.try_recv() {
                return Poll::Ready(Some(note));
            }
            this.rx = None;
        }
        Poll::Ready(this.last.take())
    }
}
