//! Serving one message of a legacy session: the session-scoped methods, the handler's
//! methods with legacy result shapes and error codes, and the shim for `input_required`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest};
use arctern_types::legacy::{
    InitializeRequestParams, InitializeResult, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams, client_capabilities_for, negotiate_version, server_capabilities_for,
    strip_modern_members,
};
use arctern_types::meta::JsonObject;
use arctern_types::methods;
use arctern_types::{ErrorCode, ErrorObject, RequestId, RequestMeta};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::session::{LegacySession, Outbound, forward_changes};
use super::{LegacyPeer, shim};
use crate::server::context::{ContextInner, Era, NotificationSink, RequestContext};
use crate::server::engine::encode_error;
use crate::server::handler::{Handler, HandlerResult};
use crate::server::note_channel::{self, NoteReceiver};
use crate::server::outcome::Outcome;
use crate::server::prepared::{PreparedForm, PreparedResult, Shared};
use crate::server::reply::{Reply, respond_lazily};
use crate::server::wire::{MrtrParams, WireParams};
use crate::server::{RequestOrigin, Server};
use crate::state::StatePayload;

/// Buffer of a legacy request's stream (notifications and server→client requests).
const STREAM_BUFFER: usize = 64;

/// A method a legacy session serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Initialize,
    Ping,
    SetLevel,
    Subscribe,
    Unsubscribe,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    Complete,
}

impl Method {
    fn parse(name: &str) -> Option<Method> {
        Some(match name {
            methods::legacy::INITIALIZE => Method::Initialize,
            methods::legacy::PING => Method::Ping,
            methods::legacy::LOGGING_SET_LEVEL => Method::SetLevel,
            methods::legacy::RESOURCES_SUBSCRIBE => Method::Subscribe,
            methods::legacy::RESOURCES_UNSUBSCRIBE => Method::Unsubscribe,
            methods::TOOLS_LIST => Method::ToolsList,
            methods::TOOLS_CALL => Method::ToolsCall,
            methods::PROMPTS_LIST => Method::PromptsList,
            methods::PROMPTS_GET => Method::PromptsGet,
            methods::RESOURCES_LIST => Method::ResourcesList,
            methods::RESOURCES_TEMPLATES_LIST => Method::ResourceTemplatesList,
            methods::RESOURCES_READ => Method::ResourcesRead,
            methods::COMPLETION_COMPLETE => Method::Complete,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Method::Initialize => methods::legacy::INITIALIZE,
            Method::Ping => methods::legacy::PING,
            Method::SetLevel => methods::legacy::LOGGING_SET_LEVEL,
            Method::Subscribe => methods::legacy::RESOURCES_SUBSCRIBE,
            Method::Unsubscribe => methods::legacy::RESOURCES_UNSUBSCRIBE,
            Method::ToolsList => methods::TOOLS_LIST,
            Method::ToolsCall => methods::TOOLS_CALL,
            Method::PromptsList => methods::PROMPTS_LIST,
            Method::PromptsGet => methods::PROMPTS_GET,
            Method::ResourcesList => methods::RESOURCES_LIST,
            Method::ResourceTemplatesList => methods::RESOURCES_TEMPLATES_LIST,
            Method::ResourcesRead => methods::RESOURCES_READ,
            Method::Complete => methods::COMPLETION_COMPLETE,
        }
    }

    /// Whether the server's declared capabilities offer this method.
    fn allowed(self, caps: &arctern_types::capabilities::ServerCapabilities) -> bool {
        match self {
            Method::Initialize | Method::Ping => true,
            Method::SetLevel => caps.logging.is_some(),
            Method::ToolsList | Method::ToolsCall => caps.tools.is_some(),
            Method::PromptsList | Method::PromptsGet => caps.prompts.is_some(),
            Method::Subscribe
            | Method::Unsubscribe
            | Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::ResourcesRead => caps.resources.is_some(),
            Method::Complete => caps.completions.is_some(),
        }
    }

    /// Whether the request may send notifications or server→client requests.
    fn may_notify(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead | Method::Complete
        )
    }
}

