//! The Python reference SDK's `Client` (`mcp` 2.3.0, `python/book_hotel.py`) books a hotel on
//! the demo server of `arctern serve`, served here over Streamable HTTP, through both eras:
//! 2026-07-28 (multi round-trip results) and a 2025 session (`initialize`, the legacy shim's
//! `elicitation/create` requests). `book_hotel` offers the city's hotels as a choice computed
//! at run time, refuses a hotel that was not offered by asking again with the reason, and
//! books one that was.
//!
//! The Python script performs and checks each exchange and prints `ok <check>` per check;
//! this test requires every check, in order, and a clean exit.

mod common;

use std::process::Stdio;

use arctern::transport::http::HttpServer;
use common::{PATIENCE, fixture, python};
use tokio::process::Command;

/// Every check `book_hotel.py` makes, in order.
const CHECKS: [&str; 8] = [
    "negotiated",
    "tools-list",
    "booked",
    "asked-twice",
    "hotels-offered",
    "refused-with-reason",
    "unknown-city",
    "done",
];

/// Runs `book_hotel.py` against `url` in `mode` and checks its report.
async fn run_client(python: &std::path::Path, url: &str, mode: &str) {
    let mut command = Command::new(python);
    command
        .arg(fixture("book_hotel.py"))
        .args([url, mode])
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
        "the Python client failed in mode {mode} ({}).\npassed: {passed:?}\nstdout:\n{stdout}\n\
         stderr:\n{stderr}",
        output.status
    );
}

#[tokio::test]
async fn python_client_books_a_hotel_on_the_demo_through_both_eras() {
    let Some(python) = python() else { return };
    let server = arctern_cli::demo::server().expect("the demo server");
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", 0))
        .listen()
        .await
        .expect("listen on loopback");
    let url = bound.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    for mode in ["auto", "legacy"] {
        run_client(&python, &url, mode).await;
    }
    let _ = stop.send(());
    serving
        .await
        .expect("the server task")
        .expect("the server stops cleanly");
}
