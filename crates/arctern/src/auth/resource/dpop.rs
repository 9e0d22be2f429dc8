//! DPoP at the resource server (RFC 9449 §7): proof checks, the replay cache, server nonces.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use super::token::{AuthError, VerifiedToken};
use crate::auth::jose::{Algorithm, DpopCheck, base64url, verify_dpop_proof};

/// The default age a DPoP proof may have.
pub const DEFAULT_DPOP_MAX_AGE: Duration = Duration::from_secs(120);
/// The default capacity of the DPoP `jti` replay cache.
pub const DEFAULT_DPOP_REPLAY_CAPACITY: usize = 200_000;
/// The default lifetime of a server nonce.
pub const DEFAULT_DPOP_NONCE_LIFETIME: Duration = Duration::from_secs(300);
/// The default bound on a DPoP proof's size.
pub const DEFAULT_DPOP_MAX_PROOF_SIZE: usize = 8 * 1024;

/// How the resource server treats DPoP (RFC 9449).
///
/// By default DPoP-bound tokens are accepted (`Authorization: DPoP`, with a proof in the
/// `DPoP` header) next to bearer tokens; a bound token presented as a bearer token is
/// refused. Every proof must be signed by the key the token is bound to (`cnf.jkt`), name
/// this request's method and URL (`htm`, `htu`), carry the token's hash (`ath`), be at
/// most [`max_age`](Self::max_age) old (with [`leeway`](Self::leeway) into the future),
/// and never come twice: each `jti` is remembered for the proof's window, in a cache of
/// [`replay_capacity`](Self::replay_capacity) entries (when it is full, proofs are refused
/// until entries expire: size it above proofs per second × window).
///
/// With [`nonces`](Self::nonces) on, every proof must also carry a nonce the server issued
/// (RFC 9449 §9): a proof without one, or with a stale one, gets `401` with
/// `error="use_dpop_nonce"` and a fresh `DPoP-Nonce` header, and successful responses carry
/// the current nonce. Nonces are stateless (a MAC of a time window), valid for one to two
/// [`nonce_lifetime`](Self::nonce_lifetime)s; a fleet shares them with
/// [`nonce_key`](Self::nonce_key).
#[derive(Debug, Clone)]
pub struct DpopConfig {
    pub(crate) enabled: bool,
    pub(crate) required: bool,
    pub(crate) nonces: bool,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) max_age: Duration,
    pub(crate) leeway: Duration,
    pub(crate) replay_capacity: usize,
    pub(crate) nonce_lifetime: Duration,
    pub(crate) nonce_key: Option<[u8; 32]>,
    pub(crate) max_proof_size: usize,
}

impl Default for DpopConfig {
    fn default() -> Self {
        DpopConfig {
            enabled: true,
            required: false,
            nonces: false,
            algorithms: vec![
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
                Algorithm::PS256,
                Algorithm::RS256,
            ],
            max_age: DEFAULT_DPOP_MAX_AGE,
            leeway: Duration::from_secs(5),
            replay_capacity: DEFAULT_DPOP_REPLAY_CAPACITY,
            nonce_lifetime: DEFAULT_DPOP_NONCE_LIFETIME,
            nonce_key: None,
            max_proof_size: DEFAULT_DPOP_MAX_PROOF_SIZE,
        }
    }
}

impl DpopConfig {
    /// DPoP accepted next to bearer tokens, no nonces (the defaults above).
    pub fn new() -> Self {
        DpopConfig::default()
    }

    /// DPoP refused: only bearer tokens (the `DPoP` scheme answers `invalid_token`).
    pub fn disabled() -> Self {
        DpopConfig {
            enabled: false,
            ..DpopConfig::default()
        }
    }

    /// Only DPoP-bound tokens are accepted (`dpop_bound_access_tokens_required` in the
    /// metadata); bearer tokens are refused.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Requires server-issued nonces in proofs.
    pub fn nonces(mut self, on: bool) -> Self {
        self.nonces = on;
        self
    }

