//! 2025-era Streamable HTTP (2025-11-25, 2025-06-18): sessions keyed by `Mcp-Session-Id`,
//! the `GET` stream, `DELETE`, and SSE event ids with `Last-Event-ID` resumption.
//!
//! Only requests routed here (see [`route`]) ever touch this module, so the modern path
//! takes no lock and allocates nothing for it.
//!
//! Every SSE stream of a session is an [`EventLog`]: the request (or the session, for the
//! `GET` stream) appends its messages, numbered; an HTTP response reads the log from some
//! position. A response that ends early (the client went away, or the handler asked for a
//! reconnect with [`LegacyPeer::close_sse_stream`](crate::server::LegacyPeer)) loses
//! nothing: the client resumes with `GET` and `Last-Event-ID: <stream>-<n>`. Disconnecting
//! is not cancelling on these revisions; `notifications/cancelled` is.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use arctern_types::ProtocolVersion;
use arctern_types::jsonrpc::JsonRpcMessage;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::HeaderMap;
use http::header::HeaderName;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::body::sse_event;
use super::negotiate::MCP_PROTOCOL_VERSION;
use crate::server::connection::{
    Connection, MessageKind, Reply, ReplyStream, RequestOrigin, TransportKind,
};
use crate::server::{Handler, Server};

/// `Mcp-Session-Id`.
pub(crate) use crate::transport::headers::MCP_SESSION_ID;
/// `Last-Event-ID`.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The default time a legacy session may sit idle (no request running, no stream open)
/// before it is closed: 30 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The default maximum number of legacy sessions open at once: 10 000.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// The default maximum number of legacy sessions one client (one principal, or one peer
/// address when requests carry no principal) may have open at once: 256.
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 256;
/// The default idle time after which a legacy session that never sent
/// `notifications/initialized` is closed: 1 minute.
pub const DEFAULT_UNINITIALIZED_SESSION_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time a legacy request may go on while no client reads its stream: 1 minute.
pub const DEFAULT_UNREAD_STREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// Events one stream keeps for resumption; older ones are dropped (so a session whose
/// client never reads its `GET` stream holds a bounded backlog).
const MAX_EVENTS: usize = 256;
/// Finished request streams a session keeps for resumption.
const MAX_FINISHED_STREAMS: usize = 32;
/// The `retry` the priming event of a 2025-11-25 stream suggests, in milliseconds.
const RETRY_MS: u64 = 1000;

/// Which path an HTTP request takes, decided from its headers alone where possible.
pub(crate) enum Route {
    /// The 2026-07-28 path, unchanged.
    Modern,
    /// A legacy session's request.
    Session(Arc<str>),
    /// No session and no modern version header: the body decides (`initialize` without the
    /// modern envelope opens a session; a request with the envelope is modern).
    Undecided,
}

/// Routes a request: a modern `MCP-Protocol-Version` means modern (the 2026-07-28 wire has
/// no sessions, so an `Mcp-Session-Id` beside it is ignored); otherwise a session id means
/// legacy; anything else needs a look at the body.
pub(crate) fn route(headers: &HeaderMap) -> Route {
    if let Some(v) = headers.get(MCP_PROTOCOL_VERSION)
        && ProtocolVersion::MODERN
            .iter()
            .any(|m| m.as_str().as_bytes() == v.as_bytes())
    {
        return Route::Modern;
    }
    match headers.get(MCP_SESSION_ID) {
        Some(id) => Route::Session(String::from_utf8_lossy(id.as_bytes()).into()),
        None => Route::Undecided,
    }
}

/// What `MCP-Protocol-Version` says, for a request not routed to the modern era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VersionHeader {
    /// A modern version (the request is on the modern path).
    Modern,
    /// No header (a 2025 client may omit it; the server then assumes its session's).
    Absent,
    /// A legacy revision this server serves (or 2025-03-26, which clients send when they
    /// could not tell).
    Legacy,
    /// Anything else.
    Other,
}

