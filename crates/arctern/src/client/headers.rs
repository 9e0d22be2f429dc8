//! The HTTP headers that mirror a request body (2026-07-28 Streamable HTTP).
//!
//! Every request carries `MCP-Protocol-Version` and `Mcp-Method`; `tools/call` and
//! `prompts/get` add `Mcp-Name` (the name), `resources/read` adds it with the URI. A tool may
//! mark input properties with `x-mcp-header: "{Name}"`; the client then mirrors the
//! argument's value into `Mcp-Param-{Name}`. The encoding and annotation rules are shared with
//! the server, in [`arctern_types::headers`]; this module turns them into header maps.
//!
//! A tool whose annotations break the rules ([`validate_tool`]) is dropped from the tool list
//! a client shows when it talks HTTP.

use arctern_types::headers::{self as rules, MirroredParam};
use arctern_types::meta::JsonObject;
use arctern_types::tools::Tool;
use http::{HeaderMap, HeaderName, HeaderValue};

pub use arctern_types::headers::X_MCP_HEADER;

pub use crate::transport::headers::{MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION};

/// Encodes a header value: as-is when it is plain visible ASCII without surrounding
/// whitespace and does not look like the sentinel, else `=?base64?…?=`.
///
/// ```
/// use arctern::client::headers::encode_value;
/// assert_eq!(encode_value("us-west1"), "us-west1");
/// assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// ```
pub fn encode_value(value: &str) -> String {
    rules::encode_value(value).into_owned()
}

/// Decodes a header value written by [`encode_value`] (or by any conforming peer); `None`
/// when the value is malformed.
pub fn decode_value(raw: &[u8]) -> Option<String> {
    rules::decode_value(raw).ok()
}

/// A header value from text (the encoding makes it valid header bytes).
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Mcp-Name` header value for a tool or prompt name, or a resource URI.
pub fn name_header_value(name: &str) -> HeaderValue {
    header_value(&rules::encode_value(name))
}

/// One argument a tool mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The chain of `properties` keys from the schema root to the annotated property.
    pub path: Vec<String>,
    /// The full header name, `mcp-param-{name}` in lower case.
    pub header: HeaderName,
    param: MirroredParam,
}

/// The arguments a tool mirrors into `Mcp-Param-*` headers, read from its `inputSchema`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderPlan {
    mirrors: Vec<Mirror>,
}

impl HeaderPlan {
    /// Whether the tool mirrors nothing.
    pub fn is_empty(&self) -> bool {
        self.mirrors.is_empty()
    }

    /// The mirrored arguments.
    pub fn mirrors(&self) -> &[Mirror] {
        &self.mirrors
    }

    /// Adds the `Mcp-Param-*` headers for `arguments` to `headers`. An argument that is
    /// absent or `null` is omitted; strings go as they are, integers in decimal, booleans
    /// as `true`/`false` (all through [`encode_value`]).
    pub fn apply(&self, arguments: Option<&JsonObject>, headers: &mut HeaderMap) {
        let Some(arguments) = arguments else { return };
        for mirror in &self.mirrors {
            let Some(value) = mirror.param.value(arguments) else {
                continue;
            };
            match MirroredParam::header_text(value) {
                Some(text) => {
                    headers.append(mirror.header.clone(), header_value(&text));
                }
                None => {
                    tracing::debug!(header = %mirror.header, "not mirroring a non-scalar argument");
                }
            }
        }
    }
}

/// Checks a tool's `x-mcp-header` annotations and returns what it mirrors (see
/// [`arctern_types::headers::mirrored_params`] for the rules). `Err` says what is wrong with
/// the first invalid annotation.
pub fn validate_tool(tool: &Tool) -> Result<HeaderPlan, String> {
    let mirrors = rules::mirrored_params(&tool.input_schema)?
        .into_iter()
        .map(|param| {
            let name = format!("{MCP_PARAM_PREFIX}{}", param.header.to_ascii_lowercase());
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("x-mcp-header {:?} is not a header name", param.header))?;
            Ok(Mirror {
                path: param.path.clone(),
                header,
                param,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(HeaderPlan { mirrors })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn tool(schema: Value) -> Tool {
        Tool::new("t", "d", schema.as_object().cloned().unwrap())
    }

    #[test]
    fn finds_nested_mirrors_and_rejects_bad_ones() {
        let plan = validate_tool(&tool(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "cfg": {"type": "object", "properties": {
                    "n": {"type": "integer", "x-mcp-header": "N"}}},
                "items": {"type": "array", "items": {"type": "string"}},
                "x-mcp-header": {"type": "string"}
            }
        })))
        .unwrap();
        assert_eq!(plan.mirrors().len(), 2);
        assert_eq!(plan.mirrors()[1].path, ["cfg", "n"]);

        for bad in [
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "null", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A:B"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A\u{1}"}}}),
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [
                {"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ] {
            assert!(validate_tool(&tool(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn mirrors_values() {
        let plan = validate_tool(&tool(json!({"type": "object", "properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "n": {"type": ["string", "null"], "x-mcp-header": "N"},
            "m": {"type": "string", "x-mcp-header": "Method"}
        }})))
        .unwrap();
        let args = json!({"s": "héllo", "i": -7, "b": false, "n": null, "m": "x"});
        let mut headers = HeaderMap::new();
        plan.apply(args.as_object(), &mut headers);
        assert_eq!(headers["mcp-param-s"], "=?base64?aMOpbGxv?=");
        assert_eq!(headers["mcp-param-i"], "-7");
        assert_eq!(headers["mcp-param-b"], "false");
        assert_eq!(headers["mcp-param-method"], "x");
        assert!(!headers.contains_key("mcp-param-n"));
        assert!(!headers.contains_key("mcp-method"));
    }
}