/// Whether a request is a legacy `initialize`: the method, without the modern `_meta`
/// envelope (a modern client sending `initialize` gets the modern `-32601`).
pub(crate) fn is_legacy_initialize(method: &str, params: Option<&RawValue>) -> bool {
    method == methods::legacy::INITIALIZE && !has_modern_envelope(params)
}

/// Whether params carry the 2026-07-28 envelope (`_meta` with a protocol version).
pub(crate) fn has_modern_envelope(params: Option<&RawValue>) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "_meta", default)]
        meta: Option<ProbeMeta>,
    }
    #[derive(serde::Deserialize)]
    struct ProbeMeta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
        version: Option<serde::de::IgnoredAny>,
    }
    params
        .and_then(|p| serde_json::from_str::<Probe>(p.get()).ok())
        .and_then(|p| p.meta)
        .is_some_and(|m| m.version.is_some())
}

/// The outcome of a legacy `initialize`.
pub(crate) enum Initialized {
    /// A new session and the response to send.
    Session(Arc<LegacySession>, Bytes),
    /// The request was refused (the error response to send).
    Refused(Bytes),
}

impl<H: Handler> Server<H> {
    /// Whether this server serves any legacy revision.
    pub(crate) fn serves_legacy(&self) -> bool {
        self.config().legacy.is_enabled()
    }

