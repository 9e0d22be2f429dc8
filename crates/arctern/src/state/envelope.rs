//! Envelope encryption for request state: tokens sealed under data keys that a
//! key-management service wraps, so that no instance holds a long-lived sealing secret.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use base64::engine::Simd;
use base64::engine::general_purpose::NO_PAD;
use futures::future::BoxFuture;
use rand::Rng as _;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::codec::{
    CodecError, NONCE_LEN, StateCodec, TAG_LEN, UnsealError, decode_token, open_token, seal_token,
};

/// Version byte of envelope tokens (the default codec's tokens start with 1).
pub const ENVELOPE_FORMAT_VERSION: u8 = 2;
/// The longest wrapped data key accepted, in bytes (AWS KMS and GCP KMS ciphertexts of a
/// 32-byte key are about 180 bytes; Vault transit's text form about 90).
pub const MAX_WRAPPED_KEY_LEN: usize = 1024;

/// A plaintext data key and the same key wrapped by a [`KeyService`].
pub struct DataKey {
    /// The key itself (zeroized when dropped).
    pub plaintext: Zeroizing<[u8; 32]>,
    /// The key encrypted by the key service: opaque bytes only the service can unwrap.
    pub wrapped: Vec<u8>,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataKey")
            .field("wrapped_len", &self.wrapped.len())
            .finish_non_exhaustive()
    }
}

/// A key service failed (unreachable, refused, or the wrapped key is not one of its own).
#[derive(Debug, thiserror::Error)]
#[error("key service: {0}")]
pub struct KeyServiceError(pub Box<dyn std::error::Error + Send + Sync>);

impl KeyServiceError {
    /// Wraps any error.
    pub fn new(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        KeyServiceError(err.into())
    }
}

/// A key-management service that makes and unwraps data keys; it never sees a token.
///
/// Where the usual services plug in (each call is one request to the service, made only when
/// a data key is made or first seen, never per token):
///
/// | service | `generate_data_key` | `unwrap_key` |
/// | --- | --- | --- |
/// | AWS KMS | `GenerateDataKey` (`KeySpec=AES_256`): `Plaintext`, `CiphertextBlob` | `Decrypt(CiphertextBlob)` |
/// | GCP Cloud KMS | 32 random bytes, then `Encrypt` under the key ring's key | `Decrypt` |
/// | Vault transit | `POST transit/datakey/plaintext/NAME`: `plaintext`, `ciphertext` | `POST transit/decrypt/NAME` |
///
/// [`LocalKeyService`] is the same contract with a key-encryption key in memory, for
/// development, tests and the demo fleet.
pub trait KeyService: Send + Sync + fmt::Debug + 'static {
    /// A fresh random data key, with its wrapped form.
    fn generate_data_key(&self) -> BoxFuture<'_, Result<DataKey, KeyServiceError>>;

    /// Unwraps a data key this service wrapped.
    fn unwrap_key<'a>(
        &'a self,
        wrapped: &'a [u8],
    ) -> BoxFuture<'a, Result<Zeroizing<[u8; 32]>, KeyServiceError>>;
}

/// A [`KeyService`] with its key-encryption key in memory: ChaCha20-Poly1305 wraps each
/// data key (the wrapped form is `nonce(12) ‖ ciphertext(32) ‖ tag(16)`).
///
/// Instances that share the key-encryption key (a file, a Secret) open each other's tokens
/// while every instance makes and rotates its own data keys; a real service keeps the
/// key-encryption key out of the instances altogether.
pub struct LocalKeyService {
    kek: LessSafeKey,
    name: String,
}

impl fmt::Debug for LocalKeyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKeyService")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LocalKeyService {
    /// A service named `name` (bound into every wrapped key) with this 32-byte
    /// key-encryption key.
    pub fn new(name: impl Into<String>, kek: &[u8; 32]) -> Self {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, kek).expect("a 256-bit key");
        LocalKeyService {
            kek: LessSafeKey::new(unbound),
            name: name.into(),
        }
    }

    fn aad(&self) -> Vec<u8> {
        let mut aad = b"arctern/local-kms/v1\0".to_vec();
        aad.extend_from_slice(self.name.as_bytes());
        aad
    }
}

