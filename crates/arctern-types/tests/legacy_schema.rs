//! The legacy types validate against the 2025-11-25 and 2025-06-18 schemas, round-trip, and
//! 2026-07-28 results in their legacy shape validate as legacy results.

use arctern_fixtures::schema_check::validate_for;
use arctern_types::legacy::{
    self, ElicitRequestUrlParams as LegacyUrlParams, ElicitationCompleteNotification,
    ElicitationCompleteNotificationParams, EmptyResult, InitializeRequest, InitializeRequestParams,
    InitializeResult, InitializeResultResponse, InitializedNotification, NotificationParams,
    PingRequest, RootsListChangedNotification, ServerRequest, SetLevelRequest,
    SetLevelRequestParams, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest,
    UnsubscribeRequestParams,
};
use arctern_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const V11: &str = "2025-11-25";
const V06: &str = "2025-06-18";

/// Serializes `value`, validates it as `def` of `revision`, and checks that it reads back to
/// the same JSON.
fn check<T: Serialize + DeserializeOwned>(revision: &str, def: &str, value: &T) -> Value {
    let json = serde_json::to_value(value).unwrap();
    if let Err(e) = validate_for(revision, def, &json) {
        panic!("{e}\n  value: {json}");
    }
    let back: T = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        json,
        "round trip of {def}"
    );
    json
}

fn both<T: Serialize + DeserializeOwned>(def: &str, value: &T) {
    check(V11, def, value);
    check(V06, def, value);
}

fn id() -> RequestId {
    RequestId::Number(1)
}

fn client_caps() -> ClientCapabilities {
    serde_json::from_value(
        json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}}),
    )
    .unwrap()
}

fn server_caps() -> ServerCapabilities {
    serde_json::from_value(json!({
        "logging": {}, "completions": {},
        "tools": {"listChanged": true}, "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "extensions": {"io.example/x": {}}
    }))
    .unwrap()
}

#[test]
fn handshake_validates() {
    let params = InitializeRequestParams::new(
        "2025-11-25",
        client_caps(),
        Implementation::new("client", "1.0.0"),
    );
    both(
        "InitializeRequest",
        &InitializeRequest::new(id(), methods::legacy::INITIALIZE, params),
    );
    let result = InitializeResult::new(
        "2025-11-25",
        legacy::server_capabilities_for(&server_caps()),
        Implementation::new("server", "1.0.0"),
    )
    .with_instructions("Use the tools.");
    // Extensions are announced on the legacy wire too (2025-era hosts read MCP Apps there).
    assert!(
        result
            .capabilities
            .extensions
            .as_ref()
            .unwrap()
            .contains_key("io.example/x")
    );
    both("InitializeResult", &result);
    both(
        "JSONRPCMessage",
        &InitializeResultResponse::new(id(), result.clone()),
    );
    let note = InitializedNotification::new(
        methods::legacy::NOTIFICATIONS_INITIALIZED,
        NotificationParams::default(),
    );
    both("InitializedNotification", &note);
    let bare: InitializedNotification =
        serde_json::from_value(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
    assert!(bare.params.is_none());
}

#[test]
fn session_requests_validate() {
    let ping: PingRequest =
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})).unwrap();
    both("PingRequest", &ping);
    both("EmptyResult", &EmptyResult::default());
    both(
        "SetLevelRequest",
        &SetLevelRequest::new(
            id(),
            methods::legacy::LOGGING_SET_LEVEL,
            SetLevelRequestParams::new(LoggingLevel::Warning),
        ),
    );
    both(
        "SubscribeRequest",
        &SubscribeRequest::new(
            id(),
            methods::legacy::RESOURCES_SUBSCRIBE,
            SubscribeRequestParams::new("test://watched-resource"),
        ),
    );
    both(
        "UnsubscribeRequest",
        &UnsubscribeRequest::new(
            id(),
            methods::legacy::RESOURCES_UNSUBSCRIBE,
            UnsubscribeRequestParams::new("test://watched-resource"),
        ),
    );
    both(
        "RootsListChangedNotification",
        &RootsListChangedNotification::new(
            methods::legacy::NOTIFICATIONS_ROOTS_LIST_CHANGED,
            NotificationParams::default(),
        ),
    );
    check(
        V11,
        "ElicitationCompleteNotification",
        &ElicitationCompleteNotification::new(
            methods::legacy::NOTIFICATIONS_ELICITATION_COMPLETE,
            ElicitationCompleteNotificationParams::new("e-1"),
        ),
    );
    // Server notifications on the legacy wire have no subscription id.
    let updated = JsonRpcNotification::new(
        methods::NOTIFICATIONS_RESOURCES_UPDATED,
        ResourceUpdatedNotificationParams::without_subscription("test://watched-resource"),
    );
    both("ResourceUpdatedNotification", &updated);
}

fn form() -> RequestedSchema {
    RequestedSchema::new().required("name", PrimitiveSchemaDefinition::string())
}

fn sampling() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Hi")], 100)
}

