//! `McpServer` sends each page of its lists serialized once per registry snapshot. These
//! tests compare it, response by response, with the same handler answering through its plain
//! `list_*` methods (a fresh value per request, serialized by the engine): every page of every
//! list, on the 2026-07-28 wire and on a 2025-11-25 session, before and after the registry
//! changes. They also check a low-level handler that returns a shared result of its own.
#![cfg(all(feature = "server", feature = "stdio"))]

use std::time::Duration;

use arctern::server::connection::{MessageKind, Reply, RequestOrigin, TransportKind};
use arctern::server::extract::Args;
use arctern::server::{
    Handler, HandlerResult, Listed, McpHandler, McpServer, PromptSpec, RequestContext,
    ResourceSpec, ResourceTemplateSpec, Server, ServerConfig, ToolSpec,
};
use arctern::transport::stdio::StdioServer;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::prompts::{ListPromptsRequestParams, ListPromptsResult};
use arctern::types::resources::{
    ListResourceTemplatesRequestParams, ListResourceTemplatesResult, ListResourcesRequestParams,
    ListResourcesResult,
};
use arctern::types::result::CacheScope;
use arctern::types::tools::{ListToolsRequestParams, ListToolsResult, Tool};
use arctern_fixtures::schema_check::validate_for;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const LISTS: [(&str, &str, &str); 4] = [
    ("tools/list", "ListToolsResult", "tools"),
    ("prompts/list", "ListPromptsResult", "prompts"),
    ("resources/list", "ListResourcesResult", "resources"),
    (
        "resources/templates/list",
        "ListResourceTemplatesResult",
        "resourceTemplates",
    ),
];

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Topic {
    /// What to write about.
    topic: String,
}

#[derive(Deserialize, JsonSchema)]
struct Id {
    id: String,
}

/// Five tools, three prompts, three resources and three templates, two to a page.
fn cached() -> Server<McpHandler> {
    let mut server = McpServer::new("lists").version("1.0.0").page_size(2);
    for i in 0..5 {
        server = server.tool(
            format!("echo{i}"),
            format!("Echoes, number {i}."),
            |Args(e): Args<Echo>| async move { e.text },
        );
    }
    for i in 0..3 {
        server = server
            .prompt_spec(
                PromptSpec::new(format!("write{i}")).description("Writes."),
                |Args(t): Args<Topic>| async move { t.topic },
            )
            .resource(
                ResourceSpec::new(format!("test://r/{i}"), format!("r{i}")).mime_type("text/plain"),
                || async { "text".to_owned() },
            )
            .resource_template(
                ResourceTemplateSpec::new(format!("test://t{i}/{{id}}"), format!("t{i}")),
                |Args(v): Args<Id>| async move { v.id },
            );
    }
    server.build().unwrap()
}

/// The same handler, answering the list methods with pages serialized for each response
/// (the value form) instead of shared ones.
struct Uncached(McpHandler);

fn unparsable(e: serde_json::Error) -> arctern::ErrorObject {
    arctern::ErrorObject::internal_error(format!("a shared page does not parse: {e}"))
}

impl Handler for Uncached {
    async fn list_tools(
        &self,
        ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        let page = self.0.list_tools(ctx, params).await?;
        Ok(Listed::value(page.into_result().map_err(unparsable)?))
    }