impl VersionHeader {
    pub(crate) fn read(headers: &HeaderMap, served: &[ProtocolVersion]) -> Self {
        match headers.get(MCP_PROTOCOL_VERSION) {
            None => VersionHeader::Absent,
            Some(v)
                if served
                    .iter()
                    .chain([&ProtocolVersion::V2025_03_26])
                    .any(|s| s.as_str().as_bytes() == v.as_bytes()) =>
            {
                VersionHeader::Legacy
            }
            Some(_) => VersionHeader::Other,
        }
    }
}

/// Limits on legacy sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    pub(crate) idle: Duration,
    pub(crate) max: usize,
    pub(crate) per_client: usize,
    pub(crate) uninitialized_idle: Duration,
    pub(crate) unread: Duration,
}

/// The remote address of the connection a request came on. [`HttpServer`] puts it in the
/// extensions of every request; a server that mounts [`StreamableHttpService`] elsewhere
/// can insert it itself, so that 2025-era sessions opened without a principal are capped
/// per address ([`HttpConfig::max_sessions_per_client`]).
///
/// [`HttpServer`]: super::HttpServer
/// [`StreamableHttpService`]: super::StreamableHttpService
/// [`HttpConfig::max_sessions_per_client`]: super::HttpConfig::max_sessions_per_client
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerAddr(pub SocketAddr);

/// Who a session belongs to: the principal of the request that opened it, as the server
/// binds request state (an authentication layer's [`Principal`](crate::server::Principal),
/// else the server's [`PrincipalHook`](crate::server::PrincipalHook)). "No principal" is an
/// owner too, so a session opened without one cannot be used with one, and the other way
/// round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner(Option<String>);

impl Owner {
    pub(crate) fn of<H: Handler>(server: &Server<H>, extensions: &http::Extensions) -> Owner {
        Owner(server.principal_of(extensions))
    }

    fn is_anonymous(&self) -> bool {
        self.0.is_none()
    }
}

/// The client a session counts against for [`SessionLimits::per_client`]: its owner, or
/// the peer's address when it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ClientKey {
    Owner(Owner),
    Peer(IpAddr),
}

impl ClientKey {
    fn of(owner: &Owner, extensions: &http::Extensions) -> Option<ClientKey> {
        if !owner.is_anonymous() {
            return Some(ClientKey::Owner(owner.clone()));
        }
        extensions
            .get::<PeerAddr>()
            .map(|peer| ClientKey::Peer(peer.0.ip()))
    }
}

/// The prefix of this instance's session ids (`<instance>.`), so that a load balancer can
/// route a session to the instance holding it; `None` unless the instance id is a plain
/// token (`A-Z a-z 0-9 _ -`).
pub(crate) fn session_prefix(instance: Option<&str>) -> Option<Arc<str>> {
    let id = instance?;
    let plain = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if !plain {
        tracing::warn!(
            "the instance id is not a plain token (A-Z a-z 0-9 _ -); session ids do not name the instance"
        );
    }
    plain.then(|| format!("{id}.").into())
}

/// The legacy sessions of one service.
pub(crate) struct Sessions {
    map: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    limits: SessionLimits,
    reaper: AtomicBool,
    prefix: Option<Arc<str>>,
    /// Numbers sessions in the order they open: among sessions last used in the same
    /// millisecond, the older makes room first.
    opened: AtomicU64,
}

