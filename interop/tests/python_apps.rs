//! MCP Apps across SDKs, both eras: arctern's client reads the Python reference SDK's Apps
//! server (`mcp` 2.3.0 `mcp.server.apps`, `python/apps_server.py`), and the Python client
//! (`python/apps_client.py`) reads the view of arctern's demo server (`arctern serve`).

mod common;

use std::process::Stdio;

use arctern::Era;
use arctern::apps::{EXTENSION_ID, MIME_TYPE, Rule, Visibility};
use arctern::client::Client;
use arctern::testing::apps::{AppsCheck, Severity};
use arctern::transport::http::HttpServer;
use arctern::types::ResourceContents;
use common::{PATIENCE, Process, fixture, python, text};
use serde_json::json;
use tokio::process::Command;

const VIEW: &str = "ui://py-apps/clock.html";

async fn read_python_server(url: &str, era: Era) {
    let client = Client::builder()
        .name("arctern-apps-interop")
        .era(era)
        .request_timeout(PATIENCE)
        .apps()
        .connect(url)
        .await
        .unwrap();
    let declared = client
        .server_capabilities()
        .and_then(|c| c.extensions)
        .is_some_and(|e| e.contains_key(EXTENSION_ID));
    // The reference server declares the extension in server/discover, not in a 2025
    // initialize result.
    assert_eq!(declared, era == Era::Modern, "{era:?}");

    let tools = client.list_tools().await.unwrap();
    let clock = tools.iter().find(|t| t.name == "clock").unwrap();
    let ui = clock.ui_meta().unwrap().unwrap();
    assert_eq!(ui.resource_uri.as_deref(), Some(VIEW));
    assert!(ui.visibility.is_none() && ui.is_visible_to_model());
    let tick = tools.iter().find(|t| t.name == "tick").unwrap();
    let ui = tick.ui_meta().unwrap().unwrap();
    assert_eq!(ui.visibility.as_deref(), Some(&[Visibility::APP][..]));

    let resources = client.list_resources().await.unwrap();
    let listed = resources.iter().find(|r| r.uri == VIEW).unwrap();
    assert_eq!(listed.mime_type.as_deref(), Some(MIME_TYPE));
    let listed_ui = listed.ui_meta().unwrap().unwrap();
    let csp = listed_ui.csp.clone().unwrap();
    assert_eq!(
        csp.connect_domains.as_deref(),
        Some(&["https://time.example.com".to_owned()][..])
    );
    assert_eq!(
        csp.resource_domains.as_deref(),
        Some(&["https://cdn.example.com".to_owned()][..])
    );
    assert!(
        listed_ui
            .permissions
            .as_ref()
            .unwrap()
            .clipboard_write
            .is_some()
    );
    assert_eq!(listed_ui.prefers_border, Some(true));

    let read = client.read_resource(VIEW).await.unwrap();
    let ResourceContents::Text(item) = &read.contents[0] else {
        panic!("{read:?}")
    };
    assert_eq!(item.mime_type.as_deref(), Some(MIME_TYPE));
    assert!(item.text.starts_with("<!doctype html>"));
    assert_eq!(read.contents[0].ui_meta().unwrap().unwrap(), listed_ui);

    // The client's declaration reached the server: per request, or in initialize.
    let result = client.call_tool("clock", json!({})).await.unwrap();
    assert_eq!(text(&result.content), "12:00 UTC (in the clock view)");

    let report = AppsCheck::new()
        .call("clock", json!({}))
        .run(&client)
        .await
        .unwrap();
    assert!(report.passed(), "{:?}", report.findings());
    assert_eq!((report.tools_checked(), report.views_checked()), (2, 1));
    // What the reference server leaves out: the flat key (and, on 2025, the declaration).
    assert_eq!(report.of(Rule::FlatKey).count(), 2);
    assert_eq!(
        report.of(Rule::Extension).count(),
        usize::from(era == Era::Legacy)
    );
    assert!(
        report
            .findings()
            .iter()
            .all(|f| f.severity != Severity::Error)
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn arctern_reads_the_python_apps_server_on_both_eras() {
    let Some(python) = python() else { return };
    let mut command = Command::new(&python);
    command.arg(fixture("apps_server.py"));
    let mut server = Process::spawn("apps_server.py", command);
    let url = server.wait_for_line("listening ").await;
    for era in [Era::Modern, Era::Legacy] {
        read_python_server(&url, era).await;
    }
    drop(server);
}

/// Every check `apps_client.py` makes, in order.
const CHECKS: [&str; 6] = [
    "negotiated",
    "extension",
    "tool-meta",
    "view-listed",
    "view-read",
    "text-result",
];

#[tokio::test]
async fn the_python_client_reads_the_demo_view_on_both_eras() {
    let Some(python) = python() else { return };
    let bound = HttpServer::new(arctern_cli::demo::server().unwrap())
        .bind(("127.0.0.1", 0))
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    for mode in ["auto", "legacy"] {
        let mut command = Command::new(&python);
        command
            .arg(fixture("apps_client.py"))
            .args([url.as_str(), mode])
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(PATIENCE, command.output())
            .await
            .expect("the Python client finishes in time")
            .expect("the Python client starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let passed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("ok "))
            .collect();
        assert!(
            output.status.success() && passed == CHECKS,
            "mode {mode}: passed {passed:?}\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let _ = stop.send(());
    serving.await.unwrap().unwrap();
}
