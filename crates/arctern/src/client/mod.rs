//! MCP clients: protocol revision 2026-07-28, and the legacy revisions 2025-11-25 and
//! 2025-06-18 with the same API.
//!
//! A [`Client`] talks to one server over a [`Transport`]: Streamable HTTP (a URL), a child
//! process over stdio, or a server in the same process. It is cheap to clone and safe to use
//! from many tasks at once.
//!
//! ```no_run
//! use arctern::client::Client;
//! use arctern::types::elicitation::ElicitResult;
//! use serde_json::json;
//!
//! # async fn run() -> arctern::Result<()> {
//! let client = Client::builder()
//!     .name("my-app")
//!     .on_elicit(|question| async move {
//!         println!("{} asks: {}", question.origin().target(), question.message());
//!         Ok(ElicitResult::accept([("region", "eu-west-1")]))
//!     })
//!     .connect("http://127.0.0.1:8000/mcp")
//!     .await?;
//! let result = client.call_tool("provision", json!({"name": "orders"})).await?;
//! # let _ = result; Ok(()) }
//! ```
//!
//! # Every request
//!
//! Each request carries the `_meta` envelope — protocol version, the client's capabilities,
//! its `clientInfo` — and, on HTTP, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the
//! `Mcp-Param-*` headers of arguments whose schema property has `x-mcp-header`
//! ([`headers`]). The capabilities follow the handlers registered: no elicitation handler, no
//! `elicitation` capability; URL mode only when declared; `sampling.tools` only when
//! declared; `roots: {}` with a roots handler.
//!
//! # Version negotiation
//!
//! By default the client sends `server/discover` when it connects and adopts the newest
//! version both sides support ([`Client::protocol_version`], [`Client::server_info`],
//! [`Client::server_capabilities`]). Whenever a server answers `-32022` the client retries
//! once with the preferred version of the error's `supported` list — even the one just
//! refused, if the server lists it. When nothing matches, the error has kind
//! [`ErrorKind::Version`] and details in [`VersionError`].
//!
//! # Eras
//!
//! One client talks to servers of either era; which one it found is [`Client::era`] (and
//! [`Client::protocol_version`]). When it connects, the client sends `server/discover`. A
//! discover result or a recognised 2026-07-28 error (`-32020`, `-32021`, `-32022`) means a
//! modern server. Anything else — another JSON-RPC error, an HTTP 4xx without a modern error
//! body, a result that is not a discover result, or no answer within the
//! [probe timeout](ClientBuilder::probe_timeout) — means a legacy server, and the client opens
//! a session with `initialize` (proposing 2025-11-25, accepting 2025-06-18), then
//! `notifications/initialized`. [`ClientBuilder::era`] pins the era instead.
//!
//! On a legacy session requests carry no `_meta` envelope; over HTTP they carry the
//! `Mcp-Session-Id` the server assigned and `MCP-Protocol-Version`, the client reads the
//! session's `GET` stream, resumes SSE streams the server ends early (`Last-Event-ID`), and
//! [`Client::close`] ends the session with `DELETE` (a session the server forgot is opened
//! again once). The server asks for input with requests of its own (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`, `ping`): the same handlers answer them, with the
//! question's `inputRequests` key as the [`Input::key`] when the server names it (an arctern
//! server's shim does, in `_meta`) or else the server's request id, and, when it can be told,
//! the call they arrived in as the [`Input::origin`]. Log messages reach the client's log callback (the client
//! sends `logging/setLevel` when it has one); list changes and resource updates reach
//! [`Client::subscribe`] streams (`resources/subscribe` is sent for their URIs).
//! [`Client::ping`], [`Client::set_log_level`] and [`Client::notify_roots_changed`] exist for
//! legacy sessions.
//!
//! # Multi round-trip requests
//!
//! [`Client::call_tool`], [`Client::get_prompt`] and [`Client::read_resource`] hide the
//! rounds: when the server answers `input_required`, every input request of the round is
//! answered concurrently by the handlers, and the request is sent again with a new id, the
//! same method and arguments, the answers under the same keys, and `requestState` echoed
//! byte for byte (or absent, when the server sent none). A round with no input requests
//! (state only) is retried after 50 ms, doubling to 250 ms. A question with no handler fails
//! the call before anything is answered. After the round cap (10, see
//! [`ClientBuilder::max_rounds`] and [`CallOptions::max_rounds`]) the call fails with
//! [`ErrorKind::InputRequired`]; [`InputRequiredError::of`] then gives the last
//! `input_required` result, so that the flow can be resumed. A result without `resultType`
//! is complete; an unknown `resultType` is an error.
//!
//! The manual form — [`Client::call_tool_once`] and its siblings — sends one round and
//! returns [`Outcome::Complete`] or [`Outcome::InputRequired`]; the retry takes a
//! [`Continuation`], which serializes, so another process can finish the flow.
//!
//! # Notifications
//!
//! Progress and log callbacks can be set for the client ([`ClientBuilder::on_progress`],
//! [`ClientBuilder::on_log`]) or per call ([`CallOptions`]). A request carries a progress
//! token only when a progress callback applies, and a `logLevel` only when a log callback
//! does. On stdio, log messages have no request stream to travel on and go to the client's
//! callback. [`Client::subscribe`] opens a `subscriptions/listen` stream.
//!
//! # Cancellation
//!
//! Dropping a call's future cancels it: the HTTP transport closes the response stream (and,
//! on a legacy session, where that is no cancellation, the client sends
//! `notifications/cancelled`), the stdio transport sends `notifications/cancelled`, the
//! in-memory transport drops the handler.
//!
//! # Caching
//!
//! Off by default; see [`ClientBuilder::cache`] for the rules it follows when on.
//!
//! # Limits
//!
//! A server cannot make the client do or keep without bound. Each limit has a builder
//! setting:
//!
//! - a request waits at most [`DEFAULT_IDLE_RESPONSE_TIMEOUT`] for its response to start and
//!   for each further message (every message, progress included, restarts the wait; the wait
//!   pauses while the client answers questions): [`ClientBuilder::idle_response_timeout`];
//!   the HTTP transport also bounds connecting ([`HttpTransport`] builder);
//! - a round may ask at most [`DEFAULT_MAX_INPUT_REQUESTS`] questions, and at most
//!   [`DEFAULT_MAX_CONCURRENT_INPUTS`] are answered at a time
//!   ([`ClientBuilder::max_input_requests`], [`ClientBuilder::max_concurrent_inputs`]);
//! - a legacy server's request that belongs to no call of the client gets `-32602`
//!   (SEP-2260; `ping` excepted): [`ClientBuilder::answer_unassociated_requests`];
//! - a legacy session the server forgot is opened again once per request, never from inside
//!   `initialize`;
//! - progress reaches a call's callback only with the call's own token; log messages only at
//!   the callback's level or above, whatever the server sends;
//! - the list helpers stop at [`DEFAULT_MAX_LIST_ITEMS`] items or [`DEFAULT_MAX_LIST_BYTES`]
//!   bytes in all pages ([`ClientBuilder::list_budget`]);
//! - the cache keeps at most [`DEFAULT_CACHE_BYTES`] ([`ClientBuilder::cache_bytes`]);
//! - an SSE stream is resumed no faster than every 250 ms whatever its `retry`, slower each
//!   time it ends after a message or none, and a response stream at most 256 times;
//! - a stdio child inherits only a few variables of the environment
//!   ([`StdioCommand::inherit_env`] to pass all).

