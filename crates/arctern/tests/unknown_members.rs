//! The client keeps what a server sends and arctern does not model: a small server on
//! 127.0.0.1 that is not arctern's answers in raw JSON, on both eras, with a 2025-11-25
//! tool's `execution` and members no revision has (issue 37, item 3). The server stops with
//! its test (a dropped sender ends it).

use std::time::Duration;

use arctern::Era;
use arctern::client::Client;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The tool as the server describes it.
fn tool() -> Value {
    json!({
        "name": "simulate-research-query",
        "description": "Runs a research query as a task.",
        "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}},
                        "required": ["topic"], "x-ui-order": ["topic"]},
        "execution": {"taskSupport": "required"},
        "annotations": {"readOnlyHint": true, "x-cost": "high"},
        "x-vendor": {"tier": "gold", "since": [2025, 11]}
    })
}

fn json_reply(body: Value) -> Response {
    Response::builder()
        .header("content-type", "application/json")
        .header("mcp-session-id", "s-1")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn result(request: &Value, result: Value) -> Response {
    json_reply(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
}

/// A server of one era on 127.0.0.1; it stops when the returned sender is dropped.
async fn serve(era: Era) -> (String, oneshot::Sender<()>) {
    let handle = move |method: Method, body: Bytes| async move {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let rpc = request["method"].as_str().unwrap_or("").to_owned();
        match (method.as_str(), rpc.as_str(), era) {
            ("POST", "server/discover", Era::Modern) => result(
                &request,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
                       "_meta": {"io.modelcontextprotocol/serverInfo":
                           {"name": "raw", "version": "1"}}}),
            ),
            ("POST", "tools/list", Era::Modern) => result(
                &request,
                json!({"resultType": "complete", "tools": [tool()], "ttlMs": 0,
                       "cacheScope": "public", "x-page": 1}),
            ),
            ("POST", "server/discover", Era::Legacy) => json_reply(json!({
                "jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32601, "message": "Method not found"}})),
            ("POST", "initialize", Era::Legacy) => result(
                &request,
                json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                       "serverInfo": {"name": "raw", "version": "1"}}),
            ),
            ("POST", "notifications/initialized", _) => StatusCode::ACCEPTED.into_response(),
            ("POST", "tools/list", Era::Legacy) => {
                result(&request, json!({"tools": [tool()], "x-page": 1}))
            }
            ("GET", _, _) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
            ("DELETE", _, _) => StatusCode::OK.into_response(),
            _ => StatusCode::BAD_REQUEST.into_response(),
        }
    };
    let app = Router::new().route("/mcp", axum::routing::any(handle));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (url, stop)
}

#[tokio::test]
async fn a_tool_list_keeps_execution_and_unknown_members_on_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let (url, _stop) = serve(era).await;
        let client = Client::builder()
            .request_timeout(Duration::from_secs(30))
            .connect(&url)
            .await
            .unwrap();
        assert_eq!(client.era(), era);
        let tools = client.list_tools().await.unwrap();
        let [tool] = tools.as_slice() else {
            panic!("{tools:?}")
        };
        assert_eq!(tool.extra["execution"], json!({"taskSupport": "required"}));
        assert_eq!(tool.extra["x-vendor"]["since"], json!([2025, 11]));
        assert_eq!(tool.annotations.as_ref().unwrap().extra["x-cost"], "high");
        // Written back, the tool is what the server sent, member for member.
        assert_eq!(serde_json::to_value(tool).unwrap(), self::tool(), "{era:?}");
        // And a page read on its own keeps the page's own unknown member.
        let page = client.list_tools_page(None).await.unwrap();
        assert_eq!(page.extra["x-page"], 1, "{era:?}");
        client.close().await.unwrap();
    }
}
