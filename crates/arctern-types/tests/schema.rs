//! Values built with the crate's constructors validate against the official 2026-07-28
//! JSON Schema, every `$def` of that schema has a Rust type, and the validator itself works
//! for the three revisions.

mod common;

use std::collections::BTreeSet;

use arctern_fixtures::schema_check::{self, validate, validate_for};
use arctern_types::error::{self, UnsupportedProtocolVersionData};
use arctern_types::methods::{self, RequestMethod};
use arctern_types::*;
use serde::Serialize;
use serde_json::{Value, json};

/// Serializes `value` and asserts it is valid for every def in `defs`.
fn check<T: Serialize>(defs: &[&str], value: &T) {
    let json = serde_json::to_value(value).unwrap();
    for def in defs {
        if let Err(e) = validate(def, &json) {
            panic!("{e}\n  value: {json}");
        }
    }
}

/// Serializes `value` and asserts it is invalid for `def`; returns the error.
fn check_invalid<T: Serialize>(def: &str, value: &T) -> String {
    let json = serde_json::to_value(value).unwrap();
    validate(def, &json).expect_err(&format!("{def} should reject {json}"))
}

fn object(v: Value) -> JsonObject {
    v.as_object().cloned().expect("an object")
}

fn meta() -> RequestMeta {
    RequestMeta::new("2026-07-28", ClientCapabilities::default())
        .with_client_info(Implementation::new("test-client", "1.0.0"))
}

fn id() -> RequestId {
    RequestId::Number(7)
}

fn form_schema() -> RequestedSchema {
    RequestedSchema::new()
        .required(
            "name",
            PrimitiveSchemaDefinition::string().with_title("Name"),
        )
        .optional(
            "email",
            StringSchema::new()
                .with_format(StringFormat::Email)
                .with_length(Some(3), None),
        )
        .optional(
            "age",
            PrimitiveSchemaDefinition::integer().with_description("Age"),
        )
        .optional(
            "ratio",
            NumberSchema::new(NumberType::Number).with_range(Some(0.0), Some(0.5)),
        )
        .optional("ok", PrimitiveSchemaDefinition::boolean())
        .optional("size", PrimitiveSchemaDefinition::single_select(["s", "m"]))
        .optional(
            "color",
            PrimitiveSchemaDefinition::titled_single_select([("#f00", "Red")]),
        )
        .optional("tags", PrimitiveSchemaDefinition::multi_select(["a", "b"]))
        .optional(
            "flavours",
            TitledMultiSelectEnumSchema::new([("v", "Vanilla"), ("c", "Chocolate")]),
        )
        .optional("legacy", LegacyTitledEnumSchema::new(["x"], ["X"]))
}

fn sampling_params() -> CreateMessageRequestParams {
    let mut p = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("Weather in Paris?"),
            SamplingMessage::from_blocks(
                Role::Assistant,
                vec![
                    ToolUseContent::new("call_1", "get_weather", object(json!({"city": "Paris"})))
                        .into(),
                ],
            ),
            SamplingMessage::new(
                Role::User,
                ToolResultContent::new("call_1", vec![ContentBlock::text("18°C")]),
            ),
        ],
        100,
    )
    .with_system_prompt("Be brief.")
    .with_model_preferences(
        ModelPreferences::new()
            .with_hint("claude")
            .with_intelligence_priority(0.8)
            .with_speed_priority(1.0),
    );
    p.temperature = Some(0.2);
    p.include_context = Some(IncludeContext::None);
    p.tools = Some(vec![Tool::new(
        "get_weather",
        "Weather for a city",
        object(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
    )]);
    p.tool_choice = Some(ToolChoice::new(ToolChoiceMode::Auto));
    p
}

fn every_input_request() -> Vec<InputRequest> {
    vec![
        InputRequest::elicit_form("Who are you?", form_schema()),
        InputRequest::elicit_url("Set your API key", "https://example.com/key"),
        InputRequest::sample(sampling_params()),
        InputRequest::list_roots(),
    ]
}

