//! The client against hand-rolled legacy (2025-era) servers: era detection, `initialize`,
//! server→client requests answered by the shared handlers, notifications, sessions.
//!
//! The stdio peers speak newline-delimited JSON-RPC over an in-memory pipe
//! ([`StdioTransport::from_io`]); the HTTP peer is a small axum app on 127.0.0.1 that keeps
//! one session the way 2025-11-25 Streamable HTTP servers do.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::Era;
use arctern::ErrorKind;
use arctern::client::{Client, ClientBuilder, ServerNotification, StdioTransport};
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern::types::logging::LoggingLevel;
use arctern::types::roots::Root;
use arctern::types::sampling::CreateMessageResult;
use arctern::types::subscriptions::SubscriptionFilter;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// Bound on every wait, so that a broken peer fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

/// What the client's callbacks saw.
#[derive(Default)]
struct Seen {
    /// (key, origin method, origin target, what was asked)
    questions: Vec<(String, String, String, String)>,
    progress: Vec<f64>,
    logs: Vec<Value>,
}

type Shared = Arc<Mutex<Seen>>;

fn builder(seen: &Shared) -> ClientBuilder {
    let (s1, s2, s3, s4, s5) = (
        seen.clone(),
        seen.clone(),
        seen.clone(),
        seen.clone(),
        seen.clone(),
    );
    Client::builder()
        .request_timeout(PATIENCE)
        .on_elicit(move |q| {
            let seen = s1.clone();
            async move {
                let ElicitRequestParams::Form(form) = q.params() else {
                    return Ok(ElicitResult::decline());
                };
                seen.lock().unwrap().questions.push((
                    q.key().to_owned(),
                    q.origin().method().to_owned(),
                    q.origin().target().to_owned(),
                    form.message.clone(),
                ));
                Ok(ElicitResult::accept([("region", "eu-west-1")]))
            }
        })
        .on_sample(move |q| {
            let seen = s2.clone();
            async move {
                seen.lock().unwrap().questions.push((
                    q.key().to_owned(),
                    q.origin().method().to_owned(),
                    q.origin().target().to_owned(),
                    "sampling".into(),
                ));
                Ok(CreateMessageResult::text("stub-model", "a tagline"))
            }
        })
        .on_roots(move |q| {
            let seen = s3.clone();
            async move {
                seen.lock().unwrap().questions.push((
                    q.key().to_owned(),
                    q.origin().method().to_owned(),
                    q.origin().target().to_owned(),
                    "roots".into(),
                ));
                Ok(arctern::types::roots::ListRootsResult::new(vec![
                    Root::new("file:///work"),
                ]))
            }
        })
        .on_progress(move |p| s4.lock().unwrap().progress.push(p.progress))
        .on_log(LoggingLevel::Info, move |m| {
            s5.lock().unwrap().logs.push(m.data.clone())
        })
}

// ------------------------------------------------------------------ a stdio legacy peer

/// How the scripted stdio server treats the `server/discover` probe.
#[derive(Clone, Copy)]
enum Probe {
    /// `-32601`, as legacy servers answer methods they do not know.
    MethodNotFound,
    /// No answer at all.
    Silence,
    /// `-32022` listing only legacy versions.
    LegacyVersionsOnly,
}

/// One side of a newline-delimited JSON-RPC pipe.
struct Peer {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    out: tokio::io::WriteHalf<DuplexStream>,
}

impl Peer {
    async fn read(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .ok()?
            .ok()??;
        Some(serde_json::from_str(&line).expect("the client sends JSON"))
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.out.write_all(&line).await.unwrap();
    }