/// Each input request as the server→client request of each revision, validated as that
/// revision's request and as one of its `ServerRequest`s.
#[test]
fn server_requests_validate() {
    for (revision, version) in [
        (V11, ProtocolVersion::V2025_11_25),
        (V06, ProtocolVersion::V2025_06_18),
    ] {
        let asks = [
            ("ElicitRequest", InputRequest::elicit_form("Name?", form())),
            ("CreateMessageRequest", InputRequest::sample(sampling())),
            ("ListRootsRequest", InputRequest::list_roots()),
        ];
        for (def, ask) in asks {
            let request = ServerRequest::from_input_request(ask.clone(), &version, String::new)
                .unwrap()
                .to_jsonrpc(RequestId::Number(9))
                .unwrap();
            let json = serde_json::to_value(&request).unwrap();
            for def in [def, "ServerRequest", "JSONRPCRequest"] {
                validate_for(revision, def, &json).unwrap_or_else(|e| panic!("{e}\n{json}"));
            }
            let back = ServerRequest::from_parts(&request.method, request.params.clone()).unwrap();
            assert_eq!(back.to_input_request().unwrap(), ask);
        }
        let ping = ServerRequest::Ping(legacy::RequestParams::default());
        let json = serde_json::to_value(ping.to_jsonrpc(RequestId::Number(2)).unwrap()).unwrap();
        validate_for(revision, "PingRequest", &json).unwrap();
    }
    let url = ServerRequest::from_input_request(
        InputRequest::elicit_url("Authorize", "https://example.com/auth"),
        &ProtocolVersion::V2025_11_25,
        || "elicit-1".into(),
    )
    .unwrap();
    let json = serde_json::to_value(url.to_jsonrpc(RequestId::Number(3)).unwrap()).unwrap();
    validate_for(V11, "ElicitRequest", &json).unwrap();
    assert_eq!(json["params"]["elicitationId"], "elicit-1");
    // Without the synthesized id the 2025-11-25 schema refuses a URL elicitation.
    let mut missing = json.clone();
    missing["params"]
        .as_object_mut()
        .unwrap()
        .remove("elicitationId");
    assert!(validate_for(V11, "ElicitRequest", &missing).is_err());
    // Legacy request params keep their `_meta`.
    let with_meta: legacy::CreateMessageRequestParams = serde_json::from_value(json!({
        "_meta": {"progressToken": 4}, "messages": [], "maxTokens": 10
    }))
    .unwrap();
    check(V11, "CreateMessageRequestParams", &with_meta);
}

/// Answers the clients send back read as the shared result types.
#[test]
fn client_results_read_as_input_responses() {
    let elicit = json!({"action": "accept", "content": {"name": "Ada"}, "_meta": {}});
    validate_for(V11, "ElicitResult", &elicit).unwrap();
    let r = InputResponse::decode_for(InputRequestKind::Elicitation, elicit).unwrap();
    assert!(r.as_elicit().unwrap().is_accepted());
    let sample = json!({"role": "assistant", "content": {"type": "text", "text": "hi"},
        "model": "m", "stopReason": "endTurn"});
    validate_for(V06, "CreateMessageResult", &sample).unwrap();
    assert!(InputResponse::decode_for(InputRequestKind::Sampling, sample).is_ok());
    let roots = json!({"roots": [{"uri": "file:///repo", "name": "repo"}]});
    validate_for(V06, "ListRootsResult", &roots).unwrap();
    assert!(InputResponse::decode_for(InputRequestKind::Roots, roots).is_ok());
}

/// 2026-07-28 results, stripped of their modern members, are valid legacy results (and not
/// before: nothing else needs to change).
#[test]
fn modern_results_in_legacy_shape_validate() {
    let tool = Tool::new(
        "echo",
        "Echoes.",
        serde_json::from_value(json!({"type": "object"})).unwrap(),
    );
    let cases: Vec<(&str, Value)> = vec![
        (
            "CallToolResult",
            serde_json::to_value(CallToolResult::text("hello")).unwrap(),
        ),
        (
            "ListToolsResult",
            serde_json::to_value(ListToolsResult::new(vec![tool])).unwrap(),
        ),
        (
            "GetPromptResult",
            serde_json::to_value(GetPromptResult::new(vec![PromptMessage::user_text("hi")]))
                .unwrap(),
        ),
        (
            "ReadResourceResult",
            serde_json::to_value(ReadResourceResult::text("test://x", "text/plain", "x")).unwrap(),
        ),
    ];
    for (def, modern) in cases {
        assert!(modern.get("resultType").is_some(), "{def}: {modern}");
        let stripped = legacy::to_legacy_result(&modern).unwrap();
        for key in legacy::MODERN_ONLY_RESULT_MEMBERS {
            assert!(stripped.get(key).is_none());
        }
        for revision in [V11, V06] {
            validate_for(revision, def, &stripped).unwrap_or_else(|e| panic!("{e}\n{stripped}"));
        }
        // And a legacy result reads back as the 2026-07-28 type (missing resultType = complete).
        let back: GenericResult = serde_json::from_value(stripped).unwrap();
        assert!(back.result_type.is_complete());
    }
}

#[test]
fn legacy_errors_validate() {
    let url = legacy::url_elicitation_required(vec![LegacyUrlParams::new(
        "Connect your account",
        "https://example.com/connect",
        "e-2",
    )]);
    let response = JsonRpcErrorResponse::new(Some(id()), url);
    let json = serde_json::to_value(&response).unwrap();
    validate_for(V11, "URLElicitationRequiredError", &json).unwrap();
    let nf = JsonRpcErrorResponse::new(Some(id()), legacy::resource_not_found("test://nope"));
    let json = serde_json::to_value(&nf).unwrap();
    validate_for(V11, "JSONRPCErrorResponse", &json).unwrap();
    validate_for(V06, "JSONRPCError", &json).unwrap();
    assert_eq!(json["error"]["code"], -32002);
    let version = JsonRpcErrorResponse::new(
        Some(id()),
        legacy::unsupported_protocol_version(&["2025-11-25", "2025-06-18"], "1.0.0"),
    );
    validate_for(
        V11,
        "JSONRPCErrorResponse",
        &serde_json::to_value(&version).unwrap(),
    )
    .unwrap();
}
