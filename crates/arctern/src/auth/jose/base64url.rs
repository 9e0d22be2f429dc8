//! Unpadded base64url (RFC 7515 §2), strict: no padding, no whitespace, canonical trailing
//! bits.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::JoseError;

/// Encodes `bytes` as unpadded base64url.
pub fn encode(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes unpadded base64url; `what` names the member in the error.
pub fn decode(text: &str, what: &'static str) -> Result<Vec<u8>, JoseError> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| JoseError::Base64(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict() {
        assert_eq!(encode(b"\xfb\xff"), "-_8");
        assert_eq!(decode("-_8", "x").unwrap(), b"\xfb\xff");
        assert!(decode("-_8=", "x").is_err());
        assert!(decode("+/8", "x").is_err());
        assert!(decode("-_9", "x").is_err(), "non-canonical trailing bits");
        assert!(decode("ab c", "x").is_err());
    }
}
