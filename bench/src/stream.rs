//! Reading a long-lived SSE response off a raw HTTP/1.1 connection, for the open-streams
//! scenario: the load generator holds thousands of `subscriptions/listen` streams on one
//! core, so each one is a bare socket with this small incremental decoder instead of a
//! full HTTP client. It decodes the response head, the `chunked` transfer coding (or a body
//! that runs to the end of the connection), and SSE events, and hands back each event's
//! `data`.

/// Why a stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError(pub String);

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The most a response head may take.
const MAX_HEAD: usize = 16 * 1024;

/// The most one SSE event may take (the benchmark's are a few hundred bytes; thousands of
/// streams are open at once, so this bounds the load generator's memory).
const MAX_EVENT: usize = 16 * 1024;

enum Body {
    /// Waiting for (the rest of) a chunk-size line.
    ChunkSize,
    /// Inside a chunk, with this many bytes left.
    Chunk(usize),
    /// After a chunk's data: its CRLF.
    ChunkEnd,
    /// After the last (empty) chunk: the CRLF that ends the (empty) trailer section.
    Trailer,
    /// The body runs until the connection closes.
    UntilClose,
    /// The last chunk arrived: nothing more may come.
    Done,
}

/// An incremental decoder of one HTTP/1.1 response carrying an SSE stream.
pub struct SseResponse {
    /// Undecoded bytes: the head until it is complete, then the raw body.
    raw: Vec<u8>,
    head_done: bool,
    body: Body,
    /// Decoded body bytes not yet split into events.
    text: Vec<u8>,
}

impl Default for SseResponse {
    fn default() -> Self {
        SseResponse::new()
    }
}

impl SseResponse {
    /// A decoder waiting for the response head.
    pub fn new() -> SseResponse {
        SseResponse {
            raw: Vec::with_capacity(1024),
            head_done: false,
            body: Body::ChunkSize,
            text: Vec::with_capacity(1024),
        }
    }

    /// Whether the body has ended (the last chunk arrived).
    pub fn ended(&self) -> bool {
        matches!(self.body, Body::Done)
    }

    /// Feeds bytes read from the connection; returns the `data` of every SSE event they
    /// complete (the data lines of one event joined with `\n`). Comment lines and events
    /// without data (keep-alives) yield nothing. A head that is not `200` with
    /// `text/event-stream` is an error.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, StreamError> {
        self.raw.extend_from_slice(bytes);
        if !self.head_done {
            let Some(end) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") else {
                if self.raw.len() > MAX_HEAD {
                    return Err(StreamError("response head too long".into()));
                }
                return Ok(Vec::new());
            };
            let head = String::from_utf8_lossy(&self.raw[..end]).into_owned();
            self.raw.drain(..end + 4);
            self.head_done = true;
            self.body = parse_head(&head)?;
        }
        self.decode_body()?;
        self.events()
    }

    fn decode_body(&mut self) -> Result<(), StreamError> {
        let mut at = 0;
        loop {
            match self.body {
                Body::UntilClose => {
                    self.text.extend_from_slice(&self.raw[at..]);
                    at = self.raw.len();
                    break;
                }
                Body::Done => {
                    if at < self.raw.len() {
                        return Err(StreamError("bytes after the last chunk".into()));
                    }
                    break;
                }
                Body::ChunkSize => {
                    let Some(eol) = self.raw[at..].windows(2).position(|w| w == b"\r\n") else {
                        if self.raw.len() - at > 64 {
                            return Err(StreamError("chunk-size line too long".into()));
                        }
                        break;
                    };
                    let line = std::str::from_utf8(&self.raw[at..at + eol])
                        .map_err(|_| StreamError("chunk-size line is not ASCII".into()))?;
                    let digits = line.split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(digits, 16)
                        .map_err(|_| StreamError(format!("bad chunk size {line:?}")))?;
                    at += eol + 2;
                    self.body = if size == 0 {
                        Body::Trailer
                    } else {
                        Body::Chunk(size)
                    };
                }
                Body::Chunk(left) => {
                    let take = left.min(self.raw.len() - at);
                    self.text.extend_from_slice(&self.raw[at..at + take]);
                    at += take;
                    if take == left {
                        self.body = Body::ChunkEnd;
                    } else {
                        self.body = Body::Chunk(left - take);
                        break;
                    }
                }
                Body::ChunkEnd | Body::Trailer => {
                    if self.raw.len() - at < 2 {
                        break;
                    }
                    if &self.raw[at..at + 2] != b"\r\n" {
                        return Err(StreamError("chunk without its CRLF".into()));
                    }
                    at += 2;
                    self.body = match self.body {
                        Body::Trailer => Body::Done,
                        _ => Body::ChunkSize,
                    };
                }
            }
        }
        self.raw.drain(..at);
        Ok(())
    }

    fn events(&mut self) -> Result<Vec<String>, StreamError> {
        let mut out = Vec::new();
        loop {
            let boundary = find_boundary(&self.text);
            let Some((end, skip)) = boundary else {
                if self.text.len() > MAX_EVENT {
                    return Err(StreamError("SSE event too long".into()));
                }
                return Ok(out);
            };
            let event = String::from_utf8(self.text[..end].to_vec())
                .map_err(|_| StreamError("SSE event is not UTF-8".into()))?;
            self.text.drain(..end + skip);
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                out.push(data.join("\n"));
            }
        }
    }
}

