//! The server's legacy era (2025-11-25, 2025-06-18) over real HTTP on 127.0.0.1 and over
//! stdio: era routing on one endpoint, sessions, legacy result shapes and error codes, the
//! shim that turns `input_required` into server→client requests, the `GET` stream and
//! `Last-Event-ID` resumption.
//!
//! Every message the server sends on a legacy session is validated against the schema of
//! the session's revision.

#![cfg(all(feature = "http", feature = "stdio", feature = "server"))]

use std::net::SocketAddr;
use std::time::Duration;

use arctern::server::{
    Handler, HandlerResult, LegacyConfig, Listed, Outcome, RequestContext, Server, ServerConfig,
    resource_not_found,
};
use arctern::transport::http::{HttpConfig, HttpServer};
use arctern::transport::stdio::StdioServer;
use arctern_fixtures::schema_check::validate_for;
use arctern_types::capabilities::{ResourcesCapability, ToolsCapability};
use arctern_types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};
use arctern_types::mrtr::{InputRequest, InputRequiredResult, InputResponse};
use arctern_types::resources::{ReadResourceRequestParams, ReadResourceResult};
use arctern_types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Bound on every wait, so that a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);
const V11: &str = "2025-11-25";

// ---------------------------------------------------------------------------------------
// The server under test: a low-level handler written in the multi round-trip style
// ---------------------------------------------------------------------------------------

struct Legacy;

fn region_form() -> InputRequest {
    InputRequest::elicit_form(
        "Which region?",
        RequestedSchema::new().required("region", PrimitiveSchemaDefinition::string()),
    )
}

impl Handler for Legacy {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        Ok(ListToolsResult::default().into())
    }

    async fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let answer = |key: &str| params.input_responses.as_ref().and_then(|r| r.get(key));
        match params.name.as_str() {
            // Manual form: one question and the handler's own state, which must come back.
            "provision" => match (answer("region"), params.request_state.as_deref()) {
                (Some(InputResponse::Elicit(e)), Some("asked-region")) => {
                    let region = e
                        .content
                        .as_ref()
                        .and_then(|c| c.get("region"))
                        .map(|v| serde_json::to_value(v).unwrap())
                        .unwrap_or(Value::Null);
                    Ok(Outcome::Complete(CallToolResult::text(format!(
                        "region={region} round={}",
                        ctx.round().number()
                    ))))
                }
                _ => Ok(InputRequiredResult::new()
                    .with_input_request("region", region_form())
                    .with_request_state("asked-region")
                    .into()),
            },
            "sign_in" => match answer("login") {
                Some(InputResponse::Elicit(e)) => Ok(Outcome::Complete(CallToolResult::text(
                    format!("login: {:?}", e.action),
                ))),
                _ => Ok(InputRequiredResult::new()
                    .with_input_request(
                        "login",
                        InputRequest::elicit_url("Sign in", "https://example.com/login"),
                    )
                    .into()),
            },
            // Asks forever: the round cap must end it.
            "forever" => Ok(InputRequiredResult::new()
                .with_input_request("region", region_form())
                .into()),
            "reconnect" => {
                let peer = ctx.legacy().expect("a legacy request has a peer");
                assert!(peer.close_sse_stream().await);
                Ok(Outcome::Complete(CallToolResult::text("resumed")))
            }
            "era" => Ok(Outcome::Complete(CallToolResult::text(format!(
                "{:?} {}",
                ctx.era(),
                ctx.protocol_version()
            )))),
            other => Err(arctern_types::ErrorObject::invalid_params(format!(
                "Unknown tool {other}"
            ))),
        }
    }

    async fn read_resource(
        &self,
        _ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        Err(resource_not_found(&params.uri))
    }
}

fn server() -> Server<Legacy> {
    let mut config = ServerConfig::new("legacy-test", "1.0.0");
    config.capabilities.tools = Some(ToolsCapability::default().with_list_changed(true));
    config.capabilities.resources = Some(ResourcesCapability::default().with_subscribe(true));
    config.mrtr.max_rounds = 3;
    Server::new(Legacy, config)
}

struct Running {
    addr: SocketAddr,
    server: Server<Legacy>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<arctern::Result<()>>,
}

