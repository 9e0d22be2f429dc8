//! The Streamable HTTP server transport, over real HTTP on 127.0.0.1.
//!
//! Every test starts its own server on an ephemeral port and stops it at the end; every JSON
//! message the server sends is validated against the 2026-07-28 schema.

#![cfg(all(feature = "http", feature = "server"))]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arctern::server::extract::{Args, State};
use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
use arctern::server::{McpHandler, McpServer, Principal, RequestContext, Server, ToolSpec};
use arctern::transport::http::{HttpConfig, HttpServer};
use arctern_fixtures::schema_check::validate_for;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Barrier, Notify, oneshot};
use tokio::task::JoinHandle;

const VERSION: &str = "2026-07-28";
/// Bound on every wait, so that a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// The server under test
// ---------------------------------------------------------------------------------------

/// What the tools tell the tests.
struct Probe {
    slow_started: Notify,
    slow_dropped: AtomicBool,
    slow_cancelled: AtomicBool,
    stream_dropped: AtomicBool,
    barrier: Barrier,
}

impl Probe {
    fn new() -> Arc<Probe> {
        Arc::new(Probe {
            slow_started: Notify::new(),
            slow_dropped: AtomicBool::new(false),
            slow_cancelled: AtomicBool::new(false),
            stream_dropped: AtomicBool::new(false),
            barrier: Barrier::new(3),
        })
    }
}

/// Sets a flag when dropped: proves that a handler's future went away.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Steps {
    steps: u32,
}

async fn echo(Args(e): Args<Echo>) -> String {
    e.text
}

async fn hello() -> &'static str {
    "bonjour"
}

async fn progress(ctx: RequestContext, Args(s): Args<Steps>) -> String {
    let total = f64::from(s.steps);
    for i in 1..=s.steps {
        ctx.progress(f64::from(i), Some(total), Some("working"))
            .await;
    }
    format!("{} steps done", s.steps)
}

async fn slow(ctx: RequestContext, State(p): State<Arc<Probe>>) -> &'static str {
    let _guard = SetOnDrop(&p.slow_dropped);
    p.slow_started.notify_one();
    tokio::select! {
        () = ctx.cancellation().cancelled() => {
            p.slow_cancelled.store(true, Ordering::SeqCst);
            "cancelled"
        }
        () = tokio::time::sleep(Duration::from_secs(60)) => "too late",
    }
}

async fn slow_stream(ctx: RequestContext, State(p): State<Arc<Probe>>) -> &'static str {
    let _guard = SetOnDrop(&p.stream_dropped);
    ctx.progress(1.0, None, Some("started")).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    "too late"
}

async fn rendezvous(State(p): State<Arc<Probe>>) -> &'static str {
    // Completes only when three calls are in flight at once.
    p.barrier.wait().await;
    "met"
}

async fn whoami(ctx: RequestContext) -> String {
    ctx.principal()
        .map_or_else(|| "anonymous".to_owned(), |p| p.0.clone())
}

/// A question for the client (multi round-trip), which needs form elicitation.
#[derive(Deserialize, JsonSchema)]
struct Region {
    region: String,
}

impl Question for Region {
    type Args = NoArgs;
    type Answer = Region;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Region>, NotYet> {
        Ok(Ask::form("region", "Which region?"))
    }
}

async fn provision(Answer(r): Answer<Region>) -> String {
    format!("provisioned in {}", r.region)
}

async fn late() -> &'static str {
    "added at run time"
}

type TestServer = Server<McpHandler<Arc<Probe>>>;

fn build(probe: Arc<Probe>) -> TestServer {
    McpServer::with_state("http-test", probe)
        .version("0.0.1")
        .tool("echo", "Echoes its text.", echo)
        .tool(
            "héllo",
            "A name that needs the base64 form in a header.",
            hello,
        )
        .tool("progress", "Reports progress.", progress)
        .tool("slow", "Waits a minute.", slow)
        .tool("slow_stream", "Reports progress, then waits.", slow_stream)
        .tool("rendezvous", "Waits for two other calls.", rendezvous)
        .tool("whoami", "Names the principal.", whoami)
        .tool("provision", "Asks for a region first.", provision)
        .build()
        .expect("the test server builds")
}

struct Running {
    addr: SocketAddr,
    server: TestServer,
    probe: Arc<Probe>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<arctern::Result<()>>,
}

async fn start() -> Running {
    start_with(HttpConfig::new()).await
}

