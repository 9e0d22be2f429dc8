//! Middleware around every tool call: an allow-list by principal, a timeout, and per-tool
//! metrics (see `arctern_examples::middleware`). The principal comes from an authentication
//! layer in front of the server; without one, as here, every caller is anonymous and sees
//! only `echo`. The metrics print on Ctrl-C.
//!
//! ```sh
//! cargo run -p arctern-examples --bin middleware -- --port 8000
//! ```

use std::time::Duration;

use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::transport::http::HttpServer;
use arctern_examples::middleware::{ToolMetrics, allow_list, timeout};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::init_logging();
    let metrics = ToolMetrics::new();
    let server = McpServer::new("guarded")
        .tool(
            "echo",
            "Echoes its text.",
            |Args(t): Args<Text>| async move { t.text },
        )
        .tool("deploy", "Deploys (for alice only).", || async {
            "deployed"
        })
        // The last added runs first: the allow list, then the timeout, then the metrics.
        .layer(metrics.layer())
        .layer(timeout(Duration::from_secs(10)))
        .layer(allow_list([
            ("alice", &["echo", "deploy"][..]),
            ("", &["echo"][..]),
        ]))
        .build()?;
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", arctern_examples::port_from_args()))
        .listen()
        .await?;
    println!("{}", bound.url());
    bound
        .serve_with_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    for (tool, stats) in metrics.snapshot() {
        eprintln!("{tool}: {stats:?}");
    }
    Ok(())
}