fn tool() -> Tool {
    Tool::new(
        "get_weather",
        "Get the weather",
        object(
            json!({"type": "object", "properties": {"location": {"type": "string"}},
                      "required": ["location"]}),
        ),
    )
    .with_title("Weather")
    .with_output_schema(object(
        json!({"type": "array", "items": {"type": "number"}}),
    ))
    .with_annotations(ToolAnnotations::new().with_read_only_hint(true))
    .with_icons(vec![
        Icon::new("https://example.com/i.png")
            .with_mime_type("image/png")
            .with_sizes(["48x48"])
            .with_theme(implementation::IconTheme::Dark),
    ])
}

#[test]
fn tool_results_validate() {
    let annotated = TextContent::new("note")
        .with_annotations(Annotations::for_audience([Role::User]).with_priority(1.0));
    let results = [
        CallToolResult::text("hello"),
        CallToolResult::error("it broke"),
        CallToolResult::structured(json!({"temperature": 22.5})),
        CallToolResult::structured(json!([1, 2, 3])),
        CallToolResult::structured(Value::Null),
        CallToolResult::new(vec![
            annotated.into(),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::resource_link("file:///a.txt", "a.txt"),
            ContentBlock::resource(
                TextResourceContents::new("test://x", "x").with_mime_type("text/plain"),
            ),
            ContentBlock::resource(BlobResourceContents::new("test://y", "AAAA")),
        ]),
    ];
    for r in &results {
        check(&["CallToolResult", "Result", "ServerResult"], r);
        let response = JsonRpcResponse::new(id(), Outcome::from(r.clone()));
        check(
            &[
                "CallToolResultResponse",
                "JSONRPCResultResponse",
                "JSONRPCResponse",
                "JSONRPCMessage",
            ],
            &response,
        );
    }
}

#[test]
fn input_required_results_validate_with_each_kind_of_request() {
    for request in every_input_request() {
        check(&["InputRequest"], &request);
        let def = match request.kind() {
            InputRequestKind::Elicitation => "ElicitRequest",
            InputRequestKind::Sampling => "CreateMessageRequest",
            InputRequestKind::Roots => "ListRootsRequest",
            other => panic!("no schema name for {other}"),
        };
        check(&[def], &request);
        check(&["ClientCapabilities"], &request.required_capabilities());
        let result = InputRequiredResult::new().with_input_request("key", request);
        check(&["InputRequiredResult", "ServerResult"], &result);
        check(
            &["CallToolResultResponse"],
            &JsonRpcResponse::new(id(), Outcome::<CallToolResult>::from(result.clone())),
        );
        check(
            &["GetPromptResultResponse"],
            &JsonRpcResponse::new(id(), Outcome::<GetPromptResult>::from(result.clone())),
        );
        check(
            &["ReadResourceResultResponse"],
            &JsonRpcResponse::new(id(), Outcome::<ReadResourceResult>::from(result)),
        );
    }
    let mut all = InputRequiredResult::new().with_request_state("eyJ4IjoxfQ");
    for (i, r) in every_input_request().into_iter().enumerate() {
        all = all.with_input_request(format!("k{i}"), r);
    }
    check(&["InputRequiredResult"], &all);
    check(&["InputRequests"], &all.input_requests);
    check(
        &["InputRequiredResult"],
        &InputRequiredResult::new().with_request_state("s"),
    );
    // Form params on their own.
    check(
        &["ElicitRequestFormParams", "ElicitRequestParams"],
        &ElicitRequestFormParams::new("m", form_schema()),
    );
    check(
        &["ElicitRequestURLParams", "ElicitRequestParams"],
        &ElicitRequestUrlParams::new("m", "https://x.example"),
    );
    check(&["CreateMessageRequestParams"], &sampling_params());
}

