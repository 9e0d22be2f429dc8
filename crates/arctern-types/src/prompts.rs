//! Prompts: `prompts/list` and `prompts/get`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::{PaginatedRequestParams, impl_cacheable};
use crate::content::{ContentBlock, Role};
use crate::implementation::Icon;
use crate::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::mrtr::{InputResponses, Outcome};
use crate::result::{CacheScope, Cursor, ResultType};

/// A prompt template the server offers (`Prompt`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The arguments the prompt takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Prompt {
    /// A prompt named `name` with a description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            description: Some(description.into()),
            ..Default::default()
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an argument.
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

/// An argument of a prompt (`PromptArgument`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptArgument {
    /// An optional argument.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            ..Default::default()
        }
    }

    /// A required argument with a description.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: Some(true),
            ..Default::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// One message of a prompt (`PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptMessage {
    /// A message.
    pub fn new(role: Role, content: impl Into<ContentBlock>) -> Self {
        PromptMessage {
            role,
            content: content.into(),
            extra: Default::default(),
        }
    }

    /// A text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentBlock::text(text))
    }

    /// A text message from the assistant.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// Params of `prompts/list` (`PaginatedRequestParams`).
pub type ListPromptsRequestParams = PaginatedRequestParams;

/// Params of `prompts/get` (`GetPromptRequestParams`). A multi round-trip request: a retry
/// carries `inputResponses` and/or `requestState`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The prompt to get.
    pub name: String,
    /// Arguments for the template; values are strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
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

impl GetPromptRequestParams {
    /// A first-round request for `name`.
    pub fn new(meta: RequestMeta, name: impl Into<String>) -> Self {
        GetPromptRequestParams {
            meta,
            name: name.into(),
            ..Default::default()
        }
    }

    /// Adds an argument.
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }
}

/// The result of `prompts/list` (`ListPromptsResult`). Cacheable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// This page of prompts.
    pub prompts: Vec<Prompt>,
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

impl ListPromptsResult {
    /// A page of prompts.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        ListPromptsResult {
            prompts,
            ..Default::default()
        }
    }

    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
}

impl_cacheable!(ListPromptsResult);

/// The complete result of `prompts/get` (`GetPromptResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// Always `"complete"` for this type.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// A description of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            messages,
            ..Default::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A `prompts/list` request.
pub type ListPromptsRequest = JsonRpcRequest<ListPromptsRequestParams>;
/// The response to `prompts/list`.
pub type ListPromptsResultResponse = JsonRpcResponse<ListPromptsResult>;
/// A `prompts/get` request.
pub type GetPromptRequest = JsonRpcRequest<GetPromptRequestParams>;
/// The response to `prompts/get`: the messages, or an `input_required` interim result.
pub type GetPromptResultResponse = JsonRpcResponse<Outcome<GetPromptResult>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builders() {
        let p = Prompt::new("p", "d").with_argument(PromptArgument::required("a", "an arg"));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"name": "p", "description": "d",
                   "arguments": [{"name": "a", "description": "an arg", "required": true}]})
        );
        let r = GetPromptResult::new(vec![PromptMessage::user_text("hi")]);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete",
                   "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]})
        );
    }

    #[test]
    fn prompt_arguments_are_strings() {
        let bad = json!({"_meta": {}, "name": "p", "arguments": {"n": 1}});
        assert!(serde_json::from_value::<GetPromptRequestParams>(bad).is_err());
    }
}
