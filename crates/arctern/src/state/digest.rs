//! Canonical JSON digests of request arguments and of questions (see [`canonical_json`]).

use std::fmt;

use serde_json::{Map, Number, Value};
use sha2::{Digest as _, Sha256};

/// Largest magnitude at which every integer is exactly representable in an `f64` (2^53).
const MAX_SAFE_INTEGER_F64: f64 = 9_007_199_254_740_992.0;

const ARGS_LABEL: &[u8] = b"arctern/state/v1/args\0";
const QUESTION_LABEL: &[u8] = b"arctern/state/v1/question\0";

macro_rules! digest_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name([u8; 32]);

        impl $name {
            /// Wraps 32 raw digest bytes (for example read back from storage).
            pub const fn from_bytes(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }

            /// The 32 raw digest bytes.
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            /// Lowercase hexadecimal rendering of the full digest.
            pub fn to_hex(&self) -> String {
                let mut out = String::with_capacity(64);
                for byte in self.0 {
                    out.push(char::from(HEX[usize::from(byte >> 4)]));
                    out.push(char::from(HEX[usize::from(byte & 0x0f)]));
                }
                out
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // The first 8 bytes are plenty to tell digests apart in logs and test output.
                write!(f, concat!(stringify!($name), "("))?;
                for byte in &self.0[..8] {
                    write!(f, "{byte:02x}")?;
                }
                f.write_str("…)")
            }
        }
    };
}

digest_type!(
    /// SHA-256 of the canonical JSON form of a request's arguments; see [`args_digest`].
    ArgsDigest
);

digest_type!(
    /// SHA-256 of the canonical JSON form of a question (its kind and rendered parameters);
    /// see [`question_digest`]. Used to pin an answer to the exact question that was asked.
    QuestionDigest
);

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Digest of a request's arguments (`params.arguments` of `tools/call` / `prompts/get`).
///
/// Object key order does not matter, `1` and `1.0` give the same digest, and absent arguments,
/// `null` and `{}` are all the same (the spec makes `arguments` optional). Anything else that
/// changes the JSON value changes the digest: `"1"` versus `1`, an element of a nested array,
/// a key's presence. See [`canonical_json`] for the exact canonical form.
pub fn args_digest(arguments: Option<&Value>) -> ArgsDigest {
    let mut hasher = Sha256::new();
    hasher.update(ARGS_LABEL);
    match arguments {
        None | Some(Value::Null) => hasher.update(b"{}"),
        Some(value) => write_canonical(&mut HashSink::new(&mut hasher), value),
    }
    ArgsDigest(hasher.finalize().into())
}

/// [`args_digest`] of an arguments object, without first copying it into a [`Value`].
pub(crate) fn args_digest_of_object(arguments: Option<&Map<String, Value>>) -> ArgsDigest {
    let mut hasher = Sha256::new();
    hasher.update(ARGS_LABEL);
    match arguments {
        None => hasher.update(b"{}"),
        Some(map) => write_object(&mut HashSink::new(&mut hasher), map),
    }
    ArgsDigest(hasher.finalize().into())
}

/// Digest of a question: its kind (for example `"elicitation/create"`) and its rendered
/// parameters, in the same canonical form as [`args_digest`] (the canonical JSON of the
/// two-element array `[kind, params]`).
pub fn question_digest(kind: &str, params: &Value) -> QuestionDigest {
    let mut hasher = Sha256::new();
    hasher.update(QUESTION_LABEL);
    {
        let mut sink = HashSink::new(&mut hasher);
        sink.write(b"[");
        write_string(&mut sink, kind);
        sink.write(b",");
        write_canonical(&mut sink, params);
        sink.write(b"]");
    }
    QuestionDigest(hasher.finalize().into())
}

