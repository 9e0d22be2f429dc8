//! The tower service: one HTTP request in, one MCP reply out.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arctern_types::methods;
use bytes::Bytes;
use http::header::{
    ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER,
};
use http::request::Parts;
use http::{Method, Request, Response, StatusCode};
use http_body::Body;

use super::body::{ReadError, ResponseBody, SseSource, read_limited};
use super::config::HttpConfig;
use super::guard::{Denied, Guard};
use super::legacy::{self, Owner, PeerAddr, Route, SessionLimits, Sessions};
use super::negotiate::{Accepts, is_json_content, mcp_method_is, wire_headers};
use crate::server::connection::{MessageKind, Reply, RequestOrigin, TotalInFlight};
use crate::server::{Handler, InsufficientScope, Server, encode_error};
use crate::server::{has_modern_envelope, is_legacy_initialize};
use arctern_types::jsonrpc::JsonRpcMessage;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
const TEXT_EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");
const NO: HeaderValue = HeaderValue::from_static("no");
const POST: HeaderValue = HeaderValue::from_static("POST");
const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
const INSTANCE: HeaderName = HeaderName::from_static(super::config::INSTANCE_HEADER);

// Transport-level refusals: id-less JSON-RPC errors (the body is not read, so there is no
// id to echo). -32600 because the HTTP request as a whole is not an acceptable request.
const FORBIDDEN_HOST: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: this server does not answer requests for that Host"}}"#;
const FORBIDDEN_ORIGIN: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: requests from that Origin are not allowed"}}"#;
const METHOD_NOT_ALLOWED: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Method not allowed: the MCP endpoint accepts POST"}}"#;
const UNSUPPORTED_MEDIA_TYPE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unsupported Media Type: the request body must be application/json"}}"#;
const NOT_ACCEPTABLE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Not Acceptable: the client must accept application/json or text/event-stream"}}"#;
const LISTEN_NEEDS_SSE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Not Acceptable: subscriptions/listen answers with text/event-stream"}}"#;
const SESSION_NOT_FOUND: &str = r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found: initialize a new session"}}"#;
const MISSING_SESSION: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: missing Mcp-Session-Id header; send initialize first"}}"#;
const TOO_MANY_SESSIONS: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Service Unavailable: too many open sessions"}}"#;
const TOO_MANY_CLIENT_SESSIONS: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Too Many Requests: this client has too many sessions in use"}}"#;
const BODY_TIMEOUT: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Request Timeout: the request body did not arrive in time"}}"#;
const BUSY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Server busy: too many requests in flight; retry later"}}"#;
const CLOSE: HeaderValue = HeaderValue::from_static("close");
const ONE_SECOND: HeaderValue = HeaderValue::from_static("1");
const NO_SESSION_ID: &str = r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error: no session id could be made"}}"#;
const UNSUPPORTED_LEGACY_VERSION: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: unsupported MCP-Protocol-Version for this session"}}"#;
const GET_NEEDS_SSE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Not Acceptable: the GET stream answers with text/event-stream"}}"#;
const UNKNOWN_EVENT_ID: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: Last-Event-ID names no stream of this session"}}"#;
const LEGACY_ALLOW: HeaderValue = HeaderValue::from_static("GET, POST, DELETE");
const UNREADABLE_BODY: &str =
    r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"The request body could not be read"}}"#;

