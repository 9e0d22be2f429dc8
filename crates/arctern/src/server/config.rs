//! Server identity, declared capabilities, versions and caching hints.

use std::fmt;
use std::sync::Arc;

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::implementation::Implementation;
use arctern_types::result::CacheScope;
use arctern_types::version::ProtocolVersion;

use super::connection::ConnectionLimits;
use super::legacy::LegacyConfig;
use super::middleware::Middleware;
use super::mrtr::{MrtrLimits, OneTimeStore};
use super::subscriptions::{ChangeBus, LocalChangeBus, SubscriptionPolicy};
use crate::state::StateSealer;

/// A caching hint: how long a client may reuse a result (`ttlMs`) and who may share it
/// (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
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

/// Derives the principal a request's state is bound to from the request's extensions, when
/// the authentication layer does not put a [`Principal`](super::Principal) there itself.
#[derive(Clone)]
pub struct PrincipalHook(pub(crate) Arc<PrincipalFn>);

type PrincipalFn = dyn Fn(&http::Extensions) -> Option<String> + Send + Sync;

impl PrincipalHook {
    /// A hook from a function of the request's extensions.
    pub fn new(f: impl Fn(&http::Extensions) -> Option<String> + Send + Sync + 'static) -> Self {
        PrincipalHook(Arc::new(f))
    }
}

impl fmt::Debug for PrincipalHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrincipalHook")
    }
}

/// Static description of a server, fixed when it is built.
///
/// ```
/// use arctern::server::ServerConfig;
/// use arctern::types::capabilities::{ServerCapabilities, ToolsCapability};
///
/// let mut capabilities = ServerCapabilities::default();
/// capabilities.tools = Some(ToolsCapability::default());
/// let config = ServerConfig::new("inventory", "1.2.0")
///     .capabilities(capabilities)
///     .instructions("Look things up in the inventory.");
/// assert!(config.request_state.is_some(), "sealed by default");
/// ```
#[derive(Clone)]
#[non_exhaustive]
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
    /// `prompts/get` and `resources/read`). On by default, with a process-local key
    /// ([`StateSealer::ephemeral`]); give a fleet shared keys with
    /// [`seal_request_state`](Self::seal_request_state), or turn it off with
    /// [`without_state_sealing`](Self::without_state_sealing).
    pub request_state: Option<StateSealer>,
    /// Limits on multi round-trip requests.
    pub mrtr: MrtrLimits,
    /// Where the principal for request-state binding comes from when no
    /// [`Principal`](super::Principal) extension is present.
    pub principal: Option<PrincipalHook>,
    /// How 2025-era clients (`initialize`, sessions) are served; on by default for
    /// 2025-11-25 and 2025-06-18.
    pub legacy: LegacyConfig,
    /// Middleware around every handler call, outermost first (see
    /// [`middleware`](super::middleware)).
    pub middleware: Vec<Arc<dyn Middleware>>,
    /// Requests in flight per connection and over every connection.
    pub connections: ConnectionLimits,
    /// Limits on resource subscriptions, and who hears about which update.
    pub subscriptions: SubscriptionPolicy,
    /// Where announced changes travel: this process only ([`LocalChangeBus`], the default)
    /// or every instance of a fleet.
    pub change_bus: Arc<dyn ChangeBus>,
    /// Makes each multi round-trip flow complete at most once (needs sealing; see
    /// [`OneTimeStore`]). Off by default.
    pub one_time: Option<Arc<dyn OneTimeStore>>,
    /// The most `subscriptions/listen` streams open at once, over every connection
    /// (default [`DEFAULT_MAX_LISTEN_STREAMS`]). One more is refused with a `-32603` error
    /// naming the limit; each idle stream holds a connection and about 12 KiB.
    pub max_listen_streams: usize,
    /// Runs tools as tasks (the tasks extension; advertised in `server/discover` when set).
    /// Off by default; an [`McpServer`](super::McpServer) with a task tool turns it on.
    pub tasks: Option<super::tasks::TaskConfig>,
    /// OpenTelemetry spans and metrics (feature `otel`): on by default, through the global
    /// providers; `None` turns them off.
    #[cfg(feature = "otel")]
    pub telemetry: Option<crate::otel::ServerTelemetry>,
}

