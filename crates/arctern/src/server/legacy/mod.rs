//! The legacy era: 2025-11-25 and 2025-06-18 clients, served by the same handlers.
//!
//! A legacy client opens a session with `initialize`; the server remembers the negotiated
//! version, the client's capabilities and its log level for the session, and serves every
//! later request with a [`RequestContext`](crate::server::RequestContext) built from them
//! ([`Era::Legacy`](crate::Era::Legacy)). Results are written in the legacy shape
//! (no `resultType`, `ttlMs` or `cacheScope`).
//!
//! Handlers written in the multi round-trip style work unchanged: when one returns
//! `input_required` on a legacy session, the shim sends each input request to the client as
//! a real server→client request tied to the originating request, collects the answers, and
//! runs the handler again with them, under the same round cap as the modern wire.
//!
//! The transports own the sessions: the Streamable HTTP transport keys them by
//! `Mcp-Session-Id`; stdio has one per connection, fixed by the connection's first request.

mod initialize;
mod session;
pub(crate) mod shim;

use std::time::Duration;

use arctern_types::ProtocolVersion;

#[cfg(feature = "http")]
pub(crate) use initialize::has_modern_envelope;
pub(crate) use initialize::{Initialized, is_legacy_initialize, legacy_error};
pub use session::LegacyPeer;
pub(crate) use session::{LegacySession, Outbound};

/// `bytes` random bytes as lower-case hex, from the operating system's generator (session
/// ids and elicitation ids must not be guessable). `None` when the generator fails: the
/// caller refuses what needed the id rather than mint a guessable one.
pub(crate) fn random_hex(bytes: usize) -> Option<String> {
    use rand::TryRng as _;
    use std::fmt::Write as _;
    let mut buf = vec![0u8; bytes];
    if let Err(e) = rand::rngs::SysRng.try_fill_bytes(&mut buf) {
        tracing::error!(error = %e, "the operating system's random generator failed");
        return None;
    }
    let mut out = String::with_capacity(bytes * 2);
    for b in buf {
        let _ = write!(out, "{b:02x}");
    }
    Some(out)
}

/// How a server serves legacy (2025-era) clients.
///
/// ```
/// use std::time::Duration;
/// use arctern::server::{LegacyConfig, ServerConfig};
///
/// let config = ServerConfig::new("demo", "1.0.0")
///     .legacy(LegacyConfig::default().input_timeout(Duration::from_secs(120)));
/// # let _ = config;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LegacyConfig {
    /// The legacy revisions served, preferred first; empty turns the legacy era off
    /// (`initialize` is then refused like any unknown method). Default: 2025-11-25 and
    /// 2025-06-18.
    pub versions: Vec<ProtocolVersion>,
    /// How long one server→client request of the shim (an elicitation, a sampling request, a
    /// roots request, a ping) may wait for the client's answer before the call fails.
    /// Default 5 minutes.
    pub input_timeout: Duration,
}

/// The default [`LegacyConfig::input_timeout`].
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for LegacyConfig {
    fn default() -> Self {
        LegacyConfig {
            versions: ProtocolVersion::LEGACY.to_vec(),
            input_timeout: DEFAULT_INPUT_TIMEOUT,
        }
    }
}

impl LegacyConfig {
    /// No legacy era: a modern-only server.
    pub fn disabled() -> Self {
        LegacyConfig {
            versions: Vec::new(),
            ..Default::default()
        }
    }

    /// Serves these legacy revisions, preferred first. Revisions this crate does not
    /// implement are ignored.
    pub fn versions(mut self, versions: impl IntoIterator<Item = ProtocolVersion>) -> Self {
        self.versions = versions
            .into_iter()
            .filter(|v| ProtocolVersion::LEGACY.contains(v))
            .collect();
        self
    }

    /// Sets [`input_timeout`](Self::input_timeout).
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.input_timeout = timeout;
        self
    }

    /// Whether any legacy revision is served.
    pub fn is_enabled(&self) -> bool {
        !self.versions.is_empty()
    }
}