mod builder;
mod cache;
mod error;
mod handler;
pub mod headers;
mod legacy;
mod mrtr;
mod negotiate;
mod notify;
mod transport;
mod wire;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use arctern_types::base::Cacheable;
use arctern_types::capabilities::{ClientCapabilities, ServerCapabilities};
use arctern_types::completion::{
    CompleteArgument, CompleteContext, CompleteResult, CompletionReference,
};
use arctern_types::discover::DiscoverResult;
use arctern_types::implementation::Implementation;
use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use arctern_types::meta::{JsonObject, Meta, SERVER_INFO_KEY};
use arctern_types::methods;
use arctern_types::mrtr::{InputRequest, InputRequiredResult, InputResponses};
use arctern_types::prompts::{GetPromptResult, ListPromptsResult, Prompt};
use arctern_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceTemplate,
};
use arctern_types::subscriptions::SubscriptionFilter;
use arctern_types::tools::{CallToolResult, ListToolsResult, Tool};
use arctern_types::version::ProtocolVersion;
use arctern_types::{ErrorCode, ErrorObject};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::time::Instant;

pub use builder::{
    ClientBuilder, DEFAULT_CACHE_BYTES, DEFAULT_IDLE_RESPONSE_TIMEOUT,
    DEFAULT_MAX_CONCURRENT_INPUTS, DEFAULT_MAX_INPUT_REQUESTS, DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_ROUNDS,
};
pub use error::{InputRequiredError, InputRequiredReason, VersionError};
pub use handler::{ClientHandler, HandlerCapabilities, Input, InputOrigin};
pub use legacy::Era;
pub use mrtr::{CallOptions, Continuation, Outcome};
pub use notify::{LogFn, ProgressFn, ServerNotification, Subscription};
pub use transport::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};

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
use handler::Handlers;
use headers::HeaderPlan;
use mrtr::{Backoff, Round, Target, within};
use negotiate::Negotiated;
use notify::Observer;
use wire::{Envelope, Retry};

use crate::{Error, ErrorKind, Result};

/// How long the `server/discover` probe of era detection waits before it takes silence for a
/// legacy server, unless configured.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most pages a list helper follows before it gives up on a server that never stops.
const MAX_PAGES: usize = 10_000;

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

/// What the client knows about the listed tools: which arguments each mirrors into headers,
/// and which were rejected for invalid `x-mcp-header` annotations.
#[derive(Default)]
struct ToolIndex {
    /// Bumped by every announced change of the tool list.
    generation: u64,
    /// Whether the whole list has been read since the last change.
    complete: bool,
    plans: HashMap<String, Arc<HeaderPlan>>,
    rejected: HashMap<String, String>,
}

/// One request to send.
struct Req<'a, P> {
    method: &'static str,
    params: &'a P,
    /// The value `Mcp-Name` mirrors.
    name: Option<&'a str>,
    /// The tool call whose arguments `Mcp-Param-*` mirror.
    tool: Option<(&'a str, Option<&'a JsonObject>)>,
    observer: &'a Observer,
    timeout: Option<Duration>,
    /// Whether a legacy session the server forgot may be opened again for this request
    /// (never for the requests `initialize` itself sends).
    renew: bool,
}

impl Client {
    /// Starts building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    fn negotiated(&self) -> Arc<Negotiated> {
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

    // ---------------------------------------------------------------- requests

