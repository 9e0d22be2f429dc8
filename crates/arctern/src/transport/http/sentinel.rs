//! The base64 sentinel form of mirrored header values (`=?base64?…?=`, spec §4.2).
//!
//! A client sends a value as-is when it is plain visible ASCII, and otherwise (non-ASCII,
//! control characters, surrounding whitespace, or a value that itself looks like the
//! sentinel) as `=?base64?{base64 of the UTF-8}?=` with lower-case markers.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

const PREFIX: &[u8] = b"=?base64?";
const SUFFIX: &[u8] = b"?=";

/// Decodes one header value: the sentinel form is unwrapped; any other value must be plain
/// visible ASCII (spaces allowed inside). `Err` says why the value is malformed.
pub(crate) fn decode(raw: &[u8]) -> Result<String, String> {
    if raw.len() >= PREFIX.len() + SUFFIX.len() && raw.starts_with(PREFIX) && raw.ends_with(SUFFIX)
    {
        let encoded = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
        // Canonical, padded base64 only: SEP-2243 has servers reject bad padding.
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| "the base64 sentinel does not hold valid base64".to_owned())?;
        return String::from_utf8(bytes)
            .map_err(|_| "the base64 sentinel does not hold UTF-8 text".to_owned());
    }
    if raw.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        // Checked above: every byte is printable ASCII.
        return Ok(raw.iter().map(|&b| b as char).collect());
    }
    Err("a value that is not plain visible ASCII must use the =?base64?…?= form".to_owned())
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn plain_values_pass_through() {
        assert_eq!(decode(b"get_weather").unwrap(), "get_weather");
        assert_eq!(decode(b"file:///a b").unwrap(), "file:///a b");
    }

    #[test]
    fn sentinel_values_are_decoded() {
        // "héllo" and "a\nb"
        assert_eq!(decode(b"=?base64?aMOpbGxv?=").unwrap(), "héllo");
        assert_eq!(decode(b"=?base64?YQpi?=").unwrap(), "a\nb");
        // The empty value.
        assert_eq!(decode(b"=?base64??=").unwrap(), "");
    }

    #[test]
    fn malformed_values_are_rejected() {
        assert!(decode(b"=?base64?!!!?=").is_err());
        assert!(decode(b"=?base64?SGVsbG8?=").is_err(), "padding is missing");
        assert!(decode(b"=?base64?/w==?=").is_err(), "0xff is not UTF-8");
        assert!(decode("héllo".as_bytes()).is_err());
        assert!(decode(b"a\tb").is_err());
    }

    #[test]
    fn upper_case_markers_are_a_literal_value() {
        assert_eq!(decode(b"=?BASE64?YQ==?=").unwrap(), "=?BASE64?YQ==?=");
    }
}