    /// Sends a request to the client and returns its answer (notifications in between are
    /// returned too, in order).
    async fn ask(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.read().await.expect("the client answers");
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

/// A legacy stdio server that answers `initialize` with `version`, and a tool `ask` that asks
/// the client every kind of question before it answers. Returns the messages it received.
async fn legacy_stdio_server(
    io: DuplexStream,
    probe: Probe,
    version: &'static str,
    received: mpsc::UnboundedSender<Value>,
) {
    let (read, out) = tokio::io::split(io);
    let mut peer = Peer {
        lines: BufReader::new(read).lines(),
        out,
    };
    while let Some(message) = peer.read().await {
        let _ = received.send(message.clone());
        let id = message["id"].clone();
        let method = message["method"].as_str().unwrap_or("").to_owned();
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id.clone(), "result": result});
        match method.as_str() {
            "server/discover" => match probe {
                Probe::Silence => {}
                Probe::MethodNotFound => {
                    peer.send(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "Method not found"}}))
                        .await
                }
                Probe::LegacyVersionsOnly => {
                    peer.send(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32022, "message": "Unsupported protocol version",
                            "data": {"supported": ["2025-11-25"], "requested": "2026-07-28"}}}))
                        .await
                }
            },
            "initialize" => {
                peer.send(reply(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}, "logging": {},
                        "resources": {"subscribe": true, "listChanged": true}},
                    "serverInfo": {"name": "hand-rolled-legacy", "version": "1.0.0"},
                    "instructions": "legacy peer"
                })))
                .await
            }
            "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
                peer.send(reply(json!({}))).await;
                if method == "resources/subscribe" {
                    let uri = message["params"]["uri"].clone();
                    peer.send(json!({"jsonrpc": "2.0",
                        "method": "notifications/resources/updated", "params": {"uri": uri}}))
                        .await;
                }
            }
            "tools/list" => {
                peer.send(reply(json!({"tools": [{"name": "ask",
                    "inputSchema": {"type": "object"}}]})))
                    .await
            }
            "tools/call" => {
                let token = message["params"]["_meta"]["progressToken"].clone();
                peer.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 2}}))
                    .await;
                peer.send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "asking"}}))
                    .await;
                let elicit = peer
                    .ask(
                        "e1",
                        "elicitation/create",
                        json!({"mode": "form", "message": "Which region?",
                            "requestedSchema": {"type": "object",
                                "properties": {"region": {"type": "string"}}}}),
                    )
                    .await;
                let sample = peer
                    .ask(
                        "s1",
                        "sampling/createMessage",
                        json!({"messages": [{"role": "user",
                            "content": {"type": "text", "text": "tagline?"}}], "maxTokens": 10}),
                    )
                    .await;
                let roots = peer.ask("r1", "roots/list", json!({})).await;
                let ping = peer.ask("p1", "ping", json!({})).await;
                let unknown = peer.ask("u1", "tools/list", json!({})).await;
                let answers = json!({"elicit": elicit, "sample": sample, "roots": roots,
                    "ping": ping, "unknown": unknown});
                peer.send(reply(json!({"content": [{"type": "text",
                    "text": answers.to_string()}]})))
                    .await;
            }
            _ if message.get("id").is_none() => {}
            _ => {
                peer.send(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}))
                    .await
            }
        }
    }
}

/// A client connected to a scripted legacy stdio server; the receiver gets every message
/// the server read.
async fn stdio_pair(
    builder: ClientBuilder,
    probe: Probe,
    version: &'static str,
) -> (arctern::Result<Client>, mpsc::UnboundedReceiver<Value>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(legacy_stdio_server(server_io, probe, version, tx));
    let (read, write) = tokio::io::split(client_io);
    let transport = StdioTransport::from_io(read, write);
    (builder.connect_with(transport).await, rx)
}

fn drain(rx: &mut mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
    let mut all = Vec::new();
    while let Ok(m) = rx.try_recv() {
        all.push(m);
    }
    all
}