async fn start(config: HttpConfig) -> Running {
    start_server(server(), config).await
}

async fn start_server(server: Server<Legacy>, config: HttpConfig) -> Running {
    let bound = HttpServer::new(server.clone())
        .bind("127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .config(config)
        .shutdown_grace(Duration::from_secs(5))
        .listen()
        .await
        .expect("binds");
    let addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        server,
        stop: Some(stop),
        task,
    }
}

impl Running {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("the server stops in time")
            .unwrap()
            .expect("the server returns Ok");
    }
}

// ---------------------------------------------------------------------------------------
// A small HTTP client that reads SSE streams as they come
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

    fn is_sse(&self) -> bool {
        self.headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"))
    }

    /// The whole body as one JSON message.
    async fn json(self) -> Value {
        let bytes = tokio::time::timeout(PATIENCE, self.body.collect())
            .await
            .expect("the body arrives in time")
            .unwrap()
            .to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// The next SSE event with data as `(id, message)`; `None` at the end of the stream.
    /// Events without data (the priming event) are returned with `Value::Null`.
    async fn event(&mut self) -> Option<(Option<String>, Value)> {
        // Keep-alive comments must not keep a stuck stream from failing the test.
        tokio::time::timeout(PATIENCE, self.event_unbounded())
            .await
            .expect("an event (or the end of the stream) arrives in time")
    }

    async fn event_unbounded(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let raw: String = self.buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = Vec::new();
                for line in raw.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push(v);
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v);
                    }
                }
                if id.is_none() && data.is_empty() {
                    continue; // a comment (keep-alive)
                }
                let data = data.join("\n");
                let value = if data.trim().is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&data).unwrap()
                };
                return Some((id, value));
            }
            let frame = self.body.frame().await?;
            if let Ok(data) = frame.unwrap().into_data() {
                self.buf.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }

    /// The next event that carries a message, validated against `version`'s schema.
    async fn message(&mut self, version: &str) -> Option<(Option<String>, Value)> {
        loop {
            let (id, value) = self.event().await?;
            if !value.is_null() {
                check(version, &value);
                return Some((id, value));
            }
        }
    }
}

fn check(version: &str, message: &Value) {
    if let Err(e) = validate_for(version, "JSONRPCMessage", message) {
        panic!("invalid {version} message from the server: {e}\n{message:#}");
    }
}

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
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream");
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

fn initialize(version: &str, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "legacy-test-client", "version": "0"}
    }})
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A legacy session over HTTP.
struct Session {
    addr: SocketAddr,
    id: String,
    version: String,
}

