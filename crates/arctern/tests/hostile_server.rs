//! The client against small hostile servers on 127.0.0.1 (issue 19, findings 12 to 16): a
//! legacy server that forgets the session on `logging/setLevel`, rounds that ask too much,
//! silence, foreign progress tokens, logs below the client's level, requests outside any
//! call, `retry: 0`, endless pages, capabilities the client never declared, and a stdio
//! child's environment. Each server stops with its test (a dropped sender ends it).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::client::{Client, ClientBuilder, InputRequiredError, InputRequiredReason};
use arctern::types::elicitation::ElicitResult;
use arctern::types::logging::LoggingLevel;
use arctern::types::sampling::CreateMessageResult;
use arctern::{Era, ErrorKind};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Bound on every wait, so that a broken client fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(30);

/// One HTTP request as the hostile server sees it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    body: Value,
}

impl Seen {
    fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
    fn id(&self) -> Value {
        self.body["id"].clone()
    }
}

type Reply = Pin<Box<dyn Future<Output = Response> + Send>>;
type Script = Arc<dyn Fn(Seen) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Hostile {
    script: Script,
    log: Arc<Mutex<Vec<Seen>>>,
}

async fn handle(State(h): State<Hostile>, method: Method, body: Bytes) -> Response {
    let seen = Seen {
        method,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    h.log.lock().unwrap().push(seen.clone());
    (h.script)(seen).await
}

/// A server on 127.0.0.1 that answers every request with `script`; it stops when the
/// returned sender is dropped.
async fn hostile<F, Fut>(script: F) -> (String, Arc<Mutex<Vec<Seen>>>, oneshot::Sender<()>)
where
    F: Fn(Seen) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let log = Arc::new(Mutex::new(Vec::new()));
    let state = Hostile {
        script: Arc::new(move |seen| Box::pin(script(seen))),
        log: log.clone(),
    };
    let app = Router::new()
        .route("/mcp", axum::routing::any(handle))
        .with_state(state);
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
    (url, log, stop)
}

fn json_reply(body: Value) -> Response {
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An SSE response with these messages, then the end of the stream.
fn sse(messages: &[Value]) -> Response {
    let mut text = String::new();
    for m in messages {
        text.push_str(&format!("data: {m}\n\n"));
    }
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

/// An SSE response fed by a channel (kept open while the sender lives).
fn sse_channel() -> (mpsc::UnboundedSender<Value>, Response) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let stream = futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|m| m.map(|m| Ok::<_, Infallible>(Bytes::from(format!("data: {m}\n\n")))))
    });
    let response = Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap();
    (tx, response)
}

fn initialize_result(id: Value, version: &str, capabilities: Value) -> Response {
    Response::builder()
        .header("content-type", "application/json")
        .header("mcp-session-id", "s-1")
        .body(Body::from(
            result(
                id,
                json!({"protocolVersion": version, "capabilities": capabilities,
                    "serverInfo": {"name": "hostile", "version": "0"}}),
            )
            .to_string(),
        ))
        .unwrap()
}

/// The answers of a modern server's housekeeping: discovery and an empty tool list.
fn modern_basics(seen: &Seen) -> Option<Response> {
    match seen.rpc() {
        "server/discover" => Some(json_reply(result(
            seen.id(),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo":
                    {"name": "hostile", "version": "0"}}}),
        ))),
        "tools/list" => Some(json_reply(result(
            seen.id(),
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        ))),
        _ => None,
    }
}

fn count(log: &Mutex<Vec<Seen>>, rpc: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| s.rpc() == rpc)
        .count()
}

fn base() -> ClientBuilder {
    Client::builder().request_timeout(PATIENCE)
}

// ------------------------------------------------------------------ finding 12

