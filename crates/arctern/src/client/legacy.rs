//! The legacy era (2025-11-25, 2025-06-18) on the client: `initialize`, the session's
//! server→client requests and notifications, and `resources/subscribe`.
//!
//! A legacy session differs from the modern wire in four ways, all handled here so that the
//! rest of the client stays the same:
//!
//! - the version and capabilities are negotiated once with `initialize` (then
//!   `notifications/initialized`), not sent in every request's `_meta`;
//! - the server asks for input with real JSON-RPC requests (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`, `ping`) instead of `input_required` results: each
//!   is answered by the same handlers the modern loop uses, and the answer goes back as a
//!   JSON-RPC response ([`Transport::notify`](super::Transport::notify));
//! - notifications that belong to no request (list changes, resource updates, log messages)
//!   arrive on the session — the HTTP `GET` stream or stdio — and go to the [`Hub`];
//! - over HTTP the transport keeps the `Mcp-Session-Id` and ends the session with `DELETE`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::elicitation::ElicitRequestParams;
use arctern_types::jsonrpc::{
    JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
};
use arctern_types::legacy::{
    InitializeRequestParams, InitializeResult, ServerRequest, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams, client_capabilities_for,
};
use arctern_types::logging::LoggingLevel;
use arctern_types::methods;
use arctern_types::mrtr::InputRequest;
use arctern_types::subscriptions::SubscriptionFilter;
use arctern_types::version::ProtocolVersion;
use arctern_types::{ErrorCode, ErrorObject};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use super::error::VersionError;
use super::handler::InputOrigin;
use super::negotiate::Negotiated;
use super::notify::{ChangeHook, Observer, Subscription};
use super::pipeline::Via;
use super::{Client, Inner, Req, headers, wire};
use crate::transport::{MessageStream, OutgoingMessage};
use crate::{Era, Error, ErrorKind, Result};

/// Notifications buffered per legacy subscription before further ones are dropped.
const SUBSCRIPTION_BUFFER: usize = 256;

/// Where the session-wide notifications of a legacy server go: the client's progress and log
/// callbacks, and the open subscriptions.
pub(crate) struct Hub {
    observer: Observer,
    subscribers: Mutex<Vec<Subscriber>>,
    /// Held while `resources/subscribe` or `resources/unsubscribe` requests are sent, so that
    /// a subscription opening and another one closing cannot interleave their requests and
    /// leave the server unsubscribed from a URI somebody still watches.
    resource_requests: tokio::sync::Mutex<()>,
}

struct Subscriber {
    filter: SubscriptionFilter,
    tx: futures::channel::mpsc::Sender<Result<JsonRpcMessage>>,
}

