//! One legacy session: what `initialize` negotiated, the session-scoped settings, and the
//! server→client requests waiting for the client's answer.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use arctern_types::capabilities::{ClientCapabilities, ServerCapabilities};
use arctern_types::implementation::Implementation;
use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification};
use arctern_types::legacy::{RequestParams, ServerRequest};
use arctern_types::logging::LoggingLevel;
use arctern_types::methods;
use arctern_types::notifications::{
    CancelledNotificationParams, ResourceUpdatedNotificationParams,
};
use arctern_types::{ErrorObject, ProtocolVersion, RequestId, RequestMeta};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::server::connection::TransportKind;
use crate::server::context::NotificationSink;
use crate::server::subscriptions::{
    Change, ChangeReceiver, ChangeRecvError, SubscriptionPolicy, covers,
};
use crate::{Error, ErrorKind};

/// Where a session's unsolicited messages go (list changes, resource updates): the standalone
/// `GET` stream of an HTTP session, or the output of a stdio connection.
pub(crate) type Outbound = Arc<dyn Fn(Bytes) + Send + Sync>;

/// The answer a server→client request waits for.
type Answer = Result<Value, ErrorObject>;

/// No `logging/setLevel` yet: every message is sent (the legacy revisions let the server
/// decide until the client sets a level).
const LEVEL_UNSET: u8 = u8::MAX;

/// A legacy session, shared by every request served on it.
pub(crate) struct LegacySession {
    /// The negotiated revision.
    pub(crate) version: ProtocolVersion,
    /// What the client declared at `initialize`, reduced to what the revision has; shared
    /// with the envelope of every request of the session.
    pub(crate) capabilities: Arc<ClientCapabilities>,
    /// Who the client says it is.
    pub(crate) client_info: Implementation,
    log_level: AtomicU8,
    initialized: AtomicBool,
    subscriptions: Mutex<HashSet<String>>,
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
    /// Cancelled when the session ends (HTTP `DELETE`, expiry, the stdio connection closing,
    /// the server shutting down): ends the change forwarder and every request of the session.
    pub(crate) cancel: CancellationToken,
    outbound: Outbound,
    /// The extensions of the `initialize` that opened the session (its principal), for the
    /// subscription policy's filter.
    subscriber: http::Extensions,
    /// Records the session's duration when it ends (feature `otel`).
    #[cfg(feature = "otel")]
    clock: Option<crate::otel::SessionClock>,
}

impl fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacySession")
            .field("version", &self.version)
            .field("client", &self.client_info.name)
            .finish_non_exhaustive()
    }
}

