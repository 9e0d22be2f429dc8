//! `arctern serve` keeps serving a second client while a first one parks as many `deploy`
//! tasks as it can: the first is refused at its share of the running tasks (`-31429`, 429
//! with `Retry-After`), the second, from another loopback address, still gets its task.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::{Demo, runtime};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

const VERSION: &str = "2026-07-28";
/// Far beyond every bound here: reaching it means something hung.
const PATIENCE: Duration = Duration::from_secs(30);

/// Calls the demo's `deploy` as a task from the local address `from`: the status, the
/// `Retry-After` header and the JSON body.
async fn deploy(server: SocketAddr, from: IpAddr) -> (u16, Option<String>, Value) {
    let params = json!({
        "name": "deploy",
        "arguments": {"service": "web", "steps": 1},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        }
    });
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {server}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: deploy\r\nConnection: close\r\n\
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
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let retry = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("retry-after"))
        .map(|(_, v)| v.trim().to_owned());
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, retry, body)
}

#[test]
fn three_hundred_parked_deploys_from_one_client_leave_room_for_another() {
    let demo = Demo::start();
    let server: SocketAddr = demo
        .url()
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no address in {}", demo.url()));
    let flooder: IpAddr = "127.0.0.1".parse().unwrap();
    let other: IpAddr = "127.0.0.2".parse().unwrap();
    runtime().block_on(async {
        let (mut created, mut refused) = (0, 0);
        for _ in 0..300 {
            let (status, retry, body) = deploy(server, flooder).await;
            if body["result"]["resultType"] == "task" {
                created += 1;
                continue;
            }
            assert_eq!(status, 429, "{body}");
            assert_eq!(body["error"]["code"], -31429, "{body}");
            assert_eq!(body["error"]["data"]["budget"], "runningTasks");
            assert_eq!(body["error"]["data"]["scope"], "caller");
            let retry: u64 = retry.expect("Retry-After").parse().unwrap();
            assert_eq!(body["error"]["data"]["retryAfterSeconds"], retry);
            refused += 1;
        }
        // The demo's default share of running tasks per caller.
        assert_eq!(
            created,
            arctern::server::tasks::DEFAULT_MAX_RUNNING_PER_CALLER
        );
        assert_eq!(refused, 300 - created);
        let (status, _, body) = deploy(server, other).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["resultType"], "task", "{body}");
    });
    // The refusals were logged once, not three hundred times.
    assert!(
        demo.log().matches("refused a caller over budget").count() <= 2,
        "{}",
        demo.log()
    );
}
