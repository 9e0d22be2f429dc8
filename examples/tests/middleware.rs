//! The three middleware examples, on both eras.

use std::time::Duration;

use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Question};
use arctern::testing::{self, TestClient};
use arctern_examples::middleware::{ToolMetrics, allow_list, timeout};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("finished in time")
}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "go", message = "Go ahead?")]
struct Go {
    go: bool,
}

fn tools() -> McpServer {
    McpServer::new("guarded")
        .tool(
            "echo",
            "Echoes.",
            |Args(t): Args<Text>| async move { t.text },
        )
        .tool("deploy", "Deploys.", |Answer(g): Answer<Go>| async move {
            if g.go { "deployed" } else { "held" }
        })
        .tool("fail", "Fails.", || async {
            Err::<String, _>(std::io::Error::other("broken"))
        })
        .tool("slow", "Takes its time.", || async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "done"
        })
}

async fn client(
    server: &arctern::server::BuiltServer,
    legacy: bool,
    who: Option<&str>,
) -> TestClient {
    let mut builder = TestClient::builder();
    if legacy {
        builder = builder.legacy();
    }
    if let Some(who) = who {
        builder = builder.principal(who);
    }
    builder
        .connect(server.clone())
        .await
        .unwrap()
        .answer("go", json!({"go": true}))
}

#[tokio::test]
async fn the_allow_list_hides_and_refuses_tools_by_principal() {
    let server = tools()
        .layer(allow_list([
            ("alice", &["echo", "deploy"][..]),
            ("", &["echo"][..]),
        ]))
        .build()
        .unwrap();
    for legacy in [false, true] {
        let alice = client(&server, legacy, Some("alice")).await;
        let mut names: Vec<_> = within(alice.client().list_tools())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        names.sort();
        assert_eq!(names, ["deploy", "echo"], "legacy={legacy}");
        let deployed = within(alice.call_tool("deploy", json!({}))).await.unwrap();
        assert_eq!(testing::text(&deployed), "deployed");

        let anonymous = client(&server, legacy, None).await;
        let names: Vec<_> = within(anonymous.client().list_tools())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["echo"], "legacy={legacy}");
        let refused = within(anonymous.call_tool("deploy", json!({})))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("Unknown tool: deploy"),
            "legacy={legacy}: {refused}"
        );
        // Refused before anything was asked.
        assert!(anonymous.rounds().iter().all(|r| r.keys().is_empty()));

        let stranger = client(&server, legacy, Some("mallory")).await;
        assert!(
            within(stranger.call_tool("echo", json!({"text": "hi"})))
                .await
                .is_err()
        );
    }
}

#[tokio::test]
async fn the_timeout_ends_a_slow_call_and_leaves_others_alone() {
    let server = tools()
        .layer(timeout(Duration::from_millis(200)))
        .build()
        .unwrap();
    for legacy in [false, true] {
        let t = client(&server, legacy, None).await;
        let err = within(t.call_tool("slow", json!({}))).await.unwrap_err();
        assert!(
            err.to_string().contains("slow took longer than 200 ms"),
            "legacy={legacy}: {err}"
        );
        let echo = within(t.call_tool("echo", json!({"text": "quick"})))
            .await
            .unwrap();
        assert_eq!(testing::text(&echo), "quick");
        // A multi round-trip call: each round's run is bounded, not the user's answer.
        let deployed = within(t.call_tool("deploy", json!({}))).await.unwrap();
        assert_eq!(testing::text(&deployed), "deployed");
    }
}

#[tokio::test]
async fn metrics_count_calls_errors_and_rounds_per_tool() {
    for legacy in [false, true] {
        let metrics = ToolMetrics::new();
        let server = tools().layer(metrics.layer()).build().unwrap();
        let t = client(&server, legacy, None).await;
        for text in ["a", "b", "c"] {
            within(t.call_tool("echo", json!({"text": text})))
                .await
                .unwrap();
        }
        let failed = within(t.call_tool("fail", json!({}))).await.unwrap();
        assert!(failed.is_tool_error());
        within(t.call_tool("deploy", json!({}))).await.unwrap();
        let stats = metrics.snapshot();
        assert_eq!(stats["echo"].calls, 3, "legacy={legacy}");
        assert_eq!(stats["echo"].errors, 0);
        assert_eq!(stats["fail"].calls, 1);
        assert_eq!(stats["fail"].errors, 1);
        // Two rounds: the question, then the answer.
        assert_eq!(stats["deploy"].calls, 2, "legacy={legacy}");
        assert_eq!(stats["deploy"].input_required, 1);
        assert!(stats["echo"].slowest <= stats["echo"].total);
        assert!(!stats.contains_key("slow"));
    }
}
