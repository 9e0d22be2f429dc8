//! Resources: `resources/list`, `resources/templates/list` and `resources/read`.

use serde::{Deserialize, Serialize};

use crate::base::{PaginatedRequestParams, impl_cacheable};
use crate::content::{Annotations, BlobResourceContents, ResourceContents, TextResourceContents};
use crate::implementation::Icon;
use crate::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::mrtr::{InputResponses, Outcome};
use crate::result::{CacheScope, Cursor, ResultType};

/// A resource the server can read (`Resource`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Size in bytes of the raw content, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A family of resources described by a URI template (`ResourceTemplate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// An RFC 6570 URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every matching resource, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceTemplate {
    /// A template `uri_template` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// Params naming one resource (`ResourceRequestParams`), the base of
/// [`ReadResourceRequestParams`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The resource URI.
    pub uri: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `resources/list` (`PaginatedRequestParams`).
pub type ListResourcesRequestParams = PaginatedRequestParams;

/// Params of `resources/templates/list` (`PaginatedRequestParams`).
pub type ListResourceTemplatesRequestParams = PaginatedRequestParams;

/// Params of `resources/read` (`ReadResourceRequestParams`). A multi round-trip request:
/// a retry carries `inputResponses` and/or `requestState`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The resource URI.
    pub uri: String,
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

impl ReadResourceRequestParams {
    /// A first-round read of `uri`.
    pub fn new(meta: RequestMeta, uri: impl Into<String>) -> Self {
        ReadResourceRequestParams {
            meta,
            uri: uri.into(),
            ..Default::default()
        }
    }
}

/// The result of `resources/list` (`ListResourcesResult`). Cacheable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// This page of resources.
    pub resources: Vec<Resource>,
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

impl ListResourcesResult {
    /// A page of resources.
    pub fn new(resources: Vec<Resource>) -> Self {
        ListResourcesResult {
            resources,
            ..Default::default()
        }
    }

    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
}

/// The result of `resources/templates/list` (`ListResourceTemplatesResult`). Cacheable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// This page of templates.
    pub resource_templates: Vec<ResourceTemplate>,
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

impl ListResourceTemplatesResult {
    /// A page of templates.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        ListResourceTemplatesResult {
            resource_templates,
            ..Default::default()
        }
    }

    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
}

/// The complete result of `resources/read` (`ReadResourceResult`). Cacheable (a result of a
/// retry carrying `inputResponses` or `requestState` must not be cached).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The contents: one entry for the resource, or several for its sub-resources. Never
    /// empty for a resource that exists (an unknown resource is error `-32602`).
    pub contents: Vec<ResourceContents>,
    /// How long the contents may be reused, in milliseconds (missing from old servers: 0).
    #[serde(
        default,
        deserialize_with = "crate::util::lenient_ttl",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadResourceResult {
    /// A result with these contents.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult {
            contents,
            ..Default::default()
        }
    }

    /// The text contents of `uri` with a MIME type.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::new(vec![
            TextResourceContents::new(uri, text)
                .with_mime_type(mime_type)
                .into(),
        ])
    }

    /// The binary contents of `uri` (base64) with a MIME type.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> Self {
        Self::new(vec![
            BlobResourceContents::new(uri, blob)
                .with_mime_type(mime_type)
                .into(),
        ])
    }
}

impl_cacheable!(
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult
);

/// A `resources/list` request.
pub type ListResourcesRequest = JsonRpcRequest<ListResourcesRequestParams>;
/// The response to `resources/list`.
pub type ListResourcesResultResponse = JsonRpcResponse<ListResourcesResult>;
/// A `resources/templates/list` request.
pub type ListResourceTemplatesRequest = JsonRpcRequest<ListResourceTemplatesRequestParams>;
/// The response to `resources/templates/list`.
pub type ListResourceTemplatesResultResponse = JsonRpcResponse<ListResourceTemplatesResult>;
/// A `resources/read` request.
pub type ReadResourceRequest = JsonRpcRequest<ReadResourceRequestParams>;
/// The response to `resources/read`: the contents, or an `input_required` interim result.
pub type ReadResourceResultResponse = JsonRpcResponse<Outcome<ReadResourceResult>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::Cacheable;
    use serde_json::json;

    #[test]
    fn read_result_constructors() {
        let r = ReadResourceResult::text("test://x", "text/plain", "hello")
            .with_cache_hints(60_000, CacheScope::Private);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete",
                   "contents": [{"uri": "test://x", "mimeType": "text/plain", "text": "hello"}],
                   "ttlMs": 60000, "cacheScope": "private"})
        );
    }

    #[test]
    fn old_server_results_have_no_hints() {
        let r: ListResourcesResult = serde_json::from_value(json!({"resources": []})).unwrap();
        assert!(r.result_type.is_complete());
        assert_eq!(r.cache_hints(), (None, None));
        assert_eq!(r.effective_ttl_ms(), 0);
    }
}
