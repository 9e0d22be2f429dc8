//! Entry points for the fuzz targets in `fuzz/`: the parsers that are not public, driven the
//! way their transports drive them. Compiled only under `--cfg fuzzing` (cargo-fuzz sets it);
//! not part of the API and not covered by semver.

/// What the client's `text/event-stream` parser made of a body.
#[cfg(all(feature = "client", feature = "http"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseOutcome {
    /// The data of every event delivered, the one completed by the end of the body included.
    pub events: Vec<Vec<u8>>,
    /// The last event id (`id:`).
    pub last_id: Option<String>,
    /// The last reconnection delay (`retry:`), in milliseconds.
    pub retry: Option<u64>,
    /// The parser refused an event over `max` bytes (it stops there, as the client does).
    pub too_large: bool,
}

/// Feeds `chunks` to the client's SSE parser (events of at most `max` bytes), then ends the
/// body.
#[cfg(all(feature = "client", feature = "http"))]
pub fn sse(max: usize, chunks: &[&[u8]]) -> SseOutcome {
    let mut parser = crate::transport::http::client::SseParser::new(max);
    let mut events = Vec::new();
    let mut too_large = false;
    for chunk in chunks {
        if parser.feed(chunk, &mut events).is_err() {
            too_large = true;
            break;
        }
    }
    if !too_large {
        events.extend(parser.finish());
    }
    SseOutcome {
        events,
        last_id: parser.last_id.clone(),
        retry: parser.retry,
        too_large,
    }
}

/// Feeds `chunks` to the stdio server's line framer (lines of at most `max` bytes), then ends
/// the input. Each frame is a line's bytes, or `None` for a line that was too long.
#[cfg(all(feature = "server", feature = "stdio"))]
pub fn stdio_frames(max: usize, chunks: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
    crate::transport::stdio::fuzz_frames(max, chunks)
}
