//! Every official 2026-07-28 wire example deserializes into the Rust type of its folder and
//! serializes back to the same JSON.

mod common;

use std::collections::BTreeSet;

use arctern_types::*;
use serde_json::Value;

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = common::examples();
    assert!(!examples.is_empty(), "no examples found");
    let mut unmapped = BTreeSet::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in &examples {
        let Some(results) = common::round_trips(&ex.folder, &ex.text) else {
            unmapped.insert(ex.folder.clone());
            continue;
        };
        for (ty, result) in results {
            checked += 1;
            match result {
                Ok(again) if again == ex.json => {}
                Ok(again) => failures.push(format!(
                    "{}/{} as {ty}: the JSON changed\n  original: {}\n  again:    {}",
                    ex.folder, ex.file, ex.json, again
                )),
                Err(e) => failures.push(format!("{}/{} as {ty}: {e}", ex.folder, ex.file)),
            }
        }
    }
    assert!(
        unmapped.is_empty(),
        "example folders without a Rust type in tests/common/mod.rs: {unmapped:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} round trips failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_mapped_folder_exists() {
    let dir = common::examples_dir();
    let stale: Vec<_> = common::MAPPED_FOLDERS
        .iter()
        .filter(|f| !dir.join(f).is_dir())
        .collect();
    assert!(
        stale.is_empty(),
        "mapped folders with no examples: {stale:?}"
    );
}

fn example(folder: &str) -> Value {
    common::examples()
        .into_iter()
        .find(|e| e.folder == folder)
        .unwrap_or_else(|| panic!("no example in {folder}"))
        .json
}

#[test]
fn input_responses_decode_by_the_kinds_that_were_asked() {
    // The two examples share their keys: the responses answer the requests.
    let requests: InputRequests = serde_json::from_value(example("InputRequests")).unwrap();
    let Value::Object(responses) = example("InputResponses") else {
        panic!("InputResponses is an object")
    };
    assert_eq!(requests.len(), responses.len());
    for (key, raw) in responses {
        let asked = requests[&key].kind();
        let decoded = InputResponse::decode_for(asked, raw.clone()).unwrap();
        assert_eq!(decoded.kind(), Some(asked), "{key}");
        // The best-effort guess agrees, and into_kind keeps it.
        let guessed: InputResponse = serde_json::from_value(raw).unwrap();
        assert_eq!(guessed.clone().into_kind(asked).unwrap(), decoded);
        // Decoding for any other kind fails.
        for other in InputRequestKind::ALL.into_iter().filter(|k| *k != asked) {
            assert!(
                guessed.clone().into_kind(other).is_err(),
                "{key} as {other}"
            );
        }
    }
}

#[test]
fn unions_pick_the_expected_variant() {
    let block: ContentBlock = serde_json::from_value(example("ResourceLink")).unwrap();
    assert!(matches!(block, ContentBlock::ResourceLink(_)));
    let block: ContentBlock = serde_json::from_value(example("EmbeddedResource")).unwrap();
    assert!(
        matches!(block, ContentBlock::Resource(ref r) if matches!(r.resource, ResourceContents::Text(_)))
    );
    let block: SamplingMessageContentBlock =
        serde_json::from_value(example("ToolResultContent")).unwrap();
    assert!(matches!(block, SamplingMessageContentBlock::ToolResult(_)));
    let contents: ResourceContents =
        serde_json::from_value(example("BlobResourceContents")).unwrap();
    assert!(matches!(contents, ResourceContents::Blob(_)));
    let params: ElicitRequestParams =
        serde_json::from_value(example("ElicitRequestURLParams")).unwrap();
    assert!(params.is_url());
    let request: InputRequest = serde_json::from_value(example("ListRootsRequest")).unwrap();
    assert_eq!(request.kind(), InputRequestKind::Roots);
    let request: InputRequest = serde_json::from_value(example("CreateMessageRequest")).unwrap();
    assert_eq!(request.kind(), InputRequestKind::Sampling);
    let schema: PrimitiveSchemaDefinition =
        serde_json::from_value(example("TitledSingleSelectEnumSchema")).unwrap();
    assert!(matches!(
        schema,
        PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(SingleSelectEnumSchema::Titled(
            _
        )))
    ));
    let schema: PrimitiveSchemaDefinition =
        serde_json::from_value(example("UntitledMultiSelectEnumSchema")).unwrap();
    assert!(matches!(
        schema,
        PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(MultiSelectEnumSchema::Untitled(
            _
        )))
    ));
    let result: Outcome<CallToolResult> =
        serde_json::from_value(example("InputRequiredResult")).unwrap();
    assert!(result.is_input_required());
    let response: CallToolResultResponse =
        serde_json::from_value(example("CallToolResultResponse")).unwrap();
    assert!(!response.result.is_input_required());
    let response: JsonRpcResponseOrError =
        serde_json::from_value(example("UnsupportedProtocolVersionError")).unwrap();
    let error = response.into_result().unwrap_err();
    let data: error::UnsupportedProtocolVersionData = error.data_as().unwrap().unwrap();
    assert_eq!(data.requested, "1900-01-01");
}

