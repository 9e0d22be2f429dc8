//! In-process checks of `McpServer` through the engine, without a transport.

use arctern::server::connection::{MessageKind, Reply, RequestOrigin, TransportKind};
use arctern::server::extract::Args;
use arctern::server::{Json, McpServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    total: i64,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

async fn call(
    server: &arctern::server::Server<arctern::server::McpHandler>,
    body: Value,
) -> (u16, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    match server
        .handle_bytes(&bytes, RequestOrigin::new(TransportKind::Memory))
        .await
    {
        Reply::Message { kind, body } => {
            let status = match kind {
                MessageKind::Invalid => 400,
                MessageKind::UnknownMethod => 404,
                _ => 200,
            };
            (status, serde_json::from_slice(&body).unwrap())
        }
        other => panic!("unexpected reply {other:?}"),
    }
}

#[tokio::test]
async fn tools_list_and_call() {
    let server = McpServer::new("smoke")
        .version("1.2.3")
        .tool(
            "echo",
            "Echoes.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .tool("add", "Adds.", |Args(a): Args<AddArgs>| async move {
            Json(Sum { total: a.a + a.b })
        })
        .build()
        .unwrap();

    let (status, list) = call(
        &server,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": meta()}}),
    )
    .await;
    assert_eq!(status, 200);
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "echo");
    assert_eq!(tools[0]["inputSchema"]["type"], "object");
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["text"]["description"],
        "The text to echo."
    );
    assert_eq!(
        tools[1]["outputSchema"]["properties"]["total"]["type"],
        "integer"
    );
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");
    assert_eq!(
        list["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        "1.2.3"
    );

    let (_, r) = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta": meta()}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    assert_eq!(r["id"], 2);

    let (_, r) = call(&server, json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta": meta()}})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"total": 5}));

    let (_, r) = call(&server, json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":"x"},"_meta": meta()}})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");

    let (status, r) = call(&server, json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","_meta": meta()}})).await;
    assert_eq!((status, r["error"]["code"].as_i64()), (200, Some(-32602)));

    let (status, r) = call(
        &server,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}),
    )
    .await;
    assert_eq!((status, r["error"]["code"].as_i64()), (400, Some(-32602)));
    assert_eq!(r["id"], 6);

    let (status, r) = call(
        &server,
        json!({"jsonrpc":"2.0","id":7,"method":"prompts/list","params":{"_meta": meta()}}),
    )
    .await;
    assert_eq!((status, r["error"]["code"].as_i64()), (404, Some(-32601)));

    let (status, r) = call(
        &server,
        json!({"jsonrpc":"2.0","id":8,"method":"server/discover","params":{"_meta": meta()}}),
    )
    .await;
    assert_eq!(status, 200);
    println!("{r}");
    assert_eq!(r["result"]["supportedVersions"], json!(["2026-07-28"]));
}

#[tokio::test]
async fn dropping_the_reply_cancels_the_request_token() {
    use std::sync::{Arc, Mutex};
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let server = McpServer::new("cancel")
        .tool(
            "wait",
            "Waits forever.",
            move |ctx: arctern::server::RequestContext| {
                let tx = tx.clone();
                async move {
                    let token = ctx.cancellation().clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        if let Some(tx) = tx.lock().unwrap().take() {
                            let _ = tx.send(());
                        }
                    });
                    std::future::pending::<()>().await;
                    String::new()
                }
            },
        )
        .build()
        .unwrap();
    let body = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"wait","_meta": meta()}}))
    .unwrap();
    let call = server.handle_bytes(&body, RequestOrigin::new(TransportKind::Memory));
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(50), call)
            .await
            .is_err()
    );
    tokio::time::timeout(std::time::Duration::from_secs(5), rx)
        .await
        .expect("the spawned work hears the cancellation")
        .unwrap();
}
