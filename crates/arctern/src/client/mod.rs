#![doc = include_str!("../../docs/client.md")]

mod builder;
mod cache;
mod error;
mod exchange;
mod handler;
pub mod headers;
mod legacy;
mod lists;
pub mod middleware;
mod mrtr;
mod negotiate;
mod notify;
mod pipeline;
mod tasks;
pub(crate) mod wire;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use arctern_types::capabilities::{ClientCapabilities, ServerCapabilities};
use arctern_types::completion::{
    CompleteArgument, CompleteContext, CompleteResult, CompletionReference,
};
use arctern_types::implementation::Implementation;
use arctern_types::jsonrpc::RequestId;
use arctern_types::methods;
use arctern_types::subscriptions::SubscriptionFilter;
use arctern_types::version::ProtocolVersion;
use serde_json::value::RawValue;

pub use crate::Outcome;
pub use builder::{
    ClientBuilder, DEFAULT_CACHE_BYTES, DEFAULT_IDLE_RESPONSE_TIMEOUT,
    DEFAULT_MAX_CONCURRENT_INPUTS, DEFAULT_MAX_INPUT_REQUESTS, DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_ROUNDS,
};
pub use error::{InputRequiredError, InputRequiredReason, VersionError};
pub use handler::{ClientHandler, HandlerCapabilities, Input, InputOrigin};
pub use mrtr::{CallOptions, Continuation, TaskStatusFn};
pub use notify::{LogFn, ProgressFn, ServerNotification, Subscription};
pub use tasks::ToolStart;

/// The transport trait and its types (at home in [`crate::transport`]).
pub use crate::transport::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};

/// The Streamable HTTP client transport (also at [`crate::transport::http::client`]).
#[cfg(feature = "http")]
pub use crate::transport::http::client::HttpTransport;
/// The in-process transport (also at [`crate::transport::memory`]).
#[cfg(feature = "server")]
pub use crate::transport::memory::MemoryTransport;
/// The stdio client transport and its command (also at [`crate::transport::stdio::client`]).
#[cfg(feature = "stdio")]
pub use crate::transport::stdio::client::{StdioCommand, StdioTransport};

use cache::Cache;
use exchange::Req;
use handler::Handlers;
use lists::ToolIndex;
use negotiate::Negotiated;
use notify::Observer;

use crate::{Era, Error, ErrorKind, Result};

/// How long the `server/discover` probe of era detection waits before it takes silence for a
/// legacy server, unless configured.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// An MCP client. See the [module documentation](self).
///
/// Cheap to clone (an `Arc`); every clone talks to the same server over the same transport.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.negotiated();
        f.debug_struct("Client")
            .field("info", &self.inner.info)
            .field("protocol_version", &n.version)
            .field("server_info", &n.server_info)
            .finish_non_exhaustive()
    }
}

struct Inner {
    transport: Arc<dyn Transport>,
    /// The request pipeline: the application's middleware, then the client's own layers.
    layers: Arc<[Arc<dyn middleware::Middleware>]>,
    mirrors: bool,
    handlers: Handlers,
    capabilities: ClientCapabilities,
    capabilities_raw: Box<RawValue>,
    info: Implementation,
    info_raw: Option<Box<RawValue>>,
    versions: Vec<ProtocolVersion>,
    /// The legacy versions offered in `initialize`, preferred first (empty: modern only).
    legacy_versions: Vec<ProtocolVersion>,
    /// The era the client was pinned to, if any.
    era: Option<Era>,
    probe_timeout: Duration,
    negotiated: RwLock<Arc<Negotiated>>,
    next_id: AtomicI64,
    observer: Observer,
    max_rounds: u32,
    deadline: Option<Duration>,
    request_timeout: Option<Duration>,
    cache: Option<Arc<Cache>>,
    tools: Arc<RwLock<ToolIndex>>,
    tools_refresh: tokio::sync::Mutex<()>,
    /// Session-wide notifications of a legacy session.
    hub: Arc<legacy::Hub>,
    /// The legacy calls in flight (to tie stray server requests to them).
    in_flight: legacy::InFlight,
    /// The task reading a legacy session's `GET` stream.
    listener: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    limits: builder::Limits,
    /// Answers to a legacy server's requests that arrive outside a call's stream, running.
    answer_slots: Arc<tokio::sync::Semaphore>,
    /// ... and waiting (beyond these, they are refused).
    stray_slots: Arc<tokio::sync::Semaphore>,
    /// OpenTelemetry spans and metrics.
    #[cfg(feature = "otel")]
    telemetry: Option<crate::otel::ClientTelemetry>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self
            .listener
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

impl Client {
    /// Starts building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    pub(crate) fn negotiated(&self) -> Arc<Negotiated> {
        self.inner
            .negotiated
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_negotiated(&self, next: Negotiated) {
        *self
            .inner
            .negotiated
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }

    /// The protocol version requests are sent with.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.negotiated().version.clone()
    }

