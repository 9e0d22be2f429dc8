//! A key ring that can be replaced while the server runs: from a file or an environment
//! variable, re-read on demand or on `SIGHUP`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use zeroize::Zeroizing;

use super::codec::{CodecError, StateCodec, UnsealError, XChaChaCodec};
use super::key::{KeyError, KeyId, KeyRing};

/// Where a fleet's key ring is read from.
///
/// Both hold the format of [`KeyRing::parse`]: `id:base64key` entries, the sealing key first,
/// separated by commas or newlines. In a file, lines starting with `#` are comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A file, such as a mounted Kubernetes Secret (`/etc/arctern/state-keys`).
    File(PathBuf),
    /// An environment variable, such as `ARCTERN_STATE_KEYS` (read again on every reload,
    /// which helps only where the variable can change, such as in tests: a process's
    /// environment is fixed when it starts).
    Env(String),
}

impl KeySource {
    /// Reads and parses the ring.
    pub fn load(&self) -> Result<KeyRing, KeyError> {
        match self {
            KeySource::Env(var) => KeyRing::from_env(var),
            KeySource::File(path) => {
                let text =
                    Zeroizing::new(std::fs::read_to_string(path).map_err(|e| KeyError::File {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    })?);
                let entries: Zeroizing<String> = Zeroizing::new(
                    text.lines()
                        .map(str::trim)
                        .filter(|l| !l.starts_with('#'))
                        .collect::<Vec<_>>()
                        .join(","),
                );
                KeyRing::parse(&entries)
            }
        }
    }
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::File(path) => write!(f, "file {}", path.display()),
            KeySource::Env(var) => write!(f, "environment variable {var}"),
        }
    }
}

/// A [`StateCodec`] whose key ring can be replaced while the server runs: the rotation of a
/// fleet without restarts.
///
/// Rotation is the three steps of [`KeyRing`], each a change of the file (or Secret) every
/// instance reads followed by a reload on every instance — [`reload`](Self::reload), or
/// `SIGHUP` with [`reload_on_sighup`](Self::reload_on_sighup):
///
/// 1. add the new key after the old one (`old, new`): every instance verifies both;
/// 2. put it first (`new, old`): the new key seals, tokens in flight under the old one open;
/// 3. once no token sealed under the old key can still be alive (one TTL after every
///    instance took step 2), drop the old key.
///
/// A reload that fails (a half-written file, a bad entry) keeps the current ring and says
/// why. Tokens are sealed with the ring current at the time; a swap costs one atomic pointer
/// store, and reading the ring on every seal and open an atomic load.
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern::state::{KeySource, ReloadableKeyRing, StateSealer};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let keys = ReloadableKeyRing::from_source(KeySource::File("/etc/arctern/state-keys".into()))?;
/// let _reloading = keys.reload_on_sighup()?; // opt-in: a process-wide signal handler
/// let sealer = StateSealer::builder("orders-mcp").codec(keys.clone()).build()?;
/// let server = McpServer::new("orders-mcp").state_sealer(sealer).build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReloadableKeyRing {
    current: Arc<ArcSwap<Current>>,
    source: Option<KeySource>,
}

struct Current {
    codec: XChaChaCodec,
    ids: Vec<KeyId>,
}

impl Current {
    fn new(ring: &KeyRing) -> Arc<Self> {
        Arc::new(Current {
            codec: XChaChaCodec::new(ring),
            ids: ring.keys().iter().map(|k| k.id().clone()).collect(),
        })
    }
}

impl fmt::Debug for ReloadableKeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadableKeyRing")
            .field("key_ids", &self.key_ids())
            .field("source", &self.source)
            .finish()
    }
}

impl ReloadableKeyRing {
    /// A ring replaced only by [`replace`](Self::replace).
    pub fn new(ring: &KeyRing) -> Self {
        ReloadableKeyRing {
            current: Arc::new(ArcSwap::new(Current::new(ring))),
            source: None,
        }
    }

    /// A ring read from `source` now, and again on every [`reload`](Self::reload).
    pub fn from_source(source: KeySource) -> Result<Self, KeyError> {
        let ring = source.load()?;
        Ok(ReloadableKeyRing {
            current: Arc::new(ArcSwap::new(Current::new(&ring))),
            source: Some(source),
        })
    }

    /// Where the ring is read from, if anywhere.
    pub fn source(&self) -> Option<&KeySource> {
        self.source.as_ref()
    }

    /// The ids of the current ring, sealing key first.
    pub fn key_ids(&self) -> Vec<KeyId> {
        self.current.load().ids.clone()
    }

