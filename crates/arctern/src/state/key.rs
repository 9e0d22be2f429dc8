//! Sealing keys and key rings.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT;
use rand::TryRng as _;
use sha2::{Digest as _, Sha256};
use zeroize::{Zeroize as _, Zeroizing};

/// Minimum length of secret key material, in bytes.
pub const MIN_KEY_MATERIAL_LEN: usize = 32;
/// Maximum length of secret key material, in bytes.
pub const MAX_KEY_MATERIAL_LEN: usize = 1024;
/// Maximum length of a key id, in bytes.
pub const MAX_KEY_ID_LEN: usize = 32;

const KEY_DERIVATION_LABEL: &[u8] = b"arctern/state/v1/key-derivation\0";

/// Why a key, key id or key ring could not be built.
///
/// Messages never contain key material (nor anything that might be key material pasted in
/// the wrong place, such as the text of an invalid key id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Fewer than [`MIN_KEY_MATERIAL_LEN`] bytes of key material.
    #[error(
        "request-state key material must be at least {MIN_KEY_MATERIAL_LEN} bytes of secret \
         randomness, got {len} bytes (generate one with `openssl rand -base64 32`)"
    )]
    TooShort {
        /// The length that was given.
        len: usize,
    },
    /// More than [`MAX_KEY_MATERIAL_LEN`] bytes of key material.
    #[error("request-state key material must be at most {MAX_KEY_MATERIAL_LEN} bytes, got {len}")]
    TooLong {
        /// The length that was given.
        len: usize,
    },
    /// Every byte of the key material is the same (an unset buffer, a placeholder).
    #[error("request-state key material is degenerate (every byte is the same)")]
    Degenerate,
    /// The key text is not base64 (standard or URL-safe alphabet, padding optional).
    #[error("request-state key is not valid base64")]
    InvalidBase64,
    /// A key id is empty, too long, or uses characters outside `A-Z a-z 0-9 . _ -`.
    #[error("request-state key id must be 1 to {MAX_KEY_ID_LEN} characters from A-Z a-z 0-9 . _ -")]
    InvalidId,
    /// Two keys in one ring have the same id.
    #[error("duplicate request-state key id {0:?}")]
    DuplicateId(String),
    /// A key ring needs at least one key.
    #[error("the request-state key ring is empty")]
    EmptyRing,
    /// An entry of a key-ring string is not of the form `id:base64key`.
    #[error("request-state key ring entry {entry} is not of the form id:base64key")]
    MissingSeparator {
        /// 1-based position of the entry.
        entry: usize,
    },
    /// An entry of a key-ring string is invalid.
    #[error("request-state key ring entry {entry}: {source}")]
    Entry {
        /// 1-based position of the entry.
        entry: usize,
        /// What is wrong with it.
        source: Box<KeyError>,
    },
    /// The environment variable is not set.
    #[error("environment variable {0} is not set")]
    EnvNotSet(String),
    /// The environment variable is not valid Unicode.
    #[error("environment variable {0} is not valid unicode")]
    EnvNotUnicode(String),
    /// The operating system's random number generator failed.
    #[error("the operating system random number generator failed")]
    Rng,
    /// A key file could not be read.
    #[error("cannot read the request-state key file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// Why (the operating system's message).
        reason: String,
    },
}

/// The identifier of a key, carried in clear in every token so the right key of a
/// [`KeyRing`] is found without trial decryption.
///
/// 1 to [`MAX_KEY_ID_LEN`] characters from `A-Z a-z 0-9 . _ -`. Not secret: pick something
/// meaningful to operators, such as `2026-07` or `k3`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(Box<str>);

impl KeyId {
    /// Validates a key id.
    pub fn new(id: &str) -> Result<Self, KeyError> {
        if Self::is_valid(id.as_bytes()) {
            Ok(KeyId(id.into()))
        } else {
            Err(KeyError::InvalidId)
        }
    }

