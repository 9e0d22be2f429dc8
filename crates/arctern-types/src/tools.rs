//! Tools: `tools/list` and `tools/call`.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::{PaginatedRequestParams, impl_cacheable};
use crate::content::ContentBlock;
use crate::implementation::Icon;
use crate::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::mrtr::{InputResponses, Outcome};
use crate::result::{CacheScope, Cursor, ResultType};

/// A tool the client can call (`Tool`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Programmatic name, unique on the server. Should be 1–128 characters of
    /// `[A-Za-z0-9_.-]`.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does; a hint for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// A JSON Schema (2020-12 unless `$schema` says otherwise) for the arguments, with
    /// `"type": "object"`. Kept verbatim: every keyword, known or not, survives a round trip.
    pub input_schema: JsonObject,
    /// A JSON Schema for `structuredContent`, of any type. Kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came:
    /// for example `execution` (`{"taskSupport": "required"}`) of a 2025-11-25 server.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
    ) -> Self {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            input_schema,
            ..Default::default()
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, output_schema: JsonObject) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }
}

/// Hints about a tool's behaviour (`ToolAnnotations`). Untrusted unless the server is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolAnnotations {
    /// No hints yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the human-readable name.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Says whether the tool leaves its environment unchanged.
    pub fn with_read_only_hint(mut self, read_only: bool) -> Self {
        self.read_only_hint = Some(read_only);
        self
    }

    /// Says whether the tool may perform destructive updates.
    pub fn with_destructive_hint(mut self, destructive: bool) -> Self {
        self.destructive_hint = Some(destructive);
        self
    }

    /// Says whether repeating a call with the same arguments has no further effect.
    pub fn with_idempotent_hint(mut self, idempotent: bool) -> Self {
        self.idempotent_hint = Some(idempotent);
        self
    }

    /// Says whether the tool interacts with an open world of external entities.
    pub fn with_open_world_hint(mut self, open_world: bool) -> Self {
        self.open_world_hint = Some(open_world);
        self
    }
}

/// Params of `tools/list` (`PaginatedRequestParams`).
pub type ListToolsRequestParams = PaginatedRequestParams;