#[tokio::test]
async fn detects_a_legacy_stdio_server_and_answers_its_requests() {
    let seen = Shared::default();
    let (client, mut rx) = stdio_pair(builder(&seen), Probe::MethodNotFound, "2025-11-25").await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(client.server_info().unwrap().name, "hand-rolled-legacy");
    assert_eq!(client.instructions().as_deref(), Some("legacy peer"));

    // Probe, then the handshake; the log callback asked for log messages.
    let opening = drain(&mut rx);
    let methods: Vec<&str> = opening
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "logging/setLevel"
        ]
    );
    let init = &opening[1]["params"];
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init.get("_meta").is_none(), "{init}");
    let caps = &init["capabilities"];
    assert!(caps["elicitation"].is_object() && caps["sampling"].is_object());
    assert!(caps["roots"].is_object());
    assert_eq!(opening[3]["params"]["level"], "info");

    client.ping().await.unwrap();
    let result = client.call_tool("ask", json!({})).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let answers: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answers["elicit"]["result"],
        json!({"action": "accept", "content": {"region": "eu-west-1"}})
    );
    assert_eq!(answers["sample"]["result"]["model"], "stub-model");
    assert_eq!(
        answers["roots"]["result"]["roots"][0]["uri"],
        "file:///work"
    );
    assert_eq!(answers["ping"]["result"], json!({}));
    assert_eq!(answers["unknown"]["error"]["code"], -32601);

    // The request carried no envelope, only the progress token.
    let call = drain(&mut rx)
        .into_iter()
        .find(|m| m["method"] == "tools/call")
        .unwrap();
    let meta = call["params"]["_meta"].as_object().unwrap();
    assert_eq!(meta.keys().collect::<Vec<_>>(), ["progressToken"]);

    {
        let seen = seen.lock().unwrap();
        // The only call in flight is the origin of every question; the key is the server's id.
        let expected = |key: &str, what: &str| {
            (
                key.to_owned(),
                "tools/call".to_owned(),
                "ask".to_owned(),
                what.to_owned(),
            )
        };
        assert_eq!(
            seen.questions,
            [
                expected("e1", "Which region?"),
                expected("s1", "sampling"),
                expected("r1", "roots")
            ]
        );
        assert_eq!(seen.progress, [1.0]);
        assert_eq!(seen.logs, [json!("asking")]);
    }
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_handler_s_error_stays_local_and_the_server_gets_a_generic_one() {
    // What a handler knows is this side's business: a command line with a key, a path.
    const SECRET: &str = "docker run -e API_KEY=sk-live-123 image (at /home/ada/work)";
    fn fail<T>() -> arctern::Result<T> {
        Err(arctern::Error::new(ErrorKind::InputRequired, SECRET))
    }
    let builder = Client::builder()
        .request_timeout(PATIENCE)
        .on_elicit(move |_| std::future::ready(fail()))
        .on_sample(move |_| std::future::ready(fail()))
        .on_roots(move |_| std::future::ready(fail()));
    let (client, _rx) = stdio_pair(builder, Probe::MethodNotFound, "2025-11-25").await;
    let client = client.unwrap();
    let result = client.call_tool("ask", json!({})).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !text.contains("API_KEY") && !text.contains("/home/ada"),
        "{text}"
    );
    let answers: Value = serde_json::from_str(&text).unwrap();
    for (answer, method) in [
        ("elicit", "elicitation/create"),
        ("sample", "sampling/createMessage"),
        ("roots", "roots/list"),
    ] {
        assert_eq!(
            answers[answer]["error"],
            json!({"code": -32603, "message": format!("the client did not answer {method}")}),
            "{answers}"
        );
    }
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_silent_probe_falls_back_to_initialize() {
    let seen = Shared::default();
    let builder = builder(&seen).probe_timeout(Duration::from_millis(200));
    let (client, _rx) = stdio_pair(builder, Probe::Silence, "2025-11-25").await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "ask");
}

#[tokio::test]
async fn a_modern_error_listing_only_legacy_versions_falls_back_to_initialize() {
    let seen = Shared::default();
    let (client, _rx) = stdio_pair(builder(&seen), Probe::LegacyVersionsOnly, "2025-11-25").await;
    assert_eq!(client.unwrap().era(), Era::Legacy);
}

