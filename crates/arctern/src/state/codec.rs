//! Codecs: turning sealed bytes into an opaque token string and back.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::Simd;
use base64::engine::general_purpose::NO_PAD;
use rand::Rng as _;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use zeroize::{Zeroize as _, Zeroizing};

use super::key::{KeyId, KeyRing};

/// Version byte of the token format written by [`XChaChaCodec`].
pub const TOKEN_FORMAT_VERSION: u8 = 1;
/// XChaCha20-Poly1305 nonce length (192 bits).
pub(super) const NONCE_LEN: usize = 24;
/// Poly1305 tag length.
pub(super) const TAG_LEN: usize = 16;

/// Turns the bytes to protect into an opaque token string, and back.
///
/// The [`StateSealer`](super::StateSealer) hands the codec its binary claims (expiry,
/// binding digests, payload) and enforces every claim itself on the way back, whatever the
/// codec. The default is [`XChaChaCodec`]; implement this trait to plug in a key-management
/// service (unwrap a data key once at start-up; both methods are synchronous and on the hot
/// path).
///
/// A codec must:
///
/// * authenticate what it seals (an AEAD, or at least a MAC) and reject, in
///   [`unseal`](Self::unseal), every token it did not produce unmodified;
/// * preferably encrypt too: with a sign-only codec the claims (including handler state and
///   carried answers) are readable by the client;
/// * return URL-safe text (the token travels in JSON, and may be logged);
/// * put a format version under its authentication tag.
pub trait StateCodec: Send + Sync + fmt::Debug + 'static {
    /// Seals `plaintext` into a token.
    fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError>;

    /// Opens a token produced by [`seal`](Self::seal), returning the plaintext.
    fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError>;
}

/// A codec failed to seal.
#[derive(Debug, thiserror::Error)]
#[error("request-state codec failed to seal: {0}")]
pub struct CodecError(pub Box<dyn std::error::Error + Send + Sync>);

impl CodecError {
    /// Wraps any error.
    pub fn new(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CodecError(err.into())
    }
}

/// Why a codec refused a token. Only ever logged: the client always sees the same error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsealError {
    /// Not a token of this codec: bad encoding, truncated, too short.
    #[error("malformed token")]
    Malformed,
    /// A token format version this codec does not know.
    #[error("unsupported token format version {0}")]
    UnsupportedVersion(u8),
    /// The token names a key that is not in the ring.
    #[error("unknown key id")]
    UnknownKey,
    /// Authentication failed: the token was modified, or sealed under another key with the
    /// same id.
    #[error("authentication failed")]
    AuthFailed,
    /// Any other failure of a custom codec (logged as is: keep secrets out of it).
    #[error("{0}")]
    Other(Cow<'static, str>),
}

/// The default codec: XChaCha20-Poly1305 under a [`KeyRing`].
///
/// Token = base64url without padding (strict: no `=`, canonical trailing bits) of
///
/// ```text
/// offset      size  field
/// 0           1     format version (1)
/// 1           1     key id length k (1..=32)
/// 2           k     key id (ASCII)
/// 2+k         24    random nonce
/// 26+k        n     ciphertext of the claims
/// 26+k+n      16    Poly1305 tag
/// ```
///
/// The first `2+k` bytes are the associated data, so the version and key id are
/// authenticated. The AEAD is standard XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha: HChaCha20
/// subkey, then RFC 8439 ChaCha20-Poly1305), byte-for-byte identical to the
/// `chacha20poly1305` crate's `XChaCha20Poly1305` (a test checks it); it is assembled from
/// RustCrypto's HChaCha20 and `ring`'s ChaCha20-Poly1305, which is several times faster than the
/// pure-Rust AEAD on the short messages a token holds.
///
/// A 192-bit random nonce makes accidental nonce reuse negligible however many tokens a fleet
/// seals under one key (a 96-bit random nonce, as in AES-GCM, must not be used for more than
/// about 2^32 messages per key). Nonces come from the thread-local CSPRNG (`rand::rng()`,
/// ChaCha12 reseeded from the operating system), which is not fork-aware: don't fork a
/// process that has sealed tokens and keep sealing in both halves.
#[derive(Clone)]
pub struct XChaChaCodec {
    entries: Vec<(KeyId, Zeroizing<[u8; 32]>)>,
    base64: Simd,
}

