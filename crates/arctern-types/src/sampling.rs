//! Sampling: asking the client's LLM for a completion, as a `sampling/createMessage` input
//! request. A deprecated feature in 2026-07-28 (still specified and live).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::content::{AudioContent, ContentBlock, ImageContent, Role, TextContent, UnknownContent};
use crate::meta::{JsonObject, Meta};
use crate::tags;
use crate::tools::Tool;
use crate::util::{buffer, from_object, serialize_variants, str_member, unexpected};

/// A sampling input request (`CreateMessageRequest`): `{"method": "sampling/createMessage",
/// "params": ...}`, without JSON-RPC members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateMessageRequest {
    /// Always `"sampling/createMessage"`.
    pub method: tags::SamplingCreateMessage,
    /// What to sample.
    pub params: CreateMessageRequestParams,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageRequest {
    /// A request with these params.
    pub fn new(params: CreateMessageRequestParams) -> Self {
        CreateMessageRequest {
            method: tags::SamplingCreateMessage,
            params,
            extra: JsonObject::new(),
        }
    }
}

/// Params of a sampling request (`CreateMessageRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Which model the server would prefer; the client decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use or ignore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include (values other than `"none"` are deprecated and need the
    /// client's `sampling.context` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: u64,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (needs the client's `sampling.tools` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model should use the tools (needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageRequestParams {
    /// Params sampling at most `max_tokens` after `messages`.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            max_tokens,
            ..Default::default()
        }
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }

    /// Sets the model preferences.
    pub fn with_model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.model_preferences = Some(preferences);
        self
    }

    /// Whether the request uses tools (and so needs the client's `sampling.tools`).
    pub fn uses_tools(&self) -> bool {
        self.tools.is_some() || self.tool_choice.is_some()
    }
}

/// One message of a sampled conversation (`SamplingMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingMessageContent,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SamplingMessage {
    /// A message with one block.
    pub fn new(role: Role, content: impl Into<SamplingMessageContentBlock>) -> Self {
        SamplingMessage {
            role,
            content: SamplingMessageContent::Single(content.into()),
            meta: None,
            extra: Default::default(),
        }
    }

    /// A message of several blocks (an array on the wire), such as parallel tool uses.
    pub fn from_blocks(role: Role, blocks: Vec<SamplingMessageContentBlock>) -> Self {
        SamplingMessage {
            role,
            content: SamplingMessageContent::Multiple(blocks),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, TextContent::new(text))
    }

    /// A text message from the assistant.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, TextContent::new(text))
    }
}

/// The `content` of a [`SamplingMessage`] or [`CreateMessageResult`]: one block or an array
/// of blocks. Deserializing picks by JSON type (object or array), and the form received is
/// kept on the way out.
// Wire data held briefly; boxing the large variant would only make matching clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingMessageContent {
    /// A single block (an object on the wire).
    Single(SamplingMessageContentBlock),
    /// Several blocks (an array on the wire), such as parallel tool uses.
    Multiple(Vec<SamplingMessageContentBlock>),
}

serialize_variants!(SamplingMessageContent { Single, Multiple });

impl<'de> Deserialize<'de> for SamplingMessageContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match buffer(d)? {
            v @ Value::Object(_) => SamplingMessageContentBlock::deserialize(v)
                .map(SamplingMessageContent::Single)
                .map_err(serde::de::Error::custom),
            v @ Value::Array(_) => Vec::<SamplingMessageContentBlock>::deserialize(v)
                .map(SamplingMessageContent::Multiple)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::invalid_type(
                unexpected(&other),
                &"a content block or an array of content blocks",
            )),
        }
    }
}

impl SamplingMessageContent {
    /// The blocks, whichever form was used.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingMessageContent::Single(b) => std::slice::from_ref(b),
            SamplingMessageContent::Multiple(v) => v,
        }
    }

    /// The text of the first text block, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.blocks()
            .iter()
            .find_map(SamplingMessageContentBlock::as_text)
    }
}

impl From<SamplingMessageContentBlock> for SamplingMessageContent {
    fn from(b: SamplingMessageContentBlock) -> Self {
        SamplingMessageContent::Single(b)
    }
}

impl From<Vec<SamplingMessageContentBlock>> for SamplingMessageContent {
    fn from(v: Vec<SamplingMessageContentBlock>) -> Self {
        SamplingMessageContent::Multiple(v)
    }
}