impl Subscriber {
    fn wants(&self, note: &JsonRpcNotification) -> bool {
        let f = &self.filter;
        match note.method.as_ref() {
            methods::NOTIFICATIONS_TOOLS_LIST_CHANGED => f.tools_list_changed == Some(true),
            methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED => f.prompts_list_changed == Some(true),
            methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED => f.resources_list_changed == Some(true),
            methods::NOTIFICATIONS_RESOURCES_UPDATED => {
                #[derive(serde::Deserialize)]
                struct Uri {
                    uri: String,
                }
                let uri = note
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Uri>(p.get()).ok());
                match (uri, &f.resource_subscriptions) {
                    // The server may name a sub-resource of a subscribed URI.
                    (Some(u), Some(uris)) => uris.iter().any(|s| u.uri.starts_with(s.as_str())),
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

impl Hub {
    pub(crate) fn new(observer: Observer) -> Self {
        Hub {
            observer,
            subscribers: Mutex::new(Vec::new()),
            resource_requests: tokio::sync::Mutex::new(()),
        }
    }

    /// Hands a notification that belongs to no request to whoever wants it.
    pub(crate) fn dispatch(&self, note: JsonRpcNotification) {
        match note.method.as_ref() {
            // Progress belongs to a request; outside one, it belongs to none.
            methods::NOTIFICATIONS_PROGRESS => {
                tracing::debug!("dropped progress that belongs to no request in flight");
            }
            methods::NOTIFICATIONS_MESSAGE => self.observer.dispatch(&note),
            _ => {
                let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
                // A closed subscription (dropped by its owner) is forgotten here.
                subscribers.retain(|s| !s.tx.is_closed());
                let mut delivered = false;
                for s in subscribers.iter_mut().filter(|s| s.wants(&note)) {
                    delivered = true;
                    let copy = JsonRpcNotification {
                        jsonrpc: note.jsonrpc,
                        method: note.method.clone(),
                        params: note.params.clone(),
                    };
                    if s.tx
                        .try_send(Ok(JsonRpcMessage::Notification(copy)))
                        .is_err()
                    {
                        tracing::debug!(method = %note.method, "dropped a notification for a subscription that does not keep up");
                    }
                }
                if !delivered {
                    tracing::debug!(method = %note.method, "ignored a session notification");
                }
            }
        }
    }

    /// The resource URIs that the open subscriptions watch (closed ones are forgotten).
    fn watched_uris(&self) -> HashSet<String> {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subscribers.retain(|s| !s.tx.is_closed());
        subscribers
            .iter()
            .flat_map(|s| s.filter.resource_subscriptions.iter().flatten())
            .cloned()
            .collect()
    }

    fn add(&self, filter: SubscriptionFilter) -> MessageStream {
        let (tx, rx) = futures::channel::mpsc::channel(SUBSCRIPTION_BUFFER);
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Subscriber { filter, tx });
        Box::pin(rx)
    }
}

/// The requests of a legacy session in flight, so that a server request that arrives outside
/// their response streams (stdio, the HTTP `GET` stream) can be tied to the only one open.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<HashMap<i64, Arc<InputOrigin>>>,
}

/// Removes its call from [`InFlight`] when dropped.
pub(crate) struct InFlightGuard<'a> {
    set: &'a InFlight,
    id: i64,
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.set
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl InFlight {
    pub(crate) fn enter(&self, id: i64, origin: Arc<InputOrigin>) -> InFlightGuard<'_> {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, origin);
        InFlightGuard { set: self, id }
    }

    /// The origin of a request that arrived outside any response stream: the call in flight
    /// when there is exactly one, else an unknown origin (empty method and target).
    fn guess(&self) -> Arc<InputOrigin> {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        match calls.values().next() {
            Some(origin) if calls.len() == 1 => origin.clone(),
            _ => Arc::new(InputOrigin::new("", "")),
        }
    }

    /// Whether a call that may ask questions is in flight.
    fn any(&self) -> bool {
        !self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }
}

impl Client {
    /// The era of the protocol this client speaks with its server.
    pub fn era(&self) -> Era {
        self.negotiated().era
    }

    /// Whether this client speaks a legacy (2025-era) revision with its server.
    pub fn is_legacy(&self) -> bool {
        self.era() == Era::Legacy
    }

    /// Sends `ping` and waits for the answer (legacy sessions only: 2026-07-28 removed
    /// `ping`, and this fails with [`ErrorKind::Config`] there).
    pub async fn ping(&self) -> Result<()> {
        self.require_legacy("ping")?;
        let _: (Value, _) = self
            .request(
                methods::legacy::PING,
                &wire::NoParams {},
                &Observer::default(),
            )
            .await?;
        Ok(())
    }

    /// Asks a legacy server to send log messages at `level` or more severe
    /// (`logging/setLevel`). They reach the client's log callback
    /// ([`ClientBuilder::on_log`](super::ClientBuilder::on_log), which also sends this when the
    /// session opens). On 2026-07-28 the level travels with each request instead, and this
    /// fails with [`ErrorKind::Config`].
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<()> {
        self.require_legacy("logging/setLevel")?;
        let _: (Value, _) = self
            .request(
                methods::legacy::LOGGING_SET_LEVEL,
                &SetLevelRequestParams::new(level),
                &Observer::default(),
            )
            .await?;
        Ok(())
    }