/// Params of `tools/call` (`CallToolRequestParams`). A multi round-trip request: a retry
/// carries `inputResponses` and/or `requestState`.
//
// Deserialize is written by hand: these params are parsed on every call, and
// `#[serde(flatten)]` would route every member through serde's buffering; here a known
// member is read straight into its field and only an unknown one is kept as a `Value`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The tool to call.
    pub name: String,
    /// The arguments, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to the input requests of the previous round, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of the previous round, echoed exactly. When present it must be a
    /// string: `null` is refused like any other non-string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::mrtr::echoed_state"
    )]
    pub request_state: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl<'de> Deserialize<'de> for CallToolRequestParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};

        struct Params;

        /// A member name, matched without allocating; only an unknown one is copied.
        enum Key<'de> {
            Meta,
            Name,
            Arguments,
            InputResponses,
            RequestState,
            Other(std::borrow::Cow<'de, str>),
        }

        impl<'de> Key<'de> {
            fn of(name: &str) -> Option<Key<'de>> {
                Some(match name {
                    "_meta" => Key::Meta,
                    "name" => Key::Name,
                    "arguments" => Key::Arguments,
                    "inputResponses" => Key::InputResponses,
                    "requestState" => Key::RequestState,
                    _ => return None,
                })
            }
        }

        impl<'de> Deserialize<'de> for Key<'de> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct KeyVisitor;
                impl<'de> Visitor<'de> for KeyVisitor {
                    type Value = Key<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                        Ok(Key::of(v).unwrap_or(Key::Other(v.into())))
                    }
                    fn visit_str<E: Error>(self, v: &str) -> Result<Key<'de>, E> {
                        Ok(Key::of(v).unwrap_or_else(|| Key::Other(v.to_owned().into())))
                    }
                    fn visit_string<E: Error>(self, v: String) -> Result<Key<'de>, E> {
                        Ok(Key::of(&v).unwrap_or(Key::Other(v.into())))
                    }
                }
                d.deserialize_identifier(KeyVisitor)
            }
        }

        impl<'de> Visitor<'de> for Params {
            type Value = CallToolRequestParams;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("tools/call params (an object)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut params = CallToolRequestParams::default();
                let (mut meta, mut name, mut arguments, mut responses, mut state) =
                    (false, false, false, false, false);
                let once = |seen: &mut bool, field: &'static str| {
                    if std::mem::replace(seen, true) {
                        Err(A::Error::duplicate_field(field))
                    } else {
                        Ok(())
                    }
                };
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    match key {
                        Key::Meta => {
                            once(&mut meta, "_meta")?;
                            params.meta = map.next_value()?;
                        }
                        Key::Name => {
                            once(&mut name, "name")?;
                            params.name = map.next_value()?;
                        }
                        Key::Arguments => {
                            once(&mut arguments, "arguments")?;
                            params.arguments = map.next_value()?;
                        }
                        Key::InputResponses => {
                            once(&mut responses, "inputResponses")?;
                            params.input_responses = map.next_value()?;
                        }
                        // Present means a string: `null` is refused like any non-string.
                        Key::RequestState => {
                            once(&mut state, "requestState")?;
                            params.request_state = Some(map.next_value::<String>()?);
                        }
                        Key::Other(key) => {
                            let value = map.next_value::<Value>()?;
                            params.extra.insert(key.into_owned(), value);
                        }
                    }
                }
                if !name {
                    return Err(A::Error::missing_field("name"));
                }
                Ok(params)
            }
        }

        d.deserialize_map(Params)
    }
}

impl CallToolRequestParams {
    /// A first-round call of `name`.
    pub fn new(meta: RequestMeta, name: impl Into<String>) -> Self {
        CallToolRequestParams {
            meta,
            name: name.into(),
            ..Default::default()
        }
    }

    /// Sets the arguments.
    pub fn with_arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// The result of `tools/list` (`ListToolsResult`). Cacheable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// This page of tools, in a deterministic order.
    pub tools: Vec<Tool>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the page may be reused, in milliseconds (missing from old servers: 0).
    #[serde(
        default,
        deserialize_with = "crate::util::lenient_ttl",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListToolsResult {
    /// A page of tools.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult {
            tools,
            ..Default::default()
        }
    }

    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
}

impl_cacheable!(ListToolsResult);

/// The complete result of `tools/call` (`CallToolResult`).
///
/// A tool's own failure (bad arguments, a failed operation) is reported here with
/// `isError: true` so the model can see it; protocol problems (unknown tool) are JSON-RPC
/// errors instead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Always `"complete"` for this type.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: any JSON value (object, array, scalar, even `null`), which must
    /// match the tool's `outputSchema` when it has one. A present `null` is kept as
    /// `Some(Value::Null)`.
    #[serde(
        default,
        deserialize_with = "crate::util::present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool failed (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool error (`isError: true`) with one text block explaining it.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..Self::text(message)
        }
    }

    /// A structured result: `structuredContent` is `value`, and, as the specification
    /// recommends for clients that only read `content`, one text block holds the same value
    /// serialized as JSON.
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        CallToolResult {
            structured_content: Some(value),
            ..Self::text(text)
        }
    }

    /// Adds a content block.
    pub fn with_content(mut self, block: impl Into<ContentBlock>) -> Self {
        self.content.push(block.into());
        self
    }

    /// Whether the result reports a tool error.
    pub fn is_tool_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The tool's structured output (`structuredContent`) decoded into `T`, as
    /// `Response::json` does in HTTP clients. Fails when the tool reported an error
    /// (`isError`), when there is no `structuredContent`, and when it does not decode into
    /// `T`; the text blocks are not parsed in its place.
    ///
    /// ```
    /// use arctern_types::tools::{CallToolResult, StructuredError};
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Forecast { high: i32 }
    ///
    /// let result = CallToolResult::structured(json!({"high": 21}));
    /// assert_eq!(result.json::<Forecast>().unwrap().high, 21);
    ///
    /// let failed = CallToolResult::error("no such city");
    /// assert!(matches!(failed.json::<Forecast>(), Err(StructuredError::ToolError(_))));
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, StructuredError> {
        if self.is_tool_error() {
            return Err(StructuredError::ToolError(Box::new(self.clone())));
        }
        let Some(value) = &self.structured_content else {
            return Err(StructuredError::Missing {
                text: joined_text(&self.content),
            });
        };
        T::deserialize(value).map_err(|e| StructuredError::Mismatch {
            type_name: std::any::type_name::<T>(),
            reason: e.to_string(),
        })
    }
}

