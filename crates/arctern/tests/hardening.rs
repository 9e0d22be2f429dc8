//! The security review's findings, each closed by a test that fails without its fix: DNS
//! rebinding on a wildcard bind, legacy sessions bound to their principal, bounded
//! in-flight work, bounded and scoped subscriptions, a session table that cannot be locked,
//! a standalone server that survives slow clients, the ephemeral-key warning, exact numbers
//! in the argument digest, and logs that a client cannot flood.
//!
//! Everything runs over real HTTP on 127.0.0.1, or through the public `Server` and
//! `Connection` API; servers stop themselves and every wait is bounded.

#![cfg(all(feature = "http", feature = "server"))]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::server::connection::{ConnectionLimits, Reply, RequestOrigin, TransportKind};
use arctern::server::extract::{Args, State};
use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
use arctern::server::{
    Handler, McpHandler, McpServer, Principal, Server, ServerConfig, SubscriptionPolicy,
};
use arctern::transport::http::{HttpConfig, HttpServer};
use arctern_types::capabilities::ResourcesCapability;
use arctern_types::jsonrpc::JsonRpcMessage;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;

/// Bound on every wait, so that a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

// ---------------------------------------------------------------------------------------
// The server under test
// ---------------------------------------------------------------------------------------

/// What the tools saw.
#[derive(Default)]
struct Probe {
    started: AtomicUsize,
    cancelled: AtomicUsize,
    release: Notify,
    /// Set by the test before it frees a connection slot (see the connection-cap test).
    slot_freed: AtomicBool,
    /// What `record` saw of `slot_freed`.
    saw_slot_freed: Mutex<Vec<bool>>,
}

/// Counts the request as cancelled when dropped before it finished.
struct Running(Arc<Probe>, bool);

impl Drop for Running {
    fn drop(&mut self) {
        if !self.1 {
            self.0.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

async fn echo(Args(t): Args<Text>) -> String {
    t.text
}

/// Runs until released (or cancelled: then it counts as cancelled).
async fn wait(State(p): State<Arc<Probe>>) -> &'static str {
    p.started.fetch_add(1, Ordering::SeqCst);
    let mut running = Running(p.clone(), false);
    p.release.notified().await;
    running.1 = true;
    "released"
}

/// Records whether the test had freed a connection slot when it ran.
async fn record(State(p): State<Arc<Probe>>) -> &'static str {
    let freed = p.slot_freed.load(Ordering::SeqCst);
    p.saw_slot_freed.lock().unwrap().push(freed);
    "recorded"
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

impl Question for Confirm {
    type Args = NoArgs;
    type Answer = Confirm;
    fn ask(_cx: &AskContext<'_, NoArgs>) -> Result<Ask<Confirm>, NotYet> {
        Ok(Ask::form("confirm", "Proceed?"))
    }
}

async fn confirm(Answer(c): Answer<Confirm>) -> String {
    format!("confirmed: {}", c.ok)
}

#[derive(Deserialize, JsonSchema)]
struct First {
    text: String,
}

impl Question for First {
    type Args = NoArgs;
    type Answer = First;
    fn ask(_cx: &AskContext<'_, NoArgs>) -> Result<Ask<First>, NotYet> {
        Ok(Ask::form("first", "First?"))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Second {
    ok: bool,
}

impl Question for Second {
    type Args = NoArgs;
    type Answer = Second;
    fn ask(cx: &AskContext<'_, NoArgs>) -> Result<Ask<Second>, NotYet> {
        // Asked once the first is answered, in a round of its own.
        cx.answer::<First>()?;
        Ok(Ask::form("second", "Second?"))
    }
}

async fn two_rounds(Answer(f): Answer<First>, Answer(s): Answer<Second>) -> String {
    format!("{} {}", f.text.len(), s.ok)
}

type TestServer = Server<McpHandler<Arc<Probe>>>;

fn mcp(probe: Arc<Probe>) -> McpServer<Arc<Probe>> {
    McpServer::with_state("hardening", probe)
        .tool("echo", "Echoes its text.", echo)
        .tool("wait", "Runs until released.", wait)
        .tool("record", "Records what it saw.", record)
        .tool("confirm", "Asks to confirm.", confirm)
        .tool("two_rounds", "Asks twice, one round each.", two_rounds)
        .enable_resources()
}

fn build(probe: Arc<Probe>) -> TestServer {
    mcp(probe).build().expect("the test server builds")
}

/// Waits until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

// ---------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------

struct Serving {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Serving {
    /// The standalone server on `bind`, reached on 127.0.0.1.
    async fn standalone(server: TestServer, bind: &str, config: HttpConfig) -> Serving {
        let bound = HttpServer::new(server)
            .bind(bind)
            .config(config)
            .shutdown_grace(Duration::from_secs(2))
            .listen()
            .await
            .expect("binds");
        let addr = SocketAddr::from(([127, 0, 0, 1], bound.local_addr().port()));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            bound
                .serve_with_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .expect("the server returns Ok");
        });
        Serving {
            addr,
            stop: Some(stop),
            task,
        }
    }

    /// The tower service in axum, behind an authentication layer that makes the
    /// `Authorization` header the request's principal.
    async fn authenticated(server: TestServer, config: HttpConfig) -> Serving {
        async fn authenticate(
            mut request: axum::extract::Request,
            next: axum::middleware::Next,
        ) -> axum::response::Response {
            if let Some(who) = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
            {
                request.extensions_mut().insert(Principal(who));
            }
            next.run(request).await
        }
        let app = axum::Router::new()
            .route_service("/mcp", server.http_service_with(config))
            .layer(axum::middleware::from_fn(authenticate));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                    server.shutdown();
                })
                .await
                .unwrap();
        });
        Serving {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().expect("stopped once").send(());
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("the server stops in time")
            .expect("the server task does not panic");
    }
}