/// Why no session could be opened.
pub(crate) enum OpenError {
    /// At the session limit, with every session in use.
    Full,
    /// At the limit for this client, with every one of its sessions in use.
    ClientFull,
    /// No session id could be made (the operating system's random generator failed).
    NoId,
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits, prefix: Option<Arc<str>>) -> Self {
        Sessions {
            map: Mutex::new(HashMap::new()),
            limits,
            reaper: AtomicBool::new(false),
            prefix,
            opened: AtomicU64::new(0),
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session with this id if `owner` owns it, marked as used now. Another owner's
    /// session is not found: its id alone proves nothing.
    pub(crate) fn get(&self, id: &str, owner: &Owner) -> Option<Arc<HttpSession>> {
        let session = self.map().get(id).cloned()?;
        if session.connection.is_closed() {
            // Ended by the server shutting down; forget it.
            self.remove(id);
            return None;
        }
        if session.owner != *owner {
            tracing::warn!(
                session = id,
                "refused a request on a legacy session that another principal opened"
            );
            return None;
        }
        session.touch(now_ms());
        Some(session)
    }

    /// Ends and forgets a session; returns whether it existed.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = self.map().remove(id);
        match removed {
            Some(session) => {
                session.close();
                true
            }
            None => false,
        }
    }

    /// Serves an `initialize` on a connection of its own: when the server opens a session,
    /// the session is kept under a fresh id, owned by the request's principal. At a limit,
    /// the sessions not in use make room, those that never finished initializing first,
    /// then the least recently used. Returns the session (if one was opened) and the reply
    /// to the `initialize`.
    pub(crate) async fn open<H: Handler>(
        self: &Arc<Self>,
        server: &Server<H>,
        request: JsonRpcMessage,
        origin: RequestOrigin,
    ) -> Result<(Option<Arc<HttpSession>>, Reply), OpenError> {
        let owner = Owner::of(server, &origin.extensions);
        let client = ClientKey::of(&owner, &origin.extensions);
        // Fail early, before serving, when nothing could make room.
        self.make_room(client.as_ref(), false)?;
        let standalone = Arc::new(EventLog::new(0));
        let weak = Arc::downgrade(&standalone);
        let connection =
            server
                .connection(TransportKind::Http)
                .on_unsolicited(move |message: Bytes| {
                    if let Some(log) = weak.upgrade() {
                        log.push(Some(message));
                    }
                });
        let reply = connection.handle(request, origin).await;
        let Some(version) = connection.negotiated_version() else {
            return Ok((None, reply));
        };
        let Some(id) = crate::server::random_hex(16) else {
            connection.close();
            return Err(OpenError::NoId);
        };
        let id: Arc<str> = match &self.prefix {
            Some(prefix) => format!("{prefix}{id}").into(),
            None => id.into(),
        };
        let cancel = connection.closed_token();
        let now = now_ms();
        let session = Arc::new(HttpSession {
            id: id.clone(),
            version,
            owner,
            client: client.clone(),
            cancel,
            connection: Box::new(connection),
            standalone,
            streams: Mutex::new(VecDeque::new()),
            next_stream: AtomicU64::new(1),
            last_used: AtomicU64::new(now),
            opened: self.opened.fetch_add(1, Ordering::Relaxed),
            active: AtomicUsize::new(0),
            unread: self.limits.unread,
        });
        if let Err(e) = self.make_room(client.as_ref(), true) {
            session.close();
            return Err(e);
        }
        self.map().insert(id, session.clone());
        self.start_reaper(server.shutdown_token().clone());
        Ok((Some(session), reply))
    }

    /// Makes room for one more session of `client`: closes expired sessions, then, at a
    /// limit, evicts one session not in use (`evict`), or fails.
    fn make_room(&self, client: Option<&ClientKey>, evict: bool) -> Result<(), OpenError> {
        let full = |map: &HashMap<Arc<str>, Arc<HttpSession>>| map.len() >= self.limits.max;
        let client_full = |map: &HashMap<Arc<str>, Arc<HttpSession>>| {
            client.is_some_and(|key| {
                map.values()
                    .filter(|s| s.client.as_ref() == Some(key))
                    .count()
                    >= self.limits.per_client
            })
        };
        {
            let map = self.map();
            if !full(&map) && !client_full(&map) {
                return Ok(());
            }
        }
        self.reap();
        let evicted = {
            let mut map = self.map();
            // The client's own sessions make room for it first.
            let (scope, error) = if client_full(&map) {
                (client, OpenError::ClientFull)
            } else if full(&map) {
                (None, OpenError::Full)
            } else {
                return Ok(());
            };
            let victim = map
                .values()
                .filter(|s| s.active.load(Ordering::Acquire) == 0)
                .filter(|s| scope.is_none_or(|key| s.client.as_ref() == Some(key)))
                .min_by_key(|s| {
                    (
                        s.connection.is_initialized(),
                        s.last_used.load(Ordering::Acquire),
                        s.opened,
                    )
                })
                .map(|s| s.id.clone());
            match victim {
                Some(id) if evict => map.remove(&id),
                Some(_) => return Ok(()),
                None => return Err(error),
            }
        };
        if let Some(session) = evicted {
            tracing::info!(
                session = %session.id,
                "closed a legacy session not in use to make room for a new one"
            );
            session.close();
        }
        Ok(())
    }

    /// Closes the sessions idle for longer than the limit (a shorter one for sessions that
    /// never sent `notifications/initialized`).
    fn reap(&self) {
        let now = now_ms();
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let idle = millis(self.limits.idle);
        let uninitialized = millis(self.limits.uninitialized_idle).min(idle);
        let expired: Vec<Arc<HttpSession>> = {
            let mut map = self.map();
            let ids: Vec<Arc<str>> = map
                .values()
                .filter(|s| {
                    if s.connection.is_closed() {
                        return true;
                    }
                    if s.active.load(Ordering::Acquire) != 0 {
                        return false;
                    }
                    let idle_for = now.saturating_sub(s.last_used.load(Ordering::Acquire));
                    idle_for > idle || (idle_for > uninitialized && !s.connection.is_initialized())
                })
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for session in expired {
            tracing::debug!(session = %session.id, "closed an idle legacy session");
            session.close();
        }
    }

    /// Starts, once, the task that closes idle sessions; it ends with the server or the
    /// service.
    fn start_reaper(self: &Arc<Self>, shutdown: CancellationToken) {
        if self.reaper.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let shortest = self.limits.idle.min(self.limits.uninitialized_idle);
        let every = (shortest / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                sessions.reap();
            }
            if let Some(sessions) = weak.upgrade() {
                let all: Vec<_> = sessions.map().drain().map(|(_, s)| s).collect();
                for session in all {
                    session.close();
                }
            }
        });
    }
}