/// The canonical JSON text of `value`: the text [`args_digest`] and [`question_digest`] hash.
/// Useful for debugging a digest mismatch and for reproducing digests outside arctern.
///
/// The canonical form is compact JSON:
///
/// * no whitespace;
/// * object members sorted by key, comparing keys as Unicode scalar values (equivalently, as
///   UTF-8 bytes); array order is kept;
/// * strings escaped minimally: `"` and `\` get a backslash, `\b \f \n \r \t` their short
///   forms, other control characters `\u00XX` (lowercase hex); everything else, non-ASCII
///   included, is written as UTF-8;
/// * numbers normalised so that the same value always has the same spelling: integers (and
///   floats with no fractional part whose magnitude is at most 2^53) are written in plain
///   decimal (`1`, `1.0` and `1e0` are all `1`; `-0.0` is `0`); every other float is written in
///   Rust's shortest round-trip scientific notation (`1.5e0`, `1e100`, `-2.5e-7`). When a
///   crate in the build turns on serde_json's `arbitrary_precision`, a number whose text is
///   not exactly the `f64` it rounds to (`18446744073709551616`, `1.00000000000000000001`)
///   is written exactly, in the same notation (`1.8446744073709551616e19`), so numbers a
///   handler can tell apart never share a digest.
///
/// Each digest is SHA-256 over a domain-separation label followed by this text (streamed, not
/// built as a string), so an [`ArgsDigest`] can never equal a [`QuestionDigest`] of the same
/// JSON.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(&mut VecSink(&mut out), value);
    // The canonical writer only emits UTF-8 (copied from `str`s, or ASCII).
    String::from_utf8(out).unwrap_or_default()
}

/// Where canonical bytes go: a hasher (no allocation) or a buffer.
trait Sink {
    fn write(&mut self, bytes: &[u8]);
}

/// Feeds a hasher through a small stack buffer: the canonical writer emits many tiny pieces,
/// and each `update` call has a fixed cost.
struct HashSink<'a> {
    hasher: &'a mut Sha256,
    buf: [u8; 256],
    len: usize,
}

impl<'a> HashSink<'a> {
    fn new(hasher: &'a mut Sha256) -> Self {
        HashSink {
            hasher,
            buf: [0; 256],
            len: 0,
        }
    }

    fn flush(&mut self) {
        self.hasher.update(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Drop for HashSink<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Sink for HashSink<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > self.buf.len() {
            self.flush();
            if bytes.len() > self.buf.len() {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

struct VecSink<'a>(&'a mut Vec<u8>);

impl Sink for VecSink<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

fn write_canonical(sink: &mut impl Sink, value: &Value) {
    match value {
        Value::Null => sink.write(b"null"),
        Value::Bool(true) => sink.write(b"true"),
        Value::Bool(false) => sink.write(b"false"),
        Value::Number(n) => write_number(sink, n),
        Value::String(s) => write_string(sink, s),
        Value::Array(items) => {
            sink.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    sink.write(b",");
                }
                write_canonical(sink, item);
            }
            sink.write(b"]");
        }
        Value::Object(map) => write_object(sink, map),
    }
}

fn write_object(sink: &mut impl Sink, map: &Map<String, Value>) {
    sink.write(b"{");
    // Without serde_json's `preserve_order` feature the map is already sorted; feature
    // unification may turn it on, so sort unless the keys are already in order.
    let sorted = map
        .keys()
        .zip(map.keys().skip(1))
        .all(|(a, b)| a.as_str() < b.as_str());
    if sorted {
        for (i, (key, value)) in map.iter().enumerate() {
            write_member(sink, i, key, value);
        }
    } else {
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (i, (key, value)) in members.into_iter().enumerate() {
            write_member(sink, i, key, value);
        }
    }
    sink.write(b"}");
}

fn write_member(sink: &mut impl Sink, index: usize, key: &str, value: &Value) {
    if index > 0 {
        sink.write(b",");
    }
    write_string(sink, key);
    sink.write(b":");
    write_canonical(sink, value);
}

fn write_number(sink: &mut impl Sink, n: &Number) {
    if let Some(i) = n.as_i64() {
        write_integer(sink, i < 0, i.unsigned_abs());
    } else if let Some(u) = n.as_u64() {
        write_integer(sink, false, u);
    } else if let Some(decimal) = inexact_decimal(n) {
        // Only with serde_json's `arbitrary_precision`: the number as written is not the
        // f64 it rounds to, and a handler reading its text sees the difference, so the
        // digest must too.
        sink.write(decimal.as_bytes());
    } else if let Some(f) = n.as_f64() {
        if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER_F64 {
            // Exact: the magnitude is at most 2^53, so the conversion loses nothing.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let magnitude = f.abs() as u64;
            write_integer(sink, f < 0.0 && magnitude != 0, magnitude);
        } else {
            write_display(sink, format_args!("{f:e}"));
        }
    } else {
        // Unreachable with serde_json's number model; keep the output well defined anyway.
        write_display(sink, n);
    }
}

/// Whether serde_json keeps each number's text (its `arbitrary_precision` feature, which
/// any crate in the build may turn on). Without it every non-integer number is an `f64`.
pub(crate) fn numbers_keep_text() -> bool {
    static KEEPS: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        serde_json::from_str::<Number>("0.10000000000000001")
            .is_ok_and(|n| n.to_string() == "0.10000000000000001")
    });
    *KEEPS
}