#[test]
fn examples_read_the_envelope_and_hints() {
    let discover: DiscoverResult = serde_json::from_value(example("DiscoverResult")).unwrap();
    assert_eq!(discover.server_info().unwrap().name, "ExampleServer");
    assert_eq!(discover.effective_ttl_ms(), 3_600_000);
    assert_eq!(discover.effective_cache_scope(), CacheScope::Public);
    let request: CallToolRequest = serde_json::from_value(example("CallToolRequest")).unwrap();
    let params = request.params.unwrap();
    assert_eq!(params.meta.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(params.meta.client_info.unwrap().name, "ExampleClient");
    let n: ToolListChangedNotification =
        serde_json::from_value(example("ToolListChangedNotification")).unwrap();
    assert_eq!(
        n.params.unwrap().subscription_id(),
        Some(&RequestId::from("listen-1"))
    );
    let r: SubscriptionsListenResult =
        serde_json::from_value(example("SubscriptionsListenResult")).unwrap();
    assert_eq!(r.meta.subscription_id, RequestId::from("listen-1"));
}

/// Parses `v` as `T`, checks it serializes back unchanged, and returns it.
fn same<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), v);
    t
}

#[test]
fn unknown_members_survive_in_open_objects() {
    use serde_json::json;
    let future = json!({"com.example/new": {"nested": [1, 2.5, null]}});
    let r: CallToolResult = same(json!({
        "resultType": "complete", "content": [], "com.example/new": future["com.example/new"],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "x": 1}
    }));
    assert_eq!(
        r.extra.get("com.example/new"),
        Some(&future["com.example/new"])
    );
    let r: ListToolsResult = same(json!({
        "resultType": "complete", "tools": [], "ttlMs": 5, "cacheScope": "public", "hint": true
    }));
    assert_eq!(r.extra.get("hint"), Some(&json!(true)));
    same::<DiscoverResult>(json!({
        "resultType": "complete", "supportedVersions": [], "capabilities": {"tasks": {}},
        "ttlMs": 0, "cacheScope": "private", "future": "x"
    }));
    same::<InputRequiredResult>(
        json!({"resultType": "input_required", "requestState": "s", "x": 1}),
    );
    same::<GetPromptResult>(json!({"resultType": "complete", "messages": [], "x": [1]}));
    same::<ReadResourceResult>(json!({"resultType": "complete", "contents": [], "x": {}}));
    same::<CompleteResult>(json!({"resultType": "complete", "completion": {"values": []}, "x": 0}));
    same::<SubscriptionsListenResult>(json!({
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/subscriptionId": 1, "other": 2}, "x": 0
    }));
    same::<SubscriptionFilter>(
        json!({"toolsListChanged": true, "io.modelcontextprotocol/tasks": true}),
    );
    same::<ElicitResult>(json!({"action": "decline", "_meta": {"legacy": true}}));
    same::<ListRootsResult>(json!({"roots": [], "_meta": {}}));
    same::<CreateMessageResult>(json!({
        "role": "assistant", "content": [], "model": "m", "x": 1
    }));
    // Results without resultType (older servers) read as complete; the field is then written.
    let r: ListToolsResult = serde_json::from_value(json!({"tools": []})).unwrap();
    assert!(r.result_type.is_complete());
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"resultType": "complete", "tools": []})
    );
}

/// Adds an unknown member to every object of `value` that is a wire object: not the
/// JSON-RPC framing (closed by JSON-RPC 2.0, see the crate's "Stability" section), not a
/// map whose values all have one type (arguments, properties, answers by field, requests by
/// key), whose values a new member of another type would not fit.
fn with_unknown_members(value: &mut Value, key: Option<&str>) {
    const MAPS: [&str; 9] = [
        "arguments",
        "inputRequests",
        "inputResponses",
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "experimental",
        "extensions",
    ];
    match value {
        Value::Object(map) => {
            let framing = map.contains_key("jsonrpc")
                || (map.contains_key("code") && map.contains_key("message"));
            // An answer's `content` is a map of values; a block's `content` is not an object.
            let values = key == Some("content") && !map.contains_key("type");
            let free = matches!(
                key,
                Some(
                    "inputSchema"
                        | "outputSchema"
                        | "structuredContent"
                        | "input"
                        | "metadata"
                        | "data"
                )
            );
            for (k, v) in map.iter_mut() {
                if !free {
                    with_unknown_members(v, Some(k));
                }
            }
            let typed_map = key.is_some_and(|k| MAPS.contains(&k));
            if !framing && !values && !free && !typed_map {
                map.insert(
                    "x-arctern-future".into(),
                    serde_json::json!({"kept": [1, "two", {"three": null}]}),
                );
            }
        }
        Value::Array(items) => {
            for item in items {
                with_unknown_members(item, key);
            }
        }
        _ => {}
    }
}

#[test]
fn unknown_members_survive_every_round_trip() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in common::examples() {
        let mut json = ex.json.clone();
        // The two maps by key are examples of their own.
        let top = matches!(ex.folder.as_str(), "InputRequests" | "InputResponses")
            .then_some("inputRequests");
        with_unknown_members(&mut json, top);
        let text = json.to_string();
        let Some(results) = common::round_trips(&ex.folder, &text) else {
            continue;
        };
        for (ty, result) in results {
            checked += 1;
            match result {
                Ok(again) if again == json => {}
                Ok(again) => failures.push(format!(
                    "{}/{} as {ty}: a member was lost\n  sent:  {json}\n  again: {again}",
                    ex.folder, ex.file
                )),
                Err(e) => failures.push(format!("{}/{} as {ty}: {e}", ex.folder, ex.file)),
            }
        }
    }
    assert!(checked > 100, "only {checked} round trips");
    assert!(
        failures.is_empty(),
        "{} of {checked} round trips lost an unknown member:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
