//! The protocol engine: validates each request's envelope, routes it to the handler, and
//! encodes the answer.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::discover::DiscoverResult;
use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest};
use arctern_types::meta::{Meta, SERVER_INFO_KEY};
use arctern_types::methods;
use arctern_types::mrtr::InputRequiredResult;
use arctern_types::notifications::CancelledNotificationParams;
use arctern_types::result::ResultType;
use arctern_types::{ErrorObject, RequestId, RequestMeta};
use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::config::{CacheHint, ServerConfig};
use super::context::{ContextInner, Era, NotificationSink, RequestContext, TransportKind};
use super::handler::{Handler, HandlerResult};
use super::note_channel::{self, NoteReceiver};
use super::outcome::Outcome;
use super::prepared::{PreparedForm, PreparedResult, Shared};
use super::reply::{BoxedResponse, Reply, respond_lazily_boxed};
use super::subscriptions::{ChangeBroker, ChangeNotifier};
use super::wire::{MrtrParams, WireParams, WireResult};
use crate::state::{StateBinding, StatePayload};

/// Buffer of request-scoped notifications before a slow client pushes back on the handler.
const NOTIFICATION_BUFFER: usize = 64;

/// HTTP headers that mirror parts of the body, as decoded by an HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct WireHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`, decoded from its base64 sentinel form when needed; `Err` when the value
    /// is malformed.
    pub name: Option<Result<String, String>>,
    /// Every `Mcp-Param-{Name}` header: `{Name}` (any case), and the value decoded from its
    /// base64 sentinel form when needed, `Err` when malformed. Checked against the arguments
    /// of a `tools/call` whose tool declares them ([`Handler::mirrored_params`]).
    pub params: Vec<(String, Result<String, String>)>,
}

/// Where a message came from: the transport, the mirrored HTTP headers, and values that
/// middleware attached (such as the authenticated principal).
#[derive(Debug)]
pub struct RequestOrigin {
    pub(crate) transport: TransportKind,
    pub(crate) headers: Option<WireHeaders>,
    pub(crate) extensions: http::Extensions,
}

impl RequestOrigin {
    /// A message from a transport without headers (stdio, in-memory).
    pub fn new(transport: TransportKind) -> Self {
        RequestOrigin {
            transport,
            headers: None,
            extensions: http::Extensions::new(),
        }
    }

    /// A message from Streamable HTTP with its mirrored headers.
    pub fn http(headers: WireHeaders, extensions: http::Extensions) -> Self {
        RequestOrigin {
            transport: TransportKind::Http,
            headers: Some(headers),
            extensions,
        }
    }

    /// Attaches extensions (for example a [`Principal`](super::Principal)).
    pub fn with_extensions(mut self, extensions: http::Extensions) -> Self {
        self.extensions = extensions;
        self
    }
}

/// An MCP server: a [`Handler`] plus its configuration, ready to be served by any transport.
///
/// Cheap to clone (an `Arc`). Build one with [`Server::new`] for a low-level handler, or
/// get one from [`McpServer`](crate::server::McpServer).
pub struct Server<H> {
    inner: Arc<Inner<H>>,
}

impl<H> std::fmt::Debug for Server<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.config.info.name)
            .field("version", &self.inner.config.info.version)
            .finish_non_exhaustive()
    }
}