// ---------------------------------------------------------------------------------------
// A small HTTP client
// ---------------------------------------------------------------------------------------

struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Incoming,
    buf: String,
}

impl Response {
    fn session(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned())
    }

    async fn json(self) -> Value {
        let bytes = tokio::time::timeout(PATIENCE, self.body.collect())
            .await
            .expect("the body arrives in time")
            .unwrap()
            .to_bytes();
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
    }

    /// The next SSE event that carries a message; `None` at the end of the stream.
    async fn message(&mut self) -> Option<Value> {
        tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(end) = self.buf.find("\n\n") {
                    let raw: String = self.buf.drain(..end + 2).collect();
                    let data: Vec<&str> = raw
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .collect();
                    if data.is_empty() {
                        continue;
                    }
                    return Some(serde_json::from_str(&data.join("\n")).unwrap());
                }
                let frame = self.body.frame().await?;
                if let Ok(data) = frame.unwrap().into_data() {
                    self.buf.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
        })
        .await
        .expect("an event (or the end of the stream) arrives in time")
    }
}

/// One request on a connection of its own.
async fn send(
    addr: SocketAddr,
    method: Method,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Response {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("accept", "application/json, text/event-stream");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request = request.header("host", addr.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = match body {
        Some(b) => {
            request = request.header("content-type", "application/json");
            Bytes::from(serde_json::to_vec(b).unwrap())
        }
        None => Bytes::new(),
    };
    let response = tokio::time::timeout(
        PATIENCE,
        sender.send_request(request.body(Full::new(body)).unwrap()),
    )
    .await
    .expect("the server answers in time")
    .unwrap();
    let (parts, body) = response.into_parts();
    Response {
        status: parts.status,
        headers: parts.headers,
        body,
        buf: String::new(),
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "hardening", "version": "0"}
    })
}

/// A 2026-07-28 request with its envelope.
fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026-07-28 POST with its mirrored headers.
async fn post_modern(addr: SocketAddr, extra: &[(&str, &str)], body: &Value) -> Response {
    let method = body["method"].as_str().unwrap().to_owned();
    let mut headers = vec![
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method.as_str()),
    ];
    let name = body["params"]["name"].as_str().map(str::to_owned);
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    headers.extend_from_slice(extra);
    send(addr, Method::POST, &headers, Some(body)).await
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A JSON-RPC message from its JSON.
fn message(value: Value) -> JsonRpcMessage {
    JsonRpcMessage::from_slice(&serde_json::to_vec(&value).unwrap()).expect("a message")
}