    /// The proof algorithms accepted (default ES256, ES384, EdDSA, PS256, RS256).
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.algorithms = algorithms.to_vec();
        self
    }

    /// How old a proof may be (default 120 seconds).
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// How far in the future a proof's `iat` may be (default 5 seconds).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How many `jti`s the replay cache holds (default 200 000).
    pub fn replay_capacity(mut self, entries: usize) -> Self {
        self.replay_capacity = entries;
        self
    }

    /// How long a server nonce is good for (one to two of these; default 5 minutes).
    pub fn nonce_lifetime(mut self, lifetime: Duration) -> Self {
        self.nonce_lifetime = lifetime.max(Duration::from_secs(1));
        self
    }

    /// The key nonces are made with, shared by every server of a fleet (default: random
    /// per process).
    pub fn nonce_key(mut self, key: [u8; 32]) -> Self {
        self.nonce_key = Some(key);
        self
    }

    /// The largest proof accepted, in bytes (default 8 KiB).
    pub fn max_proof_size(mut self, bytes: usize) -> Self {
        self.max_proof_size = bytes;
        self
    }
}

/// A checked proof, not yet recorded in the replay cache.
pub(crate) struct Proof {
    jkt: String,
    replay_key: [u8; 16],
    until: u64,
}

/// The DPoP state of a protected resource.
pub(crate) struct Dpop {
    pub(crate) config: DpopConfig,
    nonce_key: hmac::Key,
    replay: Mutex<ReplayCache>,
}

impl Dpop {
    pub(crate) fn new(config: DpopConfig) -> Self {
        let key = config.nonce_key.unwrap_or_else(|| {
            let mut key = [0u8; 32];
            // A failing system RNG leaves the all-zero key: nonces then only prove freshness.
            if SystemRandom::new().fill(&mut key).is_err() {
                tracing::error!("the system RNG failed; DPoP nonces use a fixed key");
            }
            key
        });
        Dpop {
            nonce_key: hmac::Key::new(hmac::HMAC_SHA256, &key),
            replay: Mutex::new(ReplayCache::new(config.replay_capacity)),
            config,
        }
    }

    fn window(&self, now: u64) -> u64 {
        now / self.config.nonce_lifetime.as_secs().max(1)
    }

    fn nonce_for(&self, window: u64) -> String {
        let tag = hmac::sign(&self.nonce_key, &window.to_be_bytes());
        let mut bytes = window.to_be_bytes().to_vec();
        bytes.extend_from_slice(&tag.as_ref()[..16]);
        base64url::encode(bytes)
    }

    /// The nonce to hand out now.
    pub(crate) fn current_nonce(&self, now: u64) -> String {
        self.nonce_for(self.window(now))
    }

    fn nonce_valid(&self, nonce: &str, now: u64) -> bool {
        let Ok(bytes) = base64url::decode(nonce, "nonce") else {
            return false;
        };
        if bytes.len() != 24 {
            return false;
        }
        let mut window = [0u8; 8];
        window.copy_from_slice(&bytes[..8]);
        let window = u64::from_be_bytes(window);
        let current = self.window(now);
        if window != current && window.saturating_add(1) != current {
            return false;
        }
        // The tag is truncated to 16 bytes: compare that prefix in constant time.
        let tag = hmac::sign(&self.nonce_key, &window.to_be_bytes());
        constant_eq(&tag.as_ref()[..16], &bytes[8..])
    }

    /// Checks the proof of a `DPoP`-scheme request.
    pub(crate) fn check_proof(
        &self,
        proof: &str,
        method: &str,
        url: &str,
        token: &str,
        now: u64,
    ) -> Result<Proof, AuthError> {
        if proof.len() > self.config.max_proof_size {
            return Err(AuthError::InvalidDpopProof(
                "the DPoP proof is too large".into(),
            ));
        }
        let mut check = DpopCheck::new(method, url)
            .access_token(token)
            .allowed(&self.config.algorithms)
            .at(now);
        check = check.window(self.config.max_age.as_secs(), self.config.leeway.as_secs());
        let verified = verify_dpop_proof(proof, &check).map_err(|e| {
            tracing::debug!(error = %e, "refused a DPoP proof");
            AuthError::InvalidDpopProof("the DPoP proof is not valid for this request".into())
        })?;
        if self.config.nonces
            && !verified
                .nonce
                .as_deref()
                .is_some_and(|n| self.nonce_valid(n, now))
        {
            return Err(AuthError::UseDpopNonce);
        }
        let digest = ring::digest::digest(
            &ring::digest::SHA256,
            format!("{}\0{}", verified.jkt, verified.jti).as_bytes(),
        );
        let mut replay_key = [0u8; 16];
        replay_key.copy_from_slice(&digest.as_ref()[..16]);
        let until = verified
            .iat
            .saturating_add(self.config.max_age.as_secs())
            .saturating_add(self.config.leeway.as_secs())
            .max(now);
        Ok(Proof {
            jkt: verified.jkt,
            replay_key,
            until,
        })
    }