#[test]
fn field_schemas_validate() {
    for (name, field) in form_schema().properties {
        let def = match &field {
            PrimitiveSchemaDefinition::String(_) => "StringSchema",
            PrimitiveSchemaDefinition::Number(_) => "NumberSchema",
            PrimitiveSchemaDefinition::Boolean(_) => "BooleanSchema",
            PrimitiveSchemaDefinition::Enum(EnumSchema::LegacyTitled(_)) => {
                "LegacyTitledEnumSchema"
            }
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(s)) => {
                check(&["SingleSelectEnumSchema"], s);
                match s {
                    SingleSelectEnumSchema::Untitled(_) => "UntitledSingleSelectEnumSchema",
                    SingleSelectEnumSchema::Titled(_) => "TitledSingleSelectEnumSchema",
                }
            }
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(s)) => {
                check(&["MultiSelectEnumSchema"], s);
                match s {
                    MultiSelectEnumSchema::Untitled(_) => "UntitledMultiSelectEnumSchema",
                    MultiSelectEnumSchema::Titled(_) => "TitledMultiSelectEnumSchema",
                }
            }
        };
        let json = serde_json::to_value(&field).unwrap();
        for d in [def, "PrimitiveSchemaDefinition"] {
            validate(d, &json).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        if let PrimitiveSchemaDefinition::Enum(e) = &field {
            check(&["EnumSchema"], e);
        }
    }
}

#[test]
fn cacheable_results_validate_only_with_their_hints() {
    let discover = DiscoverResult::new(["2026-07-28"], ServerCapabilities::default())
        .with_instructions("Use get_weather.")
        .with_server_info(Implementation::new("server", "1.0.0"));
    let e = check_invalid("DiscoverResult", &discover);
    assert!(e.contains("ttlMs"), "{e}");
    let discover = discover.with_cache_hints(3_600_000, CacheScope::Public);
    check(&["DiscoverResult", "CacheableResult"], &discover);
    check(
        &["DiscoverResultResponse"],
        &JsonRpcResponse::new(id(), discover),
    );

    let tools = ListToolsResult::new(vec![tool()]).with_next_cursor("c2");
    let e = check_invalid("ListToolsResult", &tools);
    assert!(e.contains("cacheScope"), "{e}");
    let tools = tools.with_cache_hints(0, CacheScope::Private);
    check(
        &["ListToolsResult", "PaginatedResult", "CacheableResult"],
        &tools,
    );
    check(
        &["ListToolsResultResponse"],
        &JsonRpcResponse::new(id(), tools),
    );

    let prompts = ListPromptsResult::new(vec![
        Prompt::new("code_review", "Review code")
            .with_title("Code review")
            .with_argument(PromptArgument::required("code", "The code"))
            .with_argument(PromptArgument::new("style").with_description("Style guide")),
    ])
    .with_cache_hints(1000, CacheScope::Public);
    check(&["ListPromptsResult"], &prompts);
    check(
        &["ListPromptsResultResponse"],
        &JsonRpcResponse::new(id(), prompts),
    );

    let resources = ListResourcesResult::new(vec![
        Resource::new("file:///a.rs", "a.rs")
            .with_title("A")
            .with_description("a file")
            .with_mime_type("text/x-rust"),
    ])
    .with_cache_hints(1000, CacheScope::Private);
    check(&["ListResourcesResult"], &resources);
    check(
        &["ListResourcesResultResponse"],
        &JsonRpcResponse::new(id(), resources),
    );

    let templates = ListResourceTemplatesResult::new(vec![
        ResourceTemplate::new("file:///{path}", "files").with_mime_type("text/plain"),
    ])
    .with_cache_hints(1000, CacheScope::Public);
    check(&["ListResourceTemplatesResult"], &templates);
    check(
        &["ListResourceTemplatesResultResponse"],
        &JsonRpcResponse::new(id(), templates),
    );

    for read in [
        ReadResourceResult::text("test://static-text", "text/plain", "hello"),
        ReadResourceResult::blob("test://static-binary", "image/png", "iVBORw0KGgo="),
    ] {
        check_invalid("ReadResourceResult", &read);
        let read = read.with_cache_hints(60_000, CacheScope::Private);
        check(&["ReadResourceResult"], &read);
        check(
            &["ReadResourceResultResponse"],
            &JsonRpcResponse::new(id(), Outcome::from(read)),
        );
    }
}