/// A legacy session's connection, whatever its handler type.
trait SessionConnection: Send + Sync {
    fn handle(
        &self,
        message: JsonRpcMessage,
        origin: RequestOrigin,
    ) -> futures::future::BoxFuture<'static, Reply>;
    fn close(&self);
    fn is_closed(&self) -> bool;
    /// Whether the client sent `notifications/initialized`.
    fn is_initialized(&self) -> bool;
}

impl<H: Handler> SessionConnection for Connection<H> {
    fn handle(
        &self,
        message: JsonRpcMessage,
        origin: RequestOrigin,
    ) -> futures::future::BoxFuture<'static, Reply> {
        let connection = self.clone();
        Box::pin(async move { connection.handle(message, origin).await })
    }

    fn close(&self) {
        Connection::close(self);
    }

    fn is_closed(&self) -> bool {
        Connection::is_closed(self)
    }

    fn is_initialized(&self) -> bool {
        Connection::legacy_initialized(self)
    }
}

/// One legacy session over HTTP.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    /// The revision `initialize` negotiated.
    version: ProtocolVersion,
    /// The principal that opened the session; only it may use the session.
    owner: Owner,
    /// What the session counts against for the per-client cap.
    client: Option<ClientKey>,
    /// Cancelled when the session ends.
    cancel: CancellationToken,
    connection: Box<dyn SessionConnection>,
    /// The `GET` stream's log (stream 0): unsolicited messages.
    standalone: Arc<EventLog>,
    /// Request streams, oldest first, kept for resumption.
    streams: Mutex<VecDeque<Arc<EventLog>>>,
    next_stream: AtomicU64,
    last_used: AtomicU64,
    /// Its place in the order sessions opened (see [`Sessions::opened`]).
    opened: u64,
    /// Requests running and streams being read: a session in use never expires.
    active: AtomicUsize,
    /// How long a request may go on while no client reads its stream.
    unread: Duration,
}

