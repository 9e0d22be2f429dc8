//! What a handler knows about the request it serves.

use super::note_channel::NoteSender;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arctern_types::capabilities::ClientCapabilities;
use arctern_types::implementation::Implementation;
use arctern_types::logging::{LoggingLevel, LoggingMessageNotificationParams};
use arctern_types::methods;
use arctern_types::progress::{ProgressNotificationParams, ProgressToken};
use arctern_types::{JsonRpcNotification, RequestId, RequestMeta};
use bytes::Bytes;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::connection::TransportKind;
use super::mrtr::Round;
use crate::Era;

/// The authenticated identity a request was made by, as established by an authentication
/// layer (for example OAuth token validation) and placed in the request's extensions.
///
/// Request state minted for one principal is rejected when replayed by another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

/// The request-scoped channel for notifications (progress, log messages) that travel on the
/// request's own response stream.
#[derive(Clone)]
pub(crate) struct NotificationSink {
    tx: NoteSender,
}

impl NotificationSink {
    pub(crate) fn new(tx: NoteSender) -> Self {
        NotificationSink { tx }
    }

    /// Sends one serialized message on the request's stream; `false` when the stream is
    /// gone.
    pub(crate) async fn send_bytes(&self, message: Bytes) -> bool {
        self.tx.send(message).await.is_ok()
    }

    /// Sends one serialized message without waiting; `false` when the stream is gone or
    /// full (used from `Drop`, where waiting is impossible).
    pub(crate) fn try_send_bytes(&self, message: Bytes) -> bool {
        self.tx.try_send(message).is_ok()
    }

    async fn send<P: Serialize>(&self, method: &'static str, params: &P) -> bool {
        let msg = JsonRpcNotification::new(method, params);
        match serde_json::to_vec(&msg) {
            Ok(bytes) => self.tx.send(Bytes::from(bytes)).await.is_ok(),
            Err(e) => {
                tracing::error!(error = %e, method, "could not serialize a notification");
                false
            }
        }
    }
}

/// Everything about the request being served, other than its params.
///
/// Handed to every handler by value; cloning is cheap. The request's validated `_meta`
/// envelope lives here ([`RequestContext::meta`]).
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) id: RequestId,
    pub(crate) method: &'static str,
    pub(crate) meta: RequestMeta,
    pub(crate) era: Era,
    pub(crate) transport: TransportKind,
    pub(crate) sink: Option<NotificationSink>,
    pub(crate) logging_enabled: bool,
    pub(crate) cancel: CancellationToken,
    pub(crate) extensions: http::Extensions,
    /// Bits of the last progress value sent (f64), to keep progress increasing.
    pub(crate) last_progress: AtomicU64,
    /// The multi round-trip round this request is (round 0 without request state).
    pub(crate) round: Round,
    /// The legacy session serving the request (`None` on the modern wire).
    pub(crate) legacy: Option<super::legacy::LegacyPeer>,
    /// The server's tasks, on a `tools/call` of a server that runs them.
    pub(crate) tasks: Option<super::tasks::TaskAccess>,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.inner.id)
            .field("method", &self.inner.method)
            .field("era", &self.inner.era)
            .field("transport", &self.inner.transport)
            .finish_non_exhaustive()
    }
}

static EMPTY_CAPABILITIES: std::sync::LazyLock<ClientCapabilities> =
    std::sync::LazyLock::new(ClientCapabilities::default);