async fn start_with(config: HttpConfig) -> Running {
    let probe = Probe::new();
    let server = build(probe.clone());
    let bound = HttpServer::new(server.clone())
        .bind("127.0.0.1:0")
        .config(config)
        .shutdown_grace(Duration::from_secs(5))
        .listen()
        .await
        .expect("binds");
    let addr = bound.local_addr();
    assert!(addr.port() != 0);
    assert_eq!(bound.url(), format!("http://{addr}/mcp"));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        server,
        probe,
        stop: Some(stop),
        task,
    }
}

impl Running {
    /// Sends the shutdown signal and checks that the server returns `Ok` in time.
    async fn stop(mut self) {
        let _ = self.stop.take().expect("stopped once").send(());
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("the server stops in time")
            .expect("the server task does not panic")
            .expect("the server returns Ok");
    }

    fn rpc(&self, id: Value, method: &str, params: Value) -> Post {
        Post::rpc(self.addr, id, method, params)
    }
}

// ---------------------------------------------------------------------------------------
// A small HTTP client
// ---------------------------------------------------------------------------------------

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-test-client", "version": "0"}
    })
}

/// One POST (or other method) to the server, built up header by header.
struct Post {
    addr: SocketAddr,
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Post {
    /// A request as a well-behaved 2026-07-28 client sends it: `_meta` in the params and
    /// every mirrored header.
    fn rpc(addr: SocketAddr, id: Value, method: &str, mut params: Value) -> Post {
        if params.get("_meta").is_none() {
            params["_meta"] = meta();
        }
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut post = Post::raw(addr, serde_json::to_vec(&body).unwrap())
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", method);
        if let Some(name) = name {
            post = if name.is_ascii() {
                post.header("mcp-name", &name)
            } else {
                post.header("mcp-name", &sentinel(&name))
            };
        }
        post
    }

    /// A POST of `body` with `Host`, `Content-Type` and `Accept` only.
    fn raw(addr: SocketAddr, body: impl Into<Bytes>) -> Post {
        Post {
            addr,
            method: Method::POST,
            path: "/mcp".to_owned(),
            headers: HeaderMap::new(),
            body: body.into(),
        }
        .header("host", &addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
    }

    fn header(self, name: &str, value: &str) -> Post {
        self.header_bytes(name, value.as_bytes())
    }

    fn header_bytes(mut self, name: &str, value: &[u8]) -> Post {
        self.headers.insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        );
        self
    }

    fn without(mut self, name: &str) -> Post {
        self.headers.remove(name);
        self
    }

    fn method(mut self, method: Method) -> Post {
        self.method = method;
        self
    }

    fn path(mut self, path: &str) -> Post {
        self.path = path.to_owned();
        self
    }

    /// Sends the request on a new connection and returns the response head with its body
    /// still streaming.
    async fn open(self) -> hyper::Response<Incoming> {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut request = http::Request::builder()
            .method(self.method)
            .uri(self.path)
            .body(Full::new(self.body))
            .unwrap();
        *request.headers_mut() = self.headers;
        tokio::time::timeout(PATIENCE, sender.send_request(request))
            .await
            .expect("a response in time")
            .expect("a response")
    }

    async fn send(self) -> Resp {
        let response = self.open().await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = tokio::time::timeout(PATIENCE, response.into_body().collect())
            .await
            .expect("the whole body in time")
            .expect("a body")
            .to_bytes();
        Resp {
            status,
            headers,
            body,
        }
    }
}

fn sentinel(value: &str) -> String {
    use base64::Engine as _;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value)
    )
}

struct Resp {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The body as one JSON-RPC message (schema-checked).
    fn json(&self) -> Value {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "status {} body {:?}",
            self.status,
            self.body
        );
        let value: Value = serde_json::from_slice(&self.body).expect("a JSON body");
        check_message(&value);
        value
    }

    /// The body as SSE events (each schema-checked).
    fn events(&self) -> Vec<Value> {
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        let text = std::str::from_utf8(&self.body).unwrap();
        let mut out = Vec::new();
        for block in text.split("\n\n").filter(|b| !b.is_empty()) {
            if let Some(event) = parse_event(block) {
                out.push(event);
            }
        }
        assert!(text.ends_with("\n\n"), "events end with a blank line");
        out
    }
}