/// The `error` member of a one-message reply (`null` for a result).
fn error_of(reply: &Reply) -> Value {
    let body: Value = serde_json::from_slice(reply.body().expect("one message")).unwrap();
    body["error"].clone()
}

/// A legacy session over HTTP, opened by whoever `authorization` names (nobody: `None`).
struct Session {
    addr: SocketAddr,
    id: String,
    authorization: Option<String>,
}

impl Session {
    async fn open(addr: SocketAddr, authorization: Option<&str>) -> Session {
        let session = Session::open_uninitialized(addr, authorization).await;
        let ack = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        session
    }

    /// `initialize` without `notifications/initialized`.
    async fn open_uninitialized(addr: SocketAddr, authorization: Option<&str>) -> Session {
        let response = Session::initialize(addr, authorization).await;
        assert_eq!(response.status, StatusCode::OK);
        let id = response.session().expect("initialize mints a session id");
        Session {
            addr,
            id,
            authorization: authorization.map(str::to_owned),
        }
    }

    async fn initialize(addr: SocketAddr, authorization: Option<&str>) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "hardening", "version": "0"}
        }});
        let mut headers = Vec::new();
        if let Some(who) = authorization {
            headers.push(("authorization", who));
        }
        send(addr, Method::POST, &headers, Some(&body)).await
    }

    /// The same session id, used by someone else.
    fn as_other(&self, authorization: Option<&str>) -> Session {
        Session {
            addr: self.addr,
            id: self.id.clone(),
            authorization: authorization.map(str::to_owned),
        }
    }

    fn headers<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut headers = vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", LEGACY),
        ];
        if let Some(who) = &self.authorization {
            headers.push(("authorization", who));
        }
        headers.extend_from_slice(extra);
        headers
    }

    async fn post(&self, body: &Value) -> Response {
        send(self.addr, Method::POST, &self.headers(&[]), Some(body)).await
    }

    async fn get(&self, last_event_id: Option<&str>) -> Response {
        let extra: Vec<(&str, &str)> = last_event_id
            .map(|id| ("last-event-id", id))
            .into_iter()
            .collect();
        send(self.addr, Method::GET, &self.headers(&extra), None).await
    }

    async fn delete(&self) -> Response {
        send(self.addr, Method::DELETE, &self.headers(&[]), None).await
    }

    async fn call(&self, id: i64, method: &str, params: Value) -> Value {
        let response = self.post(&rpc(id, method, params)).await;
        assert_eq!(response.status, StatusCode::OK);
        response.json().await
    }
}

