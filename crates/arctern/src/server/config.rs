//! Server identity, declared capabilities, versions and caching hints.

use std::fmt;
use std::sync::Arc;

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::implementation::Implementation;
use arctern_types::result::CacheScope;
use arctern_types::version::ProtocolVersion;

use super::legacy::LegacyConfig;
use super::mrtr::MrtrLimits;
use crate::state::StateSealer;

/// A caching hint: how long a client may reuse a result (`ttlMs`) and who may share it
/// (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Freshness in milliseconds; 0 means "stale at once".
    pub ttl_ms: u64,
    /// Who may reuse the result.
    pub scope: CacheScope,
}

impl CacheHint {
    /// No reuse: `ttlMs: 0`, `cacheScope: "private"`.
    pub const NONE: CacheHint = CacheHint {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };

    /// A hint with the given freshness and scope.
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        CacheHint { ttl_ms, scope }
    }
}

impl Default for CacheHint {
    fn default() -> Self {
        CacheHint::NONE
    }
}

/// The caching hints a server puts on its cacheable results when the handler did not set
/// its own. The default is [`CacheHint::NONE`] everywhere: correct for any server, including
/// one whose lists vary by authorization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CachePolicy {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`.
    pub tools_list: CacheHint,
    /// `prompts/list`.
    pub prompts_list: CacheHint,
    /// `resources/list`.
    pub resources_list: CacheHint,
    /// `resources/templates/list`.
    pub resource_templates_list: CacheHint,
    /// `resources/read` (complete results only).
    pub resources_read: CacheHint,
}

impl CachePolicy {
    /// The same hint for every cacheable result.
    pub const fn uniform(hint: CacheHint) -> Self {
        CachePolicy {
            discover: hint,
            tools_list: hint,
            prompts_list: hint,
            resources_list: hint,
            resource_templates_list: hint,
            resources_read: hint,
        }
    }
}

/// Derives the principal a request's state is bound to, when the authentication layer does
/// not put a [`Principal`](super::Principal) in the request's extensions.
#[derive(Clone)]
pub struct PrincipalHook(pub(crate) Arc<PrincipalFn>);

type PrincipalFn = dyn Fn(&super::RequestContext) -> Option<String> + Send + Sync;

impl PrincipalHook {
    /// A hook from a function.
    pub fn new(
        f: impl Fn(&super::RequestContext) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        PrincipalHook(Arc::new(f))
    }
}

impl fmt::Debug for PrincipalHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrincipalHook")
    }
}

/// Static description of a server, fixed when it is built.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `serverInfo`.
    pub info: Implementation,
    /// Declared capabilities; methods of undeclared capabilities answer `-32601`.
    pub capabilities: ServerCapabilities,
    /// `instructions` in `server/discover`.
    pub instructions: Option<String>,
    /// Modern protocol versions served, preferred first.
    pub versions: Vec<ProtocolVersion>,
    /// Caching hints.
    pub cache: CachePolicy,
    /// Whether results carry `io.modelcontextprotocol/serverInfo` in `_meta` (default on).
    pub stamp_server_info: bool,
    /// Seals `requestState` on the way out and verifies it on the way in (on `tools/call`,
    /// `prompts/get` and `resources/read`). Off for a low-level server until set with
    /// [`ServerConfig::seal_request_state`]; on by default for `McpServer`.
    pub request_state: Option<StateSealer>,
    /// Limits on multi round-trip requests.
    pub mrtr: MrtrLimits,
    /// Where the principal for request-state binding comes from when no
    /// [`Principal`](super::Principal) extension is present.
    pub principal: Option<PrincipalHook>,
    /// How 2025-era clients (`initialize`, sessions) are served; on by default for
    /// 2025-11-25 and 2025-06-18.
    pub legacy: LegacyConfig,
}

impl ServerConfig {
    /// A configuration for a server with this name and version, no capabilities, serving
    /// every modern version this crate implements.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerConfig {
            info: Implementation::new(name, version),
            capabilities: ServerCapabilities::default(),
            instructions: None,
            versions: ProtocolVersion::MODERN.to_vec(),
            cache: CachePolicy::default(),
            stamp_server_info: true,
            request_state: None,
            mrtr: MrtrLimits::default(),
            principal: None,
            legacy: LegacyConfig::default(),
        }
    }

    /// Sets how 2025-era clients are served ([`LegacyConfig::disabled`] makes a
    /// modern-only server).
    pub fn legacy(mut self, legacy: LegacyConfig) -> Self {
        self.legacy = legacy;
        self
    }

    /// Seals request state with `sealer` (one line to opt in on a low-level server):
    /// handlers write and read plaintext, the wire only sees sealed tokens, and every
    /// incoming `requestState` is verified.
    pub fn seal_request_state(mut self, sealer: StateSealer) -> Self {
        self.request_state = Some(sealer);
        self
    }
}