#[tokio::test]
async fn legacy_version_negotiation() {
    // The server counters with the older revision this client also speaks.
    let seen = Shared::default();
    let (client, _rx) = stdio_pair(builder(&seen), Probe::MethodNotFound, "2025-06-18").await;
    assert_eq!(client.unwrap().protocol_version(), "2025-06-18");

    // A revision the client does not speak ends the connection attempt.
    let (client, mut rx) = stdio_pair(builder(&seen), Probe::MethodNotFound, "2024-11-05").await;
    let err = client.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Version, "{err}");
    let sent: Vec<Value> = drain(&mut rx);
    assert!(
        !sent
            .iter()
            .any(|m| m["method"] == "notifications/initialized")
    );

    // Pinned to the modern era, the client never falls back.
    let (client, _rx) = stdio_pair(
        builder(&seen).era(Era::Modern),
        Probe::MethodNotFound,
        "2025-11-25",
    )
    .await;
    assert!(client.unwrap_err().protocol_error().is_some());
}

#[tokio::test]
async fn pinned_legacy_skips_the_probe_and_subscribes_to_resources() {
    let seen = Shared::default();
    let (client, mut rx) = stdio_pair(
        builder(&seen).era(Era::Legacy),
        Probe::MethodNotFound,
        "2025-11-25",
    )
    .await;
    let client = client.unwrap();
    let first = drain(&mut rx);
    assert_eq!(first[0]["method"], "initialize");

    let mut subscription = client
        .subscribe(
            SubscriptionFilter::new()
                .with_resource("file:///watched")
                .with_tools_list_changed(),
        )
        .await
        .unwrap();
    // The server has no tools.listChanged: only the resource is acknowledged.
    assert_eq!(subscription.acknowledged().tools_list_changed, None);
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec!["file:///watched".to_owned()])
    );
    let update = tokio::time::timeout(PATIENCE, subscription.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        matches!(&update, ServerNotification::ResourceUpdated { uri } if uri == "file:///watched"),
        "{update:?}"
    );
}

