//! The stdio server's line framer: input cut into reads anywhere (the first byte chooses the
//! cuts and the line limit) gives the same lines as one read; every line is within the limit,
//! has no line end in it and is not blank; nothing panics.
#![no_main]

use arctern::__fuzz::stdio_frames;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let max = usize::from(seed & 0x1f) * 4 + 1;
    let whole = stdio_frames(max, &[input]);
    let split = stdio_frames(max, &cut(input, seed));
    assert_eq!(whole, split);
    // What a line-at-a-time reading of the same input gives.
    let mut expected = Vec::new();
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.ends_with(b"\n") {
        lines.pop();
    }
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            expected.push(None);
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            expected.push(Some(line.to_vec()));
        }
    }
    assert_eq!(whole, expected);
});

/// Cuts `input` into chunks whose lengths follow a small pseudo-random sequence from `seed`.
fn cut(input: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut chunks = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state % 13) as usize + 1;
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}
