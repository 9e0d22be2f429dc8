//! Notifications the client receives: progress and log callbacks, and
//! `subscriptions/listen` streams.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, RequestId};
use arctern_types::logging::{LoggingLevel, LoggingMessageNotificationParams};
use arctern_types::meta::SUBSCRIPTION_ID_KEY;
use arctern_types::methods;
use arctern_types::notifications::CancelledNotificationParams;
use arctern_types::progress::{ProgressNotificationParams, ProgressToken};
use arctern_types::subscriptions::SubscriptionFilter;
use futures::Stream;
use serde::Deserialize;

use crate::transport::MessageStream;
use crate::{Error, ErrorKind, Result};

/// A progress callback: called with every `notifications/progress` of a request.
pub type ProgressFn = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// A log callback: called with every `notifications/message` of a request.
pub type LogFn = Arc<dyn Fn(LoggingMessageNotificationParams) + Send + Sync>;

/// The callbacks that watch one request (or, as the client's defaults, every request).
#[derive(Clone, Default)]
pub(crate) struct Observer {
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) log: Option<(LoggingLevel, LogFn)>,
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.as_ref().map(|(l, _)| *l))
            .finish()
    }
}

impl Observer {
    /// A call's callbacks, falling back to the client's for what the call leaves unset.
    pub(crate) fn merged(call: &Observer, global: &Observer) -> Observer {
        Observer {
            progress: call.progress.clone().or_else(|| global.progress.clone()),
            log: call.log.clone().or_else(|| global.log.clone()),
        }
    }

    pub(crate) fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        self.log.as_ref().map(|(level, _)| *level)
    }

    /// Hands a request-scoped notification to its callback.
    pub(crate) fn dispatch(&self, note: &JsonRpcNotification) {
        let params = note.params.as_deref().map(|p| p.get()).unwrap_or("{}");
        match note.method.as_ref() {
            methods::NOTIFICATIONS_PROGRESS => {
                if let Some(f) = &self.progress {
                    match serde_json::from_str::<ProgressNotificationParams>(params) {
                        Ok(p) => f(p),
                        Err(e) => {
                            tracing::debug!(error = %e, "ignored a malformed progress notification")
                        }
                    }
                }
            }
            methods::NOTIFICATIONS_MESSAGE => {
                if let Some((level, f)) = &self.log {
                    match serde_json::from_str::<LoggingMessageNotificationParams>(params) {
                        // The client applies its own level: a server may ignore it.
                        Ok(p) if p.level >= *level => f(p),
                        Ok(p) => {
                            tracing::trace!(level = ?p.level, "dropped a log message below the client's level")
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "ignored a malformed log notification")
                        }
                    }
                }
            }
            other => tracing::debug!(method = other, "ignored a notification"),
        }
    }
}

/// Whether a `notifications/progress` carries the progress token of request `id` (the
/// client's tokens are its request ids).
pub(crate) fn progress_token_is(note: &JsonRpcNotification, id: i64) -> bool {
    #[derive(Deserialize)]
    struct Token {
        #[serde(rename = "progressToken")]
        progress_token: ProgressToken,
    }
    note.params
        .as_deref()
        .and_then(|p| serde_json::from_str::<Token>(p.get()).ok())
        .is_some_and(|t| t.progress_token == ProgressToken::Number(id))
}

/// A notification delivered on a [`Subscription`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated {
        /// The resource (or sub-resource) that changed.
        uri: String,
    },
    /// Any other notification, as received.
    Other(JsonRpcNotification<serde_json::Value>),
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
}

#[derive(Deserialize)]
struct AckParams {
    notifications: SubscriptionFilter,
}

/// Hook for the client's caches when a change is announced.
pub(crate) type ChangeHook = Arc<dyn Fn(&ServerNotification) + Send + Sync>;

/// An open `subscriptions/listen` stream: the notifications the server acknowledged, as a
/// [`Stream`].
///
/// The stream ends (`None`) when the server closes the subscription gracefully; it yields an
/// error of kind [`Transport`](crate::ErrorKind::Transport) or
/// [`Closed`](crate::ErrorKind::Closed) and then ends if the connection breaks (a client may
/// then subscribe again). Dropping it ends the subscription (HTTP: the stream is closed;
/// stdio: `notifications/cancelled` is sent; a legacy session: `resources/unsubscribe` is
/// sent, in a task of the current runtime, for each of its resources that no other open
/// subscription of the client watches).
pub struct Subscription {
    id: RequestId,
    acknowledged: SubscriptionFilter,
    stream: Option<MessageStream>,
    hook: Option<ChangeHook>,
    /// Run once when dropped, after the stream is closed (legacy sessions unsubscribe here).
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stream = None;
        if let Some(on_drop) = self.on_drop.take() {
            on_drop();
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .field("open", &self.stream.is_some())
            .finish()
    }
}

