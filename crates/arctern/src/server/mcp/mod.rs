//! `McpServer`: a high-level server built from plain async functions.

mod completion;
mod extract;
mod handler_fn;
mod prompt;
mod resource;
mod tool;
mod uri_template;

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use arctern_types::ErrorObject;
use arctern_types::capabilities::{PromptsCapability, ResourcesCapability, ToolsCapability};
use arctern_types::completion::{CompleteRequestParams, CompleteResult};
use arctern_types::implementation::Implementation;
use arctern_types::meta::JsonObject;
use arctern_types::prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsRequestParams, ListPromptsResult,
};
use arctern_types::resources::{
    ListResourceTemplatesRequestParams, ListResourceTemplatesResult, ListResourcesRequestParams,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use arctern_types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};
use base64::Engine as _;
use indexmap::IndexMap;
use serde_json::Value;

pub use completion::{CompletionRequest, IntoCompletion};
pub use extract::{
    Args, CallKind, CallParts, Describe, Extracted, Form, FromCall, RawArgs, Rejection, State,
    schema_for,
};
pub use handler_fn::HandlerFn;
pub use prompt::{IntoPromptResult, PromptSpec};
pub use resource::{Blob, IntoReadResult, ResourceSpec, ResourceTemplateSpec};
pub use tool::{IntoToolResult, Json, ToolSpec};
pub use uri_template::{UriTemplate, UriTemplateError};

use completion::Completer;
use prompt::PromptEntry;
use resource::{ResourceEntry, TemplateEntry};
use tool::ToolEntry;

use super::config::{CachePolicy, PrincipalHook, ServerConfig};
use super::context::RequestContext;
use super::engine::Server;
use super::handler::{Handler, HandlerResult, resource_not_found};
use super::mirror::MirroredParam;
use super::mrtr::InputState;
use super::mrtr::MrtrLimits;
use super::outcome::Outcome;
use super::prepared::{Preparable, PreparedResult};
use super::subscriptions::ChangeNotifier;
use crate::state::{KeyRing, StateSealer};

/// Default number of entries per page of `tools/list`, `prompts/list`, `resources/list` and
/// `resources/templates/list`.
pub const DEFAULT_PAGE_SIZE: usize = 500;

/// A handler could not be registered (for example it mixes the two multi round-trip forms,
/// has an invalid name, or a duplicate one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    messages: Vec<String>,
}

impl RegistrationError {
    fn new(message: String) -> Self {
        RegistrationError {
            messages: vec![message],
        }
    }

