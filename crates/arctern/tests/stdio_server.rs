//! The stdio server transport, driven through in-memory pipes.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arctern::server::extract::Args;
use arctern::server::{McpHandler, McpServer, RequestContext, Server, ToolSpec};
use arctern::transport::stdio::StdioServer;
use arctern_fixtures::schema_check::validate_for;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// How long a test waits for a message that should come.
const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Steps {
    steps: u32,
}

/// Observes tool futures: how many started, and how many were dropped before finishing.
#[derive(Clone, Default)]
struct Probe {
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl Probe {
    fn guard(&self) -> ProbeGuard {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
        ProbeGuard {
            probe: self.clone(),
            armed: true,
        }
    }

    async fn wait_for(&self, what: impl Fn(&Probe) -> bool) {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let notified = self.changed.notified();
                if what(self) {
                    return;
                }
                notified.await;
            }
        })
        .await
        .expect("the probe reached the expected state");
    }

    fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Counts a drop unless disarmed (the tool finished normally).
struct ProbeGuard {
    probe: Probe,
    armed: bool,
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        if self.armed {
            self.probe.dropped.fetch_add(1, Ordering::SeqCst);
            self.probe.changed.notify_waiters();
        }
    }
}

fn build(probe: &Probe) -> Server<McpHandler> {
    let hang_probe = probe.clone();
    let sleep_probe = probe.clone();
    McpServer::new("stdio-test")
        .version("0.0.1")
        .tool(
            "echo",
            "Echoes.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .tool(
            "sleep",
            "Sleeps, then answers.",
            move |Args(s): Args<Sleep>| {
                let probe = sleep_probe.clone();
                async move {
                    let mut guard = probe.guard();
                    tokio::time::sleep(Duration::from_millis(s.ms)).await;
                    guard.armed = false;
                    format!("slept {}", s.ms)
                }
            },
        )
        .tool("hang", "Never answers.", move || {
            let probe = hang_probe.clone();
            async move {
                let _guard = probe.guard();
                std::future::pending::<()>().await;
                "unreachable"
            }
        })
        .tool("boom", "Panics.", || async {
            if true {
                panic!("boom");
            }
            "unreachable"
        })
        .tool(
            "steps",
            "Reports progress.",
            |ctx: RequestContext, Args(s): Args<Steps>| async move {
                for i in 1..=s.steps {
                    ctx.progress(f64::from(i), Some(f64::from(s.steps)), Some("working"))
                        .await;
                    tokio::task::yield_now().await;
                }
                "done"
            },
        )
        .build()
        .expect("the test server builds")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.into(),
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta()}
    })
}

fn cancel(id: impl Into<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id.into(), "reason": "test"}
    })
}

fn listen(id: impl Into<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.into(),
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta()}
    })
}

/// Validates an outgoing message against the 2026-07-28 schema.
fn check(message: &Value, def: &str) {
    if let Err(e) = validate_for("2026-07-28", def, message) {
        panic!("{message} is not a valid {def}: {e}");
    }
}

/// Validates any outgoing message by its shape.
fn check_any(message: &Value) {
    let def = if message.get("error").is_some() {
        "JSONRPCErrorResponse"
    } else if message.get("result").is_some() {
        "JSONRPCResultResponse"
    } else {
        "JSONRPCNotification"
    };
    check(message, def);
}

/// The client end of a served connection.
struct Client {
    stdin: Option<DuplexStream>,
    stdout: Lines<BufReader<DuplexStream>>,
    served: JoinHandle<arctern::Result<()>>,
}

impl Client {
    fn start(server: Server<McpHandler>) -> Client {
        Client::start_with(StdioServer::new(server))
    }

    fn start_with(stdio: StdioServer<McpHandler>) -> Client {
        let (client_in, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, client_out) = tokio::io::duplex(64 * 1024);
        let served = tokio::spawn(stdio.serve_io(server_in, server_out));
        Client {
            stdin: Some(client_in),
            stdout: BufReader::new(client_out).lines(),
            served,
        }
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("a message within the time limit")
            .expect("the output is readable")
            .expect("the output is still open");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the output line {line:?} is not JSON: {e}"));
        check_any(&message);
        message
    }

    /// Asserts that nothing is written for a while.
    async fn quiet(&mut self, ms: u64) {
        if let Ok(line) =
            tokio::time::timeout(Duration::from_millis(ms), self.stdout.next_line()).await
        {
            panic!("unexpected output: {line:?}");
        }
    }