/// A block in a sampled message (`SamplingMessageContentBlock`), tagged by `type`.
///
/// As for [`ContentBlock`], a `type` this crate does not know (`tool_use` and `tool_result`
/// came with 2025-11-25) is kept as [`SamplingMessageContentBlock::Unknown`] and written back
/// as it came; the resource blocks of tool results are not sampling blocks and are rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SamplingMessageContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"tool_use"`: the model calls a tool.
    ToolUse(ToolUseContent),
    /// `"tool_result"`: the result of a tool use, sent back to the model.
    ToolResult(ToolResultContent),
    /// Any other `type`, kept as received.
    Unknown(UnknownContent),
}

serialize_variants!(SamplingMessageContentBlock {
    Text,
    Image,
    Audio,
    ToolUse,
    ToolResult,
    Unknown
});

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = crate::util::buffer_object(d, "a content block (an object)")?;
        match str_member(&map, "type") {
            Some(tags::Text::VALUE) => from_object(map).map(SamplingMessageContentBlock::Text),
            Some(tags::Image::VALUE) => from_object(map).map(SamplingMessageContentBlock::Image),
            Some(tags::Audio::VALUE) => from_object(map).map(SamplingMessageContentBlock::Audio),
            Some(tags::ToolUse::VALUE) => {
                from_object(map).map(SamplingMessageContentBlock::ToolUse)
            }
            Some(tags::ToolResult::VALUE) => {
                from_object(map).map(SamplingMessageContentBlock::ToolResult)
            }
            Some(other @ (tags::ResourceLink::VALUE | tags::Resource::VALUE)) => {
                Err(serde::de::Error::unknown_variant(
                    other,
                    &["text", "image", "audio", "tool_use", "tool_result"],
                ))
            }
            Some(_) => UnknownContent::new(map)
                .map(SamplingMessageContentBlock::Unknown)
                .map_err(|_| serde::de::Error::missing_field("type")),
            None => Err(serde::de::Error::missing_field("type")),
        }
    }
}

impl SamplingMessageContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingMessageContentBlock::Text(TextContent::new(text))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            SamplingMessageContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for SamplingMessageContentBlock {
    fn from(c: TextContent) -> Self {
        SamplingMessageContentBlock::Text(c)
    }
}

impl From<ImageContent> for SamplingMessageContentBlock {
    fn from(c: ImageContent) -> Self {
        SamplingMessageContentBlock::Image(c)
    }
}

impl From<AudioContent> for SamplingMessageContentBlock {
    fn from(c: AudioContent) -> Self {
        SamplingMessageContentBlock::Audio(c)
    }
}

impl From<ToolUseContent> for SamplingMessageContentBlock {
    fn from(c: ToolUseContent) -> Self {
        SamplingMessageContentBlock::ToolUse(c)
    }
}

impl From<ToolResultContent> for SamplingMessageContentBlock {
    fn from(c: ToolResultContent) -> Self {
        SamplingMessageContentBlock::ToolResult(c)
    }
}

/// The model asks to call a tool (`ToolUseContent`, `"type": "tool_use"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolUseContent {
    /// Always `"tool_use"`.
    #[serde(rename = "type")]
    pub kind: tags::ToolUse,
    /// The id that the matching [`ToolResultContent`] refers to.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments, kept verbatim.
    pub input: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolUseContent {
    /// A tool use.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        ToolUseContent {
            id: id.into(),
            name: name.into(),
            input,
            ..Default::default()
        }
    }
}

/// The result of a tool use (`ToolResultContent`, `"type": "tool_result"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultContent {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: tags::ToolResult,
    /// The `id` of the [`ToolUseContent`] this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: any JSON value (a present `null` is `Some(Value::Null)`).
    #[serde(
        default,
        deserialize_with = "crate::util::present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolResultContent {
    /// A result for the tool use `tool_use_id`.
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        ToolResultContent {
            tool_use_id: tool_use_id.into(),
            content,
            ..Default::default()
        }
    }
}

/// The model's answer (`CreateMessageResult`): a [`SamplingMessage`] plus the model and stop
/// reason. Not a JSON-RPC result in 2026-07-28 (no `resultType`): it travels inside
/// `inputResponses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// Who says it (normally the assistant).
    pub role: Role,
    /// One block or several.
    pub content: SamplingMessageContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// An assistant message with one block from `model`.
    pub fn new(model: impl Into<String>, content: impl Into<SamplingMessageContentBlock>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: SamplingMessageContent::Single(content.into()),
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// An assistant text answer from `model` that ended its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        CreateMessageResult {
            stop_reason: Some(StopReason::END_TURN),
            ..Self::new(model, TextContent::new(text))
        }
    }
}

