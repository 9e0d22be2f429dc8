//! The base64 sentinel form of mirrored header values (`=?base64?…?=`, spec §4.2); the rules
//! live in [`arctern_types::headers`], shared with the client.

/// Decodes one header value; `Err` says why it is malformed.
pub(crate) fn decode(raw: &[u8]) -> Result<String, String> {
    arctern_types::headers::decode_value(raw).map_err(|e| e.to_string())
}
