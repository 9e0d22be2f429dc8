//! HTTP headers that mirror parts of a request body (2026-07-28 Streamable HTTP, SEP-2243).
//!
//! Every request carries `MCP-Protocol-Version` and `Mcp-Method`; `tools/call` and
//! `prompts/get` add `Mcp-Name` with the name, `resources/read` with the URI. A tool may mark
//! input properties with `x-mcp-header: "{Name}"`; clients then copy the argument's value
//! into `Mcp-Param-{Name}`, and a server that reads the body checks that they agree.
//!
//! Values travel as they are when they are plain visible ASCII (spaces allowed inside);
//! anything else — non-ASCII, control characters, tabs, leading or trailing whitespace, or a
//! value that itself looks like the sentinel — travels as `=?base64?{base64 of the UTF-8}?=`
//! with lower-case markers ([`encode_value`], [`decode_value`]).
//!
//! Both sides share these rules, so a client and a server built from this crate can never
//! disagree about an encoding or about which annotations are valid.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::meta::JsonObject;

/// `MCP-Protocol-Version`.
pub const MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// `Mcp-Method`.
pub const MCP_METHOD: &str = "Mcp-Method";
/// `Mcp-Name`.
pub const MCP_NAME: &str = "Mcp-Name";
/// The prefix of mirrored argument headers.
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";
/// The schema keyword that marks a property for mirroring.
pub const X_MCP_HEADER: &str = "x-mcp-header";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Encodes a header value: as it is when it is plain visible ASCII without surrounding
/// whitespace and does not look like the sentinel, else `=?base64?…?=`.
///
/// ```
/// use arctern_types::headers::encode_value;
/// assert_eq!(encode_value("us-west1"), "us-west1");
/// assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// ```
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_plain(value) {
        Cow::Borrowed(value)
    } else {
        let mut out = String::with_capacity(SENTINEL_PREFIX.len() + value.len() * 4 / 3 + 6);
        out.push_str(SENTINEL_PREFIX);
        STANDARD.encode_string(value.as_bytes(), &mut out);
        out.push_str(SENTINEL_SUFFIX);
        Cow::Owned(out)
    }
}

fn is_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    let visible = bytes.iter().all(|&b| (0x20..0x7f).contains(&b));
    let padded = bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ');
    visible && !padded && !looks_like_sentinel(bytes)
}

fn looks_like_sentinel(bytes: &[u8]) -> bool {
    bytes.len() >= SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len()
        && bytes.starts_with(SENTINEL_PREFIX.as_bytes())
        && bytes.ends_with(SENTINEL_SUFFIX.as_bytes())
}

/// Why a header value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderValueError(&'static str);

impl fmt::Display for HeaderValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for HeaderValueError {}

/// Decodes a header value: the sentinel form is unwrapped (canonical, padded base64 of UTF-8
/// only — SEP-2243 has servers reject bad padding), and any other value must be plain
/// visible ASCII. Upper-case markers are not the sentinel: such a value is literal text.
pub fn decode_value(raw: &[u8]) -> Result<String, HeaderValueError> {
    if looks_like_sentinel(raw) {
        let encoded = &raw[SENTINEL_PREFIX.len()..raw.len() - SENTINEL_SUFFIX.len()];
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| HeaderValueError("the base64 sentinel does not hold valid base64"))?;
        return String::from_utf8(bytes)
            .map_err(|_| HeaderValueError("the base64 sentinel does not hold UTF-8 text"));
    }
    if raw.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        // Every byte is printable ASCII, so this is valid UTF-8.
        return Ok(raw.iter().map(|&b| char::from(b)).collect());
    }
    Err(HeaderValueError(
        "a value that is not plain visible ASCII must use the =?base64?…?= form",
    ))
}

/// One tool argument mirrored into an `Mcp-Param-{Name}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirroredParam {
    /// The `{Name}` part of the header, as the schema declares it (compared ignoring case).
    pub header: String,
    /// The chain of `properties` keys from the schema root to the annotated property.
    pub path: Vec<String>,
}

impl MirroredParam {
    /// The full header name, `Mcp-Param-{Name}`.
    pub fn header_name(&self) -> String {
        format!("{MCP_PARAM_PREFIX}{}", self.header)
    }

