//! The fixture over stdio: `conformance-server --stdio` as a real child process.
//!
//! Every message it writes must be one JSON-RPC line on stdout that validates against the
//! 2026-07-28 schema; logs go to stderr only; the process exits once stdin closes.

use std::process::Stdio;
use std::time::Duration;

use arctern_fixtures::schema_check::validate_for;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

const VERSION: &str = "2026-07-28";
/// Bound on every wait, so that a broken server fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Drains stderr all along, so that logging never blocks the server on a full pipe.
    stderr: JoinHandle<String>,
    next_id: i64,
}

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps
    })
}

fn validate(def: &str, value: &Value) {
    if let Err(e) = validate_for(VERSION, def, value) {
        panic!("not a valid {def}: {e}\n{value:#}");
    }
}

impl Session {
    fn start() -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
            .arg("--stdio")
            // Verbose logging, to prove it never reaches stdout.
            .env("RUST_LOG", "trace")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the fixture binary starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text).await;
            text
        });
        Session {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 1,
        }
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next stdout line, which must be a JSON-RPC message.
    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("stdout is still open");
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        assert_eq!(value["jsonrpc"], "2.0", "{line}");
        validate("JSONRPCMessage", &value);
        value
    }

    /// Sends a request; returns its response and the notifications written before it.
    async fn request(&mut self, method: &str, mut params: Value) -> (Value, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        if params.get("_meta").is_none() {
            params["_meta"] = meta(json!({}));
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        validate("JSONRPCRequest", &request);
        self.send(&request).await;
        let mut notes = Vec::new();
        loop {
            let message = self.read().await;
            if message.get("id").is_none() {
                validate("JSONRPCNotification", &message);
                notes.push(message);
                continue;
            }
            assert_eq!(message["id"], id, "responses come back in order here");
            if message.get("error").is_some() {
                validate("JSONRPCErrorResponse", &message);
            } else {
                validate("JSONRPCResultResponse", &message);
            }
            return (message, notes);
        }
    }

    async fn call(&mut self, tool: &str, extra: Value) -> (Value, Vec<Value>) {
        let mut params = json!({"name": tool, "arguments": {}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let (response, notes) = self.request("tools/call", params).await;
        let result = &response["result"];
        if result.is_object() {
            let def = if result["resultType"] == "input_required" {
                "InputRequiredResult"
            } else {
                "CallToolResult"
            };
            validate(def, result);
        }
        (response, notes)
    }
}

#[tokio::test]
async fn fixture_tools_work_over_stdio() {
    let mut s = Session::start();

    let (r, _) = s.request("tools/list", json!({})).await;
    validate("ListToolsResult", &r["result"]);
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "test_simple_text",
        "test_tool_with_progress",
        "test_missing_capability",
        "json_schema_2020_12_tool",
        "test_x_mcp_header",
        "test_input_required_result_elicitation",
        "test_input_required_result_capabilities",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }

    let (r, _) = s.call("test_simple_text", json!({})).await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );

    let (r, _) = s.call("test_audio_content", json!({})).await;
    assert_eq!(r["result"]["content"][0]["mimeType"], "audio/wav");

    // Progress travels as notifications before the result, with the request's token.
    let progress_meta = {
        let mut m = meta(json!({}));
        m["progressToken"] = json!("progress-test-1");
        m
    };
    let (r, notes) = s
        .call("test_tool_with_progress", json!({"_meta": progress_meta}))
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    let progress: Vec<f64> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .inspect(|n| {
            validate("ProgressNotification", n);
            assert_eq!(n["params"]["progressToken"], "progress-test-1");
        })
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);

    // Log messages only for requests that ask for them.
    let (_, notes) = s.call("test_logging_tool", json!({})).await;
    assert!(notes.is_empty(), "{notes:?}");
    let mut with_level = meta(json!({}));
    with_level["io.modelcontextprotocol/logLevel"] = json!("debug");
    let (_, notes) = s
        .call("test_logging_tool", json!({"_meta": with_level}))
        .await;
    assert_eq!(notes.len(), 3);
    for n in &notes {
        validate("LoggingMessageNotification", n);
    }

    // A capability the client did not declare.
    let (r, _) = s.call("test_missing_capability", json!({})).await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );

    let (r, _) = s
        .request("resources/read", json!({"uri": "test://template/42/data"}))
        .await;
    validate("ReadResourceResult", &r["result"]);
    let text: Value =
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text,
        json!({"id": "42", "templateTest": true, "data": "Data for ID: 42"})
    );

    let (r, _) = s
        .request(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
        )
        .await;
    validate("GetPromptResult", &r["result"]);

    let (r, _) = s.call("no_such_tool", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);

    s.finish().await;
}

#[tokio::test]
async fn multi_round_trip_over_stdio() {
    let mut s = Session::start();
    let caps = json!({"elicitation": {}, "sampling": {}});

    // Round 1: a question and the handler's state, sealed.
    let (r, _) = s
        .call(
            "test_input_required_result_request_state",
            json!({"_meta": meta(caps.clone())}),
        )
        .await;
    let round1 = &r["result"];
    assert_eq!(round1["resultType"], "input_required", "{r}");
    assert_eq!(
        round1["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = round1["requestState"].as_str().unwrap().to_owned();
    assert!(
        !state.contains("awaiting"),
        "the plaintext never reaches the wire"
    );

    // Round 2: the answer and the state echoed.
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let (r, _) = s
        .call(
            "test_input_required_result_request_state",
            json!({"_meta": meta(caps.clone()), "inputResponses": answer, "requestState": state}),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("state-ok"), "{text}");

    // Tampered state is refused.
    let (r, _) = s
        .call(
            "test_input_required_result_request_state",
            json!({
                "_meta": meta(caps.clone()),
                "inputResponses": answer,
                "requestState": format!("{state}-TAMPERED")
            }),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // A typed question: the SDK keeps its own sealed state between the rounds.
    let (r, _) = s
        .call(
            "test_input_required_result_sampling",
            json!({"_meta": meta(caps.clone())}),
        )
        .await;
    let round1 = &r["result"];
    assert_eq!(
        round1["inputRequests"]["capital_question"]["method"],
        "sampling/createMessage"
    );
    let answer = json!({"capital_question": {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "test-model",
        "stopReason": "endTurn"
    }});
    let (r, _) = s
        .call(
            "test_input_required_result_sampling",
            json!({
                "_meta": meta(caps),
                "inputResponses": answer,
                "requestState": round1["requestState"]
            }),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "The model answered: Paris"
    );

    s.finish().await;
}

impl Session {
    /// Closes stdin and checks that the server exits on its own, having written nothing
    /// more, and that its logs went to stderr.
    async fn finish(mut self) {
        drop(self.stdin.take());
        let rest = tokio::time::timeout(PATIENCE, async {
            let mut rest = Vec::new();
            while let Some(line) = self.stdout.next_line().await.unwrap() {
                rest.push(line);
            }
            rest
        })
        .await
        .expect("stdout closes after stdin");
        assert!(
            rest.is_empty(),
            "unexpected output after the last answer: {rest:?}"
        );
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the server exits once stdin closes")
            .unwrap();
        assert!(status.success(), "exit status {status}");
        let stderr = tokio::time::timeout(PATIENCE, self.stderr)
            .await
            .expect("stderr closes at exit")
            .unwrap();
        assert!(
            stderr.contains("conformance-server"),
            "the logs go to stderr: {stderr}"
        );
    }
}