    /// Each problem found.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.messages.as_slice() {
            [one] => write!(f, "cannot register {one}"),
            many => {
                write!(f, "cannot register {} handlers:", many.len())?;
                for m in many {
                    write!(f, "\n  - {m}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

/// Checks a tool or prompt name: 1 to 128 characters, none of them whitespace or control
/// characters.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err("a name must have 1 to 128 characters".into());
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a name may not contain whitespace or control characters".into());
    }
    Ok(())
}

/// Builds a server from plain async functions: tools, prompts, resources and resource
/// templates whose parameters are extractors (see [`FromCall`]).
///
/// ```no_run
/// use arctern::server::{McpServer, Args};
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
/// `S` is shared state handed to handlers through the [`State`] extractor; set it with
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

    /// Limits on multi round-trip requests (questions per round, rounds per call).
    pub fn mrtr_limits(mut self, limits: MrtrLimits) -> Self {
        self.parts.config.mrtr = limits;
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

    /// Registers a tool. The handler is an async function whose parameters are extractors
    /// (see [`FromCall`]) and whose return type implements [`IntoToolResult`]; the tool's
    /// `inputSchema` comes from its [`Args`] parameter.
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
    pub fn tool_spec<H, T>(mut self, spec: ToolSpec, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoToolResult,
        T: 'static,
    {
        match tool::tool_entry(spec, handler) {
            Ok(entry) => {
                if let Err(e) = self.parts.registry.insert_tool(entry) {
                    self.parts.errors.push(e);
                }
            }
            Err(e) => self.parts.errors.push(e),
        }
        self
    }

    /// Registers a prompt; its arguments come from its [`Args`] parameter.
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
    pub fn prompt_spec<H, T>(mut self, spec: PromptSpec, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoPromptResult,
        T: 'static,
    {
        match prompt::prompt_entry(spec, handler) {
            Ok(entry) => {
                if let Err(e) = self.parts.registry.insert_prompt(entry) {
                    self.parts.errors.push(e);
                }
            }
            Err(e) => self.parts.errors.push(e),
        }
        self
    }

    /// Registers a resource at a fixed URI.
    pub fn resource<H, T>(self, spec: impl Into<ResourceSpec>, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        let mut this = self;
        match resource::resource_entry(spec.into(), handler) {
            Ok(entry) => {
                if let Err(e) = this.parts.registry.insert_resource(entry) {
                    this.parts.errors.push(e);
                }
            }
            Err(e) => this.parts.errors.push(e),
        }
        this
    }

    /// Registers a resource template (RFC 6570). Its handler's [`Args`] parameter holds the
    /// matched variables.
    pub fn resource_template<H, T>(self, spec: impl Into<ResourceTemplateSpec>, handler: H) -> Self
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        let mut this = self;
        match resource::template_entry(spec.into(), handler) {
            Ok(entry) => this.parts.registry.templates.push(entry),
            Err(e) => this.parts.errors.push(e),
        }
        this
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
        if !this.errors.is_empty() {
            return Err(RegistrationError {
                messages: this.errors,
            });
        }
        let sealing = sealer.is_some();
        let mut config = this.config;
        config.request_state = sealer;
        let r = &this.registry;
        let caps = &mut config.capabilities;
        if this.enable.tools || !r.tools.is_empty() {
            caps.tools = Some(ToolsCapability {
                list_changed: Some(true),
                ..Default::default()
            });
        }
        if this.enable.prompts || !r.prompts.is_empty() {
            caps.prompts = Some(PromptsCapability {
                list_changed: Some(true),
                ..Default::default()
            });
        }
        if this.enable.resources || !r.resources.is_empty() || !r.templates.is_empty() {
            caps.resources = Some(ResourcesCapability {
                list_changed: Some(true),
                subscribe: Some(true),
                ..Default::default()
            });
        }
        if this.completer.is_some() {
            caps.completions = Some(JsonObject::new());
        }
        if this.enable.logging {
            caps.logging = Some(JsonObject::new());
        }
        let handler = McpHandler {
            inner: Arc::new(HandlerInner {
                state: this.state,
                registry: ArcSwap::from_pointee(this.registry),
                write: Mutex::new(()),
                notifier: OnceLock::new(),
                completer: this.completer,
                page_size: this.page_size,
                sealing,
            }),
        };
        let server = Server::new(handler, config);
        let _ = server
            .handler()
            .inner
            .notifier
            .set(server.change_notifier());
        Ok(server)
    }
}

/// The registries of an [`McpServer`]: a snapshot read without locks on every call and
/// replaced whole when something is added or removed.
struct Registry<S> {
    tools: IndexMap<String, ToolEntry<S>>,
    prompts: IndexMap<String, PromptEntry<S>>,
    resources: IndexMap<String, ResourceEntry<S>>,
    templates: Vec<TemplateEntry<S>>,
    /// The list pages of this snapshot, serialized on first use.
    lists: ListCache,
}

impl<S> Default for Registry<S> {
    fn default() -> Self {
        Registry {
            tools: IndexMap::new(),
            prompts: IndexMap::new(),
            resources: IndexMap::new(),
            templates: Vec::new(),
            lists: ListCache::default(),
        }
    }
}

impl<S> Clone for Registry<S> {
    /// A copy to change and publish as the next snapshot, so with no cached pages.
    fn clone(&self) -> Self {
        Registry {
            tools: self.tools.clone(),
            prompts: self.prompts.clone(),
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            lists: ListCache::default(),
        }
    }
}

/// The pages of every list of one registry snapshot, each serialized when first asked for
/// and then shared by every response that sends it. A snapshot never changes once
/// published, and every change publishes a new one (with an empty cache), so a cached page
/// is never stale.
#[derive(Default)]
struct ListCache {
    tools: PageCache<ListToolsResult>,
    prompts: PageCache<ListPromptsResult>,
    resources: PageCache<ListResourcesResult>,
    templates: PageCache<ListResourceTemplatesResult>,
}

/// The pages of one list, by index (the page starting at `index × page size`).
struct PageCache<R> {
    /// One slot per page, made on first use: the number of pages is fixed by then.
    pages: OnceLock<Box<[OnceLock<PreparedResult<R>>]>>,
}

impl<R> Default for PageCache<R> {
    fn default() -> Self {
        PageCache {
            pages: OnceLock::new(),
        }
    }
}

impl<S> Registry<S> {
    /// Handlers that ask typed questions, for a server without sealing.
    fn asking_without_sealing(&self) -> Vec<String> {
        let why = "it asks typed questions, which need request-state sealing, and this server has it turned off";
        let tools = self
            .tools
            .values()
            .filter(|e| e.asks)
            .map(|e| format!("tool {:?}: {why}", e.tool.name));
        let prompts = self
            .prompts
            .values()
            .filter(|e| e.asks)
            .map(|e| format!("prompt {:?}: {why}", e.prompt.name));
        let resources = self
            .resources
            .values()
            .filter(|e| e.asks)
            .map(|e| format!("resource {:?}: {why}", e.resource.uri));
        let templates = self
            .templates
            .iter()
            .filter(|e| e.asks)
            .map(|e| format!("resource template {:?}: {why}", e.template.uri_template));
        tools
            .chain(prompts)
            .chain(resources)
            .chain(templates)
            .collect()
    }

    fn insert_tool(&mut self, entry: ToolEntry<S>) -> Result<(), String> {
        let name = entry.tool.name.clone();
        if self.tools.contains_key(&name) {
            return Err(format!(
                "tool {name:?}: a tool with this name is already registered"
            ));
        }
        self.tools.insert(name, entry);
        Ok(())
    }

    fn insert_prompt(&mut self, entry: PromptEntry<S>) -> Result<(), String> {
        let name = entry.prompt.name.clone();
        if self.prompts.contains_key(&name) {
            return Err(format!(
                "prompt {name:?}: a prompt with this name is already registered"
            ));
        }
        self.prompts.insert(name, entry);
        Ok(())
    }

    fn insert_resource(&mut self, entry: ResourceEntry<S>) -> Result<(), String> {
        let uri = entry.resource.uri.clone();
        if self.resources.contains_key(&uri) {
            return Err(format!(
                "resource {uri:?}: a resource with this URI is already registered"
            ));
        }
        self.resources.insert(uri, entry);
        Ok(())
    }
}

/// The [`Handler`] an [`McpServer`] builds. Reach it with [`Server::handler`] to add or
/// remove tools, prompts and resources while the server runs; open
/// `subscriptions/listen` streams are told.
pub struct McpHandler<S = ()> {
    inner: Arc<HandlerInner<S>>,
}

impl<S> Clone for McpHandler<S> {
    fn clone(&self) -> Self {
        McpHandler {
            inner: self.inner.clone(),
        }
    }
}

struct HandlerInner<S> {
    state: S,
    registry: ArcSwap<Registry<S>>,
    write: Mutex<()>,
    notifier: OnceLock<ChangeNotifier>,
    completer: Option<Completer>,
    page_size: usize,
    /// Whether request state is sealed (handlers asking typed questions need it).
    sealing: bool,
}

impl<S: Clone + Send + Sync + 'static> McpHandler<S> {
    fn check_sealing(&self, asks: bool, what: String) -> Result<(), RegistrationError> {
        if asks && !self.inner.sealing {
            return Err(RegistrationError::new(format!(
                "{what}: it asks typed questions, which need request-state sealing, and this server has it turned off"
            )));
        }
        Ok(())
    }

    fn update(
        &self,
        change: impl FnOnce(&mut Registry<S>) -> Result<bool, String>,
    ) -> Result<bool, RegistrationError> {
        let _guard = self.inner.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = Registry::clone(&self.inner.registry.load());
        let changed = change(&mut next).map_err(RegistrationError::new)?;
        if changed {
            self.inner.registry.store(Arc::new(next));
        }
        Ok(changed)
    }

    fn notifier(&self) -> Option<&ChangeNotifier> {
        self.inner.notifier.get()
    }

    /// Adds a tool while the server runs.
    pub fn add_tool<H, T>(&self, spec: ToolSpec, handler: H) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoToolResult,
        T: 'static,
    {
        let entry = tool::tool_entry(spec, handler).map_err(RegistrationError::new)?;
        self.check_sealing(entry.asks, format!("tool {:?}", entry.tool.name))?;
        self.update(|r| r.insert_tool(entry).map(|()| true))?;
        if let Some(n) = self.notifier() {
            n.tools_changed();
        }
        Ok(())
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self
            .update(|r| Ok(r.tools.shift_remove(name).is_some()))
            .unwrap_or(false);
        if removed && let Some(n) = self.notifier() {
            n.tools_changed();
        }
        removed
    }

    /// Adds a prompt while the server runs.
    pub fn add_prompt<H, T>(&self, spec: PromptSpec, handler: H) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoPromptResult,
        T: 'static,
    {
        let entry = prompt::prompt_entry(spec, handler).map_err(RegistrationError::new)?;
        self.check_sealing(entry.asks, format!("prompt {:?}", entry.prompt.name))?;
        self.update(|r| r.insert_prompt(entry).map(|()| true))?;
        if let Some(n) = self.notifier() {
            n.prompts_changed();
        }
        Ok(())
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self
            .update(|r| Ok(r.prompts.shift_remove(name).is_some()))
            .unwrap_or(false);
        if removed && let Some(n) = self.notifier() {
            n.prompts_changed();
        }
        removed
    }

    /// Adds a resource while the server runs.
    pub fn add_resource<H, T>(
        &self,
        spec: impl Into<ResourceSpec>,
        handler: H,
    ) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        let entry =
            resource::resource_entry(spec.into(), handler).map_err(RegistrationError::new)?;
        self.update(|r| r.insert_resource(entry).map(|()| true))?;
        if let Some(n) = self.notifier() {
            n.resources_changed();
        }
        Ok(())
    }

    /// Removes a resource; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self
            .update(|r| Ok(r.resources.shift_remove(uri).is_some()))
            .unwrap_or(false);
        if removed && let Some(n) = self.notifier() {
            n.resources_changed();
        }
        removed
    }

