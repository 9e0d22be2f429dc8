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

/// Another question on the key of `Region`.
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which zone?")]
struct Zone {
    zone: String,
}

/// A nested object cannot be a form field.
#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "address", message = "Where?")]
struct Shipping {
    address: Address,
}

#[test]
fn two_questions_on_one_key_fail_build_naming_the_tool_and_the_key() {
    let err = McpServer::new("db")
        .tool(
            "provision",
            "Provisions.",
            |Answer(r): Answer<Region>, Answer(z): Answer<Zone>| async move {
                format!("{} {}", r.region, z.zone)
            },
        )
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("provision"), "{err}");
    assert!(
        err.contains("two questions use the key \"region\""),
        "{err}"
    );
    assert!(err.contains("Region") && err.contains("Zone"), "{err}");
}

#[test]
fn one_question_taken_twice_is_one_question() {
    use arctern::server::mrtr::AnswerOutcome;
    McpServer::new("db")
        .tool(
            "provision",
            "Provisions.",
            |Answer(r): Answer<Region>, AnswerOutcome(_): AnswerOutcome<Region>| async move {
                r.region
            },
        )
        .build()
        .unwrap();
}

#[test]
fn a_question_that_cannot_be_a_form_fails_build() {
    let err = McpServer::new("shop")
        .tool("ship", "Ships.", |Answer(s): Answer<Shipping>| async move {
            s.address.street
        })
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("ship"), "{err}");
    assert!(err.contains("Shipping cannot be asked in a form"), "{err}");
}
