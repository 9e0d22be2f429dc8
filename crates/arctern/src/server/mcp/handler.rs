//! [`McpHandler`]: the [`Handler`] an [`McpServer`](super::McpServer) builds, and the
//! registry changes it allows while the server runs.

use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use arctern_types::ErrorObject;
use arctern_types::completion::{CompleteRequestParams, CompleteResult};
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
use serde_json::Value;

use super::completion::Completer;
use super::entry::Entry;
use super::prompt::Prompts;
use super::registry::{Registered, Registry, unsealed};
use super::resource::{Resources, Templates};
use super::tool::Tools;
use super::{
    ArgumentCheck, HandlerFn, IntoPromptResult, IntoReadResult, IntoToolResult, PromptSpec,
    RegistrationError, ResourceSpec, ResourceTemplateSpec, ToolSpec, prompt, resource, tool,
};
use crate::Outcome;
use crate::server::context::RequestContext;
use crate::server::extract::{CallKind, CallParts};
use crate::server::handler::{Handler, HandlerResult, resource_not_found};
use crate::server::listed::Listed;
use crate::server::mirror::MirroredParam;
use crate::server::mrtr::InputState;
use crate::server::subscriptions::ChangeNotifier;
use crate::server::tasks::{self, TaskSeat, TaskSupport};

/// The [`Handler`] an [`McpServer`](super::McpServer) builds. Reach it with
/// [`Server::handler`](crate::server::Server::handler) to add or remove tools, prompts and
/// resources while the server runs; open `subscriptions/listen` streams and legacy sessions
/// are told.
pub struct McpHandler<S = ()> {
    pub(super) inner: Arc<HandlerInner<S>>,
}

impl<S> Clone for McpHandler<S> {
    fn clone(&self) -> Self {
        McpHandler {
            inner: self.inner.clone(),
        }
    }
}

impl<S> std::fmt::Debug for McpHandler<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registry = self.inner.registry.load();
        f.debug_struct("McpHandler")
            .field("tools", &registry.tools.len())
            .field("prompts", &registry.prompts.len())
            .field("resources", &registry.resources.len())
            .field("templates", &registry.templates.len())
            .finish_non_exhaustive()
    }
}

pub(super) struct HandlerInner<S> {
    pub(super) state: S,
    pub(super) registry: ArcSwap<Registry<S>>,
    /// Serializes registry changes (readers never wait).
    pub(super) write: Mutex<()>,
    pub(super) notifier: OnceLock<ChangeNotifier>,
    pub(super) completer: Option<Completer>,
    pub(super) page_size: usize,
    /// Whether request state is sealed (handlers asking typed questions need it).
    pub(super) sealing: bool,
    /// Whether a [`ScopeGuard`](super::scopes::ScopeGuard) in front of the other middleware
    /// checks declared scopes; otherwise the handler checks them where it finds the entry.
    pub(super) scope_guard: bool,
    /// How tools' arguments are checked, unless a tool says otherwise.
    pub(super) argument_check: ArgumentCheck,
    /// Whether tools with a view carry the flat `ui/resourceUri` key too.
    #[cfg(feature = "apps")]
    pub(super) apps_flat_key: bool,
}

impl<S> McpHandler<S> {
    /// Refuses a call to an entry declaring `scopes` that the caller's token lacks, unless
    /// the scope guard already checked (see [`HandlerInner::scope_guard`]).
    fn admit(
        &self,
        scopes: &[String],
        ctx: &RequestContext,
        target: &str,
    ) -> Result<(), ErrorObject> {
        if self.inner.scope_guard {
            return Ok(());
        }
        super::scopes::admit(scopes, ctx, target)
    }
}

