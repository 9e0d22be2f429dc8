//! Building a [`Client`].

use std::future::Future;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use arctern_types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern_types::implementation::Implementation;
use arctern_types::logging::{LoggingLevel, LoggingMessageNotificationParams};
use arctern_types::progress::ProgressNotificationParams;
use arctern_types::roots::{ListRootsRequestParams, ListRootsResult, Root};
use arctern_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use arctern_types::version::ProtocolVersion;
use futures::FutureExt;

use super::cache::Cache;
use super::handler::{ClientHandler, Handlers, Input};
use super::legacy::{Hub, InFlight};
use super::middleware::Middleware;
use super::negotiate::Negotiated;
use super::notify::{LogFn, Observer, ProgressFn};
use super::{Client, Inner, ToolIndex};
use crate::transport::Transport;
use crate::{Era, Error, ErrorKind, Result};

/// How many `input_required` results a call accepts before it fails, unless configured.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;

/// How many responses the cache keeps, unless configured.
const DEFAULT_CACHE_ENTRIES: usize = 256;

/// How many bytes of responses the cache keeps, unless configured.
pub const DEFAULT_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// How many input requests one round may ask before the call fails, unless configured.
pub const DEFAULT_MAX_INPUT_REQUESTS: usize = 16;

/// How many input requests are answered at the same time, unless configured.
pub const DEFAULT_MAX_CONCURRENT_INPUTS: usize = 4;

/// How long a request waits for its response to start, and then for each further message,
/// unless configured.
pub const DEFAULT_IDLE_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many items a list helper ([`Client::list_tools`](super::Client::list_tools) and its siblings) accepts in all
/// pages together, unless configured.
pub const DEFAULT_MAX_LIST_ITEMS: usize = 100_000;

/// How many bytes of pages a list helper accepts in all, unless configured.
pub const DEFAULT_MAX_LIST_BYTES: usize = 64 * 1024 * 1024;

/// Builds a [`Client`]: its identity, handlers, callbacks and limits, then the transport.
///
/// ```no_run
/// # async fn run() -> arctern::Result<()> {
/// use arctern::client::Client;
/// use arctern::types::roots::Root;
///
/// let client = Client::builder()
///     .name("my-app")
///     .version("1.0.0")
///     .roots(vec![Root::new("file:///home/me/project")])
///     .max_rounds(5)
///     .connect("http://127.0.0.1:8000/mcp")
///     .await?;
/// # let _ = client; Ok(()) }
/// ```
#[must_use = "a builder does nothing until connected"]
pub struct ClientBuilder {
    info: Implementation,
    handlers: Handlers,
    observer: Observer,
    max_rounds: u32,
    deadline: Option<Duration>,
    request_timeout: Option<Duration>,
    versions: Vec<ProtocolVersion>,
    legacy_versions: Vec<ProtocolVersion>,
    era: Option<Era>,
    probe_timeout: Duration,
    discover: bool,
    cache: Option<usize>,
    pub(crate) limits: Limits,
    tasks: bool,
    /// The application's middleware, in the order added.
    layers: Vec<Arc<dyn Middleware>>,
    /// Extensions declared besides tasks, by id.
    extensions: serde_json::Map<String, serde_json::Value>,
    #[cfg(feature = "otel")]
    telemetry: Option<crate::otel::ClientTelemetry>,
}

