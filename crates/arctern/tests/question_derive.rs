//! `#[derive(Question)]` (the `macros` feature): the derived question asks its form under its
//! key, with its message, and the answer arrives typed.

#![cfg(all(feature = "macros", feature = "testing"))]

use arctern::server::McpServer;
use arctern::server::mrtr::{Answer, Question};
use arctern::testing::{self, TestClient};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which region should the database live in?")]
struct Region {
    /// The cloud region.
    region: String,
    replicas: Option<u8>,
}

mod renamed {
    // The derive's `crate` attribute, for a renamed arctern.
    pub use arctern as sdk;
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "ok", message = "Go ahead?", crate = "renamed::sdk")]
struct Go {
    ok: bool,
}

#[tokio::test]
async fn a_derived_question_is_asked_and_answered() {
    let server = McpServer::new("db").tool(
        "provision",
        "Provisions.",
        |Answer(r): Answer<Region>, Answer(go): Answer<Go>| async move {
            format!("{} x{} {}", r.region, r.replicas.unwrap_or(1), go.ok)
        },
    );
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("region", json!({"region": "eu-west-1", "replicas": 3}))
        .answer("ok", json!({"ok": true}));
    let result = t.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(testing::text(&result), "eu-west-1 x3 true");
    let rounds = t.assert_rounds(2);
    assert_eq!(rounds[0].keys(), ["ok", "region"]);
    let region = serde_json::to_value(&rounds[0].questions()["region"]).unwrap();
    assert_eq!(
        region["params"]["message"],
        "Which region should the database live in?"
    );
    let schema = &region["params"]["requestedSchema"];
    assert_eq!(
        schema["properties"]["region"]["description"],
        "The cloud region."
    );
    assert_eq!(schema["properties"]["replicas"]["type"], "integer");
    assert_eq!(schema["required"], json!(["region"]));
}