/// A tower [`Service`](tower_service::Service) answering MCP Streamable HTTP requests with a
/// [`Server`].
///
/// Cheap to clone. Mount it where the MCP endpoint lives, for example in axum with
/// `Router::new().route_service("/mcp", server.http_service())`; the service itself does not
/// look at the path.
///
/// One endpoint serves both eras. A request with an `Mcp-Session-Id`, or an `initialize`
/// without the 2026-07-28 `_meta` envelope, belongs to a 2025-era session (see
/// [`LegacyConfig`](crate::server::LegacyConfig)): sessions are minted on `initialize`,
/// unknown ones answer `404`, `GET` opens the session's SSE stream or resumes one after
/// `Last-Event-ID`, `DELETE` ends the session, and idle sessions expire
/// ([`HttpConfig::session_idle_timeout`], [`HttpConfig::max_sessions`]). Everything else is
/// served as 2026-07-28, where `GET` and `DELETE` answer `405`. The request's [`Extensions`](http::Extensions) reach the
/// handler through [`RequestContext::extensions`](crate::server::RequestContext::extensions),
/// so an authentication layer in front of the service can insert a
/// [`Principal`](crate::server::Principal).
///
/// For each request, in order: `Host`/`Origin` (`403`), method (`405`), `Content-Type`
/// (`415`), `Accept` (`406`), body size (`413`); then the server validates the message and
/// its mirrored headers and answers `200` (JSON or SSE), `202` (notification), `400` or
/// `404`.
pub struct StreamableHttpService<H> {
    inner: Arc<Inner<H>>,
}

struct Inner<H> {
    server: Server<H>,
    guard: Guard,
    max_body_size: usize,
    /// The most time a request body may take to arrive.
    body_timeout: Duration,
    /// The most requests served at once, and those being served.
    max_in_flight: usize,
    in_flight: Arc<TotalInFlight>,
    keep_alive: Option<Duration>,
    /// The 413 body, written once (it names the limit).
    too_large: Bytes,
    /// 2025-era sessions (touched only by requests routed to the legacy era).
    sessions: Arc<Sessions>,
    /// `Arctern-Instance`, when configured.
    instance: Option<HeaderValue>,
}

impl<H> Clone for StreamableHttpService<H> {
    fn clone(&self) -> Self {
        StreamableHttpService {
            inner: self.inner.clone(),
        }
    }
}

impl<H> fmt::Debug for StreamableHttpService<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("guard", &self.inner.guard)
            .field("max_body_size", &self.inner.max_body_size)
            .field("keep_alive", &self.inner.keep_alive)
            .finish_non_exhaustive()
    }
}

impl<H: Handler> StreamableHttpService<H> {
    /// A service for `server`. Localhost-only `Host`/`Origin` checking is on unless
    /// `config` turns it off (see [`HttpConfig`]).
    pub fn new(server: Server<H>, config: HttpConfig) -> Self {
        Self::with_default_localhost(server, config, true)
    }

