//! The fixture over Streamable HTTP: `conformance-server --port N` as a real child process,
//! spoken to with plain HTTP/1.1 on 127.0.0.1.
//!
//! The official suite itself runs through `scripts/conformance.sh`; this checks a few
//! fixture tools end to end, including what only HTTP has (statuses, SSE, `Mcp-Param-*`).

use std::process::Stdio;
use std::time::Duration;

use arctern_fixtures::schema_check::validate_for;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const VERSION: &str = "2026-07-28";
/// Bound on every wait, so that a broken server fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

/// The fixture server, killed when dropped.
struct Fixture {
    _child: Child,
    port: u16,
}

impl Fixture {
    /// Starts the binary on a free port and waits until it listens. A port taken between
    /// probing and binding makes the server exit; then another port is tried.
    async fn start() -> Fixture {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
                .args(["--port", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("the fixture binary starts");
            let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
            let ready = tokio::time::timeout(PATIENCE, async {
                while let Ok(Some(line)) = stderr.next_line().await {
                    if line.contains("serving http://") {
                        return true;
                    }
                }
                false
            })
            .await
            .unwrap_or(false);
            // Keep draining stderr so that logging never blocks the server.
            tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
            if ready {
                return Fixture {
                    _child: child,
                    port,
                };
            }
        }
        panic!("the fixture server did not start");
    }

    /// POSTs one JSON-RPC request to `/mcp` with the 2026-07-28 headers (plus `extra`).
    async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Response {
        let method = body["method"].as_str().unwrap();
        let mut headers = vec![
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("MCP-Protocol-Version", VERSION.to_owned()),
            ("Mcp-Method", method.to_owned()),
        ];
        let params = &body["params"];
        if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
            headers.push(("Mcp-Name", name.to_owned()));
        }
        headers.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        tokio::time::timeout(PATIENCE, self.exchange(body, &headers))
            .await
            .expect("the server answers in time")
    }

    async fn exchange(&self, body: &Value, headers: &[(&str, String)]) -> Response {
        let body = serde_json::to_vec(body).unwrap();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.port,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.write_all(&body).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        Response::parse(&raw)
    }
}

/// An HTTP response: status, lower-cased headers, and the JSON-RPC messages of its body
/// (one for a JSON body, each `data:` event of an SSE stream).
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    messages: Vec<Value>,
}

impl Response {
    fn parse(raw: &[u8]) -> Response {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete response head");
        let head = std::str::from_utf8(&raw[..split]).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        if headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
        {
            body = dechunk(&body);
        }
        let text = String::from_utf8(body).unwrap();
        let content_type = headers
            .iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        let messages = if content_type.starts_with("text/event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| serde_json::from_str(d.trim()).unwrap())
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        for m in &messages {
            if let Err(e) = validate_for(VERSION, "JSONRPCMessage", m) {
                panic!("invalid message from the server: {e}\n{m:#}");
            }
        }
        Response {
            status,
            headers,
            messages,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The final JSON-RPC response (the last message).
    fn response(&self) -> &Value {
        self.messages.last().expect("a JSON-RPC response")
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = std::str::from_utf8(&body[..line_end]).unwrap();
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        body = &body[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

fn call(id: i64, tool: &str, arguments: Value, caps: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "0.0.0"},
            "io.modelcontextprotocol/clientCapabilities": caps
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn fixture_tools_over_http() {
    let server = Fixture::start().await;

    let r = server
        .post(
            &call(1, "test_simple_text", json!({}), json!({}), json!({})),
            &[],
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    validate_for(VERSION, "CallToolResult", &r.response()["result"]).unwrap();

    // Progress needs a stream: notifications first, then the result.
    let mut body = call(
        2,
        "test_tool_with_progress",
        json!({}),
        json!({}),
        json!({}),
    );
    body["params"]["_meta"]["progressToken"] = json!("p-1");
    let r = server.post(&body, &[]).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let progress: Vec<f64> = r
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert_eq!(r.response()["id"], 2);
    assert_eq!(r.response()["result"]["resultType"], "complete");

    // A capability the client did not declare: 400 and -32021.
    let r = server
        .post(
            &call(
                3,
                "test_missing_capability",
                json!({}),
                json!({}),
                json!({}),
            ),
            &[],
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.response()["error"]["code"], -32021);
    assert_eq!(r.response()["id"], 3);
}

#[tokio::test]
async fn mirrored_argument_headers_are_checked() {
    let server = Fixture::start().await;
    let body = |id, region: &str| {
        call(
            id,
            "test_x_mcp_header",
            json!({"region": region}),
            json!({}),
            json!({}),
        )
    };

    let r = server
        .post(&body(1, "us-west1"), &[("Mcp-Param-Region", "us-west1")])
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        "Region: us-west1"
    );

    // Non-ASCII travels in the base64 sentinel form ("Zürich").
    let r = server
        .post(
            &body(2, "Zürich"),
            &[("mcp-param-region", "=?base64?WsO8cmljaA==?=")],
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");

    for (id, headers) in [
        (3, vec![]),
        (4, vec![("Mcp-Param-Region", "eu-west1")]),
        (5, vec![("Mcp-Param-Region", "=?base64?dXMtd2VzdDE?=")]),
    ] {
        let r = server.post(&body(id, "us-west1"), &headers).await;
        assert_eq!(r.status, 400, "{headers:?}: {r:?}");
        assert_eq!(r.response()["error"]["code"], -32020, "{headers:?}");
        assert_eq!(r.response()["id"], id);
    }
}

#[tokio::test]
async fn multi_round_trip_over_http() {
    let server = Fixture::start().await;
    let caps = json!({"elicitation": {}});

    let r = server
        .post(
            &call(
                1,
                "test_input_required_result_multi_round",
                json!({}),
                caps.clone(),
                json!({}),
            ),
            &[],
        )
        .await;
    let round1 = r.response()["result"].clone();
    assert_eq!(round1["resultType"], "input_required", "{r:?}");
    validate_for(VERSION, "InputRequiredResult", &round1).unwrap();
    assert!(round1["inputRequests"]["step1"].is_object());

    let answer = json!({"step1": {"action": "accept", "content": {"name": "Alice"}}});
    let r = server
        .post(
            &call(
                2,
                "test_input_required_result_multi_round",
                json!({}),
                caps.clone(),
                json!({"inputResponses": answer, "requestState": round1["requestState"]}),
            ),
            &[],
        )
        .await;
    let round2 = r.response()["result"].clone();
    assert_eq!(round2["resultType"], "input_required", "{r:?}");
    assert_ne!(round2["requestState"], round1["requestState"]);
    assert_eq!(
        round2["inputRequests"]["step2"]["params"]["message"],
        "Step 2: What is your favorite color, Alice?"
    );

    let answer = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    let r = server
        .post(
            &call(
                3,
                "test_input_required_result_multi_round",
                json!({}),
                caps,
                json!({"inputResponses": answer, "requestState": round2["requestState"]}),
            ),
            &[],
        )
        .await;
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        "Alice likes blue"
    );
}
