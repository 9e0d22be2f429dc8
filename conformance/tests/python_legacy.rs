//! The Python reference SDK's client (`mcp` 2.3.0) pinned to the legacy era (2025-11-25)
//! against the fixture server, over Streamable HTTP and over stdio: every multi round-trip
//! fixture tool and the prompt complete through the legacy shim, which asks each question
//! as a real server→client request (`python/legacy_client.py` performs and checks each
//! exchange and prints `ok <check>`; this test requires every check, in order, and a clean
//! exit).
//!
//! The virtualenv comes from `scripts/python-env.sh` (`ARCTERN_PYTHON`, or its cache
//! folder). Without one the tests are skipped with a notice, unless
//! `ARCTERN_REQUIRE_PYTHON=1` (set by `scripts/test.sh`) makes that a failure.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SERVER: &str = env!("CARGO_BIN_EXE_conformance-server");
/// Bound on every wait, so that a broken peer fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(90);

/// Every check `legacy_client.py` makes, in order.
const CHECKS: [&str; 15] = [
    "negotiated",
    "elicitation",
    "elicitation-asked",
    "sampling",
    "sampling-asked",
    "roots",
    "request-state",
    "multiple-inputs",
    "multiple-inputs-asked",
    "multi-round",
    "multi-round-asked",
    "sealed-state-tool",
    "prompt",
    "ping",
    "done",
];

/// The virtualenv's interpreter, or `None` (after a notice) when there is none and none is
/// required.
fn python() -> Option<PathBuf> {
    let required = std::env::var("ARCTERN_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
    if let Some(explicit) = std::env::var_os("ARCTERN_PYTHON").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        assert!(
            path.is_file(),
            "ARCTERN_PYTHON={} does not exist",
            path.display()
        );
        return Some(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(venv) = cache.map(|c| c.join("arctern/python-mcp-2.3.0"))
        && venv.join(".arctern-ready").is_file()
    {
        return Some(venv.join("bin").join("python"));
    }
    assert!(
        !required,
        "ARCTERN_REQUIRE_PYTHON=1 but the Python reference SDK is not installed: \
         run scripts/python-env.sh (or set ARCTERN_PYTHON)"
    );
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n*** SKIPPED: legacy interop test against the Python reference SDK: no virtualenv.\n\
         *** Run scripts/python-env.sh once (scripts/test.sh does), or set ARCTERN_PYTHON.\n"
    );
    None
}

/// Runs `legacy_client.py` with `args` and checks its report.
async fn run_client(python: &Path, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/legacy_client.py");
    let mut command = Command::new(python);
    command
        // The script pings on purpose; Python's warning about it is noise here.
        .args(["-W", "ignore"])
        .arg(script)
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
        "the Python legacy client failed ({}).\npassed: {passed:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_legacy_client_completes_mrtr_tools_over_http() {
    let Some(python) = python() else { return };
    // A port taken between probing and binding makes the server exit; then try another.
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = Command::new(SERVER)
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the fixture server starts");
        let mut stderr = BufReader::new(server.stderr.take().unwrap()).lines();
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
            let url = format!("http://127.0.0.1:{port}/mcp");
            run_client(&python, &["http", &url]).await;
            return;
        }
    }
    panic!("the fixture server did not start");
}

#[tokio::test]
async fn python_legacy_client_completes_mrtr_tools_over_stdio() {
    let Some(python) = python() else { return };
    // The Python client starts the server as its child; it exits when its stdin closes.
    run_client(&python, &["stdio", SERVER, "--stdio"]).await;
}