    /// Answers a legacy `initialize`: negotiates the version, opens a session whose
    /// unsolicited messages go to `outbound`, and starts forwarding list changes to it.
    pub(crate) fn legacy_initialize(
        &self,
        request: &JsonRpcRequest,
        outbound: Outbound,
    ) -> Initialized {
        let id = &request.id;
        let params: InitializeRequestParams = match request
            .params
            .as_deref()
            .map(|p| serde_json::from_str(p.get()))
        {
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                return Initialized::Refused(encode_error(
                    Some(id),
                    &ErrorObject::invalid_params(format!("Invalid initialize params: {e}")),
                ));
            }
            None => {
                return Initialized::Refused(encode_error(
                    Some(id),
                    &ErrorObject::invalid_params("Missing initialize params"),
                ));
            }
        };
        let config = self.config();
        let Some(version) = negotiate_version(&params.protocol_version, &config.legacy.versions)
        else {
            return Initialized::Refused(encode_error(
                Some(id),
                &ErrorObject::method_not_found(methods::legacy::INITIALIZE),
            ));
        };
        let capabilities = client_capabilities_for(&version, params.capabilities);
        let session = Arc::new(LegacySession::new(
            version,
            capabilities,
            params.client_info,
            self.shutdown_token().child_token(),
            outbound,
        ));
        tokio::spawn(forward_changes(
            Arc::downgrade(&session),
            self.subscribe_changes(),
            config.capabilities.clone(),
            session.cancel.clone(),
        ));
        tracing::debug!(version = %session.version, client = %session.client_info.name, "opened a legacy session");
        let body = self.initialize_result(id, &session);
        Initialized::Session(session, body)
    }

    fn initialize_result(&self, id: &RequestId, session: &LegacySession) -> Bytes {
        let config = self.config();
        let result = InitializeResult {
            meta: None,
            protocol_version: session.version.as_str().to_owned(),
            capabilities: server_capabilities_for(&config.capabilities),
            server_info: config.info.clone(),
            instructions: config.instructions.clone(),
            extra: Default::default(),
        };
        encode_legacy_result(id, &result)
    }

    /// Handles one message of a legacy session. Responses to the server's own requests
    /// are routed to the request waiting for them; `notifications/cancelled` is the
    /// transport's business (it owns the request tasks).
    pub(crate) async fn handle_legacy(
        &self,
        session: &Arc<LegacySession>,
        message: JsonRpcMessage,
        origin: RequestOrigin,
    ) -> Reply {
        match message {
            JsonRpcMessage::Request(request) => self.legacy_request(session, request, origin).await,
            JsonRpcMessage::Notification(note) => {
                legacy_notification(session, &note);
                Reply::Accepted
            }
            response @ (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) => {
                session.deliver(response);
                Reply::Accepted
            }
        }
    }

    async fn legacy_request(
        &self,
        session: &Arc<LegacySession>,
        request: JsonRpcRequest,
        origin: RequestOrigin,
    ) -> Reply {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let resolved = Method::parse(&method).filter(|m| m.allowed(&self.config().capabilities));
        let Some(resolved) = resolved else {
            return legacy_error_reply(Some(&id), &ErrorObject::method_not_found(&method));
        };
        let raw = params.as_deref();
        let s = session;
        match resolved {
            // A repeated `initialize` is answered again with what the session negotiated.
            Method::Initialize => Reply::message(200, self.initialize_result(&id, session)),
            Method::Ping => Reply::message(200, encode_empty(&id)),
            Method::SetLevel => match parse::<SetLevelRequestParams>(raw) {
                Ok(p) => {
                    session.set_log_level(p.level);
                    Reply::message(200, encode_empty(&id))
                }
                Err(e) => legacy_error_reply(Some(&id), &e),
            },
            Method::Subscribe => match parse::<SubscribeRequestParams>(raw) {
                Ok(p) => {
                    session.subscribe(p.uri);
                    Reply::message(200, encode_empty(&id))
                }
                Err(e) => legacy_error_reply(Some(&id), &e),
            },
            Method::Unsubscribe => match parse::<UnsubscribeRequestParams>(raw) {
                Ok(p) => {
                    session.unsubscribe(&p.uri);
                    Reply::message(200, encode_empty(&id))
                }
                Err(e) => legacy_error_reply(Some(&id), &e),
            },
            Method::ToolsList => {
                self.legacy_serve(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().list_tools_prepared(ctx, p).await
                })
                .await
            }
            Method::PromptsList => {
                self.legacy_serve(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().list_prompts_prepared(ctx, p).await
                })
                .await
            }
            Method::ResourcesList => {
                self.legacy_serve(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().list_resources_prepared(ctx, p).await
                })
                .await
            }
            Method::ResourceTemplatesList => {
                self.legacy_serve(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler()
                        .list_resource_templates_prepared(ctx, p)
                        .await
                })
                .await
            }
            Method::Complete => {
                self.legacy_serve(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    let result = this.handler().complete(ctx, p).await;
                    result.map(PreparedResult::value)
                })
                .await
            }
            Method::ToolsCall => {
                self.legacy_outcome(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().call_tool(ctx, p).await
                })
                .await
            }
            Method::PromptsGet => {
                self.legacy_outcome(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().get_prompt(ctx, p).await
                })
                .await
            }
            Method::ResourcesRead => {
                self.legacy_outcome(s, id, resolved, raw, origin, |this, ctx, p| async move {
                    this.handler().read_resource(ctx, p).await
                })
                .await
            }
        }
    }

    /// The context of one handler invocation on a legacy session: the session's version,
    /// capabilities, client and log level stand in for the modern per-request envelope (and
    /// win over anything a legacy client put in `_meta`).
    #[allow(clippy::too_many_arguments)]
    fn legacy_context(
        &self,
        session: &Arc<LegacySession>,
        id: &RequestId,
        method: Method,
        meta: &RequestMeta,
        origin: &RequestOrigin,
        sink: Option<NotificationSink>,
        cancel: CancellationToken,
        opened: Option<StatePayload>,
    ) -> RequestContext {
        let meta = RequestMeta {
            protocol_version: Some(session.version.as_str().to_owned()),
            client_capabilities: Some(session.capabilities.clone()),
            client_info: Some(session.client_info.clone()),
            log_level: Some(session.log_level()),
            ..meta.clone()
        };
        let config = self.config();
        let peer = LegacyPeer {
            session: session.clone(),
            sink: sink.clone(),
            transport: origin.transport,
            timeout: config.legacy.input_timeout,
        };
        RequestContext {
            inner: Arc::new(ContextInner {
                id: id.clone(),
                method: method.name(),
                meta,
                era: Era::Legacy(session.version.clone()),
                transport: origin.transport,
                sink,
                logging_enabled: config.capabilities.logging.is_some(),
                cancel,
                extensions: origin.extensions.clone(),
                last_progress: AtomicU64::new(u64::MAX),
                opened,
                carry: std::sync::Mutex::new(None),
                limits: config.mrtr,
                legacy: Some(peer),
            }),
        }
    }

    fn stream_channel(method: Method) -> (Option<NotificationSink>, Option<NoteReceiver>) {
        if method.may_notify() {
            let (tx, rx) = note_channel::channel(STREAM_BUFFER);
            (Some(NotificationSink::new(tx)), Some(rx))
        } else {
            (None, None)
        }
    }

    /// Serves a method whose result is always final, in the legacy shape.
    async fn legacy_serve<P, R, F, Fut>(
        &self,
        session: &Arc<LegacySession>,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        call: F,
    ) -> Reply
    where
        P: WireParams,
        R: Serialize + Send + 'static,
        F: FnOnce(Server<H>, RequestContext, P) -> Fut,
        Fut: Future<Output = HandlerResult<PreparedResult<R>>> + Send + 'static,
    {
        let mut params: P = match parse(raw) {
            Ok(p) => p,
            Err(e) => return legacy_error_reply(Some(&id), &e),
        };
        let meta = params.take_meta();
        let (sink, rx) = Self::stream_channel(method);
        let cancel = session.cancel.child_token();
        let ctx = self.legacy_context(
            session,
            &id,
            method,
            &meta,
            &origin,
            sink,
            cancel.clone(),
            None,
        );
        let fut = call(self.clone(), ctx, params);
        let response = async move {
            let cancel_on_drop = cancel.drop_guard();
            let outcome = fut.await;
            cancel_on_drop.disarm();
            match outcome.map(PreparedResult::into_form) {
                Ok(PreparedForm::Value(result)) => (200, encode_legacy_result(&id, &result)),
                Ok(PreparedForm::Shared(shared)) => (200, encode_legacy_shared(&id, &shared)),
                Err(error) => (200, encode_error(Some(&id), &legacy_error(method, error))),
            }
        };
        finish(response, rx).await
    }

    /// Serves `tools/call`, `prompts/get` or `resources/read` on a legacy session: while the
    /// handler answers `input_required`, the shim asks the client each question as a real
    /// server→client request on this request's stream, then runs the handler again with the
    /// answers (and its own request state, which never leaves the server), under the same
    /// round cap as the modern wire.
    async fn legacy_outcome<P, R, F, Fut>(
        &self,
        session: &Arc<LegacySession>,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        call: F,
    ) -> Reply
    where
        P: WireParams + MrtrParams + Clone,
        R: Serialize + Send + 'static,
        F: Fn(Server<H>, RequestContext, P) -> Fut + Send + 'static,
        Fut: Future<Output = HandlerResult<Outcome<R>>> + Send + 'static,
    {
        let mut params: P = match parse(raw) {
            Ok(p) => p,
            Err(e) => return legacy_error_reply(Some(&id), &e),
        };
        let meta = params.take_meta();
        // Neither exists on the legacy wire; whatever a client put there is not trusted.
        *params.request_state_mut() = None;
        *params.input_responses_mut() = None;
        let (sink, rx) = Self::stream_channel(method);
        let cancel = session.cancel.child_token();
        let this = self.clone();
        let session = session.clone();
        let response = async move {
            let cancel_on_drop = cancel.clone().drop_guard();
            let result = this
                .run_rounds(
                    &session, &id, method, &meta, &origin, sink, &cancel, params, call,
                )
                .await;
            cancel_on_drop.disarm();
            match result {
                Ok(body) => (200, body),
                Err(error) => (200, encode_error(Some(&id), &legacy_error(method, error))),
            }
        };
        finish(response, rx).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_rounds<P, R, F, Fut>(
        &self,
        session: &Arc<LegacySession>,
        id: &RequestId,
        method: Method,
        meta: &RequestMeta,
        origin: &RequestOrigin,
        sink: Option<NotificationSink>,
        cancel: &CancellationToken,
        mut params: P,
        call: F,
    ) -> Result<Bytes, ErrorObject>
    where
        P: WireParams + MrtrParams + Clone,
        R: Serialize + Send + 'static,
        F: Fn(Server<H>, RequestContext, P) -> Fut,
        Fut: Future<Output = HandlerResult<Outcome<R>>> + Send + 'static,
    {
        let limits = self.config().mrtr;
        let mut opened: Option<StatePayload> = None;
        loop {
            let round = opened.as_ref().map_or(0, |p| p.round);
            let ctx = self.legacy_context(
                session,
                id,
                method,
                meta,
                origin,
                sink.clone(),
                cancel.clone(),
                opened.take(),
            );
            let ask = match call(self.clone(), ctx.clone(), params.clone()).await? {
                Outcome::Complete(result) => return Ok(encode_legacy_result(id, &result)),
                Outcome::InputRequired(ask) => ask,
            };
            let (answers, asked) = ctx.take_carry().unwrap_or_default();
            let requests = ask.input_requests.unwrap_or_default();
            if requests.is_empty() && ask.request_state.is_none() && asked.is_empty() {
                tracing::error!(
                    "a handler returned input_required with neither inputRequests nor requestState"
                );
                return Err(ErrorObject::internal_error(
                    "Handler returned an input_required result with nothing to ask",
                ));
            }
            if requests.len() > limits.max_input_requests {
                tracing::error!(
                    requests = requests.len(),
                    "a handler asked more questions than the limit allows"
                );
                return Err(ErrorObject::internal_error(
                    "The handler asked too many questions at once",
                ));
            }
            if round + 1 > limits.max_rounds {
                return Err(ErrorObject::invalid_params(format!(
                    "The request needed more than {} rounds of input",
                    limits.max_rounds
                )));
            }
            let Some(sink) = sink.as_ref() else {
                return Err(ErrorObject::internal_error(
                    "This request has no stream to ask the client on",
                ));
            };
            let responses =
                shim::ask_client(session, sink, requests, self.config().legacy.input_timeout)
                    .await?;
            *params.input_responses_mut() = Some(responses);
            *params.request_state_mut() = ask.request_state;
            opened = Some(StatePayload {
                state: None,
                answers,
                asked,
                round: round + 1,
            });
        }
    }
}