/// One SSE block: `None` for a comment-only block, else the event's JSON (schema-checked).
fn parse_event(block: &str) -> Option<Value> {
    let mut data = Vec::new();
    let mut event = None;
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        } else if let Some(d) = line.strip_prefix("data: ") {
            data.push(d);
        } else if let Some(e) = line.strip_prefix("event: ") {
            event = Some(e);
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    if data.is_empty() {
        return None;
    }
    assert_eq!(event, Some("message"));
    assert_eq!(data.len(), 1, "one data line per message");
    let value: Value = serde_json::from_str(data[0]).expect("JSON in the event");
    check_message(&value);
    Some(value)
}

/// Validates a JSON-RPC message the server sent against the 2026-07-28 schema.
fn check_message(value: &Value) {
    let def = if value.get("error").is_some() {
        "JSONRPCErrorResponse"
    } else if value.get("result").is_some() {
        "JSONRPCResultResponse"
    } else {
        match value["method"].as_str() {
            Some("notifications/progress") => "ProgressNotification",
            Some("notifications/subscriptions/acknowledged") => {
                "SubscriptionsAcknowledgedNotification"
            }
            Some("notifications/tools/list_changed") => "ToolListChangedNotification",
            _ => "JSONRPCNotification",
        }
    };
    validate_for(VERSION, def, value).unwrap_or_else(|e| panic!("{e}\n{value}"));
    validate_for(VERSION, "JSONRPCMessage", value).unwrap_or_else(|e| panic!("{e}\n{value}"));
}

