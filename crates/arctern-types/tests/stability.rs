//! What a value from a newer (or older) peer does to each type: the decisions of the crate's
//! "Stability" section, one test each, from outside the crate as a user sees them.

use arctern_types::completion::CompletionReference;
use arctern_types::elicitation::StringFormat;
use arctern_types::implementation::IconTheme;
use arctern_types::legacy::{self, ServerRequest};
use arctern_types::sampling::{IncludeContext, SamplingMessageContentBlock, StopReason};
use arctern_types::tasks::TaskStatus;
use arctern_types::*;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The error of decoding `value` as `T`.
fn refused<T: DeserializeOwned + std::fmt::Debug>(value: Value) -> String {
    serde_json::from_value::<T>(value.clone())
        .map(|t| panic!("{value} decoded as {t:?}"))
        .unwrap_err()
        .to_string()
}

/// Decodes `value` as `T` and checks it serializes back to the same JSON.
fn kept<T: DeserializeOwned + serde::Serialize>(value: Value) -> T {
    let t: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), value);
    t
}

#[test]
fn an_unknown_content_block_is_kept_and_the_result_with_it() {
    let result = json!({
        "resultType": "complete",
        "content": [
            {"type": "text", "text": "Here is the clip."},
            {"type": "video", "uri": "https://example.com/clip.mp4", "durationMs": 4200,
             "annotations": {"audience": ["user"]}}
        ],
        "isError": false
    });
    let r: CallToolResult = kept(result.clone());
    assert_eq!(r.content.len(), 2);
    let ContentBlock::Unknown(video) = &r.content[1] else {
        panic!("{:?}", r.content[1])
    };
    assert_eq!(video.kind(), "video");
    assert_eq!(video.as_object()["durationMs"], 4200);
    // Through the polymorphic result a client decodes, too.
    let outcome: Outcome<CallToolResult> = kept(result);
    assert!(outcome.is_complete());
    // A known kind is still checked: a block that lacks its members is an error.
    assert!(refused::<ContentBlock>(json!({"type": "image", "data": "AA=="})).contains("mimeType"));
}

#[test]
fn an_unknown_sampling_block_is_kept_but_resource_blocks_are_not_sampling_blocks() {
    let block: SamplingMessageContentBlock =
        kept(json!({"type": "thinking", "thinking": "Let me see.", "signature": "x"}));
    assert!(matches!(block, SamplingMessageContentBlock::Unknown(u) if u.kind() == "thinking"));
    let e = refused::<SamplingMessageContentBlock>(
        json!({"type": "resource_link", "uri": "a:b", "name": "n"}),
    );
    assert!(e.contains("unknown variant `resource_link`"), "{e}");
}

#[test]
fn an_unrecognized_result_type_is_refused_naming_it() {
    let e = refused::<Outcome<CallToolResult>>(json!({"resultType": "stream", "content": []}));
    assert!(e.contains("unrecognized resultType \"stream\""), "{e}");
    let e = refused::<Outcome<CallToolResult>>(json!({"resultType": 3, "content": []}));
    assert!(e.contains("resultType"), "{e}");
    // Absent (an older server) and the three known ones are read.
    let o: Outcome<CallToolResult> = serde_json::from_value(json!({"content": []})).unwrap();
    assert!(o.is_complete());
    let o: Outcome<CallToolResult> =
        serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
            .unwrap();
    assert!(o.is_input_required());
    // On a result type itself the value is an open string, kept as received.
    let r: CallToolResult = kept(json!({"resultType": "stream", "content": []}));
    assert_eq!(r.result_type, ResultType::new("stream"));
}

#[test]
fn open_strings_keep_values_this_crate_does_not_name() {
    let r: CreateMessageResult = kept(json!({
        "role": "assistant", "content": {"type": "text", "text": "No."},
        "model": "m", "stopReason": "refusal"
    }));
    assert_eq!(r.stop_reason, Some(StopReason::new("refusal")));
}

#[test]
fn requests_the_receiver_must_answer_refuse_what_they_do_not_know() {
    let e = refused::<InputRequest>(json!({"method": "tools/call", "params": {"name": "x"}}));
    assert!(e.contains("unknown variant `tools/call`"), "{e}");
    let e = refused::<ElicitRequestParams>(json!({"mode": "voice", "message": "m"}));
    assert!(e.contains("unknown variant `voice`"), "{e}");
    let e = refused::<legacy::ElicitRequestParams>(json!({"mode": "voice", "message": "m"}));
    assert!(e.contains("unknown variant `voice`"), "{e}");
    let e = refused::<ServerRequest>(json!({"method": "tasks/get", "params": {}}));
    assert!(e.contains("unknown variant `tasks/get`"), "{e}");
    let e = refused::<CompletionReference>(json!({"type": "ref/tool", "name": "t"}));
    assert!(e.contains("unknown variant `ref/tool`"), "{e}");
}