impl Session {
    async fn open(addr: SocketAddr, version: &str, capabilities: Value) -> (Session, Value) {
        let response = send(
            addr,
            Method::POST,
            &[],
            Some(&initialize(version, capabilities)),
        )
        .await;
        assert_eq!(response.status, StatusCode::OK);
        let id = response.session().expect("initialize mints a session id");
        assert!(
            !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "{id}"
        );
        let result = response.json().await;
        let negotiated = result["result"]["protocolVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        check(&negotiated, &result);
        let session = Session {
            addr,
            id,
            version: negotiated,
        };
        let ack = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        (session, result)
    }

    async fn post(&self, body: &Value) -> Response {
        send(
            self.addr,
            Method::POST,
            &[
                ("mcp-session-id", &self.id),
                ("mcp-protocol-version", &self.version),
            ],
            Some(body),
        )
        .await
    }

    /// A request whose answer is one JSON message (validated).
    async fn call(&self, body: &Value) -> Value {
        let response = self.post(body).await;
        assert_eq!(response.status, StatusCode::OK);
        assert!(!response.is_sse());
        let message = response.json().await;
        check(&self.version, &message);
        message
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn one_endpoint_serves_both_eras() {
    let running = start(HttpConfig::new()).await;
    let addr = running.addr;

    // A legacy client: initialize without headers negotiates and opens a session.
    let (session, init) = Session::open(addr, V11, json!({})).await;
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "legacy-test");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");
    assert!(result.get("resultType").is_none(), "{init}");
    // Older and unknown proposals get the newest legacy revision; 2025-06-18 is echoed.
    let (old, _) = Session::open(addr, "2024-11-05", json!({})).await;
    assert_eq!(old.version, V11);
    let (june, _) = Session::open(addr, "2025-06-18", json!({})).await;
    assert_eq!(june.version, "2025-06-18");

    // Legacy shapes: no resultType, no ttlMs or cacheScope.
    let list = session.call(&rpc(1, "tools/list", json!({}))).await;
    assert_eq!(list["result"], json!({"tools": []}));
    let pong = session.call(&rpc(2, "ping", json!({}))).await;
    assert_eq!(pong["result"], json!({}));
    for (id, method, params) in [
        (3, "logging/setLevel", json!({"level": "info"})),
        (4, "resources/subscribe", json!({"uri": "test://x"})),
        (5, "resources/unsubscribe", json!({"uri": "test://x"})),
    ] {
        let answer = session.call(&rpc(id, method, params)).await;
        // logging is not declared by this server: -32601, the rest `{}`.
        if method == "logging/setLevel" {
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
        } else {
            assert_eq!(answer["result"], json!({}), "{answer}");
        }
    }
    let era = session
        .call(&rpc(6, "tools/call", json!({"name": "era"})))
        .await;
    let text = era["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, format!("Legacy {V11}"));
    // An unknown resource is the legacy -32002, with data.uri.
    let missing = session
        .call(&rpc(7, "resources/read", json!({"uri": "test://missing"})))
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "test://missing");
    // The modern-only methods do not exist on a legacy session.
    let discover = session.call(&rpc(8, "server/discover", json!({}))).await;
    assert_eq!(discover["error"]["code"], -32601);

    // A modern client on the same endpoint: initialize and ping are 404 + -32601.
    let modern_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for method in ["initialize", "ping"] {
        let response = send(
            addr,
            Method::POST,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ],
            Some(&rpc(9, method, json!({"_meta": modern_meta}))),
        )
        .await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{method}");
        assert_eq!(response.json().await["error"]["code"], -32601);
    }
    // And its requests keep their modern shape.
    let modern = send(
        addr,
        Method::POST,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        Some(&rpc(10, "tools/list", json!({"_meta": modern_meta}))),
    )
    .await
    .json()
    .await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    assert!(modern["result"]["ttlMs"].is_number(), "{modern}");

    // Sessions: a legacy request without one is 400; an unknown one is 404; DELETE ends one.
    let no_session = send(
        addr,
        Method::POST,
        &[("mcp-protocol-version", V11)],
        Some(&rpc(11, "tools/list", json!({}))),
    )
    .await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    let unknown = send(
        addr,
        Method::POST,
        &[("mcp-session-id", "nope"), ("mcp-protocol-version", V11)],
        Some(&rpc(12, "tools/list", json!({}))),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let deleted = send(
        addr,
        Method::DELETE,
        &[("mcp-session-id", &session.id)],
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(
        session.post(&rpc(13, "ping", json!({}))).await.status,
        StatusCode::NOT_FOUND
    );
    running.stop().await;
}

#[tokio::test]
async fn the_shim_asks_the_client_and_runs_the_handler_again() {
    let running = start(HttpConfig::new()).await;
    let (session, _) = Session::open(
        running.addr,
        V11,
        json!({"elicitation": {"form": {}, "url": {}}}),
    )
    .await;

    let mut call = session
        .post(&rpc(
            1,
            "tools/call",
            json!({"name": "provision", "arguments": {}}),
        ))
        .await;
    assert!(call.is_sse());
    // 2025-11-25: a priming event (an id, no data) comes first.
    let (priming, data) = call.event().await.unwrap();
    assert!(priming.is_some() && data.is_null());
    let (_, request) = call.message(V11).await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Which region?");
    assert_eq!(request["params"]["mode"], "form");
    // The client answers on a POST of its own.
    let answer = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"region": "eu-west-1"}}});
    assert_eq!(session.post(&answer).await.status, StatusCode::ACCEPTED);
    let (_, result) = call.message(V11).await.unwrap();
    assert_eq!(result["id"], 1);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "region=\"eu-west-1\" round=1"
    );
    assert!(result["result"].get("resultType").is_none());
    assert!(
        call.event().await.is_none(),
        "the stream ends after the result"
    );

    // URL mode carries an elicitationId on 2025-11-25; a decline reaches the handler.
    let mut call = session
        .post(&rpc(2, "tools/call", json!({"name": "sign_in"})))
        .await;
    let (_, request) = call.message(V11).await.unwrap();
    assert_eq!(request["params"]["mode"], "url");
    assert!(
        request["params"]["elicitationId"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}});
    session.post(&answer).await;
    let (_, result) = call.message(V11).await.unwrap();
    assert_eq!(result["result"]["content"][0]["text"], "login: Decline");

    // The round cap holds: a handler that never stops asking is ended.
    let mut call = session
        .post(&rpc(3, "tools/call", json!({"name": "forever"})))
        .await;
    let error = loop {
        let (_, message) = call.message(V11).await.unwrap();
        if message.get("method").is_some() {
            let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                "result": {"action": "accept", "content": {"region": "x"}}});
            session.post(&answer).await;
        } else {
            break message;
        }
    };
    assert_eq!(error["id"], 3);
    assert_eq!(error["error"]["code"], -32602, "{error}");

    // A client error fails the call with a clear error, not a hang.
    let mut call = session
        .post(&rpc(4, "tools/call", json!({"name": "provision"})))
        .await;
    let (_, request) = call.message(V11).await.unwrap();
    let refusal = json!({"jsonrpc": "2.0", "id": request["id"],
        "error": {"code": -32603, "message": "no UI here"}});
    session.post(&refusal).await;
    let (_, result) = call.message(V11).await.unwrap();
    assert_eq!(result["error"]["code"], -32603);
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no UI here")
    );
    running.stop().await;
}

