//! Client and server capabilities.
//!
//! Unknown sub-fields are kept (`extra`), so a capability object received from a newer or
//! older peer (for example the legacy `roots.listChanged`) survives a round trip.

use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::meta::JsonObject;

/// What a client supports, declared per request in 2026-07-28 (`ClientCapabilities`).
///
/// An empty object means no optional capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, serde_json::Value>>,
    /// The client can list its roots (deprecated feature, still live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client can sample from an LLM (deprecated feature, still live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client can answer elicitations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Extensions the client supports, keyed by extension id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, serde_json::Value>>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ClientCapabilities.roots`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RootsCapability {
    /// Unknown members (such as the legacy `listChanged`), kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ClientCapabilities.sampling`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingCapability {
    /// Present when the client honours `includeContext` values other than `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Present when the client supports `tools` and `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ClientCapabilities.elicitation`. An empty object means form mode only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitationCapability {
    /// Form-mode elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL-mode elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCapability {
    /// Whether form mode is supported (explicitly, or by an object naming no mode).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

impl ClientCapabilities {
    /// Whether the client declared form-mode elicitation.
    pub fn supports_elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_form)
    }

    /// Whether the client declared URL-mode elicitation.
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_url)
    }

    /// Whether the client declared sampling.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether the client declared sampling with tools.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether the client declared roots.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }
}

/// What a server supports (`ServerCapabilities`), returned by `server/discover` and
/// `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, serde_json::Value>>,
    /// The server can send log messages (deprecated feature, still live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// The server offers argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Extensions the server supports, keyed by extension id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, serde_json::Value>>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ServerCapabilities.prompts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptsCapability {
    /// The server announces changes to the prompt list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptsCapability {
    /// Announces changes to the list (`listChanged`).
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }
}

/// `ServerCapabilities.resources`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// The server supports subscriptions to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server announces changes to the resource list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourcesCapability {
    /// Announces changes to the list (`listChanged`).
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }

    /// Supports subscriptions to resource updates (`subscribe`).
    pub fn with_subscribe(mut self, subscribe: bool) -> Self {
        self.subscribe = Some(subscribe);
        self
    }
}

/// `ServerCapabilities.tools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolsCapability {
    /// The server announces changes to the tool list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolsCapability {
    /// Announces changes to the list (`listChanged`).
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_unknown_sub_fields() {
        let v = json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}, "x-new": {"a": 1}});
        let c: ClientCapabilities = serde_json::from_value(v.clone()).unwrap();
        assert!(c.supports_sampling());
        assert!(c.supports_elicitation_form());
        assert!(!c.supports_elicitation_url());
        assert!(c.supports_roots());
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
    }

    #[test]
    fn elicitation_modes() {
        let c: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        assert!(!c.supports_elicitation_form());
        assert!(c.supports_elicitation_url());
        let c: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}, "form": {}}})).unwrap();
        assert!(c.supports_elicitation_form());
    }
}
