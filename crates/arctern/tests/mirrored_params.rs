//! `Mcp-Param-*` headers (SEP-2243): a `tools/call` arriving over HTTP must mirror every
//! argument its tool marks with `x-mcp-header`, else HTTP 400 and `-32020`.

use arctern::server::connection::{MessageKind, Reply, RequestOrigin, TransportKind, WireHeaders};
use arctern::server::extract::Args;
use arctern::server::{McpHandler, McpServer, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Query {
    /// Routed on by intermediaries.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    #[schemars(extend("x-mcp-header" = "Limit"))]
    limit: Option<i64>,
    sql: String,
}

fn server() -> Server<McpHandler> {
    McpServer::new("headers")
        .tool(
            "query",
            "Runs a query.",
            |Args(q): Args<Query>| async move {
                format!("{} {} limit {:?}", q.region, q.sql, q.limit)
            },
        )
        .tool("plain", "No mirrored arguments.", || async { "ok" })
        .build()
        .unwrap()
}

fn headers(tool: &str, params: &[(&str, Result<&str, &str>)]) -> WireHeaders {
    let mut headers = WireHeaders::new();
    headers.protocol_version = Some("2026-07-28".into());
    headers.method = Some("tools/call".into());
    headers.name = Some(Ok(tool.into()));
    headers.params = params
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.map(str::to_owned).map_err(str::to_owned)))
        .collect();
    headers
}

async fn call(
    server: &Server<McpHandler>,
    tool: &str,
    arguments: Value,
    origin: RequestOrigin,
) -> (u16, Value) {
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let reply = server
        .handle_bytes(&serde_json::to_vec(&body).unwrap(), origin)
        .await;
    match reply {
        Reply::Message { kind, body } => {
            let status = match kind {
                MessageKind::Invalid => 400,
                MessageKind::UnknownMethod => 404,
                _ => 200,
            };
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["id"], 7);
            (status, v)
        }
        other => panic!("unexpected reply {other:?}"),
    }
}

fn http(tool: &str, params: &[(&str, Result<&str, &str>)]) -> RequestOrigin {
    RequestOrigin::http(headers(tool, params), Default::default())
}

#[tokio::test]
async fn matching_headers_are_accepted() {
    let server = server();
    let args = json!({"region": "us-west1", "limit": 10, "sql": "select 1"});
    // Header names ignore case; numbers compare numerically.
    let (status, r) = call(
        &server,
        "query",
        args,
        http("query", &[("region", Ok("us-west1")), ("LIMIT", Ok("10"))]),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "us-west1 select 1 limit Some(10)"
    );

    // An absent or null argument expects no header.
    let args = json!({"region": "eu", "limit": null, "sql": "x"});
    let (status, r) = call(
        &server,
        "query",
        args,
        http("query", &[("region", Ok("eu"))]),
    )
    .await;
    assert_eq!(status, 200, "{r}");

    // Tools without annotations ignore stray headers.
    let (status, _) = call(
        &server,
        "plain",
        json!({}),
        http("plain", &[("region", Err("malformed"))]),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn missing_mismatched_or_malformed_headers_are_rejected() {
    let server = server();
    let args = json!({"region": "us-west1", "sql": "select 1"});
    for params in [
        vec![],
        vec![("region", Ok("eu-west1"))],
        vec![(
            "region",
            Err("the base64 sentinel does not hold valid base64"),
        )],
        vec![("region", Ok("us-west1")), ("limit", Ok("3"))],
    ] {
        let (status, r) = call(&server, "query", args.clone(), http("query", &params)).await;
        assert_eq!(status, 400, "{params:?}: {r}");
        assert_eq!(r["error"]["code"], -32020, "{params:?}: {r}");
    }
}

#[tokio::test]
async fn transports_without_headers_are_not_checked() {
    let server = server();
    let args = json!({"region": "us-west1", "sql": "select 1"});
    let (status, r) = call(
        &server,
        "query",
        args,
        RequestOrigin::new(TransportKind::Stdio),
    )
    .await;
    assert_eq!(status, 200, "{r}");
}

#[test]
fn invalid_annotations_fail_registration() {
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Bad {
        #[schemars(extend("x-mcp-header" = "Ratio"))]
        ratio: f64,
    }
    let err = McpServer::new("bad")
        .tool("bad", "", |Args(_): Args<Bad>| async { "" })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("x-mcp-header \"Ratio\""), "{err}");

    let found = arctern::types::headers::mirrored_params(
        json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(found[0].header, "R");
    assert_eq!(found[0].path, ["r"]);
}
