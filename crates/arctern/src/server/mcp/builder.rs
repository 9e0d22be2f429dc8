//! The [`McpServer`] builder.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use arctern_types::capabilities::{PromptsCapability, ResourcesCapability, ToolsCapability};
use arctern_types::implementation::Implementation;
use arctern_types::meta::JsonObject;

use super::completion::Completer;
use super::entry::Entry;
use super::handler::{HandlerInner, McpHandler};
use super::registry::{Registered, Registry};
use super::{
    ArgumentCheck, CompletionRequest, DEFAULT_PAGE_SIZE, HandlerFn, IntoCompletion,
    IntoPromptResult, IntoReadResult, IntoToolResult, PromptSpec, RegistrationError, ResourceSpec,
    ResourceTemplateSpec, ToolSpec, prompt, resource, tool,
};
use crate::server::config::{CachePolicy, PrincipalHook, ServerConfig};
use crate::server::context::RequestContext;
use crate::server::engine::Server;
use crate::server::middleware::Middleware;
use crate::server::mrtr::MrtrLimits;
use crate::server::tasks::TaskConfig;
use crate::state::{KeyRing, StateSealer};

/// Builds a server from plain async functions: tools, prompts, resources and resource
/// templates whose parameters are extractors (see [`FromCall`](crate::server::extract::FromCall)).
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern::server::extract::Args;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Echo { text: String }
///
/// async fn echo(Args(e): Args<Echo>) -> String {
///     e.text
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::new("echo-server")
///     .version("1.0.0")
///     .tool("echo", "Echoes its text.", echo)
///     .build()?;
/// # let _ = server; Ok(()) }
/// ```
///
/// `S` is shared state handed to handlers through the [`State`](crate::server::extract::State) extractor; set it with
/// [`McpServer::with_state`].
pub struct McpServer<S = ()> {
    // Boxed: the builder is passed by value through every registration, and inline its
    // 1.5 KB would be copied on each call and take a stack slot per call in a long chain.
    parts: Box<BuilderParts<S>>,
}

/// What an [`McpServer`] collects before [`build`](McpServer::build).
struct BuilderParts<S> {
    config: ServerConfig,
    state: S,
    registry: Registry<S>,
    completer: Option<Completer>,
    errors: Vec<String>,
    page_size: usize,
    enable: Enable,
    sealing: Sealing,
    hide_unauthorized: bool,
    argument_check: ArgumentCheck,
    #[cfg(feature = "apps")]
    apps: AppsSettings,
}

/// How an `McpServer` serves MCP Apps.
#[cfg(feature = "apps")]
#[derive(Clone, Copy)]
pub(super) struct AppsSettings {
    /// Declare the extension even without a view (views added at run time).
    pub(super) enabled: bool,
    /// Write the deprecated flat `ui/resourceUri` key next to `_meta.ui.resourceUri`.
    pub(super) flat_key: bool,
}

/// How an `McpServer` seals request state.
enum Sealing {
    /// A fresh process-local key, the server name as audience.
    Default,
    /// These keys, the server name as audience.
    Keys(KeyRing),
    /// A sealer configured in full.
    Sealer(StateSealer),
    /// No sealing (typed questions cannot be registered).
    Off,
}

#[derive(Default, Clone, Copy)]
struct Enable {
    tools: bool,
    prompts: bool,
    resources: bool,
    logging: bool,
}

impl McpServer<()> {
    /// A server called `name`, with no shared state.
    pub fn new(name: impl Into<String>) -> Self {
        McpServer::with_state(name, ())
    }
}

impl<S> fmt::Debug for McpServer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.parts.config.info.name)
            .field("tools", &self.parts.registry.tools.len())
            .field("prompts", &self.parts.registry.prompts.len())
            .field("resources", &self.parts.registry.resources.len())
            .field("templates", &self.parts.registry.templates.len())
            .finish_non_exhaustive()
    }
}

