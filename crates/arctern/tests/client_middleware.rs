//! Client middleware (`ClientBuilder::layer`) against a real Streamable HTTP server on
//! loopback: a header that reaches the server, a retry policy, request logging, and the
//! order layers run in.

use std::sync::{Arc, Mutex};

use arctern::client::Client;
use arctern::client::middleware::{Next, Request, from_fn};
use arctern::server::McpServer;
use arctern::server::extract::Args;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

/// What the server saw: each request's headers, and how many `tools/call` requests it
/// should still refuse with a bare 503.
#[derive(Default)]
struct Seen {
    headers: Vec<HeaderMap>,
    refuse_calls: usize,
}

type Shared = Arc<Mutex<Seen>>;

async fn record(
    State(seen): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    {
        let mut seen = seen.lock().unwrap();
        seen.headers.push(request.headers().clone());
        let call = request
            .headers()
            .get("mcp-method")
            .is_some_and(|m| m == "tools/call");
        if call && seen.refuse_calls > 0 {
            seen.refuse_calls -= 1;
            return (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response();
        }
    }
    next.run(request).await
}

/// An echo server behind a recording layer; stops when the returned sender drops.
async fn serve(refuse_calls: usize) -> (String, Shared, tokio::sync::oneshot::Sender<()>) {
    let server = McpServer::new("middleware-test")
        .tool(
            "echo",
            "Echoes the text.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .build()
        .unwrap();
    let seen: Shared = Arc::new(Mutex::new(Seen {
        refuse_calls,
        ..Seen::default()
    }));
    let app = axum::Router::new()
        .route_service("/mcp", server.http_service())
        .layer(axum::middleware::from_fn_with_state(seen.clone(), record));
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
    (url, seen, stop)
}

#[tokio::test]
async fn an_added_header_reaches_the_server_on_every_request() {
    let (url, seen, _stop) = serve(0).await;
    let client = Client::builder()
        .layer(from_fn(|mut request: Request, next: Next| async move {
            request
                .headers_mut()
                .insert("x-tenant", HeaderValue::from_static("acme"));
            next.run(request).await
        }))
        .connect(&url)
        .await
        .unwrap();
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("hi"));
    let seen = seen.lock().unwrap();
    let methods: Vec<_> = seen
        .headers
        .iter()
        .map(|h| h.get("mcp-method").map(|v| v.to_str().unwrap().to_owned()))
        .collect();
    // server/discover, the tool list the mirrored headers need, the call.
    assert!(methods.contains(&Some("tools/call".into())), "{methods:?}");
    assert!(methods.contains(&Some("tools/list".into())), "{methods:?}");
    for headers in &seen.headers {
        assert_eq!(headers["x-tenant"], "acme", "{headers:?}");
    }
}

#[tokio::test]
async fn a_retry_policy_sends_a_refused_request_again() {
    let (url, seen, _stop) = serve(1).await;
    let retries = Arc::new(Mutex::new(Vec::new()));
    let log = retries.clone();
    let client = Client::builder()
        .layer(from_fn(move |request: Request, next: Next| {
            let log = log.clone();
            async move {
                match next.clone().run(request.clone()).await {
                    Err(e) if e.http_status() == Some(503) => {
                        log.lock().unwrap().push(request.method());
                        next.run(request).await
                    }
                    answer => answer,
                }
            }
        }))
        .connect(&url)
        .await
        .unwrap();
    let result = client
        .call_tool("echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("again"));
    assert_eq!(*retries.lock().unwrap(), ["tools/call"]);
    assert_eq!(seen.lock().unwrap().refuse_calls, 0);

    // Without the policy the refusal reaches the caller, with its status.
    let (url, _seen, _stop) = serve(1).await;
    let plain = Client::builder().connect(&url).await.unwrap();
    let error = plain
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(error.http_status(), Some(503), "{error}");
}

#[tokio::test]
async fn layers_log_requests_and_run_last_added_first() {
    let (url, _seen, _stop) = serve(0).await;
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (inner, outer) = (lines.clone(), lines.clone());
    let client = Client::builder()
        .layer(from_fn(move |request: Request, next: Next| {
            let lines = inner.clone();
            async move {
                let line = format!(
                    "inner {} {}",
                    request.method(),
                    request.target().unwrap_or("-")
                );
                let answer = next.run(request).await;
                lines
                    .lock()
                    .unwrap()
                    .push(format!("{line} ok={}", answer.is_ok()));
                answer
            }
        }))
        .layer(from_fn(move |request: Request, next: Next| {
            let lines = outer.clone();
            async move {
                lines
                    .lock()
                    .unwrap()
                    .push(format!("outer {}", request.method()));
                next.run(request).await
            }
        }))
        .connect(&url)
        .await
        .unwrap();
    lines.lock().unwrap().clear();
    client
        .call_tool("echo", json!({"text": "log"}))
        .await
        .unwrap();
    let lines = lines.lock().unwrap().clone();
    // The tool list the mirrored headers need goes below the application's layers.
    assert_eq!(
        lines,
        ["outer tools/call", "inner tools/call echo ok=true"],
        "{lines:?}"
    );
}