impl XChaChaCodec {
    /// A codec sealing with the ring's first key and verifying with all of them.
    pub fn new(ring: &KeyRing) -> Self {
        let entries = ring
            .keys()
            .iter()
            .map(|k| (k.id().clone(), Zeroizing::new(*k.cipher_key())))
            .collect();
        XChaChaCodec {
            entries,
            base64: Simd::url_safe(NO_PAD),
        }
    }

    /// Minimum decoded length of a token: header with a 1-byte id, nonce and tag.
    const MIN_LEN: usize = 2 + 1 + NONCE_LEN + TAG_LEN;
}

/// The XChaCha20-Poly1305 AEAD (draft-irtf-cfrg-xchacha): the HChaCha20 subkey of the key and
/// the first 16 nonce bytes, then RFC 8439 ChaCha20-Poly1305 under that subkey with the nonce
/// `0⁴ ‖ nonce[16..24]`. Both halves come from vetted implementations: HChaCha20 from RustCrypto's
/// `chacha20`, the AEAD from `ring`, whose short-message performance the sealer depends on.
pub(super) fn aead_key(key: &[u8; 32], nonce: &[u8; NONCE_LEN]) -> (LessSafeKey, Nonce) {
    let mut prefix = [0u8; 16];
    prefix.copy_from_slice(&nonce[..16]);
    let mut subkey = chacha20::hchacha::<chacha20::R20>(key.into(), &prefix.into());
    // A 32-byte key is always valid for ChaCha20-Poly1305.
    let unbound = UnboundKey::new(&CHACHA20_POLY1305, subkey.as_slice()).expect("a 256-bit key");
    subkey.zeroize();
    let mut inner = [0u8; 12];
    inner[4..].copy_from_slice(&nonce[16..]);
    (
        LessSafeKey::new(unbound),
        Nonce::assume_unique_for_key(inner),
    )
}