impl<H> Clone for Server<H> {
    fn clone(&self) -> Self {
        Server {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<H> {
    handler: H,
    config: ServerConfig,
    /// `serverInfo`, serialized once.
    server_info: Option<Box<RawValue>>,
    changes: ChangeBroker,
    shutdown: CancellationToken,
}

/// A method of the 2026-07-28 wire, resolved once per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Discover,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    Complete,
    Listen,
}

impl Method {
    fn parse(name: &str) -> Option<Method> {
        Some(match name {
            methods::SERVER_DISCOVER => Method::Discover,
            methods::TOOLS_LIST => Method::ToolsList,
            methods::TOOLS_CALL => Method::ToolsCall,
            methods::PROMPTS_LIST => Method::PromptsList,
            methods::PROMPTS_GET => Method::PromptsGet,
            methods::RESOURCES_LIST => Method::ResourcesList,
            methods::RESOURCES_TEMPLATES_LIST => Method::ResourceTemplatesList,
            methods::RESOURCES_READ => Method::ResourcesRead,
            methods::COMPLETION_COMPLETE => Method::Complete,
            methods::SUBSCRIPTIONS_LISTEN => Method::Listen,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Method::Discover => methods::SERVER_DISCOVER,
            Method::ToolsList => methods::TOOLS_LIST,
            Method::ToolsCall => methods::TOOLS_CALL,
            Method::PromptsList => methods::PROMPTS_LIST,
            Method::PromptsGet => methods::PROMPTS_GET,
            Method::ResourcesList => methods::RESOURCES_LIST,
            Method::ResourceTemplatesList => methods::RESOURCES_TEMPLATES_LIST,
            Method::ResourcesRead => methods::RESOURCES_READ,
            Method::Complete => methods::COMPLETION_COMPLETE,
            Method::Listen => methods::SUBSCRIPTIONS_LISTEN,
        }
    }

    /// Whether the server's declared capabilities allow this method.
    fn allowed(self, caps: &ServerCapabilities) -> bool {
        match self {
            Method::Discover => true,
            Method::ToolsList | Method::ToolsCall => caps.tools.is_some(),
            Method::PromptsList | Method::PromptsGet => caps.prompts.is_some(),
            Method::ResourcesList | Method::ResourceTemplatesList | Method::ResourcesRead => {
                caps.resources.is_some()
            }
            Method::Complete => caps.completions.is_some(),
            Method::Listen => super::subscriptions::listen_supported(caps),
        }
    }

    /// Whether the request may produce request-scoped notifications.
    fn may_notify(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead | Method::Complete
        )
    }
}

/// Only the `_meta` of a request's params, for requests whose params are otherwise unknown
/// or malformed.
#[derive(serde::Deserialize)]
struct EnvelopeOnly {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMeta>,
}

/// A request rejected before reaching the handler.
struct Rejection {
    status: u16,
    error: ErrorObject,
}

impl Rejection {
    fn bad_request(error: ErrorObject) -> Self {
        Rejection { status: 400, error }
    }
}

impl<H: Handler> Server<H> {
    /// A server for `handler` with `config`.
    pub fn new(handler: H, config: ServerConfig) -> Self {
        let server_info = config.stamp_server_info.then(|| {
            serde_json::value::to_raw_value(&config.info).expect("Implementation serializes")
        });
        Server {
            inner: Arc::new(Inner {
                handler,
                config,
                server_info,
                changes: ChangeBroker::new(),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// A handle for announcing list changes and resource updates to open
    /// `subscriptions/listen` streams.
    pub fn change_notifier(&self) -> ChangeNotifier {
        self.inner.changes.notifier()
    }

    /// Every change announced from now on (legacy sessions forward them).
    pub(crate) fn subscribe_changes(&self) -> tokio::sync::broadcast::Receiver<super::Change> {
        self.inner.changes.subscribe()
    }

    /// Ends every open subscription stream gracefully and cancels in-flight requests.
    /// Transports call this when they shut down.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// A token cancelled when the server shuts down.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Handles one incoming message.
    pub async fn handle(&self, message: JsonRpcMessage, origin: RequestOrigin) -> Reply {
        match message {
            JsonRpcMessage::Request(request) => self.handle_request(request, origin).await,
            JsonRpcMessage::Notification(note) => {
                self.handle_notification(&note);
                Reply::Accepted
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => self.reject(
                None,
                Rejection::bad_request(ErrorObject::invalid_request(
                    "A 2026-07-28 client never sends responses",
                )),
            ),
        }
    }

    /// Handles one incoming message given as bytes; malformed input is answered with the
    /// right JSON-RPC error (`-32700` or `-32600`, HTTP 400).
    pub async fn handle_bytes(&self, bytes: &[u8], origin: RequestOrigin) -> Reply {
        match JsonRpcMessage::from_slice(bytes) {
            Ok(message) => self.handle(message, origin).await,
            Err(e) => self.reject(e.id, Rejection::bad_request(e.error)),
        }
    }

    fn handle_notification(&self, note: &JsonRpcNotification) {
        if note.method == methods::NOTIFICATIONS_CANCELLED {
            // Cancellation is carried out by the transport, which owns in-flight requests.
            if let Some(p) = &note.params
                && serde_json::from_str::<CancelledNotificationParams>(p.get()).is_err()
            {
                tracing::debug!("ignored a malformed notifications/cancelled");
            }
        } else {
            tracing::debug!(method = %note.method, "ignored a notification");
        }
    }

    async fn handle_request(&self, request: JsonRpcRequest, origin: RequestOrigin) -> Reply {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let headers = origin.headers.as_ref();
        // 1. An HTTP request must name its protocol version in a header.
        if let Some(h) = headers
            && h.protocol_version.is_none()
        {
            return self.reject(
                Some(id),
                Rejection::bad_request(ErrorObject::header_mismatch(
                    "Missing MCP-Protocol-Version header",
                )),
            );
        }
        let resolved =
            Method::parse(&method).filter(|m| m.allowed(&self.inner.config.capabilities));
        let Some(resolved) = resolved else {
            // Unknown (or not offered): validate the envelope first, then 404.
            let meta = match envelope_only(params.as_deref()) {
                Ok(meta) => meta,
                Err(e) => return self.reject(Some(id), Rejection::bad_request(e)),
            };
            if let Err(r) = self.check_envelope(&meta, headers, &method, None) {
                return self.reject(Some(id), r);
            }
            return self.reject(
                Some(id),
                Rejection {
                    status: 404,
                    error: ErrorObject::method_not_found(&method),
                },
            );
        };
        let raw = params.as_deref();
        match resolved {
            Method::Discover => {
                self.serve(
                    id,
                    resolved,
                    raw,
                    origin,
                    |this, _ctx, _p: DiscoverParams| {
                        std::future::ready(Ok(PreparedResult::value(this.discover_result())))
                    },
                )
                .await
            }
            Method::ToolsList => {
                self.serve(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.list_tools_prepared(ctx, p).await
                })
                .await
            }
            Method::ToolsCall => {
                self.serve_outcome(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.call_tool(ctx, p).await
                })
                .await
            }
            Method::PromptsList => {
                self.serve(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.list_prompts_prepared(ctx, p).await
                })
                .await
            }
            Method::PromptsGet => {
                self.serve_outcome(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.get_prompt(ctx, p).await
                })
                .await
            }
            Method::ResourcesList => {
                self.serve(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.list_resources_prepared(ctx, p).await
                })
                .await
            }
            Method::ResourceTemplatesList => {
                self.serve(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner
                        .handler
                        .list_resource_templates_prepared(ctx, p)
                        .await
                })
                .await
            }
            Method::ResourcesRead => {
                self.serve_outcome(id, resolved, raw, origin, |this, ctx, p| async move {
                    this.inner.handler.read_resource(ctx, p).await
                })
                .await
            }
            Method::Complete => {
                self.serve(id, resolved, raw, origin, |this, ctx, p| async move {
                    let result = this.inner.handler.complete(ctx, p).await;
                    result.map(PreparedResult::value)
                })
                .await
            }
            Method::Listen => self.listen(id, raw, origin).await,
        }
    }

    /// Validates the envelope and parses the params of a known method, then builds the
    /// request context.
    fn prepare<P: WireParams>(
        &self,
        id: &RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        sink: Option<NotificationSink>,
    ) -> Result<(RequestContext, P), Rejection> {
        let parsed: Result<P, serde_json::Error> = match raw {
            Some(raw) => serde_json::from_str(raw.get()),
            None => serde_json::from_str("{}"),
        };
        let mut params = match parsed {
            Ok(p) => p,
            Err(e) => {
                // Tell a malformed envelope (400) from malformed params (200).
                let meta = envelope_only(raw).map_err(Rejection::bad_request)?;
                self.check_envelope(&meta, origin.headers.as_ref(), method.name(), None)?;
                return Err(Rejection {
                    status: 200,
                    error: ErrorObject::invalid_params(format!("Invalid params: {e}")),
                });
            }
        };
        let meta = params.take_meta();
        self.check_envelope(
            &meta,
            origin.headers.as_ref(),
            method.name(),
            params.mirrored_name(),
        )?;
        if let (Some(headers), Some((tool, arguments))) =
            (origin.headers.as_ref(), params.tool_call())
            && let Some(mirrored) = self.inner.handler.mirrored_params(tool)
        {
            super::mirror::check_headers(&mirrored, arguments, &headers.params)
                .map_err(|why| Rejection::bad_request(ErrorObject::header_mismatch(why)))?;
        }
        let _ = id;
        let logging_enabled = self.inner.config.capabilities.logging.is_some();
        let ctx = RequestContext {
            inner: Arc::new(ContextInner {
                id: id.clone(),
                method: method.name(),
                meta,
                era: Era::Modern,
                transport: origin.transport,
                sink,
                logging_enabled,
                cancel: self.inner.shutdown.child_token(),
                extensions: origin.extensions,
                last_progress: AtomicU64::new(u64::MAX),
                opened: None,
                carry: std::sync::Mutex::new(None),
                limits: self.inner.config.mrtr,
                legacy: None,
            }),
        };
        Ok((ctx, params))
    }

    /// Steps 2–5 of request validation: the `_meta` envelope, the version header, the
    /// supported versions, and the mirrored method and name headers.
    fn check_envelope(
        &self,
        meta: &RequestMeta,
        headers: Option<&WireHeaders>,
        method: &str,
        name: Option<&str>,
    ) -> Result<(), Rejection> {
        let Some(version) = meta.protocol_version.as_deref() else {
            return Err(Rejection::bad_request(ErrorObject::invalid_params(
                "Missing _meta[\"io.modelcontextprotocol/protocolVersion\"]",
            )));
        };
        if meta.client_capabilities.is_none() {
            return Err(Rejection::bad_request(ErrorObject::invalid_params(
                "Missing _meta[\"io.modelcontextprotocol/clientCapabilities\"]",
            )));
        }
        if let Some(h) = headers
            && h.protocol_version.as_deref() != Some(version)
        {
            return Err(Rejection::bad_request(ErrorObject::header_mismatch(
                "MCP-Protocol-Version header does not match _meta protocolVersion",
            )));
        }
        let versions = &self.inner.config.versions;
        if !versions.iter().any(|v| v.as_str() == version) {
            let supported: Vec<&str> = versions.iter().map(|v| v.as_str()).collect();
            return Err(Rejection::bad_request(
                ErrorObject::unsupported_protocol_version(&supported, version),
            ));
        }
        if let Some(h) = headers {
            if h.method.as_deref() != Some(method) {
                return Err(Rejection::bad_request(ErrorObject::header_mismatch(
                    match h.method {
                        None => "Missing Mcp-Method header",
                        Some(_) => "Mcp-Method header does not match the request method",
                    },
                )));
            }
            if let Some(name) = name {
                match &h.name {
                    None => {
                        return Err(Rejection::bad_request(ErrorObject::header_mismatch(
                            "Missing Mcp-Name header",
                        )));
                    }
                    Some(Err(why)) => {
                        return Err(Rejection::bad_request(ErrorObject::header_mismatch(
                            format!("Malformed Mcp-Name header: {why}"),
                        )));
                    }
                    Some(Ok(value)) if value != name => {
                        return Err(Rejection::bad_request(ErrorObject::header_mismatch(
                            "Mcp-Name header does not match the request",
                        )));
                    }
                    Some(Ok(_)) => {}
                }
            }
        }
        Ok(())
    }

    /// Serves a method whose result is always final.
    async fn serve<P, R, F, Fut>(
        &self,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        call: F,
    ) -> Reply
    where
        P: WireParams,
        R: WireResult,
        F: FnOnce(Server<H>, RequestContext, P) -> Fut,
        Fut: Future<Output = HandlerResult<PreparedResult<R>>> + Send + 'static,
    {
        let (sink, rx) = self.notification_channel(method);
        let (ctx, params) = match self.prepare::<P>(&id, method, raw, origin, sink) {
            Ok(v) => v,
            Err(r) => return self.reject(Some(id), r),
        };
        // Cancels the request's token if the reply is dropped before it is done (the client
        // went away or cancelled), so work the handler spawned hears about it too.
        let cancel_on_drop = ctx.inner.cancel.clone().drop_guard();
        let fut = call(self.clone(), ctx, params);
        let this = self.clone();
        let cache = self.cache_hint(method);
        // On the heap at once: this future then holds a pointer, not the handler's future.
        let response: BoxedResponse = Box::pin(async move {
            let outcome = fut.await;
            cancel_on_drop.disarm();
            match outcome.map(PreparedResult::into_form) {
                Ok(PreparedForm::Value(mut result)) => {
                    if let Some(hint) = cache {
                        result.apply_cache_hint(hint);
                    }
                    (200, this.encode_result(&id, result))
                }
                Ok(PreparedForm::Shared(shared)) => (200, this.encode_shared(&id, &shared, cache)),
                Err(error) => (status_for(&error), this.encode_error(Some(&id), &error)),
            }
        });
        match rx {
            None => {
                let (status, body) = response.await;
                Reply::message(status, body)
            }
            Some(rx) => respond_lazily_boxed(response, rx).await,
        }
    }

    /// Serves `tools/call`, `prompts/get` or `resources/read`, whose result may be
    /// `input_required`. With sealing on, the incoming `requestState` is verified and opened
    /// before the handler runs, and the outgoing one sealed after.
    async fn serve_outcome<P, R, F, Fut>(
        &self,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        call: F,
    ) -> Reply
    where
        P: WireParams + MrtrParams,
        R: WireResult,
        F: FnOnce(Server<H>, RequestContext, P) -> Fut,
        Fut: Future<Output = HandlerResult<Outcome<R>>> + Send + 'static,
    {
        let (sink, rx) = self.notification_channel(method);
        let (mut ctx, mut params) = match self.prepare::<P>(&id, method, raw, origin, sink) {
            Ok(v) => v,
            Err(r) => return self.reject(Some(id), r),
        };
        let binding = match self.open_state(method, &mut ctx, &mut params) {
            Ok(binding) => binding,
            Err(r) => return self.reject(Some(id), r),
        };
        let cancel_on_drop = ctx.inner.cancel.clone().drop_guard();
        let fut = call(self.clone(), ctx.clone(), params);
        let this = self.clone();
        let cache = self.cache_hint(method);
        // On the heap at once: this future then holds a pointer, not the handler's future.
        let response: BoxedResponse = Box::pin(async move {
            let outcome = fut.await;
            cancel_on_drop.disarm();
            match outcome {
                Ok(Outcome::Complete(mut result)) => {
                    if let Some(hint) = cache {
                        result.apply_cache_hint(hint);
                    }
                    (200, this.encode_result(&id, result))
                }
                Ok(Outcome::InputRequired(ask)) => {
                    match this.finish_input_required(&ctx, binding, ask) {
                        Ok(ask) => (200, this.encode_result(&id, ask)),
                        Err(error) => (status_for(&error), this.encode_error(Some(&id), &error)),
                    }
                }
                Err(error) => (status_for(&error), this.encode_error(Some(&id), &error)),
            }
        });
        match rx {
            None => {
                let (status, body) = response.await;
                Reply::message(status, body)
            }
            Some(rx) => respond_lazily_boxed(response, rx).await,
        }
    }

    /// The state boundary on the way in: verifies and opens `requestState`, leaving the
    /// handler's plaintext in the params. Every failure answers the same `-32602` (the real
    /// reason is logged).
    fn open_state<P: MrtrParams>(
        &self,
        method: Method,
        ctx: &mut RequestContext,
        params: &mut P,
    ) -> Result<Option<StateBinding>, Rejection> {
        let Some(sealer) = &self.inner.config.request_state else {
            return Ok(None);
        };
        let principal = match ctx.principal() {
            Some(p) => Some(p.0.clone()),
            None => self
                .inner
                .config
                .principal
                .as_ref()
                .and_then(|hook| (hook.0)(ctx)),
        };
        let binding = StateBinding::new(method.name(), params.target(), params.args_digest())
            .with_principal_opt(principal.as_deref());
        if let Some(token) = params.request_state_mut().take() {
            match sealer.open(&token, &binding) {
                Ok(mut payload) => {
                    *params.request_state_mut() = payload.state.take();
                    if let Some(inner) = Arc::get_mut(&mut ctx.inner) {
                        inner.opened = Some(payload);
                    }
                }
                Err(rejection) => return Err(Rejection::bad_request(rejection.to_error_object())),
            }
        }
        Ok(Some(binding))
    }

    /// The state boundary on the way out: checks what the handler asks for against the
    /// client's capabilities and the limits, and seals the request state.
    fn finish_input_required(
        &self,
        ctx: &RequestContext,
        binding: Option<StateBinding>,
        mut ask: InputRequiredResult,
    ) -> Result<InputRequiredResult, ErrorObject> {
        let requests = ask.input_requests.as_ref().map_or(0, |r| r.len());
        if requests == 0
            && ask.request_state.is_none()
            && ctx.inner.carry.lock().map_or(true, |c| c.is_none())
        {
            tracing::error!(
                "a handler returned input_required with neither inputRequests nor requestState"
            );
            return Err(ErrorObject::internal_error(
                "Handler returned an input_required result with nothing to ask",
            ));
        }
        if requests > self.inner.config.mrtr.max_input_requests {
            tracing::error!(
                requests,
                "a handler asked more questions than the limit allows"
            );
            return Err(ErrorObject::internal_error(
                "The handler asked too many questions at once",
            ));
        }
        let caps = ctx.client_capabilities();
        for request in ask.input_requests.iter().flat_map(|r| r.values()) {
            if !request.is_supported_by(caps) {
                let required =
                    serde_json::to_value(request.required_capabilities()).unwrap_or_default();
                return Err(ErrorObject::missing_client_capability(required));
            }
        }
        if let (Some(sealer), Some(binding)) = (&self.inner.config.request_state, binding) {
            let (answers, asked) = ctx.take_carry().unwrap_or_default();
            let payload = StatePayload {
                state: ask.request_state.take(),
                answers,
                asked,
                round: ctx.round().saturating_add(1),
            };
            if payload.state.is_some() || !payload.asked.is_empty() || !payload.answers.is_empty() {
                match sealer.seal(&binding, &payload) {
                    Ok(token) => ask.request_state = Some(token),
                    Err(e) => {
                        tracing::error!(error = %e, "could not seal request state");
                        return Err(ErrorObject::internal_error(
                            "Could not seal the request state",
                        ));
                    }
                }
            }
        }
        ask.result_type = ResultType::INPUT_REQUIRED;
        Ok(ask)
    }

    fn notification_channel(
        &self,
        method: Method,
    ) -> (Option<NotificationSink>, Option<NoteReceiver>) {
        if method.may_notify() {
            let (tx, rx) = note_channel::channel(NOTIFICATION_BUFFER);
            (Some(NotificationSink::new(tx)), Some(rx))
        } else {
            (None, None)
        }
    }

    fn cache_hint(&self, method: Method) -> Option<CacheHint> {
        let policy = &self.inner.config.cache;
        Some(match method {
            Method::Discover => policy.discover,
            Method::ToolsList => policy.tools_list,
            Method::PromptsList => policy.prompts_list,
            Method::ResourcesList => policy.resources_list,
            Method::ResourceTemplatesList => policy.resource_templates_list,
            Method::ResourcesRead => policy.resources_read,
            _ => return None,
        })
    }

    fn discover_result(&self) -> DiscoverResult {
        let config = &self.inner.config;
        DiscoverResult {
            supported_versions: config
                .versions
                .iter()
                .map(|v| v.as_str().to_owned())
                .collect(),
            capabilities: config.capabilities.clone(),
            instructions: config.instructions.clone(),
            ..Default::default()
        }
    }

    async fn listen(&self, id: RequestId, raw: Option<&RawValue>, origin: RequestOrigin) -> Reply {
        let (ctx, params) = match self
            .prepare::<arctern_types::subscriptions::SubscriptionsListenRequestParams>(
                &id,
                Method::Listen,
                raw,
                origin,
                None,
            ) {
            Ok(v) => v,
            Err(r) => return self.reject(Some(id), r),
        };
        drop(ctx);
        let stream = self.inner.changes.listen(
            id,
            params.notifications,
            &self.inner.config.capabilities,
            self.inner.shutdown.clone(),
            self.clone_encoder(),
        );
        Reply::Stream(stream)
    }

    fn clone_encoder(&self) -> super::subscriptions::Encoder {
        let this = self.clone();
        Arc::new(move |id: &RequestId| {
            let mut result =
                arctern_types::subscriptions::SubscriptionsListenResult::new(id.clone());
            if this.inner.config.stamp_server_info {
                result.meta.server_info = Some(this.inner.config.info.clone());
            }
            let response = arctern_types::JsonRpcResponse::new(id.clone(), result);
            Bytes::from(serde_json::to_vec(&response).unwrap_or_default())
        })
    }

    fn reject(&self, id: Option<RequestId>, rejection: Rejection) -> Reply {
        if rejection.status != 200 {
            tracing::debug!(
                code = rejection.error.code.0,
                message = %rejection.error.message,
                "rejected a request"
            );
        }
        Reply::message(
            rejection.status,
            self.encode_error(id.as_ref(), &rejection.error),
        )
    }

    /// Encodes a successful response, stamping `serverInfo` into the result's `_meta`.
    pub(crate) fn encode_result<R: WireResult>(&self, id: &RequestId, mut result: R) -> Bytes {
        let meta = result.meta_mut().take();
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        write_json(&mut buf, id);
        buf.extend_from_slice(b",\"result\":");
        let start = buf.len();
        if let Err(e) = serde_json::to_writer(&mut buf, &result) {
            tracing::error!(error = %e, "could not serialize a result");
            return self.encode_error(
                Some(id),
                &ErrorObject::internal_error("Could not serialize the result"),
            );
        }
        self.finish_result(buf, start, meta.as_ref())
    }

    /// Encodes a successful response whose result was serialized beforehand: copies it in,
    /// then adds the caching hints it leaves unset and stamps `serverInfo`, as
    /// [`encode_result`](Self::encode_result) does for a value.
    fn encode_shared(&self, id: &RequestId, shared: &Shared, hint: Option<CacheHint>) -> Bytes {
        let info_len = self
            .inner
            .server_info
            .as_deref()
            .map_or(0, |i| i.get().len());
        let mut buf = Vec::with_capacity(shared.json.len() + info_len + 128);
        buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        write_json(&mut buf, id);
        buf.extend_from_slice(b",\"result\":");
        let start = buf.len();
        buf.extend_from_slice(&shared.json);
        if let Some(hint) = hint {
            if shared.ttl_unset {
                push_member(&mut buf, start, "ttlMs", &hint.ttl_ms);
            }
            if shared.scope_unset {
                push_member(&mut buf, start, "cacheScope", &hint.scope);
            }
        }
        self.finish_result(buf, start, shared.meta.as_ref())
    }

    /// Ends a response whose result object (from `start`) is in `buf`: merges `serverInfo`
    /// into the result's `_meta` and closes the envelope.
    fn finish_result(&self, mut buf: Vec<u8>, start: usize, meta: Option<&Meta>) -> Bytes {
        debug_assert_eq!(buf.last(), Some(&b'}'));
        let info = self
            .inner
            .server_info
            .as_deref()
            .filter(|_| meta.is_none_or(|m| !m.contains_key(SERVER_INFO_KEY)));
        let has_meta = info.is_some() || meta.is_some_and(|m| !m.is_empty());
        if has_meta {
            buf.pop();
            if buf.len() - start > 1 {
                buf.push(b',');
            }
            buf.extend_from_slice(b"\"_meta\":{");
            let mut first = true;
            if let Some(info) = info {
                buf.extend_from_slice(b"\"io.modelcontextprotocol/serverInfo\":");
                buf.extend_from_slice(info.get().as_bytes());
                first = false;
            }
            for (k, v) in meta.into_iter().flatten() {
                if !first {
                    buf.push(b',');
                }
                first = false;
                write_json(&mut buf, k);
                buf.push(b':');
                write_json(&mut buf, v);
            }
            buf.extend_from_slice(b"}}");
        }
        buf.push(b'}');
        Bytes::from(buf)
    }

    /// Encodes an error response.
    pub(crate) fn encode_error(&self, id: Option<&RequestId>, error: &ErrorObject) -> Bytes {
        encode_error(id, error)
    }
}

/// The HTTP status of an error a handler returned: 400 for the envelope errors the
/// specification ties to it (header mismatch, missing client capability, unsupported
/// version), 404 for method-not-found, else 200.
fn status_for(error: &ErrorObject) -> u16 {
    if error.code.is_modern_envelope_error() {
        400
    } else if error.code == arctern_types::ErrorCode::METHOD_NOT_FOUND {
        404
    } else {
        200
    }
}

/// Encodes an error response; the id is omitted when unknown.
pub(crate) fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Bytes {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",");
    if let Some(id) = id {
        buf.extend_from_slice(b"\"id\":");
        write_json(&mut buf, id);
        buf.push(b',');
    }
    buf.extend_from_slice(b"\"error\":");
    write_json(&mut buf, error);
    buf.push(b'}');
    Bytes::from(buf)
}