    pub(crate) fn with_default_localhost(
        server: Server<H>,
        config: HttpConfig,
        localhost_only: bool,
    ) -> Self {
        let localhost_only = config.localhost_only.unwrap_or(localhost_only);
        let session_limits = SessionLimits {
            idle: config.session_idle_timeout,
            max: config.max_sessions,
            per_client: config.max_sessions_per_client,
            uninitialized_idle: config.uninitialized_session_timeout,
            unread: config.unread_stream_timeout,
        };
        let max_body_size = config.max_body_size;
        if server
            .config()
            .request_state
            .as_ref()
            .is_some_and(|sealer| sealer.is_ephemeral())
        {
            tracing::warn!(
                server = %server.config().info.name,
                "request state is sealed with a key of this process only: behind a load \
                 balancer, or across a restart, multi round-trip calls fail with \
                 \"Invalid or expired requestState\"; give every instance the same keys \
                 (McpServer::state_keys)"
            );
        }
        let instance = config.instance.clone();
        let session_prefix = legacy::session_prefix(config.instance());
        let too_large = Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32600,"message":"Request body too large (limit {max_body_size} bytes)"}}}}"#
        ));
        StreamableHttpService {
            inner: Arc::new(Inner {
                server,
                keep_alive: config.keep_alive,
                body_timeout: config.body_read_timeout,
                max_in_flight: config.max_in_flight,
                in_flight: Arc::default(),
                guard: Guard::new(config, localhost_only),
                max_body_size,
                too_large,
                sessions: Arc::new(Sessions::new(session_limits, session_prefix)),
                instance,
            }),
        }
    }

    /// The MCP server behind this service.
    pub fn server(&self) -> &Server<H> {
        &self.inner.server
    }

    /// Answers one request. Used by the tower `Service` implementation and the standalone
    /// server alike.
    pub(crate) fn dispatch<B>(
        &self,
        request: Request<B>,
        peer: Option<SocketAddr>,
    ) -> ResponseFuture
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        self.answer(request, peer)
            .instance(self.inner.instance.clone())
    }

    /// The `Arctern-Instance` header value, when configured.
    pub(crate) fn instance_header(&self) -> Option<HeaderValue> {
        self.inner.instance.clone()
    }

    fn answer<B>(&self, request: Request<B>, peer: Option<SocketAddr>) -> ResponseFuture
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let (mut parts, body) = request.into_parts();
        if let Err(denied) = self.inner.guard.check(&parts) {
            tracing::debug!(?denied, host = ?parts.headers.get(http::header::HOST), origin = ?parts.headers.get(http::header::ORIGIN), "refused a request from a host or origin that is not allowed");
            let body = match denied {
                Denied::Host => FORBIDDEN_HOST,
                Denied::Origin => FORBIDDEN_ORIGIN,
            };
            return ResponseFuture::ready(json_error(StatusCode::FORBIDDEN, body));
        }
        let route = if self.inner.server.serves_legacy() {
            legacy::route(&parts.headers)
        } else {
            Route::Modern
        };
        if parts.method != Method::POST {
            if let Route::Session(id) = route {
                return self.legacy_not_post(&parts, &id);
            }
            return ResponseFuture::ready(self.not_post(&parts));
        }
        if !is_json_content(&parts.headers) {
            return ResponseFuture::ready(json_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                UNSUPPORTED_MEDIA_TYPE,
            ));
        }
        let accepts = Accepts::from_headers(&parts.headers);
        if !accepts.json && !accepts.sse {
            return ResponseFuture::ready(json_error(StatusCode::NOT_ACCEPTABLE, NOT_ACCEPTABLE));
        }
        if !accepts.sse && mcp_method_is(&parts.headers, methods::SUBSCRIPTIONS_LISTEN) {
            // A listen stream has no final response to fall back to.
            return ResponseFuture::ready(json_error(StatusCode::NOT_ACCEPTABLE, LISTEN_NEEDS_SSE));
        }
        let limit = self.inner.max_body_size;
        if body.size_hint().lower() > limit as u64 {
            // Content-Length already says too much: answer without reading a byte.
            return ResponseFuture::ready(self.too_large());
        }
        let version = match route {
            Route::Modern => legacy::VersionHeader::Modern,
            _ => legacy::VersionHeader::read(
                &parts.headers,
                &self.inner.server.config().legacy.versions,
            ),
        };
        let headers = wire_headers(&parts.headers);
        if let (Some(peer), Route::Undecided) = (peer, &route) {
            // Only a request that may open a legacy session needs its peer (the per-client
            // session cap); the others skip the allocation.
            parts.extensions.insert(PeerAddr(peer));
        }
        let extensions = parts.extensions;
        let this = self.clone();
        ResponseFuture {
            instance: None,
            state: State::Running(Box::pin(async move {
                let bytes = match this.read_body(body, limit).await {
                    Ok(bytes) => bytes,
                    Err(response) => return response,
                };
                let Some(_place) = this.inner.in_flight.try_take(this.inner.max_in_flight) else {
                    return this.busy();
                };
                let origin =
                    RequestOrigin::http(headers, extensions).with_peer(peer.map(|p| p.ip()));
                if !matches!(route, Route::Modern) {
                    // Boxed: the legacy path's future is several kilobytes, and inline it
                    // would make every modern request's future (moved to the heap above) as
                    // large.
                    return Box::pin(this.legacy_post(route, version, &bytes, origin, accepts))
                        .await;
                }
                let reply = this.inner.server.handle_bytes(&bytes, origin).await;
                this.respond(reply, accepts)
            })),
        }
    }

    /// Reads the body within the size limit and the body-read deadline. A body that has
    /// arrived with the head is read without arming a timer.
    async fn read_body<B>(&self, body: B, limit: usize) -> Result<Bytes, Response<ResponseBody>>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        let mut read = std::pin::pin!(read_limited(body, limit));
        let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
        let read = match first {
            Poll::Ready(read) => read,
            Poll::Pending => match tokio::time::timeout(self.inner.body_timeout, read).await {
                Ok(read) => read,
                Err(_) => {
                    tracing::debug!(
                        timeout = ?self.inner.body_timeout,
                        "refused a request whose body did not arrive in time"
                    );
                    let mut response = json_error(StatusCode::REQUEST_TIMEOUT, BODY_TIMEOUT);
                    response.headers_mut().insert(CONNECTION, CLOSE);
                    return Err(response);
                }
            },
        };
        match read {
            Ok(bytes) => Ok(bytes),
            Err(ReadError::TooLarge) => Err(self.too_large()),
            Err(ReadError::Failed(e)) => {
                tracing::debug!(error = %e, "could not read a request body");
                Err(json_error(StatusCode::BAD_REQUEST, UNREADABLE_BODY))
            }
        }
    }

    /// The answer when the server is serving as many requests as it may.
    fn busy(&self) -> Response<ResponseBody> {
        busy_log().log(|suppressed| {
            tracing::warn!(
                limit = self.inner.max_in_flight,
                suppressed,
                "refused requests: at the in-flight limit (HttpConfig::max_in_flight)"
            );
        });
        let mut response = json_error(StatusCode::SERVICE_UNAVAILABLE, BUSY);
        response.headers_mut().insert(RETRY_AFTER, ONE_SECOND);
        response
    }

    /// Requests other than `POST` without a session: the 2026-07-28 wire has no `GET` stream
    /// and no sessions to `DELETE`.
    fn not_post(&self, parts: &Parts) -> Response<ResponseBody> {
        tracing::debug!(method = %parts.method, "refused a request method other than POST");
        let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED);
        response.headers_mut().insert(ALLOW, POST);
        response
    }

    /// `GET` (the session's stream, or a resumption) and `DELETE` on a legacy session.
    fn legacy_not_post(&self, parts: &Parts, id: &str) -> ResponseFuture {
        let owner = Owner::of(&self.inner.server, &parts.extensions);
        let Some(session) = self.inner.sessions.get(id, &owner) else {
            return ResponseFuture::ready(json_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND));
        };
        let response = match parts.method {
            Method::GET => {
                if !Accepts::from_headers(&parts.headers).sse {
                    return ResponseFuture::ready(json_error(
                        StatusCode::NOT_ACCEPTABLE,
                        GET_NEEDS_SSE,
                    ));
                }
                let last = parts
                    .headers
                    .get(legacy::LAST_EVENT_ID)
                    .and_then(|v| v.to_str().ok());
                match legacy::open_get(&session, last) {
                    Ok(events) => self.sse(SseSource::Framed(Some(events))),
                    Err(why) => {
                        tracing::debug!(why, "refused a GET stream resumption");
                        json_error(StatusCode::BAD_REQUEST, UNKNOWN_EVENT_ID)
                    }
                }
            }
            Method::DELETE => {
                self.inner.sessions.remove(id);
                tracing::debug!(session = id, "a client ended its legacy session");
                Response::new(ResponseBody::empty())
            }
            _ => {
                let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED);
                response.headers_mut().insert(ALLOW, LEGACY_ALLOW);
                response
            }
        };
        ResponseFuture::ready(response)
    }

    /// A `POST` not routed to the modern era: a message of a legacy session, or an
    /// `initialize` that opens one. Anything else goes to the modern path, so that its
    /// answers (and their codes) stay exactly those of a modern-only server.
    async fn legacy_post(
        &self,
        route: Route,
        version: legacy::VersionHeader,
        bytes: &[u8],
        origin: RequestOrigin,
        accepts: Accepts,
    ) -> Response<ResponseBody> {
        let server = &self.inner.server;
        let message = match JsonRpcMessage::from_slice(bytes) {
            Ok(message) => message,
            Err(e) => {
                if let Route::Session(_) = route {
                    return json(
                        StatusCode::BAD_REQUEST,
                        encode_error(e.id.as_ref(), &e.error),
                    );
                }
                return self.respond(server.handle_bytes(bytes, origin).await, accepts);
            }
        };
        if let Route::Session(id) = route {
            let owner = Owner::of(server, &origin.extensions);
            let Some(session) = self.inner.sessions.get(&id, &owner) else {
                return json_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
            };
            if version == legacy::VersionHeader::Other {
                return json_error(StatusCode::BAD_REQUEST, UNSUPPORTED_LEGACY_VERSION);
            }
            return match legacy::serve_message(&session, message, origin, accepts.sse).await {
                legacy::Answer::Message(body, kind) => {
                    self.respond(Reply::Message { body, kind }, accepts)
                }
                legacy::Answer::Accepted => self.respond(Reply::Accepted, accepts),
                legacy::Answer::Stream(events) if accepts.sse => {
                    self.sse(SseSource::Framed(Some(events)))
                }
                legacy::Answer::Stream(events) => {
                    let mut response = Response::new(ResponseBody::last_only(events));
                    response
                        .headers_mut()
                        .insert(CONTENT_TYPE, APPLICATION_JSON);
                    response
                }
            };
        }
        let legacy_header = version == legacy::VersionHeader::Legacy;
        match &message {
            JsonRpcMessage::Request(r)
                if version != legacy::VersionHeader::Other
                    && is_legacy_initialize(&r.method, r.params.as_deref()) =>
            {
                match self.inner.sessions.open(server, message, origin).await {
                    Ok((Some(session), reply)) => {
                        let mut response = self.respond(reply, accepts);
                        if let Ok(value) = HeaderValue::from_str(&session.id) {
                            response.headers_mut().insert(legacy::MCP_SESSION_ID, value);
                        }
                        response
                    }
                    Ok((None, reply)) => self.respond(reply, accepts),
                    Err(legacy::OpenError::Full) => {
                        tracing::warn!(
                            "refused a legacy session: at the session limit, every session in use"
                        );
                        json_error(StatusCode::SERVICE_UNAVAILABLE, TOO_MANY_SESSIONS)
                    }
                    Err(legacy::OpenError::ClientFull) => {
                        tracing::warn!(
                            "refused a legacy session: at the per-client limit, every one in use"
                        );
                        json_error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY_CLIENT_SESSIONS)
                    }
                    Err(legacy::OpenError::NoId) => {
                        json_error(StatusCode::INTERNAL_SERVER_ERROR, NO_SESSION_ID)
                    }
                }
            }
            JsonRpcMessage::Request(r)
                if legacy_header && !has_modern_envelope(r.params.as_deref()) =>
            {
                json_error(StatusCode::BAD_REQUEST, MISSING_SESSION)
            }
            JsonRpcMessage::Notification(_)
            | JsonRpcMessage::Response(_)
            | JsonRpcMessage::Error(_)
                if legacy_header =>
            {
                json_error(StatusCode::BAD_REQUEST, MISSING_SESSION)
            }
            _ => self.respond(server.handle(message, origin).await, accepts),
        }
    }

    fn too_large(&self) -> Response<ResponseBody> {
        tracing::debug!(
            limit = self.inner.max_body_size,
            "refused a request body over the limit"
        );
        let mut response = Response::new(ResponseBody::full(self.inner.too_large.clone()));
        *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, APPLICATION_JSON);
        response
    }

    fn respond(&self, reply: Reply, accepts: Accepts) -> Response<ResponseBody> {
        match reply {
            Reply::Message { body, kind } => {
                let status = status_of(kind);
                if status == StatusCode::OK && !accepts.json {
                    // The client takes only SSE: one event holding the response.
                    self.sse(SseSource::One(Some(body)))
                } else if kind == MessageKind::InsufficientScope {
                    // For the authentication layer in front, which writes the challenge.
                    let refusal = InsufficientScope::from_response_body(&body);
                    let mut response = json(status, body);
                    if let Some(refusal) = refusal {
                        response.extensions_mut().insert(refusal);
                    }
                    response
                } else if kind == MessageKind::OverBudget {
                    let retry = crate::server::budget::OverBudget::from_response_body(&body)
                        .map_or(1, |refusal| refusal.retry_after().as_secs());
                    let mut response = json(status, body);
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from(retry));
                    response
                } else {
                    json(status, body)
                }
            }
            Reply::Stream(stream) if accepts.sse => self.sse(SseSource::Stream(Some(stream))),
            Reply::Stream(stream) => {
                // The client takes only JSON: it gets the final response alone.
                let mut response = Response::new(ResponseBody::last_only(stream));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, APPLICATION_JSON);
                response
            }
            // A cancelled request has no answer; nothing but a notification gets here
            // without one, and both are accepted.
            _ => {
                let mut response = Response::new(ResponseBody::empty());
                *response.status_mut() = StatusCode::ACCEPTED;
                response
            }
        }
    }

    fn sse(&self, source: SseSource) -> Response<ResponseBody> {
        let mut response = Response::new(ResponseBody::sse(source, self.inner.keep_alive));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, TEXT_EVENT_STREAM);
        headers.insert(CACHE_CONTROL, NO_CACHE);
        // Reverse proxies (nginx) must not hold events back.
        headers.insert(X_ACCEL_BUFFERING, NO);
        response
    }
}