    fn next_id(&self) -> i64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends one request and returns its raw result. Retries once with another version on
    /// `-32022`, and once after re-listing tools on `-32020` for `tools/call`.
    async fn exchange<P: Serialize + Sync>(&self, req: Req<'_, P>) -> Result<Box<RawValue>> {
        let mut version_retried = false;
        let mut headers_retried = false;
        let mut session_renewed = false;
        loop {
            let negotiated = self.negotiated();
            let (id, body, headers) = self.encode(&req, &negotiated).await?;
            match self.round_trip(id, req.method, body, headers, &req).await {
                Err(e) if negotiated.era == Era::Legacy => {
                    if session_renewed && session_gone(&e) {
                        return Err(Error::new(
                            ErrorKind::Transport,
                            format!(
                                "the server forgot the legacy session again right after it was \
                                 opened anew; {} given up",
                                req.method
                            ),
                        )
                        .with_source(e));
                    }
                    if req.renew && !session_renewed && session_gone(&e) {
                        // The server forgot the session: open a new one and retry once.
                        session_renewed = true;
                        tracing::debug!("the legacy session expired; initializing again");
                        self.initialize_boxed().await?;
                        continue;
                    }
                    return Err(e);
                }
                Err(e) => {
                    let code = e.protocol_error().map(|o| o.code);
                    if code == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) && !version_retried {
                        version_retried = true;
                        let obj = e.protocol_error().cloned().unwrap_or_else(|| {
                            ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "")
                        });
                        let version =
                            negotiate::on_unsupported_version(&obj, &self.inner.versions)?;
                        tracing::debug!(%version, "retrying with another protocol version");
                        self.set_negotiated(negotiated.at(version));
                        continue;
                    }
                    if code == Some(ErrorCode::HEADER_MISMATCH)
                        && req.tool.is_some()
                        && self.inner.mirrors
                        && !headers_retried
                    {
                        headers_retried = true;
                        tracing::debug!("header mismatch: re-listing tools and retrying once");
                        self.refresh_tools_boxed().await?;
                        continue;
                    }
                    return Err(e);
                }
                ok => return ok,
            }
        }
    }

    async fn encode<P: Serialize + Sync>(
        &self,
        req: &Req<'_, P>,
        negotiated: &Negotiated,
    ) -> Result<(i64, Bytes, http::HeaderMap)> {
        let id = self.next_id();
        if negotiated.era == Era::Legacy {
            let token = req.observer.wants_progress().then_some(id);
            let body = wire::encode_legacy_request(id, req.method, req.params, token)?;
            return Ok((id, body, self.legacy_headers(negotiated)));
        }
        let meta = Envelope {
            version: negotiated.version.as_str(),
            capabilities: &self.inner.capabilities_raw,
            info: self.inner.info_raw.as_deref(),
            log_level: req.observer.log_level(),
            progress_token: req.observer.wants_progress().then_some(id),
        };
        let body = wire::encode_request(id, req.method, req.params, meta)?;
        let mut headers = http::HeaderMap::new();
        if self.inner.mirrors {
            headers.insert(
                headers::MCP_PROTOCOL_VERSION,
                negotiated.version_header.clone(),
            );
            headers.insert(
                headers::MCP_METHOD,
                http::HeaderValue::from_static(req.method),
            );
            if let Some(name) = req.name {
                headers.insert(headers::MCP_NAME, headers::name_header_value(name));
            }
            if let Some((tool, arguments)) = req.tool
                && let Some(plan) = self.header_plan_boxed(tool).await?
            {
                plan.apply(arguments, &mut headers);
            }
        }
        Ok((id, body, headers))
    }

    async fn round_trip<P>(
        &self,
        id: i64,
        method: &'static str,
        body: Bytes,
        headers: http::HeaderMap,
        req: &Req<'_, P>,
    ) -> Result<Box<RawValue>> {
        let request_id = RequestId::Number(id);
        let mut message = OutgoingMessage::new(Some(request_id.clone()), method, body);
        message.headers = headers;
        let legacy = self.negotiated().era == Era::Legacy;
        let origin = Arc::new(InputOrigin::new(method, req.name.unwrap_or_default()));
        let _in_flight = (legacy && methods::is_mrtr_method(method))
            .then(|| self.inner.in_flight.enter(id, origin.clone()));
        let idle = self.inner.limits.idle_response_timeout;
        let silent = move || {
            Error::new(
                ErrorKind::Timeout,
                format!(
                    "{method}: the server sent nothing for {:?}",
                    idle.unwrap_or_default()
                ),
            )
        };
        let work = async {
            let mut stream = match idle {
                None => self.inner.transport.send(message).await?,
                Some(limit) => tokio::time::timeout(limit, self.inner.transport.send(message))
                    .await
                    .map_err(|_| silent())??,
            };
            // A legacy server asks on the call's own stream and waits for the answers before
            // it answers the call: answer them while reading on, a few at a time.
            let mut answering: futures::stream::FuturesUnordered<BoxFuture<'_, ()>> =
                futures::stream::FuturesUnordered::new();
            let slots = Arc::new(tokio::sync::Semaphore::new(
                self.inner.limits.max_concurrent_inputs,
            ));
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    Some(()) = answering.next(), if !answering.is_empty() => continue,
                    // Silence counts only while the client waits on the server.
                    () = tokio::time::sleep(idle.unwrap_or(Duration::from_secs(86_400))),
                        if idle.is_some() && answering.is_empty() => return Err(silent()),
                };
                let Some(item) = item else { break };
                match item? {
                    JsonRpcMessage::Notification(note)
                        if note.method == methods::NOTIFICATIONS_PROGRESS =>
                    {
                        // Only the request's own token: another one is not this call's.
                        if notify::progress_token_is(&note, id) {
                            req.observer.dispatch(&note);
                        } else {
                            tracing::debug!(
                                "dropped progress for a token that is not this request's"
                            );
                        }
                    }
                    JsonRpcMessage::Notification(note) => {
                        if legacy && !is_request_scoped(&note.method) {
                            self.inner.hub.dispatch(note);
                        } else {
                            req.observer.dispatch(&note);
                        }
                    }
                    JsonRpcMessage::Response(r) if r.id == request_id => {
                        return Ok(r.result);
                    }
                    JsonRpcMessage::Error(e)
                        if e.id.as_ref().is_none_or(|eid| *eid == request_id) =>
                    {
                        return Err(Error::protocol(e.error));
                    }
                    JsonRpcMessage::Request(r) if legacy => {
                        if answering.len() >= self.inner.limits.max_input_requests {
                            // Refused at once: the server asks faster than anyone answers.
                            let error = ErrorObject::internal_error(format!(
                                "this client answers at most {} questions of a call at a time",
                                self.inner.limits.max_input_requests
                            ));
                            answering.push(Box::pin(self.refuse_server_request(r, error)));
                            continue;
                        }
                        let slots = slots.clone();
                        let origin = origin.clone();
                        answering.push(Box::pin(async move {
                            let _slot = slots.acquire_owned().await;
                            self.answer_server_request(r, origin).await;
                        }));
                    }
                    JsonRpcMessage::Request(r) => {
                        tracing::warn!(method = %r.method, "ignored a request from the server (2026-07-28 servers send none)");
                    }
                    other => {
                        tracing::debug!(id = ?other.id(), "ignored a response to another request");
                    }
                }
            }
            Err(Error::new(
                ErrorKind::Transport,
                "the response stream ended before the server answered",
            ))
        };
        // On legacy HTTP, closing the stream does not cancel the request: say so instead
        // (stdio transports send it themselves).
        let mut cancel = legacy::CancelOnDrop::new(
            (legacy && self.inner.mirrors).then(|| self.clone()),
            request_id.clone(),
        );
        let outcome = match req.timeout.or(self.inner.request_timeout) {
            None => work.await,
            Some(limit) => match tokio::time::timeout(limit, work).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!("{method} got no answer within {limit:?}"),
                    ));
                }
            },
        };
        cancel.disarm();
        outcome
    }

    /// Sends a request whose result is always complete, and decodes it.
    async fn request<P: Serialize + Sync, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        observer: &Observer,
    ) -> Result<(T, Box<RawValue>)> {
        self.request_with(method, params, observer, true).await
    }

    /// [`request`](Self::request); `renew` says whether a forgotten legacy session may be
    /// opened again for it.
    async fn request_with<P: Serialize + Sync, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        observer: &Observer,
        renew: bool,
    ) -> Result<(T, Box<RawValue>)> {
        let raw = self
            .exchange(Req {
                method,
                params,
                name: None,
                tool: None,
                observer,
                timeout: None,
                renew,
            })
            .await?;
        match wire::result_kind(&raw)? {
            wire::Kind::Complete => {}
            wire::Kind::InputRequired => {
                return Err(InputRequiredError::new(
                    InputRequiredReason::NotAllowed(method.to_owned()),
                    None,
                    0,
                )
                .into_error(ErrorKind::InputRequired));
            }
            wire::Kind::Unknown(t) => {
                return Err(Error::new(
                    ErrorKind::Codec,
                    format!("the server answered {method} with an unknown resultType {t:?}"),
                ));
            }
        }
        let value: T = wire::decode(&raw, method)?;
        Ok((value, raw))
    }

    /// Remembers the server's identity from a result's `_meta`, if not known yet.
    fn note_server_info(&self, meta: Option<&Meta>) {
        if self.negotiated().server_info.is_some() {
            return;
        }
        if let Some(info) = meta
            .and_then(|m| m.get(SERVER_INFO_KEY))
            .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok())
        {
            let mut next = (*self.negotiated()).clone();
            next.server_info = Some(Arc::new(info));
            self.set_negotiated(next);
        }
    }

    /// Through the cache when it is on.
    async fn cacheable<P: Serialize + Sync, T: DeserializeOwned + Cacheable>(
        &self,
        method: &'static str,
        key: &str,
        params: &P,
    ) -> Result<T> {
        Ok(self.cacheable_sized(method, key, params).await?.0)
    }

    /// [`cacheable`](Self::cacheable), with the size of the result's JSON.
    async fn cacheable_sized<P: Serialize + Sync, T: DeserializeOwned + Cacheable>(
        &self,
        method: &'static str,
        key: &str,
        params: &P,
    ) -> Result<(T, usize)> {
        if let Some(cache) = &self.inner.cache
            && let Some(raw) = cache.get(method, key)
            && let Ok(value) = wire::decode::<T>(&raw, method)
        {
            return Ok((value, raw.get().len()));
        }
        let (value, raw): (T, Box<RawValue>) =
            self.request(method, params, &Observer::default()).await?;
        let size = raw.get().len();
        if let Some(cache) = &self.inner.cache {
            cache.put(method, key, Arc::from(raw), value.effective_ttl_ms());
        }
        Ok((value, size))
    }

    // ---------------------------------------------------------------- discovery

    /// Sends `server/discover` and adopts what it says: the newest shared protocol version,
    /// the server's capabilities, identity and instructions.
    pub async fn discover(&self) -> Result<DiscoverResult> {
        let result: DiscoverResult = self
            .cacheable(methods::SERVER_DISCOVER, "", &wire::NoParams {})
            .await?;
        let next = self.negotiated().adopt(&result, &self.inner.versions)?;
        self.set_negotiated(next);
        Ok(result)
    }

    /// Era detection, run when a client connects: `initialize` when pinned to the legacy
    /// era; else `server/discover` (unless discovery is off), falling back to `initialize`
    /// when the server does not look modern (and a legacy version is offered).
    pub(crate) async fn probe(&self, discover: bool) -> Result<()> {
        match self.inner.era {
            Some(Era::Legacy) => return self.initialize().await.map(drop),
            Some(Era::Modern) if discover => return self.discover().await.map(drop),
            _ if !discover => return Ok(()),
            _ => {}
        }
        let failure = match self.discover_within(self.inner.probe_timeout).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let fall_back = match failure.kind() {
            // A modern server that shares no modern version with us: only a legacy version
            // it also lists can help.
            ErrorKind::Version => VersionError::of(&failure).is_none_or(|v| {
                v.server.is_empty()
                    || v.server
                        .iter()
                        .any(|s| self.inner.legacy_versions.iter().any(|l| l == s.as_str()))
            }),
            _ => matches!(
                negotiate::classify_probe_failure(&failure),
                negotiate::ProbeFailure::NotModern
            ),
        };
        if !fall_back || self.inner.legacy_versions.is_empty() {
            return Err(failure);
        }
        tracing::debug!(error = %failure, "server/discover failed; trying initialize");
        match self.initialize().await {
            Ok(_) => Ok(()),
            // `-32022` to `initialize` is modern evidence after all: probe once more.
            Err(e)
                if e.protocol_error().map(|o| o.code)
                    == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) =>
            {
                self.discover().await.map(drop)
            }
            Err(e) => Err(e),
        }
    }

    async fn discover_within(&self, limit: Duration) -> Result<DiscoverResult> {
        match tokio::time::timeout(limit, self.discover()).await {
            Ok(result) => result,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("server/discover got no answer within {limit:?}"),
            )),
        }
    }

    // `initialize` leads back into `exchange` (logging/setLevel); boxing keeps the future
    // types finite.
    fn initialize_boxed(&self) -> BoxFuture<'_, Result<arctern_types::legacy::InitializeResult>> {
        Box::pin(self.initialize())
    }

    // ---------------------------------------------------------------- lists

    /// Every tool, following cursors. On HTTP, tools with invalid `x-mcp-header`
    /// annotations are left out (with a warning).
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let _guard = self.inner.tools_refresh.lock().await;
        self.list_all_tools(false).await
    }

    async fn list_all_tools(&self, fresh: bool) -> Result<Vec<Tool>> {
        let mut tools = Vec::new();
        let generation = self.tools_generation();
        let mut index = ToolIndex {
            generation,
            ..ToolIndex::default()
        };
        self.paginate(
            |cursor| async move { self.tools_page_sized(cursor.as_deref(), fresh).await },
            |p: &ListToolsResult| (p.next_cursor.clone(), p.tools.len()),
            |page: ListToolsResult| {
                for tool in page.tools {
                    match self.index_tool(&tool) {
                        Ok(plan) => {
                            index.plans.insert(tool.name.clone(), plan);
                            tools.push(tool);
                        }
                        Err(why) => {
                            index.rejected.insert(tool.name.clone(), why);
                        }
                    }
                }
            },
        )
        .await?;
        index.complete = true;
        let mut shared = self.inner.tools.write().unwrap_or_else(|e| e.into_inner());
        // A change announced while we listed makes this listing stale; keep it incomplete.
        if shared.generation == generation {
            *shared = index;
        }
        Ok(tools)
    }

    fn tools_generation(&self) -> u64 {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .generation
    }

    /// One page of tools (`cursor` from the previous page's `nextCursor`). On HTTP, tools
    /// with invalid `x-mcp-header` annotations are left out (with a warning).
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult> {
        let mut page = self.tools_page(cursor, false).await?;
        let mut kept = Vec::with_capacity(page.tools.len());
        let mut shared = ToolIndex::default();
        for tool in page.tools {
            match self.index_tool(&tool) {
                Ok(plan) => {
                    shared.plans.insert(tool.name.clone(), plan);
                    kept.push(tool);
                }
                Err(why) => {
                    shared.rejected.insert(tool.name.clone(), why);
                }
            }
        }
        page.tools = kept;
        let mut index = self.inner.tools.write().unwrap_or_else(|e| e.into_inner());
        index.plans.extend(shared.plans);
        index.rejected.extend(shared.rejected);
        Ok(page)
    }

    async fn tools_page(&self, cursor: Option<&str>, fresh: bool) -> Result<ListToolsResult> {
        Ok(self.tools_page_sized(cursor, fresh).await?.0)
    }

    async fn tools_page_sized(
        &self,
        cursor: Option<&str>,
        fresh: bool,
    ) -> Result<(ListToolsResult, usize)> {
        let params = wire::CursorParams { cursor };
        let key = cursor.unwrap_or("");
        if fresh && let Some(cache) = &self.inner.cache {
            cache.invalidate(methods::TOOLS_LIST, key);
        }
        let (page, size): (ListToolsResult, _) = self
            .cacheable_sized(methods::TOOLS_LIST, key, &params)
            .await?;
        self.note_server_info(page.meta.as_ref());
        Ok((page, size))
    }

    /// Validates a listed tool's `x-mcp-header` annotations (HTTP only).
    fn index_tool(&self, tool: &Tool) -> std::result::Result<Arc<HeaderPlan>, String> {
        // `x-mcp-header` means nothing on the legacy wire.
        if !self.inner.mirrors || self.is_legacy() {
            return Ok(Arc::new(HeaderPlan::default()));
        }
        headers::validate_tool(tool).map(Arc::new).map_err(|why| {
            tracing::warn!(tool = %tool.name, reason = %why, "dropped a tool with an invalid x-mcp-header annotation");
            why
        })
    }

    // Listing tools to mirror a call's headers leads back into `exchange`; these two boxed
    // entry points keep the future types finite (and their `Send` provable).
    fn refresh_tools_boxed(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.refresh_tools())
    }

    fn header_plan_boxed<'a>(
        &'a self,
        tool: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<HeaderPlan>>>> {
        Box::pin(self.header_plan(tool))
    }

    /// Re-lists every tool, bypassing the cache (after a header mismatch).
    async fn refresh_tools(&self) -> Result<()> {
        let _guard = self.inner.tools_refresh.lock().await;
        self.list_all_tools(true).await.map(drop)
    }

    /// The header plan of a tool, listing tools first if they were never listed.
    async fn header_plan(&self, tool: &str) -> Result<Option<Arc<HeaderPlan>>> {
        let lookup =
            |index: &ToolIndex| -> std::result::Result<Option<Arc<HeaderPlan>>, Option<String>> {
                if let Some(plan) = index.plans.get(tool) {
                    return Ok(Some(plan.clone()));
                }
                if let Some(why) = index.rejected.get(tool) {
                    return Err(Some(why.clone()));
                }
                if index.complete { Ok(None) } else { Err(None) }
            };
        let rejected = |why: String| {
            Error::new(
                ErrorKind::Config,
                format!("tool {tool:?} was rejected: invalid x-mcp-header annotation ({why})"),
            )
        };
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => return Ok(plan),
            Err(Some(why)) => return Err(rejected(why)),
            Err(None) => {}
        }
        let _guard = self.inner.tools_refresh.lock().await;
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => return Ok(plan),
            Err(Some(why)) => return Err(rejected(why)),
            Err(None) => {}
        }
        if let Err(e) = self.list_all_tools(false).await {
            // The call itself will tell whether the tool exists; go without mirrored headers.
            tracing::debug!(error = %e, "could not list tools to find x-mcp-header annotations");
            return Ok(None);
        }
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => Ok(plan),
            Err(Some(why)) => Err(rejected(why)),
            Err(None) => Ok(None),
        }
    }

    /// Follows cursors: `fetch` gets a page and its size in bytes, `next` reads its cursor
    /// and its number of items, `take` consumes it. Stops with an error beyond the list
    /// budget ([`ClientBuilder::list_budget`]).
    async fn paginate<T, F, Fut>(
        &self,
        mut fetch: F,
        next: impl Fn(&T) -> (Option<String>, usize),
        mut take: impl FnMut(T),
    ) -> Result<()>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<(T, usize)>>,
    {
        let limits = &self.inner.limits;
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let (mut items, mut bytes) = (0usize, 0usize);
        for _ in 0..MAX_PAGES {
            let (page, size) = fetch(cursor.take()).await?;
            let (next_cursor, count) = next(&page);
            items = items.saturating_add(count);
            bytes = bytes.saturating_add(size);
            if items > limits.max_list_items || bytes > limits.max_list_bytes {
                return Err(Error::new(
                    ErrorKind::Transport,
                    format!(
                        "the server's list exceeds this client's budget ({} items, {} bytes; \
                         see ClientBuilder::list_budget)",
                        limits.max_list_items, limits.max_list_bytes
                    ),
                ));
            }
            take(page);
            match next_cursor {
                None => return Ok(()),
                Some(c) if !seen.insert(c.clone()) => {
                    return Err(Error::new(
                        ErrorKind::Transport,
                        "the server repeated a pagination cursor",
                    ));
                }
                Some(c) => cursor = Some(c),
            }
        }
        Err(Error::new(
            ErrorKind::Transport,
            "the server returned too many pages",
        ))
    }

    /// Every prompt, following cursors.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                let cursor = cursor.as_deref();
                let (page, size): (ListPromptsResult, _) = self
                    .cacheable_sized(
                        methods::PROMPTS_LIST,
                        cursor.unwrap_or(""),
                        &wire::CursorParams { cursor },
                    )
                    .await?;
                self.note_server_info(page.meta.as_ref());
                Ok((page, size))
            },
            |p: &ListPromptsResult| (p.next_cursor.clone(), p.prompts.len()),
            |page| all.extend(page.prompts),
        )
        .await?;
        Ok(all)
    }

    /// One page of prompts.
    pub async fn list_prompts_page(&self, cursor: Option<&str>) -> Result<ListPromptsResult> {
        let page: ListPromptsResult = self
            .cacheable(
                methods::PROMPTS_LIST,
                cursor.unwrap_or(""),
                &wire::CursorParams { cursor },
            )
            .await?;
        self.note_server_info(page.meta.as_ref());
        Ok(page)
    }

    /// Every resource, following cursors.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                let cursor = cursor.as_deref();
                let (page, size): (ListResourcesResult, _) = self
                    .cacheable_sized(
                        methods::RESOURCES_LIST,
                        cursor.unwrap_or(""),
                        &wire::CursorParams { cursor },
                    )
                    .await?;
                self.note_server_info(page.meta.as_ref());
                Ok((page, size))
            },
            |p: &ListResourcesResult| (p.next_cursor.clone(), p.resources.len()),
            |page| all.extend(page.resources),
        )
        .await?;
        Ok(all)
    }

    /// One page of resources.
    pub async fn list_resources_page(&self, cursor: Option<&str>) -> Result<ListResourcesResult> {
        let page: ListResourcesResult = self
            .cacheable(
                methods::RESOURCES_LIST,
                cursor.unwrap_or(""),
                &wire::CursorParams { cursor },
            )
            .await?;
        self.note_server_info(page.meta.as_ref());
        Ok(page)
    }

    /// Every resource template, following cursors.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                let cursor = cursor.as_deref();
                let (page, size): (ListResourceTemplatesResult, _) = self
                    .cacheable_sized(
                        methods::RESOURCES_TEMPLATES_LIST,
                        cursor.unwrap_or(""),
                        &wire::CursorParams { cursor },
                    )
                    .await?;
                self.note_server_info(page.meta.as_ref());
                Ok((page, size))
            },
            |p: &ListResourceTemplatesResult| (p.next_cursor.clone(), p.resource_templates.len()),
            |page| all.extend(page.resource_templates),
        )
        .await?;
        Ok(all)
    }

    /// One page of resource templates.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult> {
        let page: ListResourceTemplatesResult = self
            .cacheable(
                methods::RESOURCES_TEMPLATES_LIST,
                cursor.unwrap_or(""),
                &wire::CursorParams { cursor },
            )
            .await?;
        self.note_server_info(page.meta.as_ref());
        Ok(page)
    }

    // ---------------------------------------------------------------- MRTR methods

    /// Calls a tool, answering every round of input the server asks for. `arguments` is a
    /// JSON object, or `null` for none.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult> {
        self.call_tool_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-call options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult> {
        let arguments = object_arguments(arguments)?;
        let target = Target::Tool {
            name,
            arguments: arguments.as_ref(),
        };
        let (result, _) = self.drive::<CallToolResult>(target, options).await?;
        self.note_server_info(result.meta.as_ref());
        Ok(result)
    }

    /// Sends one round of a tool call: the complete result, or the server's
    /// `input_required` answer. Pass [`Continuation::new`] for a first attempt; for a retry,
    /// the answers and the state of the previous round.
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: Value,
        continuation: Continuation,
    ) -> Result<Outcome<CallToolResult>> {
        let arguments = object_arguments(arguments)?;
        let target = Target::Tool {
            name,
            arguments: arguments.as_ref(),
        };
        let round = self
            .round::<CallToolResult>(&target, continuation.retry(), &CallOptions::new())
            .await?;
        Ok(round.outcome)
    }

    /// Gets a prompt, answering every round of input the server asks for. `arguments` is a
    /// JSON object of strings, or `null` for none.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult> {
        self.get_prompt_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with per-call options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<GetPromptResult> {
        let arguments = string_arguments(arguments)?;
        let target = Target::Prompt {
            name,
            arguments: arguments.as_ref(),
        };
        let (result, _) = self.drive::<GetPromptResult>(target, options).await?;
        self.note_server_info(result.meta.as_ref());
        Ok(result)
    }

    /// Sends one round of `prompts/get`; see [`call_tool_once`](Self::call_tool_once).
    pub async fn get_prompt_once(
        &self,
        name: &str,
        arguments: Value,
        continuation: Continuation,
    ) -> Result<Outcome<GetPromptResult>> {
        let arguments = string_arguments(arguments)?;
        let target = Target::Prompt {
            name,
            arguments: arguments.as_ref(),
        };
        let round = self
            .round::<GetPromptResult>(&target, continuation.retry(), &CallOptions::new())
            .await?;
        Ok(round.outcome)
    }

    /// Reads a resource, answering every round of input the server asks for.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.read_resource_with(uri, CallOptions::new()).await
    }

    /// [`read_resource`](Self::read_resource) with per-call options.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult> {
        let first_attempt = options.resume.as_ref().is_none_or(Continuation::is_empty);
        if first_attempt
            && let Some(cache) = &self.inner.cache
            && let Some(raw) = cache.get(methods::RESOURCES_READ, uri)
            && let Ok(value) = wire::decode::<ReadResourceResult>(&raw, methods::RESOURCES_READ)
        {
            return Ok(value);
        }
        let target = Target::Resource { uri };
        let (result, raw) = self.drive::<ReadResourceResult>(target, options).await?;
        // Only a complete answer to a first attempt may be kept; `raw` is `None` otherwise.
        if first_attempt && let (Some(cache), Some(raw)) = (&self.inner.cache, raw) {
            cache.put(
                methods::RESOURCES_READ,
                uri,
                Arc::from(raw),
                result.effective_ttl_ms(),
            );
        }
        self.note_server_info(result.meta.as_ref());
        Ok(result)
    }

    /// Sends one round of `resources/read`; see [`call_tool_once`](Self::call_tool_once).
    pub async fn read_resource_once(
        &self,
        uri: &str,
        continuation: Continuation,
    ) -> Result<Outcome<ReadResourceResult>> {
        let target = Target::Resource { uri };
        let round = self
            .round::<ReadResourceResult>(&target, continuation.retry(), &CallOptions::new())
            .await?;
        Ok(round.outcome)
    }

    /// Answers the input requests of an `input_required` result with this client's
    /// handlers, all at once (for the manual loop). `origin` names the request the result
    /// answered ([`InputOrigin::tool`] and its siblings).
    ///
    /// Fails before answering anything if some request has no handler.
    pub async fn answer(
        &self,
        origin: InputOrigin,
        result: &InputRequiredResult,
    ) -> Result<InputResponses> {
        self.answer_round(Arc::new(origin), result, 0).await
    }

    async fn answer_round(
        &self,
        origin: Arc<InputOrigin>,
        result: &InputRequiredResult,
        rounds: u32,
    ) -> Result<InputResponses> {
        let Some(requests) = result.input_requests.as_ref().filter(|r| !r.is_empty()) else {
            return Ok(InputResponses::new());
        };
        let max = self.inner.limits.max_input_requests;
        if requests.len() > max {
            return Err(InputRequiredError::new(
                InputRequiredReason::TooManyInputRequests {
                    count: requests.len(),
                    max,
                },
                Some(result.clone()),
                rounds,
            )
            .into_error(ErrorKind::InputRequired));
        }
        // Preflight: every question must be answerable before anyone is asked.
        for (key, request) in requests {
            if let Err(method) = self.inner.handlers.check(request) {
                return Err(InputRequiredError::new(
                    InputRequiredReason::NoHandler {
                        key: key.clone(),
                        method,
                    },
                    Some(result.clone()),
                    rounds,
                )
                .into_error(ErrorKind::InputRequired));
            }
        }
        let server = self.negotiated().server_info.clone();
        let samplings = requests
            .values()
            .filter(|r| matches!(r, InputRequest::CreateMessage(_)))
            .count();
        let answers: Vec<_> = requests
            .iter()
            .map(|(key, request)| {
                let fut = self.inner.handlers.answer(
                    key.clone(),
                    request.clone(),
                    origin.clone(),
                    server.clone(),
                    samplings,
                );
                let key = key.clone();
                async move {
                    match fut.await {
                        Ok(answer) => Ok((key, answer)),
                        Err(e) => Err((key, e)),
                    }
                }
            })
            .collect();
        // A few at a time: a round may ask for many paid completions.
        let answered: std::result::Result<Vec<_>, _> = futures::stream::iter(answers)
            .buffer_unordered(self.inner.limits.max_concurrent_inputs)
            .try_collect()
            .await;
        match answered {
            Ok(pairs) => Ok(pairs.into_iter().collect::<BTreeMap<_, _>>()),
            Err((key, e)) => Err(InputRequiredError::new(
                InputRequiredReason::HandlerFailed { key },
                Some(result.clone()),
                rounds,
            )
            .with_source(e)
            .into_error(ErrorKind::InputRequired)),
        }
    }

    /// Sends one round.
    async fn round<T: DeserializeOwned>(
        &self,
        target: &Target<'_>,
        retry: Retry<'_>,
        options: &CallOptions,
    ) -> Result<Round<T>> {
        let observer = Observer::merged(&options.observer, &self.inner.observer);
        let raw = match *target {
            Target::Tool { name, arguments } => {
                let params = wire::CallToolParams {
                    name,
                    arguments,
                    retry,
                };
                self.exchange(Req {
                    method: methods::TOOLS_CALL,
                    params: &params,
                    name: Some(name),
                    tool: Some((name, arguments)),
                    observer: &observer,
                    timeout: options.timeout,
                    renew: true,
                })
                .await?
            }
            Target::Prompt { name, arguments } => {
                let params = wire::GetPromptParams {
                    name,
                    arguments,
                    retry,
                };
                self.exchange(Req {
                    method: methods::PROMPTS_GET,
                    params: &params,
                    name: Some(name),
                    tool: None,
                    observer: &observer,
                    timeout: options.timeout,
                    renew: true,
                })
                .await?
            }
            Target::Resource { uri } => {
                let params = wire::ReadResourceParams { uri, retry };
                self.exchange(Req {
                    method: methods::RESOURCES_READ,
                    params: &params,
                    name: Some(uri),
                    tool: None,
                    observer: &observer,
                    timeout: options.timeout,
                    renew: true,
                })
                .await?
            }
        };
        mrtr::read_round(raw, target)
    }

    /// The automatic loop. Returns the complete result, and its raw JSON when it answered a
    /// first attempt (the only kind the cache may keep).
    async fn drive<T: DeserializeOwned>(
        &self,
        target: Target<'_>,
        mut options: CallOptions,
    ) -> Result<(T, Option<Box<RawValue>>)> {
        let max_rounds = options.max_rounds.unwrap_or(self.inner.max_rounds);
        let deadline = options
            .deadline
            .or(self.inner.deadline)
            .map(|d| Instant::now() + d);
        let origin = Arc::new(target.origin());
        let mut continuation = options.resume.take().unwrap_or_default();
        let mut first = continuation.is_empty();
        let mut rounds = 0u32;
        let mut backoff = Backoff::new();
        let mut last: Option<InputRequiredResult> = None;
        loop {
            let round: Round<T> = within(
                deadline,
                &last,
                rounds,
                self.round(&target, continuation.retry(), &options),
            )
            .await?;
            let irr = match round.outcome {
                Outcome::Complete(value) => {
                    return Ok((value, first.then_some(round.raw)));
                }
                Outcome::InputRequired(irr) => irr,
                _ => {
                    return Err(Error::new(
                        ErrorKind::InputRequired,
                        "unexpected round outcome",
                    ));
                }
            };
            first = false;
            rounds += 1;
            if rounds > max_rounds {
                return Err(InputRequiredError::new(
                    InputRequiredReason::RoundsExceeded { max_rounds },
                    Some(irr),
                    rounds,
                )
                .into_error(ErrorKind::InputRequired));
            }
            // Kept before answering, so that a deadline hit while answering or pausing
            // reports this round.
            last = Some(irr);
            let Some(irr) = last.as_ref() else {
                continue;
            };
            let has_requests = irr.input_requests.as_ref().is_some_and(|r| !r.is_empty());
            let responses = if has_requests {
                backoff.reset();
                let answers = within(
                    deadline,
                    &last,
                    rounds,
                    self.answer_round(origin.clone(), irr, rounds),
                )
                .await?;
                Some(answers)
            } else {
                let delay = backoff.next_delay();
                within(deadline, &last, rounds, async {
                    tokio::time::sleep(delay).await;
                    Ok(())
                })
                .await?;
                None
            };
            // The retry replaces the previous answers; state is echoed only if sent.
            continuation = Continuation {
                input_responses: responses,
                request_state: irr.request_state.clone(),
            };
        }
    }

    // ---------------------------------------------------------------- the rest

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
        let argument = CompleteArgument {
            name: argument.to_owned(),
            value: value.to_owned(),
        };
        let context = context.map(|arguments| CompleteContext {
            arguments: Some(arguments),
        });
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
            tool: None,
            observer: &observer,
            timeout: None,
            renew: true,
        };
        let (id, body, headers) = self.encode(&req, &negotiated).await?;
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