    async fn list_prompts(
        &self,
        ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> HandlerResult<Listed<ListPromptsResult>> {
        let page = self.0.list_prompts(ctx, params).await?;
        Ok(Listed::value(page.into_result().map_err(unparsable)?))
    }

    async fn list_resources(
        &self,
        ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> HandlerResult<Listed<ListResourcesResult>> {
        let page = self.0.list_resources(ctx, params).await?;
        Ok(Listed::value(page.into_result().map_err(unparsable)?))
    }

    async fn list_resource_templates(
        &self,
        ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> HandlerResult<Listed<ListResourceTemplatesResult>> {
        let page = self.0.list_resource_templates(ctx, params).await?;
        Ok(Listed::value(page.into_result().map_err(unparsable)?))
    }
}

fn uncached(server: &Server<McpHandler>) -> Server<Uncached> {
    Server::new(Uncached(server.handler().clone()), server.config().clone())
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn request(id: u64, method: &str, cursor: Option<&str>, modern: bool) -> Value {
    let mut params = json!({});
    if modern {
        params["_meta"] = meta();
    }
    if let Some(cursor) = cursor {
        params["cursor"] = json!(cursor);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Checks a response against the schema of `revision`, and returns its result.
fn checked(revision: &str, body: &[u8], def: &str) -> Value {
    let message: Value = serde_json::from_slice(body).unwrap();
    for (def, value) in [
        ("JSONRPCResultResponse", &message),
        (def, &message["result"]),
    ] {
        if let Err(e) = validate_for(revision, def, value) {
            panic!("{value} is not a valid {revision} {def}: {e}");
        }
    }
    message["result"].clone()
}

async fn modern<H: Handler>(server: &Server<H>, message: &Value) -> Vec<u8> {
    let bytes = serde_json::to_vec(message).unwrap();
    let reply = server
        .handle_bytes(&bytes, RequestOrigin::new(TransportKind::Memory))
        .await;
    assert!(
        matches!(
            reply,
            Reply::Message {
                kind: MessageKind::Response,
                ..
            }
        ),
        "{reply:?}"
    );
    reply.body().expect("a single message").to_vec()
}

/// Every page of `method` on the 2026-07-28 wire, each checked against the schema; and the
/// names the pages list, in order.
async fn modern_pages<H: Handler>(
    server: &Server<H>,
    (method, def, member): (&str, &str, &str),
) -> (Vec<Vec<u8>>, Vec<String>) {
    let (mut pages, mut names, mut cursor) = (Vec::new(), Vec::new(), None);
    loop {
        let id = pages.len() as u64 + 1;
        let body = modern(server, &request(id, method, cursor.as_deref(), true)).await;
        let result = checked("2026-07-28", &body, def);
        let entries = result[member].as_array().unwrap();
        assert!(entries.len() <= 2, "{result}");
        names.extend(entries.iter().map(|e| {
            e.get("name")
                .and_then(Value::as_str)
                .expect("a name")
                .to_owned()
        }));
        assert_eq!(
            (result["ttlMs"].clone(), result["cacheScope"].clone()),
            (json!(0), json!("private"))
        );
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "lists"
        );
        cursor = result["nextCursor"].as_str().map(str::to_owned);
        pages.push(body);
        if cursor.is_none() {
            return (pages, names);
        }
    }
}

/// Both servers answer every list the same, byte for byte, page by page, twice (the second
/// time from the cache); returns the names each list holds.
async fn same_lists(cached: &Server<McpHandler>) -> Vec<Vec<String>> {
    let plain = uncached(cached);
    let mut all = Vec::new();
    for list in LISTS {
        let (expected, names) = modern_pages(&plain, list).await;
        for _ in 0..2 {
            let (pages, again) = modern_pages(cached, list).await;
            assert_eq!(again, names);
            for (page, want) in pages.iter().zip(&expected) {
                assert_eq!(
                    String::from_utf8_lossy(page),
                    String::from_utf8_lossy(want),
                    "{}",
                    list.0
                );
            }
            assert_eq!(pages.len(), expected.len());
        }
        all.push(names);
    }
    all
}

#[tokio::test]
async fn cached_pages_match_the_uncached_ones() {
    let server = cached();
    let names = same_lists(&server).await;
    assert_eq!(
        names,
        [
            vec!["echo0", "echo1", "echo2", "echo3", "echo4"],
            vec!["write0", "write1", "write2"],
            vec!["r0", "r1", "r2"],
            vec!["t0", "t1", "t2"],
        ]
    );
    // The schema and description survive verbatim.
    let body = modern(&server, &request(9, "tools/list", None, true)).await;
    let result = checked("2026-07-28", &body, "ListToolsResult");
    assert_eq!(result["tools"][1]["description"], "Echoes, number 1.");
    assert_eq!(
        result["tools"][1]["inputSchema"]["properties"]["text"]["description"],
        "The text to echo."
    );
    // A bad cursor is still -32602.
    let body = modern(&server, &request(10, "tools/list", Some("nope"), true)).await;
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], -32602);
}

#[tokio::test]
async fn changes_to_the_registry_show_at_once() {
    let server = cached();
    same_lists(&server).await;
    let h = server.handler();
    h.add_tool(
        ToolSpec::new("late").description("Added later."),
        |Args(e): Args<Echo>| async move { e.text },
    )
    .unwrap();
    let names = same_lists(&server).await;
    assert_eq!(
        names[0],
        ["echo0", "echo1", "echo2", "echo3", "echo4", "late"]
    );
    assert!(h.remove_tool("echo0"));
    assert!(h.remove_prompt("write1"));
    assert!(h.remove_resource("test://r/2"));
    let names = same_lists(&server).await;
    assert_eq!(names[0], ["echo1", "echo2", "echo3", "echo4", "late"]);
    assert_eq!(names[1], ["write0", "write2"]);
    assert_eq!(names[2], ["r0", "r1"]);
    // Down to nothing: an empty page, still valid.
    for name in names[0].clone() {
        assert!(h.remove_tool(&name));
    }
    assert!(same_lists(&server).await[0].is_empty());
}

// ------------------------------------------------------------------ a 2025-11-25 session

/// A stdio connection opened as a 2025-11-25 session.
struct Legacy {
    stdin: DuplexStream,
    stdout: Lines<BufReader<DuplexStream>>,
}

impl Legacy {
    async fn open<H: Handler>(server: Server<H>) -> Legacy {
        let (stdin, server_in) = tokio::io::duplex(256 * 1024);
        let (server_out, client_out) = tokio::io::duplex(256 * 1024);
        tokio::spawn(StdioServer::new(server).serve_io(server_in, server_out));
        let mut session = Legacy {
            stdin,
            stdout: BufReader::new(client_out).lines(),
        };
        let init = session
            .call(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}}),
            )
            .await;
        assert!(
            init.contains("\"protocolVersion\":\"2025-11-25\""),
            "{init}"
        );
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
    }