impl<S: Clone + Send + Sync + 'static> McpServer<S> {
    /// A server called `name` whose handlers can extract `State<S>`.
    pub fn with_state(name: impl Into<String>, state: S) -> Self {
        McpServer {
            parts: Box::new(BuilderParts {
                config: ServerConfig::new(name, "0.0.0"),
                state,
                registry: Registry::default(),
                completer: None,
                errors: Vec::new(),
                page_size: DEFAULT_PAGE_SIZE,
                enable: Enable {
                    logging: true,
                    ..Default::default()
                },
                sealing: Sealing::Default,
                hide_unauthorized: false,
                argument_check: ArgumentCheck::default(),
                #[cfg(feature = "apps")]
                apps: AppsSettings {
                    enabled: false,
                    flat_key: true,
                },
            }),
        }
    }

    /// Seals request state with these keys (the first seals, all verify), so that several
    /// server processes sharing them can finish each other's flows, and keys rotate without
    /// downtime. Without this a fresh process-local key is used.
    pub fn state_keys(mut self, keys: KeyRing) -> Self {
        self.parts.sealing = Sealing::Keys(keys);
        self
    }

    /// Seals request state with a sealer configured in full (codec, clock, time to live,
    /// audience, maximum token size).
    pub fn state_sealer(mut self, sealer: StateSealer) -> Self {
        self.parts.sealing = Sealing::Sealer(sealer);
        self
    }

    /// Turns request-state sealing off: `requestState` then passes between the client and
    /// manual-form handlers as plain text, and handlers asking typed questions cannot be
    /// registered (their answers are pinned inside the sealed state). Only for servers whose
    /// state carries nothing that tampering could abuse.
    pub fn without_state_sealing(mut self) -> Self {
        self.parts.sealing = Sealing::Off;
        self
    }

    /// Where the principal that request state is bound to comes from, when no authentication
    /// layer put a [`Principal`](crate::server::Principal) in the request's extensions.
    pub fn principal(mut self, hook: PrincipalHook) -> Self {
        self.parts.config.principal = Some(hook);
        self
    }

    /// Wraps every handler call, and the middleware added before, in `middleware`, on both
    /// eras and every transport (see [`middleware`](crate::server::middleware)): the last
    /// added runs first, as with axum's `Router::layer`.
    pub fn layer(mut self, middleware: impl Middleware) -> Self {
        // Kept outermost first, the order the engine runs them in.
        self.parts.config.middleware.insert(0, Arc::new(middleware));
        self
    }

    /// Carries announced changes (list changes, resource updates) over `bus`, for example to
    /// the `subscriptions/listen` streams and legacy sessions of every instance of a fleet;
    /// the default reaches this process only.
    pub fn change_bus(mut self, bus: Arc<dyn crate::server::ChangeBus>) -> Self {
        self.parts.config.change_bus = bus;
        self
    }

    /// OpenTelemetry instrumentation (feature `otel`; on by default through the global
    /// providers): pass [`None`] to turn it off.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: impl Into<Option<crate::otel::ServerTelemetry>>) -> Self {
        self.parts.config.telemetry = telemetry.into();
        self
    }

    /// Makes each multi round-trip flow complete at most once (see
    /// [`OneTimeStore`](crate::server::mrtr::OneTimeStore)): a round presented again after
    /// its flow completed is refused with the fixed request-state error.
    pub fn one_time_store(mut self, store: impl crate::server::mrtr::OneTimeStore) -> Self {
        self.parts.config.one_time = Some(Arc::new(store));
        self
    }

    /// The most `subscriptions/listen` streams open at once, over every connection
    /// (default [`DEFAULT_MAX_LISTEN_STREAMS`](crate::server::DEFAULT_MAX_LISTEN_STREAMS));
    /// one more is refused with a `-32603` error naming the limit.
    pub fn max_listen_streams(mut self, limit: usize) -> Self {
        self.parts.config.max_listen_streams = limit;
        self
    }

    /// Runs task tools ([`ToolSpec::task`]) with `tasks`: where tasks are kept, how long they
    /// live, how many run at once. A server with a task tool and no such call gets
    /// [`TaskConfig::default`] (tasks in memory).
    pub fn tasks(mut self, tasks: TaskConfig) -> Self {
        self.parts.config.tasks = Some(tasks);
        self
    }

    /// Limits on multi round-trip requests (questions per round, rounds per call).
    pub fn mrtr_limits(mut self, limits: MrtrLimits) -> Self {
        self.parts.config.mrtr = limits;
        self
    }

    /// Limits on requests in flight per connection and over every connection (see
    /// [`ConnectionLimits`](crate::server::connection::ConnectionLimits)).
    pub fn connection_limits(
        mut self,
        limits: crate::server::connection::ConnectionLimits,
    ) -> Self {
        self.parts.config.connections = limits;
        self
    }

    /// Limits on resource subscriptions (per `subscriptions/listen` stream and per legacy
    /// session), and the filter deciding which subscriber hears about which update (see
    /// [`SubscriptionPolicy`](crate::server::SubscriptionPolicy)).
    pub fn subscription_policy(mut self, policy: crate::server::SubscriptionPolicy) -> Self {
        self.parts.config.subscriptions = policy;
        self
    }

    /// Sets how 2025-era clients are served (default: 2025-11-25 and 2025-06-18, with the
    /// legacy shim); [`LegacyConfig::disabled`](crate::server::LegacyConfig::disabled)
    /// makes a modern-only server.
    pub fn legacy(mut self, legacy: crate::server::LegacyConfig) -> Self {
        self.parts.config.legacy = legacy;
        self
    }

    /// The version in `serverInfo`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.parts.config.info.version = version.into();
        self
    }

    /// A human-readable title in `serverInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.parts.config.info.title = Some(title.into());
        self
    }

    /// Everything `serverInfo` says (name, version, title, description, website, icons).
    pub fn info(mut self, info: Implementation) -> Self {
        self.parts.config.info = info;
        self
    }

    /// Guidance for the model, returned by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.parts.config.instructions = Some(instructions.into());
        self
    }

    /// Caching hints for cacheable results.
    pub fn cache_policy(mut self, cache: CachePolicy) -> Self {
        self.parts.config.cache = cache;
        self
    }

    /// Whether `tools/list`, `prompts/list`, `resources/list` and
    /// `resources/templates/list` leave out what the caller's token lacks the declared
    /// scopes for ([`ToolSpec::scopes`] and the like). Off by default: every caller sees
    /// everything, and calling what it may not use answers `insufficient_scope`, which
    /// tells a client what to ask for. On, each caller sees only what it can call, and
    /// those pages are marked private (not shared between callers).
    pub fn hide_unauthorized(mut self, hide: bool) -> Self {
        self.parts.hide_unauthorized = hide;
        self
    }

    /// Entries per page of the list methods (at least 1).
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.parts.page_size = page_size.max(1);
        self
    }

    /// Whether to declare the (deprecated) `logging` capability, which lets handlers send log
    /// messages to clients that opt in per request. On by default.
    pub fn logging(mut self, enabled: bool) -> Self {
        self.parts.enable.logging = enabled;
        self
    }

    /// Declares the `tools` capability even when no tool is registered yet (tools can be
    /// added at run time).
    pub fn enable_tools(mut self) -> Self {
        self.parts.enable.tools = true;
        self
    }

    /// Declares the `prompts` capability even when no prompt is registered yet.
    pub fn enable_prompts(mut self) -> Self {
        self.parts.enable.prompts = true;
        self
    }

    /// Declares the `resources` capability even when no resource is registered yet.
    pub fn enable_resources(mut self) -> Self {
        self.parts.enable.resources = true;
        self
    }

    /// Adds an entry to the registry, or records why it could not be added (all problems
    /// are reported together by [`build`](Self::build)).
    fn register<K: Registered>(mut self, entry: Result<Entry<K, S>, String>) -> Self {
        if let Err(e) = entry.and_then(|entry| K::insert(&mut self.parts.registry, entry)) {
            self.parts.errors.push(e);
        }
        self
    }

    /// How every tool's arguments are checked against its `inputSchema` before its handler
    /// runs (a tool's own [`ToolSpec::argument_check`] wins): by default a call whose
    /// arguments break the schema gets a tool error naming the argument, as the
    /// specification asks of input validation errors. See [`ArgumentCheck`].
    pub fn argument_check(mut self, check: ArgumentCheck) -> Self {
        self.parts.argument_check = check;
        self
    }

    /// Registers a tool. The handler is an async function whose parameters are extractors
    /// (see [`FromCall`](crate::server::extract::FromCall)) and whose return type implements [`IntoToolResult`]; the tool's
    /// `inputSchema` comes from its [`Args`](crate::server::extract::Args) parameter.
    pub fn tool<H, T>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoToolResult,
        T: 'static,
    {
        self.tool_spec(ToolSpec::new(name).description(description), handler)
    }

    /// Registers a tool described by a [`ToolSpec`] (title, annotations, explicit schemas...).
    pub fn tool_spec<H, T>(self, spec: ToolSpec, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoToolResult,
        T: 'static,
    {
        self.register(tool::tool_entry(spec, handler))
    }

    /// Registers a prompt; its arguments come from its [`Args`](crate::server::extract::Args) parameter.
    pub fn prompt<H, T>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoPromptResult,
        T: 'static,
    {
        self.prompt_spec(PromptSpec::new(name).description(description), handler)
    }

    /// Registers a prompt described by a [`PromptSpec`].
    pub fn prompt_spec<H, T>(self, spec: PromptSpec, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoPromptResult,
        T: 'static,
    {
        self.register(prompt::prompt_entry(spec, handler))
    }

    /// Registers a resource at a fixed URI.
    pub fn resource<H, T>(self, spec: impl Into<ResourceSpec>, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        self.register(resource::resource_entry(spec.into(), handler))
    }

    /// Registers a resource template (RFC 6570). Its handler's [`Args`](crate::server::extract::Args) parameter holds the
    /// matched variables.
    pub fn resource_template<H, T>(self, spec: impl Into<ResourceTemplateSpec>, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        self.register(resource::template_entry(spec.into(), handler))
    }

    /// Registers an MCP Apps view whose HTML the spec holds ([`ViewSpec::html`], or
    /// [`ViewSpec::html_file`]); point tools at it with [`ToolSpec::ui`]. The server then
    /// declares the `io.modelcontextprotocol/ui` extension, on both eras. A view that hosts
    /// would refuse (not `ui://`, a CSP source they drop, HTML that is not a document) makes
    /// [`build`](Self::build) fail with a message naming the rule (`apps/…`).
    ///
    /// [`ViewSpec::html`]: super::ViewSpec::html
    /// [`ViewSpec::html_file`]: super::ViewSpec::html_file
    #[cfg(feature = "apps")]
    pub fn view(self, spec: super::ViewSpec) -> Self {
        self.register(super::apps::view_entry(spec))
    }

    /// Registers an MCP Apps view whose HTML `handler` returns on every read (a resource
    /// handler: its parameters are extractors, it returns `String` or a `Result` of one).
    /// The content takes the view's MIME type and `_meta.ui`; see [`view`](Self::view).
    #[cfg(feature = "apps")]
    pub fn view_with<H, T>(self, spec: super::ViewSpec, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        let entry = spec
            .into_parts()
            .and_then(|parts| resource::resource_entry_unchecked(parts.spec, handler));
        self.register(entry)
    }

    /// Declares the MCP Apps extension even before any view is registered (for views added
    /// while the server runs, with [`McpHandler::add_view`](super::McpHandler::add_view)).
    /// Registering a view or a tool with [`ToolSpec::ui`] declares it
    /// anyway.
    #[cfg(feature = "apps")]
    pub fn enable_apps(mut self) -> Self {
        self.parts.apps.enabled = true;
        self
    }

    /// Whether tools with a view also carry the deprecated flat `_meta["ui/resourceUri"]`
    /// key next to `_meta.ui.resourceUri` (default on: some hosts still read only the flat
    /// key; the specification will drop it).
    #[cfg(feature = "apps")]
    pub fn apps_flat_key(mut self, write: bool) -> Self {
        self.parts.apps.flat_key = write;
        self
    }

    /// Serves `completion/complete` with `handler` and declares the `completions` capability.
    pub fn completion<F, Fut, R>(mut self, handler: F) -> Self
    where
        F: Fn(RequestContext, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoCompletion,
    {
        self.parts.completer = Some(Completer::new(handler));
        self
    }

    /// Builds the server, or reports every handler that could not be registered.
    pub fn build(self) -> Result<Server<McpHandler<S>>, RegistrationError> {
        let mut this = *self.parts;
        let name = this.config.info.name.clone();
        let sealer = match std::mem::replace(&mut this.sealing, Sealing::Off) {
            Sealing::Off => None,
            Sealing::Sealer(sealer) => Some(Ok(sealer)),
            Sealing::Default | Sealing::Keys(_) if name.trim().is_empty() => {
                this.errors.push(
                    "request-state sealing binds tokens to the server's name as their audience: give the server a name, or pass a sealer with an explicit audience".into(),
                );
                None
            }
            Sealing::Default => Some(StateSealer::builder(name.clone()).build()),
            Sealing::Keys(keys) => Some(StateSealer::builder(name.clone()).keys(keys).build()),
        }
        .transpose()
        .unwrap_or_else(|e| {
            this.errors.push(format!("request-state sealing: {e}"));
            None
        });
        if sealer.is_none() {
            this.errors.extend(this.registry.asking_without_sealing());
        }
        this.errors.extend(
            this.registry
                .tools
                .values()
                .filter_map(|t| t.def.unchecked(this.argument_check)),
        );
        #[cfg(feature = "apps")]
        let apps = {
            let registry = &this.registry;
            this.errors.extend(
                registry
                    .tools
                    .values()
                    .filter_map(|t| super::apps::check_tool(&t.def.tool, registry).err()),
            );
            let used = registry
                .tools
                .values()
                .any(|t| super::apps::has_tool_ui(&t.def.tool))
                || registry
                    .resources
                    .values()
                    .any(|r| super::apps::is_view(&r.def));
            if this.apps.flat_key {
                for entry in this.registry.tools.values_mut() {
                    super::apps::add_flat_key(&mut entry.def.tool);
                }
            }
            this.apps.enabled || used
        };
        if !this.errors.is_empty() {
            return Err(RegistrationError {
                messages: this.errors,
            });
        }
        let sealing = sealer.is_some();
        let mut config = this.config;
        if config.tasks.is_none() && this.registry.tools.values().any(|t| t.def.task.is_some()) {
            config.tasks = Some(TaskConfig::default());
        }
        config.request_state = sealer;
        let r = &this.registry;
        let caps = &mut config.capabilities;
        if this.enable.tools || !r.tools.is_empty() {
            caps.tools = Some(ToolsCapability::default().with_list_changed(true));
        }
        if this.enable.prompts || !r.prompts.is_empty() {
            caps.prompts = Some(PromptsCapability::default().with_list_changed(true));
        }
        if this.enable.resources || !r.resources.is_empty() || !r.templates.is_empty() {
            caps.resources = Some(
                ResourcesCapability::default()
                    .with_list_changed(true)
                    .with_subscribe(true),
            );
        }
        if this.completer.is_some() {
            caps.completions = Some(JsonObject::new());
        }
        if this.enable.logging {
            caps.logging = Some(JsonObject::new());
        }
        #[cfg(feature = "apps")]
        if apps {
            // The server's settings are empty (the extension defines none).
            caps.extensions.get_or_insert_default().insert(
                arctern_types::apps::EXTENSION_ID.to_owned(),
                serde_json::json!({}),
            );
        }
        // Scopes are checked before any other middleware sees the call: by a guard in front
        // of the others when there are any (or lists are filtered), otherwise by the handler
        // where it finds the entry (no middleware hop, no second lookup per request).
        let scope_guard = cfg!(all(feature = "auth", feature = "http"))
            && (this.hide_unauthorized || !config.middleware.is_empty());
        let handler = McpHandler {
            inner: Arc::new(HandlerInner {
                state: this.state,
                registry: ArcSwap::from_pointee(this.registry),
                write: Mutex::new(()),
                notifier: OnceLock::new(),
                completer: this.completer,
                page_size: this.page_size,
                sealing,
                scope_guard,
                argument_check: this.argument_check,
                #[cfg(feature = "apps")]
                apps_flat_key: this.apps.flat_key,
            }),
        };
        #[cfg(all(feature = "auth", feature = "http"))]
        if scope_guard {
            config.middleware.insert(
                0,
                Arc::new(super::scopes::ScopeGuard {
                    inner: handler.inner.clone(),
                    hide_unauthorized: this.hide_unauthorized,
                }),
            );
        }
        let server = Server::new(handler, config);
        let _ = server
            .handler()
            .inner
            .notifier
            .set(server.change_notifier());
        Ok(server)
    }
}