    /// Closes stdin, reads everything left, and waits for serving to end.
    async fn finish(mut self) -> (Vec<Value>, arctern::Result<()>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let deadline = Instant::now() + PATIENCE;
        while let Some(line) = tokio::time::timeout_at(deadline.into(), self.stdout.next_line())
            .await
            .expect("the output ends in time")
            .unwrap()
        {
            let message: Value = serde_json::from_str(&line).unwrap();
            check_any(&message);
            rest.push(message);
        }
        let result = tokio::time::timeout(PATIENCE, self.served)
            .await
            .expect("serving ends in time")
            .expect("serving did not panic");
        (rest, result)
    }
}

#[tokio::test]
async fn tools_list_and_call_round_trip() {
    let mut client = Client::start(build(&Probe::default()));
    client
        .send(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": meta()}}))
        .await;
    let list = client.recv().await;
    assert_eq!(list["id"], 1);
    check(&list["result"], "ListToolsResult");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "sleep", "hang", "boom", "steps"]);

    client
        .send(&call("two", "echo", json!({"text": "hi"})))
        .await;
    let r = client.recv().await;
    assert_eq!(r["id"], "two");
    check(&r["result"], "CallToolResult");
    assert_eq!(r["result"]["content"][0]["text"], "hi");

    client.send(&call(3, "nope", json!({}))).await;
    let r = client.recv().await;
    assert_eq!(
        (r["id"].as_i64(), r["error"]["code"].as_i64()),
        (Some(3), Some(-32602))
    );

    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn many_concurrent_requests_are_all_answered() {
    let mut client = Client::start(build(&Probe::default()));
    let mut batch = Vec::new();
    for id in 0..100 {
        let mut line = serde_json::to_vec(&call(id, "sleep", json!({"ms": 200}))).unwrap();
        line.push(b'\n');
        batch.extend_from_slice(&line);
    }
    let started = Instant::now();
    client.send_raw(&batch).await;
    let mut seen = HashSet::new();
    for _ in 0..100 {
        let r = client.recv().await;
        assert_eq!(r["result"]["content"][0]["text"], "slept 200", "{r}");
        assert!(
            seen.insert(r["id"].as_i64().unwrap()),
            "answered twice: {r}"
        );
    }
    assert_eq!(seen, (0..100).collect());
    // Served one after the other this would take 20 s.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (rest, result) = client.finish().await;
    assert!(rest.is_empty());
    result.unwrap();
}

#[tokio::test]
async fn a_slow_request_does_not_block_a_fast_one() {
    let probe = Probe::default();
    let mut client = Client::start(build(&probe));
    client.send(&call("slow", "hang", json!({}))).await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 1)
        .await;
    client
        .send(&call("fast", "echo", json!({"text": "quick"})))
        .await;
    let r = client.recv().await;
    assert_eq!(r["id"], "fast");
    client.send(&cancel("slow")).await;
    probe.wait_for(|p| p.dropped() == 1).await;
    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn cancellation_stops_a_request_and_it_is_never_answered() {
    let probe = Probe::default();
    let mut client = Client::start(build(&probe));
    client.send(&call(1, "hang", json!({}))).await;
    client.send(&call(2, "sleep", json!({"ms": 30_000}))).await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 2)
        .await;

    client.send(&cancel(1)).await;
    probe.wait_for(|p| p.dropped() == 1).await;
    client.send(&cancel(2)).await;
    probe.wait_for(|p| p.dropped() == 2).await;

    // Unknown ids and malformed cancellations are ignored, and nothing answers a notification.
    client.send(&cancel(12345)).await;
    client
        .send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"nope":1}}))
        .await;
    client
        .send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled"}))
        .await;

    client
        .send(&call(3, "echo", json!({"text": "after"})))
        .await;
    let r = client.recv().await;
    assert_eq!(r["id"], 3, "the cancelled requests were not answered: {r}");
    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn progress_notifications_come_before_the_result() {
    let mut client = Client::start(build(&Probe::default()));
    let mut request = call(7, "steps", json!({"steps": 3}));
    request["params"]["_meta"]["progressToken"] = json!("tok");
    client.send(&request).await;
    for i in 1..=3 {
        let note = client.recv().await;
        check(&note, "ProgressNotification");
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "tok");
        assert_eq!(note["params"]["progress"], f64::from(i));
        assert_eq!(note["params"]["total"], 3.0);
    }
    let r = client.recv().await;
    assert_eq!(r["id"], 7);
    assert_eq!(r["result"]["content"][0]["text"], "done");

    // Without a token, no progress is sent.
    client.send(&call(8, "steps", json!({"steps": 3}))).await;
    let r = client.recv().await;
    assert_eq!(r["id"], 8);
    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn malformed_lines_get_the_right_errors_and_serving_continues() {
    let mut client = Client::start(build(&Probe::default()));
    let cases: &[(&[u8], i64, Value)] = &[
        (b"{not json\n", -32700, Value::Null),
        (b"\xff\xfe\n", -32700, Value::Null),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]\n",
            -32600,
            Value::Null,
        ),
        (b"\"just a string\"\n", -32600, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}\n", -32600, json!(5)),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":\"v\",\"method\":\"tools/list\"}\n",
            -32600,
            json!("v"),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{}}\n",
            -32602,
            json!(6),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"no/such\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n",
            -32601,
            json!(9),
        ),
        // A response from the client is not something a server accepts.
        (b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n", -32600, Value::Null),
    ];
    for (line, code, id) in cases {
        client.send_raw(line).await;
        let r = client.recv().await;
        assert_eq!(
            r["error"]["code"],
            *code,
            "{}: {r}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(r["id"], *id, "{}: {r}", String::from_utf8_lossy(line));
    }

    // Blank lines, CRLF line ends and unknown notifications produce nothing.
    client.send_raw(b"\n\r\n   \n").await;
    client
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\r\n")
        .await;
    let mut line = serde_json::to_vec(&call(10, "echo", json!({"text": "crlf"}))).unwrap();
    line.extend_from_slice(b"\r\n");
    client.send_raw(&line).await;
    let r = client.recv().await;
    assert_eq!(r["id"], 10);
    assert_eq!(r["result"]["content"][0]["text"], "crlf");

    // A last line without a line end is still served.
    let last = serde_json::to_vec(&call(11, "echo", json!({"text": "last"}))).unwrap();
    client.send_raw(&last).await;
    let (rest, result) = client.finish().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], 11);
    result.unwrap();
}