/// Refusals at the in-flight limit, logged at most once every ten seconds.
fn busy_log() -> &'static crate::log_limit::RateLimited {
    static LOG: crate::log_limit::RateLimited =
        crate::log_limit::RateLimited::new(Duration::from_secs(10));
    &LOG
}

/// The HTTP status of a single-message answer.
fn status_of(kind: MessageKind) -> StatusCode {
    match kind {
        MessageKind::Invalid => StatusCode::BAD_REQUEST,
        MessageKind::UnknownMethod => StatusCode::NOT_FOUND,
        MessageKind::InsufficientScope => StatusCode::FORBIDDEN,
        MessageKind::OverBudget => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::OK,
    }
}

fn json(status: StatusCode, body: Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, APPLICATION_JSON);
    response
}

fn json_error(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    json(status, Bytes::from_static(body.as_bytes()))
}

impl<H, B> tower_service::Service<Request<B>> for StreamableHttpService<H>
where
    H: Handler,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Always ready: each request is independent and nothing is pooled.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture {
        self.dispatch(request, None)
    }
}

/// The future of a [`StreamableHttpService`] response. Requests refused before their body
/// is read complete without allocating a future.
pub struct ResponseFuture {
    state: State,
    /// `Arctern-Instance`, added to the response when it is ready.
    instance: Option<HeaderValue>,
}

