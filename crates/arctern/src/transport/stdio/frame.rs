//! Splitting the input of a stdio stream into lines (one JSON-RPC message each).

use std::ops::Range;

/// How much is read from the input at a time.
const READ_CHUNK: usize = 64 * 1024;

/// What the framer found in the buffered input.
pub(super) enum Frame {
    /// A complete, non-blank line (its range in the buffer, line end excluded).
    Line(Range<usize>),
    /// A line over the length limit, already discarded.
    TooLong,
}

/// Splits buffered input into lines, reusing one buffer, and skips over-long lines without
/// holding them in memory.
pub(super) struct Framer {
    pub(super) buf: Vec<u8>,
    /// Start of the current (incomplete) line.
    start: usize,
    /// Everything before this index has been searched for a newline.
    scanned: usize,
    max: usize,
    /// Inside an over-long line: drop input up to the next newline.
    discarding: bool,
}

impl Framer {
    pub(super) fn new(max: usize) -> Self {
        Framer {
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            scanned: 0,
            max,
            discarding: false,
        }
    }

    /// The next complete line in the buffer, if any.
    pub(super) fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let Some(offset) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                // `+ 1` leaves room for the `\r` of a `\r\n` line end still to come.
                if self.discarding || self.buf.len() - self.start > self.max.saturating_add(1) {
                    self.discarding = true;
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                }
                return None;
            };
            let newline = self.scanned + offset;
            let start = self.start;
            self.start = newline + 1;
            self.scanned = newline + 1;
            if std::mem::take(&mut self.discarding) {
                return Some(Frame::TooLong);
            }
            if let Some(frame) = self.frame(start, newline) {
                return Some(frame);
            }
        }
    }

    /// At the end of the input: the last line, when it had no line end.
    pub(super) fn finish(&mut self) -> Option<Frame> {
        let (start, end) = (self.start, self.buf.len());
        self.start = end;
        self.scanned = end;
        if std::mem::take(&mut self.discarding) {
            return Some(Frame::TooLong);
        }
        self.frame(start, end)
    }

    fn frame(&self, start: usize, mut end: usize) -> Option<Frame> {
        if end > start && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &self.buf[start..end];
        if line.len() > self.max {
            Some(Frame::TooLong)
        } else if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(Frame::Line(start..end))
        }
    }

    /// Drops consumed lines and makes room for the next read.
    pub(super) fn make_room(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.scanned = 0;
        } else if self.start > 0 {
            // Only the tail of one partial line moves.
            self.buf.drain(..self.start);
            self.scanned -= self.start;
        }
        self.start = 0;
        if self.buf.capacity() > 4 * READ_CHUNK && self.buf.len() <= READ_CHUNK {
            // Give back the memory a very large message needed.
            self.buf.shrink_to(2 * READ_CHUNK);
        }
        self.buf.reserve(READ_CHUNK);
    }
}

/// The frames of `chunks` read one after another, as the server's read loop reads them,
/// then the end of the input: each a line's bytes, or `None` for a line over `max` bytes.
/// For the tests and the fuzz targets.
#[cfg(any(test, fuzzing))]
pub(super) fn split(max: usize, chunks: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
    let take = |frame: Frame, buf: &[u8]| match frame {
        Frame::Line(range) => Some(buf[range].to_vec()),
        Frame::TooLong => None,
    };
    let mut framer = Framer::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
        framer.make_room();
        framer.buf.extend_from_slice(chunk);
        while let Some(frame) = framer.next_frame() {
            out.push(take(frame, &framer.buf));
        }
    }
    if let Some(frame) = framer.finish() {
        out.push(take(frame, &framer.buf));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Option<String>> {
        split(max, chunks)
            .into_iter()
            .map(|line| line.map(|bytes| String::from_utf8(bytes).unwrap()))
            .collect()
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(
            frames(
                100,
                &[b"{\"a\"", b":1}\r\n\n  \r\n{\"b\":2}\n{\"c\"", b":3}"]
            ),
            vec![
                Some("{\"a\":1}".into()),
                Some("{\"b\":2}".into()),
                Some("{\"c\":3}".into())
            ]
        );
    }

    #[test]
    fn discards_long_lines_without_buffering_them() {
        let long = vec![b'x'; 50];
        let out = frames(
            10,
            &[&long, &long, b"xx\n{}\n", b"0123456789\r\n01234567890\n"],
        );
        assert_eq!(
            out,
            vec![None, Some("{}".into()), Some("0123456789".into()), None]
        );
        let mut framer = Framer::new(10);
        framer.make_room();
        framer.buf.extend_from_slice(&long);
        assert!(framer.next_frame().is_none());
        assert!(framer.buf.is_empty(), "an over-long line is not kept");
        assert_eq!(frames(10, &[&long]), vec![None]);
    }
}