/// The URIs of the `resources/unsubscribe` requests among `messages`.
fn unsubscribed(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "resources/unsubscribe")
        .map(|m| m["params"]["uri"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn dropping_a_subscription_unsubscribes_from_what_nothing_else_watches() {
    let seen = Shared::default();
    let (client, mut rx) = stdio_pair(
        builder(&seen).era(Era::Legacy),
        Probe::MethodNotFound,
        "2025-11-25",
    )
    .await;
    let client = client.unwrap();
    let watch = |uris: &[&str]| {
        uris.iter()
            .fold(SubscriptionFilter::new(), |f, u| f.with_resource(*u))
    };
    let narrow = client.subscribe(watch(&["file:///a"])).await.unwrap();
    let wide = client
        .subscribe(watch(&["file:///a", "file:///b"]))
        .await
        .unwrap();
    let mut log = drain(&mut rx);
    let subscribed: Vec<&Value> = log
        .iter()
        .filter(|m| m["method"] == "resources/subscribe")
        .map(|m| &m["params"]["uri"])
        .collect();
    assert_eq!(
        subscribed,
        [
            &json!("file:///a"),
            &json!("file:///a"),
            &json!("file:///b")
        ]
    );

    // `wide` still watches file:///a. The unsubscribing task runs while the ping waits for
    // its answer (this runtime has one thread), so the log after it shows what it sent.
    drop(narrow);
    client.ping().await.unwrap();
    log.extend(drain(&mut rx));
    assert_eq!(unsubscribed(&log), Vec::<String>::new());

    drop(wide);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while unsubscribed(&log).len() < 2 {
        let message = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("resources/unsubscribe for both URIs")
            .unwrap();
        log.push(message);
    }
    client.ping().await.unwrap();
    log.extend(drain(&mut rx));
    let mut gone = unsubscribed(&log);
    gone.sort();
    assert_eq!(gone, ["file:///a", "file:///b"]);
}

// ------------------------------------------------------------------ an HTTP legacy peer

mod http_peer {
    use super::*;
    use axum::Router;
    use axum::body::{Body, Bytes};
    use axum::extract::State;
    use axum::http::{HeaderMap, Method, StatusCode};
    use axum::response::{IntoResponse, Response};
    use tokio::sync::oneshot;

    /// (HTTP method, JSON-RPC method or "response", session header, version header)
    pub type Logged = (String, String, Option<String>, Option<String>);

    /// What the server saw, and the channels that tie the client's answers to its asks.
    #[derive(Default)]
    pub struct Peer {
        pub log: Mutex<Vec<Logged>>,
        pub answers: Mutex<Vec<oneshot::Sender<Value>>>,
        pub listeners: Mutex<Vec<mpsc::UnboundedSender<Result<Bytes, Infallible>>>>,
        /// Streams of calls that never get an answer, kept open.
        pub parked: Mutex<Vec<mpsc::UnboundedSender<Result<Bytes, Infallible>>>>,
        /// Every message POSTed, as JSON.
        pub bodies: Mutex<Vec<Value>>,
        /// How the server answers a POST without a session that is not `initialize`.
        pub bare_404: bool,
    }

    const SESSION: &str = "session-1";

    fn sse(events: mpsc::UnboundedReceiver<Result<Bytes, Infallible>>) -> Response {
        let stream = tokio_stream_from(events);
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(stream))
            .unwrap()
    }

    fn tokio_stream_from(
        mut rx: mpsc::UnboundedReceiver<Result<Bytes, Infallible>>,
    ) -> impl futures::Stream<Item = Result<Bytes, Infallible>> {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    fn json_response(status: StatusCode, body: &Value, session: Option<&str>) -> Response {
        let mut response = Response::builder()
            .status(status)
            .header("content-type", "application/json");
        if let Some(session) = session {
            response = response.header("mcp-session-id", session);
        }
        response.body(Body::from(body.to_string())).unwrap()
    }

    fn event(message: &Value) -> Result<Bytes, Infallible> {
        Ok(Bytes::from(format!("data: {message}\n\n")))
    }

    async fn handle(
        State(peer): State<Arc<Peer>>,
        method: Method,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header("mcp-session-id");
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let rpc = message["method"].as_str().unwrap_or("response").to_owned();
        peer.bodies.lock().unwrap().push(message.clone());
        peer.log.lock().unwrap().push((
            method.to_string(),
            if method == Method::POST {
                rpc.clone()
            } else {
                String::new()
            },
            session.clone(),
            header("mcp-protocol-version"),
        ));
        if method == Method::DELETE {
            return StatusCode::OK.into_response();
        }
        if session.as_deref() != Some(SESSION) && rpc != "initialize" {
            if peer.bare_404 {
                return StatusCode::NOT_FOUND.into_response();
            }
            let body = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}});
            return json_response(StatusCode::BAD_REQUEST, &body, None);
        }
        if method == Method::GET {
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Ok(Bytes::from_static(b": open\n\n")));
            peer.listeners.lock().unwrap().push(tx);
            return sse(rx);
        }
        let id = message["id"].clone();
        match rpc.as_str() {
            "initialize" => {
                let body = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "http-legacy", "version": "1.0.0"}}});
                json_response(StatusCode::OK, &body, Some(SESSION))
            }
            "response" => {
                if let Some(tx) = peer.answers.lock().unwrap().pop() {
                    let _ = tx.send(message);
                }
                StatusCode::ACCEPTED.into_response()
            }
            _ if message.get("id").is_none() => StatusCode::ACCEPTED.into_response(),
            "tools/call" if message["params"]["name"] == "slow" => {
                let (tx, rx) = mpsc::unbounded_channel();
                let _ = tx.send(Ok(Bytes::from_static(b": working\n\n")));
                peer.parked.lock().unwrap().push(tx);
                sse(rx)
            }
            "tools/call" => {
                // Ask on the call's own stream; answer the call once the client answered.
                let (tx, rx) = mpsc::unbounded_channel();
                let (answer_tx, answer_rx) = oneshot::channel();
                peer.answers.lock().unwrap().push(answer_tx);
                let _ = tx.send(event(&json!({"jsonrpc": "2.0", "id": 100,
                    "method": "elicitation/create", "params": {"mode": "form",
                        "message": "Which region?", "requestedSchema": {"type": "object",
                            "properties": {"region": {"type": "string"}}}}})));
                let listeners = peer.listeners.lock().unwrap().clone();
                tokio::spawn(async move {
                    let answer = answer_rx.await.unwrap_or(Value::Null);
                    // Something for the GET stream, too.
                    for l in listeners {
                        let _ = l.send(event(&json!({"jsonrpc": "2.0",
                            "method": "notifications/tools/list_changed"})));
                    }
                    let _ = tx.send(event(&json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": answer.to_string()}]}})));
                });
                sse(rx)
            }
            _ => {
                let body = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
                json_response(StatusCode::OK, &body, None)
            }
        }
    }

    /// Serves the peer on 127.0.0.1; the server stops when the returned sender is dropped.
    pub async fn serve(peer: Arc<Peer>) -> (String, oneshot::Sender<()>) {
        let app = Router::new()
            .route("/mcp", axum::routing::any(handle))
            .with_state(peer);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        (url, stop)
    }
}