impl KeyService for LocalKeyService {
    fn generate_data_key(&self) -> BoxFuture<'_, Result<DataKey, KeyServiceError>> {
        let mut plaintext = Zeroizing::new([0u8; 32]);
        let mut nonce = [0u8; 12];
        let mut rng = rand::rng();
        rng.fill_bytes(&mut plaintext[..]);
        rng.fill_bytes(&mut nonce);
        let mut wrapped = nonce.to_vec();
        wrapped.extend_from_slice(&plaintext[..]);
        let sealed = self.kek.seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(self.aad()),
            &mut wrapped[12..],
        );
        Box::pin(async move {
            let tag = sealed.map_err(|_| KeyServiceError::new("wrapping failed"))?;
            wrapped.extend_from_slice(tag.as_ref());
            Ok(DataKey { plaintext, wrapped })
        })
    }

    fn unwrap_key<'a>(
        &'a self,
        wrapped: &'a [u8],
    ) -> BoxFuture<'a, Result<Zeroizing<[u8; 32]>, KeyServiceError>> {
        let result = (|| {
            if wrapped.len() != 12 + 32 + 16 {
                return Err(KeyServiceError::new("not a wrapped key of this service"));
            }
            let nonce = Nonce::try_assume_unique_for_key(&wrapped[..12])
                .map_err(|_| KeyServiceError::new("bad nonce"))?;
            let mut body = Zeroizing::new(wrapped[12..].to_vec());
            let opened = self
                .kek
                .open_in_place(nonce, Aad::from(self.aad()), &mut body[..])
                .map_err(|_| KeyServiceError::new("not a wrapped key of this service"))?;
            let mut key = Zeroizing::new([0u8; 32]);
            key.copy_from_slice(opened);
            Ok(key)
        })();
        Box::pin(std::future::ready(result))
    }
}

/// Limits of an [`EnvelopeCodec`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct EnvelopeConfig {
    /// Unwrapped data keys kept (the sealing key of every instance for about one token
    /// lifetime of rotations); default 64.
    pub cache_capacity: usize,
    /// Calls to the key service for data keys not in the cache, per second; tokens made up
    /// by an attacker would otherwise turn into key-service calls. Default 5.
    pub unwraps_per_second: u32,
    /// How long one unwrap may take before the token is refused; default 2 seconds.
    pub unwrap_timeout: Duration,
}

impl Default for EnvelopeConfig {
    fn default() -> Self {
        EnvelopeConfig {
            cache_capacity: 64,
            unwraps_per_second: 5,
            unwrap_timeout: Duration::from_secs(2),
        }
    }
}

/// A [`StateCodec`] in the style of envelope encryption: tokens are sealed
/// (XChaCha20-Poly1305) under a data key; each token carries that key wrapped by a
/// [`KeyService`]; an instance that meets a wrapped key it has not seen asks the service to
/// unwrap it once and caches the result.
///
/// Token = base64url without padding of
/// `version(2) ‖ wrapped length (u16, big endian) ‖ wrapped key ‖ nonce(24) ‖ ciphertext ‖
/// tag(16)`, everything before the nonce authenticated as associated data.
///
/// * **No shared sealing secret**: every instance makes its own data keys
///   ([`start`](Self::start), [`rotate`](Self::rotate), [`rotate_every`](Self::rotate_every));
///   what the fleet shares is access to the key service.
/// * **Rotation on a schedule** needs no coordination: a new data key seals from then on,
///   older tokens still open (their key travels with them), and the key service's own key
///   rotation is the service's business.
/// * **The hot path stays local**: sealing uses the current data key; opening uses the
///   cache. A miss (the first token from another instance's new data key) calls the key
///   service synchronously: under Tokio's multi-thread runtime through `block_in_place`,
///   elsewhere on a helper thread with a runtime of its own; both bounded by
///   [`EnvelopeConfig::unwrap_timeout`]. Misses are rate-limited
///   ([`EnvelopeConfig::unwraps_per_second`]); a token refused for that gets the same fixed
///   error as any invalid token, and the reason is logged.
pub struct EnvelopeCodec {
    service: Arc<dyn KeyService>,
    current: ArcSwap<Sealing>,
    cache: Mutex<Cache>,
    budget: Mutex<Budget>,
    config: EnvelopeConfig,
    base64: Simd,
}

