//! Tool arguments are checked against the `inputSchema` the tool advertises, before its
//! handler runs: on both eras, with the answer checker's words, and a switch to turn it
//! off (for the server, or one tool).

#![cfg(feature = "testing")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arctern::server::extract::{Args, RawArgs};
use arctern::server::{ArgumentCheck, McpServer, ToolSpec};
use arctern::testing::{TestClient, text};
use arctern::{Era, ErrorKind};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// How many steps (1 to 100).
    #[schemars(range(min = 1, max = 100))]
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    /// Where to ship.
    address: Address,
    /// What to ship.
    #[schemars(length(min = 1))]
    items: Vec<Item>,
}

#[derive(Deserialize, JsonSchema)]
struct Address {
    #[schemars(length(min = 2, max = 40))]
    city: String,
    #[schemars(regex(pattern = r"^[0-9]{4,5}$"))]
    postcode: String,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    sku: String,
    #[schemars(range(min = 1))]
    quantity: u32,
}

/// A server whose handlers count their runs: a refused call never reaches one.
fn server(runs: Arc<AtomicUsize>, check: Option<ArgumentCheck>) -> McpServer {
    let counted = runs.clone();
    let shipped = runs.clone();
    let unchecked = runs;
    let mut server = McpServer::new("arguments")
        .tool("count", "Counts.", move |Args(c): Args<Count>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { format!("Counted to {}.", c.steps) }
        })
        .tool("ship", "Ships an order.", move |Args(o): Args<Order>| {
            shipped.fetch_add(1, Ordering::SeqCst);
            let units: u32 = o.items.iter().map(|i| i.quantity).sum();
            let skus: Vec<String> = o.items.iter().map(|i| i.sku.clone()).collect();
            let to = format!("{} {}", o.address.postcode, o.address.city);
            async move { format!("{units} unit(s) of {} to {to}.", skus.join(", ")) }
        })
        .tool_spec(
            ToolSpec::new("loose")
                .description("Checks nothing itself.")
                .argument_check(ArgumentCheck::Off),
            move |Args(c): Args<Count>| {
                unchecked.fetch_add(1, Ordering::SeqCst);
                async move { format!("Counted to {}.", c.steps) }
            },
        );
    if let Some(check) = check {
        server = server.argument_check(check);
    }
    server
}

async fn client(era: Era, runs: Arc<AtomicUsize>, check: Option<ArgumentCheck>) -> TestClient {
    TestClient::builder()
        .era(era)
        .connect(server(runs, check))
        .await
        .unwrap()
}