#[tokio::test]
async fn an_oversized_line_is_rejected_without_ending_serving() {
    let mut client =
        Client::start_with(StdioServer::new(build(&Probe::default())).max_line_length(1024));

    // Far over the limit, arriving in pieces.
    client
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"junk\":\"")
        .await;
    let chunk = vec![b'x'; 16 * 1024];
    for _ in 0..16 {
        client.send_raw(&chunk).await;
    }
    client.send_raw(b"\"}\n").await;
    let r = client.recv().await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(
        r["id"],
        Value::Null,
        "the id of a discarded line is unknown: {r}"
    );
    check(&r, "JSONRPCErrorResponse");

    // Just over the limit, in one piece, followed at once by a valid request.
    let mut big = call(2, "echo", json!({"text": "y".repeat(1100)}));
    let mut lines = serde_json::to_vec(&big).unwrap();
    lines.push(b'\n');
    big["params"]["arguments"]["text"] = json!("fits");
    big["id"] = json!(3);
    lines.extend_from_slice(&serde_json::to_vec(&big).unwrap());
    lines.push(b'\n');
    client.send_raw(&lines).await;
    let r = client.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].as_i64()),
        (Value::Null, Some(-32600))
    );
    let r = client.recv().await;
    assert_eq!(r["id"], 3);
    assert_eq!(r["result"]["content"][0]["text"], "fits");

    // Exactly at the limit is fine.
    let mut exact = call(4, "echo", json!({"text": ""}));
    let len = serde_json::to_vec(&exact).unwrap().len();
    exact["params"]["arguments"]["text"] = json!("z".repeat(1024 - len));
    let mut line = serde_json::to_vec(&exact).unwrap();
    assert_eq!(line.len(), 1024);
    line.extend_from_slice(b"\r\n");
    client.send_raw(&line).await;
    let r = client.recv().await;
    assert_eq!(r["id"], 4, "{r}");

    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn end_of_input_lets_in_flight_requests_finish() {
    let probe = Probe::default();
    let mut client = Client::start(build(&probe));
    client.send(&call(1, "sleep", json!({"ms": 300}))).await;
    client.send(&call(2, "sleep", json!({"ms": 100}))).await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 2)
        .await;
    let (rest, result) = client.finish().await;
    result.unwrap();
    let ids: HashSet<i64> = rest.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, HashSet::from([1, 2]), "{rest:?}");
    assert_eq!(probe.dropped(), 0);
}

#[tokio::test]
async fn end_of_input_cancels_requests_after_the_grace_period() {
    let probe = Probe::default();
    let mut client = Client::start_with(
        StdioServer::new(build(&probe)).shutdown_grace(Duration::from_millis(100)),
    );
    client.send(&call(1, "hang", json!({}))).await;
    client.send(&call(2, "sleep", json!({"ms": 20}))).await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 2)
        .await;
    let started = Instant::now();
    let (rest, result) = client.finish().await;
    result.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        rest.len(),
        1,
        "only the quick request is answered: {rest:?}"
    );
    assert_eq!(rest[0]["id"], 2);
    probe.wait_for(|p| p.dropped() == 1).await;
}