/// A legacy server that answers `logging/setLevel` (and, with `always_404`, everything
/// after `initialize`) with a bare 404.
async fn forgetful(always_404: bool) -> (String, Arc<Mutex<Vec<Seen>>>, oneshot::Sender<()>) {
    hostile(move |seen| async move {
        match (seen.method.as_str(), seen.rpc()) {
            ("POST", "server/discover") => json_reply(json!({"jsonrpc": "2.0", "id": seen.id(),
                "error": {"code": -32601, "message": "Method not found"}})),
            ("POST", "initialize") => {
                initialize_result(seen.id(), "2025-11-25", json!({"tools": {}, "logging": {}}))
            }
            ("POST", "notifications/initialized") => StatusCode::ACCEPTED.into_response(),
            ("GET", _) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
            ("DELETE", _) => StatusCode::OK.into_response(),
            ("POST", "logging/setLevel") => StatusCode::NOT_FOUND.into_response(),
            ("POST", _) if always_404 => StatusCode::NOT_FOUND.into_response(),
            ("POST", "tools/list") => json_reply(result(seen.id(), json!({"tools": []}))),
            _ => StatusCode::BAD_REQUEST.into_response(),
        }
    })
    .await
}

/// Before: `initialize` → `setLevel` → 404 → `initialize` → … until the stack overflowed
/// and the process aborted.
#[tokio::test]
async fn a_404_to_set_level_does_not_reinitialize_without_end() {
    let (url, log, _stop) = forgetful(false).await;
    let client = base()
        .on_log(LoggingLevel::Info, |_| {})
        .connect(&url)
        .await
        .expect("the session opens although setLevel failed");
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(count(&log, "initialize"), 1);
    assert_eq!(count(&log, "logging/setLevel"), 1);
    assert!(client.list_tools().await.unwrap().is_empty());
    assert_eq!(count(&log, "initialize"), 1);
}

/// A server that forgets the session on every request: one renewal, then a clear error.
#[tokio::test]
async fn a_server_that_forgets_every_session_gets_one_renewal() {
    let (url, log, _stop) = forgetful(true).await;
    let client = base()
        .on_log(LoggingLevel::Info, |_| {})
        .connect(&url)
        .await
        .unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Transport);
    assert!(
        error
            .to_string()
            .contains("forgot the legacy session again"),
        "{error}"
    );
    // The first session, and the one renewal.
    assert_eq!(count(&log, "initialize"), 2);
    assert_eq!(count(&log, "tools/list"), 2);
}

// ------------------------------------------------------------------ finding 13

/// A modern server whose tool call asks `n` sampling questions in its first round, and
/// completes once answered.
async fn asking(n: usize) -> (String, Arc<Mutex<Vec<Seen>>>, oneshot::Sender<()>) {
    hostile(move |seen| async move {
        if let Some(r) = modern_basics(&seen) {
            return r;
        }
        let params = &seen.body["params"];
        if seen.rpc() != "tools/call" {
            return StatusCode::BAD_REQUEST.into_response();
        }
        if let Some(answers) = params["inputResponses"].as_object() {
            return json_reply(result(
                seen.id(),
                json!({"content": [{"type": "text", "text": format!("{} answers", answers.len())}]}),
            ));
        }
        let requests: serde_json::Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("s{i}"),
                    json!({"method": "sampling/createMessage", "params": {"messages": [
                        {"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 10}}),
                )
            })
            .collect();
        json_reply(result(
            seen.id(),
            json!({"resultType": "input_required", "inputRequests": requests}),
        ))
    })
    .await
}

/// Counts sampling handler runs: how many ran, and the most at once.
#[derive(Default)]
struct Gauge {
    running: AtomicUsize,
    peak: AtomicUsize,
    total: AtomicUsize,
}

fn sampling_client(gauge: &Arc<Gauge>) -> ClientBuilder {
    let gauge = gauge.clone();
    base().discover(false).on_sample(move |_| {
        let gauge = gauge.clone();
        async move {
            let now = gauge.running.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.peak.fetch_max(now, Ordering::SeqCst);
            gauge.total.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            gauge.running.fetch_sub(1, Ordering::SeqCst);
            Ok(CreateMessageResult::text("m", "ok"))
        }
    })
}

/// Before: every question of a round ran at once, however many (100 sampling processes).
#[tokio::test]
async fn a_round_of_sixteen_questions_is_answered_four_at_a_time() {
    assert_eq!(arctern::client::DEFAULT_MAX_INPUT_REQUESTS, 16);
    assert_eq!(arctern::client::DEFAULT_MAX_CONCURRENT_INPUTS, 4);
    let (url, _log, _stop) = asking(16).await;
    let gauge = Arc::new(Gauge::default());
    let client = sampling_client(&gauge).connect(&url).await.unwrap();
    let done = client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(
        serde_json::to_value(&done.content).unwrap()[0]["text"],
        "16 answers"
    );
    assert_eq!(gauge.total.load(Ordering::SeqCst), 16);
    let peak = gauge.peak.load(Ordering::SeqCst);
    assert!((1..=4).contains(&peak), "{peak} ran at once");
}

#[tokio::test]
async fn a_round_of_seventeen_questions_fails_and_answers_none() {
    let (url, log, _stop) = asking(17).await;
    let gauge = Arc::new(Gauge::default());
    let client = sampling_client(&gauge).connect(&url).await.unwrap();
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputRequired);
    let details = InputRequiredError::of(&error).unwrap();
    assert_eq!(
        details.reason(),
        &InputRequiredReason::TooManyInputRequests { count: 17, max: 16 }
    );
    assert_eq!(gauge.total.load(Ordering::SeqCst), 0);
    assert_eq!(count(&log, "tools/call"), 1, "no retry was sent");

    // Configurable both ways.
    let (url, _log, _stop) = asking(17).await;
    let gauge = Arc::new(Gauge::default());
    let client = sampling_client(&gauge)
        .max_input_requests(20)
        .max_concurrent_inputs(1)
        .connect(&url)
        .await
        .unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(gauge.total.load(Ordering::SeqCst), 17);
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 1);
}