    pub(crate) fn is_valid(id: &[u8]) -> bool {
        !id.is_empty()
            && id.len() <= MAX_KEY_ID_LEN
            && id
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for KeyId {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KeyId::new(s)
    }
}

/// A secret sealing key with its [`KeyId`].
///
/// Built from at least [`MIN_KEY_MATERIAL_LEN`] bytes of secret material; the 256-bit cipher
/// key is always derived from it with SHA-256 under a domain-separation label, so material of
/// any accepted length (for example a 64-byte secret shared with other systems) is usable and
/// never used raw. The derived key is zeroized when the `StateKey` is dropped, and `Debug`
/// prints only the id.
#[derive(Clone)]
pub struct StateKey {
    id: KeyId,
    key: Zeroizing<[u8; 32]>,
}

impl StateKey {
    /// A fresh random key from the operating system's generator, with a random 8-character
    /// hexadecimal id.
    ///
    /// Process-local: other processes cannot verify tokens sealed with it, and they die with
    /// the process. Use [`KeyRing::from_env`] (or [`StateKey::from_base64`]) for fleets.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails (see [`StateKey::try_generate`]).
    pub fn generate() -> Self {
        match Self::try_generate() {
            Ok(key) => key,
            Err(err) => panic!("{err}"),
        }
    }

    /// Like [`StateKey::generate`], but reports a failing random number generator as an error.
    pub fn try_generate() -> Result<Self, KeyError> {
        let mut material = Zeroizing::new([0u8; 32]);
        let mut id_bytes = [0u8; 4];
        let mut rng = rand::rngs::SysRng;
        rng.try_fill_bytes(&mut material[..])
            .and_then(|()| rng.try_fill_bytes(&mut id_bytes))
            .map_err(|_| KeyError::Rng)?;
        let mut id = String::with_capacity(8);
        for byte in id_bytes {
            id.push_str(&format!("{byte:02x}"));
        }
        Self::from_bytes(KeyId(id.into()), &material[..])
    }

    /// A key from raw secret material (at least [`MIN_KEY_MATERIAL_LEN`] bytes, at most
    /// [`MAX_KEY_MATERIAL_LEN`], not all one repeated byte).
    ///
    /// The caller keeps ownership of `material`; zeroize it when done if it matters.
    pub fn from_bytes(id: KeyId, material: &[u8]) -> Result<Self, KeyError> {
        if material.len() < MIN_KEY_MATERIAL_LEN {
            return Err(KeyError::TooShort {
                len: material.len(),
            });
        }
        if material.len() > MAX_KEY_MATERIAL_LEN {
            return Err(KeyError::TooLong {
                len: material.len(),
            });
        }
        if material.iter().all(|&b| b == material[0]) {
            return Err(KeyError::Degenerate);
        }
        let mut hasher = Sha256::new();
        hasher.update(KEY_DERIVATION_LABEL);
        hasher.update(material);
        let mut key = Zeroizing::new([0u8; 32]);
        let mut derived: [u8; 32] = hasher.finalize().into();
        key.copy_from_slice(&derived);
        derived.zeroize();
        Ok(StateKey { id, key })
    }

    /// A key from base64 text (standard or URL-safe alphabet, padding optional, surrounding
    /// whitespace ignored) that decodes to at least [`MIN_KEY_MATERIAL_LEN`] bytes, as printed
    /// by `openssl rand -base64 32`.
    pub fn from_base64(id: &str, text: &str) -> Result<Self, KeyError> {
        let id = KeyId::new(id)?;
        let material = decode_key_text(text)?;
        Self::from_bytes(id, &material)
    }

    /// The key's id.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    /// The derived 256-bit cipher key.
    pub(crate) fn cipher_key(&self) -> &[u8; 32] {
        &self.key
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey")
            .field("id", &self.id)
            .field("key", &format_args!("<redacted>"))
            .finish()
    }
}

fn decode_key_text(text: &str) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let text = text.trim();
    // Map the standard alphabet onto the URL-safe one so both are accepted.
    let normalized: Zeroizing<Vec<u8>> = Zeroizing::new(
        text.bytes()
            .map(|b| match b {
                b'+' => b'-',
                b'/' => b'_',
                other => other,
            })
            .collect(),
    );
    let mut material = Zeroizing::new(Vec::new());
    URL_SAFE_NO_PAD_INDIFFERENT
        .decode_vec(&normalized[..], &mut material)
        .map_err(|_| KeyError::InvalidBase64)?;
    Ok(material)
}

/// An ordered list of keys: the first seals, all of them verify.
///
/// Rotation without downtime, for a fleet sharing keys through configuration:
///
/// 1. deploy `[old, new]` everywhere: every process can now verify `new`, but still seals
///    with `old`;
/// 2. deploy `[new, old]`: `new` seals, `old` keeps verifying tokens already in flight;
/// 3. after one TTL (tokens sealed with `old` have expired), deploy `[new]`.
///
/// Ids must be unique within a ring. `Debug` prints only the ids.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<StateKey>,
}

