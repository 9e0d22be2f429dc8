//! Roots: asking the client which directories the server may work in, as a `roots/list`
//! input request. A deprecated feature in 2026-07-28 (still specified and live).

use serde::{Deserialize, Serialize};

use crate::meta::{JsonObject, Meta};
use crate::tags;

/// A directory or file the client exposes (`Root`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            ..Default::default()
        }
    }

    /// Sets the display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// A roots input request (`ListRootsRequest`): `{"method": "roots/list"}`, without JSON-RPC
/// members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsRequest {
    /// Always `"roots/list"`.
    pub method: tags::RootsList,
    /// Optional params (only `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<ListRootsRequestParams>,
    /// Unknown members (some senders still add a JSON-RPC `id`), kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListRootsRequest {
    /// A request without params.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The params of a [`ListRootsRequest`] (`ListRootsRequest.params`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The client's roots (`ListRootsResult`). Not a JSON-RPC result in 2026-07-28 (no
/// `resultType`): it travels inside `inputResponses`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Unknown members (such as a `_meta` from an older client), kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListRootsResult {
    /// A result listing `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult {
            roots,
            extra: JsonObject::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_roots_request_shapes() {
        assert_eq!(
            serde_json::to_value(ListRootsRequest::new()).unwrap(),
            json!({"method": "roots/list"})
        );
        let r: ListRootsRequest =
            serde_json::from_value(json!({"method": "roots/list", "params": {}})).unwrap();
        assert_eq!(r.params, Some(ListRootsRequestParams::default()));
        assert!(
            serde_json::from_value::<ListRootsRequest>(json!({"method": "roots/lis"})).is_err()
        );
        assert!(serde_json::from_value::<ListRootsRequest>(json!({})).is_err());
    }
}