impl<S: Clone + Send + Sync + 'static> McpHandler<S> {
    fn check_sealing(&self, asks: bool, what: String) -> Result<(), RegistrationError> {
        if asks && !self.inner.sealing {
            return Err(RegistrationError::new(unsealed(&what)));
        }
        Ok(())
    }

    /// Publishes a changed copy of the registry; `change` says whether anything changed.
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

    fn notify(&self, what: fn(&ChangeNotifier)) {
        if let Some(notifier) = self.inner.notifier.get() {
            what(notifier);
        }
    }

    /// Registers an entry while the server runs: checks it, publishes the changed registry,
    /// and tells open streams and sessions that the list changed.
    fn add<K: Registered>(
        &self,
        entry: Result<Entry<K, S>, String>,
    ) -> Result<(), RegistrationError> {
        let entry = entry.map_err(RegistrationError::new)?;
        self.check_sealing(entry.asks, K::label(&entry.def))?;
        self.update(|r| K::insert(r, entry).map(|()| true))?;
        self.notify(K::announce);
        Ok(())
    }

    /// Removes the entry with this key while the server runs; returns whether it existed.
    fn remove<K: Registered>(&self, key: &str) -> bool {
        let removed = self.update(|r| Ok(K::remove(r, key))).unwrap_or(false);
        if removed {
            self.notify(K::announce);
        }
        removed
    }

    /// Adds a tool while the server runs.
    pub fn add_tool<H, T>(&self, spec: ToolSpec, handler: H) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoToolResult,
        T: 'static,
    {
        let entry = tool::tool_entry(spec, handler).and_then(|entry| {
            match entry.def.unchecked(self.inner.argument_check) {
                Some(why) => Err(why),
                None => Ok(entry),
            }
        });
        #[cfg(feature = "apps")]
        let entry = entry.and_then(|mut entry| {
            super::apps::check_tool(&entry.def.tool, &self.inner.registry.load())?;
            if self.inner.apps_flat_key {
                super::apps::add_flat_key(&mut entry.def.tool);
            }
            Ok(entry)
        });
        self.add(entry)
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove::<Tools>(name)
    }

    /// Adds a prompt while the server runs.
    pub fn add_prompt<H, T>(&self, spec: PromptSpec, handler: H) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoPromptResult,
        T: 'static,
    {
        self.add(prompt::prompt_entry(spec, handler))
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove::<Prompts>(name)
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
        self.add(resource::resource_entry(spec.into(), handler))
    }

    /// Adds an MCP Apps view while the server runs, with the checks
    /// [`McpServer::view`](super::McpServer::view) makes (declare the extension from the
    /// start with [`McpServer::enable_apps`](super::McpServer::enable_apps)). Remove it with
    /// [`remove_resource`](Self::remove_resource).
    #[cfg(feature = "apps")]
    pub fn add_view(&self, spec: super::ViewSpec) -> Result<(), RegistrationError> {
        self.add(super::apps::view_entry(spec))
    }

    /// Removes a resource; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove::<Resources>(uri)
    }

    /// Adds a resource template while the server runs.
    pub fn add_resource_template<H, T>(
        &self,
        spec: impl Into<ResourceTemplateSpec>,
        handler: H,
    ) -> Result<(), RegistrationError>
    where
        H: HandlerFn<T, S>,
        H::Output: IntoReadResult,
        T: 'static,
    {
        self.add(resource::template_entry(spec.into(), handler))
    }

    /// Removes a resource template by its URI template; returns whether it existed.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.remove::<Templates>(uri_template)
    }

    /// Names of the registered tools, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.registry.load().tools.keys().cloned().collect()
    }

    /// Every OAuth scope the registered tools, prompts and resources declare, each once:
    /// what a protected resource advertises in `scopes_supported`.
    pub fn declared_scopes(&self) -> Vec<String> {
        self.inner.registry.load().declared_scopes()
    }

    /// Names of the registered prompts, in listing order.
    pub fn prompt_names(&self) -> Vec<String> {
        self.inner.registry.load().prompts.keys().cloned().collect()
    }

    /// The shared state.
    pub fn state(&self) -> &S {
        &self.inner.state
    }
}