struct Sealing {
    key: Zeroizing<[u8; 32]>,
    /// `version ‖ wrapped length ‖ wrapped`: every token's header.
    header: Vec<u8>,
}

struct Cache {
    keys: HashMap<[u8; 32], Arc<Zeroizing<[u8; 32]>>>,
    order: VecDeque<[u8; 32]>,
    capacity: usize,
}

impl Cache {
    fn get(&self, digest: &[u8; 32]) -> Option<Arc<Zeroizing<[u8; 32]>>> {
        self.keys.get(digest).cloned()
    }

    fn insert(&mut self, digest: [u8; 32], key: Arc<Zeroizing<[u8; 32]>>) {
        if self.keys.insert(digest, key).is_none() {
            self.order.push_back(digest);
        }
        while self.keys.len() > self.capacity {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.keys.remove(&oldest);
                }
                None => break,
            }
        }
    }
}

/// A token bucket for key-service calls.
struct Budget {
    tokens: f64,
    at: Instant,
}

impl fmt::Debug for EnvelopeCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvelopeCodec")
            .field("service", &self.service)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn digest(wrapped: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(wrapped);
    hasher.finalize().into()
}

impl EnvelopeCodec {
    /// Makes the first data key with `service` and returns the codec.
    pub async fn start(
        service: Arc<dyn KeyService>,
        config: EnvelopeConfig,
    ) -> Result<Arc<Self>, KeyServiceError> {
        let first = service.generate_data_key().await?;
        let sealing = Self::sealing(first)?;
        let codec = Arc::new(EnvelopeCodec {
            service,
            current: ArcSwap::from_pointee(sealing),
            cache: Mutex::new(Cache {
                keys: HashMap::new(),
                order: VecDeque::new(),
                capacity: config.cache_capacity.max(1),
            }),
            budget: Mutex::new(Budget {
                tokens: f64::from(config.unwraps_per_second.max(1)),
                at: Instant::now(),
            }),
            config,
            base64: Simd::url_safe(NO_PAD),
        });
        codec.remember_current();
        Ok(codec)
    }

    fn sealing(key: DataKey) -> Result<Sealing, KeyServiceError> {
        if key.wrapped.is_empty() || key.wrapped.len() > MAX_WRAPPED_KEY_LEN {
            return Err(KeyServiceError::new(format!(
                "a wrapped data key must be 1 to {MAX_WRAPPED_KEY_LEN} bytes"
            )));
        }
        let mut header = vec![ENVELOPE_FORMAT_VERSION];
        header.extend_from_slice(&(key.wrapped.len() as u16).to_be_bytes());
        header.extend_from_slice(&key.wrapped);
        Ok(Sealing {
            key: key.plaintext,
            header,
        })
    }