    /// Checks that the token is bound to the proof's key, then records the proof's `jti`.
    pub(crate) fn bind(
        &self,
        proof: Proof,
        token: &VerifiedToken,
        now: u64,
    ) -> Result<(), AuthError> {
        match token.dpop_jkt.as_deref() {
            Some(jkt) if jkt == proof.jkt => {}
            Some(_) => {
                return Err(AuthError::InvalidDpopProof(
                    "the DPoP proof is signed by another key than the token is bound to".into(),
                ));
            }
            None => return Err(AuthError::invalid_token("the token is not DPoP-bound")),
        }
        let mut replay = self.replay.lock().unwrap_or_else(|e| e.into_inner());
        match replay.insert(proof.replay_key, proof.until, now) {
            Insert::New => Ok(()),
            Insert::Seen => Err(AuthError::InvalidDpopProof(
                "the DPoP proof was used before".into(),
            )),
            Insert::Full => {
                tracing::warn!(
                    capacity = self.config.replay_capacity,
                    "the DPoP replay cache is full; refusing proofs until entries expire"
                );
                Err(AuthError::InvalidDpopProof(
                    "the DPoP proof cannot be accepted now".into(),
                ))
            }
        }
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

enum Insert {
    New,
    Seen,
    Full,
}

/// `jti`s seen, each until its proof's window closes.
struct ReplayCache {
    seen: HashSet<[u8; 16]>,
    /// In insertion order, which is close to expiry order.
    order: VecDeque<(u64, [u8; 16])>,
    capacity: usize,
}

impl ReplayCache {
    fn new(capacity: usize) -> Self {
        ReplayCache {
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    fn insert(&mut self, key: [u8; 16], until: u64, now: u64) -> Insert {
        while let Some(&(expiry, old)) = self.order.front() {
            if expiry > now {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&old);
        }
        if self.seen.contains(&key) {
            return Insert::Seen;
        }
        if self.seen.len() >= self.capacity {
            return Insert::Full;
        }
        self.seen.insert(key);
        self.order.push_back((until, key));
        Insert::New
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_live_one_to_two_windows_and_are_keyed() {
        let dpop = Dpop::new(DpopConfig::new().nonce_lifetime(Duration::from_secs(100)));
        let nonce = dpop.current_nonce(1_000);
        assert!(dpop.nonce_valid(&nonce, 1_000));
        assert!(dpop.nonce_valid(&nonce, 1_199));
        assert!(!dpop.nonce_valid(&nonce, 1_200));
        assert!(!dpop.nonce_valid(&nonce, 900));
        let other = Dpop::new(DpopConfig::new().nonce_lifetime(Duration::from_secs(100)));
        assert!(!other.nonce_valid(&nonce, 1_000));
        assert!(!dpop.nonce_valid("garbage", 1_000));
    }

    #[test]
    fn the_replay_cache_is_bounded_and_forgets_expired_entries() {
        let mut cache = ReplayCache::new(2);
        assert!(matches!(cache.insert([1; 16], 10, 0), Insert::New));
        assert!(matches!(cache.insert([1; 16], 10, 5), Insert::Seen));
        assert!(matches!(cache.insert([2; 16], 20, 5), Insert::New));
        assert!(matches!(cache.insert([3; 16], 20, 5), Insert::Full));
        assert!(matches!(cache.insert([3; 16], 20, 10), Insert::New));
        assert!(matches!(cache.insert([1; 16], 30, 10), Insert::Full));
    }
}
