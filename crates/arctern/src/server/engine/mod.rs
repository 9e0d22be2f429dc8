//! The protocol engine: one method table and one dispatch path for both eras.
//!
//! A request goes through, in order: the method table ([`method`]), the era's envelope
//! (the 2026-07-28 `_meta` and mirrored headers, [`envelope`]; or the legacy session that
//! stands in for it), the request-state boundary ([`boundary`]), the middleware, the
//! handler, and the era's encoding ([`encode`]). The era is a strategy inside that one path
//! ([`dispatch`]), not a second engine: the legacy era differs in where the envelope comes
//! from, how results and errors are written, and in that an `input_required` round is asked
//! of the client by the shim instead of returned.

mod boundary;
mod dispatch;
mod encode;
mod envelope;
mod method;
mod observe;

use std::fmt;
use std::sync::Arc;

use arctern_types::jsonrpc::JsonRpcMessage;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::config::ServerConfig;
use super::connection::{Connection, MessageKind, Reply, RequestOrigin, TransportKind};
use super::handler::Handler;
use super::middleware::{self, Call, Endpoint, Middleware, Response};
use super::subscriptions::{ChangeBroker, ChangeNotifier};
use crate::server::handler::HandlerResult;
use crate::server::tasks::TaskRuntime;
use arctern_types::tasks::EXTENSION_ID;

pub(crate) use dispatch::{Scope, Served};
pub(crate) use encode::{encode_error, encode_legacy_result};
pub(crate) use method::Method;

/// An MCP server: a [`Handler`] plus its configuration, ready to be served by any transport.
///
/// Cheap to clone (an `Arc`). Build one with [`Server::new`] for a low-level handler, or
/// get one from [`McpServer`](crate::server::McpServer).
///
/// A transport hands it messages: [`Server::handle`] serves one 2026-07-28 message on its
/// own (what a stateless transport such as Streamable HTTP needs), and a
/// [`Connection`] serves a stream of messages of either era (stdio, sockets, in-process).
pub struct Server<H> {
    inner: Arc<Inner<H>>,
}

impl<H> fmt::Debug for Server<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

pub(crate) struct Inner<H> {
    handler: H,
    config: ServerConfig,
    /// `serverInfo`, serialized once.
    server_info: Option<Box<RawValue>>,
    changes: ChangeBroker,
    shutdown: CancellationToken,
    /// The middleware, outermost first (empty: handlers are called directly).
    layers: Arc<[Arc<dyn Middleware>]>,
    /// The tasks, when the server runs tools as tasks.
    tasks: Option<Arc<TaskRuntime>>,
}

impl<H: Handler> Server<H> {
    /// A server for `handler` with `config`.
    pub fn new(handler: H, mut config: ServerConfig) -> Self {
        let shutdown = CancellationToken::new();
        let tasks = config.tasks.clone().map(|tasks| {
            // Advertised, as the extension says, under `capabilities.extensions`.
            config
                .capabilities
                .extensions
                .get_or_insert_default()
                .insert(EXTENSION_ID.to_owned(), serde_json::json!({}));
            Arc::new(TaskRuntime::new(tasks, shutdown.clone()))
        });
        let server_info = config.stamp_server_info.then(|| {
            serde_json::value::to_raw_value(&config.info).expect("Implementation serializes")
        });
        let layers = config.middleware.iter().cloned().collect();
        let changes = ChangeBroker::new(config.change_bus.clone());
        Server {
            inner: Arc::new(Inner {
                handler,
                config,
                server_info,
                changes,
                shutdown,
                layers,
                tasks,
            }),
        }
    }

    /// Serves one 2026-07-28 message on its own: no session, no era detection (a legacy
    /// `initialize` is an unknown method here). Stateless transports such as Streamable
    /// HTTP serve modern requests this way; a transport that carries a stream of messages
    /// of either era uses a [`Connection`].
    ///
    /// Dropping the returned future cancels the request.
    pub async fn handle(&self, message: JsonRpcMessage, origin: RequestOrigin) -> Reply {
        let scope = Scope {
            cancel: &self.inner.shutdown,
            closing: &self.inner.shutdown,
        };
        self.serve_message(&Served::Modern, message, origin, scope)
            .await
    }

    /// [`handle`](Self::handle) for a message given as bytes; malformed input is answered
    /// with the right JSON-RPC error (`-32700` or `-32600`).
    pub async fn handle_bytes(&self, bytes: &[u8], origin: RequestOrigin) -> Reply {
        match JsonRpcMessage::from_slice(bytes) {
            Ok(message) => self.handle(message, origin).await,
            Err(e) => Reply::Message {
                body: encode_error(e.id.as_ref(), &e.error),
                kind: MessageKind::Invalid,
            },
        }
    }

    /// A connection for a transport that carries a stream of messages: its first request
    /// decides the era (a legacy `initialize` opens a 2025-era session), and it routes
    /// cancellations, answers to the server's own requests and session notifications.
    pub fn connection(&self, transport: TransportKind) -> Connection<H> {
        Connection::new(self.clone(), transport)
    }
}

impl<H> Server<H> {
    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// A handle for announcing list changes and resource updates to open
    /// `subscriptions/listen` streams and legacy sessions.
    pub fn change_notifier(&self) -> ChangeNotifier {
        self.inner.changes.notifier()
    }

    /// Every change announced from now on (legacy sessions forward them).
    pub(crate) fn subscribe_changes(&self) -> super::ChangeReceiver {
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

    /// Whether this server serves any legacy revision.
    pub(crate) fn serves_legacy(&self) -> bool {
        self.inner.config.legacy.is_enabled()
    }
}

impl<H: Handler> Endpoint for Inner<H> {
    fn invoke(self: Arc<Self>, call: Call) -> middleware::BoxFuture<HandlerResult<Response>> {
        Box::pin(async move { middleware::invoke(&self.handler, call).await })
    }
}