    /// The current data key opens this instance's own tokens without the key service.
    fn remember_current(&self) {
        let current = self.current.load();
        let wrapped = &current.header[3..];
        self.lock_cache()
            .insert(digest(wrapped), Arc::new(current.key.clone()));
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes a new data key and seals with it from now on; tokens under older keys still
    /// open.
    pub async fn rotate(&self) -> Result<(), KeyServiceError> {
        let next = Self::sealing(self.service.generate_data_key().await?)?;
        self.current.store(Arc::new(next));
        self.remember_current();
        tracing::info!("request-state data key rotated");
        Ok(())
    }

    /// Rotates every `period` until the returned task is aborted (or the codec dropped); a
    /// failed rotation keeps the current key and is logged.
    pub fn rotate_every(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period.max(Duration::from_secs(1)));
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(codec) = weak.upgrade() else { return };
                if let Err(e) = codec.rotate().await {
                    tracing::error!(error = %e, "request-state data key rotation failed; sealing with the current key");
                }
            }
        })
    }

    fn take_budget(&self) -> bool {
        let rate = f64::from(self.config.unwraps_per_second.max(1));
        let mut budget = self.budget.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        budget.tokens =
            (budget.tokens + now.duration_since(budget.at).as_secs_f64() * rate).min(rate);
        budget.at = now;
        if budget.tokens >= 1.0 {
            budget.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn unwrap_now(&self, wrapped: &[u8]) -> Result<Zeroizing<[u8; 32]>, String> {
        let call = self.service.unwrap_key(wrapped);
        let timeout = self.config.unwrap_timeout;
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| {
                    handle.block_on(async {
                        match tokio::time::timeout(timeout, call).await {
                            Ok(result) => result.map_err(|e| e.to_string()),
                            Err(_) => Err(format!("no answer within {timeout:?}")),
                        }
                    })
                })
            }
            // No runtime, or one whose only thread is this one: a runtime of its own on a
            // helper thread drives the call.
            _ => std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .map_err(|e| e.to_string())?;
                        runtime.block_on(async {
                            match tokio::time::timeout(timeout, call).await {
                                Ok(result) => result.map_err(|e| e.to_string()),
                                Err(_) => Err(format!("no answer within {timeout:?}")),
                            }
                        })
                    })
                    .join()
                    .unwrap_or_else(|_| Err("the key service panicked".into()))
            }),
        }
    }
}

impl StateCodec for EnvelopeCodec {
    fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError> {
        let current = self.current.load();
        seal_token(&self.base64, &current.key, &[&current.header], plaintext)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError> {
        let buf = decode_token(&self.base64, token)?;
        if buf.len() < 3 {
            return Err(UnsealError::Malformed);
        }
        if buf[0] != ENVELOPE_FORMAT_VERSION {
            return Err(UnsealError::UnsupportedVersion(buf[0]));
        }
        let wrapped_len = usize::from(u16::from_be_bytes([buf[1], buf[2]]));
        let header_len = 3 + wrapped_len;
        if wrapped_len == 0
            || wrapped_len > MAX_WRAPPED_KEY_LEN
            || buf.len() < header_len + NONCE_LEN + TAG_LEN
        {
            return Err(UnsealError::Malformed);
        }
        let wrapped_digest = digest(&buf[3..header_len]);
        let cached = self.lock_cache().get(&wrapped_digest);
        let key = match cached {
            Some(key) => key,
            None => {
                if !self.take_budget() {
                    return Err(UnsealError::Other(
                        "data key not cached and the key-service budget is spent".into(),
                    ));
                }
                let key = self.unwrap_now(&buf[3..header_len]).map_err(|e| {
                    UnsealError::Other(format!("data key unwrap failed: {e}").into())
                })?;
                let key = Arc::new(key);
                self.lock_cache().insert(wrapped_digest, key.clone());
                key
            }
        };
        open_token(buf, header_len, &key)
    }
}

/// Shares one codec between sealers (for example several servers in one process).
impl StateCodec for Arc<EnvelopeCodec> {
    fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError> {
        (**self).seal(plaintext)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError> {
        (**self).unseal(token)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use base64::Engine as _;

    use super::*;
    use crate::state::{RejectReason, StateBinding, StatePayload, StateSealer};

    /// Counts the unwraps it is asked for.
    #[derive(Debug)]
    struct Counting {
        inner: LocalKeyService,
        unwraps: AtomicUsize,
    }

    impl KeyService for Counting {
        fn generate_data_key(&self) -> BoxFuture<'_, Result<DataKey, KeyServiceError>> {
            self.inner.generate_data_key()
        }
        fn unwrap_key<'a>(
            &'a self,
            wrapped: &'a [u8],
        ) -> BoxFuture<'a, Result<Zeroizing<[u8; 32]>, KeyServiceError>> {
            self.unwraps.fetch_add(1, Ordering::SeqCst);
            self.inner.unwrap_key(wrapped)
        }
    }