    /// Uses `ring` from now on.
    pub fn replace(&self, ring: &KeyRing) {
        self.current.store(Current::new(ring));
    }

    /// Reads the source again and uses the new ring; returns its ids. On failure (or without
    /// a source) the current ring stays.
    pub fn reload(&self) -> Result<Vec<KeyId>, KeyError> {
        let Some(source) = &self.source else {
            return Ok(self.key_ids());
        };
        match source.load() {
            Ok(ring) => {
                let current = Current::new(&ring);
                let ids = current.ids.clone();
                self.current.store(current);
                tracing::info!(keys = ?ids, %source, "reloaded the request-state key ring");
                Ok(ids)
            }
            Err(e) => {
                tracing::error!(error = %e, %source, "request-state key ring reload failed; keeping the current ring");
                Err(e)
            }
        }
    }

    /// Reloads on every `SIGHUP` until the returned guard is dropped (Unix only; needs a
    /// Tokio runtime). Opt-in because it installs a process-wide signal handler: a process
    /// without one dies on `SIGHUP`.
    #[cfg(unix)]
    pub fn reload_on_sighup(&self) -> std::io::Result<ReloadOnSignal> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup())?;
        let keys = self.clone();
        let task = tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading the request-state key ring");
                let _ = keys.reload();
            }
        });
        Ok(ReloadOnSignal(task))
    }
}

/// Stops reloading on `SIGHUP` when dropped (see
/// [`ReloadableKeyRing::reload_on_sighup`]).
#[cfg(unix)]
#[derive(Debug)]
pub struct ReloadOnSignal(tokio::task::JoinHandle<()>);

#[cfg(unix)]
impl Drop for ReloadOnSignal {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl StateCodec for ReloadableKeyRing {
    fn seal(&self, plaintext: &[u8]) -> Result<String, CodecError> {
        self.current.load().codec.seal(plaintext)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, UnsealError> {
        self.current.load().codec.unseal(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{RejectReason, StateBinding, StatePayload, StateSealer};

    const K1: &str = "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY";
    const K2: &str = "k2:ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA";

    fn sealer(keys: &ReloadableKeyRing) -> StateSealer {
        StateSealer::builder("fleet")
            .codec(keys.clone())
            .build()
            .unwrap()
    }

    #[test]
    fn three_step_rotation_from_a_file() {
        let dir = std::env::temp_dir().join(format!("arctern-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys");
        std::fs::write(&file, format!("# the fleet's keys\n{K1}\n")).unwrap();
        let keys = ReloadableKeyRing::from_source(KeySource::File(file.clone())).unwrap();
        let other = ReloadableKeyRing::from_source(KeySource::File(file.clone())).unwrap();
        let (a, b) = (sealer(&keys), sealer(&other));
        let binding = StateBinding::for_request("tools/call", "t", None);
        let old = a.seal(&binding, &StatePayload::with_state("s")).unwrap();

        // 1. [k1, k2] on one instance: both still seal with k1.
        std::fs::write(&file, format!("{K1},{K2}")).unwrap();
        assert_eq!(keys.reload().unwrap().len(), 2);
        assert!(
            b.open(
                &a.seal(&binding, &StatePayload::default()).unwrap(),
                &binding
            )
            .is_ok()
        );
        // 2. [k2, k1]: new tokens are sealed with k2; the other instance, still on step 1,
        // opens them, and old ones still open here.
        std::fs::write(&file, format!("{K2}\n{K1}\n")).unwrap();
        other.reload().unwrap();
        std::fs::write(&file, format!("{K2}\n{K1}\n")).unwrap();
        keys.reload().unwrap();
        let new = a.seal(&binding, &StatePayload::default()).unwrap();
        assert!(b.open(&new, &binding).is_ok());
        assert!(a.open(&old, &binding).is_ok());
        // 3. [k2]: k1 tokens are refused, k2 tokens open.
        std::fs::write(&file, K2).unwrap();
        keys.reload().unwrap();
        assert_eq!(
            a.open(&old, &binding).unwrap_err().reason(),
            RejectReason::UnknownKey
        );
        assert!(a.open(&new, &binding).is_ok());

        // A bad file keeps the current ring.
        std::fs::write(&file, "k3:short").unwrap();
        assert!(keys.reload().is_err());
        assert_eq!(keys.key_ids(), vec![KeyId::new("k2").unwrap()]);
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(keys.reload(), Err(KeyError::File { .. })));
        assert!(a.open(&new, &binding).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
