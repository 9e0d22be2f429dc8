//! An MCP server on a Unix domain socket: a transport built on arctern's public
//! `Connection` (see `arctern_examples::unix_socket`). 2026-07-28 and 2025-era clients are
//! both served; the `provision` tool asks a question either way.
//!
//! ```sh
//! cargo run -p arctern-examples --bin unix_socket -- --socket /tmp/mcp.sock
//! ```

use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Question};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::net::UnixListener;

#[derive(Deserialize, JsonSchema)]
struct Provision {
    name: String,
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which region?")]
struct Region {
    region: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    arctern_examples::init_logging();
    let path =
        arctern_examples::flag_value("--socket").ok_or("usage: unix_socket --socket PATH")?;
    let server = McpServer::new("socket")
        .tool(
            "provision",
            "Provisions a database; asks the region.",
            |Args(p): Args<Provision>, Answer(r): Answer<Region>| async move {
                format!("Provisioned {} in {}.", p.name, r.region)
            },
        )
        .build()?;
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    println!("{path}");
    tokio::select! {
        served = arctern_examples::unix_socket::serve(server, listener) => served?,
        _ = tokio::signal::ctrl_c() => {}
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}