#[test]
fn other_results_validate() {
    let prompt = GetPromptResult::new(vec![
        PromptMessage::user_text("Review this"),
        PromptMessage::new(Role::User, ContentBlock::image("iVBORw0KGgo=", "image/png")),
        PromptMessage::assistant_text("Sure"),
    ])
    .with_description("Code review");
    check(&["GetPromptResult"], &prompt);
    check(
        &["GetPromptResultResponse"],
        &JsonRpcResponse::new(id(), Outcome::from(prompt)),
    );

    let complete = CompleteResult::new((0..150).map(|i| format!("v{i}")));
    check(&["CompleteResult"], &complete);
    check(
        &["CompleteResultResponse"],
        &JsonRpcResponse::new(id(), complete),
    );
    check(&["CompleteResult"], &CompleteResult::empty());

    let listen = SubscriptionsListenResult::new(RequestId::from("listen-1"));
    check(&["SubscriptionsListenResult"], &listen);
    check(
        &["SubscriptionsListenResultResponse"],
        &JsonRpcResponse::new(RequestId::from("listen-1"), listen),
    );

    check(
        &["EmptyResult", "ClientResult", "Result"],
        &EmptyResult::default(),
    );
    let generic: GenericResult =
        serde_json::from_value(json!({"resultType": "task", "x": 1})).unwrap();
    check(&["Result", "ServerResult"], &generic);
}

#[test]
fn error_responses_validate() {
    let unsupported = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "1900-01-01");
    let response = JsonRpcErrorResponse::new(Some(id()), unsupported.clone());
    check(
        &[
            "UnsupportedProtocolVersionError",
            "JSONRPCErrorResponse",
            "JSONRPCResponse",
            "JSONRPCMessage",
        ],
        &response,
    );
    // The schema insists on the data members.
    let bare = JsonRpcErrorResponse::new(
        Some(id()),
        ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "x"),
    );
    check_invalid("UnsupportedProtocolVersionError", &bare);
    let data: UnsupportedProtocolVersionData = unsupported.data_as().unwrap().unwrap();
    assert_eq!(data.supported, ["2026-07-28"]);

    check(
        &["HeaderMismatchError"],
        &JsonRpcErrorResponse::new(
            Some(id()),
            ErrorObject::header_mismatch("Mcp-Name mismatch"),
        ),
    );
    // An error whose id could not be read has none.
    check(
        &["HeaderMismatchError"],
        &JsonRpcErrorResponse::new(None, ErrorObject::header_mismatch("bad")),
    );
    let needed = InputRequest::elicit_url("m", "https://x.example").required_capabilities();
    check(
        &["MissingRequiredClientCapabilityError"],
        &JsonRpcErrorResponse::new(
            Some(id()),
            ErrorObject::missing_required_capabilities(&needed),
        ),
    );
    check_invalid(
        "HeaderMismatchError",
        &JsonRpcErrorResponse::new(Some(id()), ErrorObject::invalid_params("x")),
    );

    check(
        &["ParseError", "Error"],
        &ErrorObject::parse_error("Parse error"),
    );
    check(
        &["InvalidRequestError"],
        &ErrorObject::invalid_request("Invalid request"),
    );
    check(
        &["MethodNotFoundError"],
        &ErrorObject::method_not_found("ping"),
    );
    check(
        &["InvalidParamsError"],
        &ErrorObject::invalid_params("Unknown tool: x").with_data(json!({"uri": "x"})),
    );
    check(&["InternalError"], &ErrorObject::internal_error("boom"));
    check_invalid("ParseError", &ErrorObject::internal_error("boom"));
    let _: error::ParseError = ErrorObject::parse_error("x");
}

