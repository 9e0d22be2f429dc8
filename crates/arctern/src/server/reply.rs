//! What the server hands back to a transport for one incoming message.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::note_channel::NoteReceiver;
use bytes::Bytes;
use futures::Stream;

/// How a transport should answer one incoming message.
pub enum Reply {
    /// Exactly one JSON-RPC message (a result or an error). `status` is the HTTP status a
    /// Streamable HTTP transport uses (200, or 400/404 for envelope and routing errors).
    Message {
        /// HTTP status for HTTP transports.
        status: u16,
        /// The serialized JSON-RPC message.
        body: Bytes,
    },
    /// Several messages: request-scoped notifications, then (unless the stream is cut) the
    /// final response. HTTP sends this as an SSE stream, stdio as lines. Dropping the stream
    /// cancels the request.
    Stream(ReplyStream),
    /// Nothing to send: a notification was accepted (HTTP 202).
    Accepted,
}

impl Reply {
    pub(crate) fn message(status: u16, body: Bytes) -> Self {
        Reply::Message { status, body }
    }

    /// The single message's body, if this is a single message.
    pub fn body(&self) -> Option<&Bytes> {
        match self {
            Reply::Message { body, .. } => Some(body),
            _ => None,
        }
    }

    /// The HTTP status a Streamable HTTP transport answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            Reply::Message { status, .. } => *status,
            Reply::Stream(_) => 200,
            Reply::Accepted => 202,
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Message { status, body } => f
                .debug_struct("Message")
                .field("status", status)
                .field("body", &String::from_utf8_lossy(body))
                .finish(),
            Reply::Stream(_) => f.write_str("Stream"),
            Reply::Accepted => f.write_str("Accepted"),
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

pub(crate) type BoxedResponse = Pin<Box<dyn Future<Output = (u16, Bytes)> + Send>>;

/// Runs a handler whose request may emit notifications, and decides between a single
/// message and a stream lazily: if the handler finishes before it notifies anything, the
/// answer is one plain message; if a notification comes first, the answer becomes a stream
/// that carries it, any later ones, then the final response.
pub(crate) async fn respond_lazily(
    response: impl Future<Output = (u16, Bytes)> + Send + 'static,
    rx: NoteReceiver,
) -> Reply {
    respond_lazily_boxed(Box::pin(response), rx).await
}

/// [`respond_lazily`] for a response future already on the heap, so that the caller's
/// future holds a pointer instead of the whole response future.
pub(crate) async fn respond_lazily_boxed(
    mut response: BoxedResponse,
    mut rx: NoteReceiver,
) -> Reply {
    tokio::select! {
        biased;
        (status, body) = &mut response => {
            match rx.try_recv() {
                Ok(first) => {
                    let mut queued = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        queued.push(more);
                    }
                    queued.push(body);
                    Reply::Stream(ReplyStream::new(futures::stream::iter(queued)))
                }
                Err(_) => Reply::message(status, body),
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
            if let Poll::Ready((_, body)) = response.as_mut().poll(cx) {
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