    /// Tells a legacy server that the client's roots changed
    /// (`notifications/roots/list_changed`); it will ask for them again. On 2026-07-28
    /// servers ask for roots in each request that needs them, and this does nothing.
    pub async fn notify_roots_changed(&self) -> Result<()> {
        if !self.is_legacy() {
            return Ok(());
        }
        self.send_notification(methods::legacy::NOTIFICATIONS_ROOTS_LIST_CHANGED)
            .await
    }

    fn require_legacy(&self, what: &str) -> Result<()> {
        if self.is_legacy() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Config,
                format!("{what} exists only on legacy (2025-era) sessions"),
            ))
        }
    }

    /// The `MCP-Protocol-Version` header of a legacy session's requests (HTTP only).
    pub(crate) fn legacy_headers(&self, negotiated: &Negotiated) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        if self.inner.mirrors {
            headers.insert(
                headers::MCP_PROTOCOL_VERSION,
                negotiated.version_header.clone(),
            );
        }
        headers
    }

    async fn send_notification(&self, method: &'static str) -> Result<()> {
        let note = JsonRpcNotification::<()> {
            jsonrpc: Default::default(),
            method: method.into(),
            params: None,
        };
        let body = serde_json::to_vec(&note).map_err(|e| {
            Error::new(ErrorKind::Codec, "could not encode a notification").with_source(e)
        })?;
        let mut message = OutgoingMessage::new(None, method, Bytes::from(body));
        message.headers = self.legacy_headers(&self.negotiated());
        self.inner.transport.notify(message).await
    }

    /// Opens a legacy session: `initialize` with the preferred legacy version, then
    /// `notifications/initialized`, the `GET` stream (HTTP) and `logging/setLevel` when
    /// the client has a log callback and the server logs. `via`: the layers below the one
    /// that renews a session, and the headers of the request that found it gone.
    pub(crate) async fn initialize(&self, via: Option<&Via>) -> Result<InitializeResult> {
        let Some(proposal) = self.inner.legacy_versions.first().cloned() else {
            return Err(Error::new(
                ErrorKind::Config,
                "no legacy protocol version is offered",
            ));
        };
        let params = InitializeRequestParams::new(
            proposal.as_str(),
            client_capabilities_for(&proposal, self.inner.capabilities.clone()),
            self.inner.info.clone(),
        );
        let observer = Observer::default();
        let req = Req {
            method: methods::legacy::INITIALIZE,
            params: &params,
            name: None,
            observer: &observer,
            timeout: None,
            renew: false,
            round: None,
        };
        // No version header: a dual-era server routes a bare `initialize` to its legacy side.
        let headers = via.map(|v| v.headers.clone()).unwrap_or_default();
        let request = self.request_of(&req, http::HeaderMap::new())?;
        let id = self.next_id();
        let body = wire::encode_legacy_request(
            id,
            req.method,
            req.params,
            None,
            &wire::TraceFields::default(),
        )?;
        let legacy = self.is_legacy();
        let raw = self.round_trip(id, body, headers, &request, legacy).await?;
        let result: InitializeResult = wire::decode(&raw, "initialize")?;
        let Some(version) = self
            .inner
            .legacy_versions
            .iter()
            .find(|v| v.as_str() == result.protocol_version)
            .cloned()
        else {
            return Err(VersionError {
                server: vec![result.protocol_version.clone()],
                client: self
                    .inner
                    .legacy_versions
                    .iter()
                    .map(|v| v.as_str().to_owned())
                    .collect(),
                note: Some(
                    "the server answered initialize with a version this client does not offer"
                        .into(),
                ),
            }
            .into_error());
        };
        let next = Negotiated::legacy(version, &result);
        self.set_negotiated(next);
        self.within_idle(
            "notifications/initialized",
            self.send_notification(methods::legacy::NOTIFICATIONS_INITIALIZED),
        )
        .await?;
        self.open_listener().await;
        // Never through session renewal: a server that answers this with 404 would have
        // `initialize` call itself without end.
        if let Some(level) = self.inner.observer.log_level()
            && result.capabilities.logging.is_some()
        {
            let set: Result<(Value, _)> = self
                .request_with(
                    methods::legacy::LOGGING_SET_LEVEL,
                    &SetLevelRequestParams::new(level),
                    &Observer::default(),
                    false,
                    via,
                )
                .await;
            if let Err(e) = set {
                tracing::debug!(error = %e, "logging/setLevel failed");
            }
        }
        tracing::debug!(version = %result.protocol_version, "legacy session open");
        Ok(result)
    }

    /// `work`, failed with a timeout when it takes longer than the idle-response timeout.
    async fn within_idle<T>(
        &self,
        what: &str,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        match self.inner.limits.idle_response_timeout {
            None => work.await,
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Timeout,
                    format!("{what}: the server sent nothing for {limit:?}"),
                ))
            }),
        }
    }

    /// Starts reading the session's `GET` stream, if the transport and server have one.
    async fn open_listener(&self) {
        let headers = self.legacy_headers(&self.negotiated());
        let listen = self.inner.transport.listen(headers);
        let stream = match self.within_idle("the session's GET stream", listen).await {
            Ok(Some(stream)) => stream,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(error = %e, "could not open the session's GET stream");
                return;
            }
        };
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(listen_loop(weak, stream));
        let previous = self
            .inner
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task);
        if let Some(previous) = previous {
            previous.abort();
        }
    }

    /// Answers a request a legacy server sent outside a response stream: on stdio, or on
    /// the HTTP `GET` stream, where 2025-era servers may ask on behalf of a call (the
    /// official conformance suite's do). Either way it is taken to belong to the calls in
    /// flight; when no call that may ask is in flight, it belongs to no request and gets
    /// `-32602` (SEP-2260) unless the client was told to answer them; `ping` is always
    /// answered. A few are answered at a time; beyond the cap on waiting ones, they are
    /// refused.
    pub(crate) fn spawn_answer(&self, request: JsonRpcRequest) {
        let client = self.clone();
        let ping = request.method == methods::legacy::PING;
        let associated = self.inner.in_flight.any();
        if !ping && !associated && !self.inner.limits.answer_unassociated {
            let error = ErrorObject::invalid_params(format!(
                "{} belongs to no request of this client (SEP-2260)",
                request.method
            ));
            tokio::spawn(async move { client.refuse_server_request(request, error).await });
            return;
        }
        let Ok(waiting) = self.inner.stray_slots.clone().try_acquire_owned() else {
            let error = ErrorObject::internal_error(format!(
                "this client answers at most {} questions at a time",
                self.inner.limits.max_input_requests
            ));
            tokio::spawn(async move { client.refuse_server_request(request, error).await });
            return;
        };
        let origin = self.inner.in_flight.guess();
        tokio::spawn(async move {
            let _running = client.inner.answer_slots.clone().acquire_owned().await;
            drop(waiting);
            client.answer_server_request(request, origin).await
        });
    }

    /// Answers a server→client request with `error`.
    pub(crate) async fn refuse_server_request(&self, request: JsonRpcRequest, error: ErrorObject) {
        tracing::debug!(method = %request.method, %error, "refused a server request");
        self.send_answer(
            &request.method,
            serde_json::to_vec(&JsonRpcErrorResponse::new(Some(request.id), error)),
        )
        .await;
    }

    /// Answers one server→client request with the client's handlers, and sends the answer.
    pub(crate) async fn answer_server_request(
        &self,
        request: JsonRpcRequest,
        origin: Arc<InputOrigin>,
    ) {
        let id = request.id.clone();
        let method = request.method.clone();
        let body = match self.serve_request(request, origin).await {
            Ok(result) => serde_json::to_vec(&JsonRpcResponse::new(id, result)),
            Err(error) => {
                tracing::debug!(%method, %error, "refused a server request");
                serde_json::to_vec(&JsonRpcErrorResponse::new(Some(id), error))
            }
        };
        self.send_answer(&method, body).await;
    }

    async fn send_answer(&self, method: &str, body: serde_json::Result<Vec<u8>>) {
        let body = match body {
            Ok(body) => Bytes::from(body),
            Err(e) => {
                tracing::warn!(error = %e, "could not encode the answer to a server request");
                return;
            }
        };
        let mut message = OutgoingMessage::new(None, "", body);
        message.headers = self.legacy_headers(&self.negotiated());
        let sent = self.within_idle("an answer", self.inner.transport.notify(message));
        if let Err(e) = sent.await {
            tracing::debug!(error = %e, %method, "could not send the answer to a server request");
        }
    }

    async fn serve_request(
        &self,
        request: JsonRpcRequest,
        origin: Arc<InputOrigin>,
    ) -> std::result::Result<Value, ErrorObject> {
        let negotiated = self.negotiated();
        if negotiated.era != Era::Legacy {
            // 2026-07-28 servers send no requests.
            return Err(ErrorObject::method_not_found(&request.method));
        }
        let params = match request.params.as_deref() {
            None => None,
            Some(raw) => Some(
                serde_json::from_str::<Value>(raw.get())
                    .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))?,
            ),
        };
        let parsed = ServerRequest::from_parts(&request.method, params).map_err(|e| {
            if is_server_request(&request.method) {
                ErrorObject::invalid_params(format!("invalid params: {e}"))
            } else {
                ErrorObject::method_not_found(&request.method)
            }
        })?;
        let Some(input) = parsed.to_input_request() else {
            // `ping`.
            return Ok(Value::Object(serde_json::Map::new()));
        };
        if let Err(missing) = self.inner.handlers.check(&input) {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("this client does not answer {missing}"),
            ));
        }
        // Before 2025-11-25 the client declared neither URL mode nor sampling with tools,
        // whatever its handlers support.
        if negotiated.version < ProtocolVersion::V2025_11_25 {
            let undeclared = match &input {
                InputRequest::Elicit(e) => matches!(e.params, ElicitRequestParams::Url(_))
                    .then_some("URL-mode elicitation"),
                InputRequest::CreateMessage(s) => {
                    s.params.uses_tools().then_some("sampling with tools")
                }
                InputRequest::ListRoots(_) => None,
                _ => None,
            };
            if let Some(what) = undeclared {
                return Err(ErrorObject::invalid_params(format!(
                    "{what} was not declared on {}",
                    negotiated.version
                )));
            }
        }
        // The `inputRequests` key when the server names it (arctern's shim does), else the
        // server's request id.
        let key = parsed
            .input_key()
            .map_or_else(|| request.id.to_string(), str::to_owned);
        // A handler's error is local (a path, a command line, what the user typed): it
        // stays in this process's log, and the server learns only which request went
        // unanswered.
        let answer = self
            .inner
            .handlers
            .answer(key, input, origin, negotiated.server_info.clone(), 1)
            .await
            .map_err(|e| {
                tracing::debug!(method = %request.method, error = %e, "a handler did not answer");
                ErrorObject::internal_error(format!("the client did not answer {}", request.method))
            })?;
        serde_json::to_value(&answer)
            .map_err(|e| ErrorObject::internal_error(format!("could not encode the answer: {e}")))
    }

    /// `subscriptions/listen` on a legacy session: the session's own notifications, filtered;
    /// `resources/subscribe` for each URI (when the server allows subscriptions).
    pub(crate) async fn subscribe_legacy(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<Subscription> {
        let caps = self.negotiated().capabilities.clone().unwrap_or_default();
        let acknowledged = legacy_filter(&filter, &caps);
        let uris: Vec<String> = acknowledged
            .resource_subscriptions
            .iter()
            .flatten()
            .cloned()
            .collect();
        let _serialized = self.inner.hub.resource_requests.lock().await;
        // Listening starts before the first `resources/subscribe`, so that an update sent
        // right after it is not missed. The subscription exists before the requests too: if
        // one fails, dropping it unsubscribes from what was subscribed so far.
        let stream = self.inner.hub.add(acknowledged.clone());
        let id = arctern_types::jsonrpc::RequestId::Number(self.next_id());
        let hook: ChangeHook = self.change_hook();
        let mut subscription = Subscription::local(id, acknowledged, stream, Some(hook));
        if !uris.is_empty() {
            subscription.on_drop(self.unsubscribe_on_drop(uris.clone()));
        }
        for uri in uris {
            let _: (Value, _) = self
                .request(
                    methods::legacy::RESOURCES_SUBSCRIBE,
                    &SubscribeRequestParams::new(uri),
                    &Observer::default(),
                )
                .await?;
        }
        Ok(subscription)
    }

    /// What a closed legacy subscription leaves behind: a task that sends
    /// `resources/unsubscribe` for each of `uris` that no open subscription still watches.
    /// Nothing is sent once the client is gone (its session ends with it) or outside a
    /// Tokio runtime.
    fn unsubscribe_on_drop(&self, uris: Vec<String>) -> Box<dyn FnOnce() + Send> {
        let client = Arc::downgrade(&self.inner);
        Box::new(move || {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(async move {
                let Some(inner) = client.upgrade() else {
                    return;
                };
                Client { inner }.unsubscribe_unwatched(uris).await;
            });
        })
    }

    async fn unsubscribe_unwatched(&self, uris: Vec<String>) {
        let _serialized = self.inner.hub.resource_requests.lock().await;
        let watched = self.inner.hub.watched_uris();
        let unwatched: HashSet<String> = uris
            .into_iter()
            .filter(|uri| !watched.contains(uri))
            .collect();
        for uri in unwatched {
            let sent: Result<(Value, _)> = self
                .request(
                    methods::legacy::RESOURCES_UNSUBSCRIBE,
                    &UnsubscribeRequestParams::new(uri.clone()),
                    &Observer::default(),
                )
                .await;
            if let Err(e) = sent {
                tracing::debug!(%uri, error = %e, "resources/unsubscribe failed");
            }
        }
    }
}

