//! Response bodies (one JSON message, an SSE stream, nothing) and reading request bodies
//! within a limit.

use std::convert::Infallible;
use std::fmt;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::Stream;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::time::{Instant, Sleep};

use crate::server::connection::ReplyStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";
const EVENT_PREFIX: &[u8] = b"event: message\ndata: ";

/// The body of every response the MCP service sends: one JSON message (written in one
/// piece, with a `Content-Length`), an SSE stream, or nothing.
///
/// Dropping a streaming body (the client went away) drops the reply stream, which cancels
/// the request.
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    Sse(SseBody),
    /// A stream answered to a client that only accepts JSON: the notifications are dropped
    /// and only the final response is sent.
    Last(LastOnly),
}

impl ResponseBody {
    pub(crate) fn empty() -> Self {
        ResponseBody { kind: Kind::Empty }
    }

    pub(crate) fn full(bytes: Bytes) -> Self {
        ResponseBody {
            kind: Kind::Full(Some(bytes)),
        }
    }

    pub(crate) fn sse(source: SseSource, keep_alive: Option<Duration>) -> Self {
        ResponseBody {
            kind: Kind::Sse(SseBody {
                source,
                keep_alive,
                timer: None,
            }),
        }
    }

    pub(crate) fn last_only(stream: ReplyStream) -> Self {
        ResponseBody {
            kind: Kind::Last(LastOnly {
                stream: Some(stream),
                last: None,
            }),
        }
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Empty => "Empty",
            Kind::Full(_) => "Json",
            Kind::Sse(_) => "Sse",
            Kind::Last(_) => "JsonFromStream",
        };
        f.debug_tuple("ResponseBody").field(&kind).finish()
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Sse(sse) => sse.poll(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            Kind::Last(last) => last.poll(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Sse(sse) => sse.source.is_done(),
            Kind::Last(last) => last.stream.is_none() && last.last.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            _ => SizeHint::default(),
        }
    }
}

/// What an SSE body carries: a reply stream, or a single message (for a client that
/// accepts only SSE).
pub(crate) enum SseSource {
    Stream(Option<ReplyStream>),
    One(Option<Bytes>),
    /// Events already framed (with ids), written as they are (legacy sessions).
    Framed(Option<ReplyStream>),
}

impl SseSource {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        match self {
            SseSource::Stream(slot) | SseSource::Framed(slot) => {
                let Some(stream) = slot.as_mut() else {
                    return Poll::Ready(None);
                };
                let next = Pin::new(stream).poll_next(cx);
                if let Poll::Ready(None) = next {
                    // Release the stream (and what it holds) as soon as it is done.
                    *slot = None;
                }
                next
            }
            SseSource::One(one) => Poll::Ready(one.take()),
        }
    }

    fn is_done(&self) -> bool {
        match self {
            SseSource::Stream(slot) | SseSource::Framed(slot) => slot.is_none(),
            SseSource::One(one) => one.is_none(),
        }
    }
}

struct SseBody {
    source: SseSource,
    keep_alive: Option<Duration>,
    /// Created the first time the stream is idle; reset after every event.
    timer: Option<Pin<Box<Sleep>>>,
}