/// Sends the response alone, or (once the request has sent something on its stream) as
/// the last message of the stream.
async fn finish(
    response: impl Future<Output = (u16, Bytes)> + Send + 'static,
    rx: Option<NoteReceiver>,
) -> Reply {
    match rx {
        None => {
            let (status, body) = response.await;
            Reply::message(status, body)
        }
        Some(rx) => respond_lazily(response, rx).await,
    }
}

fn legacy_notification(session: &LegacySession, note: &JsonRpcNotification) {
    match note.method.as_ref() {
        methods::legacy::NOTIFICATIONS_INITIALIZED => session.mark_initialized(),
        // Carried out by the transport, which owns the request tasks.
        methods::NOTIFICATIONS_CANCELLED => {}
        other => tracing::debug!(method = other, "ignored a notification on a legacy session"),
    }
}

fn parse<P: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Result<P, ErrorObject> {
    let parsed = match raw {
        Some(raw) => serde_json::from_str(raw.get()),
        None => serde_json::from_str("{}"),
    };
    parsed.map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
}

/// A JSON-RPC error in the legacy transport's way: HTTP 200, the error in the body.
fn legacy_error_reply(id: Option<&RequestId>, error: &ErrorObject) -> Reply {
    Reply::message(200, encode_error(id, error))
}

