//! The client over real Streamable HTTP: the crate's HTTP server (behind a recording accept
//! loop that captures every request's headers and body), and a raw hyper server for odd
//! responses (SSE framing, error statuses, malformed and oversized bodies).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::ErrorKind;
use arctern::client::{CallOptions, Client, HttpTransport, ServerNotification};
use arctern::server::{
    Handler, HandlerResult, Listed, Outcome, RequestContext, Server, ServerConfig,
};
use arctern::transport::http::{HttpConfig, StreamableHttpService};
use arctern::types::ErrorObject;
use arctern::types::capabilities::{PromptsCapability, ResourcesCapability, ToolsCapability};
use arctern::types::meta::JsonObject;
use arctern::types::prompts::{GetPromptRequestParams, GetPromptResult, PromptMessage};
use arctern::types::resources::{ReadResourceRequestParams, ReadResourceResult};
use arctern::types::subscriptions::SubscriptionFilter;
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult, Tool,
};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

// ------------------------------------------------------------------ a recording server

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Captured {
    headers: http::HeaderMap,
    body: Value,
    connection: usize,
}

struct Recorder {
    url: String,
    requests: Arc<Mutex<Vec<Captured>>>,
    connections: Arc<AtomicUsize>,
}

impl Recorder {
    fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    fn last(&self, method: &str) -> Captured {
        self.requests()
            .into_iter()
            .rev()
            .find(|c| c.body["method"] == method)
            .unwrap()
    }
}

/// Serves `server` with the crate's HTTP service, recording every request first.
async fn serve<H: Handler>(server: Server<H>, config: HttpConfig) -> Recorder {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = StreamableHttpService::new(server, config);
    let requests = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (r, c) = (requests.clone(), connections.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let connection = c.fetch_add(1, Ordering::SeqCst);
            let service = service.clone();
            let r = r.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let mut service = service.clone();
                    let r = r.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let bytes = body.collect().await.unwrap().to_bytes();
                        r.lock().unwrap().push(Captured {
                            headers: parts.headers.clone(),
                            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                            connection,
                        });
                        let req = Request::from_parts(parts, Full::new(bytes));
                        tower_service::Service::call(&mut service, req).await
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    Recorder {
        url: format!("http://{addr}/mcp"),
        requests,
        connections,
    }
}

/// Serves raw responses: `respond` gets the request body and returns the response.
async fn raw<F>(respond: F) -> String
where
    F: Fn(Value) -> Response<Full<Bytes>> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let respond = respond.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let respond = respond.clone();
                    async move {
                        let bytes = req.into_body().collect().await.unwrap().to_bytes();
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(respond(body))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

fn response(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()))
        .unwrap()
}

// ------------------------------------------------------------------ a low-level server with annotated tools

fn schema(v: Value) -> JsonObject {
    v.as_object().cloned().unwrap()
}

fn header_tools() -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "test_custom_headers",
            "Mirrors arguments into headers.",
            schema(json!({"type": "object", "properties": {
                "s": {"type": "string", "x-mcp-header": "Region"},
                "i": {"type": "integer", "x-mcp-header": "Count"},
                "b": {"type": "boolean", "x-mcp-header": "Flag"},
                "empty": {"type": "string", "x-mcp-header": "Empty"},
                "uni": {"type": "string", "x-mcp-header": "Uni"},
                "ws": {"type": "string", "x-mcp-header": "Ws"},
                "crlf": {"type": "string", "x-mcp-header": "Crlf"},
                "tab": {"type": "string", "x-mcp-header": "Tab"},
                "f": {"type": "number"},
                "m": {"type": "string", "x-mcp-header": "Method"},
                "n": {"type": ["string", "null"], "x-mcp-header": "Nullable"},
                "nested": {"type": "object", "properties": {
                    "deep": {"type": "string", "x-mcp-header": "Deep"}}}
            }})),
        ),
        Tool::new(
            "valid_tool",
            "No annotations.",
            schema(json!({"type": "object"})),
        ),
        Tool::new(
            "héllo wörld",
            "A name that needs the sentinel.",
            schema(json!({"type": "object"})),
        ),
    ];
    let invalid = [
        json!({"a": {"type": "string", "x-mcp-header": ""}}),
        json!({"a": {"type": "object", "x-mcp-header": "A"}}),
        json!({"a": {"type": "array", "x-mcp-header": "A"}}),
        json!({"a": {"type": "null", "x-mcp-header": "A"}}),
        json!({"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "A"}}),
        json!({"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}),
        json!({"a": {"type": "string", "x-mcp-header": "A B"}}),
        json!({"a": {"type": "string", "x-mcp-header": "A:B"}}),
        json!({"a": {"type": "string", "x-mcp-header": "Ünicode"}}),
        json!({"a": {"type": "string", "x-mcp-header": "A\u{7}"}}),
        json!({"a": {"type": "number", "x-mcp-header": "A"}}),
    ];
    for (i, props) in invalid.into_iter().enumerate() {
        tools.push(Tool::new(
            format!("invalid_{i}"),
            "Invalid annotation.",
            schema(json!({"type": "object", "properties": props})),
        ));
    }
    tools
}

#[derive(Clone, Default)]
struct HeaderServer {
    lists: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    /// How many tools/call answers -32020 first.
    mismatches: Arc<AtomicUsize>,
}

impl Handler for HeaderServer {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(ListToolsResult::new(header_tools()).into())
    }

    async fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self
            .mismatches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(ErrorObject::header_mismatch(
                "Mcp-Param-Region does not match",
            ));
        }
        if params.name == "slow" {
            ctx.progress(1.0, None, Some("started")).await;
            let _guard = DropFlag(self.calls.clone());
            std::future::pending::<()>().await;
        }
        if params.name == "progress" {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), None).await;
            }
        }
        Ok(CallToolResult::text(params.name).into())
    }

    async fn get_prompt(
        &self,
        _ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(GetPromptResult::new(vec![PromptMessage::user_text(params.name)]).into())
    }

    async fn read_resource(
        &self,
        _ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        Ok(ReadResourceResult::text(params.uri, "text/plain", "x").into())
    }
}