impl<S: Clone + Send + Sync + 'static> Handler for McpHandler<S> {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        let registry = self.inner.registry.load();
        registry.tools_page(self.inner.page_size, params.cursor.as_deref())
    }

    async fn call_tool(
        &self,
        ctx: RequestContext,
        mut params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let (handler, support) = {
            let registry = self.inner.registry.load();
            match registry.tools.get(&params.name) {
                Some(entry) => {
                    self.admit(&entry.scopes, &ctx, &params.name)?;
                    if let Some(refusal) = entry
                        .def
                        .refuse_arguments(self.inner.argument_check, &mut params.arguments)
                    {
                        return refusal;
                    }
                    (entry.handler.clone(), entry.def.task)
                }
                None => {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown tool: {}",
                        params.name
                    ))
                    .with_data(serde_json::json!({ "name": params.name })));
                }
            }
        };
        let seat = match (support, ctx.inner.tasks.as_ref()) {
            (Some(_), Some(access)) if access.declared => Some(TaskSeat {
                runtime: access.runtime.clone(),
                live: access.runtime.prepare(
                    access.principal.clone(),
                    access.caller.clone(),
                    params.name.clone(),
                )?,
            }),
            (Some(TaskSupport::Required), _) => return Err(tasks::missing_extension()),
            _ => None,
        };
        let input = InputState::new(params.input_responses, params.request_state);
        let mut parts = CallParts::new(ctx, CallKind::Tool, params.name, params.arguments, input);
        parts.task = seat;
        handler.call(parts, self.inner.state.clone(), None).await
    }

    async fn list_prompts(
        &self,
        _ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> HandlerResult<Listed<ListPromptsResult>> {
        let registry = self.inner.registry.load();
        registry.prompts_page(self.inner.page_size, params.cursor.as_deref())
    }

    async fn get_prompt(
        &self,
        ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> HandlerResult<Outcome<GetPromptResult>> {
        let handler = {
            let registry = self.inner.registry.load();
            match registry.prompts.get(&params.name) {
                Some(entry) => {
                    self.admit(&entry.scopes, &ctx, &params.name)?;
                    entry.handler.clone()
                }
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
        let input = InputState::new(params.input_responses, params.request_state);
        let parts = CallParts::new(ctx, CallKind::Prompt, params.name, arguments, input);
        handler.call(parts, self.inner.state.clone(), None).await
    }

    async fn list_resources(
        &self,
        _ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> HandlerResult<Listed<ListResourcesResult>> {
        let registry = self.inner.registry.load();
        registry.resources_page(self.inner.page_size, params.cursor.as_deref())
    }

    async fn list_resource_templates(
        &self,
        _ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> HandlerResult<Listed<ListResourceTemplatesResult>> {
        let registry = self.inner.registry.load();
        registry.templates_page(self.inner.page_size, params.cursor.as_deref())
    }

    async fn read_resource(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        let input = InputState::new(params.input_responses, params.request_state);
        let uri = params.uri;
        // A view's `_meta.ui`, for the content items of its read.
        #[cfg(feature = "apps")]
        let mut stamp = None;
        let call = {
            let registry = self.inner.registry.load();
            if let Some(entry) = registry.resources.get(&uri) {
                self.admit(&entry.scopes, &ctx, &uri)?;
                #[cfg(feature = "apps")]
                {
                    stamp = super::apps::view_ui(&entry.def).map(|ui| (uri.clone(), ui));
                }
                let parts = CallParts::new(ctx, CallKind::Resource, uri, None, input);
                let mime = entry.def.mime_type.clone();
                entry.handler.call(parts, self.inner.state.clone(), mime)
            } else if let Some((entry, vars)) = registry
                .templates
                .iter()
                .find_map(|t| t.def.matcher.matches(&uri).map(|vars| (t, vars)))
            {
                self.admit(&entry.scopes, &ctx, &uri)?;
                let vars: JsonObject = vars
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                let parts = CallParts::new(ctx, CallKind::Resource, uri, Some(vars), input);
                let mime = entry.def.template.mime_type.clone();
                entry.handler.call(parts, self.inner.state.clone(), mime)
            } else {
                return Err(resource_not_found(&uri));
            }
        };
        #[cfg(feature = "apps")]
        if let Some((uri, ui)) = stamp {
            return call.await.map(|mut outcome| {
                super::apps::stamp_contents(&mut outcome, &uri, &ui);
                outcome
            });
        }
        call.await
    }

    async fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> HandlerResult<CompleteResult> {
        let needs = super::scopes::completion_needs(&self.inner.registry.load(), &params.reference);
        if let Some(needs) = needs {
            let target = super::scopes::completion_target(&params.reference);
            self.admit(&needs, &ctx, target)?;
        }
        match &self.inner.completer {
            Some(completer) => completer.complete(ctx, params).await,
            None => Err(ErrorObject::method_not_found("completion/complete")),
        }
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<[MirroredParam]>> {
        self.inner
            .registry
            .load()
            .tools
            .get(tool)?
            .def
            .mirrored
            .clone()
    }
}