#[tokio::test]
async fn listen_acknowledges_notifies_and_stops_when_cancelled() {
    let server = build(&Probe::default());
    let mut client = Client::start(server.clone());
    client.send(&listen("sub")).await;
    let ack = client.recv().await;
    check(&ack, "SubscriptionsAcknowledgedNotification");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );

    server
        .handler()
        .add_tool(
            ToolSpec::new("late").description("Added later."),
            || async { "late" },
        )
        .unwrap();
    let note = client.recv().await;
    check(&note, "ToolListChangedNotification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );

    // Requests keep flowing beside the subscription.
    client.send(&call(1, "late", json!({}))).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "late");

    client.send(&cancel("sub")).await;
    // Once the stream is gone, no notification reaches this client.
    tokio::time::timeout(PATIENCE, async {
        while server.change_notifier().listeners() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the subscription ended");
    server.handler().remove_tool("late");
    client.quiet(100).await;

    let (rest, result) = client.finish().await;
    assert!(
        rest.is_empty(),
        "a cancelled subscription gets no final result: {rest:?}"
    );
    result.unwrap();
}

#[tokio::test]
async fn end_of_input_ends_open_subscriptions_with_their_final_result() {
    let mut client = Client::start(build(&Probe::default()));
    client.send(&listen(1)).await;
    client.send(&listen("two")).await;
    let mut acks = HashSet::new();
    for _ in 0..2 {
        let ack = client.recv().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        acks.insert(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
    }
    assert_eq!(acks, HashSet::from([json!(1), json!("two")]));

    let (rest, result) = client.finish().await;
    result.unwrap();
    assert_eq!(rest.len(), 2, "{rest:?}");
    for last in &rest {
        check(last, "SubscriptionsListenResultResponse");
        assert_eq!(last["result"]["resultType"], "complete");
        assert_eq!(
            last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            last["id"]
        );
        assert_eq!(
            last["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "stdio-test"
        );
    }
    let ids: HashSet<Value> = rest.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, acks);
}

#[tokio::test]
async fn server_shutdown_ends_serving_and_subscriptions_once() {
    let server = build(&Probe::default());
    let mut client = Client::start(server.clone());
    client.send(&listen(5)).await;
    let ack = client.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    server.shutdown();
    let last = client.recv().await;
    check(&last, "SubscriptionsListenResultResponse");
    assert_eq!(last["id"], 5);
    // Serving ends by itself, and the final result is not repeated.
    let result = tokio::time::timeout(PATIENCE, &mut client.served)
        .await
        .expect("serving ends after a server shutdown")
        .unwrap();
    result.unwrap();
    let (rest, _) = client.finish_after_end().await;
    assert!(rest.is_empty(), "{rest:?}");
}

impl Client {
    /// Reads what is left once serving has already ended.
    async fn finish_after_end(mut self) -> (Vec<Value>, ()) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .unwrap()
            .unwrap()
        {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        (rest, ())
    }
}

#[tokio::test]
async fn reading_pauses_at_the_in_flight_limit() {
    let probe = Probe::default();
    let mut client = Client::start_with(StdioServer::new(build(&probe)).max_in_flight(2));
    // Subscriptions do not count against the limit.
    client.send(&listen("sub")).await;
    assert_eq!(
        client.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    client.send(&call(1, "sleep", json!({"ms": 300}))).await;
    client.send(&call(2, "sleep", json!({"ms": 300}))).await;
    client
        .send(&call(3, "echo", json!({"text": "third"})))
        .await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 2)
        .await;
    let first = client.recv().await;
    assert_ne!(
        first["id"], 3,
        "the third request waits for a slot: {first}"
    );
    let mut ids = HashSet::from([first["id"].as_i64().unwrap()]);
    for _ in 0..2 {
        ids.insert(client.recv().await["id"].as_i64().unwrap());
    }
    assert_eq!(ids, HashSet::from([1, 2, 3]));
    let (rest, result) = client.finish().await;
    assert_eq!(rest.len(), 1, "the subscription's final result: {rest:?}");
    assert_eq!(rest[0]["id"], "sub");
    result.unwrap();
}

#[tokio::test]
async fn a_panicking_handler_gets_an_internal_error_and_serving_continues() {
    let mut client = Client::start(build(&Probe::default()));
    client.send(&call("p", "boom", json!({}))).await;
    let r = client.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].as_i64()),
        (json!("p"), Some(-32603))
    );
    client
        .send(&call("q", "echo", json!({"text": "still here"})))
        .await;
    let r = client.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "still here");
    let (rest, result) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    result.unwrap();
}