impl ToolIndex {
    /// Forgets the listing after a change announcement.
    fn bump(&mut self) {
        *self = ToolIndex {
            generation: self.generation.wrapping_add(1),
            ..ToolIndex::default()
        };
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

/// Whether a notification belongs to the request whose stream it arrived on.
fn is_request_scoped(method: &str) -> bool {
    method == methods::NOTIFICATIONS_PROGRESS || method == methods::NOTIFICATIONS_MESSAGE
}

/// Whether `error` says the server no longer knows the legacy session (HTTP 404).
fn session_gone(error: &Error) -> bool {
    #[cfg(feature = "http")]
    {
        let mut source = std::error::Error::source(error);
        while let Some(s) = source {
            if let Some(status) =
                s.downcast_ref::<crate::transport::http::client::HttpStatusError>()
            {
                return status.status == http::StatusCode::NOT_FOUND;
            }
            source = s.source();
        }
    }
    let _ = error;
    false
}

fn object_arguments(arguments: Value) -> Result<Option<JsonObject>> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(Error::new(
            ErrorKind::Config,
            format!("tool arguments must be a JSON object, not {other}"),
        )),
    }
}

fn string_arguments(arguments: Value) -> Result<Option<BTreeMap<String, String>>> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err(Error::new(
                    ErrorKind::Config,
                    format!("prompt argument {k:?} must be a string, not {other}"),
                )),
            })
            .collect::<Result<BTreeMap<_, _>>>()
            .map(Some),
        other => Err(Error::new(
            ErrorKind::Config,
            format!("prompt arguments must be a JSON object of strings, not {other}"),
        )),
    }
}