impl KeyRing {
    /// A ring from keys in order (the first seals). Fails on an empty list or a repeated id.
    pub fn new(keys: impl IntoIterator<Item = StateKey>) -> Result<Self, KeyError> {
        let keys: Vec<StateKey> = keys.into_iter().collect();
        if keys.is_empty() {
            return Err(KeyError::EmptyRing);
        }
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].iter().any(|other| other.id == key.id) {
                return Err(KeyError::DuplicateId(key.id.as_str().to_owned()));
            }
        }
        Ok(KeyRing { keys })
    }

    /// A ring holding one key.
    pub fn single(key: StateKey) -> Self {
        KeyRing { keys: vec![key] }
    }

    /// A ring holding one fresh process-local key (see [`StateKey::generate`]).
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails.
    pub fn generate() -> Self {
        Self::single(StateKey::generate())
    }

    /// Parses a ring from text: comma-separated `id:base64key` entries, first entry sealing,
    /// for example `2026-08:q3Jx…,2026-07:Zt9a…`.
    ///
    /// Whitespace (including newlines) around entries and empty entries are ignored; the key
    /// text is base64 in either alphabet, padding optional (see [`StateKey::from_base64`]).
    /// Errors name the entry by position, never by content.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for (index, entry) in text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let entry_no = index + 1;
            let (id, key) = entry
                .split_once(':')
                .ok_or(KeyError::MissingSeparator { entry: entry_no })?;
            let key = StateKey::from_base64(id.trim(), key).map_err(|source| KeyError::Entry {
                entry: entry_no,
                source: Box::new(source),
            })?;
            keys.push(key);
        }
        Self::new(keys)
    }

    /// Parses the ring from an environment variable in the format of [`KeyRing::parse`], for
    /// example `KeyRing::from_env("ARCTERN_STATE_KEYS")` with
    /// `ARCTERN_STATE_KEYS=k2:<base64>,k1:<base64>`.
    pub fn from_env(var: &str) -> Result<Self, KeyError> {
        let value = std::env::var_os(var).ok_or_else(|| KeyError::EnvNotSet(var.to_owned()))?;
        let value = Zeroizing::new(
            value
                .into_string()
                .map_err(|_| KeyError::EnvNotUnicode(var.to_owned()))?,
        );
        Self::parse(&value)
    }

    /// The key that seals (the first).
    pub fn sealing_key(&self) -> &StateKey {
        &self.keys[0]
    }

    /// All keys, sealing key first.
    pub fn keys(&self) -> &[StateKey] {
        &self.keys
    }

    /// The key with this id, if any.
    pub fn get(&self, id: &str) -> Option<&StateKey> {
        self.keys.iter().find(|k| k.id.as_str() == id)
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("ids", &self.keys.iter().map(|k| &k.id).collect::<Vec<_>>())
            .finish()
    }
}

impl FromStr for KeyRing {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KeyRing::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_id_rules() {
        assert!(KeyId::new("k1").is_ok());
        assert!(KeyId::new("2026-07_a.b").is_ok());
        assert_eq!(KeyId::new(""), Err(KeyError::InvalidId));
        assert_eq!(KeyId::new("a b"), Err(KeyError::InvalidId));
        assert_eq!(KeyId::new("a:b"), Err(KeyError::InvalidId));
        assert_eq!(KeyId::new(&"x".repeat(33)), Err(KeyError::InvalidId));
        assert!(KeyId::new(&"x".repeat(32)).is_ok());
    }

    #[test]
    fn derivation_is_deterministic_and_length_independent() {
        // 62 identical bytes: degenerate.
        let b = StateKey::from_bytes(KeyId::new("b").unwrap(), &[7u8; 31].repeat(2));
        assert_eq!(b.err(), Some(KeyError::Degenerate));
        let material: Vec<u8> = (0u8..64).collect();
        let c = StateKey::from_bytes(KeyId::new("c").unwrap(), &material).unwrap();
        let d = StateKey::from_bytes(KeyId::new("d").unwrap(), &material).unwrap();
        assert_eq!(c.cipher_key(), d.cipher_key());
        assert_ne!(&c.cipher_key()[..], &material[..32]);
    }

    #[test]
    fn generated_keys_differ() {
        let a = StateKey::generate();
        let b = StateKey::generate();
        assert_ne!(a.cipher_key(), b.cipher_key());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id().as_str().len(), 8);
    }
}