/// A legacy server that asks 40 sampling questions at once on one call's stream: a few run
/// at a time and those beyond the cap get an error, not a handler.
#[tokio::test]
async fn a_legacy_flood_of_questions_on_a_call_is_capped() {
    let (answers_tx, mut answers_rx) = mpsc::unbounded_channel::<Value>();
    let answers_tx = Arc::new(answers_tx);
    let (url, _log, _stop) = hostile(move |seen| {
        let answers_tx = answers_tx.clone();
        async move {
            match (seen.method.as_str(), seen.rpc()) {
                ("POST", "initialize") => {
                    initialize_result(seen.id(), "2025-11-25", json!({"tools": {}}))
                }
                ("GET", _) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
                ("DELETE", _) => StatusCode::OK.into_response(),
                ("POST", "tools/call") => {
                    let (tx, response) = sse_channel();
                    for i in 0..40 {
                        let _ = tx.send(json!({"jsonrpc": "2.0", "id": 1000 + i,
                            "method": "sampling/createMessage", "params": {"messages": [
                                {"role": "user", "content": {"type": "text", "text": "hi"}}],
                                "maxTokens": 10}}));
                    }
                    let id = seen.id();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(600)).await;
                        let _ = tx.send(result(id, json!({"content": []})));
                    });
                    response
                }
                ("POST", "") => {
                    let _ = answers_tx.send(seen.body.clone());
                    StatusCode::ACCEPTED.into_response()
                }
                ("POST", _) if seen.body.get("id").is_none() => {
                    StatusCode::ACCEPTED.into_response()
                }
                _ => StatusCode::BAD_REQUEST.into_response(),
            }
        }
    })
    .await;
    let gauge = Arc::new(Gauge::default());
    let client = sampling_client(&gauge)
        .era(Era::Legacy)
        .connect(&url)
        .await
        .unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    let peak = gauge.peak.load(Ordering::SeqCst);
    assert!((1..=4).contains(&peak), "{peak} ran at once");
    let mut answered = 0;
    let mut refused = 0;
    while answered + refused < 40 {
        let answer = tokio::time::timeout(PATIENCE, answers_rx.recv())
            .await
            .unwrap()
            .unwrap();
        if answer.get("result").is_some() {
            answered += 1;
        } else {
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
            refused += 1;
        }
    }
    assert!(refused > 0, "some of the 40 were refused");
    assert!(answered <= 40 && answered == gauge.total.load(Ordering::SeqCst));
}

// ------------------------------------------------------------------ finding 15