/// For a number that is neither an `i64` nor a `u64`: `None` when its `f64` is exactly the
/// number as written (always, unless serde_json keeps numbers' text), else the number's
/// exact value in canonical scientific notation (`1.8446744073709551616e19`): valid JSON
/// that no `f64` or integer spelling of the canonical form can equal.
pub(crate) fn inexact_decimal(n: &Number) -> Option<String> {
    if !numbers_keep_text() || n.is_i64() || n.is_u64() {
        return None;
    }
    let exact = Decimal::parse(&n.to_string())?;
    let rounded = n.as_f64().and_then(|f| Decimal::parse(&format!("{f:e}")));
    if rounded.as_ref() == Some(&exact) {
        return None;
    }
    Some(exact.scientific())
}

/// A decimal number as sign, significant digits (no leading or trailing zero) and the
/// exponent of the last digit: equal values have equal forms.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// Parses a JSON number (`-?int(.frac)?([eE][+-]?exp)?`).
    fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let exp: i64 = match exp {
            // Saturating: an exponent beyond i64 is out of any JSON parser's range anyway.
            Some(e) => {
                let (neg, digits) = match e.as_bytes().first() {
                    Some(b'-') => (true, &e[1..]),
                    Some(b'+') => (false, &e[1..]),
                    _ => (false, e),
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let magnitude = digits.bytes().fold(0i64, |acc, b| {
                    acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
                });
                if neg { -magnitude } else { magnitude }
            }
            None => 0,
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let all: String = int.chars().chain(frac.chars()).collect();
        let trimmed_end = all.trim_end_matches('0');
        let trailing = all.len() - trimmed_end.len();
        let digits = trimmed_end.trim_start_matches('0').to_owned();
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        let shift = i64::try_from(trailing).ok()? - i64::try_from(frac.len()).ok()?;
        Some(Decimal {
            negative,
            digits,
            exponent: exp.saturating_add(shift),
        })
    }

    /// `[-]d[.ddd]e<exp>`, the exponent that of the first digit.
    fn scientific(&self) -> String {
        if self.digits.is_empty() {
            return "0".to_owned();
        }
        let (first, rest) = self.digits.split_at(1);
        let len = i64::try_from(self.digits.len()).unwrap_or(i64::MAX);
        let exponent = self.exponent.saturating_add(len - 1);
        let sign = if self.negative { "-" } else { "" };
        if rest.is_empty() {
            format!("{sign}{first}e{exponent}")
        } else {
            format!("{sign}{first}.{rest}e{exponent}")
        }
    }
}

/// Plain decimal, without going through `fmt` (this is on every request's path).
fn write_integer(sink: &mut impl Sink, negative: bool, mut magnitude: u64) {
    let mut buf = [0u8; 21];
    let mut at = buf.len();
    loop {
        at -= 1;
        // `magnitude % 10` is below 10, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let digit = (magnitude % 10) as u8;
        buf[at] = b'0' + digit;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        buf[at] = b'-';
    }
    sink.write(&buf[at..]);
}