/// Maps what a handler (or the multi round-trip layer) answered to the codes of the legacy
/// revisions: a missing client capability (`-32021` does not exist there) becomes
/// `-32600` naming what the client did not declare at `initialize`; an unknown resource
/// becomes `-32002`.
fn legacy_error(method: Method, mut error: ErrorObject) -> ErrorObject {
    if error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
        let required = error
            .data
            .as_ref()
            .and_then(|d| d.get("requiredCapabilities"))
            .cloned()
            .unwrap_or(Value::Null);
        return shim::missing_capability(required);
    }
    if method == Method::ResourcesRead
        && error.code == ErrorCode::INVALID_PARAMS
        && error.data.as_ref().is_some_and(|d| d.get("uri").is_some())
    {
        error.code = ErrorCode::LEGACY_RESOURCE_NOT_FOUND;
    }
    error
}

/// `{"jsonrpc":"2.0","id":…,"result":{}}`.
fn encode_empty(id: &RequestId) -> Bytes {
    encode_raw(id, b"{}")
}

/// Encodes a result without the members only 2026-07-28 has (`resultType`, `ttlMs`,
/// `cacheScope`).
pub(crate) fn encode_legacy_result<R: Serialize>(id: &RequestId, result: &R) -> Bytes {
    let value = match serde_json::to_value(result) {
        Ok(Value::Object(mut map)) => {
            strip_modern_members(&mut map);
            Value::Object(map)
        }
        Ok(_) | Err(_) => {
            tracing::error!("could not serialize a result as a JSON object");
            return encode_error(
                Some(id),
                &ErrorObject::internal_error("Could not serialize the result"),
            );
        }
    };
    match serde_json::to_vec(&value) {
        Ok(bytes) => encode_raw(id, &bytes),
        Err(_) => encode_error(
            Some(id),
            &ErrorObject::internal_error("Could not serialize the result"),
        ),
    }
}