/// Before: no default limit; a silent server hung the call forever.
#[tokio::test]
async fn a_silent_server_is_given_up_on() {
    assert_eq!(
        arctern::client::DEFAULT_IDLE_RESPONSE_TIMEOUT,
        Duration::from_secs(60)
    );
    let (url, _log, _stop) = hostile(|seen| async move {
        if let Some(r) = modern_basics(&seen) {
            return r;
        }
        // Headers never come.
        std::future::pending::<()>().await;
        unreachable!()
    })
    .await;
    let client = Client::builder()
        .discover(false)
        .idle_response_timeout(Some(Duration::from_millis(300)))
        .connect(&url)
        .await
        .unwrap();
    let error = tokio::time::timeout(PATIENCE, client.call_tool("t", json!({})))
        .await
        .expect("the client gave up by itself")
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
}

/// A call that keeps reporting progress is not cut off; silence after it is.
#[tokio::test]
async fn progress_keeps_a_call_alive_and_silence_ends_it() {
    let (url, _log, _stop) = hostile(|seen| async move {
        if let Some(r) = modern_basics(&seen) {
            return r;
        }
        let token = seen.body["params"]["_meta"]["progressToken"].clone();
        let (tx, response) = sse_channel();
        let id = seen.id();
        let finish = seen.body["params"]["arguments"]["finish"] == true;
        tokio::spawn(async move {
            for i in 0..8 {
                tokio::time::sleep(Duration::from_millis(150)).await;
                let _ = tx.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i}}));
            }
            if finish {
                let _ = tx.send(result(id, json!({"content": []})));
            }
            // Otherwise silence, with the stream open.
            tokio::time::sleep(PATIENCE * 2).await;
            drop(tx);
        });
        response
    })
    .await;
    let ticks = Arc::new(AtomicUsize::new(0));
    let seen = ticks.clone();
    let client = Client::builder()
        .discover(false)
        .idle_response_timeout(Some(Duration::from_millis(800)))
        .on_progress(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .connect(&url)
        .await
        .unwrap();
    // 8 × 150 ms of progress is longer than the 800 ms limit: each message resets it.
    client
        .call_tool("t", json!({"finish": true}))
        .await
        .unwrap();
    assert_eq!(ticks.load(Ordering::SeqCst), 8);
    let error = tokio::time::timeout(PATIENCE, client.call_tool("t", json!({"finish": false})))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
}

/// A legacy server that never answers the `notifications/initialized` POST: connecting
/// fails instead of hanging.
#[tokio::test]
async fn a_legacy_handshake_that_stalls_is_given_up_on() {
    let (url, _log, _stop) = hostile(|seen| async move {
        match seen.rpc() {
            "initialize" => initialize_result(seen.id(), "2025-11-25", json!({"tools": {}})),
            _ if seen.method == Method::DELETE => StatusCode::OK.into_response(),
            _ => {
                std::future::pending::<()>().await;
                unreachable!()
            }
        }
    })
    .await;
    let connected = tokio::time::timeout(
        PATIENCE,
        Client::builder()
            .era(Era::Legacy)
            .idle_response_timeout(Some(Duration::from_millis(300)))
            .connect(&url),
    )
    .await
    .expect("connecting gave up by itself");
    assert_eq!(connected.unwrap_err().kind(), ErrorKind::Timeout);
}

// ------------------------------------------------------------------ finding 16

/// Before: every progress notification reached the call's callback, whatever its token,
/// and log messages below the client's level were delivered.
#[tokio::test]
async fn foreign_progress_tokens_and_quiet_logs_are_dropped() {
    let (url, _log, _stop) = hostile(|seen| async move {
        if let Some(r) = modern_basics(&seen) {
            return r;
        }
        let token = seen.body["params"]["_meta"]["progressToken"].clone();
        let mut messages = Vec::new();
        for i in 0..50 {
            messages.push(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": format!("tok{i}"), "progress": 1}}));
        }
        messages.push(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 999_999, "progress": 1}}));
        messages.push(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2}}));
        messages.push(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "chatter"}}));
        messages.push(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "error", "data": "broken"}}));
        messages.push(result(seen.id(), json!({"content": []})));
        sse(&messages)
    })
    .await;
    let progress = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (p, l) = (progress.clone(), logs.clone());
    let client = base()
        .discover(false)
        .on_progress(move |n| p.lock().unwrap().push(n.progress_token))
        .on_log(LoggingLevel::Warning, move |m| {
            l.lock().unwrap().push(m.data)
        })
        .connect(&url)
        .await
        .unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(
        progress.lock().unwrap().len(),
        1,
        "only the call's own token"
    );
    assert_eq!(*logs.lock().unwrap(), [json!("broken")]);
}

