//! The client middleware examples against a real HTTP server on 127.0.0.1 that wants a
//! bearer token and is unavailable for the first call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::client::Client;
use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern_examples::client_layers::{bearer, log_requests, retry_unavailable};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// How many `tools/call` requests the server still refuses with 503.
type Refusals = Arc<Mutex<u32>>;

async fn guard(
    State(refusals): State<Refusals>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let authorized = request
        .headers()
        .get("authorization")
        .is_some_and(|v| v == "Bearer s3cret");
    if !authorized {
        return (StatusCode::UNAUTHORIZED, "no token").into_response();
    }
    let call = request
        .headers()
        .get("mcp-method")
        .is_some_and(|m| m == "tools/call");
    {
        let mut left = refusals.lock().unwrap();
        if call && *left > 0 {
            *left -= 1;
            return (StatusCode::SERVICE_UNAVAILABLE, "warming up").into_response();
        }
    }
    next.run(request).await
}

async fn serve(refusals: u32) -> (String, Refusals, tokio::sync::oneshot::Sender<()>) {
    let server = McpServer::new("guarded")
        .tool(
            "echo",
            "Echoes.",
            |Args(t): Args<Text>| async move { t.text },
        )
        .build()
        .unwrap();
    let refusals: Refusals = Arc::new(Mutex::new(refusals));
    let app = axum::Router::new()
        .route_service("/mcp", server.http_service())
        .layer(axum::middleware::from_fn_with_state(
            refusals.clone(),
            guard,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (url, refusals, stop)
}

#[tokio::test]
async fn the_token_and_the_retry_get_the_call_through() {
    let (url, refusals, _stop) = serve(2).await;
    let client = Client::builder()
        .layer(bearer("s3cret"))
        .layer(retry_unavailable(3, Duration::from_millis(10)))
        .layer(log_requests())
        .connect(&url)
        .await
        .unwrap();
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("hi"));
    assert_eq!(*refusals.lock().unwrap(), 0);
}

#[tokio::test]
async fn without_the_layers_the_server_refuses() {
    let (url, _refusals, _stop) = serve(0).await;
    let error = Client::builder().connect(&url).await.unwrap_err();
    assert_eq!(error.http_status(), Some(401), "{error}");

    // With the token but no retry policy, the 503 reaches the caller.
    let (url, _refusals, _stop) = serve(1).await;
    let client = Client::builder()
        .layer(bearer("s3cret"))
        .connect(&url)
        .await
        .unwrap();
    let error = client
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(error.http_status(), Some(503), "{error}");
}
