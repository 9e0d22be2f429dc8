//! Response bodies: the connection goes back to the pool at the end of a body, and JSON
//! bodies are parsed as their values complete.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use arctern_types::jsonrpc::JsonRpcMessage;
use bytes::Bytes;
use futures::Stream;
use http::StatusCode;
use http_body::Body as _;
use http_body_util::combinators::UnsyncBoxBody;
use serde_json::value::RawValue;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::{Error, ErrorKind, Result};

use super::pool::PoolBody;
use super::{BoxError, Inner, status_error, transport_error};

/// How a pending JSON value may grow before it is only re-parsed when the buffer doubles
/// (keeps incremental parsing of a large body linear-ish).
const INCREMENTAL_WINDOW: usize = 64 * 1024;

/// A response body, from the built-in pool or from a user's service, that ends with an error
/// when the transport closes.
pub(super) struct Body {
    raw: Option<RawBody>,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// The bytes of a response: the pool's own body (no boxing on the default path), or the body
/// of another service.
pub(super) enum RawBody {
    Pool(PoolBody),
    Boxed(UnsyncBoxBody<Bytes, BoxError>),
}

impl Body {
    pub(super) fn new(raw: RawBody, inner: &Inner) -> Self {
        Self::with_token(raw, &inner.closed)
    }

    /// A body that fails once `closed` is cancelled.
    pub(super) fn with_token(raw: RawBody, closed: &CancellationToken) -> Self {
        let closed = Box::pin(closed.clone().cancelled_owned());
        Body {
            raw: Some(raw),
            closed,
        }
    }

    /// Drops the rest of the body (closing its connection).
    pub(super) fn abort(&mut self) {
        self.raw = None;
    }

    pub(super) fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        if self.closed.as_mut().poll(cx).is_ready() {
            self.raw = None;
            return Poll::Ready(Some(Err(Error::new(
                ErrorKind::Closed,
                "the transport is closed",
            ))));
        }
        loop {
            let frame = match self.raw.as_mut() {
                None => return Poll::Ready(None),
                Some(RawBody::Pool(body)) => {
                    ready!(Pin::new(body).poll_frame(cx)).map(|r| r.map_err(BoxError::from))
                }
                Some(RawBody::Boxed(body)) => ready!(Pin::new(body).poll_frame(cx)),
            };
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Some(Err(e)) => {
                    self.raw = None;
                    return Poll::Ready(Some(Err(
                        transport_error("the HTTP response broke off").with_source(e)
                    )));
                }
                None => {
                    // Dropping a finished pool body leaves its connection in the pool.
                    self.raw = None;
                    return Poll::Ready(None);
                }
            }
        }
    }
}

pub(super) fn parse_message(bytes: &[u8]) -> Result<JsonRpcMessage> {
    JsonRpcMessage::from_slice(bytes)
        .map_err(|e| transport_error("the server sent a malformed JSON-RPC message").with_source(e))
}

/// A JSON response body: one JSON value, or several one after another (newline-delimited
/// streams), parsed as they complete.
pub(super) struct JsonStream {
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
    pub(super) fn new(body: Body, status: StatusCode, max: usize) -> Self {
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
    pub(super) fn parse_available(&mut self, at_end: bool) {
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
    pub(super) fn explain(&self, error: Error) -> Error {
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
                        this.body.abort();
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
                        // The status is the error's source, which its display appends.
                        this.ready.push_back(Err(status_error(
                            this.status,
                            "no JSON-RPC message in the response".to_owned(),
                        )));
                    }
                }
            }
        }
    }
}