/// Where the first SSE event in `text` ends, and the length of the blank line after it.
fn find_boundary(text: &[u8]) -> Option<(usize, usize)> {
    let lf = text.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = text
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Checks the status and content type; returns how the body is framed.
fn parse_head(head: &str) -> Result<Body, StreamError> {
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let code = status.split_whitespace().nth(1).unwrap_or("");
    let mut content_type = None;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" => content_type = Some(value.to_ascii_lowercase()),
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "content-length" => length = Some(value.to_owned()),
            _ => {}
        }
    }
    if code != "200" {
        return Err(StreamError(format!("status line {status:?}")));
    }
    if !content_type
        .as_deref()
        .is_some_and(|ct| ct.starts_with("text/event-stream"))
    {
        return Err(StreamError(format!(
            "content type {content_type:?}, expected text/event-stream (content-length {length:?})"
        )));
    }
    Ok(if chunked {
        Body::ChunkSize
    } else {
        Body::UntilClose
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

    fn chunk(data: &str) -> Vec<u8> {
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data.as_bytes());
        out.extend_from_slice(b"\r\n");
        out
    }

    #[test]
    fn decodes_events_split_anywhere() {
        let mut wire = HEAD.to_vec();
        wire.extend(chunk("event: message\ndata: {\"a\":1}\n\n: keepalive\n\n"));
        wire.extend(chunk("data: {\"b\":"));
        wire.extend(chunk("2}\r\n\r\ndata: x\ndata: y\n\n"));
        wire.extend(b"0\r\n\r\n");
        // Every split point gives the same events.
        for split in 0..wire.len() {
            let mut r = SseResponse::new();
            let mut events = r.feed(&wire[..split]).unwrap();
            events.extend(r.feed(&wire[split..]).unwrap());
            assert_eq!(
                events,
                ["{\"a\":1}", "{\"b\":2}", "x\ny"],
                "split at {split}"
            );
            assert!(r.ended());
        }
        // And one byte at a time.
        let mut r = SseResponse::new();
        let mut events = Vec::new();
        for b in &wire {
            events.extend(r.feed(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn a_body_without_chunking_runs_to_the_end() {
        let mut r = SseResponse::new();
        let events = r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\ndata: 1\n\n")
            .unwrap();
        assert_eq!(events, ["1"]);
        assert!(!r.ended());
    }

    #[test]
    fn a_json_answer_or_an_error_status_is_refused() {
        let mut r = SseResponse::new();
        let e = r
            .feed(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            )
            .unwrap_err();
        assert!(e.0.contains("application/json"), "{e}");
        let mut r = SseResponse::new();
        let e = r
            .feed(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            .unwrap_err();
        assert!(e.0.contains("405"), "{e}");
    }

    #[test]
    fn malformed_chunking_is_an_error_not_a_hang() {
        let mut r = SseResponse::new();
        let mut wire = HEAD.to_vec();
        wire.extend(b"zz\r\n");
        assert!(r.feed(&wire).is_err());
        let mut r = SseResponse::new();
        let mut wire = HEAD.to_vec();
        wire.extend(b"2\r\nabXX");
        assert!(r.feed(&wire).is_err());
        let mut r = SseResponse::new();
        assert!(r.feed(&[b'x'; MAX_HEAD + 1]).is_err());
    }
}