/// The client's budgets against a server that asks or sends too much.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_input_requests: usize,
    pub(crate) max_concurrent_inputs: usize,
    pub(crate) idle_response_timeout: Option<Duration>,
    pub(crate) answer_unassociated: bool,
    pub(crate) max_list_items: usize,
    pub(crate) max_list_bytes: usize,
    pub(crate) cache_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_requests: DEFAULT_MAX_INPUT_REQUESTS,
            max_concurrent_inputs: DEFAULT_MAX_CONCURRENT_INPUTS,
            idle_response_timeout: Some(DEFAULT_IDLE_RESPONSE_TIMEOUT),
            answer_unassociated: false,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("handlers", &self.handlers)
            .field("max_rounds", &self.max_rounds)
            .field("versions", &self.versions)
            .field("legacy_versions", &self.legacy_versions)
            .field("era", &self.era)
            .field("discover", &self.discover)
            .field("layers", &self.layers.len())
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientBuilder {
    /// A client named `arctern-client` with this crate's version, no handlers, the default
    /// round cap, every protocol version this crate implements (modern and legacy), era
    /// detection and discovery on connect.
    pub fn new() -> Self {
        ClientBuilder {
            info: Implementation::new("arctern-client", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            observer: Observer::default(),
            max_rounds: DEFAULT_MAX_ROUNDS,
            deadline: None,
            request_timeout: None,
            versions: ProtocolVersion::MODERN.to_vec(),
            legacy_versions: ProtocolVersion::LEGACY.to_vec(),
            era: None,
            probe_timeout: super::DEFAULT_PROBE_TIMEOUT,
            discover: true,
            cache: None,
            limits: Limits::default(),
            tasks: true,
            layers: Vec::new(),
            extensions: serde_json::Map::new(),
            #[cfg(feature = "otel")]
            telemetry: Some(crate::otel::ClientTelemetry::global()),
        }
    }

    /// Whether the client declares the tasks extension (`io.modelcontextprotocol/tasks`) on
    /// its requests, so that a server may make a `tools/call` a task (on by default).
    /// [`Client::call_tool`](super::Client::call_tool) then follows the task to its end;
    /// [`Client::start_tool`](super::Client::start_tool) hands it over.
    pub fn tasks(mut self, declare: bool) -> Self {
        self.tasks = declare;
        self
    }

    /// Declares the extension `id` with `settings` (`capabilities.extensions[id]`): on every
    /// request on 2026-07-28, in `initialize` on a 2025 session. Declare only what the
    /// application really supports: a server may change what it sends for it. Declaring an
    /// id again replaces its settings; the tasks extension is [`tasks`](Self::tasks)'.
    pub fn extension(mut self, id: impl Into<String>, settings: serde_json::Value) -> Self {
        self.extensions.insert(id.into(), settings);
        self
    }

    /// Declares MCP Apps (`io.modelcontextprotocol/ui` with
    /// `mimeTypes: ["text/html;profile=mcp-app"]`): for a host that renders servers' views.
    /// Off by default.
    #[cfg(feature = "apps")]
    pub fn apps(self) -> Self {
        let settings = serde_json::to_value(arctern_types::apps::UiClientCapabilities::apps())
            .unwrap_or_default();
        self.extension(arctern_types::apps::EXTENSION_ID, settings)
    }

    /// The client's name in `clientInfo`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// The client's version in `clientInfo`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// The whole `clientInfo`.
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Answers questions with `handler`, for every kind its
    /// [`capabilities`](ClientHandler::capabilities) declare. Closures registered with
    /// [`on_elicit`](Self::on_elicit) and its siblings afterwards replace single kinds.
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handlers = Handlers::from_handler(handler);
        self
    }

    /// Answers form-mode elicitations with `f` (declares the `elicitation` capability).
    pub fn on_elicit<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Input<ElicitRequestParams>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult>> + Send + 'static,
    {
        self.handlers.elicit = Some(Arc::new(move |input| f(input).boxed()));
        self.handlers.caps.elicitation_form = true;
        self
    }

    /// Whether the elicitation handler also answers URL-mode elicitations (declares
    /// `elicitation.url`). Off by default.
    pub fn elicitation_url(mut self, supported: bool) -> Self {
        self.handlers.caps.elicitation_url = supported;
        self
    }

    /// Answers sampling requests with `f` (declares the `sampling` capability).
    pub fn on_sample<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Input<CreateMessageRequestParams>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult>> + Send + 'static,
    {
        self.handlers.sample = Some(Arc::new(move |input| f(input).boxed()));
        self.handlers.caps.sampling = true;
        self
    }

    /// Whether the sampling handler supports tool use (declares `sampling.tools`). Off by
    /// default; sampling requests that offer tools then fail locally.
    pub fn sampling_tools(mut self, supported: bool) -> Self {
        self.handlers.caps.sampling_tools = supported;
        self
    }

    /// Answers `roots/list` with `f` (declares the `roots` capability).
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Input<ListRootsRequestParams>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move |input| f(input).boxed()));
        self.handlers.caps.roots = true;
        self
    }

    /// Answers `roots/list` with a fixed list.
    pub fn roots(self, roots: Vec<Root>) -> Self {
        let result = ListRootsResult::new(roots);
        self.on_roots(move |_| std::future::ready(Ok(result.clone())))
    }

    /// Called with the progress notifications of every request (unless a call sets its
    /// own). Requests then carry a progress token.
    pub fn on_progress(
        mut self,
        f: impl Fn(ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.observer.progress = Some(Arc::new(f) as ProgressFn);
        self
    }

    /// Called with log messages at `level` or more severe (unless a call sets its own).
    /// Requests then opt in with `logLevel`; without a log callback they never do.
    pub fn on_log(
        mut self,
        level: LoggingLevel,
        f: impl Fn(LoggingMessageNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.observer.log = Some((level, Arc::new(f) as LogFn));
        self
    }

    /// How many `input_required` results a call accepts before it fails (default
    /// [`DEFAULT_MAX_ROUNDS`]).
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// A limit on every automatic multi round-trip call, all rounds included.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// A limit on every single request (until its final response).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// How long a request waits for its response to start, and then for each further
    /// message of it (default [`DEFAULT_IDLE_RESPONSE_TIMEOUT`]); `None` waits forever. Every
    /// message resets the wait, so a call that keeps reporting progress is never cut off, and
    /// the wait pauses while the client answers the server's questions. Subscriptions
    /// (`subscriptions/listen`, the legacy `GET` stream) are not bounded by it once open.
    pub fn idle_response_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.idle_response_timeout = timeout;
        self
    }

    /// How many input requests one round (or, on a legacy session, one call at a time) may
    /// ask (default [`DEFAULT_MAX_INPUT_REQUESTS`]). A round that asks more fails the call
    /// with [`InputRequiredReason::TooManyInputRequests`](super::InputRequiredReason::TooManyInputRequests) and
    /// nothing is answered; a legacy server's request beyond it gets an error.
    pub fn max_input_requests(mut self, requests: usize) -> Self {
        self.limits.max_input_requests = requests.max(1);
        self
    }

    /// How many input requests of a round are answered at the same time (default
    /// [`DEFAULT_MAX_CONCURRENT_INPUTS`]): the handlers of the others wait their turn.
    pub fn max_concurrent_inputs(mut self, inputs: usize) -> Self {
        self.limits.max_concurrent_inputs = inputs.max(1);
        self
    }

    /// Whether a legacy server's requests that belong to no request of the client are
    /// answered (default off: they get `-32602`, as SEP-2260 says; `ping` is always
    /// answered). A request belongs to a call when it arrives on the call's response
    /// stream, or, on stdio and on the session's `GET` stream, while a `tools/call`,
    /// `prompts/get` or `resources/read` is in flight. Turn this on only for servers that
    /// ask when no such call is in flight.
    pub fn answer_unassociated_requests(mut self, answer: bool) -> Self {
        self.limits.answer_unassociated = answer;
        self
    }

    /// How much the list helpers ([`Client::list_tools`](super::Client::list_tools) and its siblings) accept in all
    /// pages together: `items` entries and `bytes` of JSON (defaults
    /// [`DEFAULT_MAX_LIST_ITEMS`], [`DEFAULT_MAX_LIST_BYTES`]). A server that sends more
    /// fails the listing with an error of kind [`Transport`](ErrorKind::Transport).
    pub fn list_budget(mut self, items: usize, bytes: usize) -> Self {
        self.limits.max_list_items = items;
        self.limits.max_list_bytes = bytes;
        self
    }

    /// The protocol versions to offer, preferred first (default: every version this crate
    /// implements). Modern versions (2026-07-28 and later) are used per request; legacy ones
    /// (2025-11-25, 2025-06-18) are proposed in `initialize` when the server turns out to be
    /// a legacy one. Without a legacy version the client never falls back to `initialize`;
    /// without a modern one it only speaks the legacy era.
    pub fn protocol_versions(
        mut self,
        versions: impl IntoIterator<Item = impl Into<ProtocolVersion>>,
    ) -> Self {
        let (modern, legacy): (Vec<ProtocolVersion>, Vec<ProtocolVersion>) = versions
            .into_iter()
            .map(Into::into)
            .partition(ProtocolVersion::is_modern);
        self.versions = modern;
        self.legacy_versions = legacy;
        self
    }

    /// Pins the era instead of detecting it: [`Era::Legacy`] opens a session with
    /// `initialize` right away (no `server/discover` probe); [`Era::Modern`] never falls back
    /// to `initialize`. By default the client detects the era when it connects: it sends
    /// `server/discover` and falls back to `initialize` when the server does not look modern
    /// (any error but a recognised 2026-07-28 one, an HTTP 4xx without one, or no answer
    /// within the [probe timeout](Self::probe_timeout)).
    pub fn era(mut self, era: Era) -> Self {
        self.era = Some(era);
        self
    }

    /// How long era detection waits for the answer to `server/discover` before it takes
    /// silence for a legacy server (default [`DEFAULT_PROBE_TIMEOUT`](super::DEFAULT_PROBE_TIMEOUT)).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Whether connecting sends `server/discover` first (default on). Off, the client uses
    /// its preferred version until a server refuses it, and knows the server's identity
    /// only from results.
    pub fn discover(mut self, discover: bool) -> Self {
        self.discover = discover;
        self
    }

    /// Turns the response cache on or off (default off). When on, results of
    /// `server/discover`, the list methods and first-attempt `resources/read` are reused for
    /// their `ttlMs` (never when it is 0 or absent); results of retries carrying answers or
    /// state and `input_required` results are never kept; list-changed and
    /// resource-updated notifications seen on a [`Subscription`](super::Subscription)
    /// invalidate what they concern.
    pub fn cache(mut self, enabled: bool) -> Self {
        self.cache = enabled.then_some(self.cache.unwrap_or(DEFAULT_CACHE_ENTRIES));
        self
    }

    /// OpenTelemetry instrumentation (feature `otel`; on by default through the global
    /// providers): pass [`None`] to turn it off.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: impl Into<Option<crate::otel::ClientTelemetry>>) -> Self {
        self.telemetry = telemetry.into();
        self
    }

    /// Adds a [middleware](super::middleware) around every request the client sends.
    ///
    /// As with tower's `ServiceBuilder` and axum's `Router::layer`, the layer added
    /// **last** runs first: it sees the request first and the result last. Every layer runs
    /// outside the client's own machinery (the era, the version retry, the mirrored
    /// headers, telemetry), so it sees each request once, however that machinery sends it.
    ///
    /// ```
    /// use arctern::client::Client;
    /// use arctern::client::middleware::{Next, Request, from_fn};
    ///
    /// let builder = Client::builder().layer(from_fn(|mut request: Request, next: Next| async move {
    ///     request.headers_mut().insert(
    ///         http::header::AUTHORIZATION,
    ///         http::HeaderValue::from_static("Bearer example-token"),
    ///     );
    ///     next.run(request).await
    /// }));
    /// # let _ = builder;
    /// ```
    pub fn layer(mut self, middleware: impl Middleware) -> Self {
        self.layers.push(Arc::new(middleware));
        self
    }

    /// Turns the cache on with room for `entries` responses.
    pub fn cache_capacity(mut self, entries: usize) -> Self {
        self.cache = Some(entries);
        self
    }

    /// How many bytes of responses the cache keeps (default [`DEFAULT_CACHE_BYTES`]); a
    /// larger response is not kept.
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.limits.cache_bytes = bytes;
        self
    }

    /// A client over `transport`, without any exchange (no discovery, no `initialize`): it
    /// speaks the modern era until told otherwise. A client pinned to the legacy era, or
    /// offering no modern version, must [connect](Self::connect_with) instead.
    pub fn build(self, transport: impl Transport) -> Result<Client> {
        if self.versions.is_empty() || self.era == Some(Era::Legacy) {
            return Err(Error::new(
                ErrorKind::Config,
                "a client without a modern protocol version, or pinned to the legacy era, \
                 must connect (initialize) instead of being built",
            ));
        }
        self.assemble(transport)
    }

    fn assemble(mut self, transport: impl Transport) -> Result<Client> {
        if self.era == Some(Era::Modern) {
            self.legacy_versions.clear();
        }
        if self.era == Some(Era::Legacy) {
            self.versions.clear();
        }
        if self.versions.is_empty() && self.legacy_versions.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                "offer at least one protocol version of the era the client speaks",
            ));
        }
        let mut capabilities = self.handlers.caps.to_client_capabilities();
        if !self.extensions.is_empty() {
            capabilities
                .extensions
                .get_or_insert_default()
                .extend(std::mem::take(&mut self.extensions));
        }
        if self.tasks {
            capabilities.extensions.get_or_insert_default().insert(
                arctern_types::tasks::EXTENSION_ID.to_owned(),
                serde_json::json!({}),
            );
        }
        let codec =
            |e| Error::new(ErrorKind::Codec, "could not encode the client envelope").with_source(e);
        let capabilities_raw = serde_json::value::to_raw_value(&capabilities).map_err(codec)?;
        let info_raw = Some(serde_json::value::to_raw_value(&self.info).map_err(codec)?);
        let transport: Arc<dyn Transport> = Arc::new(transport);
        let hub = Arc::new(Hub::new(self.observer.clone()));
        let sink = hub.clone();
        transport.set_unrouted_sink(Arc::new(move |note| sink.dispatch(note)));
        let preferred = self
            .versions
            .iter()
            .find(|v| v.is_modern())
            .cloned()
            .unwrap_or(ProtocolVersion::LATEST);
        let era_pin = self.era;
        // Tower's order: the layer added last is the outermost.
        let mut layers: Vec<Arc<dyn Middleware>> = self.layers.into_iter().rev().collect();
        layers.extend(super::pipeline::own_layers(
            transport.mirrors_headers(),
            !self.legacy_versions.is_empty(),
            #[cfg(feature = "otel")]
            self.telemetry.clone(),
        ));
        let layers: Arc<[Arc<dyn Middleware>]> = layers.into();
        let inner = Arc::new_cyclic(|weak: &std::sync::Weak<Inner>| {
            let weak = weak.clone();
            // Requests of a legacy server that arrive outside a call's stream (stdio).
            transport.set_request_sink(Arc::new(move |request| {
                if let Some(inner) = weak.upgrade() {
                    Client { inner }.spawn_answer(request);
                }
            }));
            Inner {
                mirrors: transport.mirrors_headers(),
                transport,
                layers,
                handlers: self.handlers,
                capabilities,
                capabilities_raw,
                info: self.info,
                info_raw,
                versions: self.versions,
                legacy_versions: self.legacy_versions,
                era: era_pin,
                probe_timeout: self.probe_timeout,
                negotiated: RwLock::new(Arc::new(Negotiated::new(preferred))),
                next_id: AtomicI64::new(1),
                observer: self.observer,
                max_rounds: self.max_rounds,
                deadline: self.deadline,
                request_timeout: self.request_timeout,
                cache: self
                    .cache
                    .map(|n| Arc::new(Cache::new(n, self.limits.cache_bytes))),
                answer_slots: Arc::new(tokio::sync::Semaphore::new(
                    self.limits.max_concurrent_inputs,
                )),
                stray_slots: Arc::new(tokio::sync::Semaphore::new(self.limits.max_input_requests)),
                limits: self.limits,
                tools: Arc::new(RwLock::new(ToolIndex::default())),
                tools_refresh: tokio::sync::Mutex::new(()),
                hub,
                in_flight: InFlight::default(),
                listener: std::sync::Mutex::new(None),
                #[cfg(feature = "otel")]
                telemetry: self.telemetry,
            }
        });
        Ok(Client { inner })
    }

    /// A client over `transport`, after era detection: `server/discover` first (unless
    /// turned [off](Self::discover)), and `initialize` when the server is a legacy one or the
    /// client is [pinned](Self::era) to the legacy era.
    pub async fn connect_with(mut self, transport: impl Transport) -> Result<Client> {
        let discover = self.discover;
        if self.versions.is_empty() {
            self.era = Some(Era::Legacy);
        }
        let client = self.assemble(transport)?;
        client.probe(discover).await?;
        Ok(client)
    }

    /// A client for the Streamable HTTP endpoint at `url` (`http://` only; see
    /// [`HttpTransport`](crate::transport::http::client::HttpTransport) for more settings).
    #[cfg(feature = "http")]
    pub async fn connect(self, url: &str) -> Result<Client> {
        let transport = crate::transport::http::client::HttpTransport::new(url)?;
        self.connect_with(transport).await
    }

    /// A client for a server run as a child process over stdio.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(
        self,
        command: crate::transport::stdio::client::StdioCommand,
    ) -> Result<Client> {
        let transport = crate::transport::stdio::client::StdioTransport::spawn(command)?;
        self.connect_with(transport).await
    }

    /// A client for a server in the same process.
    #[cfg(feature = "server")]
    pub async fn connect_memory<H: crate::server::Handler>(
        self,
        server: crate::server::Server<H>,
    ) -> Result<Client> {
        self.connect_with(crate::transport::memory::MemoryTransport::new(server))
            .await
    }
}