/// What a legacy server can send of what `filter` asks for, by its capabilities.
fn legacy_filter(filter: &SubscriptionFilter, caps: &ServerCapabilities) -> SubscriptionFilter {
    let yes = |asked: Option<bool>, offered: Option<bool>| {
        (asked == Some(true) && offered == Some(true)).then_some(true)
    };
    let can_subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let mut legacy = SubscriptionFilter::default();
    legacy.tools_list_changed = yes(
        filter.tools_list_changed,
        caps.tools.as_ref().and_then(|t| t.list_changed),
    );
    legacy.prompts_list_changed = yes(
        filter.prompts_list_changed,
        caps.prompts.as_ref().and_then(|p| p.list_changed),
    );
    legacy.resources_list_changed = yes(
        filter.resources_list_changed,
        caps.resources.as_ref().and_then(|r| r.list_changed),
    );
    legacy.resource_subscriptions = filter
        .resource_subscriptions
        .clone()
        .filter(|uris| can_subscribe && !uris.is_empty());
    legacy
}

fn is_server_request(method: &str) -> bool {
    method == methods::legacy::PING || methods::INPUT_REQUESTS.contains(&method)
}

/// Sends `notifications/cancelled` for a call of a legacy HTTP session that is given up
/// before its answer (closing its stream is no cancellation on that wire).
pub(crate) struct CancelOnDrop {
    client: Option<Client>,
    id: arctern_types::jsonrpc::RequestId,
}

