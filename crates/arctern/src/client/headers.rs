//! The HTTP headers that mirror a request body (2026-07-28 Streamable HTTP).
//!
//! Every request carries `MCP-Protocol-Version` and `Mcp-Method`; `tools/call` and
//! `prompts/get` add `Mcp-Name` (the name), `resources/read` adds it with the URI. A tool may
//! mark input properties with `x-mcp-header: "{Name}"`; the client then mirrors the
//! argument's value into `Mcp-Param-{Name}`.
//!
//! Values go as they are when they are plain visible ASCII (spaces allowed inside); anything
//! else — non-ASCII, control characters, tabs, leading or trailing whitespace, or a value
//! that itself looks like the sentinel — goes as `=?base64?{base64 of the UTF-8}?=`
//! ([`encode_value`]).
//!
//! A tool whose annotations break the rules ([`validate_tool`]) is dropped from the tool list
//! a client shows when it talks HTTP.

use std::collections::HashSet;

use arctern_types::meta::JsonObject;
use arctern_types::tools::Tool;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// `MCP-Protocol-Version` (lower-case, as `http` spells header names).
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of mirrored argument headers, `Mcp-Param-`.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// The schema keyword that marks a property for mirroring.
pub const X_MCP_HEADER: &str = "x-mcp-header";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Encodes a header value: as-is when it is plain visible ASCII without surrounding
/// whitespace and does not look like the sentinel, else `=?base64?…?=`.
///
/// ```
/// use arctern::client::headers::encode_value;
/// assert_eq!(encode_value("us-west1"), "us-west1");
/// assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
/// ```
pub fn encode_value(value: &str) -> String {
    if is_plain(value) {
        value.to_owned()
    } else {
        let mut out = String::with_capacity(SENTINEL_PREFIX.len() + value.len() * 4 / 3 + 6);
        out.push_str(SENTINEL_PREFIX);
        STANDARD.encode_string(value.as_bytes(), &mut out);
        out.push_str(SENTINEL_SUFFIX);
        out
    }
}

/// Whether a value can go into a header as it is.
fn is_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    let visible = bytes.iter().all(|&b| (0x20..0x7f).contains(&b));
    let padded = bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ');
    visible && !padded && !looks_like_sentinel(value)
}

fn looks_like_sentinel(value: &str) -> bool {
    value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX)
}

/// Decodes a header value written by [`encode_value`] (or by any conforming peer): the
/// sentinel form is unwrapped, a plain value must be visible ASCII. `None` when the value is
/// malformed.
pub fn decode_value(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    if text.len() >= SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len() && looks_like_sentinel(text) {
        let inner = &text[SENTINEL_PREFIX.len()..text.len() - SENTINEL_SUFFIX.len()];
        let bytes = STANDARD
            .decode(inner)
            .or_else(|_| STANDARD_NO_PAD.decode(inner))
            .ok()?;
        return String::from_utf8(bytes).ok();
    }
    raw.iter()
        .all(|&b| (0x20..0x7f).contains(&b))
        .then(|| text.to_owned())
}

/// A header value from text that [`encode_value`] produced (always valid header bytes).
fn header_value(value: &str) -> HeaderValue {
    HeaderValue::from_str(&encode_value(value)).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Mcp-Name` header value for a tool or prompt name, or a resource URI.
pub fn name_header_value(name: &str) -> HeaderValue {
    header_value(name)
}

/// One argument a tool mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The chain of `properties` keys from the schema root to the annotated property.
    pub path: Vec<String>,
    /// The full header name, `mcp-param-{name}` in lower case.
    pub header: HeaderName,
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
            let Some(value) = lookup(arguments, &mirror.path) else {
                continue;
            };
            let text = match value {
                Value::Null => continue,
                Value::String(s) => header_value(s),
                Value::Bool(true) => HeaderValue::from_static("true"),
                Value::Bool(false) => HeaderValue::from_static("false"),
                Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                    (Some(i), _) => HeaderValue::from(i),
                    (None, Some(u)) => HeaderValue::from(u),
                    // A fraction where the schema promised an integer: send what was given and
                    // let the server judge it.
                    _ => header_value(&n.to_string()),
                },
                Value::Array(_) | Value::Object(_) => {
                    tracing::debug!(header = %mirror.header, "not mirroring a non-scalar argument");
                    continue;
                }
            };
            headers.append(mirror.header.clone(), text);
        }
    }
}

fn lookup<'a>(arguments: &'a JsonObject, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = arguments.get(first)?;
    for key in rest {
        value = value.as_object()?.get(key)?;
    }
    Some(value)
}

/// Checks a tool's `x-mcp-header` annotations and returns what it mirrors.
///
/// An annotation is valid when its value is a non-empty string of RFC 9110 token characters
/// (so no spaces, colons, control characters or non-ASCII), unique (ignoring case) within the
/// schema, placed on a property of type `string`, `integer` or `boolean` (not `number`), and
/// reachable from the root through `properties` keys only (never through `items`,
/// `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$ref` or definitions). `Err` says what
/// is wrong with the first invalid annotation.
pub fn validate_tool(tool: &Tool) -> Result<HeaderPlan, String> {
    let mut walk = Walk::default();
    walk.schema(&tool.input_schema, Some(&[]));
    if let Some(error) = walk.error {
        return Err(error);
    }
    Ok(HeaderPlan {
        mirrors: walk.mirrors,
    })
}

#[derive(Default)]
struct Walk {
    mirrors: Vec<Mirror>,
    seen: HashSet<String>,
    error: Option<String>,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` inside them is not an
/// annotation.
const DATA_KEYWORDS: [&str; 5] = ["const", "enum", "default", "examples", "required"];
/// Keywords whose values map names to schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
    "properties",
];

