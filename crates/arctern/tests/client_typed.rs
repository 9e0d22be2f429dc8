//! Typed arguments and typed results on the client: `call_tool` and `get_prompt` take any
//! `Serialize` value, `call_tool_json` decodes `structuredContent`, and every way this can go
//! wrong is a clear error, never a panic. Against a real `McpServer` over the in-memory
//! transport (every message serialized and parsed as over a wire).

use std::collections::BTreeMap;

use arctern::ErrorKind;
use arctern::client::{CallOptions, Client, Continuation, Outcome};
use arctern::server::extract::Args;
use arctern::server::{Json, McpServer};
use arctern::types::prompts::PromptMessage;
use arctern::types::tools::{CallToolResult, StructuredError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the client sends to `forecast` (and the server reads).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Query {
    city: String,
    days: u8,
}

/// What `forecast` answers with.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Forecast {
    city: String,
    high: i32,
    rain: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Topic {
    topic: String,
}

async fn client() -> Client {
    let server = McpServer::new("weather")
        .tool(
            "forecast",
            "Tomorrow's forecast.",
            |Args(q): Args<Query>| async move {
                if q.city == "Atlantis" {
                    return Err(format!("no forecast for {}", q.city));
                }
                Ok(Json(Forecast {
                    city: q.city,
                    high: 20 + i32::from(q.days),
                    rain: false,
                }))
            },
        )
        .tool("plain", "Text only.", || async { "sunny, 21 degrees" })
        .tool(
            "raw",
            "Echoes its arguments.",
            |Args(v): Args<serde_json::Value>| async move { CallToolResult::structured(v) },
        )
        .prompt("brief", "A brief.", |Args(t): Args<Topic>| async move {
            vec![PromptMessage::user_text(format!(
                "Brief me on {}.",
                t.topic
            ))]
        })
        .build()
        .expect("a valid server");
    Client::builder().connect_memory(server).await.unwrap()
}

#[tokio::test]
async fn arguments_are_any_serializable_value() {
    let client = client().await;
    let query = Query {
        city: "Oslo".into(),
        days: 1,
    };
    // A struct, by reference or by value; a json! value still works.
    let by_ref = client.call_tool("forecast", &query).await.unwrap();
    let by_value = client.call_tool("forecast", query).await.unwrap();
    let by_json = client
        .call_tool("forecast", json!({"city": "Oslo", "days": 1}))
        .await
        .unwrap();
    assert_eq!(by_ref, by_value);
    assert_eq!(by_ref, by_json);
    assert_eq!(
        by_ref.structured_content,
        Some(json!({"city": "Oslo", "high": 21, "rain": false}))
    );
    // A map, and `()` for no arguments.
    let map: BTreeMap<&str, u8> = [("n", 3)].into();
    let raw = client.call_tool("raw", &map).await.unwrap();
    assert_eq!(raw.structured_content, Some(json!({"n": 3})));
    let none = client.call_tool("plain", ()).await.unwrap();
    assert!(!none.is_tool_error());
    // The other entry points take the same.
    let with = client
        .call_tool_with("raw", &map, CallOptions::new())
        .await
        .unwrap();
    assert_eq!(with.structured_content, Some(json!({"n": 3})));
    let once = client
        .call_tool_once("raw", &map, Continuation::new())
        .await
        .unwrap();
    let Outcome::Complete(once) = once else {
        panic!("{once:?}")
    };
    assert_eq!(once.structured_content, Some(json!({"n": 3})));
}

#[tokio::test]
async fn arguments_that_are_not_an_object_fail_before_anything_is_sent() {
    let client = client().await;
    let e = client.call_tool("raw", vec![1, 2]).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "the arguments of tool \"raw\" must be a JSON object, not an array"
    );
    // serde_json cannot write a map with tuple keys: an error, not a panic.
    let unwritable: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let e = client.call_tool("raw", &unwritable).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Codec);
    assert!(
        e.to_string()
            .starts_with("the arguments of tool \"raw\" do not serialize to JSON: "),
        "{e}"
    );
    let e = client
        .get_prompt("brief", json!({"topic": 7}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "argument \"topic\" of prompt \"brief\" must be a string, not a number"
    );
}

#[tokio::test]
async fn call_tool_json_decodes_the_structured_output() {
    let client = client().await;
    let forecast: Forecast = client
        .call_tool_json(
            "forecast",
            Query {
                city: "Oslo".into(),
                days: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Oslo".into(),
            high: 22,
            rain: false
        }
    );
    // The same in two steps, keeping the whole result.
    let result = client
        .call_tool("forecast", json!({"city": "Kyoto", "days": 0}))
        .await
        .unwrap();
    assert_eq!(result.json::<Forecast>().unwrap().city, "Kyoto");
}

#[tokio::test]
async fn call_tool_json_fails_clearly_on_errors_text_and_other_shapes() {
    let client = client().await;

    // The tool reported an error: ErrorKind::Tool, the whole result in the source.
    let e = client
        .call_tool_json::<Forecast>("forecast", json!({"city": "Atlantis", "days": 1}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tool);
    assert_eq!(
        e.to_string(),
        "tool \"forecast\": the tool reported an error: no forecast for Atlantis"
    );
    let source = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<StructuredError>())
        .expect("the details ride along");
    let StructuredError::ToolError(result) = source else {
        panic!("{source:?}")
    };
    assert!(result.is_tool_error());

    // No structured content: a decoding error that quotes the text.
    let e = client
        .call_tool_json::<Forecast>("plain", ())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Codec);
    assert_eq!(
        e.to_string(),
        "tool \"plain\": no structuredContent in the result, only text: sunny, 21 degrees"
    );

    // Structured content of another shape.
    let e = client
        .call_tool_json::<Forecast>("raw", json!({"city": "Oslo"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Codec);
    let message = e.to_string();
    assert!(
        message.starts_with("tool \"raw\": structuredContent is not a ")
            && message.contains("Forecast")
            && message.contains("missing field `high`"),
        "{message}"
    );

    // `?` on `CallToolResult::json` gives the same kinds.
    let result = client
        .call_tool("forecast", json!({"city": "Atlantis", "days": 1}))
        .await
        .unwrap();
    let e = arctern::Error::from(result.json::<Forecast>().unwrap_err());
    assert_eq!(e.kind(), ErrorKind::Tool);
    assert!(e.to_string().starts_with("tool result: "), "{e}");
}

#[tokio::test]
async fn prompt_arguments_are_any_serializable_map_of_strings() {
    #[derive(Serialize)]
    struct Brief<'a> {
        topic: &'a str,
    }
    let client = client().await;
    let prompt = client
        .get_prompt("brief", Brief { topic: "MRTR" })
        .await
        .unwrap();
    let text = serde_json::to_value(&prompt.messages[0].content).unwrap();
    assert_eq!(text["text"], "Brief me on MRTR.");
    let map: BTreeMap<String, String> = [("topic".to_owned(), "tides".to_owned())].into();
    let prompt = client.get_prompt("brief", &map).await.unwrap();
    let text = serde_json::to_value(&prompt.messages[0].content).unwrap();
    assert_eq!(text["text"], "Brief me on tides.");
}