fn write_display(sink: &mut impl Sink, value: impl fmt::Display) {
    use std::io::Write as _;
    let mut buf = [0u8; 64];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    if write!(cursor, "{value}").is_ok() {
        let len = usize::try_from(cursor.position()).unwrap_or(0);
        sink.write(&buf[..len]);
    } else {
        // Longer than any integer or shortest-round-trip float; fall back to an allocation.
        sink.write(value.to_string().as_bytes());
    }
}

fn write_string(sink: &mut impl Sink, s: &str) {
    sink.write(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => {
                sink.write(&bytes[start..i]);
                sink.write(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0x0f)],
                ]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        sink.write(&bytes[start..i]);
        sink.write(escape);
        start = i + 1;
    }
    sink.write(&bytes[start..]);
    sink.write(b"\"");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn object_digest_matches_value_digest() {
        let v = json!({"b": [1.0, {"y": 2, "x": 1}], "a": "é"});
        let Value::Object(map) = &v else {
            unreachable!()
        };
        assert_eq!(args_digest_of_object(Some(map)), args_digest(Some(&v)));
        assert_eq!(args_digest_of_object(None), args_digest(None));
    }

    #[test]
    fn canonical_text() {
        let v = json!({"b": [1.0, 2.5, -0.0, 1e100], "a": {"z": null, "y": "q\"\n\u{1}é"}});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":{\"y\":\"q\\\"\\n\\u0001é\",\"z\":null},\"b\":[1,2.5e0,0,1e100]}"
        );
    }

    #[test]
    fn canonical_json_is_valid_json_with_same_meaning() {
        let v =
            json!({"k": [1, 2.5, "x", {"b": true, "a": false}], "big": 18446744073709551615u64});
        let text = canonical_json(&v);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["k"][1].as_f64(), Some(2.5));
        assert_eq!(back["big"].as_u64(), Some(u64::MAX));
    }

    #[test]
    fn integers() {
        for (v, text) in [
            (json!(0), "0"),
            (json!(-0.0), "0"),
            (json!(7), "7"),
            (json!(-7), "-7"),
            (json!(-7.0), "-7"),
            (json!(i64::MIN), "-9223372036854775808"),
            (json!(i64::MAX), "9223372036854775807"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(-9007199254740992.0), "-9007199254740992"),
        ] {
            assert_eq!(canonical_json(&v), text);
        }
    }

    #[test]
    fn integral_floats_beyond_2_53_use_exponent_form() {
        assert_eq!(
            canonical_json(&json!(9007199254740992.0)),
            "9007199254740992"
        );
        assert_eq!(canonical_json(&json!(1e16)), "1e16");
        assert_eq!(canonical_json(&json!(-1e300)), "-1e300");
    }

    #[test]
    fn decimals_compare_by_value() {
        let d = |t| Decimal::parse(t).unwrap();
        assert_eq!(d("1"), d("1.0"));
        assert_eq!(d("1"), d("1e0"));
        assert_eq!(d("100"), d("1e2"));
        assert_eq!(d("0.10"), d("1e-1"));
        assert_eq!(d("-0.0"), d("0"));
        assert_ne!(d("1"), d("1.00000000000000000001"));
        assert_ne!(d("18446744073709551616"), d("18446744073709551617"));
        assert_eq!(
            d("18446744073709551616").scientific(),
            "1.8446744073709551616e19"
        );
        assert_eq!(d("-0.00125").scientific(), "-1.25e-3");
        assert_eq!(d("7").scientific(), "7e0");
        assert!(Decimal::parse("1e").is_none());
        assert!(Decimal::parse(".5").is_none());
        assert!(Decimal::parse("x").is_none());
    }

    #[test]
    fn streamed_and_buffered_agree() {
        let v = json!({"b": 1, "a": [true, "x"]});
        let mut hasher = Sha256::new();
        hasher.update(ARGS_LABEL);
        hasher.update(canonical_json(&v).as_bytes());
        let expected: [u8; 32] = hasher.finalize().into();
        assert_eq!(args_digest(Some(&v)).as_bytes(), &expected);
    }
}
