//! Poly1305 (RFC 8439 §2.5), as used inside the ChaCha20-Poly1305 AEAD construction.
//!
//! Why not the `poly1305` crate: its runtime-selected AVX2 backend is several times slower
//! than a plain 64-bit implementation on the short messages a token holds (hundreds of bytes),
//! and it dominated the cost of sealing. This implementation is portable safe Rust with
//! 44/44/42-bit limbs and 128-bit products; it has no secret-dependent branches or table
//! lookups (the final reduction selects with masks). The AEAD built on it is checked
//! byte-for-byte against the `chacha20poly1305` crate in the tests.
//!
//! Only whole 16-byte blocks are authenticated with the 2^128 bit set, which is all the AEAD
//! needs: it zero-pads the associated data and the ciphertext to 16 bytes
//! ([`Poly1305::update_padded`]) and ends with a full length block.

use zeroize::Zeroize as _;

const MASK44: u64 = 0x0000_0fff_ffff_ffff;
const MASK42: u64 = 0x0000_03ff_ffff_ffff;
const HIBIT: u64 = 1 << 40;

/// One Poly1305 computation under a one-time key.
pub(crate) struct Poly1305 {
    r: [u64; 3],
    /// `r1 * 20` and `r2 * 20`: folding 2^130 ≡ 5 (mod p) into the multiplication.
    s: [u64; 2],
    h: [u64; 3],
    pad: [u64; 2],
}

#[inline(always)]
fn le64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[inline(always)]
fn mul(a: u64, b: u64) -> u128 {
    u128::from(a) * u128::from(b)
}

#[inline(always)]
#[allow(clippy::cast_possible_truncation)]
fn low64(x: u128) -> u64 {
    x as u64
}