impl fmt::Debug for XChaChaCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XChaChaCodec")
            .field(
                "key_ids",
                &self.entries.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl StateCodec for XChaChaCodec {
    fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError> {
        let (id, key) = &self.entries[0];
        let id = id.as_str().as_bytes();
        // Key ids are at most 32 bytes (checked by `KeyId`).
        let id_len = u8::try_from(id.len()).map_err(CodecError::new)?;
        seal_token(
            &self.base64,
            key,
            &[&[TOKEN_FORMAT_VERSION, id_len], id],
            plaintext,
        )
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError> {
        let buf = decode_token(&self.base64, token)?;
        if buf.len() < 2 {
            return Err(UnsealError::Malformed);
        }
        if buf[0] != TOKEN_FORMAT_VERSION {
            return Err(UnsealError::UnsupportedVersion(buf[0]));
        }
        let id_len = usize::from(buf[1]);
        let header_len = 2 + id_len;
        if id_len == 0 || buf.len() < Self::MIN_LEN || buf.len() < header_len + NONCE_LEN + TAG_LEN
        {
            return Err(UnsealError::Malformed);
        }
        let id = &buf[2..header_len];
        let key = self
            .entries
            .iter()
            .find(|(k, _)| k.as_str().as_bytes() == id)
            .map(|(_, key)| key)
            .ok_or(UnsealError::UnknownKey)?;
        open_token(buf, header_len, key)
    }
}

/// Seals `plaintext` under `key` into a token: `header ‖ nonce ‖ ciphertext ‖ tag`,
/// base64url-encoded, with a fresh random nonce and the header (given in pieces)
/// authenticated but not encrypted.
pub(super) fn seal_token(
    base64: &Simd,
    key: &[u8; 32],
    header: &[&[u8]],
    plaintext: &[u8],
) -> Result<String, CodecError> {
    let header_len: usize = header.iter().map(|piece| piece.len()).sum();
    let body_start = header_len + NONCE_LEN;
    let mut buf = Vec::with_capacity(body_start + plaintext.len() + TAG_LEN);
    for piece in header {
        buf.extend_from_slice(piece);
    }
    buf.resize(body_start, 0);
    rand::rng().fill_bytes(&mut buf[header_len..body_start]);
    buf.extend_from_slice(plaintext);
    let (head, body) = buf.split_at_mut(body_start);
    let nonce = <&[u8; NONCE_LEN]>::try_from(&head[header_len..]).map_err(CodecError::new)?;
    let (aead, nonce) = aead_key(key, nonce);
    let tag = aead
        .seal_in_place_separate_tag(nonce, Aad::from(&head[..header_len]), body)
        .map_err(|_| CodecError::new("the AEAD refused to seal"))?;
    buf.extend_from_slice(tag.as_ref());
    Ok(base64.encode(&buf))
}

/// The bytes of a token: strict base64url.
pub(super) fn decode_token(base64: &Simd, token: &str) -> Result<Vec<u8>, UnsealError> {
    let mut buf = Vec::with_capacity(token.len() / 4 * 3 + 3);
    base64
        .decode_vec(token, &mut buf)
        .map_err(|_| UnsealError::Malformed)?;
    Ok(buf)
}

/// Opens the bytes of a token made by [`seal_token`] under `key`, in place: the tag (over
/// the first `header_len` bytes too) is verified before anything is released. The caller
/// has checked that a nonce and a tag follow the header.
pub(super) fn open_token(
    mut buf: Vec<u8>,
    header_len: usize,
    key: &[u8; 32],
) -> Result<Vec<u8>, UnsealError> {
    let body_start = header_len + NONCE_LEN;
    let (head, body) = buf.split_at_mut(body_start);
    let nonce =
        <&[u8; NONCE_LEN]>::try_from(&head[header_len..]).map_err(|_| UnsealError::Malformed)?;
    let (aead, nonce) = aead_key(key, nonce);
    // The ciphertext ‖ tag is opened in place.
    let plaintext_len = aead
        .open_in_place(nonce, Aad::from(&head[..header_len]), body)
        .map_err(|_| UnsealError::AuthFailed)?
        .len();
    buf.copy_within(body_start..body_start + plaintext_len, 0);
    buf.truncate(plaintext_len);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use chacha20poly1305::XChaCha20Poly1305;
    use chacha20poly1305::aead::{AeadInOut, KeyInit};
    use rand::RngExt as _;

    use super::*;
    use crate::state::key::StateKey;

    /// The hand-assembled AEAD agrees byte for byte with RustCrypto's `XChaCha20Poly1305`, in
    /// both directions, for every plaintext length up to several blocks.
    #[test]
    fn matches_rustcrypto_xchacha20poly1305() {
        let mut rng = rand::rng();
        for len in (0..700).chain([1000, 4093, 4096, 4099]) {
            let mut material = [0u8; 48];
            rng.fill(&mut material[..]);
            let key = StateKey::from_bytes(KeyId::new("kid-7").unwrap(), &material).unwrap();
            let codec = XChaChaCodec::new(&KeyRing::single(key.clone()));
            let reference = XChaCha20Poly1305::new(&(*key.cipher_key()).into());
            let mut plaintext = vec![0u8; len];
            rng.fill(&mut plaintext[..]);

            // Ours → theirs.
            let token = codec.seal(&plaintext).unwrap();
            let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
            let header_len = 2 + 5;
            assert_eq!(&raw[..header_len], b"\x01\x05kid-7");
            let nonce = &raw[header_len..header_len + NONCE_LEN];
            let (ciphertext, tag) = raw[header_len + NONCE_LEN..].split_at(len);
            let mut theirs = plaintext.clone();
            let their_tag = reference
                .encrypt_inout_detached(
                    nonce.try_into().unwrap(),
                    &raw[..header_len],
                    theirs.as_mut_slice().into(),
                )
                .unwrap();
            assert_eq!(theirs, ciphertext, "ciphertext, len {len}");
            assert_eq!(their_tag.as_slice(), tag, "tag, len {len}");

            // Theirs → ours.
            let mut other_nonce = [0u8; NONCE_LEN];
            rng.fill(&mut other_nonce[..]);
            let mut body = plaintext.clone();
            let tag = reference
                .encrypt_inout_detached(
                    (&other_nonce).into(),
                    &raw[..header_len],
                    body.as_mut_slice().into(),
                )
                .unwrap();
            let mut crafted = raw[..header_len].to_vec();
            crafted.extend_from_slice(&other_nonce);
            crafted.extend_from_slice(&body);
            crafted.extend_from_slice(&tag);
            assert_eq!(
                codec.unseal(&URL_SAFE_NO_PAD.encode(&crafted)).unwrap(),
                plaintext,
                "unseal, len {len}"
            );
        }
    }
}
