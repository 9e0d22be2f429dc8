//! Fair shares over real HTTP on loopback: one client filling its share of a budget is
//! refused (`-31429`, 429 with `Retry-After`) while a client from another address is still
//! served.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arctern::server::budget::OverBudget;
use arctern::server::mrtr::{Ask, Interrupt, MemoryOneTimeStore, Questions};
use arctern::server::tasks::{TaskConfig, TaskError, TaskHandle, TaskSupport};
use arctern::server::{McpHandler, McpServer, Server, ToolSpec};
use arctern::transport::http::HttpServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::sync::oneshot;

const VERSION: &str = "2026-07-28";
/// Far beyond every bound in these tests: reaching it means something hung.
const PATIENCE: Duration = Duration::from_secs(30);

/// A response: status, headers (lower-case names) and the JSON body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Posts one JSON-RPC request from the local address `from` (any of 127.0.0.0/8 works on
/// loopback) on a connection of its own.
async fn post(server: SocketAddr, from: IpAddr, method: &str, name: &str, params: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let name = if name.is_empty() {
        String::new()
    } else {
        format!("Mcp-Name: {name}\r\n")
    };
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {server}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\n\
         Mcp-Method: {method}\r\n{name}Connection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        let mut stream = socket.connect(server).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(PATIENCE, exchange)
        .await
        .expect("an answer in time");
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    Answer {
        status,
        headers,
        body,
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

/// A server with a two-round `confirm` tool, served on 127.0.0.1 until the sender is used
/// or dropped.
async fn serve(server: Server<McpHandler>) -> (SocketAddr, oneshot::Sender<()>) {
    let bound = HttpServer::new(server)
        .bind("127.0.0.1:0")
        .shutdown_grace(Duration::from_secs(5))
        .listen()
        .await
        .expect("binds");
    let addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

fn confirm_server(store: MemoryOneTimeStore) -> Server<McpHandler> {
    McpServer::new("budgets")
        .tool("confirm", "", |q: Questions| async move {
            let go = q.answer(Ask::confirm("go", "Go ahead?"))?;
            Ok::<_, Interrupt>(format!("go: {go}"))
        })
        .one_time_store(store)
        .build()
        .unwrap()
}

/// Round 0 of a `confirm` flow from `from`: its request state.
async fn start_flow(addr: SocketAddr, from: IpAddr) -> String {
    let r0 = post(
        addr,
        from,
        "tools/call",
        "confirm",
        json!({"name": "confirm", "arguments": {}, "_meta": meta()}),
    )
    .await;
    assert_eq!(
        r0.body["result"]["resultType"], "input_required",
        "{}",
        r0.body
    );
    r0.body["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Round 1 of a `confirm` flow: the answer.
async fn finish_flow(addr: SocketAddr, from: IpAddr, state: &str) -> Answer {
    post(
        addr,
        from,
        "tools/call",
        "confirm",
        json!({
            "name": "confirm",
            "arguments": {},
            "_meta": meta(),
            "inputResponses": {"go": {"action": "accept", "content": {"go": true}}},
            "requestState": state,
        }),
    )
    .await
}

#[tokio::test]
async fn a_client_flooding_flows_cannot_make_another_clients_flow_fail() {
    let share = 8;
    let store = MemoryOneTimeStore::with_capacity(64).caller_share(share);
    let (addr, _stop) = serve(confirm_server(store)).await;
    let flooder: IpAddr = "127.0.0.1".parse().unwrap();
    let other: IpAddr = "127.0.0.2".parse().unwrap();

    // The other client starts a flow before the flood and answers it after.
    let waiting = start_flow(addr, other).await;
    // The flooder completes its share of round-1/round-2 pairs...
    for _ in 0..share {
        let state = start_flow(addr, flooder).await;
        let done = finish_flow(addr, flooder, &state).await;
        assert_eq!(
            done.body["result"]["resultType"], "complete",
            "{}",
            done.body
        );
    }
    // ...and then only its own new flows are refused, with the budget error.
    for _ in 0..3 {
        let state = start_flow(addr, flooder).await;
        let refused = finish_flow(addr, flooder, &state).await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        let error = serde_json::from_value(refused.body["error"].clone()).unwrap();
        let over = OverBudget::from_error(&error).expect("an over-budget error");
        assert_eq!(refused.body["error"]["code"], OverBudget::CODE);
        assert_eq!(refused.body["error"]["data"]["budget"], "oneTimeFlows");
        assert_eq!(refused.body["error"]["data"]["scope"], "caller");
        let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
        assert_eq!(retry, over.retry_after().as_secs());
        assert!(retry >= 1);
    }
    // The other client's flows all work: the one it started, and new ones.
    let done = finish_flow(addr, other, &waiting).await;
    assert_eq!(done.status, 200);
    assert_eq!(
        done.body["result"]["resultType"], "complete",
        "{}",
        done.body
    );
    for _ in 1..share {
        let state = start_flow(addr, other).await;
        let done = finish_flow(addr, other, &state).await;
        assert_eq!(
            done.body["result"]["resultType"], "complete",
            "{}",
            done.body
        );
    }
    // A replay is still the state error, not the budget one.
    let replay = finish_flow(addr, other, &waiting).await;
    assert_eq!(replay.status, 400);
    assert_eq!(replay.body["error"]["code"], -32602);
}

fn task_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    })
}

/// A server whose `park` task asks at once and waits for the answer.
fn parking_server(tasks: TaskConfig) -> Server<McpHandler> {
    McpServer::new("budgets")
        .tool_spec(
            ToolSpec::new("park").task(TaskSupport::Required),
            |task: TaskHandle| async move {
                let go = task.ask(Ask::confirm("go", "Go on?")).await?;
                Ok::<_, TaskError>(format!("go: {go}"))
            },
        )
        .tasks(tasks)
        .build()
        .unwrap()
}

async fn park(addr: SocketAddr, from: IpAddr) -> Answer {
    post(
        addr,
        from,
        "tools/call",
        "park",
        json!({"name": "park", "arguments": {}, "_meta": task_meta()}),
    )
    .await
}

async fn task_status(addr: SocketAddr, from: IpAddr, id: &str) -> Value {
    let got = post(
        addr,
        from,
        "tasks/get",
        id,
        json!({"taskId": id, "_meta": task_meta()}),
    )
    .await;
    assert!(got.body["result"].is_object(), "{}", got.body);
    got.body["result"]["status"].clone()
}

#[tokio::test]
async fn a_client_parking_tasks_is_refused_at_its_share_and_another_still_gets_one() {
    let tasks = TaskConfig::default()
        .max_running(16)
        .max_running_per_caller(4)
        .input_deadline(None);
    let (addr, _stop) = serve(parking_server(tasks)).await;
    let flooder: IpAddr = "127.0.0.1".parse().unwrap();
    let other: IpAddr = "127.0.0.2".parse().unwrap();
    for _ in 0..4 {
        let created = park(addr, flooder).await;
        assert_eq!(
            created.body["result"]["resultType"], "task",
            "{}",
            created.body
        );
    }
    for _ in 0..6 {
        let refused = park(addr, flooder).await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.body["error"]["code"], -31429);
        assert_eq!(refused.body["error"]["data"]["budget"], "runningTasks");
        assert_eq!(refused.body["error"]["data"]["scope"], "caller");
        assert!(refused.header("retry-after").is_some());
    }
    let served = park(addr, other).await;
    assert_eq!(served.status, 200);
    assert_eq!(
        served.body["result"]["resultType"], "task",
        "{}",
        served.body
    );
}

#[tokio::test]
async fn a_task_parked_past_the_input_deadline_is_cancelled_and_frees_its_slot() {
    let tasks = TaskConfig::default()
        .max_running_per_caller(1)
        .input_deadline(Some(Duration::from_millis(200)));
    let (addr, _stop) = serve(parking_server(tasks)).await;
    let me: IpAddr = "127.0.0.1".parse().unwrap();
    let first = park(addr, me).await;
    let id = first.body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {}", first.body))
        .to_owned();
    // Bounded: the deadline is 200 ms, the patience far beyond it.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = task_status(addr, me, &id).await;
        if status == "cancelled" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its slot is free again (the work stops soon after the record says so).
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let next = park(addr, me).await;
        if next.body["result"]["resultType"] == "task" {
            break;
        }
        assert_eq!(next.status, 429, "{}", next.body);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
