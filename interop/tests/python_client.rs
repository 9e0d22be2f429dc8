//! The Python reference SDK's `Client` (`mcp` 2.3.0, `python/client.py`) against arctern's
//! `interop-server`, over Streamable HTTP and over stdio (the Python client spawns the server).
//!
//! The Python script performs and checks each exchange and prints `ok <check>` per check;
//! this test requires every check, in order, and a clean exit.

mod common;

use std::process::Stdio;

use common::{PATIENCE, Process, fixture, python};
use tokio::process::Command;

const SERVER: &str = env!("CARGO_BIN_EXE_interop-server");

/// Every check `client.py` makes, in order.
const CHECKS: [&str; 18] = [
    "negotiated",
    "server-info",
    "tools-list",
    "tools-schema",
    "tool-echo",
    "tool-add",
    "elicitation-two-rounds",
    "elicitation-questions",
    "sampling",
    "roots",
    "prompts-list",
    "prompt",
    "prompt-input-required",
    "prompt-question",
    "templates-list",
    "template-read",
    "unknown-tool",
    "done",
];

/// Runs `client.py` with `args` and checks its report.
async fn run_client(python: &std::path::Path, args: &[&str]) {
    let mut command = Command::new(python);
    command
        .arg(fixture("client.py"))
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(PATIENCE, command.output())
        .await
        .expect("the Python client finishes in time")
        .expect("the Python client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let passed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ok "))
        .collect();
    assert!(
        output.status.success() && passed == CHECKS,
        "the Python client failed ({}).\npassed: {passed:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
}

#[tokio::test]
async fn python_client_against_our_server_over_http() {
    let Some(python) = python() else { return };
    let mut command = Command::new(SERVER);
    command.arg("--http");
    let mut server = Process::spawn("interop-server --http", command);
    let url = server.wait_for_line("listening ").await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    run_client(&python, &["http", &url]).await;
}

#[tokio::test]
async fn python_client_against_our_server_over_stdio() {
    let Some(python) = python() else { return };
    run_client(&python, &["stdio", SERVER, "--stdio"]).await;
}
