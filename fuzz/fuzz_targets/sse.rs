//! The client's `text/event-stream` parser: a server's body, cut into chunks anywhere (the
//! first byte chooses the cuts), gives the same events, last event id and retry delay as the
//! whole body in one chunk; events stay within the size limit; nothing panics.
#![no_main]

use arctern::__fuzz::sse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    // A small limit now and then, so that the size check is exercised too.
    let max = if seed & 0x80 != 0 {
        usize::from(seed & 0x3f) + 1
    } else {
        1 << 20
    };
    let whole = sse(max, &[body]);
    let chunks = cut(body, seed);
    let split = sse(max, &chunks);
    if !whole.too_large {
        assert!(!split.too_large, "split: refused, whole: accepted");
        assert_eq!(whole, split);
    }
    for event in &whole.events {
        assert!(
            event.len() <= max,
            "an event of {} bytes over {max}",
            event.len()
        );
    }
});

/// Cuts `body` into chunks whose lengths follow a small pseudo-random sequence from `seed`.
fn cut(body: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state % 7) as usize + 1;
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}