impl Subscription {
    /// Reads the acknowledgement, which must come first.
    pub(crate) async fn open(
        id: RequestId,
        mut stream: MessageStream,
        hook: Option<ChangeHook>,
    ) -> Result<Subscription> {
        use futures::StreamExt;
        loop {
            let Some(first) = stream.next().await else {
                return Err(Error::new(
                    ErrorKind::Transport,
                    "the subscription stream closed before it was acknowledged",
                ));
            };
            match first? {
                JsonRpcMessage::Notification(n)
                    if n.method == methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED =>
                {
                    let params = n.params.as_deref().map(|p| p.get()).unwrap_or("{}");
                    let ack: AckParams = serde_json::from_str(params).map_err(|e| {
                        Error::new(ErrorKind::Codec, "malformed subscription acknowledgement")
                            .with_source(e)
                    })?;
                    return Ok(Subscription {
                        id,
                        acknowledged: ack.notifications,
                        stream: Some(stream),
                        hook,
                        on_drop: None,
                    });
                }
                JsonRpcMessage::Error(e) => return Err(Error::protocol(e.error)),
                JsonRpcMessage::Response(_) => {
                    return Err(Error::new(
                        ErrorKind::Transport,
                        "the server ended the subscription before acknowledging it",
                    ));
                }
                other => {
                    // Only the acknowledgement may come first; tolerate and skip anything else.
                    tracing::debug!(message = ?other.method(), "skipped a message before the subscription acknowledgement");
                }
            }
        }
    }

    /// A subscription fed by the client itself (legacy sessions, whose notifications arrive
    /// on the session rather than on a stream of their own).
    pub(crate) fn local(
        id: RequestId,
        acknowledged: SubscriptionFilter,
        stream: MessageStream,
        hook: Option<ChangeHook>,
    ) -> Subscription {
        Subscription {
            id,
            acknowledged,
            stream: Some(stream),
            hook,
            on_drop: None,
        }
    }

    /// Runs `f` once when this subscription is dropped, after its stream is closed.
    pub(crate) fn on_drop(&mut self, f: Box<dyn FnOnce() + Send>) {
        self.on_drop = Some(f);
    }

    /// The JSON-RPC id of the `subscriptions/listen` request (every notification of this
    /// stream carries it as its subscription id).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// What the server agreed to send: the subset of the requested filter it supports.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// Whether the stream is still open.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    fn classify(&self, note: JsonRpcNotification) -> Option<ServerNotification> {
        let raw = note.params.as_deref().map(|p| p.get()).unwrap_or("{}");
        let notification = match note.method.as_ref() {
            methods::NOTIFICATIONS_TOOLS_LIST_CHANGED => ServerNotification::ToolsListChanged,
            methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED => ServerNotification::PromptsListChanged,
            methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED => {
                ServerNotification::ResourcesListChanged
            }
            methods::NOTIFICATIONS_RESOURCES_UPDATED => {
                match serde_json::from_str::<UriParams>(raw) {
                    Ok(p) => ServerNotification::ResourceUpdated { uri: p.uri },
                    Err(e) => {
                        tracing::debug!(error = %e, "ignored a malformed resources/updated notification");
                        return None;
                    }
                }
            }
            methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED => return None,
            _ => {
                let params = note
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str(p.get()).ok());
                ServerNotification::Other(JsonRpcNotification {
                    jsonrpc: note.jsonrpc,
                    method: note.method,
                    params,
                })
            }
        };
        Some(notification)
    }

    fn ends_here(&self, note: &JsonRpcNotification) -> bool {
        note.method == methods::NOTIFICATIONS_CANCELLED
            && note
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str::<CancelledNotificationParams>(p.get()).ok())
                .is_some_and(|p| p.request_id == self.id)
    }

    fn belongs_here(&self, note: &JsonRpcNotification) -> bool {
        // A notification tagged for another subscription is not ours (a confused server).
        #[derive(Deserialize)]
        struct Tagged {
            #[serde(rename = "_meta", default)]
            meta: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let Some(params) = note.params.as_deref() else {
            return true;
        };
        match serde_json::from_str::<Tagged>(params.get()) {
            Ok(Tagged { meta: Some(meta) }) => match meta.get(SUBSCRIPTION_ID_KEY) {
                Some(v) => RequestId::deserialize(v).is_ok_and(|id| id == self.id),
                None => true,
            },
            _ => true,
        }
    }
}

impl Stream for Subscription {
    type Item = Result<ServerNotification>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let Some(stream) = this.stream.as_mut() else {
                return Poll::Ready(None);
            };
            let item = match stream.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            };
            match item {
                None => {
                    this.stream = None;
                    return Poll::Ready(Some(Err(Error::new(
                        ErrorKind::Transport,
                        "the subscription stream closed unexpectedly",
                    ))));
                }
                Some(Err(e)) => {
                    this.stream = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Some(Ok(JsonRpcMessage::Notification(note))) => {
                    if this.ends_here(&note) {
                        this.stream = None;
                        return Poll::Ready(None);
                    }
                    if !this.belongs_here(&note) {
                        tracing::debug!("ignored a notification for another subscription");
                        continue;
                    }
                    if let Some(n) = this.classify(note) {
                        if let Some(hook) = &this.hook {
                            hook(&n);
                        }
                        return Poll::Ready(Some(Ok(n)));
                    }
                }
                Some(Ok(JsonRpcMessage::Response(_))) => {
                    // The graceful end: the listen request's result.
                    this.stream = None;
                    return Poll::Ready(None);
                }
                Some(Ok(JsonRpcMessage::Error(e))) => {
                    this.stream = None;
                    return Poll::Ready(Some(Err(Error::protocol(e.error))));
                }
                Some(Ok(JsonRpcMessage::Request(r))) => {
                    tracing::warn!(method = %r.method, "ignored a request the server sent on a subscription");
                }
            }
        }
    }
}
