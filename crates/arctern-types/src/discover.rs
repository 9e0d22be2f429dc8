//! `server/discover`: what a modern server supports, without a handshake.

use serde::{Deserialize, Serialize};

use crate::base::{RequestParams, ResultMeta, impl_cacheable};
use crate::capabilities::ServerCapabilities;
use crate::implementation::Implementation;
use crate::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use crate::meta::{JsonObject, Meta, SERVER_INFO_KEY};
use crate::result::{CacheScope, ResultType};

/// Params of `server/discover` (`RequestParams`: only the envelope).
pub type DiscoverRequestParams = RequestParams;

/// The result of `server/discover` (`DiscoverResult`). Cacheable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata; should carry `io.modelcontextprotocol/serverInfo`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The protocol revisions the server supports, such as `["2026-07-28"]`.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be reused, in milliseconds (missing from old servers: 0).
    #[serde(
        default,
        deserialize_with = "crate::util::lenient_ttl",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl DiscoverResult {
    /// A result listing versions and capabilities.
    pub fn new(
        supported_versions: impl IntoIterator<Item = impl Into<String>>,
        capabilities: ServerCapabilities,
    ) -> Self {
        DiscoverResult {
            supported_versions: supported_versions.into_iter().map(Into::into).collect(),
            capabilities,
            ..Default::default()
        }
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Puts `io.modelcontextprotocol/serverInfo` into `_meta`.
    pub fn with_server_info(mut self, info: Implementation) -> Self {
        let meta = self.meta.take().unwrap_or_default();
        let mut typed = ResultMeta::from_meta(&meta);
        typed.server_info = Some(info);
        self.meta = Some(typed.into_meta());
        self
    }

    /// The server's self-description from `_meta`, if present and well formed.
    pub fn server_info(&self) -> Option<Implementation> {
        let v = self.meta.as_ref()?.get(SERVER_INFO_KEY)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// Whether the server supports `version`.
    pub fn supports(&self, version: &str) -> bool {
        self.supported_versions.iter().any(|v| v == version)
    }
}

impl_cacheable!(DiscoverResult);

/// A `server/discover` request.
pub type DiscoverRequest = JsonRpcRequest<DiscoverRequestParams>;
/// The response to `server/discover`.
pub type DiscoverResultResponse = JsonRpcResponse<DiscoverResult>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::Cacheable;
    use serde_json::json;

    #[test]
    fn builds_a_discover_result() {
        let r = DiscoverResult::new(["2026-07-28"], ServerCapabilities::default())
            .with_server_info(Implementation::new("s", "1.0"))
            .with_cache_hints(0, CacheScope::Public);
        assert!(r.supports("2026-07-28"));
        assert_eq!(r.server_info().unwrap().version, "1.0");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {},
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1.0"}},
                   "ttlMs": 0, "cacheScope": "public"})
        );
    }
}