impl CancelOnDrop {
    /// Armed when `client` is given.
    pub(crate) fn new(client: Option<Client>, id: arctern_types::jsonrpc::RequestId) -> Self {
        CancelOnDrop { client, id }
    }

    /// The call got its answer: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.client = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = self.id.clone();
        handle.spawn(async move {
            let note = JsonRpcNotification::new(
                methods::NOTIFICATIONS_CANCELLED,
                arctern_types::notifications::CancelledNotificationParams::new(id)
                    .with_reason("the client abandoned the request"),
            );
            let Ok(body) = serde_json::to_vec(&note) else {
                return;
            };
            let mut message =
                OutgoingMessage::new(None, methods::NOTIFICATIONS_CANCELLED, Bytes::from(body));
            message.headers = client.legacy_headers(&client.negotiated());
            if let Err(e) = client.inner.transport.notify(message).await {
                tracing::debug!(error = %e, "could not send notifications/cancelled");
            }
        });
    }
}

/// Reads the session's `GET` stream until it ends or the client is gone.
async fn listen_loop(weak: Weak<Inner>, mut stream: MessageStream) {
    while let Some(item) = stream.next().await {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let client = Client { inner };
        match item {
            Ok(JsonRpcMessage::Request(r)) => client.spawn_answer(r),
            Ok(JsonRpcMessage::Notification(n)) => client.inner.hub.dispatch(n),
            Ok(other) => {
                tracing::debug!(id = ?other.id(), "ignored a response on the session's GET stream")
            }
            Err(e) => {
                tracing::debug!(error = %e, "the session's GET stream failed");
                return;
            }
        }
    }
    tracing::debug!("the session's GET stream ended");
}