impl HttpSession {
    fn touch(&self, now_ms: u64) {
        self.last_used.fetch_max(now_ms, Ordering::AcqRel);
    }

    fn close(&self) {
        self.connection.close();
        self.standalone.finish();
        for log in self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            log.finish();
        }
    }

    fn active(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::AcqRel);
        ActiveGuard(self.clone())
    }

    /// A new request stream, remembered for resumption (the oldest finished ones are
    /// forgotten).
    fn new_stream(&self) -> Arc<EventLog> {
        let log = Arc::new(EventLog::new(
            self.next_stream.fetch_add(1, Ordering::Relaxed),
        ));
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        while streams.len() >= MAX_FINISHED_STREAMS {
            match streams.iter().position(|s| s.is_done()) {
                Some(i) => {
                    streams.remove(i);
                }
                None => break,
            }
        }
        streams.push_back(log.clone());
        log
    }

    fn stream(&self, id: u64) -> Option<Arc<EventLog>> {
        if id == 0 {
            return Some(self.standalone.clone());
        }
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|s| s.stream == id)
            .cloned()
    }
}

/// Finishes a request stream's log when dropped.
struct FinishOnDrop(Arc<EventLog>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Keeps a session from expiring while held.
struct ActiveGuard(Arc<HttpSession>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        // Idle time counts from the end of the last use.
        self.0.touch(now_ms());
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Milliseconds since the first use of this module (a monotonic clock for idle times).
fn now_ms() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What a legacy POST gets back.
pub(crate) enum Answer {
    /// One JSON-RPC message, and its kind (a response, or a scope refusal).
    Message(Bytes, MessageKind),
    /// Nothing (a notification or a response was accepted, or the request was cancelled).
    Accepted,
    /// The request's stream: SSE frames with ids (a priming event first on 2025-11-25),
    /// or bare messages for a client that takes only JSON.
    Stream(ReplyStream),
}

/// Serves one message of a legacy session. A request runs in its own task, which keeps
/// running if the HTTP exchange goes away (the client may resume its stream), until
/// `notifications/cancelled`, the session ending, or nobody reading its answer for the
/// unread-stream timeout cancels it.
pub(crate) async fn serve_message(
    session: &Arc<HttpSession>,
    message: JsonRpcMessage,
    origin: RequestOrigin,
    sse: bool,
) -> Answer {
    if !matches!(message, JsonRpcMessage::Request(_)) {
        // Notifications (cancellations included) and the client's answers to the server's
        // requests.
        session.connection.handle(message, origin).await;
        return Answer::Accepted;
    }
    let (tx, rx) = oneshot::channel();
    let served = session.connection.handle(message, origin);
    let task_session = session.clone();
    let guard = session.active();
    tokio::spawn(async move {
        let _guard = guard;
        let mut tx = tx;
        let unread = task_session.unread;
        let reply = tokio::select! {
            reply = served => reply,
            () = gone_for(&mut tx, unread) => {
                // Nobody can get the answer any more (it has no stream to resume yet):
                // dropping the request cancels it.
                tracing::debug!(
                    session = %task_session.id,
                    "abandoned a legacy request whose client went away"
                );
                return;
            }
        };
        match reply {
            Reply::Message { body, kind } => {
                // A legacy session answers 200 for everything but a scope refusal (403)
                // and a budget refusal (429).
                let kind = match kind {
                    MessageKind::InsufficientScope | MessageKind::OverBudget => kind,
                    _ => MessageKind::Response,
                };
                let _ = tx.send(Answer::Message(body, kind));
            }
            Reply::Stream(mut stream) => {
                let log = task_session.new_stream();
                let events = log.clone().reader(1, None, &task_session, sse);
                let _ = tx.send(Answer::Stream(events));
                // Ends the stream for its readers however the task ends (also when
                // `notifications/cancelled` cuts the stream).
                let _finish = FinishOnDrop(log.clone());
                let unread = task_session.unread;
                let mut check = tokio::time::interval(
                    (unread / 4).clamp(Duration::from_millis(10), Duration::from_secs(5)),
                );
                check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        message = stream.next() => match message {
                            // An empty message asks for the response to end here (the
                            // client resumes with GET).
                            Some(message) => log.push((!message.is_empty()).then_some(message)),
                            None => break,
                        },
                        _ = check.tick() => {
                            if log.unread_for(now_ms()) > unread {
                                // Dropping the stream cancels the request.
                                tracing::debug!(
                                    session = %task_session.id,
                                    "abandoned a legacy request whose stream nobody read"
                                );
                                break;
                            }
                        }
                    }
                }
            }
            _ => {
                let _ = tx.send(Answer::Accepted);
            }
        }
    });
    rx.await.unwrap_or(Answer::Accepted)
}