#[tokio::test]
async fn dropping_the_serving_future_stops_every_task() {
    let probe = Probe::default();
    let server = build(&probe);
    let mut client = Client::start(server.clone());
    client.send(&listen("sub")).await;
    client.recv().await;
    client.send(&call(1, "hang", json!({}))).await;
    probe
        .wait_for(|p| p.started.load(Ordering::SeqCst) == 1)
        .await;
    client.served.abort();
    probe.wait_for(|p| p.dropped() == 1).await;
    tokio::time::timeout(PATIENCE, async {
        while server.change_notifier().listeners() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the subscription ended");
    // The output closes once the writer has nothing left to write for.
    let end = tokio::time::timeout(PATIENCE, client.stdout.next_line())
        .await
        .expect("the output closes");
    assert!(matches!(end, Ok(None)), "{end:?}");
}

#[tokio::test]
async fn a_closed_output_ends_serving_with_a_closed_error() {
    let (mut client_in, server_in) = tokio::io::duplex(1024);
    let (server_out, client_out) = tokio::io::duplex(1024);
    let served =
        tokio::spawn(StdioServer::new(build(&Probe::default())).serve_io(server_in, server_out));
    drop(client_out);
    let mut line = serde_json::to_vec(&call(1, "echo", json!({"text": "lost"}))).unwrap();
    line.push(b'\n');
    client_in.write_all(&line).await.unwrap();
    let err = tokio::time::timeout(PATIENCE, served)
        .await
        .expect("serving ends once nothing can be written")
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err:?}");
}

#[tokio::test]
async fn registration_errors_surface_before_serving() {
    let err = McpServer::new("broken")
        .tool("", "No name.", || async { "x" })
        .serve_stdio()
        .await
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");
}

/// Pipelined throughput of the server side (the client's requests are serialized before the
/// clock starts, and responses are only counted):
/// `cargo test --release -p arctern --test stdio_server -- --ignored --nocapture throughput`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark; run it explicitly in release mode"]
async fn throughput_pipelined_calls() {
    use tokio::io::AsyncReadExt;
    const CALLS: usize = 200_000;
    let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, mut client_out) = tokio::io::duplex(1 << 20);
    let served =
        tokio::spawn(StdioServer::new(build(&Probe::default())).serve_io(server_in, server_out));
    let mut requests = Vec::new();
    for id in 0..CALLS {
        serde_json::to_writer(
            &mut requests,
            &call(id as i64, "echo", json!({"text": "hello"})),
        )
        .unwrap();
        requests.push(b'\n');
    }
    let started = Instant::now();
    let writer = tokio::spawn(async move {
        client_in.write_all(&requests).await.unwrap();
        client_in
    });
    let mut answered = 0;
    let mut buf = vec![0u8; 1 << 20];
    while answered < CALLS {
        let n = client_out.read(&mut buf).await.unwrap();
        assert!(n > 0, "the output ended early");
        answered += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    let elapsed = started.elapsed();
    println!(
        "{CALLS} pipelined tools/call in {elapsed:?}: {:.0} calls/s",
        CALLS as f64 / elapsed.as_secs_f64()
    );
    drop(writer.await.unwrap());
    served.await.unwrap().unwrap();
}

#[tokio::test]
async fn listen_streams_over_the_limit_are_refused_until_one_closes() {
    let server = McpServer::new("listen-limit")
        .tool(
            "echo",
            "Echoes.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .max_listen_streams(2)
        .build()
        .expect("the test server builds");
    assert_eq!(server.config().max_listen_streams, 2);
    let mut client = Client::start(server.clone());
    for id in ["a", "b"] {
        client.send(&listen(id)).await;
        let ack = client.recv().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
    }
    client.send(&listen("c")).await;
    let refused = client.recv().await;
    assert_eq!(refused["id"], "c");
    assert_eq!(refused["error"]["code"], -32603);
    assert_eq!(refused["error"]["data"], json!({"maxListenStreams": 2}));
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allows 2"),
        "{refused}"
    );

    // Closing one frees its place.
    client.send(&cancel("a")).await;
    tokio::time::timeout(PATIENCE, async {
        while server.change_notifier().listeners() > 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the cancelled stream closed");
    client.send(&listen("d")).await;
    let ack = client.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "d"
    );
    server.shutdown();
    let (rest, result) = client.finish().await;
    assert_eq!(
        rest.len(),
        2,
        "the open streams end with their results: {rest:?}"
    );
    result.unwrap();
}