impl Negotiated {
    /// What an `initialize` answer tells.
    pub(crate) fn legacy(
        version: arctern_types::version::ProtocolVersion,
        result: &InitializeResult,
    ) -> Self {
        let mut next = Negotiated::new(version);
        next.era = Era::Legacy;
        next.server_info = Some(Arc::new(result.server_info.clone()));
        next.capabilities = Some(result.capabilities.clone());
        next.instructions = result.instructions.clone();
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn note(method: &'static str, params: &str) -> JsonRpcNotification {
        JsonRpcNotification {
            jsonrpc: Default::default(),
            method: method.into(),
            params: Some(RawValue::from_string(params.to_owned()).unwrap()),
        }
    }

    #[test]
    fn subscribers_get_what_they_asked_for() {
        let (tx, _rx) = futures::channel::mpsc::channel(1);
        let s = Subscriber {
            filter: SubscriptionFilter::new()
                .with_tools_list_changed()
                .with_resource("file:///a"),
            tx,
        };
        assert!(s.wants(&note(methods::NOTIFICATIONS_TOOLS_LIST_CHANGED, "{}")));
        assert!(!s.wants(&note(methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED, "{}")));
        assert!(s.wants(&note(
            methods::NOTIFICATIONS_RESOURCES_UPDATED,
            r#"{"uri":"file:///a/b"}"#
        )));
        assert!(!s.wants(&note(
            methods::NOTIFICATIONS_RESOURCES_UPDATED,
            r#"{"uri":"file:///z"}"#
        )));
        assert!(!s.wants(&note(methods::NOTIFICATIONS_RESOURCES_UPDATED, "[]")));
    }

    #[test]
    fn a_lone_call_is_the_origin_of_stray_requests() {
        let set = InFlight::default();
        assert_eq!(set.guess().method(), "");
        let guard = set.enter(1, Arc::new(InputOrigin::tool("t")));
        assert_eq!(set.guess().target(), "t");
        {
            let _other = set.enter(2, Arc::new(InputOrigin::tool("u")));
            assert_eq!(set.guess().target(), "");
        }
        assert_eq!(set.guess().target(), "t");
        drop(guard);
        assert_eq!(set.guess().target(), "");
    }
}