    /// Names of the registered tools, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.registry.load().tools.keys().cloned().collect()
    }

    /// Names of the registered prompts, in listing order.
    pub fn prompt_names(&self) -> Vec<String> {
        self.inner.registry.load().prompts.keys().cloned().collect()
    }

    /// The shared state.
    pub fn state(&self) -> &S {
        &self.inner.state
    }

    /// Where the page at `cursor` of a list of `total` entries starts and ends.
    fn page_bounds(
        &self,
        total: usize,
        cursor: Option<&str>,
    ) -> Result<(usize, usize), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(c) => decode_cursor(c)
                .filter(|s| *s <= total)
                .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
        };
        Ok((start, (start + self.inner.page_size).min(total)))
    }

    fn page<T: Clone>(
        &self,
        items: impl ExactSizeIterator<Item = T>,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let total = items.len();
        let (start, end) = self.page_bounds(total, cursor)?;
        let page: Vec<T> = items.skip(start).take(end - start).collect();
        let next = (end < total).then(|| encode_cursor(end));
        Ok((page, next))
    }

    /// The page at `cursor`, from `cache` when it starts where this server's pages start (the
    /// cursors it hands out always do), built and cached on first use.
    fn prepared_page<'a, T, R>(
        &self,
        cache: &PageCache<R>,
        items: impl ExactSizeIterator<Item = &'a T> + Clone,
        cursor: Option<&str>,
        make: impl Fn(Vec<T>, Option<String>) -> R,
    ) -> HandlerResult<PreparedResult<R>>
    where
        T: Clone + 'a,
        R: Preparable + Clone,
    {
        let total = items.len();
        let (start, end) = self.page_bounds(total, cursor)?;
        let build = || {
            let page = items
                .clone()
                .skip(start)
                .take(end - start)
                .cloned()
                .collect();
            make(page, (end < total).then(|| encode_cursor(end)))
        };
        let size = self.inner.page_size;
        let slot = (start % size == 0)
            .then(|| {
                let pages = cache.pages.get_or_init(|| {
                    (0..total.div_ceil(size).max(1))
                        .map(|_| OnceLock::new())
                        .collect()
                });
                pages.get(start / size)
            })
            .flatten();
        // A cursor a client made up (any offset up to the end is valid) is served uncached.
        let Some(slot) = slot else {
            return Ok(PreparedResult::from(build()));
        };
        let page = slot.get_or_init(|| {
            PreparedResult::shared(build()).unwrap_or_else(|e| {
                tracing::error!(error = %e, "could not serialize a list page; sending it uncached");
                PreparedResult::from(build())
            })
        });
        Ok(page.clone())
    }

    /// A page of `tools/list`, cached per registry snapshot.
    fn tools_page(&self, cursor: Option<&str>) -> HandlerResult<PreparedResult<ListToolsResult>> {
        let registry = self.inner.registry.load();
        self.prepared_page(
            &registry.lists.tools,
            registry.tools.values().map(|e| &e.tool),
            cursor,
            |tools, next| ListToolsResult {
                next_cursor: next,
                ..ListToolsResult::new(tools)
            },
        )
    }

    /// A page of `prompts/list`, cached per registry snapshot.
    fn prompts_page(
        &self,
        cursor: Option<&str>,
    ) -> HandlerResult<PreparedResult<ListPromptsResult>> {
        let registry = self.inner.registry.load();
        self.prepared_page(
            &registry.lists.prompts,
            registry.prompts.values().map(|e| &e.prompt),
            cursor,
            |prompts, next| ListPromptsResult {
                next_cursor: next,
                ..ListPromptsResult::new(prompts)
            },
        )
    }

    /// A page of `resources/list`, cached per registry snapshot.
    fn resources_page(
        &self,
        cursor: Option<&str>,
    ) -> HandlerResult<PreparedResult<ListResourcesResult>> {
        let registry = self.inner.registry.load();
        self.prepared_page(
            &registry.lists.resources,
            registry.resources.values().map(|e| &e.resource),
            cursor,
            |resources, next| ListResourcesResult {
                next_cursor: next,
                ..ListResourcesResult::new(resources)
            },
        )
    }

    /// A page of `resources/templates/list`, cached per registry snapshot.
    fn templates_page(
        &self,
        cursor: Option<&str>,
    ) -> HandlerResult<PreparedResult<ListResourceTemplatesResult>> {
        let registry = self.inner.registry.load();
        self.prepared_page(
            &registry.lists.templates,
            registry.templates.iter().map(|e| &e.template),
            cursor,
            |templates, next| ListResourceTemplatesResult {
                next_cursor: next,
                ..ListResourceTemplatesResult::new(templates)
            },
        )
    }
}

