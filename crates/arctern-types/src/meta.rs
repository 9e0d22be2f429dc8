//! `_meta` objects and the keys MCP reserves in them.
//!
//! In 2026-07-28 every request carries its protocol version and the client's capabilities in
//! `params._meta` ([`RequestMeta`]); results carry the server's identity in their `_meta`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ClientCapabilities;
use crate::implementation::Implementation;
use crate::logging::LoggingLevel;
use crate::progress::ProgressToken;

/// A JSON object (`JSONObject`).
pub type JsonObject = Map<String, Value>;

/// Any JSON value (`JSONValue`).
pub type JsonValue = Value;

/// A JSON array (`JSONArray`).
pub type JsonArray = Vec<Value>;

/// The contents of a `_meta` member: an open JSON object.
pub type Meta = Map<String, Value>;

/// `_meta` key of the request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities for this request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's self-description.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the log level a request opts into.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key tying a notification to its `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key of the server's self-description on results.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a request's progress token.
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";
/// `_meta` key in which an arctern server's legacy shim names the `inputRequests` key that a
/// server→client request (`elicitation/create`, `sampling/createMessage`, `roots/list`)
/// stands for, so that a client can match the question to answers it holds by key. An
/// arctern extension: other clients ignore it.
pub const INPUT_KEY_META_KEY: &str = "dev.arctern/inputKey";
/// W3C trace-context keys, reserved in `_meta` without a prefix.
pub const TRACE_CONTEXT_KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// The `_meta` of a 2026-07-28 request (`RequestMetaObject`).
///
/// `protocolVersion` and `clientCapabilities` are required on the wire; they are `Option`
/// here so that a server can tell exactly which one is missing and answer `-32602`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The protocol revision this request speaks.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// The client's capabilities for this request only.
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "arc_in_place"
    )]
    pub client_capabilities: Option<Arc<ClientCapabilities>>,
    /// Who the client says it is (for display and logs only).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// Opt-in to `notifications/message` at this level or more severe.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Opt-in to `notifications/progress` for this request.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Any other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Meta,
}

impl RequestMeta {
    /// The envelope a client sends: version and capabilities (and usually client info).
    /// Pass an `Arc` to share one set of capabilities among many requests without copying.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: impl Into<Arc<ClientCapabilities>>,
    ) -> Self {
        RequestMeta {
            protocol_version: Some(protocol_version.into()),
            client_capabilities: Some(capabilities.into()),
            ..Default::default()
        }
    }

    /// Sets the client info.
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// Sets the progress token.
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }

    /// Sets the log level.
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Whether nothing at all is set.
    pub fn is_empty(&self) -> bool {
        self.protocol_version.is_none()
            && self.client_capabilities.is_none()
            && self.client_info.is_none()
            && self.log_level.is_none()
            && self.progress_token.is_none()
            && self.extra.is_empty()
    }
}

/// Whether `key` follows the `_meta` key grammar: an optional prefix of dot-separated labels
/// ending in `/`, then a name.
pub fn is_valid_meta_key(key: &str) -> bool {
    let (prefix, name) = match key.rfind('/') {
        Some(i) => (Some(&key[..i]), &key[i + 1..]),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty() || !prefix.split('.').all(is_valid_label))
    {
        return false;
    }
    is_valid_name(name)
}

/// Whether `key`'s prefix is reserved for MCP (its second label is `modelcontextprotocol` or
/// `mcp`).
pub fn is_reserved_meta_key(key: &str) -> bool {
    let Some(i) = key.rfind('/') else {
        return TRACE_CONTEXT_KEYS.contains(&key) || key == PROGRESS_TOKEN_KEY;
    };
    matches!(
        key[..i].split('.').nth(1),
        Some("modelcontextprotocol") | Some("mcp")
    )
}

fn is_valid_label(label: &str) -> bool {
    let b = label.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() {
        return true;
    }
    b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Deserializes straight into the `Arc`'s allocation. Serde's own `Arc<T>` goes through a
/// `Box<T>` and copies it into a second allocation, and the capabilities are in every request.
fn arc_in_place<'de, D, T>(deserializer: D) -> Result<Option<Arc<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.map(Arc::new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_meta_round_trips_and_keeps_unknown_keys() {
        let v = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": true}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "progressToken": 7,
            "com.example/trace": "x"
        });
        let m: RequestMeta = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.progress_token, Some(ProgressToken::Number(7)));
        assert_eq!(m.extra.get("com.example/trace"), Some(&json!("x")));
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn key_grammar() {
        assert!(is_valid_meta_key("io.modelcontextprotocol/protocolVersion"));
        assert!(is_valid_meta_key("progressToken"));
        assert!(is_valid_meta_key("com.example/"));
        assert!(!is_valid_meta_key("/x"));
        assert!(!is_valid_meta_key("1com/x"));
        assert!(!is_valid_meta_key("com./x"));
        assert!(is_reserved_meta_key("dev.mcp/x"));
        assert!(is_reserved_meta_key("org.modelcontextprotocol.api/x"));
        assert!(!is_reserved_meta_key("com.example.mcp/x"));
        assert!(is_reserved_meta_key("traceparent"));
    }
}