impl LegacySession {
    pub(crate) fn new(
        version: ProtocolVersion,
        capabilities: ClientCapabilities,
        client_info: Implementation,
        cancel: CancellationToken,
        outbound: Outbound,
        subscriber: http::Extensions,
    ) -> Self {
        LegacySession {
            version,
            capabilities: Arc::new(capabilities),
            client_info,
            log_level: AtomicU8::new(LEVEL_UNSET),
            initialized: AtomicBool::new(false),
            subscriptions: Mutex::new(HashSet::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            cancel,
            outbound,
            subscriber,
            #[cfg(feature = "otel")]
            clock: None,
        }
    }

    /// Times the session for `mcp.server.session.duration`.
    #[cfg(feature = "otel")]
    pub(crate) fn timed(mut self, telemetry: Option<&crate::otel::ServerTelemetry>) -> Self {
        self.clock = telemetry.map(|t| {
            crate::otel::SessionClock::start(
                t,
                self.version.as_str(),
                crate::server::connection::TransportKind::Other,
            )
        });
        self
    }

    /// The envelope of a request on this session: what `initialize` negotiated stands in for
    /// the 2026-07-28 `_meta` (and wins over anything a legacy client put there; its progress
    /// token and other members are kept).
    pub(crate) fn envelope(&self, meta: RequestMeta) -> RequestMeta {
        let mut meta = meta;
        meta.protocol_version = Some(self.version.as_str().to_owned());
        meta.client_capabilities = Some(self.capabilities.clone());
        meta.client_info = Some(self.client_info.clone());
        meta.log_level = Some(self.log_level());
        meta
    }

    /// The least severe level the client wants (`debug`, that is everything, until it calls
    /// `logging/setLevel`).
    pub(crate) fn log_level(&self) -> LoggingLevel {
        match self.log_level.load(Ordering::Relaxed) {
            LEVEL_UNSET => LoggingLevel::Debug,
            i => LoggingLevel::ALL
                .get(usize::from(i))
                .copied()
                .unwrap_or(LoggingLevel::Debug),
        }
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        let index = LoggingLevel::ALL
            .iter()
            .position(|l| *l == level)
            .unwrap_or(0);
        self.log_level
            .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
    }

    /// Records `notifications/initialized`.
    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Whether the client sent `notifications/initialized`.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// Adds a resource subscription within the policy's limits.
    pub(crate) fn subscribe(
        &self,
        uri: String,
        policy: &SubscriptionPolicy,
    ) -> Result<(), ErrorObject> {
        let mut subscriptions = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        if subscriptions.contains(&uri) {
            return Ok(());
        }
        policy.check([&uri], subscriptions.len())?;
        subscriptions.insert(uri);
        Ok(())
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uri);
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| covers(s, uri))
    }

    /// Sends a message outside any request (the `GET` stream, or the stdio output).
    pub(crate) fn send_unsolicited(&self, message: Bytes) {
        (self.outbound)(message);
    }

    /// Routes a client's response to the server→client request it answers. Returns whether a
    /// request was waiting for it.
    pub(crate) fn deliver(&self, message: JsonRpcMessage) -> bool {
        let (id, answer) = match message {
            JsonRpcMessage::Response(r) => {
                let value = serde_json::from_str(r.result.get()).unwrap_or(Value::Null);
                (Some(r.id), Ok(value))
            }
            JsonRpcMessage::Error(e) => (e.id, Err(e.error)),
            _ => return false,
        };
        let Some(RequestId::Number(n)) = id else {
            tracing::debug!(
                ?id,
                "ignored a response that answers no request of this server"
            );
            return false;
        };
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&n);
        match waiting {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => {
                tracing::debug!(id = n, "ignored a response to a request no longer waiting");
                false
            }
        }
    }

    /// Ends the session: its requests and its change forwarder stop, and server→client
    /// requests still waiting fail.
    pub(crate) fn close(&self) {
        self.cancel.cancel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Sends `request` to the client on a request's stream (`sink`) and waits for the answer.
    ///
    /// Fails with [`ErrorKind::Timeout`] after `timeout` (the client is then told with
    /// `notifications/cancelled`), [`ErrorKind::Closed`] when the stream or the session is
    /// gone, and [`ErrorKind::Protocol`] when the client answered with an error.
    pub(crate) async fn request(
        &self,
        sink: &NotificationSink,
        request: &ServerRequest,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // A CLIENT span of the server's, whose context travels in the request's `_meta`.
        #[cfg(feature = "otel")]
        let outgoing = self
            .clock
            .as_ref()
            .map(|clock| clock.outgoing(request.method(), id));
        #[cfg(feature = "otel")]
        let traced = outgoing.as_ref().and_then(|o| {
            let fields = o.trace_fields();
            (!fields.is_empty()).then(|| {
                let mut traced = request.clone();
                for (key, value) in fields {
                    traced.insert_meta(key, value);
                }
                traced
            })
        });
        #[cfg(feature = "otel")]
        let request = traced.as_ref().unwrap_or(request);
        let answer = self.exchange(sink, request, id, timeout).await;
        #[cfg(feature = "otel")]
        if let Some(outgoing) = outgoing {
            outgoing.finish(&answer);
        }
        answer
    }

    /// Sends `request` with JSON-RPC id `id` and waits for the answer.
    async fn exchange(
        &self,
        sink: &NotificationSink,
        request: &ServerRequest,
        id: i64,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let message = request
            .to_jsonrpc(RequestId::Number(id))
            .and_then(|r| serde_json::to_vec(&r))
            .map_err(|e| {
                Error::new(ErrorKind::Codec, "could not encode a request").with_source(e)
            })?;
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let mut guard = Pending {
            session: self,
            id,
            sink,
            answered: false,
        };
        if !sink.send_bytes(Bytes::from(message)).await {
            return Err(Error::new(
                ErrorKind::Closed,
                "the request's stream is closed",
            ));
        }
        tokio::select! {
            answer = rx => {
                guard.answered = true;
                match answer {
                    Ok(Ok(value)) => Ok(value),
                    Ok(Err(error)) => Err(Error::protocol(error)),
                    Err(_) => Err(Error::new(ErrorKind::Closed, "the session ended")),
                }
            }
            () = tokio::time::sleep(timeout) => Err(Error::new(
                ErrorKind::Timeout,
                format!("the client did not answer {} within {timeout:?}", request.method()),
            )),
            () = self.cancel.cancelled() => {
                guard.answered = true;
                Err(Error::new(ErrorKind::Closed, "the session ended"))
            }
        }
    }
}

/// A server→client request waiting for its answer; on drop without one (timeout, the call
/// was cancelled or failed elsewhere) it is forgotten and the client told with
/// `notifications/cancelled`.
struct Pending<'a> {
    session: &'a LegacySession,
    id: i64,
    sink: &'a NotificationSink,
    answered: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let removed = self
            .session
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        if !self.answered && removed.is_some() {
            let params = CancelledNotificationParams::new(RequestId::Number(self.id))
                .with_reason("The server no longer needs the answer");
            let note = JsonRpcNotification::new(methods::NOTIFICATIONS_CANCELLED, params);
            if let Ok(bytes) = serde_json::to_vec(&note) {
                self.sink.try_send_bytes(Bytes::from(bytes));
            }
        }
    }
}

