//! The frames log: a transport wrapper that keeps every message sent and received, bounded in
//! count and in size per message, and notes the JSON-RPC id of each round it sends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arctern::client::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};
use arctern::types::methods;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::Serialize;
use serde_json::{Value, json};

/// One message as it went over the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    /// Its place in the log, from 1 (kept across evictions, so gaps show what was dropped).
    pub seq: u64,
    /// Milliseconds since the inspector started.
    pub at_ms: u64,
    /// `"sent"` or `"received"`.
    pub direction: &'static str,
    /// The message; a longer one than the per-frame limit is cut, with its size.
    pub message: Value,
}

/// The bounded log of frames, and the id of the last round sent.
pub struct Frames {
    start: Instant,
    max_frames: usize,
    max_frame_bytes: usize,
    log: Mutex<Log>,
}

struct Log {
    next: u64,
    frames: VecDeque<Frame>,
    dropped: u64,
    last_round_id: Option<Value>,
}

impl Frames {
    /// A log that keeps the last `max_frames` frames, each cut at `max_frame_bytes`.
    pub fn new(start: Instant, max_frames: usize, max_frame_bytes: usize) -> Arc<Frames> {
        Arc::new(Frames {
            start,
            max_frames: max_frames.max(1),
            max_frame_bytes,
            log: Mutex::new(Log {
                next: 1,
                frames: VecDeque::new(),
                dropped: 0,
                last_round_id: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, direction: &'static str, message: Value) {
        let at_ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut log = self.lock();
        let seq = log.next;
        log.next += 1;
        if log.frames.len() == self.max_frames {
            log.frames.pop_front();
            log.dropped += 1;
        }
        log.frames.push_back(Frame {
            seq,
            at_ms,
            direction,
            message,
        });
    }

    /// The message of `bytes`, or its head and size when it is longer than the limit.
    fn message(&self, bytes: &[u8]) -> Value {
        if bytes.len() > self.max_frame_bytes {
            let head = String::from_utf8_lossy(&bytes[..self.max_frame_bytes]).into_owned();
            return json!({ "truncated": true, "bytes": bytes.len(), "head": head });
        }
        serde_json::from_slice(bytes)
            .unwrap_or_else(|_| json!({ "unparsed": String::from_utf8_lossy(bytes) }))
    }

    fn received(&self, message: &impl Serialize) {
        let bytes = serde_json::to_vec(message).unwrap_or_default();
        let value = self.message(&bytes);
        self.push("received", value);
    }

    /// The frames kept, oldest first, and how many were dropped to stay within the limit.
    pub fn snapshot(&self) -> (Vec<Frame>, u64) {
        let log = self.lock();
        (log.frames.iter().cloned().collect(), log.dropped)
    }

    /// The JSON-RPC id of the last `tools/call`, `prompts/get` or `resources/read` sent.
    pub fn last_round_id(&self) -> Option<Value> {
        self.lock().last_round_id.clone()
    }
}

/// The transport of `arctern inspect`: the connection's own, with every frame logged.
pub struct Tap {
    inner: Arc<dyn Transport>,
    frames: Arc<Frames>,
}

impl Tap {
    /// Logs what goes through `inner` into `frames`.
    pub fn new(inner: Arc<dyn Transport>, frames: Arc<Frames>) -> Tap {
        Tap { inner, frames }
    }
}

impl Transport for Tap {
    fn mirrors_headers(&self) -> bool {
        self.inner.mirrors_headers()
    }

    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, arctern::Result<MessageStream>> {
        let value = self.frames.message(&request.body);
        if methods::is_mrtr_method(&request.method) {
            let id = request
                .id
                .as_ref()
                .and_then(|id| serde_json::to_value(id).ok());
            self.frames.lock().last_round_id = id;
        }
        self.frames.push("sent", value);
        let frames = self.frames.clone();
        let sent = self.inner.send(request);
        async move {
            let stream = sent.await?;
            Ok(stream
                .map(move |item| {
                    if let Ok(message) = &item {
                        frames.received(message);
                    }
                    item
                })
                .boxed())
        }
        .boxed()
    }

    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, arctern::Result<()>> {
        let value = self.frames.message(&notification.body);
        self.frames.push("sent", value);
        self.inner.notify(notification)
    }

    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        let frames = self.frames.clone();
        self.inner.set_unrouted_sink(Arc::new(move |n| {
            frames.received(&n);
            sink(n)
        }))
    }

    fn set_request_sink(&self, sink: RequestSink) {
        let frames = self.frames.clone();
        self.inner.set_request_sink(Arc::new(move |r| {
            frames.received(&r);
            sink(r)
        }))
    }

    fn listen(
        &self,
        headers: http::HeaderMap,
    ) -> BoxFuture<'static, arctern::Result<Option<MessageStream>>> {
        let frames = self.frames.clone();
        let listened = self.inner.listen(headers);
        async move {
            let Some(stream) = listened.await? else {
                return Ok(None);
            };
            Ok(Some(
                stream
                    .map(move |item| {
                        if let Ok(message) = &item {
                            frames.received(message);
                        }
                        item
                    })
                    .boxed(),
            ))
        }
        .boxed()
    }

    fn close(&self) -> BoxFuture<'static, arctern::Result<()>> {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_in_count_and_size() {
        let frames = Frames::new(Instant::now(), 2, 16);
        for i in 0..3 {
            frames.push("sent", json!(i));
        }
        let (kept, dropped) = frames.snapshot();
        assert_eq!(dropped, 1);
        assert_eq!(kept.iter().map(|f| f.seq).collect::<Vec<_>>(), [2, 3]);
        let cut = frames.message(br#"{"jsonrpc":"2.0","method":"a long one"}"#);
        assert_eq!(cut["truncated"], true);
        assert_eq!(cut["head"].as_str().unwrap().len(), 16);
        assert_eq!(frames.message(br#"{"a":1}"#), json!({"a": 1}));
    }
}