    /// Sends a request and returns the response, skipping notifications (list changes).
    async fn call(&mut self, message: &Value) -> String {
        self.send(message).await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the connection is open");
            let parsed: Value = serde_json::from_str(&line).unwrap();
            if parsed.get("id").is_some() {
                return line;
            }
        }
    }

    /// Every page of `method`, each checked against the 2025-11-25 schema.
    async fn pages(&mut self, (method, def, _): (&str, &str, &str)) -> Vec<String> {
        let (mut pages, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let id = pages.len() as u64 + 1;
            let line = self
                .call(&request(id, method, cursor.as_deref(), false))
                .await;
            let result = checked("2025-11-25", line.as_bytes(), def);
            for member in ["resultType", "ttlMs", "cacheScope"] {
                assert!(result.get(member).is_none(), "{line}");
            }
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            pages.push(line);
            if cursor.is_none() {
                return pages;
            }
        }
    }
}

#[tokio::test]
async fn a_legacy_session_gets_the_same_lists() {
    let server = cached();
    let mut fast = Legacy::open(server.clone()).await;
    let mut plain = Legacy::open(uncached(&server)).await;
    for list in LISTS {
        let expected = plain.pages(list).await;
        assert!(expected.len() >= 2, "{}", list.0);
        assert_eq!(fast.pages(list).await, expected);
        assert_eq!(fast.pages(list).await, expected);
    }
    server.handler().remove_tool("echo3");
    let expected = plain.pages(LISTS[0]).await;
    assert!(!expected.concat().contains("echo3"));
    assert_eq!(fast.pages(LISTS[0]).await, expected);
}

// ------------------------------------------------------------------ a low-level handler

/// Answers `tools/list` with one page that sets its own `_meta` and `ttlMs`, either shared or
/// as a value.
struct OwnList {
    shared: bool,
    page: ListToolsResult,
}

impl Handler for OwnList {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        Ok(if self.shared {
            Listed::shared(self.page.clone()).unwrap()
        } else {
            Listed::from(self.page.clone())
        })
    }
}

fn own_list(shared: bool, page: ListToolsResult) -> Server<OwnList> {
    let mut config = ServerConfig::new("own", "1");
    config.capabilities.tools = Some(ToolsCapability::default());
    Server::new(OwnList { shared, page }, config)
}

#[tokio::test]
async fn a_shared_result_reads_like_its_value() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let mut page = ListToolsResult::new(vec![Tool::new(
        "a",
        "Takes a.",
        schema.as_object().unwrap().clone(),
    )])
    .with_next_cursor("c2");
    page.ttl_ms = Some(60_000);
    page.meta = Some(json!({"example.com/page": 1}).as_object().unwrap().clone());
    let message = request(7, "tools/list", None, true);

    let value = modern(&own_list(false, page.clone()), &message).await;
    let shared = modern(&own_list(true, page.clone()), &message).await;
    assert_eq!(
        String::from_utf8_lossy(&shared),
        String::from_utf8_lossy(&value)
    );
    let result = checked("2026-07-28", &shared, "ListToolsResult");
    assert_eq!(result["ttlMs"], 60_000);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["_meta"]["example.com/page"], 1);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "own"
    );

    // Unknown members come before the hints the server adds, so only the order may differ.
    page.extra.insert("example.com/x".into(), json!(true));
    page.cache_scope = Some(CacheScope::Public);
    page.ttl_ms = None;
    let value = modern(&own_list(false, page.clone()), &message).await;
    let shared = modern(&own_list(true, page.clone()), &message).await;
    let (value, shared): (Value, Value) = (
        serde_json::from_slice(&value).unwrap(),
        serde_json::from_slice(&shared).unwrap(),
    );
    assert_eq!(shared, value);
    assert_eq!(shared["result"]["cacheScope"], "public");
    assert_eq!(shared["result"]["ttlMs"], 0);

    // A 2025-11-25 session gets it without the 2026-07-28 members, its `_meta` kept.
    let mut legacy = Legacy::open(own_list(true, page.clone())).await;
    let line = legacy.call(&request(3, "tools/list", None, false)).await;
    let result = checked("2025-11-25", line.as_bytes(), "ListToolsResult");
    assert_eq!(result["_meta"], json!({"example.com/page": 1}));
    assert_eq!(result["example.com/x"], true);
    assert!(result.get("cacheScope").is_none());
    let mut legacy_value = Legacy::open(own_list(false, page)).await;
    let expected = legacy_value
        .call(&request(3, "tools/list", None, false))
        .await;
    assert_eq!(line, expected);
}
