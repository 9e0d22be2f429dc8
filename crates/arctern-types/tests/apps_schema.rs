//! The MCP Apps types validate against the ext-apps schema (spec 2026-01-26), round-trip,
//! and keep what the schema does not know.

use arctern_fixtures::schema_check::{APPS, validate_for};
use arctern_types::apps::*;
use arctern_types::meta::Meta;
use arctern_types::{ClientCapabilities, Resource, Tool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Validates `json` as `def`, reads it as `T`, and checks it writes back the same JSON.
fn round_trip<T: Serialize + DeserializeOwned>(def: &str, json: Value) -> T {
    validate_for(APPS, def, &json).unwrap_or_else(|e| panic!("{e}\n  value: {json}"));
    let t: T = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&t).unwrap(),
        json,
        "round trip of {def}"
    );
    t
}

/// Serializes `value` and validates it as `def`.
fn valid<T: Serialize>(def: &str, value: &T) -> Value {
    let json = serde_json::to_value(value).unwrap();
    validate_for(APPS, def, &json).unwrap_or_else(|e| panic!("{e}\n  value: {json}"));
    json
}

#[test]
fn tool_meta() {
    let ui: UiToolMeta = round_trip(
        "McpUiToolMeta",
        json!({"resourceUri": "ui://weather/view.html", "visibility": ["model", "app"]}),
    );
    assert_eq!(ui.visibility.unwrap(), [Visibility::MODEL, Visibility::APP]);
    let ui: UiToolMeta = round_trip("McpUiToolMeta", json!({"visibility": ["app"]}));
    assert!(ui.resource_uri.is_none() && !ui.is_visible_to_model());
    round_trip::<UiToolMeta>("McpUiToolMeta", json!({}));
    valid(
        "McpUiToolMeta",
        &UiToolMeta::new("ui://a/b.html").with_visibility([Visibility::APP]),
    );
    for v in [Visibility::MODEL, Visibility::APP] {
        valid("McpUiToolVisibility", &v);
    }
    // The schema forbids a view's settings on a tool; the type keeps them as unknown members
    // (for the checks to report), and reads unknown visibilities without granting anything.
    let odd = json!({"resourceUri": "ui://a", "csp": {}, "visibility": ["robot"]});
    assert!(validate_for(APPS, "McpUiToolMeta", &odd).is_err());
    let ui: UiToolMeta = serde_json::from_value(odd.clone()).unwrap();
    assert!(ui.extra.contains_key("csp"));
    assert!(!ui.is_visible_to_model() && !ui.is_callable_by_app());
    assert_eq!(serde_json::to_value(&ui).unwrap(), odd);
}

#[test]
fn resource_meta() {
    let full = json!({
        "csp": {
            "connectDomains": ["https://api.example.com", "wss://live.example.com"],
            "resourceDomains": ["https://*.cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://example.com"]
        },
        "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}},
        "domain": "a904794854a047f6.claudemcpcontent.com",
        "prefersBorder": true
    });
    let ui: UiResourceMeta = round_trip("McpUiResourceMeta", full.clone());
    let csp = ui.csp.clone().unwrap();
    assert_eq!(csp.sources().count(), 5);
    round_trip::<UiResourceCsp>("McpUiResourceCsp", full["csp"].clone());
    round_trip::<UiResourcePermissions>("McpUiResourcePermissions", full["permissions"].clone());
    round_trip::<UiResourceMeta>("McpUiResourceMeta", json!({"prefersBorder": false}));
    round_trip::<UiResourceMeta>("McpUiResourceMeta", json!({}));

    // Built with the builders: the same JSON.
    let mut built = UiResourceMeta::default();
    built.csp = Some(
        UiResourceCsp::new()
            .connect(["https://api.example.com", "wss://live.example.com"])
            .resources(["https://*.cdn.example.com"])
            .frames(["https://www.youtube.com"])
            .base_uris(["https://example.com"]),
    );
    built.permissions = Some(
        UiResourcePermissions::new()
            .camera()
            .microphone()
            .geolocation()
            .clipboard_write(),
    );
    built.domain = Some("a904794854a047f6.claudemcpcontent.com".into());
    built.prefers_border = Some(true);
    assert_eq!(valid("McpUiResourceMeta", &built), full);
    assert_eq!(built, ui);

    // A member from a newer revision survives.
    let newer = json!({"csp": {"workerDomains": ["https://w.example.com"]}, "theme": "dark"});
    let ui: UiResourceMeta = serde_json::from_value(newer.clone()).unwrap();
    assert_eq!(ui.extra["theme"], "dark");
    assert_eq!(serde_json::to_value(&ui).unwrap(), newer);
}

#[test]
fn client_capabilities() {
    let settings: UiClientCapabilities = round_trip(
        "McpUiClientCapabilities",
        json!({"mimeTypes": ["text/html;profile=mcp-app"]}),
    );
    assert!(settings.renders_apps());
    valid("McpUiClientCapabilities", &UiClientCapabilities::apps());
    // The core schema's example of a client declaring the extension.
    let path = arctern_fixtures::examples_dir("2026-07-28")
        .join("ClientCapabilities")
        .join("extensions-ui-mime-types.json");
    let caps: ClientCapabilities =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(client_supports_apps(&caps));
    let settings = UiClientCapabilities::from_capabilities(&caps).unwrap();
    valid("McpUiClientCapabilities", &settings);
}

#[test]
fn listings_are_read_through_the_accessors() {
    let tool: Tool = serde_json::from_value(json!({
        "name": "show", "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": "ui://s/v.html"}, "ui/resourceUri": "ui://s/v.html"}
    }))
    .unwrap();
    let ui = UiToolMeta::from_tool(&tool).unwrap().unwrap();
    assert_eq!(ui.resource_uri.as_deref(), Some("ui://s/v.html"));
    valid("McpUiToolMeta", &ui);

    let resource: Resource = serde_json::from_value(json!({
        "uri": "ui://s/v.html", "name": "view", "mimeType": MIME_TYPE,
        "_meta": {"ui": {"prefersBorder": true}}
    }))
    .unwrap();
    let ui = UiResourceMeta::from_resource(&resource).unwrap().unwrap();
    assert_eq!(ui.prefers_border, Some(true));
    let mut meta = Meta::new();
    ui.write_to(&mut meta);
    assert_eq!(meta["ui"], json!({"prefersBorder": true}));
}