/// Checks an error response: status, code, echoed id, `Content-Type`.
#[track_caller]
fn assert_error(resp: &Resp, status: u16, code: i64, id: Option<Value>) -> Value {
    let body = resp.json();
    assert_eq!(
        (resp.status, body["error"]["code"].as_i64()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(body.get("id").cloned(), id, "{body}");
    // The schema's definition for the code: the error object for JSON-RPC's own codes, the
    // whole response for MCP's.
    let (def, value) = match code {
        -32700 => ("ParseError", &body["error"]),
        -32600 => ("InvalidRequestError", &body["error"]),
        -32601 => ("MethodNotFoundError", &body["error"]),
        -32602 => ("InvalidParamsError", &body["error"]),
        -32020 => ("HeaderMismatchError", &body),
        -32021 => ("MissingRequiredClientCapabilityError", &body),
        -32022 => ("UnsupportedProtocolVersionError", &body),
        _ => ("JSONRPCErrorResponse", &body),
    };
    validate_for(VERSION, def, value).unwrap_or_else(|e| panic!("{e}\n{body}"));
    body
}

/// Checks a successful `tools/call` answered with JSON and returns the result.
#[track_caller]
fn assert_tool_result(resp: &Resp, id: Value) -> Value {
    assert_eq!(resp.status, 200);
    let body = resp.json();
    assert_eq!(body["id"], id, "{body}");
    validate_for(VERSION, "CallToolResult", &body["result"]).unwrap();
    body["result"].clone()
}

/// Reads SSE blocks incrementally from a streaming body.
struct SseReader {
    body: Incoming,
    buf: Vec<u8>,
}

impl SseReader {
    fn new(response: hyper::Response<Incoming>) -> SseReader {
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            HeaderValue::from_static("text/event-stream")
        );
        assert_eq!(response.headers()["x-accel-buffering"], "no");
        SseReader {
            body: response.into_body(),
            buf: Vec::new(),
        }
    }

    /// The next block (event or comment), or `None` when the stream ended.
    async fn block(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                return Some(String::from_utf8(block[..end].to_vec()).unwrap());
            }
            let frame = tokio::time::timeout(PATIENCE, self.body.frame())
                .await
                .expect("an SSE frame in time");
            match frame {
                None => {
                    assert!(self.buf.is_empty(), "the stream ended mid-event");
                    return None;
                }
                Some(frame) => {
                    if let Ok(data) = frame.expect("a body frame").into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event, skipping comments.
    async fn event(&mut self) -> Option<Value> {
        loop {
            let block = self.block().await?;
            if let Some(event) = parse_event(&block) {
                return Some(event);
            }
        }
    }
}

/// Sends raw bytes and reads one response with a `Content-Length` body.
async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    tokio::time::timeout(PATIENCE, read_response(&mut stream))
        .await
        .expect("a response in time")
}

async fn read_response(stream: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the response head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let status: u16 = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .expect("a Content-Length");
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    (status, head, body)
}

/// Waits until `flag` is set.
async fn wait_for(flag: &AtomicBool, what: &str) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_call_answers_with_json() {
    let s = start().await;
    let resp = s
        .rpc(
            json!(1),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .send()
        .await;
    let result = assert_tool_result(&resp, json!(1));
    assert_eq!(result["content"][0]["text"], "hi");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        resp.header("content-length"),
        Some(resp.body.len().to_string().as_str()),
        "a JSON reply is written whole, with its length"
    );

    let resp = s.rpc(json!("list"), "tools/list", json!({})).send().await;
    assert_eq!(resp.status, 200);
    let body = resp.json();
    validate_for(VERSION, "ListToolsResult", &body["result"]).unwrap();
    assert_eq!(body["id"], "list");

    let resp = s.rpc(json!(2), "server/discover", json!({})).send().await;
    let body = resp.json();
    validate_for(VERSION, "DiscoverResult", &body["result"]).unwrap();
    s.stop().await;
}

#[tokio::test]
async fn validation_order_and_status_codes() {
    let s = start().await;
    let call = |id: Value| {
        s.rpc(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
    };

    // 1. No MCP-Protocol-Version header.
    let resp = call(json!(10)).without("mcp-protocol-version").send().await;
    assert_error(&resp, 400, -32020, Some(json!(10)));
    // 1 before 2: no header and no _meta.
    let resp = Post::raw(
        s.addr,
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo"}}"#,
    )
    .header("mcp-method", "tools/call")
    .header("mcp-name", "echo")
    .send()
    .await;
    assert_error(&resp, 400, -32020, Some(json!(11)));

    // 2. _meta missing, or missing a required key.
    let resp = Post::raw(
        s.addr,
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo"}}"#,
    )
    .header("mcp-protocol-version", VERSION)
    .header("mcp-method", "tools/call")
    .header("mcp-name", "echo")
    .send()
    .await;
    assert_error(&resp, 400, -32602, Some(json!(12)));
    let resp = s
        .rpc(
            json!(13),
            "tools/call",
            json!({"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}}),
        )
        .send()
        .await;
    assert_error(&resp, 400, -32602, Some(json!(13)));
    let resp = s
        .rpc(
            json!(14),
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .send()
        .await;
    assert_error(&resp, 400, -32602, Some(json!(14)));

    // 3. Header and _meta disagree (checked before support: neither is supported here).
    let resp = call(json!(15))
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    assert_error(&resp, 400, -32020, Some(json!(15)));
    let resp = call(json!(16))
        .header("mcp-protocol-version", "2099-01-01")
        .send()
        .await;
    assert_error(&resp, 400, -32020, Some(json!(16)));

    // 4. Unsupported version, consistently declared.
    let mut unsupported = meta();
    unsupported["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let resp = s
        .rpc(json!("v"), "tools/list", json!({"_meta": unsupported}))
        .header("mcp-protocol-version", "2099-01-01")
        .send()
        .await;
    let body = assert_error(&resp, 400, -32022, Some(json!("v")));
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
    assert!(
        body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(VERSION))
    );

    // 5. Mcp-Method and Mcp-Name missing or mismatched.
    let resp = call(json!(17)).without("mcp-method").send().await;
    assert_error(&resp, 400, -32020, Some(json!(17)));
    let resp = call(json!(18))
        .header("mcp-method", "tools/list")
        .send()
        .await;
    assert_error(&resp, 400, -32020, Some(json!(18)));
    let resp = call(json!(19))
        .header("mcp-method", "TOOLS/CALL")
        .send()
        .await;
    assert_error(&resp, 400, -32020, Some(json!(19)));
    let resp = call(json!(20)).without("mcp-name").send().await;
    assert_error(&resp, 400, -32020, Some(json!(20)));
    let resp = call(json!(21)).header("mcp-name", "other").send().await;
    assert_error(&resp, 400, -32020, Some(json!(21)));

    // 6. Unknown method, and a method whose capability is not offered: 404.
    let resp = s.rpc(json!(22), "no/such", json!({})).send().await;
    assert_error(&resp, 404, -32601, Some(json!(22)));
    let resp = s.rpc(json!(23), "prompts/list", json!({})).send().await;
    assert_error(&resp, 404, -32601, Some(json!(23)));

    // 7. A question the client declared no capability for.
    let resp = s
        .rpc(json!(26), "tools/call", json!({"name": "provision"}))
        .send()
        .await;
    let body = assert_error(&resp, 400, -32021, Some(json!(26)));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    // With the capability declared, the answer is an ordinary input_required result.
    let mut elicit = meta();
    elicit["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let resp = s
        .rpc(
            json!(27),
            "tools/call",
            json!({"name": "provision", "_meta": elicit}),
        )
        .send()
        .await;
    assert_eq!(resp.status, 200);
    let body = resp.json();
    validate_for(VERSION, "InputRequiredResult", &body["result"]).unwrap();
    assert_eq!(body["result"]["resultType"], "input_required");

    // An ordinary JSON-RPC error (unknown tool) is still 200.
    let resp = s
        .rpc(json!(24), "tools/call", json!({"name": "missing"}))
        .send()
        .await;
    assert_error(&resp, 200, -32602, Some(json!(24)));

    // Mcp-Session-Id is ignored and never minted.
    let resp = call(json!(25)).header("mcp-session-id", "abc").send().await;
    assert_tool_result(&resp, json!(25));
    assert!(resp.header("mcp-session-id").is_none());
    s.stop().await;
}

#[tokio::test]
async fn malformed_messages() {
    let s = start().await;
    let post = |body: &'static str| {
        Post::raw(s.addr, body)
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "tools/list")
    };
    let resp = post("{not json").send().await;
    assert_error(&resp, 400, -32700, None);
    let resp = post("").send().await;
    assert_error(&resp, 400, -32700, None);
    let resp = post(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#)
        .send()
        .await;
    assert_error(&resp, 400, -32600, None);
    let resp = post(r#"{"jsonrpc":"2.0","id":3,"method":5}"#).send().await;
    assert_error(&resp, 400, -32600, Some(json!(3)));
    let resp = post(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#)
        .send()
        .await;
    assert_error(&resp, 400, -32600, None);
    let resp = post(r#"{"jsonrpc":"1.0","id":4,"method":"tools/list"}"#)
        .send()
        .await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32600);
    let resp = post(r#""a string""#).send().await;
    assert_error(&resp, 400, -32600, None);
    let resp = post(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#).send().await;
    assert_error(&resp, 400, -32600, None);
    let resp = post(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[]}"#)
        .header("mcp-method", "tools/call")
        .send()
        .await;
    assert_eq!(resp.status, 400, "{:?}", resp.body);
    assert_eq!(resp.json()["id"], 6);
    s.stop().await;
}

#[tokio::test]
async fn oversized_bodies_get_413_and_the_server_stays_healthy() {
    // Default limit, announced by Content-Length: refused before reading.
    let s = start().await;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n",
        s.addr,
        5 * 1024 * 1024
    );
    let (status, head, body) = raw_exchange(s.addr, request.as_bytes()).await;
    assert_eq!(status, 413, "{head}");
    let body: Value = serde_json::from_slice(&body).unwrap();
    check_message(&body);
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(
        body["error"]["message"],
        "Request body too large (limit 4194304 bytes)"
    );
    let resp = s
        .rpc(
            json!(1),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .send()
        .await;
    assert_tool_result(&resp, json!(1));
    s.stop().await;

    // A small limit, and a chunked body that only turns out too large while being read.
    let limit = 64 * 1024;
    let s = start_with(HttpConfig::new().max_body_size(limit)).await;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        s.addr,
        limit + 1
    )
    .into_bytes();
    request.extend(std::iter::repeat_n(b' ', limit + 1));
    let (status, _, body) = raw_exchange(s.addr, &request).await;
    assert_eq!(status, 413);
    let body: Value = serde_json::from_slice(&body).unwrap();
    check_message(&body);
    assert_eq!(
        body["error"]["message"],
        format!("Request body too large (limit {limit} bytes)")
    );
    // A body of exactly the limit is read (and is not valid JSON-RPC).
    let resp = Post::raw(s.addr, vec![b' '; limit]).send().await;
    assert_error(&resp, 400, -32700, None);
    let resp = s
        .rpc(
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "fine"}}),
        )
        .send()
        .await;
    assert_tool_result(&resp, json!(2));
    s.stop().await;
}

#[tokio::test]
async fn only_post_is_served() {
    let s = start().await;
    for method in [Method::GET, Method::DELETE, Method::PUT, Method::PATCH] {
        let resp = Post::raw(s.addr, "")
            .method(method.clone())
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(resp.status, 405, "{method}");
        assert_eq!(resp.header("allow"), Some("POST"));
        assert_eq!(resp.json()["error"]["code"], -32600);
    }
    let resp = s
        .rpc(json!(1), "tools/list", json!({}))
        .path("/other")
        .send()
        .await;
    assert_eq!(resp.status, 404);
    s.stop().await;
}

#[tokio::test]
async fn notifications_are_accepted_with_202() {
    let s = start().await;
    let resp = Post::raw(
        s.addr,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    )
    .header("mcp-protocol-version", VERSION)
    .header("mcp-method", "notifications/cancelled")
    .send()
    .await;
    assert_eq!(resp.status, 202);
    assert!(resp.body.is_empty());
    s.stop().await;
}

#[tokio::test]
async fn content_type_and_accept_negotiation() {
    let s = start().await;
    let call = |id: i64| {
        s.rpc(
            json!(id),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
    };
    let resp = call(1).header("content-type", "text/plain").send().await;
    assert_error(&resp, 415, -32600, None);
    let resp = call(2).without("content-type").send().await;
    assert_error(&resp, 415, -32600, None);
    let resp = call(3)
        .header("content-type", "application/json; charset=utf-8")
        .send()
        .await;
    assert_tool_result(&resp, json!(3));

    let resp = call(4).header("accept", "text/html").send().await;
    assert_error(&resp, 406, -32600, None);
    let resp = call(5)
        .header("accept", "application/json;q=0, text/event-stream;q=0")
        .send()
        .await;
    assert_eq!(resp.status, 406);
    let resp = call(6).header("accept", "*/*").send().await;
    assert_tool_result(&resp, json!(6));
    let resp = call(7).without("accept").send().await;
    assert_tool_result(&resp, json!(7));

    // Only SSE accepted: a plain reply becomes one event.
    let resp = call(8).header("accept", "text/event-stream").send().await;
    assert_eq!(resp.status, 200);
    let events = resp.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["id"], 8);

    // Only JSON accepted: a streamed reply becomes its final response.
    let resp = s
        .rpc(
            json!(9),
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3},
                   "_meta": with_progress_token("p9")}),
        )
        .header("accept", "application/json")
        .send()
        .await;
    let result = assert_tool_result(&resp, json!(9));
    assert_eq!(result["content"][0]["text"], "3 steps done");

    // A listen stream needs SSE.
    let resp = s
        .rpc(
            json!(10),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .header("accept", "application/json")
        .send()
        .await;
    assert_error(&resp, 406, -32600, None);
    s.stop().await;
}

fn with_progress_token(token: &str) -> Value {
    let mut m = meta();
    m["progressToken"] = json!(token);
    m
}

#[tokio::test]
async fn dns_rebinding_protection() {
    let s = start().await;
    let call = || s.rpc(json!(1), "tools/list", json!({}));

    // The conformance scenario: Host and Origin name a foreign site.
    let resp = call()
        .header("host", "evil.com")
        .header("origin", "http://evil.com")
        .send()
        .await;
    assert_error(&resp, 403, -32600, None);
    let resp = call().header("host", "evil.com:8080").send().await;
    assert_eq!(resp.status, 403);
    let resp = call().without("host").send().await;
    assert_eq!(resp.status, 403, "no Host at all");
    let resp = call().header("origin", "http://evil.com").send().await;
    assert_error(&resp, 403, -32600, None);
    let resp = call().header("origin", "null").send().await;
    assert_eq!(resp.status, 403);
    let resp = call()
        .method(Method::GET)
        .header("host", "evil.com")
        .send()
        .await;
    assert_eq!(resp.status, 403, "checked before the method");

    // Local names and addresses, any port.
    for host in [
        "localhost",
        "localhost:1234",
        "127.0.0.1",
        "127.0.0.1:9",
        "[::1]",
        "[::1]:65535",
    ] {
        let resp = call().header("host", host).send().await;
        assert_eq!(resp.status, 200, "{host}");
    }
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:3000",
        "http://[::1]:8080",
        "https://localhost",
    ] {
        let resp = call().header("origin", origin).send().await;
        assert_eq!(resp.status, 200, "{origin}");
    }
    s.stop().await;

    // An allowed origin and host on top of the defaults.
    let s = start_with(
        HttpConfig::new()
            .allow_origin("https://app.example.com")
            .allow_host("mcp.example.com"),
    )
    .await;
    let call = || s.rpc(json!(1), "tools/list", json!({}));
    let resp = call()
        .header("origin", "https://app.example.com")
        .send()
        .await;
    assert_eq!(resp.status, 200);
    let resp = call()
        .header("host", "mcp.example.com")
        .header("origin", "https://mcp.example.com")
        .send()
        .await;
    assert_eq!(resp.status, 200);
    let resp = call()
        .header("origin", "https://other.example.com")
        .send()
        .await;
    assert_eq!(resp.status, 403);
    s.stop().await;

    // Checking turned off: any Host, and an Origin only when allowed.
    let s = start_with(HttpConfig::new().localhost_only(false)).await;
    let call = || s.rpc(json!(1), "tools/list", json!({}));
    let resp = call().header("host", "mcp.example.com").send().await;
    assert_eq!(resp.status, 200);
    let resp = call()
        .header("host", "mcp.example.com")
        .header("origin", "https://evil.com")
        .send()
        .await;
    assert_eq!(resp.status, 403);
    s.stop().await;
}

#[tokio::test]
async fn mcp_name_base64_sentinel() {
    let s = start().await;
    // Post::rpc encodes the non-ASCII name.
    let resp = s
        .rpc(json!(1), "tools/call", json!({"name": "héllo"}))
        .send()
        .await;
    assert_eq!(
        assert_tool_result(&resp, json!(1))["content"][0]["text"],
        "bonjour"
    );
    let call = |id: i64| s.rpc(json!(id), "tools/call", json!({"name": "héllo"}));
    let resp = call(2)
        .header("mcp-name", "=?base64?aMOpbGxv?=")
        .send()
        .await;
    assert_tool_result(&resp, json!(2));
    // An ASCII name may be encoded too.
    let resp = s
        .rpc(
            json!(3),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .header("mcp-name", &sentinel("echo"))
        .send()
        .await;
    assert_tool_result(&resp, json!(3));
    // Malformed: not base64, not UTF-8, raw non-ASCII, or naming something else.
    let resp = call(4).header("mcp-name", "=?base64?%%%?=").send().await;
    assert_error(&resp, 400, -32020, Some(json!(4)));
    let resp = call(5).header("mcp-name", "=?base64?/w==?=").send().await;
    assert_error(&resp, 400, -32020, Some(json!(5)));
    let resp = call(6)
        .header_bytes("mcp-name", "héllo".as_bytes())
        .send()
        .await;
    assert_error(&resp, 400, -32020, Some(json!(6)));
    let resp = call(7).header("mcp-name", &sentinel("hello")).send().await;
    assert_error(&resp, 400, -32020, Some(json!(7)));
    s.stop().await;
}

#[tokio::test]
async fn progress_is_streamed_as_sse_with_the_response_last() {
    let s = start().await;
    let resp = s
        .rpc(
            json!("p"),
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3},
                   "_meta": with_progress_token("tok")}),
        )
        .send()
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-accel-buffering"), Some("no"));
    assert_eq!(resp.header("cache-control"), Some("no-cache"));
    let events = resp.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, note) in events[..3].iter().enumerate() {
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "tok");
        assert_eq!(note["params"]["progress"].as_f64(), Some((i + 1) as f64));
        assert!(note.get("id").is_none());
    }
    let last = &events[3];
    assert_eq!(last["id"], "p");
    validate_for(VERSION, "CallToolResult", &last["result"]).unwrap();
    assert_eq!(last["result"]["content"][0]["text"], "3 steps done");
    s.stop().await;
}

