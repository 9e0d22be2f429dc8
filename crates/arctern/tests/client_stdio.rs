//! The client over stdio: against the crate's stdio server in a child process (this test
//! binary started again in server mode), and over an in-memory pipe.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::ErrorKind;
use arctern::client::{CallOptions, Client, StdioCommand, StdioTransport};
use arctern::server::{Handler, HandlerResult, Outcome, RequestContext, Server, ServerConfig};
use arctern::transport::stdio::StdioServer;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::elicitation::{ElicitResult, PrimitiveSchemaDefinition, RequestedSchema};
use arctern::types::logging::LoggingLevel;
use arctern::types::meta::JsonObject;
use arctern::types::mrtr::{InputRequest, InputRequiredResult};
use arctern::types::tools::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

const CHILD: &str = "ARCTERN_CLIENT_STDIO_CHILD";

/// The server the child process runs.
#[derive(Clone)]
struct Child;

struct DroppedNotice(&'static str);

impl Drop for DroppedNotice {
    fn drop(&mut self) {
        eprintln!("dropped {}", self.0);
    }
}

impl Handler for Child {
    async fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let args = params.arguments.unwrap_or_default();
        match params.name.as_str() {
            "echo" => Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default()).into()),
            "ask" => match params.input_responses {
                None => Ok(InputRequiredResult::new()
                    .with_input_request(
                        "name",
                        InputRequest::elicit_form(
                            "Your name?",
                            RequestedSchema::new()
                                .required("name", PrimitiveSchemaDefinition::string()),
                        ),
                    )
                    .with_request_state("st")
                    .into()),
                Some(r) => {
                    let name = r["name"]
                        .as_elicit()
                        .and_then(|e| e.content.as_ref())
                        .and_then(|c| c.get("name"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("?")
                        .to_owned();
                    let state = params.request_state.unwrap_or_default();
                    Ok(CallToolResult::text(format!("Hello, {name} ({state})")).into())
                }
            },
            "work" => {
                ctx.progress(1.0, Some(2.0), None).await;
                ctx.log(LoggingLevel::Info, None, json!("working")).await;
                ctx.progress(2.0, Some(2.0), None).await;
                Ok(CallToolResult::text("done").into())
            }
            "slow" => {
                let _notice = DroppedNotice("slow");
                ctx.progress(1.0, None, None).await;
                std::future::pending::<()>().await;
                unreachable!()
            }
            "exit" => std::process::exit(3),
            other => Ok(CallToolResult::error(format!("no tool {other}")).into()),
        }
    }
}

fn child_server() -> Server<Child> {
    let mut config = ServerConfig::new("stdio-child", "1.0");
    config.capabilities.tools = Some(ToolsCapability::default());
    config.capabilities.logging = Some(JsonObject::new());
    Server::new(Child, config)
}

/// Not a test of its own: the body of the child process (a no-op in a normal run).
#[test]
fn stdio_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(StdioServer::new(child_server()).serve());
    // Exit before the test harness prints anything more on stdout.
    std::process::exit(if result.is_ok() { 0 } else { 1 });
}

fn command(stderr: Arc<Mutex<Vec<String>>>) -> StdioCommand {
    StdioCommand::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stdio_child_server",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .on_stderr(move |line| stderr.lock().unwrap().push(line.to_owned()))
        .shutdown_grace(Duration::from_secs(2))
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn wait_for(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_child_process_server_serves_calls_rounds_progress_logs_and_cancellation() {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let l = logs.clone();
    let client = Client::builder()
        .on_elicit(|_q| async { Ok(ElicitResult::accept([("name", "Ada")])) })
        .on_log(LoggingLevel::Debug, move |m| l.lock().unwrap().push(m.data))
        .connect_stdio(command(stderr.clone()))
        .await
        .unwrap();
    assert_eq!(client.server_info().unwrap().name, "stdio-child");

    let r = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "hi");

    let r = client.call_tool("ask", Value::Null).await.unwrap();
    assert_eq!(text(&r), "Hello, Ada (st)");

    // Progress is routed to its call by token; log messages to the client's callback.
    let progress = Arc::new(AtomicUsize::new(0));
    let p = progress.clone();
    let r = client
        .call_tool_with(
            "work",
            Value::Null,
            CallOptions::new().on_progress(move |_| {
                p.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "done");
    assert_eq!(progress.load(Ordering::SeqCst), 2);
    wait_for("the log line", || !logs.lock().unwrap().is_empty()).await;
    assert_eq!(logs.lock().unwrap()[0], json!("working"));

    // Many calls at once over the one pipe.
    let calls = (0..20).map(|i| {
        let client = client.clone();
        async move {
            let r = client
                .call_tool("echo", json!({"text": i.to_string()}))
                .await
                .unwrap();
            assert_eq!(text(&r), i.to_string());
        }
    });
    futures::future::join_all(calls).await;

    // Dropping a call sends notifications/cancelled; the server drops the handler.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = client.call_tool_with(
        "slow",
        Value::Null,
        CallOptions::new().on_progress(move |_| {
            let _ = tx.send(());
        }),
    );
    tokio::select! {
        _ = call => panic!("cannot finish"),
        _ = rx.recv() => {}
    }
    wait_for("the server to drop the cancelled call", || {
        stderr.lock().unwrap().iter().any(|l| l == "dropped slow")
    })
    .await;

    client.close().await.unwrap();
    let err = client
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
}

#[tokio::test]
async fn a_crashing_server_fails_the_calls_in_flight() {
    let client = Client::builder()
        .connect_stdio(command(Arc::default()))
        .await
        .unwrap();
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("exit", Value::Null),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
}

#[tokio::test]
async fn a_missing_program_is_an_io_error() {
    let err = Client::builder()
        .connect_stdio(StdioCommand::new("/nonexistent/arctern-test-server"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
}

#[tokio::test]
async fn over_an_in_memory_pipe() {
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving =
        tokio::spawn(StdioServer::new(child_server()).serve_io(server_read, server_write));
    let (read, write) = tokio::io::split(client_side);
    let client = Client::builder()
        .on_elicit(|_q| async { Ok(ElicitResult::accept([("name", "Grace")])) })
        .connect_with(StdioTransport::from_io(read, write))
        .await
        .unwrap();
    let r = client.call_tool("ask", Value::Null).await.unwrap();
    assert_eq!(text(&r), "Hello, Grace (st)");
    client.close().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server ends when its input closes")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn garbage_and_oversized_lines_never_hang_a_call() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_side, server_side) = tokio::io::duplex(1024 * 1024);
    let (server_read, mut server_write) = tokio::io::split(server_side);
    // A hand-written server: noise, an answer with a wrong id, then an oversized line.
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let request: Value = serde_json::from_str(&line).unwrap();
            let id = request["id"].clone();
            let mut out = String::from(
                "not json at all\n{\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{}}\n",
            );
            if request["params"]["name"] == "big" {
                out.push_str(&format!(
                    "{{\"pad\":\"{}\"}}\n",
                    "x".repeat(20 * 1024 * 1024)
                ));
            } else {
                out.push_str(&format!(
                    "{}\n",
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}})
                ));
            }
            if server_write.write_all(out.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let (read, write) = tokio::io::split(client_side);
    let client = Client::builder()
        .discover(false)
        .build(StdioTransport::from_io(read, write))
        .unwrap();
    assert_eq!(
        text(&client.call_tool("small", Value::Null).await.unwrap()),
        "ok"
    );
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("big", Value::Null),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
}
