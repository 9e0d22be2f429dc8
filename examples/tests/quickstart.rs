//! The README's server (`examples/src/quickstart.rs`, which `readmes.rs` holds to the READMEs'
//! text), compiled as it is and its tool run through the test kit: the question it asks, the
//! options it offers, and the result once answered.

// The program's own `main` is not the test harness's.
#![allow(dead_code)]

include!("../src/quickstart.rs");

#[tokio::test]
async fn the_readme_server_provisions_after_asking_the_region() {
    use arctern::testing::{self, TestClient};
    use serde_json::json;

    let server =
        McpServer::new("provisioner").tool("provision", "Provision a database.", provision);
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("region", json!({"region": "eu-west-1"}));
    let result = t
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(testing::text(&result), "Provisioned orders in eu-west-1.");
    let rounds = t.assert_rounds(2);
    let question = serde_json::to_value(&rounds[0].questions()["region"]).unwrap();
    assert_eq!(
        question["params"]["message"],
        "Which region should orders live in?"
    );
    let schema = &question["params"]["requestedSchema"]["properties"]["region"];
    assert_eq!(
        schema["oneOf"],
        json!([
            {"const": "eu-west-1", "title": "Ireland"},
            {"const": "us-east-1", "title": "Virginia"}
        ]),
        "{question}"
    );
}