type Running = Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>>;

enum State {
    Ready(Option<Response<ResponseBody>>),
    Running(Running),
}

impl ResponseFuture {
    pub(crate) fn ready(response: Response<ResponseBody>) -> Self {
        ResponseFuture {
            state: State::Ready(Some(response)),
            instance: None,
        }
    }

    /// Adds `Arctern-Instance: <id>` to the response.
    pub(crate) fn instance(mut self, instance: Option<HeaderValue>) -> Self {
        self.instance = instance;
        self
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut response = match &mut this.state {
            State::Ready(response) => response
                .take()
                .expect("ResponseFuture polled after completion"),
            State::Running(future) => std::task::ready!(future.as_mut().poll(cx)),
        };
        if let Some(instance) = this.instance.take() {
            response.headers_mut().insert(INSTANCE, instance);
        }
        Poll::Ready(Ok(response))
    }
}

impl<H: Handler> Server<H> {
    /// A tower service serving this server over Streamable HTTP with the default
    /// [`HttpConfig`] (localhost-only `Host`/`Origin` checking, 4 MiB bodies).
    pub fn http_service(&self) -> StreamableHttpService<H> {
        StreamableHttpService::new(self.clone(), HttpConfig::default())
    }

    /// A tower service serving this server over Streamable HTTP with `config`.
    pub fn http_service_with(&self, config: HttpConfig) -> StreamableHttpService<H> {
        StreamableHttpService::new(self.clone(), config)
    }
}
