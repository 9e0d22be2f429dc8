//! The Python reference SDK's client with its OAuth support (`mcp` 2.3.0,
//! `python/oauth_client.py`) against arctern's protected `interop-server --http-auth`: it
//! discovers the in-process test authorization server, registers, signs in (PKCE), steps
//! up when a tool needs one more scope (`403 insufficient_scope`), and completes a multi
//! round-trip flow with its token.

mod common;

use std::process::Stdio;

use common::{PATIENCE, Process, fixture, python};
use tokio::process::Command;

const SERVER: &str = env!("CARGO_BIN_EXE_interop-server");

/// Every check `oauth_client.py` makes, in order.
const CHECKS: [&str; 9] = [
    "unauthorized",
    "signed-in",
    "negotiated",
    "tools-list",
    "whoami",
    "step-up",
    "provision",
    "provision-questions",
    "done",
];

#[tokio::test]
async fn python_oauth_client_against_our_protected_server() {
    let Some(python) = python() else { return };
    let mut command = Command::new(SERVER);
    command.arg("--http-auth");
    let mut server = Process::spawn("interop-server --http-auth", command);
    let url = server.wait_for_line("listening ").await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let mut client = Command::new(python);
    client
        .arg(fixture("oauth_client.py"))
        .arg(&url)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(PATIENCE, client.output())
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
        "the Python OAuth client failed ({}).\npassed: {passed:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
}