    fn service(kek: u8) -> Arc<Counting> {
        Arc::new(Counting {
            inner: LocalKeyService::new("test", &[kek; 32]),
            unwraps: AtomicUsize::new(0),
        })
    }

    fn sealer(codec: &Arc<EnvelopeCodec>) -> StateSealer {
        StateSealer::builder("fleet")
            .codec(codec.clone())
            .build()
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn instances_open_each_others_tokens_across_rotations() {
        let (ka, kb) = (service(7), service(7));
        let a = EnvelopeCodec::start(ka.clone(), EnvelopeConfig::default())
            .await
            .unwrap();
        let b = EnvelopeCodec::start(kb.clone(), EnvelopeConfig::default())
            .await
            .unwrap();
        let (sa, sb) = (sealer(&a), sealer(&b));
        let binding = StateBinding::for_request("tools/call", "t", None);
        let first = sa.seal(&binding, &StatePayload::with_state("one")).unwrap();
        // B unwraps A's data key once, then serves from its cache.
        for _ in 0..3 {
            assert_eq!(
                sb.open(&first, &binding).unwrap().state.as_deref(),
                Some("one")
            );
        }
        assert_eq!(kb.unwraps.load(Ordering::SeqCst), 1);
        // A's own tokens never need the service.
        sa.open(&first, &binding).unwrap();
        assert_eq!(ka.unwraps.load(Ordering::SeqCst), 0);
        // After a rotation new tokens carry the new key; old ones still open everywhere.
        a.rotate().await.unwrap();
        let second = sa.seal(&binding, &StatePayload::with_state("two")).unwrap();
        assert_ne!(first[..8], second[..8]);
        assert!(sb.open(&second, &binding).is_ok());
        assert!(sb.open(&first, &binding).is_ok());
        assert_eq!(kb.unwraps.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn forged_and_foreign_tokens_are_refused_and_rate_limited() {
        let ka = service(7);
        let other = service(9);
        let config = EnvelopeConfig {
            unwraps_per_second: 1,
            ..EnvelopeConfig::default()
        };
        let a = EnvelopeCodec::start(ka.clone(), config).await.unwrap();
        let stranger = EnvelopeCodec::start(other, EnvelopeConfig::default())
            .await
            .unwrap();
        let binding = StateBinding::for_request("tools/call", "t", None);
        let foreign = sealer(&stranger)
            .seal(&binding, &StatePayload::default())
            .unwrap();
        assert_eq!(
            sealer(&a).open(&foreign, &binding).unwrap_err().reason(),
            RejectReason::Codec
        );
        // A flipped bit in the sealed body: the key is found, authentication fails.
        let good = sealer(&a).seal(&binding, &StatePayload::default()).unwrap();
        let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&good)
            .unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        let tampered = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(
            sealer(&a).open(&tampered, &binding).unwrap_err().reason(),
            RejectReason::AuthFailed
        );
        // Made-up wrapped keys: at most the budget reaches the key service.
        let before = ka.unwraps.load(Ordering::SeqCst);
        for i in 0..50u8 {
            let mut forged = vec![ENVELOPE_FORMAT_VERSION, 0, 60];
            forged.extend_from_slice(&[i; 60]);
            forged.extend_from_slice(&[0; NONCE_LEN + TAG_LEN + 8]);
            let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&forged);
            assert!(sealer(&a).open(&token, &binding).is_err());
        }
        let calls = ka.unwraps.load(Ordering::SeqCst) - before;
        assert!(calls < 10, "{calls} key-service calls for 50 forged tokens");
    }
}
