//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::result::ResultType;
use crate::tags;
use crate::util::{buffer_object, from_object, serialize_variants, str_member};

/// The most values one completion may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// A reference to a prompt (`PromptReference`, `"type": "ref/prompt"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptReference {
    /// Always `"ref/prompt"`.
    #[serde(rename = "type")]
    pub kind: tags::PromptRef,
    /// The prompt name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptReference {
    /// A reference to the prompt `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptReference {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// A reference to a resource template (`ResourceTemplateReference`,
/// `"type": "ref/resource"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceTemplateReference {
    /// Always `"ref/resource"`.
    #[serde(rename = "type")]
    pub kind: tags::ResourceRef,
    /// The URI or URI template.
    pub uri: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceTemplateReference {
    /// A reference to the template `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceTemplateReference {
            kind: tags::ResourceRef,
            uri: uri.into(),
            extra: Default::default(),
        }
    }
}

/// What is being completed: a prompt or a resource template (`CompleteRequestParams.ref`),
/// tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompletionReference {
    /// `"ref/prompt"`.
    Prompt(PromptReference),
    /// `"ref/resource"`.
    Resource(ResourceTemplateReference),
}

serialize_variants!(CompletionReference { Prompt, Resource });

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a completion reference (an object)")?;
        match str_member(&map, "type") {
            Some(tags::PromptRef::VALUE) => from_object(map).map(CompletionReference::Prompt),
            Some(tags::ResourceRef::VALUE) => from_object(map).map(CompletionReference::Resource),
            Some(other) => Err(serde::de::Error::unknown_variant(
                other,
                &["ref/prompt", "ref/resource"],
            )),
            None => Err(serde::de::Error::missing_field("type")),
        }
    }
}

impl From<PromptReference> for CompletionReference {
    fn from(r: PromptReference) -> Self {
        CompletionReference::Prompt(r)
    }
}

impl From<ResourceTemplateReference> for CompletionReference {
    fn from(r: ResourceTemplateReference) -> Self {
        CompletionReference::Resource(r)
    }
}

/// The argument being completed (`CompleteRequestParams.argument`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteArgument {
    /// The argument name.
    pub name: String,
    /// What the user has typed so far.
    pub value: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteArgument {
    /// The argument `name`, typed so far as `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompleteArgument {
            name: name.into(),
            value: value.into(),
            extra: JsonObject::new(),
        }
    }
}

/// Other arguments already filled in (`CompleteRequestParams.context`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteContext {
    /// Already-resolved arguments, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteContext {
    /// The arguments already filled in.
    pub fn new(arguments: BTreeMap<String, String>) -> Self {
        CompleteContext {
            arguments: Some(arguments),
            extra: JsonObject::new(),
        }
    }
}

/// Params of `completion/complete` (`CompleteRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The prompt or resource template whose argument is completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and its partial value.
    pub argument: CompleteArgument,
    /// Other arguments already filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteRequestParams {
    /// Completes `argument` (with its partial `value`) of `reference`.
    pub fn new(
        meta: RequestMeta,
        reference: impl Into<CompletionReference>,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        CompleteRequestParams {
            meta,
            reference: reference.into(),
            argument: CompleteArgument {
                name: argument.into(),
                value: value.into(),
                extra: Default::default(),
            },
            context: None,
            extra: Default::default(),
        }
    }
}

/// The completion values (`CompleteResult.completion`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// Up to 100 values.
    pub values: Vec<String>,
    /// How many values exist in all, which may exceed the number sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Completion {
    /// A completion from any number of values: keeps the first 100 and, when there were
    /// more, sets `total` and `hasMore`.
    pub fn from_values(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        if values.len() > MAX_COMPLETION_VALUES {
            let total = values.len() as u64;
            values.truncate(MAX_COMPLETION_VALUES);
            Completion {
                values,
                total: Some(total),
                has_more: Some(true),
                extra: Default::default(),
            }
        } else {
            Completion {
                values,
                total: None,
                has_more: None,
                extra: Default::default(),
            }
        }
    }
}

/// The result of `completion/complete` (`CompleteResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The values.
    pub completion: Completion,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteResult {
    /// A result from any number of values (see [`Completion::from_values`]).
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        CompleteResult {
            completion: Completion::from_values(values),
            ..Default::default()
        }
    }

    /// A result with no values.
    pub fn empty() -> Self {
        Self::default()
    }
}

/// A `completion/complete` request.
pub type CompleteRequest = JsonRpcRequest<CompleteRequestParams>;
/// The response to `completion/complete`.
pub type CompleteResultResponse = JsonRpcResponse<CompleteResult>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_tagged() {
        let r: CompletionReference =
            serde_json::from_value(json!({"type": "ref/resource", "uri": "file:///{path}"}))
                .unwrap();
        assert_eq!(r, ResourceTemplateReference::new("file:///{path}").into());
        assert!(
            serde_json::from_value::<CompletionReference>(json!({"type": "ref/tool", "name": "x"}))
                .is_err()
        );
        let p = CompleteRequestParams::new(
            RequestMeta::default(),
            PromptReference::new("p"),
            "arg1",
            "par",
        );
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"_meta": {}, "ref": {"type": "ref/prompt", "name": "p"},
                   "argument": {"name": "arg1", "value": "par"}})
        );
    }

    #[test]
    fn values_are_capped_at_100() {
        let c = Completion::from_values((0..150).map(|i| i.to_string()));
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.total, Some(150));
        assert_eq!(c.has_more, Some(true));
        let c = Completion::from_values(["a"]);
        assert_eq!(c.total, None);
    }
}