impl Poly1305 {
    /// A computation under the 32-byte one-time key `r ‖ s`.
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let t0 = le64(key, 0);
        let t1 = le64(key, 8);
        // Clamp r (RFC 8439 §2.5.1) while splitting it into limbs.
        let r0 = t0 & 0x0000_0ffc_0fff_ffff;
        let r1 = ((t0 >> 44) | (t1 << 20)) & 0x0000_0fff_ffc0_ffff;
        let r2 = (t1 >> 24) & 0x0000_000f_ffff_fc0f;
        Poly1305 {
            r: [r0, r1, r2],
            s: [r1 * 20, r2 * 20],
            h: [0; 3],
            pad: [le64(key, 16), le64(key, 24)],
        }
    }

    /// Absorbs `data` zero-padded to a multiple of 16 bytes, each block with the 2^128 bit.
    pub(crate) fn update_padded(&mut self, data: &[u8]) {
        let mut chunks = data.chunks_exact(16);
        self.blocks(&mut chunks, HIBIT);
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut block = [0u8; 16];
            block[..rest.len()].copy_from_slice(rest);
            self.blocks(&mut block.chunks_exact(16), HIBIT);
        }
    }

    #[inline(always)]
    fn blocks(&mut self, chunks: &mut std::slice::ChunksExact<'_, u8>, hibit: u64) {
        let [r0, r1, r2] = self.r;
        let [s1, s2] = self.s;
        let [mut h0, mut h1, mut h2] = self.h;
        for block in chunks {
            let t0 = le64(block, 0);
            let t1 = le64(block, 8);
            h0 += t0 & MASK44;
            h1 += ((t0 >> 44) | (t1 << 20)) & MASK44;
            h2 += ((t1 >> 24) & MASK42) | hibit;

            let d0 = mul(h0, r0) + mul(h1, s2) + mul(h2, s1);
            let mut d1 = mul(h0, r1) + mul(h1, r0) + mul(h2, s2);
            let mut d2 = mul(h0, r2) + mul(h1, r1) + mul(h2, r0);

            let c = low64(d0 >> 44);
            h0 = low64(d0) & MASK44;
            d1 += u128::from(c);
            let c = low64(d1 >> 44);
            h1 = low64(d1) & MASK44;
            d2 += u128::from(c);
            let c = low64(d2 >> 42);
            h2 = low64(d2) & MASK42;
            h0 += c * 5;
            let c = h0 >> 44;
            h0 &= MASK44;
            h1 += c;
        }
        self.h = [h0, h1, h2];
    }

    /// The 16-byte tag.
    pub(crate) fn finalize(mut self) -> [u8; 16] {
        let [mut h0, mut h1, mut h2] = self.h;
        // Fully carry h.
        let mut c = h1 >> 44;
        h1 &= MASK44;
        h2 += c;
        c = h2 >> 42;
        h2 &= MASK42;
        h0 += c * 5;
        c = h0 >> 44;
        h0 &= MASK44;
        h1 += c;
        c = h1 >> 44;
        h1 &= MASK44;
        h2 += c;
        c = h2 >> 42;
        h2 &= MASK42;
        h0 += c * 5;
        c = h0 >> 44;
        h0 &= MASK44;
        h1 += c;

        // g = h + 5 - 2^130; keep g if it did not go negative (h >= p), else h.
        let mut g0 = h0 + 5;
        c = g0 >> 44;
        g0 &= MASK44;
        let mut g1 = h1 + c;
        c = g1 >> 44;
        g1 &= MASK44;
        let mut g2 = (h2 + c).wrapping_sub(1 << 42);
        let take_g = (g2 >> 63).wrapping_sub(1);
        g0 &= take_g;
        g1 &= take_g;
        g2 &= take_g;
        let keep_h = !take_g;
        h0 = (h0 & keep_h) | g0;
        h1 = (h1 & keep_h) | g1;
        h2 = (h2 & keep_h) | g2;

        // h + s mod 2^128.
        let [t0, t1] = self.pad;
        h0 += t0 & MASK44;
        c = h0 >> 44;
        h0 &= MASK44;
        h1 += (((t0 >> 44) | (t1 << 20)) & MASK44) + c;
        c = h1 >> 44;
        h1 &= MASK44;
        h2 += ((t1 >> 24) & MASK42) + c;
        h2 &= MASK42;

        let lo = h0 | (h1 << 44);
        let hi = (h1 >> 20) | (h2 << 24);
        let mut tag = [0u8; 16];
        tag[..8].copy_from_slice(&lo.to_le_bytes());
        tag[8..].copy_from_slice(&hi.to_le_bytes());
        self.r.zeroize();
        self.s.zeroize();
        self.pad.zeroize();
        tag
    }

    /// Raw Poly1305 of an arbitrary message (final partial block padded with `0x01`), for the
    /// RFC 8439 test vector.
    #[cfg(test)]
    fn mac(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
        let mut p = Poly1305::new(key);
        let mut chunks = msg.chunks_exact(16);
        p.blocks(&mut chunks, HIBIT);
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut block = [0u8; 16];
            block[..rest.len()].copy_from_slice(rest);
            block[rest.len()] = 1;
            p.blocks(&mut block.chunks_exact(16), 0);
        }
        p.finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc8439_2_5_2() {
        let key: [u8; 32] = hex("85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:\
             01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b")
        .try_into()
        .unwrap();
        let tag = Poly1305::mac(&key, b"Cryptographic Forum Research Group");
        assert_eq!(
            tag.to_vec(),
            hex("a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9")
        );
    }

    #[test]
    fn reduction_edge_cases() {
        // h close to and above p = 2^130 - 5: r = 1 passes each block through unchanged
        // (up to reduction), so all-ones blocks push h past p. Compare with a naive
        // big-integer computation.
        let mut key = [0u8; 32];
        key[0] = 1;
        for (msg, s) in [
            (vec![0xffu8; 16], [0u8; 16]),
            (vec![0xffu8; 32], [0xffu8; 16]),
            (vec![0xfbu8; 16], [0x01u8; 16]),
            (vec![0u8; 16], [0xffu8; 16]),
        ] {
            key[16..].copy_from_slice(&s);
            let got = Poly1305::mac(&key, &msg);
            assert_eq!(got, naive(&key, &msg), "{msg:02x?}");
        }
    }

    /// Poly1305 with schoolbook arithmetic on little-endian u32 digits: slow and obviously
    /// correct.
    #[allow(
        clippy::needless_range_loop,
        clippy::useless_vec,
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        clippy::cast_sign_loss
    )]
    fn naive(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
        // Numbers as little-endian Vec<u64> of 32-bit digits.
        fn from_le(bytes: &[u8]) -> Vec<u64> {
            let mut v = vec![0u64; 10];
            for (i, b) in bytes.iter().enumerate() {
                v[i / 4] |= u64::from(*b) << (8 * (i % 4));
            }
            v
        }
        fn norm(v: &mut [u64]) {
            let mut carry = 0u64;
            for d in v.iter_mut() {
                let x = *d + carry;
                *d = x & 0xffff_ffff;
                carry = x >> 32;
            }
        }
        fn mul(a: &[u64], b: &[u64]) -> Vec<u64> {
            let mut out = vec![0u64; 20];
            for i in 0..10 {
                for j in 0..10 {
                    let p = a[i] * b[j];
                    out[i + j] += p & 0xffff_ffff;
                    out[i + j + 1] += p >> 32;
                }
                norm(&mut out);
            }
            out
        }
        // Reduce mod p = 2^130 - 5 by folding the bits above 130 (times 5) repeatedly.
        fn reduce(v: &[u64]) -> Vec<u64> {
            let mut x = v.to_vec();
            x.resize(20, 0);
            loop {
                // high = x >> 130
                let mut high = vec![0u64; 20];
                for i in 0..20 {
                    let bit = i * 32;
                    if bit + 32 <= 130 {
                        continue;
                    }
                    for k in 0..32 {
                        let pos = bit + k;
                        if pos >= 130 && (x[i] >> k) & 1 == 1 {
                            let t = pos - 130;
                            high[t / 32] |= 1 << (t % 32);
                        }
                    }
                }
                if high.iter().all(|&d| d == 0) {
                    break;
                }
                x[4] &= 0x3;
                for d in x.iter_mut().skip(5) {
                    *d = 0;
                }
                for i in 0..20 {
                    x[i] += high[i] * 5;
                }
                norm(&mut x);
            }
            // Now x < 2^130; subtract p once if x >= p.
            let p = {
                let mut p = vec![0xffff_fffbu64, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 3];
                p.resize(20, 0);
                p
            };
            let ge = (0..20)
                .rev()
                .find(|&i| x[i] != p[i])
                .is_none_or(|i| x[i] > p[i]);
            if ge {
                let mut borrow = 0i64;
                for i in 0..20 {
                    let d = x[i] as i64 - p[i] as i64 - borrow;
                    if d < 0 {
                        x[i] = (d + (1 << 32)) as u64;
                        borrow = 1;
                    } else {
                        x[i] = d as u64;
                        borrow = 0;
                    }
                }
            }
            x.truncate(10);
            x
        }
        let mut r_bytes = key[..16].to_vec();
        for i in [3, 7, 11, 15] {
            r_bytes[i] &= 15;
        }
        for i in [4, 8, 12] {
            r_bytes[i] &= 252;
        }
        let r = from_le(&r_bytes);
        let mut acc = vec![0u64; 10];
        for block in msg.chunks(16) {
            let mut n = block.to_vec();
            n.push(1);
            let n = from_le(&n);
            for i in 0..10 {
                acc[i] += n[i];
            }
            norm(&mut acc);
            acc = reduce(&mul(&acc, &r));
        }
        let s = from_le(&key[16..]);
        for i in 0..10 {
            acc[i] += s[i];
        }
        norm(&mut acc);
        let mut tag = [0u8; 16];
        for (i, t) in tag.iter_mut().enumerate() {
            *t = (acc[i / 4] >> (8 * (i % 4))) as u8;
        }
        tag
    }

    #[test]
    fn matches_naive_on_pseudorandom_inputs() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 64, 100] {
            for _ in 0..20 {
                let mut key = [0u8; 32];
                key.iter_mut().for_each(|b| *b = next() as u8);
                let msg: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                assert_eq!(Poly1305::mac(&key, &msg), naive(&key, &msg), "len {len}");
            }
        }
    }
}