/// Why sampling stopped (`CreateMessageResult.stopReason`): an open string.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StopReason(Cow<'static, str>);

impl StopReason {
    /// `"endTurn"`: the model ended its turn.
    pub const END_TURN: StopReason = StopReason(Cow::Borrowed("endTurn"));
    /// `"stopSequence"`: a stop sequence was produced.
    pub const STOP_SEQUENCE: StopReason = StopReason(Cow::Borrowed("stopSequence"));
    /// `"maxTokens"`: the token limit was reached.
    pub const MAX_TOKENS: StopReason = StopReason(Cow::Borrowed("maxTokens"));
    /// `"toolUse"`: the model wants to use tools.
    pub const TOOL_USE: StopReason = StopReason(Cow::Borrowed("toolUse"));

    /// A stop reason from any string (provider-specific values are allowed).
    pub fn new(value: impl Into<Cow<'static, str>>) -> Self {
        StopReason(value.into())
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which MCP context to include in a sampling prompt (`includeContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum IncludeContext {
    /// No context.
    None,
    /// Context from this server (deprecated).
    ThisServer,
    /// Context from all servers (deprecated).
    AllServers,
}

/// How the model may use the offered tools (`ToolChoice`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolChoice {
    /// The mode; the client's default is `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolChoice {
    /// A choice of `mode`.
    pub fn new(mode: ToolChoiceMode) -> Self {
        ToolChoice {
            mode: Some(mode),
            extra: JsonObject::new(),
        }
    }
}

/// `ToolChoice.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use a tool.
    Required,
    /// The model must not use tools.
    None,
}

/// The server's model preferences (`ModelPreferences`); advisory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub intelligence_priority: Option<f64>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ModelPreferences {
    /// No preferences yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a model name hint (hints are in order of preference).
    pub fn with_hint(mut self, name: impl Into<String>) -> Self {
        self.hints
            .get_or_insert_with(Vec::new)
            .push(ModelHint::new(name));
        self
    }

    /// Sets how much cost matters, 0 to 1.
    pub fn with_cost_priority(mut self, priority: f64) -> Self {
        self.cost_priority = Some(priority);
        self
    }

    /// Sets how much speed matters, 0 to 1.
    pub fn with_speed_priority(mut self, priority: f64) -> Self {
        self.speed_priority = Some(priority);
        self
    }

    /// Sets how much capability matters, 0 to 1.
    pub fn with_intelligence_priority(mut self, priority: f64) -> Self {
        self.intelligence_priority = Some(priority);
        self
    }
}

/// A model name hint (`ModelHint`), matched as a substring of model names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelHint {
    /// A full or partial model name, such as `"claude"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ModelHint {
    /// A hint naming `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ModelHint {
            name: Some(name.into()),
            extra: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_keeps_its_single_or_array_form() {
        let single = json!({"role": "user", "content": {"type": "text", "text": "hi"}});
        let m: SamplingMessage = serde_json::from_value(single.clone()).unwrap();
        assert!(matches!(m.content, SamplingMessageContent::Single(_)));
        assert_eq!(m.content.first_text(), Some("hi"));
        assert_eq!(serde_json::to_value(&m).unwrap(), single);

        let many = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "1", "name": "t", "input": {}},
            {"type": "text", "text": "x"}]});
        let m: SamplingMessage = serde_json::from_value(many.clone()).unwrap();
        assert_eq!(m.content.blocks().len(), 2);
        assert_eq!(serde_json::to_value(&m).unwrap(), many);

        let bad = json!({"role": "user", "content": "hi"});
        assert!(serde_json::from_value::<SamplingMessage>(bad).is_err());
        // Resource blocks are not sampling blocks.
        let bad = json!({"role": "user", "content": {"type": "resource_link", "uri": "a:b", "name": "n"}});
        assert!(serde_json::from_value::<SamplingMessage>(bad).is_err());
    }

    #[test]
    fn create_message_result() {
        let r = CreateMessageResult::text("m", "Paris");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
                   "model": "m", "stopReason": "endTurn"})
        );
        let r: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m",
            "stopReason": "refusal"}))
        .unwrap();
        assert_eq!(r.stop_reason.unwrap().as_str(), "refusal");
    }

    #[test]
    fn params() {
        let p = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("q")], 100);
        assert!(!p.uses_tools());
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}], "maxTokens": 100})
        );
        let c: IncludeContext = serde_json::from_value(json!("thisServer")).unwrap();
        assert_eq!(c, IncludeContext::ThisServer);
    }
}