/// The default of [`ServerConfig::max_listen_streams`].
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 1024;

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("info", &self.info)
            .field("capabilities", &self.capabilities)
            .field("instructions", &self.instructions)
            .field("versions", &self.versions)
            .field("cache", &self.cache)
            .field("stamp_server_info", &self.stamp_server_info)
            .field("request_state", &self.request_state)
            .field("mrtr", &self.mrtr)
            .field("principal", &self.principal)
            .field("legacy", &self.legacy)
            .field("middleware", &self.middleware.len())
            .field("connections", &self.connections)
            .field("subscriptions", &self.subscriptions)
            .field("change_bus", &self.change_bus)
            .field("one_time", &self.one_time.is_some())
            .field("max_listen_streams", &self.max_listen_streams)
            .field("tasks", &self.tasks)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// A configuration for a server with this name and version, no capabilities, serving
    /// every modern version this crate implements.
    ///
    /// Request state is sealed with a process-local key bound to the server's name.
    ///
    /// # Panics
    ///
    /// When the operating system's random generator fails (no key can be made).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let info = Implementation::new(name, version);
        let audience = if info.name.is_empty() {
            "mcp-server"
        } else {
            info.name.as_str()
        };
        let sealer = StateSealer::ephemeral(audience)
            .expect("a process-local request-state key (the OS random generator failed)");
        ServerConfig {
            info,
            capabilities: ServerCapabilities::default(),
            instructions: None,
            versions: ProtocolVersion::MODERN.to_vec(),
            cache: CachePolicy::default(),
            stamp_server_info: true,
            request_state: Some(sealer),
            mrtr: MrtrLimits::default(),
            principal: None,
            legacy: LegacyConfig::default(),
            middleware: Vec::new(),
            connections: ConnectionLimits::default(),
            subscriptions: SubscriptionPolicy::default(),
            change_bus: Arc::new(LocalChangeBus::default()),
            one_time: None,
            max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
            tasks: None,
            #[cfg(feature = "otel")]
            telemetry: Some(crate::otel::ServerTelemetry::global()),
        }
    }

    /// Sets the declared capabilities.
    pub fn capabilities(mut self, capabilities: ServerCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets the `instructions` of `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the modern versions served, preferred first.
    pub fn versions(mut self, versions: impl IntoIterator<Item = ProtocolVersion>) -> Self {
        self.versions = versions.into_iter().collect();
        self
    }

    /// Sets the caching hints.
    pub fn cache(mut self, cache: CachePolicy) -> Self {
        self.cache = cache;
        self
    }

    /// Whether results carry `serverInfo` in `_meta`.
    pub fn stamp_server_info(mut self, stamp: bool) -> Self {
        self.stamp_server_info = stamp;
        self
    }

    /// Sets the limits on multi round-trip requests.
    pub fn mrtr_limits(mut self, limits: MrtrLimits) -> Self {
        self.mrtr = limits;
        self
    }

    /// Sets the limits on requests in flight per connection and over every connection.
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.connections = limits;
        self
    }

    /// Sets the limits on resource subscriptions and the filter of resource updates.
    pub fn subscription_policy(mut self, policy: SubscriptionPolicy) -> Self {
        self.subscriptions = policy;
        self
    }

    /// Sets where the principal for request-state binding comes from when no
    /// [`Principal`](super::Principal) extension is present.
    pub fn principal(mut self, hook: PrincipalHook) -> Self {
        self.principal = Some(hook);
        self
    }

    /// Turns request-state sealing off: `requestState` then passes between the client and
    /// handlers as plain text, unverified, rounds are not counted and answers are not
    /// pinned. Only for servers whose state carries nothing that tampering could abuse.
    pub fn without_state_sealing(mut self) -> Self {
        self.request_state = None;
        self
    }

    /// Wraps every handler call, and the middleware added before, in `middleware` (see
    /// [`middleware`](super::middleware)): the last added runs first, as with axum's
    /// `Router::layer`.
    pub fn layer(mut self, middleware: impl Middleware) -> Self {
        // Kept outermost first, the order the engine runs them in.
        self.middleware.insert(0, Arc::new(middleware));
        self
    }

    /// Sets how 2025-era clients are served ([`LegacyConfig::disabled`] makes a
    /// modern-only server).
    pub fn legacy(mut self, legacy: LegacyConfig) -> Self {
        self.legacy = legacy;
        self
    }

    /// Carries announced changes over `bus` (for example to every instance of a fleet)
    /// instead of within this process only.
    pub fn change_bus(mut self, bus: Arc<dyn ChangeBus>) -> Self {
        self.change_bus = bus;
        self
    }

    /// Seals request state with `sealer` (for shared keys, another codec, another time to
    /// live): handlers write and read plaintext, the wire only sees sealed tokens, and every
    /// incoming `requestState` is verified.
    pub fn seal_request_state(mut self, sealer: StateSealer) -> Self {
        self.request_state = Some(sealer);
        self
    }

    /// OpenTelemetry instrumentation (feature `otel`; on by default through the global
    /// providers): pass [`None`] to turn it off.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: impl Into<Option<crate::otel::ServerTelemetry>>) -> Self {
        self.telemetry = telemetry.into();
        self
    }

    /// Makes each multi round-trip flow complete at most once: a round presented again
    /// after its flow completed (or while another round of it runs) is refused with the
    /// fixed request-state error. Needs request-state sealing.
    pub fn one_time_store(mut self, store: impl OneTimeStore) -> Self {
        self.one_time = Some(Arc::new(store));
        self
    }

    /// Sets the most `subscriptions/listen` streams open at once (see
    /// [`max_listen_streams`](Self::max_listen_streams)).
    pub fn max_listen_streams(mut self, limit: usize) -> Self {
        self.max_listen_streams = limit;
        self
    }

    /// Runs tools as tasks with `tasks` (see [`tasks`](super::tasks)).
    pub fn tasks(mut self, tasks: super::tasks::TaskConfig) -> Self {
        self.tasks = Some(tasks);
        self
    }
}