/// Adds `"key":value` as the last member of the JSON object that starts at `start` and ends
/// `buf`.
fn push_member<T: Serialize + ?Sized>(buf: &mut Vec<u8>, start: usize, key: &str, value: &T) {
    debug_assert_eq!(buf.last(), Some(&b'}'));
    buf.pop();
    if buf.len() - start > 1 {
        buf.push(b',');
    }
    write_json(buf, key);
    buf.push(b':');
    write_json(buf, value);
    buf.push(b'}');
}

fn write_json<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    // Ids, strings and JSON values cannot fail to serialize into a Vec.
    serde_json::to_writer(&mut *buf, value).expect("JSON value serializes");
}

fn envelope_only(raw: Option<&RawValue>) -> Result<RequestMeta, ErrorObject> {
    let Some(raw) = raw else {
        return Err(ErrorObject::invalid_params("Missing params._meta"));
    };
    match serde_json::from_str::<EnvelopeOnly>(raw.get()) {
        Ok(EnvelopeOnly { meta: Some(meta) }) => Ok(meta),
        Ok(EnvelopeOnly { meta: None }) => Err(ErrorObject::invalid_params("Missing params._meta")),
        Err(e) => Err(ErrorObject::invalid_params(format!(
            "Invalid params._meta: {e}"
        ))),
    }
}

/// `server/discover` params: only the envelope.
#[derive(serde::Deserialize)]
struct DiscoverParams {
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
}

impl WireParams for DiscoverParams {
    fn take_meta(&mut self) -> RequestMeta {
        std::mem::take(&mut self.meta)
    }
}