/// A legacy HTTP server with the client's handlers but requests that belong to no call:
/// on the `GET` stream, or while only `tools/list` is in flight.
#[tokio::test]
async fn requests_outside_any_call_get_invalid_params() {
    let (answers_tx, mut answers_rx) = mpsc::unbounded_channel::<Value>();
    let answers_tx = Arc::new(answers_tx);
    let (url, _log, _stop) = hostile(move |seen| {
        let answers_tx = answers_tx.clone();
        async move {
            match (seen.method.as_str(), seen.rpc()) {
                ("POST", "initialize") => {
                    initialize_result(seen.id(), "2025-11-25", json!({"tools": {}}))
                }
                ("GET", _) => {
                    let (tx, response) = sse_channel();
                    let _ = tx.send(json!({"jsonrpc": "2.0", "id": 1, "method":
                        "sampling/createMessage", "params": {"messages": [{"role": "user",
                        "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}));
                    let _ = tx.send(json!({"jsonrpc": "2.0", "id": 2, "method": "roots/list"}));
                    let _ = tx.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
                    tokio::spawn(async move {
                        tokio::time::sleep(PATIENCE).await;
                        drop(tx);
                    });
                    response
                }
                ("DELETE", _) => StatusCode::OK.into_response(),
                ("POST", "") => {
                    let _ = answers_tx.send(seen.body.clone());
                    StatusCode::ACCEPTED.into_response()
                }
                ("POST", _) if seen.body.get("id").is_none() => {
                    StatusCode::ACCEPTED.into_response()
                }
                ("POST", "tools/list") => json_reply(result(seen.id(), json!({"tools": []}))),
                _ => StatusCode::BAD_REQUEST.into_response(),
            }
        }
    })
    .await;
    let asked = Arc::new(AtomicUsize::new(0));
    let (a, b) = (asked.clone(), asked.clone());
    let client = base()
        .era(Era::Legacy)
        .on_sample(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(CreateMessageResult::text("m", "x")) }
        })
        .on_roots(move |_| {
            b.fetch_add(1, Ordering::SeqCst);
            async { Ok(arctern::types::roots::ListRootsResult::new(vec![])) }
        })
        .connect(&url)
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    let mut by_id = std::collections::BTreeMap::new();
    while by_id.len() < 3 {
        let answer = tokio::time::timeout(PATIENCE, answers_rx.recv())
            .await
            .unwrap()
            .unwrap();
        by_id.insert(answer["id"].as_i64().unwrap(), answer);
    }
    assert_eq!(by_id[&1]["error"]["code"], -32602, "{}", by_id[&1]);
    assert_eq!(by_id[&2]["error"]["code"], -32602, "{}", by_id[&2]);
    assert_eq!(by_id[&3]["result"], json!({}), "ping is answered");
    assert_eq!(asked.load(Ordering::SeqCst), 0, "no handler ran");
}

/// A 2025-era server may ask on the session's `GET` stream on behalf of a call (the
/// official conformance suite's elicitation scenario does): while a `tools/call` is in
/// flight, such a request is answered, and credited to that call.
#[tokio::test]
async fn a_request_on_the_get_stream_during_a_call_is_answered() {
    let (answers_tx, answers_rx) = mpsc::unbounded_channel::<Value>();
    let answers_rx = Arc::new(tokio::sync::Mutex::new(answers_rx));
    let (get_tx, get_rx) = mpsc::unbounded_channel::<mpsc::UnboundedSender<Value>>();
    let get_rx = Arc::new(tokio::sync::Mutex::new(get_rx));
    let (get_tx, answers_tx) = (Arc::new(get_tx), Arc::new(answers_tx));
    let (url, _log, _stop) = hostile(move |seen| {
        let (get_tx, get_rx) = (get_tx.clone(), get_rx.clone());
        let (answers_tx, answers_rx) = (answers_tx.clone(), answers_rx.clone());
        async move {
            match (seen.method.as_str(), seen.rpc()) {
                ("POST", "initialize") => {
                    initialize_result(seen.id(), "2025-11-25", json!({"tools": {}}))
                }
                ("GET", _) => {
                    let (tx, response) = sse_channel();
                    let _ = get_tx.send(tx);
                    response
                }
                ("DELETE", _) => StatusCode::OK.into_response(),
                ("POST", "") => {
                    let _ = answers_tx.send(seen.body.clone());
                    StatusCode::ACCEPTED.into_response()
                }
                ("POST", "tools/call") => {
                    let (tx, response) = sse_channel();
                    let id = seen.id();
                    tokio::spawn(async move {
                        // Asks on the GET stream, then answers the call with the answer.
                        let stream = get_rx.lock().await.recv().await.unwrap();
                        let _ = stream.send(json!({"jsonrpc": "2.0", "id": 7,
                            "method": "elicitation/create", "params": {"mode": "form",
                            "message": "Sure?", "requestedSchema": {"type": "object",
                            "properties": {"ok": {"type": "boolean"}}}}}));
                        let answer = answers_rx.lock().await.recv().await.unwrap();
                        let text = answer.to_string();
                        let _ = tx.send(result(
                            id,
                            json!({"content": [{"type": "text", "text": text}]}),
                        ));
                    });
                    response
                }
                ("POST", _) => StatusCode::ACCEPTED.into_response(),
                _ => StatusCode::BAD_REQUEST.into_response(),
            }
        }
    })
    .await;
    let asked_by = Arc::new(Mutex::new(Vec::new()));
    let seen = asked_by.clone();
    let client = base()
        .era(Era::Legacy)
        .on_elicit(move |question| {
            seen.lock()
                .unwrap()
                .push(question.origin().target().to_owned());
            async { Ok(ElicitResult::accept([("ok", true)])) }
        })
        .connect(&url)
        .await
        .unwrap();
    let result = tokio::time::timeout(PATIENCE, client.call_tool("asks", json!({})))
        .await
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["action"], "accept", "{answer}");
    assert_eq!(answer["result"]["content"]["ok"], true, "{answer}");
    assert_eq!(*asked_by.lock().unwrap(), ["asks"], "credited to the call");
}

/// Before: `retry: 0` and one event per connection made the client reconnect at once, for
/// ever (3 598 GETs in 5 s).
#[tokio::test]
async fn retry_zero_does_not_storm() {
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    let (url, _log, _stop) = hostile(move |seen| {
        let counted = counted.clone();
        async move {
            match (seen.method.as_str(), seen.rpc()) {
                ("POST", "initialize") => {
                    initialize_result(seen.id(), "2025-11-25", json!({"tools": {}}))
                }
                ("GET", _) => {
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from(format!(
                            "retry: 0\nid: {n}\ndata: {}\n\n",
                            json!({"jsonrpc": "2.0",
                                "method": "notifications/tools/list_changed"})
                        )))
                        .unwrap()
                }
                ("DELETE", _) => StatusCode::OK.into_response(),
                _ => StatusCode::ACCEPTED.into_response(),
            }
        }
    })
    .await;
    let client = base().era(Era::Legacy).connect(&url).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = gets.load(Ordering::SeqCst);
    // A 250 ms floor, doubled for each resumption that brought one message: 4 or 5 in 2 s.
    assert!((1..=8).contains(&n), "{n} GETs in 2 s");
    client.close().await.unwrap();
}

/// Before: 10 000 pages of any size were accepted (8 GB of tools in 40 s).
#[tokio::test]
async fn endless_pages_stop_at_the_list_budget() {
    let (url, log, _stop) = hostile(|seen| async move {
        let page = seen.body["params"]["cursor"]
            .as_str()
            .and_then(|c| c.trim_start_matches('c').parse::<u64>().ok())
            .unwrap_or(0);
        let tools: Vec<Value> = (0..1000)
            .map(|i| json!({"name": format!("t{page}-{i}"), "inputSchema": {"type": "object"}}))
            .collect();
        json_reply(result(
            seen.id(),
            json!({"tools": tools, "nextCursor": format!("c{}", page + 1)}),
        ))
    })
    .await;
    let client = base()
        .discover(false)
        .list_budget(5_000, 64 << 20)
        .connect(&url)
        .await
        .unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert!(error.to_string().contains("budget"), "{error}");
    assert_eq!(count(&log, "tools/list"), 6);

    let client = base()
        .discover(false)
        .list_budget(usize::MAX, 200_000)
        .connect(&url)
        .await
        .unwrap();
    assert!(client.list_tools().await.is_err());
    assert!(count(&log, "tools/list") <= 6 + 5, "bytes bound it too");
}

/// Before: a 2025-06-18 server could send URL-mode elicitations and sampling with tools,
/// which the client removed from what it declared.
#[tokio::test]
async fn undeclared_capabilities_are_refused_on_2025_06_18() {
    let (answers_tx, mut answers_rx) = mpsc::unbounded_channel::<Value>();
    let answers_tx = Arc::new(answers_tx);
    let (url, _log, _stop) = hostile(move |seen| {
        let answers_tx = answers_tx.clone();
        async move {
            match (seen.method.as_str(), seen.rpc()) {
                ("POST", "initialize") => {
                    initialize_result(seen.id(), "2025-06-18", json!({"tools": {}}))
                }
                ("GET", _) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
                ("DELETE", _) => StatusCode::OK.into_response(),
                ("POST", "tools/call") => {
                    let (tx, response) = sse_channel();
                    let _ = tx.send(json!({"jsonrpc": "2.0", "id": 1,
                        "method": "elicitation/create", "params": {"mode": "url",
                        "message": "m", "url": "https://example.com/", "elicitationId": "e"}}));
                    let _ = tx.send(json!({"jsonrpc": "2.0", "id": 2,
                        "method": "sampling/createMessage", "params": {"messages": [],
                        "maxTokens": 5, "tools": [{"name": "x",
                        "inputSchema": {"type": "object"}}]}}));
                    let id = seen.id();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        let _ = tx.send(result(id, json!({"content": []})));
                    });
                    response
                }
                ("POST", "") => {
                    let _ = answers_tx.send(seen.body.clone());
                    StatusCode::ACCEPTED.into_response()
                }
                _ => StatusCode::ACCEPTED.into_response(),
            }
        }
    })
    .await;
    let asked = Arc::new(AtomicUsize::new(0));
    let (a, b) = (asked.clone(), asked.clone());
    let client = base()
        .era(Era::Legacy)
        .elicitation_url(true)
        .sampling_tools(true)
        .on_elicit(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(ElicitResult::accept_url()) }
        })
        .on_sample(move |_| {
            b.fetch_add(1, Ordering::SeqCst);
            async { Ok(CreateMessageResult::text("m", "x")) }
        })
        .connect(&url)
        .await
        .unwrap();
    assert_eq!(client.protocol_version(), "2025-06-18");
    client.call_tool("t", json!({})).await.unwrap();
    for _ in 0..2 {
        let answer = tokio::time::timeout(PATIENCE, answers_rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

/// Before: a stdio server inherited the whole environment (tokens, cloud keys).
#[cfg(unix)]
#[tokio::test]
async fn a_stdio_child_gets_only_the_allowed_environment() {
    use arctern::client::StdioCommand;
    // Answers the first request with an error whose message lists the variables it sees.
    let script = r#"read line; names=$(env | cut -d= -f1 | sort | tr '\n' ' '); printf '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"%s"}}\n' "$names"; sleep 5"#;
    let client = Client::builder()
        .discover(false)
        .connect_stdio(
            StdioCommand::new("sh")
                .args(["-c", script])
                .env("EXTRA_FOR_THE_SERVER", "1"),
        )
        .await
        .unwrap();
    let error = client.list_tools().await.unwrap_err();
    let names: Vec<String> = error
        .protocol_error()
        .expect("the script's error")
        .message
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert!(
        names.iter().any(|n| n == "EXTRA_FOR_THE_SERVER"),
        "{names:?}"
    );
    // cargo sets these for every test process; the child must not see them.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
    let allowed = [
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "EXTRA_FOR_THE_SERVER",
        // Set by the shell itself.
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
    ];
    for name in &names {
        assert!(allowed.contains(&name.as_str()), "{name} leaked: {names:?}");
    }
    client.close().await.unwrap();
}
