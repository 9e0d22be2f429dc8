//! The header sentinel decoder (`=?base64?…?=`, SEP-2243): whatever bytes a peer puts in a
//! mirrored header, decoding never panics; what decodes re-encodes to a value that decodes to
//! the same text; and any text encodes to a valid header value that decodes back.
#![no_main]

use arctern_types::headers::{decode_value, encode_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = decode_value(data) {
        let again = encode_value(&text);
        assert_eq!(decode_value(again.as_bytes()), Ok(text.clone()));
        // A plain value is taken as it is.
        if !data.starts_with(b"=?base64?") {
            assert_eq!(text.as_bytes(), data);
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let encoded = encode_value(text);
        assert!(
            encoded.bytes().all(|b| (0x20..0x7f).contains(&b)),
            "not visible ASCII: {encoded:?}"
        );
        assert!(bytes::Bytes::copy_from_slice(encoded.as_bytes()).len() == encoded.len());
        assert_eq!(decode_value(encoded.as_bytes()), Ok(text.to_owned()));
    }
});