#[test]
fn forms_refuse_fields_a_client_could_not_render() {
    let e = refused::<PrimitiveSchemaDefinition>(json!({"type": "object", "properties": {}}));
    assert!(e.contains("object"), "{e}");
    let e = refused::<StringFormat>(json!("uuid"));
    assert!(e.contains("unknown variant `uuid`"), "{e}");
    let e = refused::<ResourceContents>(json!({"uri": "a:b", "video": "AA=="}));
    assert!(e.contains("`text` or a `blob`"), "{e}");
}

#[test]
fn closed_enumerations_refuse_unknown_values_naming_them() {
    let cases = [
        refused::<LoggingLevel>(json!("verbose")),
        refused::<Role>(json!("system")),
        refused::<TaskStatus>(json!("paused")),
        refused::<CacheScope>(json!("shared")),
        refused::<IconTheme>(json!("high-contrast")),
        refused::<ElicitAction>(json!("postpone")),
        refused::<IncludeContext>(json!("everything")),
        refused::<ToolChoiceMode>(json!("maybe")),
        refused::<NumberType>(json!("decimal")),
    ];
    for (e, value) in cases.iter().zip([
        "verbose",
        "system",
        "paused",
        "shared",
        "high-contrast",
        "postpone",
        "everything",
        "maybe",
        "decimal",
    ]) {
        assert!(e.contains(&format!("unknown variant `{value}`")), "{e}");
    }
}

#[test]
fn an_answer_of_no_known_shape_is_kept_for_the_server_to_refuse() {
    let r: InputResponse = kept(json!({"verdict": "maybe"}));
    assert!(matches!(r, InputResponse::Unrecognized(_)));
}

/// A 2025-11-25 `tools/list` result, as the official "everything" server sends it: a tool
/// with `execution` (2025-11-25 only) and members no revision has.
fn legacy_tools_page() -> Value {
    json!({
        "tools": [{
            "name": "simulate-research-query",
            "description": "Simulates a research query that runs as a task.",
            "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}},
                            "required": ["topic"]},
            "execution": {"taskSupport": "required"},
            "annotations": {"readOnlyHint": true, "x-vendor-hint": "slow"},
            "icons": [{"src": "https://example.com/i.png", "x-scale": 2}],
            "x-vendor": {"tier": "gold"}
        }],
        "nextCursor": "page-2",
        "x-page-note": "two pages"
    })
}

#[test]
fn a_legacy_tool_list_keeps_execution_and_every_unknown_member() {
    let page: ListToolsResult = serde_json::from_value(legacy_tools_page()).unwrap();
    let tool = &page.tools[0];
    assert_eq!(tool.extra["execution"], json!({"taskSupport": "required"}));
    assert_eq!(tool.extra["x-vendor"], json!({"tier": "gold"}));
    assert_eq!(
        tool.annotations.as_ref().unwrap().extra["x-vendor-hint"],
        "slow"
    );
    assert_eq!(tool.icons.as_ref().unwrap()[0].extra["x-scale"], 2);
    assert_eq!(page.extra["x-page-note"], "two pages");
    // Written back in the legacy shape, it is what the server sent.
    assert_eq!(
        legacy::to_legacy_result(&page).unwrap(),
        legacy_tools_page()
    );
}

#[test]
fn a_modern_tool_list_keeps_every_unknown_member() {
    let mut page = legacy_tools_page();
    let map = page.as_object_mut().unwrap();
    map.insert("resultType".into(), json!("complete"));
    map.insert("ttlMs".into(), json!(60000));
    map.insert("cacheScope".into(), json!("public"));
    map.insert(
        "_meta".into(),
        json!({"io.modelcontextprotocol/serverInfo":
        {"name": "s", "version": "1", "x-build": 7}}),
    );
    let parsed: ListToolsResult = kept(page.clone());
    assert_eq!(parsed.ttl_ms, Some(60000));
    // And through the JSON-RPC response a client reads.
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": page});
    let _: JsonRpcResponse<ListToolsResult> = kept(response);
}

#[test]
fn wire_structs_are_built_with_constructors() {
    // `#[non_exhaustive]` structs cannot be struct expressions outside the crate: every one
    // a user builds has a constructor, builders, or `Default` and field assignment.
    let mut tool = Tool::new("t", "A tool.", JsonObject::new())
        .with_annotations(tools::ToolAnnotations::new().with_read_only_hint(true));
    tool.extra
        .insert("execution".into(), json!({"taskSupport": "optional"}));
    let v = serde_json::to_value(&tool).unwrap();
    assert_eq!(v["execution"]["taskSupport"], "optional");
    assert_eq!(v["annotations"]["readOnlyHint"], true);
    let mut caps = ServerCapabilities::default();
    caps.tools = Some(Default::default());
    assert_eq!(serde_json::to_value(&caps).unwrap(), json!({"tools": {}}));
}