#[tokio::test]
async fn a_client_without_the_capability_gets_a_clear_error() {
    let running = start(HttpConfig::new()).await;
    // 2025-06-18 has no URL mode: a form-capable client still cannot get a URL elicitation.
    let (june, _) = Session::open(running.addr, "2025-06-18", json!({"elicitation": {}})).await;
    let answer = june
        .call(&rpc(1, "tools/call", json!({"name": "sign_in"})))
        .await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // Nothing declared at all.
    let (session, _) = Session::open(running.addr, V11, json!({})).await;
    let answer = session
        .call(&rpc(2, "tools/call", json!({"name": "provision"})))
        .await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("elicitation"), "{message}");
    assert!(answer["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
    running.stop().await;
}

#[tokio::test]
async fn a_closed_stream_resumes_with_last_event_id() {
    let running = start(HttpConfig::new()).await;
    let (session, _) = Session::open(running.addr, V11, json!({})).await;
    let mut call = session
        .post(&rpc(1, "tools/call", json!({"name": "reconnect"})))
        .await;
    let mut last = None;
    while let Some((id, _)) = call.event().await {
        last = id;
    }
    let last = last.expect("the stream had an event id");
    let mut resumed = send(
        running.addr,
        Method::GET,
        &[
            ("mcp-session-id", &session.id),
            ("mcp-protocol-version", V11),
            ("last-event-id", &last),
        ],
        None,
    )
    .await;
    assert_eq!(resumed.status, StatusCode::OK);
    let (_, result) = resumed.message(V11).await.unwrap();
    assert_eq!(result["id"], 1);
    assert_eq!(result["result"]["content"][0]["text"], "resumed");
    let bad = send(
        running.addr,
        Method::GET,
        &[("mcp-session-id", &session.id), ("last-event-id", "99-1")],
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    running.stop().await;
}

#[tokio::test]
async fn the_get_stream_carries_list_changes() {
    let running = start(HttpConfig::new()).await;
    let (session, _) = Session::open(running.addr, V11, json!({})).await;
    // Announced before the GET: kept for the stream until it opens.
    running.server.change_notifier().tools_changed();
    let mut stream = send(
        running.addr,
        Method::GET,
        &[
            ("mcp-session-id", &session.id),
            ("mcp-protocol-version", V11),
        ],
        None,
    )
    .await;
    assert!(stream.is_sse());
    let (_, note) = stream.message(V11).await.unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed");
    running.stop().await;
}

#[tokio::test]
async fn sessions_are_limited_and_idle_ones_expire() {
    let running = start(HttpConfig::new().max_sessions(1)).await;
    let (kept, _) = Session::open(running.addr, V11, json!({})).await;
    // In use (its GET stream open), the one session cannot make room.
    let _reading = send(
        running.addr,
        Method::GET,
        &[("mcp-session-id", &kept.id)],
        None,
    )
    .await;
    let refused = send(
        running.addr,
        Method::POST,
        &[],
        Some(&initialize(V11, json!({}))),
    )
    .await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    running.stop().await;

    let running = start(HttpConfig::new().session_idle_timeout(Duration::from_millis(200))).await;
    let (session, _) = Session::open(running.addr, V11, json!({})).await;
    // Every look uses the session again, so wait longer each time: once a wait outlasts
    // the idle timeout the reaper closes it (bounded by PATIENCE, no timing assumed).
    let expired = tokio::time::timeout(PATIENCE, async {
        let mut wait = Duration::from_millis(100);
        loop {
            tokio::time::sleep(wait).await;
            if session.post(&rpc(1, "ping", json!({}))).await.status == StatusCode::NOT_FOUND {
                return;
            }
            wait *= 2;
        }
    })
    .await;
    assert!(expired.is_ok(), "an idle session expires");
    running.stop().await;
}

#[tokio::test]
async fn stdio_serves_a_legacy_session_with_the_shim() {
    let (client, server_io) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(StdioServer::new(server()).serve_io(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .expect("the server writes in time")
            .unwrap()
            .expect("a line");
        let value: Value = serde_json::from_str(&line).unwrap();
        check(V11, &value);
        value
    };
    let mut write = async |value: Value| {
        let mut line = serde_json::to_vec(&value).unwrap();
        line.push(b'\n');
        client_write.write_all(&line).await.unwrap();
    };
    write(initialize(V11, json!({"elicitation": {}}))).await;
    let init = next().await;
    assert_eq!(init["result"]["protocolVersion"], V11);
    write(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    write(rpc(1, "tools/call", json!({"name": "provision"}))).await;
    let request = next().await;
    assert_eq!(request["method"], "elicitation/create");
    write(json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"region": "us-east-1"}}}))
    .await;
    let result = next().await;
    assert_eq!(result["id"], 1);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "region=\"us-east-1\" round=1"
    );
    write(rpc(2, "ping", json!({}))).await;
    assert_eq!(next().await["result"], json!({}));
    // The end of the input ends the session and serving.
    drop(client_write);
    drop(lines);
    tokio::time::timeout(PATIENCE, serving)
        .await
        .expect("serving ends at end of input")
        .unwrap()
        .expect("serving returns Ok");
}