    /// The server's self-description: from `server/discover`, else from the first result
    /// that carried one in its `_meta`.
    pub fn server_info(&self) -> Option<Implementation> {
        self.negotiated().server_info.as_deref().cloned()
    }

    /// The server's capabilities, known after `server/discover`.
    pub fn server_capabilities(&self) -> Option<ServerCapabilities> {
        self.negotiated().capabilities.clone()
    }

    /// The server's `instructions`, known after `server/discover`.
    pub fn instructions(&self) -> Option<String> {
        self.negotiated().instructions.clone()
    }

    /// The capabilities this client declares on every request.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// This client's self-description.
    pub fn client_info(&self) -> &Implementation {
        &self.inner.info
    }

    /// Shuts the transport down (and ends a legacy HTTP session with `DELETE`). In-flight
    /// calls fail with [`ErrorKind::Closed`].
    pub async fn close(&self) -> Result<()> {
        let listener = self
            .inner
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(task) = listener {
            task.abort();
        }
        self.inner.transport.close().await
    }

    /// Forgets every cached response.
    pub fn clear_cache(&self) {
        if let Some(cache) = &self.inner.cache {
            cache.clear();
        }
    }

    /// `completion/complete`: suggestions for `argument` (typed so far: `value`) of a prompt
    /// or resource template.
    pub async fn complete(
        &self,
        reference: impl Into<CompletionReference>,
        argument: &str,
        value: &str,
        context: Option<BTreeMap<String, String>>,
    ) -> Result<CompleteResult> {
        let reference = reference.into();
        let argument = CompleteArgument::new(argument, value);
        let context = context.map(CompleteContext::new);
        let params = wire::CompleteParams {
            reference: &reference,
            argument: &argument,
            context: context.as_ref(),
        };
        let (result, _) = self
            .request(methods::COMPLETION_COMPLETE, &params, &self.inner.observer)
            .await?;
        Ok(result)
    }

    /// Opens a `subscriptions/listen` stream for the notifications in `filter`. Returns once
    /// the server acknowledged it; [`Subscription::acknowledged`] tells what the server
    /// agreed to send.
    ///
    /// When the response cache is on, the notifications that pass through the stream
    /// invalidate the matching cached lists.
    pub async fn subscribe(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        let negotiated = self.negotiated();
        if negotiated.era == Era::Legacy {
            return self.subscribe_legacy(filter).await;
        }
        let params = wire::ListenParams {
            notifications: &filter,
        };
        let observer = Observer::default();
        let req = Req {
            method: methods::SUBSCRIPTIONS_LISTEN,
            params: &params,
            name: None,
            observer: &observer,
            timeout: None,
            renew: true,
            round: None,
        };
        let request = self.request_of(&req, http::HeaderMap::new())?;
        let id = self.next_id();
        let (body, headers) = self.encode(&request, id, &negotiated, http::HeaderMap::new())?;
        let request_id = RequestId::Number(id);
        let mut message = OutgoingMessage::new(
            Some(request_id.clone()),
            methods::SUBSCRIPTIONS_LISTEN,
            body,
        );
        message.headers = headers;
        let stream = self.inner.transport.send(message).await?;
        let hook = self.change_hook();
        let open = Subscription::open(request_id, stream, Some(hook));
        match self.inner.request_timeout {
            None => open.await,
            Some(limit) => tokio::time::timeout(limit, open).await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Timeout,
                    "the subscription was not acknowledged in time",
                ))
            }),
        }
    }

    /// What a change notification does to the client's caches.
    fn change_hook(&self) -> notify::ChangeHook {
        let cache = self.inner.cache.clone();
        let tools = self.inner.tools.clone();
        Arc::new(move |n: &ServerNotification| {
            if let ServerNotification::ToolsListChanged = n {
                let mut index = tools.write().unwrap_or_else(|e| e.into_inner());
                index.bump();
            }
            let Some(cache) = &cache else { return };
            match n {
                ServerNotification::ToolsListChanged => {
                    cache.invalidate_method(methods::TOOLS_LIST)
                }
                ServerNotification::PromptsListChanged => {
                    cache.invalidate_method(methods::PROMPTS_LIST)
                }
                ServerNotification::ResourcesListChanged => {
                    cache.invalidate_method(methods::RESOURCES_LIST);
                    cache.invalidate_method(methods::RESOURCES_TEMPLATES_LIST);
                }
                ServerNotification::ResourceUpdated { uri } => {
                    cache.invalidate(methods::RESOURCES_READ, uri)
                }
                _ => {}
            }
        })
    }
}

impl InputOrigin {
    /// The origin of questions asked by `tools/call` of tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        InputOrigin::new(methods::TOOLS_CALL, name)
    }

    /// The origin of questions asked by `prompts/get` of prompt `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        InputOrigin::new(methods::PROMPTS_GET, name)
    }

    /// The origin of questions asked by `resources/read` of `uri`.
    pub fn resource(uri: impl Into<String>) -> Self {
        InputOrigin::new(methods::RESOURCES_READ, uri)
    }
}