async fn http_session(bare_404: bool) {
    let peer = Arc::new(http_peer::Peer {
        bare_404,
        ..Default::default()
    });
    let (url, _stop) = http_peer::serve(peer.clone()).await;
    let seen = Shared::default();
    let client = builder(&seen).connect(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.server_info().unwrap().name, "http-legacy");
    let mut changes = client
        .subscribe(SubscriptionFilter::new().with_tools_list_changed())
        .await
        .unwrap();

    let result = client.call_tool("ask", json!({})).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["id"], 100);
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"region": "eu-west-1"}})
    );
    // The question arrived on the call's stream: its origin is that call.
    assert_eq!(
        seen.lock().unwrap().questions,
        [(
            "100".to_owned(),
            "tools/call".to_owned(),
            "ask".to_owned(),
            "Which region?".to_owned()
        )]
    );
    // The GET stream carried the list change.
    let change = tokio::time::timeout(PATIENCE, changes.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(change, ServerNotification::ToolsListChanged));
    client.close().await.unwrap();

    let log = peer.log.lock().unwrap().clone();
    let summary: Vec<(&str, &str)> = log
        .iter()
        .map(|(m, rpc, _, _)| (m.as_str(), rpc.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("POST", "server/discover"),
            ("POST", "initialize"),
            ("POST", "notifications/initialized"),
            ("GET", ""),
            ("POST", "tools/call"),
            ("POST", "response"),
            ("DELETE", ""),
        ]
    );
    // No session and no legacy version before the handshake; both on everything after it.
    for (i, (_, rpc, session, version)) in log.iter().enumerate() {
        if i < 2 {
            assert_eq!(session, &None, "{rpc}");
            assert_ne!(version.as_deref(), Some("2025-11-25"), "{rpc}");
        } else {
            assert_eq!(session.as_deref(), Some("session-1"), "{i} {rpc}");
            assert_eq!(version.as_deref(), Some("2025-11-25"), "{i} {rpc}");
        }
    }
}

#[tokio::test]
async fn detects_a_legacy_http_server_by_its_error_body() {
    http_session(false).await;
}

#[tokio::test]
async fn detects_a_legacy_http_server_by_a_bare_404() {
    http_session(true).await;
}

#[tokio::test]
async fn an_abandoned_legacy_http_call_is_cancelled_explicitly() {
    let peer = Arc::new(http_peer::Peer::default());
    let (url, _stop) = http_peer::serve(peer.clone()).await;
    let client = builder(&Shared::default())
        .era(Era::Legacy)
        .connect(&url)
        .await
        .unwrap();
    let options = arctern::client::CallOptions::new().request_timeout(Duration::from_millis(100));
    let err = client
        .call_tool_with("slow", json!({}), options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let call_id = peer
        .bodies
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["id"].clone())
        .unwrap();
    // Closing the stream is no cancellation on this wire: the client says so.
    let cancelled = tokio::time::timeout(PATIENCE, async {
        loop {
            let found = peer
                .bodies
                .lock()
                .unwrap()
                .iter()
                .find(|m| m["method"] == "notifications/cancelled")
                .cloned();
            if let Some(found) = found {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(cancelled["params"]["requestId"], call_id);
    client.close().await.unwrap();
}