// ---------------------------------------------------------------------------------------
// 1. DNS rebinding on a wildcard bind
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_wildcard_bind_refuses_a_rebound_host() {
    let s = Serving::standalone(build(Arc::default()), "0.0.0.0:0", HttpConfig::new()).await;
    let port = s.addr.port();
    let rebound = format!("rebind.attacker.test:{port}");
    let origin = format!("http://{rebound}");
    let list = modern(1, "tools/list", json!({}));
    let refused = post_modern(s.addr, &[("host", &rebound), ("origin", &origin)], &list).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "a rebound name");
    let refused = post_modern(s.addr, &[("host", &rebound)], &list).await;
    assert_eq!(
        refused.status,
        StatusCode::FORBIDDEN,
        "a rebound name, no Origin"
    );
    let served = post_modern(s.addr, &[], &list).await;
    assert_eq!(served.status, StatusCode::OK, "a loopback Host");
    s.stop().await;

    // A listed host is answered, and Origin equal to it too.
    let s = Serving::standalone(
        build(Arc::default()),
        "0.0.0.0:0",
        HttpConfig::new().allow_host("mcp.example.test"),
    )
    .await;
    let served = post_modern(
        s.addr,
        &[
            ("host", "mcp.example.test"),
            ("origin", "http://mcp.example.test"),
        ],
        &list,
    )
    .await;
    assert_eq!(served.status, StatusCode::OK);
    s.stop().await;

    // Host checking turned off: Origin equal to the unchecked Host proves nothing.
    let s = Serving::standalone(
        build(Arc::default()),
        "0.0.0.0:0",
        HttpConfig::new().localhost_only(false),
    )
    .await;
    let refused = post_modern(s.addr, &[("host", &rebound), ("origin", &origin)], &list).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let served = post_modern(s.addr, &[("host", &rebound)], &list).await;
    assert_eq!(
        served.status,
        StatusCode::OK,
        "no browser, no Origin: served"
    );
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 2. Legacy sessions belong to their principal
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_legacy_session_serves_only_the_principal_that_opened_it() {
    let s = Serving::authenticated(build(Arc::default()), HttpConfig::new()).await;
    let alice = Session::open(s.addr, Some("alice")).await;

    // Alice's call asks her to confirm, on its stream.
    let mut call = alice
        .post(&rpc(1, "tools/call", json!({"name": "confirm"})))
        .await;
    assert_eq!(call.status, StatusCode::OK);
    let asked = call.message().await.expect("the elicitation");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let elicitation_id = asked["id"].clone();
    let bobs_answer = json!({"jsonrpc": "2.0", "id": elicitation_id,
        "result": {"action": "accept", "content": {"ok": false}}});

    for who in [Some("bob"), None] {
        let other = alice.as_other(who);
        let what = format!("{who:?} on alice's session");
        assert_eq!(
            other.post(&bobs_answer).await.status,
            StatusCode::NOT_FOUND,
            "{what}: answering her question"
        );
        assert_eq!(
            other
                .post(&rpc(
                    9,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "x"}})
                ))
                .await
                .status,
            StatusCode::NOT_FOUND,
            "{what}: calling a tool"
        );
        assert_eq!(
            other.get(None).await.status,
            StatusCode::NOT_FOUND,
            "{what}: taking her GET stream"
        );
        assert_eq!(
            other.get(Some("1-0")).await.status,
            StatusCode::NOT_FOUND,
            "{what}: resuming her call's stream"
        );
        assert_eq!(
            other.delete().await.status,
            StatusCode::NOT_FOUND,
            "{what}: ending her session"
        );
    }

    // Alice's own answer is the one her call runs with.
    let answer = json!({"jsonrpc": "2.0", "id": elicitation_id,
        "result": {"action": "accept", "content": {"ok": true}}});
    assert_eq!(alice.post(&answer).await.status, StatusCode::ACCEPTED);
    let result = call.message().await.expect("the result");
    assert_eq!(
        result["result"]["content"][0]["text"], "confirmed: true",
        "{result}"
    );

    // An anonymous session is not anyone's either.
    let nobody = Session::open(s.addr, None).await;
    let taken = nobody.as_other(Some("alice"));
    assert_eq!(
        taken.post(&rpc(1, "ping", json!({}))).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(nobody.call(2, "ping", json!({})).await["result"], json!({}));
    assert_eq!(alice.delete().await.status, StatusCode::OK);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 3. In-flight work is bounded
// ---------------------------------------------------------------------------------------

/// A `tools/call` of `name` as a message of a connection.
fn call_message(id: i64, name: &str) -> JsonRpcMessage {
    message(modern(id, "tools/call", json!({"name": name})))
}

#[tokio::test]
async fn a_connection_caps_its_requests_in_flight_and_the_server_caps_all() {
    let probe = Arc::new(Probe::default());
    let server = mcp(probe.clone())
        .connection_limits(
            ConnectionLimits::default()
                .max_in_flight(2)
                .max_in_flight_total(3),
        )
        .build()
        .unwrap();
    let origin = || RequestOrigin::new(TransportKind::Other);
    let a = server.connection(TransportKind::Other);
    let b = server.connection(TransportKind::Other);
    let a1 = tokio::spawn(a.handle(call_message(1, "wait"), origin()));
    let a2 = tokio::spawn(a.handle(call_message(2, "wait"), origin()));
    eventually("both calls run", || {
        probe.started.load(Ordering::SeqCst) == 2
    })
    .await;

    let refused = a.handle(call_message(3, "echo"), origin()).await;
    let error = error_of(&refused);
    assert_eq!(error["code"], -32603, "{error}");
    assert_eq!(error["data"], json!({"limit": 2, "scope": "connection"}));
    assert!(error["message"].as_str().unwrap().contains("in flight"));

    let b1 = tokio::spawn(b.handle(call_message(1, "wait"), origin()));
    eventually("b's call runs", || {
        probe.started.load(Ordering::SeqCst) == 3
    })
    .await;
    let refused = b.handle(call_message(2, "echo"), origin()).await;
    assert_eq!(
        error_of(&refused)["data"],
        json!({"limit": 3, "scope": "server"})
    );

    // Finished requests free their places.
    probe.release.notify_waiters();
    for call in [a1, a2, b1] {
        assert!(matches!(call.await.unwrap(), Reply::Message { .. }));
    }
    let served = b.handle(call_message(3, "wait"), origin());
    let served = tokio::spawn(served);
    eventually("served again", || probe.started.load(Ordering::SeqCst) == 4).await;
    probe.release.notify_waiters();
    assert!(error_of(&served.await.unwrap()).is_null());
}

#[tokio::test]
async fn a_legacy_session_caps_in_flight_calls_and_abandons_unread_ones() {
    let probe = Arc::new(Probe::default());
    let server = mcp(probe.clone())
        .connection_limits(ConnectionLimits::default().max_in_flight(1))
        .build()
        .unwrap();
    let s = Serving::standalone(
        server,
        "127.0.0.1:0",
        HttpConfig::new().unread_stream_timeout(Duration::from_millis(200)),
    )
    .await;
    let session = Session::open(s.addr, None).await;

    // A call whose client goes away (below): nobody will read its answer.
    let call = tokio::spawn({
        let session = session.as_other(None);
        async move {
            session
                .post(&rpc(7, "tools/call", json!({"name": "wait"})))
                .await
        }
    });
    eventually("the call runs", || {
        probe.started.load(Ordering::SeqCst) == 1
    })
    .await;

    // The session's one place is taken: a clear JSON-RPC error.
    let refused = session
        .call(
            8,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["data"]["scope"], "connection");
    // A reused id is refused while the first is in flight.
    let reused = session.call(7, "ping", json!({})).await;
    assert_eq!(reused["error"]["code"], -32600, "{reused}");

    call.abort();
    eventually("the unread call is abandoned", || {
        probe.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    let served = session
        .call(
            9,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "again"}}),
        )
        .await;
    assert_eq!(served["result"]["content"][0]["text"], "again", "{served}");
    s.stop().await;
}