/// Counts a dropped handler future (as 1000 calls, to tell it apart).
struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1000, Ordering::SeqCst);
    }
}

fn header_server(handler: HeaderServer) -> Server<HeaderServer> {
    let mut config = ServerConfig::new("headers", "1.0");
    let caps = &mut config.capabilities;
    caps.tools = Some(ToolsCapability::default().with_list_changed(true));
    caps.prompts = Some(PromptsCapability::default());
    caps.resources = Some(ResourcesCapability::default());
    Server::new(handler, config)
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn every_request_carries_the_standard_headers_and_mirrors_annotated_arguments() {
    let handler = HeaderServer::default();
    let rec = serve(header_server(handler.clone()), HttpConfig::new()).await;
    let client = Client::builder().connect(&rec.url).await.unwrap();

    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["test_custom_headers", "valid_tool", "héllo wörld"]);

    client
        .call_tool(
            "test_custom_headers",
            json!({
                "s": "us-west1", "i": 42, "b": true, "empty": "", "uni": "Hello, 世界",
                "ws": " padded ", "crlf": "a\r\nb", "tab": "a\tb", "f": 1.5, "m": "x",
                "n": null, "nested": {"deep": "down"}
            }),
        )
        .await
        .unwrap();
    let call = rec.last("tools/call");
    let h = &call.headers;
    assert_eq!(h["mcp-method"], "tools/call");
    assert_eq!(h["mcp-name"], "test_custom_headers");
    assert_eq!(h["mcp-param-region"], "us-west1");
    assert_eq!(h["mcp-param-count"], "42");
    assert_eq!(h["mcp-param-flag"], "true");
    assert_eq!(h["mcp-param-empty"], "");
    assert_eq!(h["mcp-param-uni"], "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_eq!(h["mcp-param-ws"], "=?base64?IHBhZGRlZCA=?=");
    assert_eq!(h["mcp-param-crlf"], "=?base64?YQ0KYg==?=");
    assert_eq!(h["mcp-param-tab"], "=?base64?YQli?=");
    assert_eq!(h["mcp-param-method"], "x");
    assert_eq!(h["mcp-param-deep"], "down");
    assert!(!h.contains_key("mcp-param-nullable"), "null is omitted");
    assert!(!h.contains_key("mcp-param-f"), "a number is never mirrored");
    assert_eq!(
        h.keys()
            .filter(|k| k.as_str().starts_with("mcp-param-"))
            .count(),
        10
    );

    client.call_tool("héllo wörld", Value::Null).await.unwrap();
    assert_eq!(
        rec.last("tools/call").headers["mcp-name"],
        "=?base64?aMOpbGxvIHfDtnJsZA==?="
    );
    client.get_prompt("test_prompt", Value::Null).await.unwrap();
    assert_eq!(rec.last("prompts/get").headers["mcp-name"], "test_prompt");
    client.read_resource("test://a%20b?id=123").await.unwrap();
    assert_eq!(
        rec.last("resources/read").headers["mcp-name"],
        "test://a%20b?id=123"
    );

    // A rejected tool is not called at all.
    let before = rec.requests().len();
    let err = client
        .call_tool("invalid_3", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert_eq!(rec.requests().len(), before);

    for c in rec.requests() {
        let h = &c.headers;
        assert_eq!(h["accept"], "application/json, text/event-stream");
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["mcp-method"], c.body["method"].as_str().unwrap());
        let meta = &c.body["params"]["_meta"];
        assert_eq!(
            h["mcp-protocol-version"],
            meta["io.modelcontextprotocol/protocolVersion"]
                .as_str()
                .unwrap()
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "arctern-client"
        );
    }
    assert_eq!(
        rec.connections.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );
}

#[tokio::test]
async fn the_first_call_lists_tools_and_a_header_mismatch_relists_and_retries_once() {
    let handler = HeaderServer::default();
    let rec = serve(header_server(handler.clone()), HttpConfig::new()).await;
    let client = Client::builder().connect(&rec.url).await.unwrap();
    handler.mismatches.store(1, Ordering::SeqCst);
    let result = client
        .call_tool("test_custom_headers", json!({"s": "eu"}))
        .await
        .unwrap();
    assert!(result.is_error.is_none());
    let methods: Vec<String> = rec
        .requests()
        .iter()
        .map(|c| c.body["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    let requests = rec.requests();
    assert_ne!(
        requests[2].body["id"], requests[4].body["id"],
        "the retry has a new id"
    );

    // Only once: a second mismatch is the caller's error.
    handler.mismatches.store(2, Ordering::SeqCst);
    let err = client
        .call_tool("test_custom_headers", json!({"s": "eu"}))
        .await
        .unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32020);
}

#[tokio::test]
async fn negotiation_retries_after_a_400_unsupported_version() {
    let rec = serve(header_server(HeaderServer::default()), HttpConfig::new()).await;
    let client = Client::builder()
        .protocol_versions(["2027-01-01", "2026-07-28"])
        .connect(&rec.url)
        .await
        .unwrap();
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.server_info().unwrap().name, "headers");
    let versions: Vec<String> = rec
        .requests()
        .iter()
        .map(|c| {
            c.headers["mcp-protocol-version"]
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(versions, ["2027-01-01", "2026-07-28"]);
}

#[tokio::test]
async fn progress_arrives_over_sse_and_dropping_a_call_cancels_it() {
    let handler = HeaderServer::default();
    let rec = serve(
        header_server(handler.clone()),
        HttpConfig::new().keep_alive(Some(Duration::from_millis(20))),
    )
    .await;
    let client = Client::builder().connect(&rec.url).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let result = client
        .call_tool_with(
            "progress",
            Value::Null,
            CallOptions::new().on_progress(move |p| s.lock().unwrap().push(p.progress)),
        )
        .await
        .unwrap();
    assert!(!result.content.is_empty());
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    let token = &rec.last("tools/call").body["params"]["_meta"]["progressToken"];
    assert_eq!(
        token,
        &rec.last("tools/call").body["id"],
        "the token is the request id"
    );

    // A call that never finishes: drop it once it started.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = client.call_tool_with(
        "slow",
        Value::Null,
        CallOptions::new().on_progress(move |_| {
            let _ = tx.send(());
        }),
    );
    tokio::select! {
        _ = call => panic!("cannot finish"),
        _ = rx.recv() => {}
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while handler.calls.load(Ordering::SeqCst) < 1000 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn subscriptions_stream_over_http() {
    let server = header_server(HeaderServer::default());
    let rec = serve(server.clone(), HttpConfig::new()).await;
    let client = Client::builder().connect(&rec.url).await.unwrap();
    let mut sub = client
        .subscribe(SubscriptionFilter::new().with_tools_list_changed())
        .await
        .unwrap();
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    server.change_notifier().tools_changed();
    let n = tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(n, ServerNotification::ToolsListChanged));
    // Other requests still flow while the subscription holds its connection.
    client.call_tool("valid_tool", Value::Null).await.unwrap();
}

#[tokio::test]
async fn sse_framing_comments_event_lines_and_multiline_data() {
    let url = raw(|body| {
        let id = body["id"].clone();
        let result = serde_json::to_string_pretty(&json!({
            "jsonrpc": "2.0", "id": id,
            "result": {"resultType": "complete", "content": [{"type": "text", "text": "multi\nline"}]}
        }))
        .unwrap();
        let data: String = result.lines().map(|l| format!("data: {l}\r\n")).collect();
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}});
        let sse = format!(
            ": keep-alive\n\nid: 0\ndata:\n\nevent: message\ndata: {progress}\n\n: ping\r\nevent: message\r\n{data}\r\n"
        );
        response(200, "text/event-stream", sse)
    })
    .await;
    let progress = Arc::new(AtomicUsize::new(0));
    let p = progress.clone();
    let client = Client::builder()
        .discover(false)
        .on_progress(move |_| {
            p.fetch_add(1, Ordering::SeqCst);
        })
        .connect(&url)
        .await
        .unwrap();
    let result = client.call_tool("t", Value::Null).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "multi\nline"
    );
    assert_eq!(progress.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn error_statuses_and_malformed_bodies_fail_cleanly() {
    let url = raw(|body| match body["params"]["name"].as_str() {
        Some("not-found") => response(
            404,
            "application/json",
            json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "Method not found"}}).to_string(),
        ),
        Some("boom") => response(500, "text/plain", "internal failure"),
        Some("garbage") => response(200, "application/json", "{\"jsonrpc\": \"2.0\", \"id\": "),
        Some("huge") => response(
            200,
            "application/json",
            format!("{{\"pad\": \"{}\"}}", "x".repeat(64 * 1024)),
        ),
        Some("accepted") => response(202, "application/json", ""),
        Some("two") => response(
            200,
            "application/json",
            format!(
                "{}\n{}\n",
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}),
                json!({"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}})
            ),
        ),
        _ => response(200, "application/json", json!({"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}).to_string()),
    })
    .await;
    let transport = HttpTransport::builder(&url)
        .max_message_size(16 * 1024)
        .build()
        .unwrap();
    let client = Client::builder()
        .discover(false)
        .connect_with(transport)
        .await
        .unwrap();
    let err = client
        .call_tool("not-found", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32601);
    let err = client.call_tool("boom", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(err.to_string().contains("500"), "{err}");
    let err = client.call_tool("garbage", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    let err = client.call_tool("huge", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    let err = client.call_tool("accepted", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    client.call_tool("two", Value::Null).await.unwrap();
    client.call_tool("fine", Value::Null).await.unwrap();

    // Nothing listens there.
    let err = Client::builder()
        .connect("http://127.0.0.1:9/mcp")
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Io | ErrorKind::Transport),
        "{err:?}"
    );
    // https is spoken (the host does not resolve); other schemes are refused.
    assert_eq!(
        Client::builder()
            .connect("https://example.invalid/mcp")
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Transport
    );
    assert_eq!(
        Client::builder()
            .connect("ftp://example.invalid/mcp")
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Config
    );
}

#[tokio::test]
async fn concurrent_calls_share_a_small_pool() {
    let rec = serve(header_server(HeaderServer::default()), HttpConfig::new()).await;
    let client = Client::builder().connect(&rec.url).await.unwrap();
    client.list_tools().await.unwrap();
    let calls = (0..32).map(|_| client.call_tool("valid_tool", Value::Null));
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    for _ in 0..10 {
        client.call_tool("valid_tool", Value::Null).await.unwrap();
    }
    let connections = rec.connections.load(Ordering::SeqCst);
    assert!(connections <= 33, "{connections}");
    let used: std::collections::HashSet<usize> = rec
        .requests()
        .iter()
        .rev()
        .take(10)
        .map(|c| c.connection)
        .collect();
    assert_eq!(used.len(), 1, "sequential calls reuse one connection");

    // A connection limit makes bursts wait instead of opening more.
    let rec = serve(header_server(HeaderServer::default()), HttpConfig::new()).await;
    let transport = HttpTransport::builder(&rec.url)
        .max_connections(2)
        .build()
        .unwrap();
    let client = Client::builder().connect_with(transport).await.unwrap();
    let calls = (0..16).map(|_| client.call_tool("valid_tool", Value::Null));
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    assert!(rec.connections.load(Ordering::SeqCst) <= 2);
}

// ------------------------------------------------------------------ against the standalone server

#[tokio::test]
async fn mirrored_headers_agree_with_the_crates_own_server_validation() {
    use arctern::server::extract::RawArgs;
    use arctern::server::{McpServer, ToolSpec};
    use arctern::transport::http::HttpServer;

    let server = McpServer::new("mirror")
        .tool_spec(
            ToolSpec::new("route")
                .description("Routes by region.")
                .input_schema(schema(json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "shard": {"type": "integer", "x-mcp-header": "Shard"},
                    "dry": {"type": "boolean", "x-mcp-header": "Dry"}
                }}))),
            |RawArgs(args): RawArgs| async move { serde_json::to_string(&args).unwrap() },
        )
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = HttpServer::new(server.clone())
        .listener(listener)
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    tokio::spawn(bound.serve());

    let client = Client::builder().connect(&url).await.unwrap();
    for region in [
        "us-west1",
        "  spaced  ",
        "Zürich",
        "=?base64?x?=",
        "a\r\nb",
        "",
    ] {
        let r = client
            .call_tool(
                "route",
                json!({"region": region, "shard": -3, "dry": false}),
            )
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{region:?}: {r:?}");
    }
    client
        .call_tool("route", json!({"region": null}))
        .await
        .unwrap();
    server.shutdown();
}