/// The text of a tool error, or the failure.
async fn tool_error(client: &TestClient, tool: &str, arguments: Value) -> String {
    let result = client.call_tool(tool, arguments).await.unwrap();
    assert!(result.is_tool_error(), "{result:?}");
    text(&result)
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_a_tool_error_naming_the_field_on_both_eras() {
    for era in [Era::Modern, Era::Legacy] {
        let runs = Arc::new(AtomicUsize::new(0));
        let c = client(era, runs.clone(), None).await;
        assert_eq!(c.era(), era);
        let ok = c.call_tool("count", json!({"steps": 42})).await.unwrap();
        assert_eq!(text(&ok), "Counted to 42.");
        assert_eq!(
            tool_error(&c, "count", json!({"steps": 500})).await,
            "Invalid arguments for count: steps: must be at most 100",
            "{era:?}"
        );
        assert_eq!(
            tool_error(&c, "count", json!({"steps": 0})).await,
            "Invalid arguments for count: steps: must be at least 1"
        );
        assert_eq!(
            tool_error(&c, "count", json!({})).await,
            "Invalid arguments for count: steps: a value is required"
        );
        assert_eq!(
            tool_error(&c, "count", json!({"steps": "five"})).await,
            "Invalid arguments for count: steps: must be a whole number"
        );
        // Only the call with good arguments ran the handler.
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{era:?}");
    }
}

#[tokio::test]
async fn nested_arguments_are_named_by_their_path() {
    let runs = Arc::new(AtomicUsize::new(0));
    let c = client(Era::Modern, runs.clone(), None).await;
    let order = |city: &str, postcode: &str, quantity: i64| {
        json!({"address": {"city": city, "postcode": postcode},
               "items": [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": quantity}]})
    };
    let ok = c.call_tool("ship", order("Oslo", "0150", 2)).await.unwrap();
    assert_eq!(text(&ok), "3 unit(s) of a, b to 0150 Oslo.");
    assert_eq!(
        tool_error(&c, "ship", order("Oslo", "0150", 0)).await,
        "Invalid arguments for ship: items[1].quantity: must be at least 1"
    );
    assert_eq!(
        tool_error(&c, "ship", order("O", "0150", 1)).await,
        "Invalid arguments for ship: address.city: must be at least 2 characters long"
    );
    assert_eq!(
        tool_error(&c, "ship", order("Oslo", "NW1", 1)).await,
        "Invalid arguments for ship: address.postcode: must match the pattern ^[0-9]{4,5}$"
    );
    assert_eq!(
        tool_error(
            &c,
            "ship",
            json!({"address": {"city": "Oslo", "postcode": "0150"}, "items": []})
        )
        .await,
        "Invalid arguments for ship: items: must have at least 1 item"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn invalid_params_answers_minus_32602_with_the_field_in_data_on_both_eras() {
    for era in [Era::Modern, Era::Legacy] {
        let runs = Arc::new(AtomicUsize::new(0));
        let c = client(era, runs.clone(), Some(ArgumentCheck::InvalidParams)).await;
        let e = c
            .call_tool("count", json!({"steps": 500}))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol, "{era:?}: {e}");
        let error = e.protocol_error().expect("a JSON-RPC error");
        assert_eq!(error.code, arctern::types::ErrorCode::INVALID_PARAMS);
        assert_eq!(
            error.message,
            "Invalid arguments for count: steps: must be at most 100"
        );
        assert_eq!(
            error.data,
            Some(json!({"argument": "steps", "problem": "must be at most 100"}))
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn the_check_can_be_turned_off_for_a_tool_or_the_server() {
    let runs = Arc::new(AtomicUsize::new(0));
    let c = client(Era::Modern, runs.clone(), None).await;
    // The tool's own switch: the handler sees 500 (serde reads any u32).
    let r = c.call_tool("loose", json!({"steps": 500})).await.unwrap();
    assert_eq!(text(&r), "Counted to 500.");
    // A value serde cannot read is still refused, by the extractor.
    let e = tool_error(&c, "loose", json!({"steps": "five"})).await;
    assert!(e.starts_with("Invalid arguments for loose: "), "{e}");

    let runs = Arc::new(AtomicUsize::new(0));
    let c = client(Era::Modern, runs.clone(), Some(ArgumentCheck::Off)).await;
    let r = c.call_tool("count", json!({"steps": 500})).await.unwrap();
    assert_eq!(text(&r), "Counted to 500.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_schema_the_checker_cannot_check_is_a_registration_error_unless_the_check_is_off() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "object"}},
                        "dependentSchemas": {"a": {"required": ["b"]}}});
    let spec = || {
        ToolSpec::new("odd")
            .description("An explicit schema.")
            .input_schema(schema.as_object().cloned().unwrap())
    };
    let raw = |RawArgs(args): RawArgs| async move { Value::Object(args).to_string() };
    let e = McpServer::new("s")
        .tool_spec(spec(), raw)
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("tool \"odd\""), "{e}");
    assert!(e.contains("dependentSchemas"), "{e}");
    assert!(e.contains("ArgumentCheck::Off"), "{e}");
    // Off for the tool, or for the server: it registers, unchecked.
    McpServer::new("s")
        .tool_spec(spec().argument_check(ArgumentCheck::Off), raw)
        .build()
        .unwrap();
    McpServer::new("s")
        .tool_spec(spec(), raw)
        .argument_check(ArgumentCheck::Off)
        .build()
        .unwrap();
    // Added while the server runs: the same rule.
    let server = McpServer::new("s").build().unwrap();
    let e = server.handler().add_tool(spec(), raw).unwrap_err();
    assert!(e.to_string().contains("dependentSchemas"), "{e}");
}

#[tokio::test]
async fn an_explicit_schema_is_checked_too() {
    let schema = json!({"type": "object", "properties": {
        "units": {"enum": ["metric", "imperial"]}}, "required": ["units"],
        "additionalProperties": false});
    let server = McpServer::new("s").tool_spec(
        ToolSpec::new("weather")
            .description("Weather.")
            .input_schema(schema.as_object().cloned().unwrap()),
        |RawArgs(args): RawArgs| async move { Value::Object(args).to_string() },
    );
    let c = TestClient::connect(server).await.unwrap();
    assert_eq!(
        tool_error(&c, "weather", json!({"units": "kelvin"})).await,
        "Invalid arguments for weather: units: \"kelvin\" is not one of the options"
    );
    assert_eq!(
        tool_error(&c, "weather", json!({"units": "metric", "city": "Oslo"})).await,
        "Invalid arguments for weather: city: is not allowed here"
    );
    let ok = c
        .call_tool("weather", json!({"units": "metric"}))
        .await
        .unwrap();
    assert_eq!(text(&ok), r#"{"units":"metric"}"#);
}