impl Walk {
    /// Visits a schema object. `path` is `Some` while the schema is statically reachable
    /// (root → properties → … only); the root itself has an empty path.
    fn schema(&mut self, schema: &JsonObject, path: Option<&[String]>) {
        if self.error.is_some() {
            return;
        }
        if let Some(annotation) = schema.get(X_MCP_HEADER) {
            self.annotation(annotation, schema, path);
            if self.error.is_some() {
                return;
            }
        }
        for (keyword, value) in schema {
            if keyword == X_MCP_HEADER || DATA_KEYWORDS.contains(&keyword.as_str()) {
                continue;
            }
            if keyword == "properties" {
                let Some(props) = value.as_object() else {
                    continue;
                };
                for (name, sub) in props {
                    let Some(sub) = sub.as_object() else { continue };
                    match path {
                        Some(base) => {
                            let mut next = base.to_vec();
                            next.push(name.clone());
                            self.schema(sub, Some(&next));
                        }
                        None => self.schema(sub, None),
                    }
                }
            } else if SCHEMA_MAPS.contains(&keyword.as_str()) {
                if let Some(map) = value.as_object() {
                    for sub in map.values().filter_map(Value::as_object) {
                        self.schema(sub, None);
                    }
                }
            } else {
                self.nested(value);
            }
            if self.error.is_some() {
                return;
            }
        }
    }

    /// Any other keyword: whatever schemas it holds are not statically reachable.
    fn nested(&mut self, value: &Value) {
        match value {
            Value::Object(map) => self.schema(map, None),
            Value::Array(items) => {
                for item in items {
                    self.nested(item);
                }
            }
            _ => {}
        }
    }

    fn annotation(&mut self, annotation: &Value, schema: &JsonObject, path: Option<&[String]>) {
        let fail = |why: String| Some(why);
        let Some(name) = annotation.as_str() else {
            self.error = fail("an x-mcp-header value must be a string".into());
            return;
        };
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            self.error = fail(format!(
                "x-mcp-header {name:?} is not on a property reachable through `properties` only"
            ));
            return;
        };
        if name.is_empty() {
            self.error = fail("an x-mcp-header value is empty".into());
            return;
        }
        if let Some(bad) = name.chars().find(|c| !is_token_char(*c)) {
            self.error = fail(format!(
                "x-mcp-header {name:?} contains {bad:?}, which is not an HTTP token character"
            ));
            return;
        }
        if !self.seen.insert(name.to_ascii_lowercase()) {
            self.error = fail(format!(
                "x-mcp-header {name:?} is used more than once (header names ignore case)"
            ));
            return;
        }
        if let Err(why) = primitive_type(schema) {
            self.error = fail(format!("x-mcp-header {name:?}: {why}"));
            return;
        }
        let header = format!("{MCP_PARAM_PREFIX}{}", name.to_ascii_lowercase());
        match HeaderName::from_bytes(header.as_bytes()) {
            Ok(header) => self.mirrors.push(Mirror {
                path: path.to_vec(),
                header,
            }),
            Err(_) => self.error = fail(format!("x-mcp-header {name:?} is not a header name")),
        }
    }
}

/// RFC 9110 `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The annotated property must be a string, an integer or a boolean.
fn primitive_type(schema: &JsonObject) -> Result<(), String> {
    const ALLOWED: [&str; 3] = ["string", "integer", "boolean"];
    match schema.get("type") {
        Some(Value::String(t)) if ALLOWED.contains(&t.as_str()) => Ok(()),
        Some(Value::String(t)) => Err(format!("type {t:?} cannot be mirrored")),
        // `["string", "null"]`: nullable primitives are fine (null is simply not mirrored).
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            let ok = names.len() == types.len()
                && names.iter().any(|t| ALLOWED.contains(t))
                && names.iter().all(|t| ALLOWED.contains(t) || *t == "null")
                && names.iter().filter(|t| **t != "null").count() == 1;
            if ok {
                Ok(())
            } else {
                Err(format!("type {types:?} cannot be mirrored"))
            }
        }
        Some(other) => Err(format!("type {other} cannot be mirrored")),
        None => Err("the property has no type".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        Tool::new("t", "d", schema.as_object().cloned().unwrap())
    }

    #[test]
    fn encodes_per_the_specification_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("a b"), "a b");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("a\tb"), "=?base64?YQli?=");
        assert_eq!(encode_value(" x"), "=?base64?IHg=?=");
        for v in ["héllo", "a\r\nb", " x ", "=?base64?abc?=", "", "plain"] {
            assert_eq!(decode_value(encode_value(v).as_bytes()).as_deref(), Some(v));
        }
        assert_eq!(decode_value(b"=?base64?!!?="), None);
        assert_eq!(decode_value("é".as_bytes()), None);
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