impl SseBody {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        match self.source.poll_next(cx) {
            Poll::Ready(Some(message)) => {
                if let (Some(timer), Some(every)) = (self.timer.as_mut(), self.keep_alive) {
                    timer.as_mut().reset(Instant::now() + every);
                }
                if matches!(self.source, SseSource::Framed(_)) {
                    return Poll::Ready(Some(message));
                }
                Poll::Ready(Some(sse_event(&message)))
            }
            Poll::Ready(None) => {
                self.timer = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let Some(every) = self.keep_alive else {
                    return Poll::Pending;
                };
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        timer.as_mut().reset(Instant::now() + every);
                        Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE_COMMENT)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

struct LastOnly {
    stream: Option<ReplyStream>,
    last: Option<Bytes>,
}

impl LastOnly {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        while let Some(stream) = self.stream.as_mut() {
            match Pin::new(stream).poll_next(cx) {
                Poll::Ready(Some(message)) => self.last = Some(message),
                Poll::Ready(None) => self.stream = None,
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(self.last.take())
    }
}

/// One SSE event carrying `message`, in a single buffer so that it leaves in one write.
///
/// Serialized JSON has no raw line breaks; should a message contain some anyway, each line
/// becomes its own `data:` line, which SSE joins back with `\n` (JSON whitespace).
pub(crate) fn sse_event(message: &[u8]) -> Bytes {
    let breaks = message
        .iter()
        .filter(|&&b| b == b'\n' || b == b'\r')
        .count();
    let mut buf = BytesMut::with_capacity(EVENT_PREFIX.len() + message.len() + 2 + breaks * 6);
    buf.extend_from_slice(EVENT_PREFIX);
    if breaks == 0 {
        buf.extend_from_slice(message);
    } else {
        let mut rest = message;
        loop {
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                buf.extend_from_slice(rest);
                break;
            };
            buf.extend_from_slice(&rest[..end]);
            let skip = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            rest = &rest[end + skip..];
            buf.extend_from_slice(b"\ndata: ");
        }
    }
    buf.extend_from_slice(b"\n\n");
    buf.freeze()
}

/// Why a request body could not be read.
pub(crate) enum ReadError {
    /// Longer than the limit; nothing beyond the limit was buffered.
    TooLarge,
    /// The body failed (the client went away mid-body, a malformed chunk...).
    Failed(BoxError),
}

/// Reads a whole request body, refusing more than `limit` bytes. A body that arrives in one
/// frame is returned without copying.
pub(crate) async fn read_limited<B>(body: B, limit: usize) -> Result<Bytes, ReadError>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Failed(e.into()))?;
        let Ok(mut data) = frame.into_data() else {
            // Trailers carry nothing for us.
            continue;
        };
        let len = data.remaining();
        if len == 0 {
            continue;
        }
        total = total.saturating_add(len);
        if total > limit {
            return Err(ReadError::TooLarge);
        }
        match (&mut joined, first.take()) {
            (Some(buf), _) => put(buf, &mut data),
            (None, None) => first = Some(data.copy_to_bytes(len)),
            (None, Some(head)) => {
                let hint = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
                let capacity = total.saturating_add(hint).min(limit);
                let mut buf = BytesMut::with_capacity(capacity);
                buf.extend_from_slice(&head);
                put(&mut buf, &mut data);
                joined = Some(buf);
            }
        }
    }
    Ok(match joined {
        Some(buf) => buf.freeze(),
        None => first.unwrap_or_default(),
    })
}

fn put(buf: &mut BytesMut, data: &mut impl Buf) {
    while data.has_remaining() {
        let chunk = data.chunk();
        let n = chunk.len();
        buf.extend_from_slice(chunk);
        data.advance(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use http_body_util::{Full, StreamBody};

    #[test]
    fn sse_events() {
        assert_eq!(
            &sse_event(br#"{"a":1}"#)[..],
            b"event: message\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(
            &sse_event(b"{\n\"a\":1\r\n}\r")[..],
            b"event: message\ndata: {\ndata: \"a\":1\ndata: }\ndata: \n\n"
        );
    }

    fn chunks(parts: &[&'static [u8]]) -> impl Body<Data = Bytes, Error = Infallible> {
        StreamBody::new(stream::iter(
            parts
                .iter()
                .map(|p| Ok::<_, Infallible>(Frame::data(Bytes::from_static(p))))
                .collect::<Vec<_>>(),
        ))
    }

    #[tokio::test]
    async fn reads_within_the_limit() {
        let one = Bytes::from_static(b"{\"x\":1}");
        let got = read_limited(Full::new(one.clone()), 100)
            .await
            .ok()
            .unwrap();
        assert_eq!(got, one);
        assert_eq!(got.as_ptr(), one.as_ptr(), "one frame is not copied");
        let got = read_limited(chunks(&[b"ab", b"", b"cd", b"e"]), 5)
            .await
            .ok()
            .unwrap();
        assert_eq!(&got[..], b"abcde");
        assert!(matches!(
            read_limited(chunks(&[b"ab", b"cd", b"ef"]), 5).await,
            Err(ReadError::TooLarge)
        ));
        assert!(matches!(
            read_limited(Full::new(Bytes::from_static(b"123456")), 5).await,
            Err(ReadError::TooLarge)
        ));
        let empty = read_limited(chunks(&[]), 5).await.ok().unwrap();
        assert!(empty.is_empty());
    }

    #[tokio::test]
    async fn json_only_clients_get_the_last_message() {
        let stream = ReplyStream::new(stream::iter(vec![
            Bytes::from_static(b"note"),
            Bytes::from_static(b"final"),
        ]));
        let body = ResponseBody::last_only(stream);
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"final");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_streams_get_keep_alive_comments() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let stream = ReplyStream::new(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|b| (b, rx))
        }));
        let mut body = ResponseBody::sse(
            SseSource::Stream(Some(stream)),
            Some(Duration::from_secs(5)),
        );
        async fn next(body: &mut ResponseBody) -> Option<Bytes> {
            body.frame().await.map(|f| f.unwrap().into_data().unwrap())
        }
        assert_eq!(next(&mut body).await.unwrap(), KEEP_ALIVE_COMMENT);
        tx.send(Bytes::from_static(b"{}")).await.unwrap();
        assert_eq!(
            next(&mut body).await.unwrap(),
            Bytes::from_static(b"event: message\ndata: {}\n\n")
        );
        drop(tx);
        assert!(next(&mut body).await.is_none());
        assert!(body.is_end_stream());
    }
}