    /// The argument this header mirrors, if present and not `null`.
    pub fn value<'a>(&self, arguments: &'a JsonObject) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        rest.iter()
            .try_fold(arguments.get(first)?, |value, key| {
                value.as_object()?.get(key)
            })
            .filter(|v| !v.is_null())
    }

    /// The header text for an argument value: strings as they are, integers in decimal,
    /// booleans as `true`/`false`, each through [`encode_value`]; `None` for `null`, arrays
    /// and objects (not mirrored).
    pub fn header_text(value: &Value) -> Option<String> {
        match value {
            Value::String(s) => Some(encode_value(s).into_owned()),
            Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_owned()),
            // A fraction where the schema promised an integer is sent as given; the server
            // judges it.
            Value::Number(n) => Some(encode_value(&n.to_string()).into_owned()),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// Whether a decoded header text mirrors a body value: strings exactly, booleans as
    /// `true`/`false`, numbers numerically (`42` and `42.0` agree).
    pub fn matches(value: &Value, text: &str) -> bool {
        match value {
            Value::String(s) => s == text,
            Value::Bool(b) => text == if *b { "true" } else { "false" },
            Value::Number(n) => match (n.as_i64(), text.parse::<i64>()) {
                (Some(a), Ok(b)) => a == b,
                _ => match (n.as_f64(), text.parse::<f64>()) {
                    (Some(a), Ok(b)) => a == b,
                    _ => false,
                },
            },
            Value::Null | Value::Array(_) | Value::Object(_) => false,
        }
    }
}

/// The mirrored arguments a tool's `inputSchema` declares, after checking every
/// `x-mcp-header` annotation in it.
///
/// An annotation is valid when its value is a non-empty string of HTTP token characters
/// (RFC 9110 `tchar`: no spaces, colons, control characters or non-ASCII), unique within the
/// schema ignoring case, on a property of type `string`, `integer` or `boolean` (optionally
/// also `null`; never `number`), and reachable from the root through `properties` keys only
/// (never through `items`, composition or conditional keywords, `$ref` or definitions). `Err`
/// describes the first invalid annotation: clients on HTTP must drop such a tool, so a server
/// should not offer it.
pub fn mirrored_params(input_schema: &JsonObject) -> Result<Vec<MirroredParam>, String> {
    let mut walk = Walk::default();
    walk.schema(input_schema, Some(&[]))?;
    Ok(walk.found)
}

#[derive(Default)]
struct Walk {
    found: Vec<MirroredParam>,
    seen: HashSet<String>,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them is not an
/// annotation.
const DATA_KEYWORDS: [&str; 5] = ["const", "enum", "default", "examples", "required"];

impl Walk {
    /// Visits a schema object; `path` is `Some` while it is reachable through `properties`
    /// keys only.
    fn schema(&mut self, schema: &JsonObject, path: Option<&[String]>) -> Result<(), String> {
        if let Some(annotation) = schema.get(X_MCP_HEADER) {
            self.annotation(annotation, schema, path)?;
        }
        for (keyword, value) in schema {
            if keyword == X_MCP_HEADER || DATA_KEYWORDS.contains(&keyword.as_str()) {
                continue;
            }
            match (keyword.as_str(), value) {
                ("properties", Value::Object(properties)) => {
                    for (name, sub) in properties {
                        let Value::Object(sub) = sub else { continue };
                        let next = path.map(|base| {
                            let mut next = base.to_vec();
                            next.push(name.clone());
                            next
                        });
                        self.schema(sub, next.as_deref())?;
                    }
                }
                _ => self.unreachable(value)?,
            }
        }
        Ok(())
    }

    /// Schemas under any other keyword are not statically reachable, but an annotation there
    /// still makes the tool invalid.
    fn unreachable(&mut self, value: &Value) -> Result<(), String> {
        match value {
            Value::Object(map) => self.schema(map, None),
            Value::Array(items) => items.iter().try_for_each(|item| self.unreachable(item)),
            _ => Ok(()),
        }
    }

    fn annotation(
        &mut self,
        annotation: &Value,
        schema: &JsonObject,
        path: Option<&[String]>,
    ) -> Result<(), String> {
        let Some(name) = annotation.as_str() else {
            return Err("an x-mcp-header value must be a string".into());
        };
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return Err(format!(
                "x-mcp-header {name:?} is not on a property reachable through `properties` only"
            ));
        };
        if name.is_empty() {
            return Err("an x-mcp-header value is empty".into());
        }
        if let Some(bad) = name.chars().find(|c| !is_token_char(*c)) {
            return Err(format!(
                "x-mcp-header {name:?} contains {bad:?}, which is not an HTTP token character"
            ));
        }
        if !self.seen.insert(name.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {name:?} is used more than once (header names ignore case)"
            ));
        }
        primitive_type(schema).map_err(|why| format!("x-mcp-header {name:?}: {why}"))?;
        self.found.push(MirroredParam {
            header: name.to_owned(),
            path: path.to_vec(),
        });
        Ok(())
    }
}