/// Completes `unread` after the HTTP exchange waiting for `tx` went away.
async fn gone_for(tx: &mut oneshot::Sender<Answer>, unread: Duration) {
    tx.closed().await;
    tokio::time::sleep(unread).await;
}

/// Opens a `GET` stream: a resumption after `Last-Event-ID`, or the session's stream of
/// unsolicited messages (a new `GET` takes it over from an older one).
pub(crate) fn open_get(
    session: &Arc<HttpSession>,
    last_event_id: Option<&str>,
) -> Result<ReplyStream, &'static str> {
    match last_event_id {
        Some(last) => {
            let (stream, seq) = parse_event_id(last).ok_or("Malformed Last-Event-ID")?;
            let log = session.stream(stream).ok_or("Unknown Last-Event-ID")?;
            let takeover = (stream == 0).then(|| log.take_over());
            Ok(log.reader_resumed(seq.saturating_add(1), takeover, session))
        }
        None => {
            let log = session.standalone.clone();
            let generation = log.take_over();
            let from = log.high_water();
            Ok(log.reader(from, Some(generation), session, true))
        }
    }
}

fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// The numbered messages of one SSE stream.
pub(crate) struct EventLog {
    stream: u64,
    state: Mutex<LogState>,
    changed: Notify,
    /// Readers attached now.
    readers: AtomicUsize,
    /// When the last reader left (or the log was made), in [`now_ms`] time.
    unread_since: AtomicU64,
}

struct LogState {
    /// `(seq, message)`; `None` marks where a response was asked to end.
    events: VecDeque<(u64, Option<Bytes>)>,
    next_seq: u64,
    done: bool,
    /// The reader currently entitled to the stream (the `GET` stream only).
    generation: u64,
    /// The first seq no reader has delivered yet.
    high_water: u64,
}

impl EventLog {
    fn new(stream: u64) -> Self {
        EventLog {
            stream,
            state: Mutex::new(LogState {
                events: VecDeque::new(),
                next_seq: 1,
                done: false,
                generation: 0,
                high_water: 1,
            }),
            changed: Notify::new(),
            readers: AtomicUsize::new(0),
            unread_since: AtomicU64::new(now_ms()),
        }
    }

    /// How long no reader has been attached (zero while one is).
    fn unread_for(&self, now_ms: u64) -> Duration {
        if self.readers.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(now_ms.saturating_sub(self.unread_since.load(Ordering::Acquire)))
    }