impl RequestContext {
    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The method being served, such as `tools/call`.
    pub fn method(&self) -> &'static str {
        self.inner.method
    }

    /// The request's `_meta` envelope, validated by the server.
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.meta
    }

    /// The protocol version of this request.
    pub fn protocol_version(&self) -> &str {
        self.inner.meta.protocol_version.as_deref().unwrap_or("")
    }

    /// The client's capabilities for this request (never inferred from earlier requests).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.inner
            .meta
            .client_capabilities
            .as_deref()
            .unwrap_or(&EMPTY_CAPABILITIES)
    }

    /// Whether this request's client renders MCP Apps views: it declared the
    /// `io.modelcontextprotocol/ui` extension with `text/html;profile=mcp-app` among its
    /// `mimeTypes` (per request on 2026-07-28, at `initialize` on a 2025 session). A tool
    /// may word its text result for a client without Apps; lists stay the same for every
    /// client, as they may be cached and shared.
    #[cfg(feature = "apps")]
    pub fn client_supports_apps(&self) -> bool {
        arctern_types::apps::client_supports_apps(self.client_capabilities())
    }

    /// Who the client says it is. Self-reported: for display and logs, never for decisions.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.client_info.as_ref()
    }

    /// The era the request arrived on.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// The legacy session a 2025-era request arrived on (`None` on the modern wire): what
    /// `initialize` negotiated, and a few things only that era has (pinging the client,
    /// closing an SSE stream for the client to resume).
    pub fn legacy(&self) -> Option<&super::legacy::LegacyPeer> {
        self.inner.legacy.as_ref()
    }

    /// The transport the request arrived on.
    pub fn transport(&self) -> TransportKind {
        self.inner.transport
    }

    /// The authenticated principal, when an authentication layer established one.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.extensions.get::<Principal>()
    }

    /// Values attached to the request by the transport or by middleware (for HTTP: the
    /// authentication result and anything a tower layer inserted).
    pub fn extensions(&self) -> &http::Extensions {
        &self.inner.extensions
    }

    /// A token cancelled when the client cancels the request (closes the HTTP stream, or sends
    /// `notifications/cancelled` on stdio) or the server shuts down. The handler's future is
    /// also dropped then; the token is for work the handler spawned.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Whether the request has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Whether the client asked for progress notifications (sent a progress token).
    pub fn wants_progress(&self) -> bool {
        self.inner.meta.progress_token.is_some() && self.inner.sink.is_some()
    }

    /// Sends `notifications/progress` on this request's stream, if the client asked for
    /// progress. Values that do not increase are dropped (progress must increase). Returns
    /// whether a notification was sent.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let (Some(token), Some(sink)) = (&self.inner.meta.progress_token, &self.inner.sink) else {
            return false;
        };
        if !self.bump_progress(progress) {
            tracing::debug!(progress, "dropped a progress value that does not increase");
            return false;
        }
        let mut params = ProgressNotificationParams::new(token.clone(), progress);
        params.total = total;
        params.message = message.map(str::to_owned);
        sink.send(methods::NOTIFICATIONS_PROGRESS, &params).await
    }

    fn bump_progress(&self, progress: f64) -> bool {
        if !progress.is_finite() {
            return false;
        }
        let mut current = self.inner.last_progress.load(Ordering::Relaxed);
        loop {
            let last = f64::from_bits(current);
            if current != u64::MAX && progress <= last {
                return false;
            }
            match self.inner.last_progress.compare_exchange_weak(
                current,
                progress.to_bits(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => current = seen,
            }
        }
    }

    /// The progress token the client sent, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.meta.progress_token.as_ref()
    }

    /// The multi round-trip round this request is: how many `input_required` rounds came
    /// before it (0 on a first request, and without sealed request state), and which
    /// questions the answers in its `inputResponses` answer.
    pub fn round(&self) -> &Round {
        &self.inner.round
    }

    /// The id of the multi round-trip flow this request belongs to: random, minted in the
    /// flow's first round, carried sealed, and the same in every round of the flow. Key a
    /// side effect's idempotency on it (a round can be presented again while its request
    /// state is valid; see [`mrtr`](crate::server::mrtr)). `None` without request-state
    /// sealing, and for methods that have no rounds.
    pub fn flow_id(&self) -> Option<crate::state::FlowId> {
        self.inner.round.flow_id()
    }

    /// The log level the client opted into for this request, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.inner.meta.log_level
    }

    /// Sends `notifications/message` on this request's stream when the client opted in with a
    /// log level at or below `level` and the server declared the `logging` capability.
    /// Without the opt-in nothing is sent (the specification forbids it). Returns whether a
    /// notification was sent.
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: serde_json::Value,
    ) -> bool {
        let Some(min) = self.inner.meta.log_level else {
            return false;
        };
        let Some(sink) = &self.inner.sink else {
            return false;
        };
        if !self.inner.logging_enabled || level < min {
            return false;
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        sink.send(methods::NOTIFICATIONS_MESSAGE, &params).await
    }
}