#[test]
fn requests_validate() {
    fn req<M: RequestMethod>(def: &str, params: M::Params) {
        let r = methods::request::<M>(id(), params);
        check(
            &[def, "ClientRequest", "JSONRPCRequest", "JSONRPCMessage"],
            &r,
        );
    }
    req::<methods::Discover>("DiscoverRequest", RequestParams::new(meta()));
    req::<methods::ListTools>(
        "ListToolsRequest",
        PaginatedRequestParams::new(meta()).with_cursor("c"),
    );
    req::<methods::ListPrompts>("ListPromptsRequest", PaginatedRequestParams::new(meta()));
    req::<methods::ListResources>("ListResourcesRequest", PaginatedRequestParams::new(meta()));
    req::<methods::ListResourceTemplates>(
        "ListResourceTemplatesRequest",
        PaginatedRequestParams::new(meta()),
    );
    req::<methods::CallTool>(
        "CallToolRequest",
        CallToolRequestParams::new(meta().with_progress_token("p1"), "get_weather")
            .with_arguments(object(json!({"location": "Paris"}))),
    );
    req::<methods::GetPrompt>(
        "GetPromptRequest",
        GetPromptRequestParams::new(meta(), "code_review").with_argument("code", "x"),
    );
    req::<methods::ReadResource>(
        "ReadResourceRequest",
        ReadResourceRequestParams::new(meta(), "file:///a"),
    );
    let mut complete = CompleteRequestParams::new(
        meta(),
        ResourceTemplateReference::new("file:///{path}"),
        "path",
        "sr",
    );
    complete.context = Some(CompleteContext::new(
        [("a".to_owned(), "b".to_owned())].into(),
    ));
    req::<methods::Complete>("CompleteRequest", complete);
    req::<methods::SubscriptionsListen>(
        "SubscriptionsListenRequest",
        SubscriptionsListenRequestParams::new(
            meta(),
            SubscriptionFilter::new()
                .with_tools_list_changed()
                .with_resource("file:///a"),
        ),
    );
    // Without the required envelope keys the request is invalid.
    let bare = methods::request::<methods::ListTools>(id(), PaginatedRequestParams::default());
    let e = check_invalid("ListToolsRequest", &bare);
    assert!(e.contains("protocolVersion"), "{e}");
}

#[test]
fn retries_with_input_responses_validate() {
    let mut responses = InputResponses::new();
    responses.insert(
        "name".into(),
        ElicitResult::accept([("name", "octocat")]).into(),
    );
    responses.insert(
        "flags".into(),
        ElicitResult::accept([
            ("n", ElicitValue::from(3)),
            ("tags", vec!["a", "b"].into()),
            ("ok", true.into()),
        ])
        .into(),
    );
    responses.insert("no".into(), ElicitResult::decline().into());
    responses.insert("bye".into(), ElicitResult::cancel().into());
    responses.insert("url".into(), ElicitResult::accept_url().into());
    responses.insert(
        "q".into(),
        CreateMessageResult::text("claude", "Paris").into(),
    );
    responses.insert(
        "roots".into(),
        ListRootsResult::new(vec![Root::new("file:///r").with_name("r")]).into(),
    );
    for r in responses.values() {
        let def = match r.kind() {
            Some(InputRequestKind::Elicitation) => "ElicitResult",
            Some(InputRequestKind::Sampling) => "CreateMessageResult",
            Some(InputRequestKind::Roots) => "ListRootsResult",
            other => panic!("no schema name for {other:?}"),
        };
        check(&[def, "InputResponse"], r);
    }
    check(&["InputResponses"], &responses);
    let mut retry = CallToolRequestParams::new(meta(), "t");
    retry.input_responses = Some(responses.clone());
    retry.request_state = Some("eyJ4IjoxfQ".into());
    check(
        &["CallToolRequestParams", "InputResponseRequestParams"],
        &retry,
    );
    let mut read = ReadResourceRequestParams::new(meta(), "file:///a");
    read.input_responses = Some(responses);
    check(
        &["ReadResourceRequestParams", "ResourceRequestParams"],
        &read,
    );
}

#[test]
fn elicit_result_fractional_numbers_fail_the_wire_schema() {
    // schema.json types elicitation content numbers as `integer` (schema.ts says `number`).
    // The Rust type accepts any number; the wire schema rejects a fraction.
    let r = ElicitResult::accept([("ratio", ElicitValue::float(2.5).unwrap())]);
    check_invalid("ElicitResult", &r);
    check(
        &["ElicitResult"],
        &ElicitResult::accept([("ratio", ElicitValue::from(2))]),
    );
}