    fn state(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, message: Option<Bytes>) {
        {
            let mut state = self.state();
            if state.done {
                return;
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            if state.events.len() >= MAX_EVENTS {
                state.events.pop_front();
            }
            state.events.push_back((seq, message));
        }
        self.changed.notify_waiters();
    }

    fn finish(&self) {
        self.state().done = true;
        self.changed.notify_waiters();
    }

    fn is_done(&self) -> bool {
        self.state().done
    }

    fn take_over(&self) -> u64 {
        let generation = {
            let mut state = self.state();
            state.generation += 1;
            state.generation
        };
        self.changed.notify_waiters();
        generation
    }

    fn high_water(&self) -> u64 {
        self.state().high_water
    }

    /// The priming event of a 2025-11-25 stream read from `from`: an id and no data, so a
    /// client can resume even before the first message, and `retry`.
    fn priming(&self, from: u64) -> Bytes {
        Bytes::from(format!(
            "id: {}-{}\nretry: {RETRY_MS}\ndata: \n\n",
            self.stream,
            from.saturating_sub(1)
        ))
    }

    fn reader(
        self: Arc<Self>,
        from: u64,
        generation: Option<u64>,
        session: &Arc<HttpSession>,
        sse: bool,
    ) -> ReplyStream {
        // A fresh reader stops at the first end marker after its start.
        self.make_reader(from, from, generation, session, sse)
    }

    fn reader_resumed(
        self: Arc<Self>,
        from: u64,
        generation: Option<u64>,
        session: &Arc<HttpSession>,
    ) -> ReplyStream {
        // End markers already written are what the client is resuming from.
        let skip_before = self.state().next_seq;
        self.make_reader(from, skip_before, generation, session, true)
    }

    fn make_reader(
        self: Arc<Self>,
        from: u64,
        skip_marks_before: u64,
        generation: Option<u64>,
        session: &Arc<HttpSession>,
        sse: bool,
    ) -> ReplyStream {
        let priming =
            (sse && session.version >= ProtocolVersion::V2025_11_25).then(|| self.priming(from));
        self.readers.fetch_add(1, Ordering::AcqRel);
        let reader = Reader {
            priming,
            sse,
            log: self.clone(),
            next: from,
            skip_marks_before,
            generation,
            cancel: session.cancel.clone(),
            _active: session.active(),
        };
        let stream = futures::stream::unfold(reader, |mut reader| async move {
            let next = reader.next().await?;
            Some((next, reader))
        });
        ReplyStream::new(stream)
    }
}

/// Reads an [`EventLog`] from a position.
struct Reader {
    /// Sent before anything else.
    priming: Option<Bytes>,
    /// SSE frames with ids, or the bare messages (for a client that takes only JSON).
    sse: bool,
    log: Arc<EventLog>,
    next: u64,
    skip_marks_before: u64,
    generation: Option<u64>,
    cancel: CancellationToken,
    _active: ActiveGuard,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.log.unread_since.store(now_ms(), Ordering::Release);
        self.log.readers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Reader {
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(priming) = self.priming.take() {
            return Some(priming);
        }
        loop {
            let notified = self.log.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.log.state();
                if self.generation.is_some_and(|g| g != state.generation) {
                    // A newer GET took the stream over.
                    return None;
                }
                let mut found = None;
                for (seq, message) in &state.events {
                    if *seq < self.next {
                        continue;
                    }
                    self.next = seq + 1;
                    match message {
                        Some(message) => {
                            found = Some((*seq, message.clone()));
                            break;
                        }
                        // A client that takes only JSON waits for the result instead.
                        None if self.sse && *seq >= self.skip_marks_before => return None,
                        None => {}
                    }
                }
                if let Some((seq, message)) = found {
                    state.high_water = state.high_water.max(seq + 1);
                    return Some(if self.sse {
                        frame(self.log.stream, seq, &message)
                    } else {
                        message
                    });
                }
                if state.done {
                    return None;
                }
            }
            tokio::select! {
                () = notified => {}
                () = self.cancel.cancelled() => return None,
            }
        }
    }
}

/// One SSE event with its id.
fn frame(stream: u64, seq: u64, message: &[u8]) -> Bytes {
    let event = sse_event(message);
    let id = format!("id: {stream}-{seq}\n");
    let mut buf = BytesMut::with_capacity(id.len() + event.len());
    buf.extend_from_slice(id.as_bytes());
    buf.extend_from_slice(&event);
    buf.freeze()
}
