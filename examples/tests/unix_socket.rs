//! The Unix-socket transport example serves a 2026-07-28 client and a 2025-era client,
//! through arctern's public `Connection` alone.

#![cfg(unix)]

use std::time::Duration;

use arctern::Era;
use arctern::client::Client;
use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Question};
use arctern::types::elicitation::ElicitResult;
use arctern_examples::unix_socket;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::net::UnixListener;

const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Deserialize, JsonSchema)]
struct Provision {
    name: String,
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which region?")]
struct Region {
    region: String,
}

#[tokio::test]
async fn a_2026_client_and_a_2025_client_over_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("arctern-uds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.sock");
    let _ = std::fs::remove_file(&path);
    let server = McpServer::new("socket")
        .tool(
            "provision",
            "Provisions.",
            |Args(p): Args<Provision>, Answer(r): Answer<Region>| async move {
                format!("{} in {}", p.name, r.region)
            },
        )
        .build()
        .unwrap();
    let serving = tokio::spawn(unix_socket::serve(
        server,
        UnixListener::bind(&path).unwrap(),
    ));
    for era in [Era::Modern, Era::Legacy] {
        let client = Client::builder()
            .era(era)
            .on_elicit(|_| async { Ok(ElicitResult::accept([("region", "eu-west-1")])) })
            .connect_with(unix_socket::connect(&path).await.unwrap())
            .await
            .unwrap();
        assert_eq!(client.era(), era);
        let result = tokio::time::timeout(
            PATIENCE,
            client.call_tool("provision", json!({"name": "orders"})),
        )
        .await
        .expect("answered in time")
        .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("orders in eu-west-1"),
            "{era:?}"
        );
        client.close().await.unwrap();
    }
    serving.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