const CURSOR_PREFIX: &str = "arctern.page.";

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    text.strip_prefix(CURSOR_PREFIX)?.parse().ok()
}

impl<S: Clone + Send + Sync + 'static> Handler for McpHandler<S> {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> HandlerResult<ListToolsResult> {
        let registry = self.inner.registry.load();
        let (tools, next) = self.page(
            registry.tools.values().map(|e| &e.tool),
            params.cursor.as_deref(),
        )?;
        let mut result = ListToolsResult::new(tools.into_iter().cloned().collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_tools_prepared(
        &self,
        _ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> HandlerResult<PreparedResult<ListToolsResult>> {
        self.tools_page(params.cursor.as_deref())
    }

    async fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let handler = {
            let registry = self.inner.registry.load();
            match registry.tools.get(&params.name) {
                Some(entry) => entry.handler.clone(),
                None => {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown tool: {}",
                        params.name
                    ))
                    .with_data(serde_json::json!({ "name": params.name })));
                }
            }
        };
        let input = InputState::new(&ctx, params.input_responses, params.request_state);
        let parts = CallParts::new(ctx, CallKind::Tool, params.name, params.arguments, input);
        handler.call(parts, self.inner.state.clone()).await
    }

    async fn list_prompts(
        &self,
        _ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> HandlerResult<ListPromptsResult> {
        let registry = self.inner.registry.load();
        let (prompts, next) = self.page(
            registry.prompts.values().map(|e| &e.prompt),
            params.cursor.as_deref(),
        )?;
        let mut result = ListPromptsResult::new(prompts.into_iter().cloned().collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_prompts_prepared(
        &self,
        _ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> HandlerResult<PreparedResult<ListPromptsResult>> {
        self.prompts_page(params.cursor.as_deref())
    }

    async fn get_prompt(
        &self,
        ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> HandlerResult<Outcome<GetPromptResult>> {
        let handler = {
            let registry = self.inner.registry.load();
            match registry.prompts.get(&params.name) {
                Some(entry) => entry.handler.clone(),
                None => {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown prompt: {}",
                        params.name
                    ))
                    .with_data(serde_json::json!({ "name": params.name })));
                }
            }
        };
        let arguments: Option<JsonObject> = params.arguments.map(|args| {
            args.into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect()
        });
        let input = InputState::new(&ctx, params.input_responses, params.request_state);
        let parts = CallParts::new(ctx, CallKind::Prompt, params.name, arguments, input);
        handler.call(parts, self.inner.state.clone()).await
    }

    async fn list_resources(
        &self,
        _ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> HandlerResult<ListResourcesResult> {
        let registry = self.inner.registry.load();
        let (resources, next) = self.page(
            registry.resources.values().map(|e| &e.resource),
            params.cursor.as_deref(),
        )?;
        let mut result = ListResourcesResult::new(resources.into_iter().cloned().collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resources_prepared(
        &self,
        _ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> HandlerResult<PreparedResult<ListResourcesResult>> {
        self.resources_page(params.cursor.as_deref())
    }

    async fn list_resource_templates(
        &self,
        _ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> HandlerResult<ListResourceTemplatesResult> {
        let registry = self.inner.registry.load();
        let (templates, next) = self.page(
            registry.templates.iter().map(|e| &e.template),
            params.cursor.as_deref(),
        )?;
        let mut result = ListResourceTemplatesResult::new(templates.into_iter().cloned().collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates_prepared(
        &self,
        _ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> HandlerResult<PreparedResult<ListResourceTemplatesResult>> {
        self.templates_page(params.cursor.as_deref())
    }

    async fn read_resource(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        let (handler, mime, arguments) = {
            let registry = self.inner.registry.load();
            if let Some(entry) = registry.resources.get(&params.uri) {
                (
                    entry.handler.clone(),
                    entry.resource.mime_type.clone(),
                    None,
                )
            } else if let Some((entry, vars)) = registry
                .templates
                .iter()
                .find_map(|t| t.matcher.matches(&params.uri).map(|vars| (t, vars)))
            {
                let vars: JsonObject = vars
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                (
                    entry.handler.clone(),
                    entry.template.mime_type.clone(),
                    Some(vars),
                )
            } else {
                return Err(resource_not_found(&params.uri));
            }
        };
        let input = InputState::new(&ctx, params.input_responses, params.request_state);
        let parts = CallParts::new(ctx, CallKind::Resource, params.uri, arguments, input);
        handler.call(parts, self.inner.state.clone(), mime).await
    }

    async fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> HandlerResult<CompleteResult> {
        match &self.inner.completer {
            Some(completer) => completer.complete(ctx, params).await,
            None => Err(ErrorObject::method_not_found("completion/complete")),
        }
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<[MirroredParam]>> {
        self.inner.registry.load().tools.get(tool)?.mirrored.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::prepared::PreparedForm;

    fn handler(tools: usize) -> McpHandler {
        let mut server = McpServer::new("cache").page_size(2);
        for i in 0..tools {
            server = server.tool(format!("t{i}"), "A tool.", || async { "ok" });
        }
        server.build().unwrap().handler().clone()
    }

    fn shared(page: PreparedResult<ListToolsResult>) -> Arc<crate::server::prepared::Shared> {
        match page.into_form() {
            PreparedForm::Shared(s) => s,
            PreparedForm::Value(v) => panic!("not cached: {v:?}"),
        }
    }

    fn names(page: PreparedResult<ListToolsResult>) -> (Vec<String>, Option<String>) {
        let page = page.into_result().unwrap();
        let names = page.tools.into_iter().map(|t| t.name).collect();
        (names, page.next_cursor)
    }

    #[test]
    fn pages_are_cached_per_snapshot() {
        let h = handler(5);
        let first = shared(h.tools_page(None).unwrap());
        assert!(Arc::ptr_eq(&first, &shared(h.tools_page(None).unwrap())));
        let (page, next) = names(h.tools_page(None).unwrap());
        assert_eq!(
            (page, next.clone()),
            (vec!["t0".into(), "t1".into()], Some(encode_cursor(2)))
        );
        let second = shared(h.tools_page(next.as_deref()).unwrap());
        assert!(Arc::ptr_eq(
            &second,
            &shared(h.tools_page(next.as_deref()).unwrap())
        ));
        let last = names(h.tools_page(Some(&encode_cursor(4))).unwrap());
        assert_eq!(last, (vec!["t4".to_owned()], None));

        // A change publishes a new snapshot, whose pages are built afresh.
        h.add_tool(ToolSpec::new("late").description("Late."), || async {
            "ok"
        })
        .unwrap();
        assert!(!Arc::ptr_eq(&first, &shared(h.tools_page(None).unwrap())));
        let last = names(h.tools_page(Some(&encode_cursor(4))).unwrap());
        assert_eq!(last, (vec!["t4".to_owned(), "late".to_owned()], None));
        assert!(h.remove_tool("t0"));
        assert_eq!(names(h.tools_page(None).unwrap()).0, ["t1", "t2"]);
    }

    #[test]
    fn odd_cursors_and_empty_lists() {
        let h = handler(5);
        // An offset between pages is valid, and served without touching the cache.
        let odd = h.tools_page(Some(&encode_cursor(1))).unwrap();
        assert!(!odd.is_shared());
        assert_eq!(
            names(odd),
            (vec!["t1".into(), "t2".into()], Some(encode_cursor(3)))
        );
        let end = h.tools_page(Some(&encode_cursor(5))).unwrap();
        assert_eq!(names(end), (vec![], None));
        assert!(h.tools_page(Some(&encode_cursor(6))).is_err());
        assert!(h.tools_page(Some("garbage")).is_err());

        let empty = handler(0);
        let page = empty.tools_page(None).unwrap();
        assert!(page.is_shared());
        assert_eq!(names(page), (vec![], None));
    }
}