#[test]
fn notifications_validate() {
    fn note<M: methods::NotificationMethod>(defs: &[&str], params: M::Params) {
        let n = methods::notification::<M>(params);
        check(defs, &n);
        check(&["JSONRPCNotification", "JSONRPCMessage"], &n);
    }
    let sub = RequestId::from("listen-1");
    note::<methods::Cancelled>(
        &[
            "CancelledNotification",
            "ClientNotification",
            "ServerNotification",
        ],
        CancelledNotificationParams::new(RequestId::Number(3)).with_reason("user"),
    );
    note::<methods::Progress>(
        &["ProgressNotification", "ServerNotification"],
        ProgressNotificationParams::new("p1", 50.0)
            .with_total(100.0)
            .with_message("half"),
    );
    note::<methods::LoggingMessage>(
        &["LoggingMessageNotification", "ServerNotification"],
        LoggingMessageNotificationParams::new(LoggingLevel::Warning, json!({"error": "x"}))
            .with_logger("db"),
    );
    note::<methods::ToolListChanged>(
        &["ToolListChangedNotification", "ServerNotification"],
        NotificationParams::for_subscription(sub.clone()),
    );
    note::<methods::PromptListChanged>(
        &["PromptListChangedNotification", "ServerNotification"],
        NotificationParams::for_subscription(sub.clone()),
    );
    note::<methods::ResourceListChanged>(
        &["ResourceListChangedNotification", "ServerNotification"],
        NotificationParams::default(),
    );
    note::<methods::ResourceUpdated>(
        &["ResourceUpdatedNotification", "ServerNotification"],
        ResourceUpdatedNotificationParams::new(sub.clone(), "file:///a"),
    );
    note::<methods::SubscriptionsAcknowledged>(
        &[
            "SubscriptionsAcknowledgedNotification",
            "ServerNotification",
        ],
        SubscriptionsAcknowledgedNotificationParams::new(
            sub,
            SubscriptionFilter::new().with_prompts_list_changed(),
        ),
    );
}