#[tokio::test]
async fn concurrent_requests_are_served_together() {
    let s = start().await;
    let call = |id: i64| {
        s.rpc(json!(id), "tools/call", json!({"name": "rendezvous"}))
            .send()
    };
    // The tool completes only once all three calls are in flight at the same time.
    let (a, b, c) = tokio::join!(call(1), call(2), call(3));
    for (resp, id) in [(a, 1), (b, 2), (c, 3)] {
        assert_eq!(
            assert_tool_result(&resp, json!(id))["content"][0]["text"],
            "met"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn disconnect_cancels_the_request() {
    let s = start().await;
    let post = s.rpc(json!(1), "tools/call", json!({"name": "slow"}));
    let mut request = String::from("POST /mcp HTTP/1.1\r\n");
    for (name, value) in &post.headers {
        request.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    request.push_str(&format!("content-length: {}\r\n\r\n", post.body.len()));
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(&post.body).await.unwrap();
    tokio::time::timeout(PATIENCE, s.probe.slow_started.notified())
        .await
        .expect("the tool starts");
    assert!(!s.probe.slow_dropped.load(Ordering::SeqCst));
    drop(stream);
    wait_for(&s.probe.slow_dropped, "the handler's future is dropped").await;
    assert!(
        !s.probe.slow_cancelled.load(Ordering::SeqCst),
        "dropped, not finished"
    );

    // The same while an SSE stream is open.
    let post = s.rpc(
        json!(2),
        "tools/call",
        json!({"name": "slow_stream", "_meta": with_progress_token("t")}),
    );
    let response = post.open().await;
    let mut reader = SseReader::new(response);
    let first = reader.event().await.expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress");
    assert!(!s.probe.stream_dropped.load(Ordering::SeqCst));
    drop(reader);
    wait_for(&s.probe.stream_dropped, "the streaming handler is dropped").await;
    s.stop().await;
}

#[tokio::test]
async fn shutdown_cancels_in_flight_requests() {
    let s = start().await;
    let call = tokio::spawn(
        s.rpc(json!(1), "tools/call", json!({"name": "slow"}))
            .send(),
    );
    tokio::time::timeout(PATIENCE, s.probe.slow_started.notified())
        .await
        .expect("the tool starts");
    let probe = s.probe.clone();
    s.stop().await;
    assert!(probe.slow_cancelled.load(Ordering::SeqCst));
    let resp = call.await.unwrap();
    assert_eq!(
        assert_tool_result(&resp, json!(1))["content"][0]["text"],
        "cancelled"
    );
}

#[tokio::test]
async fn subscriptions_listen_over_sse() {
    let s = start_with(HttpConfig::new().keep_alive(Some(Duration::from_millis(50)))).await;
    let response = s
        .rpc(
            json!("sub-1"),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .open()
        .await;
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let mut reader = SseReader::new(response);

    let ack = reader.event().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);

    // Idle: keep-alive comments.
    let block = reader.block().await.expect("a keep-alive");
    assert_eq!(block, ": keep-alive");

    s.server
        .handler()
        .add_tool(ToolSpec::new("late").description("Added later."), late)
        .unwrap();
    let changed = reader.event().await.expect("a list-changed notification");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );

    // The new tool is callable.
    let resp = s
        .rpc(json!(2), "tools/call", json!({"name": "late"}))
        .send()
        .await;
    assert_tool_result(&resp, json!(2));

    // Graceful shutdown ends the stream with the listen result.
    let stopping = tokio::spawn(s.stop());
    let last = reader.event().await.expect("the final result");
    assert_eq!(last["id"], "sub-1");
    validate_for(VERSION, "SubscriptionsListenResult", &last["result"]).unwrap();
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert!(reader.event().await.is_none(), "nothing after the result");
    stopping.await.unwrap();
}

#[tokio::test]
async fn server_shutdown_stops_serve_http() {
    let probe = Probe::new();
    let server = build(probe);
    let serving = tokio::spawn(server.clone().serve_http("127.0.0.1:0"));
    tokio::task::yield_now().await;
    server.shutdown();
    tokio::time::timeout(PATIENCE, serving)
        .await
        .expect("stops in time")
        .unwrap()
        .expect("returns Ok");
}

#[tokio::test]
async fn startup_errors_are_arctern_errors() {
    let err = McpServer::new("bad")
        .tool("has space", "Invalid name.", hello)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = HttpServer::new(build(Probe::new()))
        .bind(addr)
        .serve()
        .await
        .unwrap_err();
    assert!(err.is_io(), "{err:?}");

    let err = HttpServer::new(build(Probe::new()))
        .serve()
        .await
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");
    let err = HttpServer::new(build(Probe::new()))
        .bind("127.0.0.1:0")
        .path("mcp")
        .serve()
        .await
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");
}

#[tokio::test]
async fn mounts_in_axum_and_passes_extensions() {
    let server = build(Probe::new());
    let app = axum::Router::new()
        .route_service("/mcp", server.http_service())
        .layer(axum::Extension(Principal("alice".to_owned())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    let resp = Post::rpc(addr, json!(1), "tools/call", json!({"name": "whoami"}))
        .send()
        .await;
    assert_eq!(
        assert_tool_result(&resp, json!(1))["content"][0]["text"],
        "alice"
    );
    let resp = Post::rpc(
        addr,
        json!(2),
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 2}, "_meta": with_progress_token("a")}),
    )
    .send()
    .await;
    assert_eq!(resp.events().len(), 3);
    let resp = Post::rpc(addr, json!(3), "tools/list", json!({}))
        .header("host", "evil.com")
        .send()
        .await;
    assert_eq!(resp.status, 403, "the tower service checks Host by default");
    let resp = Post::raw(addr, "").method(Method::GET).send().await;
    assert_eq!(resp.status, 405);
    let resp = Post::rpc(addr, json!(4), "tools/list", json!({}))
        .path("/elsewhere")
        .send()
        .await;
    assert_eq!(resp.status, 404);

    server.shutdown();
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("axum stops")
        .unwrap()
        .unwrap();
}