#[tokio::test]
async fn notifications_cancelled_ends_a_legacy_request() {
    let running = start(HttpConfig::new()).await;
    let (session, _) = Session::open(running.addr, V11, json!({"elicitation": {}})).await;
    let mut call = session
        .post(&rpc(7, "tools/call", json!({"name": "provision"})))
        .await;
    let (_, request) = call.message(V11).await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "changed my mind"}});
    assert_eq!(session.post(&cancel).await.status, StatusCode::ACCEPTED);
    // The stream ends without a result.
    assert!(call.message(V11).await.is_none());
    // The session goes on.
    let pong = session.call(&rpc(8, "ping", json!({}))).await;
    assert_eq!(pong["result"], json!({}));
    running.stop().await;
}

#[tokio::test]
async fn a_modern_only_server_refuses_initialize() {
    let mut config = ServerConfig::new("modern-only", "1.0.0").legacy(LegacyConfig::disabled());
    config.capabilities.tools = Some(ToolsCapability::default());
    let running = start_server(Server::new(Legacy, config), HttpConfig::new()).await;
    let addr = running.addr;
    // Without the legacy era, initialize is just a request without the modern headers.
    let response = send(addr, Method::POST, &[], Some(&initialize(V11, json!({})))).await;
    assert_eq!(response.status, StatusCode::BAD_REQUEST);
    assert!(response.session().is_none());
    assert_eq!(response.json().await["error"]["code"], -32020);
    running.stop().await;
}