/// Encodes a result serialized beforehand exactly as [`encode_legacy_result`] encodes its
/// value.
fn encode_legacy_shared(id: &RequestId, shared: &Shared) -> Bytes {
    let parsed: JsonObject = match serde_json::from_slice(&shared.json) {
        Ok(map) => map,
        Err(_) => {
            tracing::error!("a prepared result is not a JSON object");
            return encode_error(
                Some(id),
                &ErrorObject::internal_error("Could not serialize the result"),
            );
        }
    };
    // Put `_meta` back where the value has it, right after `resultType`, so that stripping
    // leaves the members in the same order.
    let mut map = JsonObject::with_capacity(parsed.len() + 1);
    let mut members = parsed.into_iter().peekable();
    if let Some(meta) = &shared.meta {
        if let Some((key, value)) = members.next_if(|(key, _)| key == "resultType") {
            map.insert(key, value);
        }
        map.insert("_meta".to_owned(), Value::Object(meta.clone()));
    }
    map.extend(members);
    strip_modern_members(&mut map);
    match serde_json::to_vec(&map) {
        Ok(bytes) => encode_raw(id, &bytes),
        Err(_) => encode_error(
            Some(id),
            &ErrorObject::internal_error("Could not serialize the result"),
        ),
    }
}

fn encode_raw(id: &RequestId, result: &[u8]) -> Bytes {
    let mut buf = Vec::with_capacity(32 + result.len());
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    // Ids always serialize.
    let _ = serde_json::to_writer(&mut buf, id);
    buf.extend_from_slice(b",\"result\":");
    buf.extend_from_slice(result);
    buf.push(b'}');
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ServerConfig;

    #[test]
    fn tells_legacy_initialize_from_modern() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        let legacy = raw(
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#,
        );
        assert!(is_legacy_initialize("initialize", Some(&legacy)));
        let modern = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        assert!(!is_legacy_initialize("initialize", Some(&modern)));
        assert!(!is_legacy_initialize("tools/list", Some(&legacy)));
        assert!(ServerConfig::new("a", "1").legacy.is_enabled());
    }
}