/// RFC 9110 `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The annotated property must be a string, an integer or a boolean (possibly nullable).
fn primitive_type(schema: &JsonObject) -> Result<(), String> {
    const ALLOWED: [&str; 3] = ["string", "integer", "boolean"];
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(types)) if types.iter().all(Value::is_string) => {
            types.iter().filter_map(Value::as_str).collect()
        }
        _ => return Err("the property has no single primitive type".into()),
    };
    let mut non_null = types.iter().filter(|t| **t != "null");
    match (non_null.next(), non_null.next()) {
        (Some(t), None) if ALLOWED.contains(t) => Ok(()),
        _ => Err(format!(
            "type {types:?} cannot be mirrored (only string, integer and boolean can)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(schema: Value) -> Result<Vec<MirroredParam>, String> {
        mirrored_params(schema.as_object().unwrap())
    }

    #[test]
    fn encodes_and_decodes_per_the_specification() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("a b"), "a b");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("a\tb"), "=?base64?YQli?=");
        assert_eq!(encode_value(" x"), "=?base64?IHg=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for v in [
            "héllo",
            "a\r\nb",
            " x ",
            "=?base64?abc?=",
            "",
            "plain",
            "file:///a b",
        ] {
            assert_eq!(decode_value(encode_value(v).as_bytes()).unwrap(), v);
        }
        assert_eq!(decode_value(b"=?base64??=").unwrap(), "");
        assert!(decode_value(b"=?base64?!!!?=").is_err());
        assert!(
            decode_value(b"=?base64?SGVsbG8?=").is_err(),
            "padding is missing"
        );
        assert!(
            decode_value(b"=?base64?/w==?=").is_err(),
            "0xff is not UTF-8"
        );
        assert!(decode_value("héllo".as_bytes()).is_err());
        assert!(decode_value(b"a\tb").is_err());
        assert_eq!(decode_value(b"=?BASE64?YQ==?=").unwrap(), "=?BASE64?YQ==?=");
    }

    #[test]
    fn finds_annotations_reachable_through_properties() {
        let found = params(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "cfg": {"type": "object", "properties": {
                    "n": {"type": ["integer", "null"], "x-mcp-header": "N"}}},
                "items": {"type": "array", "items": {"type": "string"}},
                "x-mcp-header": {"type": "string"},
                "fixed": {"const": {"x-mcp-header": "data, not an annotation"}}
            }
        }))
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].path, ["cfg", "n"]);
        assert_eq!(found[0].header_name(), "Mcp-Param-Region");
    }

    #[test]
    fn rejects_invalid_annotations() {
        for bad in [
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": 5}}}),
            json!({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": "null", "x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"x-mcp-header": "A"}}}),
            json!({"type": "object", "properties": {"a": {"type": ["string", "integer"], "x-mcp-header": "A"}}}),
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
            assert!(params(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_text_and_matching() {
        assert_eq!(
            MirroredParam::header_text(&json!("héllo")).unwrap(),
            "=?base64?aMOpbGxv?="
        );
        assert_eq!(MirroredParam::header_text(&json!(-7)).unwrap(), "-7");
        assert_eq!(MirroredParam::header_text(&json!(false)).unwrap(), "false");
        assert_eq!(MirroredParam::header_text(&json!(null)), None);
        assert_eq!(MirroredParam::header_text(&json!([1])), None);
        assert!(MirroredParam::matches(&json!(42), "42"));
        assert!(MirroredParam::matches(&json!(42.0), "42"));
        assert!(MirroredParam::matches(&json!(true), "true"));
        assert!(!MirroredParam::matches(&json!("a"), "b"));
        assert!(!MirroredParam::matches(&json!(1), "1.5"));
        let p = &params(
            json!({"type": "object", "properties": {"cfg": {"type": "object",
            "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}}}),
        )
        .unwrap()[0];
        let args = json!({"cfg": {"n": 3}});
        assert_eq!(p.value(args.as_object().unwrap()), Some(&json!(3)));
        let args = json!({"cfg": {"n": null}});
        assert_eq!(p.value(args.as_object().unwrap()), None);
    }
}