#[tokio::test]
async fn a_cancelled_legacy_request_is_cancelled_even_when_its_id_is_reused() {
    let probe = Arc::new(Probe::default());
    let s = Serving::standalone(build(probe.clone()), "127.0.0.1:0", HttpConfig::new()).await;
    let session = Session::open(s.addr, None).await;
    let call = tokio::spawn({
        let session = session.as_other(None);
        async move {
            session
                .post(&rpc(7, "tools/call", json!({"name": "wait"})))
                .await
        }
    });
    eventually("the call runs", || {
        probe.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let reused = session.call(7, "ping", json!({})).await;
    assert_eq!(reused["error"]["code"], -32600, "{reused}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}});
    assert_eq!(session.post(&cancel).await.status, StatusCode::ACCEPTED);
    eventually("the first request is cancelled", || {
        probe.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    let answered = tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap();
    assert_eq!(
        answered.status,
        StatusCode::ACCEPTED,
        "a cancelled request gets no answer"
    );
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 4. Subscriptions are bounded and scoped
// ---------------------------------------------------------------------------------------

/// A low-level server that declares resources but not `resources.subscribe`.
struct NoSubscribe;
impl Handler for NoSubscribe {}

#[tokio::test]
async fn resources_subscribe_needs_the_declared_capability() {
    let mut config = ServerConfig::new("no-subscribe", "1.0.0");
    config.capabilities.resources = Some(ResourcesCapability::default().with_list_changed(true));
    let server = Server::new(NoSubscribe, config);
    let connection = server.connection(TransportKind::Other);
    let origin = || RequestOrigin::new(TransportKind::Other);
    let init = message(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}));
    let opened = connection.handle(init, origin()).await;
    assert!(error_of(&opened).is_null(), "{opened:?}");
    let subscribe = message(rpc(1, "resources/subscribe", json!({"uri": "file:///a"})));
    let refused = connection.handle(subscribe, origin()).await;
    assert_eq!(error_of(&refused)["code"], -32601, "{refused:?}");
}

#[tokio::test]
async fn legacy_subscriptions_are_capped_and_a_bare_scheme_covers_nothing() {
    let server = mcp(Arc::default())
        .subscription_policy(
            SubscriptionPolicy::default()
                .max_subscriptions(2)
                .max_uri_len(64),
        )
        .build()
        .unwrap();
    let notifier = server.change_notifier();
    let s = Serving::standalone(server, "127.0.0.1:0", HttpConfig::new()).await;
    let session = Session::open(s.addr, None).await;
    let subscribe = |id, uri: &str| rpc(id, "resources/subscribe", json!({"uri": uri}));
    let too_long = format!("file:///{}", "x".repeat(100));
    let refused = session.post(&subscribe(1, &too_long)).await.json().await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    for (id, uri) in [(2, "file:"), (3, "config://watched")] {
        let ok = session.post(&subscribe(id, uri)).await.json().await;
        assert_eq!(ok["result"], json!({}), "{ok}");
    }
    let refused = session
        .post(&subscribe(4, "config://third"))
        .await
        .json()
        .await;
    assert_eq!(
        refused["error"]["code"], -32602,
        "over the count: {refused}"
    );

    let mut stream = session.get(None).await;
    assert_eq!(stream.status, StatusCode::OK);
    // "file:" names a scheme only: it must not cover a tenant's file. The update that
    // comes through first is the one the session really subscribed to.
    notifier.resource_updated("file:///tenants/alice/invoice-42.pdf");
    notifier.resource_updated("config://watched");
    let first = stream.message().await.expect("an update");
    assert_eq!(first["params"]["uri"], "config://watched", "{first}");
    s.stop().await;
}

/// A `subscriptions/listen` stream opened as `who`, with its first message (the
/// acknowledgement) read.
async fn listen(
    server: &TestServer,
    who: &str,
    uris: &[&str],
) -> arctern::server::connection::ReplyStream {
    let mut extensions = http::Extensions::new();
    extensions.insert(Principal(who.to_owned()));
    let listen = message(modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    ));
    let reply = server
        .handle(
            listen,
            RequestOrigin::new(TransportKind::Other).with_extensions(extensions),
        )
        .await;
    let Reply::Stream(mut stream) = reply else {
        panic!("a listen stream: {reply:?}");
    };
    let ack = stream.next().await.expect("the acknowledgement");
    let ack: Value = serde_json::from_slice(&ack).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

#[tokio::test]
async fn a_filter_scopes_resource_updates_by_principal() {
    let server = mcp(Arc::default())
        .subscription_policy(SubscriptionPolicy::default().filter(|subscriber, uri| {
            subscriber
                .principal()
                .is_some_and(|p| uri.starts_with(&format!("file:///tenants/{}/", p.0)))
        }))
        .build()
        .unwrap();
    let notifier = server.change_notifier();
    let mut bob = listen(&server, "bob", &["file:///tenants/"]).await;
    notifier.resource_updated("file:///tenants/alice/invoice-42.pdf");
    notifier.resource_updated("file:///tenants/bob/notes.txt");
    let first = tokio::time::timeout(PATIENCE, bob.next())
        .await
        .expect("an update in time")
        .expect("an update");
    let first: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(
        first["params"]["uri"], "file:///tenants/bob/notes.txt",
        "bob never hears of alice's invoice: {first}"
    );

    // Listen filters are capped like legacy subscriptions.
    let capped = mcp(Arc::default())
        .subscription_policy(SubscriptionPolicy::default().max_subscriptions(1))
        .build()
        .unwrap();
    let listen = message(modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": ["a:1", "a:2"]}}),
    ));
    let refused = capped
        .handle(listen, RequestOrigin::new(TransportKind::Other))
        .await;
    assert_eq!(error_of(&refused)["code"], -32602, "{refused:?}");
}

// ---------------------------------------------------------------------------------------
// 5. The session table cannot be locked
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_flood_of_initialize_cannot_lock_legacy_clients_out() {
    let s = Serving::standalone(
        build(Arc::default()),
        "127.0.0.1:0",
        HttpConfig::new().max_sessions(4),
    )
    .await;
    let kept = Session::open(s.addr, None).await;
    // Sessions that never finish initializing make room first.
    for _ in 0..20 {
        Session::open_uninitialized(s.addr, None).await;
    }
    assert_eq!(
        kept.call(1, "ping", json!({})).await["result"],
        json!({}),
        "the initialized session survives the flood"
    );
    let late = Session::open(s.addr, None).await;
    assert_eq!(late.call(1, "ping", json!({})).await["result"], json!({}));
    s.stop().await;

    // One client (here one peer address) cannot take every place: at its own limit, its
    // least recently used session not in use makes room; when all are in use, 429.
    let s = Serving::standalone(
        build(Arc::default()),
        "127.0.0.1:0",
        HttpConfig::new().max_sessions_per_client(2),
    )
    .await;
    let oldest = Session::open(s.addr, None).await;
    let busy = Session::open(s.addr, None).await;
    let _newest = Session::open(s.addr, None).await;
    assert_eq!(
        oldest.post(&rpc(1, "ping", json!({}))).await.status,
        StatusCode::NOT_FOUND,
        "the client's least recently used session made room"
    );
    // Both of the client's sessions in use (their GET streams open): no room.
    let _reading = busy.get(None).await;
    let _reading_too = _newest.get(None).await;
    let refused = Session::initialize(s.addr, None).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 6. The standalone server survives slow clients
// ---------------------------------------------------------------------------------------

/// Reads until the server closes the connection; returns what it sent.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut out))
        .await
        .expect("the server closes the connection in time")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn slow_heads_and_bodies_are_cut_off() {
    let s = Serving::standalone(
        build(Arc::default()),
        "127.0.0.1:0",
        HttpConfig::new()
            .header_read_timeout(Duration::from_millis(300))
            .body_read_timeout(Duration::from_millis(300)),
    )
    .await;
    // A body that never finishes: 408, and the connection closes.
    let mut slow_body = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Content-Length: 1000\r\n\r\n{{",
        s.addr
    );
    slow_body.write_all(head.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut slow_body).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive in time"), "{answer}");

    // A head that never finishes, and a connection that never sends anything: closed.
    let mut slow_head = TcpStream::connect(s.addr).await.unwrap();
    slow_head
        .write_all(b"POST /mcp HTTP/1.1\r\nHo")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(s.addr).await.unwrap();
    read_to_close(&mut slow_head).await;
    read_to_close(&mut silent).await;

    // Ordinary clients are served all along.
    let served = post_modern(s.addr, &[], &modern(1, "tools/list", json!({}))).await;
    assert_eq!(served.status, StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn the_connection_cap_holds_new_clients_until_a_slot_frees() {
    let probe = Arc::new(Probe::default());
    let s = Serving::standalone(
        build(probe.clone()),
        "127.0.0.1:0",
        HttpConfig::new().max_connections(1),
    )
    .await;
    // The one slot, held by a connection that sends nothing.
    let holder = TcpStream::connect(s.addr).await.unwrap();
    let addr = s.addr;
    let call = tokio::spawn(async move {
        post_modern(
            addr,
            &[],
            &modern(1, "tools/call", json!({"name": "record"})),
        )
        .await
        .json()
        .await
    });
    // Give a server without the cap every chance to serve the call now (it would record
    // `false`); with the cap, it waits for the slot whatever the delay.
    tokio::time::sleep(Duration::from_millis(300)).await;
    probe.slot_freed.store(true, Ordering::SeqCst);
    drop(holder);
    let result = tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "recorded",
        "{result}"
    );
    assert_eq!(*probe.saw_slot_freed.lock().unwrap(), vec![true]);
    s.stop().await;
}

#[tokio::test]
async fn requests_beyond_the_in_flight_cap_get_503() {
    let probe = Arc::new(Probe::default());
    let s = Serving::standalone(
        build(probe.clone()),
        "127.0.0.1:0",
        HttpConfig::new().max_in_flight(1),
    )
    .await;
    let addr = s.addr;
    let running = tokio::spawn(async move {
        post_modern(addr, &[], &modern(1, "tools/call", json!({"name": "wait"})))
            .await
            .json()
            .await
    });
    eventually("the call runs", || {
        probe.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let refused = post_modern(s.addr, &[], &modern(2, "tools/list", json!({}))).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers["retry-after"], "1");
    let body = refused.json().await;
    assert_eq!(body["error"]["code"], -32603, "{body}");
    probe.release.notify_waiters();
    let done = tokio::time::timeout(PATIENCE, running)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "released");
    let served = post_modern(s.addr, &[], &modern(3, "tools/list", json!({}))).await;
    assert_eq!(served.status, StatusCode::OK);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 8. The ephemeral-key warning; 11. no log flood, and oversized answers
// ---------------------------------------------------------------------------------------

/// Log lines captured on this thread.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn start(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    fn lines(&self, containing: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(containing))
            .map(str::to_owned)
            .collect()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_ephemeral_sealer_over_http_is_warned_about() {
    let (logs, _guard) = Captured::start(tracing::Level::WARN);
    let warning = "sealed with a key of this process only";
    let bound = HttpServer::new(build(Arc::default()))
        .bind("127.0.0.1:0")
        .listen()
        .await
        .unwrap();
    assert_eq!(logs.lines(warning).len(), 1, "{:?}", logs.lines(""));
    drop(bound);
    let shared = mcp(Arc::default())
        .state_keys(arctern::state::KeyRing::generate())
        .build()
        .unwrap();
    let bound = HttpServer::new(shared)
        .bind("127.0.0.1:0")
        .listen()
        .await
        .unwrap();
    assert_eq!(logs.lines(warning).len(), 1, "shared keys: no new warning");
    drop(bound);
}

#[tokio::test(flavor = "current_thread")]
async fn rejected_tokens_do_not_flood_the_log() {
    let (logs, _guard) = Captured::start(tracing::Level::DEBUG);
    let server = build(Arc::default());
    for i in 0..50 {
        let forged = message(modern(
            i,
            "tools/call",
            json!({"name": "confirm", "requestState": format!("forged-{i}")}),
        ));
        let reply = server
            .handle(forged, RequestOrigin::new(TransportKind::Other))
            .await;
        assert_eq!(
            error_of(&reply)["message"],
            "Invalid or expired requestState"
        );
    }
    let rejected = logs.lines("requestState rejected");
    let warned = rejected.iter().filter(|l| l.contains("WARN")).count();
    assert_eq!(rejected.len() - warned, 50, "every rejection at debug");
    assert!(warned <= 1, "at most one warning line: {warned}");
}

#[tokio::test]
async fn an_answer_too_large_to_carry_is_the_clients_error() {
    let server = build(Arc::default());
    let call = |id, extra: Value| {
        let mut params = json!({"name": "two_rounds"});
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        message(modern(id, "tools/call", params))
    };
    let origin = || RequestOrigin::new(TransportKind::Other);
    let first = server.handle(call(1, json!({})), origin()).await;
    let first: Value = serde_json::from_slice(first.body().unwrap()).unwrap();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    // Far over the 8 KiB token limit once carried to the next round.
    let huge = "x".repeat(16 * 1024);
    let second = server
        .handle(
            call(
                2,
                json!({"requestState": state, "inputResponses": {
                    "first": {"action": "accept", "content": {"text": huge}}}}),
            ),
            origin(),
        )
        .await;
    let error = error_of(&second);
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(
        error["message"],
        "The answers are too large to carry to the next round"
    );
}
