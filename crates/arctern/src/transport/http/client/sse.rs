//! SSE response streams: the `text/event-stream` parser, and resumption with `GET` and
//! `Last-Event-ID`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use futures::Stream;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::{Error, ErrorKind, Result};

use super::body::{Body, parse_message};
use super::{Inner, transport_error};

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
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// When an SSE stream that ends may be resumed with `GET` and `Last-Event-ID`.
pub(super) enum Resume {
    /// The response stream of this request (`None`: a request without id): resumed only
    /// until its final response arrived, and only if the server gave its events ids.
    Request(Option<RequestId>),
    /// The session's `GET` stream (sent with these headers): resumed whenever it ends.
    Listen(HeaderMap),
}

/// A resumption in progress: the `retry` wait, then the `GET`.
pub(super) type Resuming = Pin<Box<dyn Future<Output = Result<Option<Body>>> + Send>>;

/// An SSE response: each event's data is one JSON-RPC message.
pub(super) struct SseStream {
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
    pub(super) fn new(body: Body, max: usize, resume: Resume, inner: Arc<Inner>) -> Self {
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

    pub(super) fn push(&mut self, data: &[u8]) {
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
    pub(super) fn resumption(&mut self) -> Option<Resuming> {
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
                        this.body.abort();
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

    pub(super) fn check(&self) -> Result<()> {
        if self.line.len() + self.data.len() > self.max {
            Err(transport_error(format!(
                "an event from the server exceeds {} bytes",
                self.max
            )))
        } else {
            Ok(())
        }
    }

    pub(super) fn on_line(&mut self, line: &[u8], out: &mut Vec<Vec<u8>>) {
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

    pub(super) fn events(chunks: &[&[u8]]) -> Vec<String> {
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
    pub(super) fn parses_sse_with_comments_fields_and_every_line_ending() {
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
    pub(super) fn keeps_event_ids_and_retry() {
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
    pub(super) fn bounds_events() {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        let big = vec![b'x'; 2048];
        assert!(parser.feed(&big, &mut out).is_err());
    }
}