/// The text of a result's text blocks, one per line.
fn joined_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why [`CallToolResult::json`] has no structured output to give.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StructuredError {
    /// The tool reported an error (`isError: true`); the whole result, for its content.
    ToolError(Box<CallToolResult>),
    /// The result has no `structuredContent`.
    Missing {
        /// The text blocks of the result, which may say why.
        text: String,
    },
    /// `structuredContent` does not decode into the type asked for.
    Mismatch {
        /// The type asked for.
        type_name: &'static str,
        /// Why it does not decode.
        reason: String,
    },
}

impl fmt::Display for StructuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StructuredError::ToolError(result) => {
                let text = joined_text(&result.content);
                if text.is_empty() {
                    f.write_str("the tool reported an error")
                } else {
                    write!(f, "the tool reported an error: {}", excerpt(&text))
                }
            }
            StructuredError::Missing { text } if text.is_empty() => {
                f.write_str("no structuredContent in the result")
            }
            StructuredError::Missing { text } => write!(
                f,
                "no structuredContent in the result, only text: {}",
                excerpt(text)
            ),
            StructuredError::Mismatch { type_name, reason } => {
                write!(f, "structuredContent is not a {type_name}: {reason}")
            }
        }
    }
}

impl std::error::Error for StructuredError {}

/// At most a few hundred characters of `text`, for a message.
fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A `tools/list` request.
pub type ListToolsRequest = JsonRpcRequest<ListToolsRequestParams>;
/// The response to `tools/list`.
pub type ListToolsResultResponse = JsonRpcResponse<ListToolsResult>;
/// A `tools/call` request.
pub type CallToolRequest = JsonRpcRequest<CallToolRequestParams>;
/// The response to `tools/call`: the result, or an `input_required` interim result.
pub type CallToolResultResponse = JsonRpcResponse<Outcome<CallToolResult>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors() {
        assert_eq!(
            serde_json::to_value(CallToolResult::text("hi")).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]})
        );
        let e = CallToolResult::error("boom");
        assert!(e.is_tool_error());
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "boom"}], "isError": true})
        );
        let s = CallToolResult::structured(json!({"a": [1, 2]}));
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"a\":[1,2]}"}],
                   "structuredContent": {"a": [1, 2]}})
        );
    }

    #[test]
    fn structured_output_decodes_or_says_why_not() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Forecast {
            city: String,
            high: i32,
        }
        let ok = CallToolResult::structured(json!({"city": "Oslo", "high": 21}));
        assert_eq!(
            ok.json::<Forecast>().unwrap(),
            Forecast {
                city: "Oslo".into(),
                high: 21
            }
        );
        // Any JSON value, not only objects.
        let n = CallToolResult::structured(json!(7));
        assert_eq!(n.json::<u8>().unwrap(), 7);

        let failed = CallToolResult::error("no forecast for Atlantis");
        let e = failed.json::<Forecast>().unwrap_err();
        assert!(matches!(&e, StructuredError::ToolError(r) if r.is_tool_error()));
        assert_eq!(
            e.to_string(),
            "the tool reported an error: no forecast for Atlantis"
        );
        // An error result with structured content is still an error.
        let mut failed = CallToolResult::structured(json!({"city": "Oslo", "high": 21}));
        failed.is_error = Some(true);
        assert!(matches!(
            failed.json::<Forecast>(),
            Err(StructuredError::ToolError(_))
        ));

        let text = CallToolResult::text("sunny, 21 degrees");
        let e = text.json::<Forecast>().unwrap_err();
        assert_eq!(
            e,
            StructuredError::Missing {
                text: "sunny, 21 degrees".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "no structuredContent in the result, only text: sunny, 21 degrees"
        );
        let empty = CallToolResult::new(vec![]);
        assert_eq!(
            empty.json::<Forecast>().unwrap_err().to_string(),
            "no structuredContent in the result"
        );

        let other = CallToolResult::structured(json!({"city": "Oslo"}));
        let e = other.json::<Forecast>().unwrap_err();
        let StructuredError::Mismatch { type_name, reason } = &e else {
            panic!("{e:?}")
        };
        assert!(type_name.ends_with("Forecast"), "{type_name}");
        assert!(reason.contains("missing field `high`"), "{reason}");
        assert!(e.to_string().starts_with("structuredContent is not a "));

        // Long texts are cut in messages.
        let long = CallToolResult::error("x".repeat(1000));
        let message = long.json::<Forecast>().unwrap_err().to_string();
        assert!(message.ends_with('…') && message.len() < 400, "{message}");
    }

    #[test]
    fn structured_content_may_be_any_value_even_null() {
        for v in [
            json!(null),
            json!(3),
            json!("x"),
            json!([1]),
            json!({"k": true}),
        ] {
            let wire = json!({"resultType": "complete", "content": [], "structuredContent": v});
            let r: CallToolResult = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(r.structured_content.as_ref(), Some(&v));
            assert_eq!(serde_json::to_value(&r).unwrap(), wire);
        }
        let r: CallToolResult = serde_json::from_value(json!({"content": []})).unwrap();
        assert_eq!(r.structured_content, None);
    }

    #[test]
    fn call_params_keep_unknown_members_and_refuse_what_serde_refused() {
        let v = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
                       "name": "t", "arguments": {"a": 1}, "requestState": "s",
                       "task": {"ttl": 60000}, "x-trace": [1, "two"]});
        let p: CallToolRequestParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(p.extra["task"], json!({"ttl": 60000}));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let p: CallToolRequestParams = serde_json::from_str(r#"{"name": "t"}"#).unwrap();
        assert_eq!(
            (p.name.as_str(), p.arguments, p.extra.len()),
            ("t", None, 0)
        );
        for (bad, why) in [
            (json!({"arguments": {}}), "missing field `name`"),
            (
                json!({"name": "t", "requestState": null}),
                "invalid type: null",
            ),
            (
                json!({"name": "t", "arguments": []}),
                "invalid type: sequence",
            ),
            (json!([]), "tools/call params"),
        ] {
            let e = serde_json::from_value::<CallToolRequestParams>(bad).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        let e = serde_json::from_str::<CallToolRequestParams>(r#"{"name": "a", "name": "b"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("duplicate field `name`"), "{e}");
    }

    #[test]
    fn input_schema_is_verbatim() {
        let schema = json!({"type": "object", "$defs": {"x": {"type": "string"}},
                            "properties": {"a": {"$ref": "#/$defs/x", "x-mcp-header": "A"}},
                            "unevaluatedProperties": false});
        let tool = Tool::new("t", "d", schema.as_object().cloned().unwrap());
        let v = serde_json::to_value(&tool).unwrap();
        assert_eq!(v["inputSchema"], schema);
        let back: Tool = serde_json::from_value(v).unwrap();
        assert_eq!(back, tool);
    }
}