/// Forwards list changes and updates of subscribed resources to a session's unsolicited
/// stream until the session ends.
pub(crate) async fn forward_changes(
    session: Weak<LegacySession>,
    mut changes: ChangeReceiver,
    capabilities: ServerCapabilities,
    policy: SubscriptionPolicy,
    cancel: CancellationToken,
) {
    let tools = capabilities.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = capabilities.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
    let resources = capabilities.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
    let subscribe = capabilities.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    loop {
        let change = tokio::select! {
            () = cancel.cancelled() => return,
            change = changes.recv() => change,
        };
        let Some(session) = session.upgrade() else {
            return;
        };
        let changes_to_send = match change {
            Ok(change) => vec![change],
            Err(ChangeRecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "a legacy session fell behind on changes; announcing every list as changed"
                );
                vec![
                    Change::ToolsListChanged,
                    Change::PromptsListChanged,
                    Change::ResourcesListChanged,
                ]
            }
            Err(ChangeRecvError::Closed) => return,
        };
        for change in changes_to_send {
            let message = match &change {
                Change::ToolsListChanged if tools => {
                    notification(methods::NOTIFICATIONS_TOOLS_LIST_CHANGED, None)
                }
                Change::PromptsListChanged if prompts => {
                    notification(methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED, None)
                }
                Change::ResourcesListChanged if resources => {
                    notification(methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED, None)
                }
                Change::ResourceUpdated(uri)
                    if subscribe
                        && session.is_subscribed(uri)
                        && policy.allows(&session.subscriber, uri) =>
                {
                    let params =
                        ResourceUpdatedNotificationParams::without_subscription(uri.to_string());
                    notification(
                        methods::NOTIFICATIONS_RESOURCES_UPDATED,
                        serde_json::to_value(params).ok(),
                    )
                }
                _ => None,
            };
            if let Some(message) = message {
                session.send_unsolicited(message);
            }
        }
    }
}

fn notification(method: &'static str, params: Option<Value>) -> Option<Bytes> {
    let note = JsonRpcNotification {
        jsonrpc: Default::default(),
        method: method.into(),
        params,
    };
    serde_json::to_vec(&note).ok().map(Bytes::from)
}

/// What a handler can do with the legacy client serving its request: learn what was
/// negotiated, ping it, and (over Streamable HTTP) close the request's SSE connection so the
/// client resumes it later (2025-11-25 polling).
///
/// Only requests on a legacy session have one ([`RequestContext::legacy`]); handlers never
/// need it to ask the client for input: multi round-trip results reach legacy clients
/// through the shim.
///
/// [`RequestContext::legacy`]: crate::server::RequestContext::legacy
#[derive(Clone)]
pub struct LegacyPeer {
    pub(crate) session: Arc<LegacySession>,
    pub(crate) sink: Option<NotificationSink>,
    pub(crate) transport: TransportKind,
    pub(crate) timeout: Duration,
}

impl fmt::Debug for LegacyPeer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyPeer")
            .field("version", &self.session.version)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl LegacyPeer {
    /// The revision the session speaks.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.session.version
    }

    /// Who the client said it is at `initialize`. Self-reported: for display and logs.
    pub fn client_info(&self) -> &Implementation {
        &self.session.client_info
    }

    /// What the client declared at `initialize` (what the revision has of it).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.session.capabilities
    }

    /// Whether the client has sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.session.is_initialized()
    }

    /// Pings the client on this request's stream and waits for its answer (at most the
    /// server's [`LegacyConfig::input_timeout`](super::LegacyConfig::input_timeout)).
    pub async fn ping(&self) -> crate::Result<()> {
        let Some(sink) = &self.sink else {
            return Err(Error::new(
                ErrorKind::Closed,
                "this request has no stream to send a ping on",
            ));
        };
        self.session
            .request(
                sink,
                &ServerRequest::Ping(RequestParams::default()),
                self.timeout,
            )
            .await
            .map(|_| ())
    }

    /// Over Streamable HTTP: ends the HTTP response carrying this request's SSE stream
    /// without ending the stream (2025-11-25 polling, SEP-1699). Everything sent so far is
    /// delivered first; what the request sends afterwards, including its result, waits in
    /// the stream's replay buffer until the client reconnects with `GET` and `Last-Event-ID`.
    /// The response becomes an SSE stream if it was not one yet.
    ///
    /// Returns `false` (and does nothing) on other transports.
    pub async fn close_sse_stream(&self) -> bool {
        match (&self.sink, self.transport) {
            // An empty message is the in-band signal to the HTTP transport: it keeps its place
            // among the request's messages, so everything sent before it is delivered first.
            (Some(sink), TransportKind::Http) => sink.send_bytes(Bytes::new()).await,
            _ => false,
        }
    }
}