#[test]
fn every_example_and_its_round_trip_validate() {
    let mut failures = Vec::new();
    for ex in common::examples() {
        if let Err(e) = validate(&ex.folder, &ex.json) {
            failures.push(format!("fixture {}/{}: {e}", ex.folder, ex.file));
        }
        let (ty, again) = common::round_trips(&ex.folder, &ex.text).unwrap().remove(0);
        match again {
            Ok(again) => {
                if let Err(e) = validate(&ex.folder, &again) {
                    failures.push(format!("{}/{} via {ty}: {e}", ex.folder, ex.file));
                }
            }
            Err(e) => failures.push(format!("{}/{} via {ty}: {e}", ex.folder, ex.file)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_validator_works_for_every_revision() {
    assert_eq!(schema_check::definitions("2026-07-28").unwrap().len(), 155);
    for revision in schema_check::REVISIONS {
        assert!(
            !schema_check::definitions(revision).unwrap().is_empty(),
            "{revision}"
        );
        // `$ref`s between definitions resolve: a bad nested block is caught.
        let ok = json!({"content": [{"type": "text", "text": "x"}]});
        let bad = json!({"content": [{"type": "text"}]});
        let ok = if revision == "2026-07-28" {
            json!({"resultType": "complete", "content": ok["content"]})
        } else {
            ok
        };
        validate_for(revision, "CallToolResult", &ok).unwrap_or_else(|e| panic!("{e}"));
        let e = validate_for(revision, "CallToolResult", &bad).unwrap_err();
        assert!(e.contains(revision), "{e}");
    }
    // 2025-06-18 (draft-07) still has initialize.
    validate_for(
        "2025-06-18",
        "InitializeRequest",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
    )
    .unwrap();
    assert!(
        validate("InitializeRequest", &json!({}))
            .unwrap_err()
            .contains("no definition")
    );
    assert!(validate_for("1999-01-01", "Tool", &json!({})).is_err());
    // A legacy result without resultType is valid for 2025-11-25 but not for 2026-07-28.
    let legacy = json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]});
    validate_for("2025-11-25", "ListToolsResult", &legacy).unwrap();
    assert!(validate("ListToolsResult", &legacy).is_err());
}

macro_rules! schema_types {
    ($($def:ident => $ty:ty;)*) => {
        /// Every schema definition that has a Rust type (checked to exist at compile time).
        const COVERED: &[&str] = &[$(stringify!($def)),*];

        #[allow(dead_code)]
        fn types_exist() {
            $(let _ = std::marker::PhantomData::<$ty>;)*
        }
    };
}

schema_types! {
    Annotations => Annotations;
    AudioContent => AudioContent;
    BaseMetadata => BaseMetadata;
    BlobResourceContents => BlobResourceContents;
    BooleanSchema => BooleanSchema;
    CacheableResult => CacheableResult;
    CallToolRequest => CallToolRequest;
    CallToolRequestParams => CallToolRequestParams;
    CallToolResult => CallToolResult;
    CallToolResultResponse => CallToolResultResponse;
    CancelledNotification => CancelledNotification;
    CancelledNotificationParams => CancelledNotificationParams;
    ClientCapabilities => ClientCapabilities;
    ClientNotification => methods::ClientNotification;
    ClientRequest => methods::ClientRequest;
    ClientResult => methods::ClientResult;
    CompleteRequest => CompleteRequest;
    CompleteRequestParams => CompleteRequestParams;
    CompleteResult => CompleteResult;
    CompleteResultResponse => CompleteResultResponse;
    ContentBlock => ContentBlock;
    CreateMessageRequest => CreateMessageRequest;
    CreateMessageRequestParams => CreateMessageRequestParams;
    CreateMessageResult => CreateMessageResult;
    Cursor => Cursor;
    DiscoverRequest => DiscoverRequest;
    DiscoverResult => DiscoverResult;
    DiscoverResultResponse => DiscoverResultResponse;
    ElicitRequest => ElicitRequest;
    ElicitRequestFormParams => ElicitRequestFormParams;
    ElicitRequestParams => ElicitRequestParams;
    ElicitRequestURLParams => ElicitRequestUrlParams;
    ElicitResult => ElicitResult;
    EmbeddedResource => EmbeddedResource;
    EmptyResult => EmptyResult;
    EnumSchema => EnumSchema;
    Error => ErrorObject;
    GetPromptRequest => GetPromptRequest;
    GetPromptRequestParams => GetPromptRequestParams;
    GetPromptResult => GetPromptResult;
    GetPromptResultResponse => GetPromptResultResponse;
    HeaderMismatchError => error::HeaderMismatchError;
    Icon => Icon;
    Icons => Icons;
    ImageContent => ImageContent;
    Implementation => Implementation;
    InputRequest => InputRequest;
    InputRequests => InputRequests;
    InputRequiredResult => InputRequiredResult;
    InputResponse => InputResponse;
    InputResponseRequestParams => InputResponseRequestParams;
    InputResponses => InputResponses;
    InternalError => error::InternalError;
    InvalidParamsError => error::InvalidParamsError;
    InvalidRequestError => error::InvalidRequestError;
    JSONArray => JsonArray;
    JSONObject => JsonObject;
    JSONRPCErrorResponse => JsonRpcErrorResponse;
    JSONRPCMessage => JsonRpcMessage;
    JSONRPCNotification => JsonRpcNotification;
    JSONRPCRequest => JsonRpcRequest;
    JSONRPCResponse => JsonRpcResponseOrError;
    JSONRPCResultResponse => JsonRpcResponse;
    JSONValue => JsonValue;
    LegacyTitledEnumSchema => LegacyTitledEnumSchema;
    ListPromptsRequest => ListPromptsRequest;
    ListPromptsResult => ListPromptsResult;
    ListPromptsResultResponse => ListPromptsResultResponse;
    ListResourceTemplatesRequest => ListResourceTemplatesRequest;
    ListResourceTemplatesResult => ListResourceTemplatesResult;
    ListResourceTemplatesResultResponse => ListResourceTemplatesResultResponse;
    ListResourcesRequest => ListResourcesRequest;
    ListResourcesResult => ListResourcesResult;
    ListResourcesResultResponse => ListResourcesResultResponse;
    ListRootsRequest => ListRootsRequest;
    ListRootsResult => ListRootsResult;
    ListToolsRequest => ListToolsRequest;
    ListToolsResult => ListToolsResult;
    ListToolsResultResponse => ListToolsResultResponse;
    LoggingLevel => LoggingLevel;
    LoggingMessageNotification => LoggingMessageNotification;
    LoggingMessageNotificationParams => LoggingMessageNotificationParams;
    MetaObject => Meta;
    MethodNotFoundError => error::MethodNotFoundError;
    MissingRequiredClientCapabilityError => error::MissingRequiredClientCapabilityError;
    ModelHint => ModelHint;
    ModelPreferences => ModelPreferences;
    MultiSelectEnumSchema => MultiSelectEnumSchema;
    Notification => GenericNotification;
    NotificationMetaObject => NotificationMeta;
    NotificationParams => NotificationParams;
    NumberSchema => NumberSchema;
    PaginatedRequest => PaginatedRequest;
    PaginatedRequestParams => PaginatedRequestParams;
    PaginatedResult => PaginatedResult;
    ParseError => error::ParseError;
    PrimitiveSchemaDefinition => PrimitiveSchemaDefinition;
    ProgressNotification => ProgressNotification;
    ProgressNotificationParams => ProgressNotificationParams;
    ProgressToken => ProgressToken;
    Prompt => Prompt;
    PromptArgument => PromptArgument;
    PromptListChangedNotification => PromptListChangedNotification;
    PromptMessage => PromptMessage;
    PromptReference => PromptReference;
    ReadResourceRequest => ReadResourceRequest;
    ReadResourceRequestParams => ReadResourceRequestParams;
    ReadResourceResult => ReadResourceResult;
    ReadResourceResultResponse => ReadResourceResultResponse;
    Request => GenericRequest;
    RequestId => RequestId;
    RequestMetaObject => RequestMeta;
    RequestParams => RequestParams;
    Resource => Resource;
    ResourceContents => ResourceContents;
    ResourceLink => ResourceLink;
    ResourceListChangedNotification => ResourceListChangedNotification;
    ResourceRequestParams => ResourceRequestParams;
    ResourceTemplate => ResourceTemplate;
    ResourceTemplateReference => ResourceTemplateReference;
    ResourceUpdatedNotification => ResourceUpdatedNotification;
    ResourceUpdatedNotificationParams => ResourceUpdatedNotificationParams;
    Result => GenericResult;
    ResultMetaObject => ResultMeta;
    ResultType => ResultType;
    Role => Role;
    Root => Root;
    SamplingMessage => SamplingMessage;
    SamplingMessageContentBlock => SamplingMessageContentBlock;
    ServerCapabilities => ServerCapabilities;
    ServerNotification => methods::ServerNotification;
    ServerResult => methods::ServerResult;
    SingleSelectEnumSchema => SingleSelectEnumSchema;
    StringSchema => StringSchema;
    SubscriptionFilter => SubscriptionFilter;
    SubscriptionsAcknowledgedNotification => SubscriptionsAcknowledgedNotification;
    SubscriptionsAcknowledgedNotificationParams => SubscriptionsAcknowledgedNotificationParams;
    SubscriptionsListenRequest => SubscriptionsListenRequest;
    SubscriptionsListenRequestParams => SubscriptionsListenRequestParams;
    SubscriptionsListenResult => SubscriptionsListenResult;
    SubscriptionsListenResultMetaObject => SubscriptionsListenResultMeta;
    SubscriptionsListenResultResponse => SubscriptionsListenResultResponse;
    TextContent => TextContent;
    TextResourceContents => TextResourceContents;
    TitledMultiSelectEnumSchema => TitledMultiSelectEnumSchema;
    TitledSingleSelectEnumSchema => TitledSingleSelectEnumSchema;
    Tool => Tool;
    ToolAnnotations => ToolAnnotations;
    ToolChoice => ToolChoice;
    ToolListChangedNotification => ToolListChangedNotification;
    ToolResultContent => ToolResultContent;
    ToolUseContent => ToolUseContent;
    UnsupportedProtocolVersionError => error::UnsupportedProtocolVersionError;
    UntitledMultiSelectEnumSchema => UntitledMultiSelectEnumSchema;
    UntitledSingleSelectEnumSchema => UntitledSingleSelectEnumSchema;
}

#[test]
fn every_schema_definition_has_a_rust_type() {
    let defs: BTreeSet<String> = schema_check::definitions("2026-07-28")
        .unwrap()
        .into_iter()
        .collect();
    let covered: BTreeSet<String> = COVERED.iter().map(|s| s.to_string()).collect();
    assert_eq!(covered.len(), COVERED.len(), "duplicates in the table");
    let missing: Vec<_> = defs.difference(&covered).collect();
    let extra: Vec<_> = covered.difference(&defs).collect();
    assert!(
        missing.is_empty(),
        "schema definitions without a Rust type: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "table entries that are not schema definitions: {extra:?}"
    );
}
