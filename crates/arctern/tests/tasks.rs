//! The tasks extension end to end: an `McpServer` with task tools, and the client following
//! tasks (progress, a mid-task question, cancellation), over real HTTP on 127.0.0.1 and over
//! stdio with the server in a child process (this test binary started again).

#![cfg(all(
    feature = "http",
    feature = "stdio",
    feature = "server",
    feature = "client"
))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::ErrorKind;
use arctern::client::{CallOptions, Client, StdioCommand, ToolStart};
use arctern::server::mrtr::Ask;
use arctern::server::tasks::{TaskConfig, TaskError, TaskHandle, TaskSupport};
use arctern::server::{McpHandler, McpServer, Server, ToolSpec};
use arctern::transport::http::HttpServer;
use arctern::transport::stdio::StdioServer;
use arctern::types::elicitation::ElicitResult;
use arctern::types::tasks::TaskStatus;
use arctern::types::tools::CallToolResult;
use serde_json::json;
use tokio::net::TcpListener;

const CHILD: &str = "ARCTERN_TASKS_STDIO_CHILD";
/// Bound on every wait, so that a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

async fn deploy(task: TaskHandle) -> Result<String, TaskError> {
    task.progress(1, Some(2), "built").await;
    let go = task
        .ask(Ask::confirm("go", "Deploy to production?"))
        .await?;
    task.progress(2, Some(2), "deployed").await;
    Ok(format!("deployed: {go}"))
}

async fn forever(task: TaskHandle) -> String {
    task.status("running").await;
    task.cancelled().await;
    "stopped".into()
}

fn server() -> Server<McpHandler> {
    McpServer::new("tasks-test")
        .tasks(TaskConfig::default().poll_interval(Duration::from_millis(20)))
        .tool_spec(
            ToolSpec::new("deploy")
                .description("Builds, asks, deploys.")
                .task(TaskSupport::Optional),
            deploy,
        )
        .tool_spec(
            ToolSpec::new("forever")
                .description("Runs until cancelled.")
                .task(TaskSupport::Required),
            forever,
        )
        .tool("quick", "Answers at once.", || async { "quick" })
        .build()
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn wait_for_status(client: &Client, id: &str, status: TaskStatus) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let task = client.get_task(id).await.unwrap();
        if task.task.status == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} stayed {:?}, expected {status:?}",
            task.task.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls `deploy`, which asks mid-task: the client answers with its elicitation handler
/// and reports the task's progress.
async fn mid_task_question(client: &Client) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let options = CallOptions::new().on_task_status(move |task| {
        s.lock()
            .unwrap()
            .push(task.status_message.clone().unwrap_or_default());
    });
    let result = tokio::time::timeout(
        PATIENCE,
        client.call_tool_with("deploy", json!({}), options),
    )
    .await
    .expect("the task ends")
    .unwrap();
    assert_eq!(text(&result), "deployed: true");
    let seen = seen.lock().unwrap();
    assert!(seen.iter().any(|m| m.starts_with("[1/2]")), "{seen:?}");
}

/// Starts `forever` explicitly, polls it, cancels it; then drops a `call_tool` of it and
/// checks that the client cancelled the task it was following.
async fn cancellation(client: &Client) {
    let ToolStart::Task(task) = client.start_tool("forever", json!({})).await.unwrap() else {
        panic!("forever must become a task");
    };
    assert_eq!(task.status, TaskStatus::Working);
    assert!(task.task_id.len() >= 32, "ids carry 128 random bits");
    let polled = client.get_task(&task.task_id).await.unwrap();
    assert!(!polled.task.status.is_terminal());
    client.cancel_task(&task.task_id).await.unwrap();
    wait_for_status(client, &task.task_id, TaskStatus::Cancelled).await;
    // Idempotent on a terminal task.
    client.cancel_task(&task.task_id).await.unwrap();

    // The future of a call that follows a task is dropped: the task is cancelled.
    let id = Arc::new(Mutex::new(None::<String>));
    let i = id.clone();
    let options = CallOptions::new().on_task_status(move |task| {
        *i.lock().unwrap() = Some(task.task_id.clone());
    });
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        client.call_tool_with("forever", json!({}), options),
    )
    .await;
    assert!(gave_up.is_err(), "forever never ends on its own");
    let id = id
        .lock()
        .unwrap()
        .clone()
        .expect("the task reported its status");
    wait_for_status(client, &id, TaskStatus::Cancelled).await;

    // An unknown task id is an invalid-params error.
    let err = client.get_task("no-such-task").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert_eq!(err.protocol_error().unwrap().code.0, -32602);
}

fn answering_client() -> arctern::client::ClientBuilder {
    Client::builder().on_elicit(|_q| async { Ok(ElicitResult::accept([("go", true)])) })
}

#[tokio::test]
async fn over_http_a_task_asks_mid_way_reports_progress_and_is_cancelled() {
    let server = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = HttpServer::new(server.clone())
        .listener(listener)
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    tokio::spawn(bound.serve());
    let client = answering_client().connect(&url).await.unwrap();
    let caps = client.server_capabilities().unwrap();
    assert!(
        caps.extensions
            .unwrap()
            .contains_key("io.modelcontextprotocol/tasks")
    );

    mid_task_question(&client).await;
    cancellation(&client).await;
    // An ordinary tool is not a task.
    let quick = client.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(text(&quick), "quick");
    server.shutdown();
}

#[tokio::test]
async fn a_client_without_the_extension_gets_no_task() {
    let server = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = HttpServer::new(server.clone())
        .listener(listener)
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    tokio::spawn(bound.serve());
    let client = answering_client().tasks(false).connect(&url).await.unwrap();
    // A tool that can only be a task: -32021 naming the extension.
    let err = client.call_tool("forever", json!({})).await.unwrap_err();
    let error = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error.code.0, -32021);
    assert!(
        error.data.as_ref().unwrap()["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"]
            .is_object()
    );
    // An optional task tool runs as an ordinary call, where it cannot ask mid-way.
    let r = client.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("not running as a task"), "{}", text(&r));
    // The task methods need the extension too.
    let err = client.get_task("anything").await.unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32021);
    server.shutdown();
}

/// The child process: serves the test server on stdio when started with [`CHILD`] set.
#[test]
fn stdio_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(StdioServer::new(server()).serve());
    std::process::exit(if result.is_ok() { 0 } else { 1 });
}

#[tokio::test]
async fn over_stdio_a_task_asks_mid_way_and_is_cancelled() {
    let command = StdioCommand::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stdio_child_server",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .shutdown_grace(Duration::from_secs(2));
    let client = answering_client().connect_stdio(command).await.unwrap();
    mid_task_question(&client).await;
    cancellation(&client).await;
    client.close().await.unwrap();
}
