//! Tool arguments mirrored into `Mcp-Param-{Name}` HTTP headers (SEP-2243).
//!
//! A tool marks input properties with `x-mcp-header: "{Name}"`; clients on Streamable HTTP
//! copy the argument's value into the header `Mcp-Param-{Name}`, so that intermediaries can
//! route on it. A server that reads the body must check that every such header matches the
//! body, and reject the request with HTTP 400 and `-32020` (HeaderMismatch) otherwise.

use std::collections::HashSet;

use arctern_types::meta::JsonObject;
use serde_json::Value;

/// The schema keyword that marks a property for mirroring.
const X_MCP_HEADER: &str = "x-mcp-header";

/// One tool argument that clients mirror into an `Mcp-Param-{Name}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredParam {
    /// The `{Name}` part of the header, as the schema declares it (compared ignoring case).
    pub header: String,
    /// The chain of `properties` keys from the schema root to the annotated property.
    pub path: Vec<String>,
}

impl MirroredParam {
    /// The mirrored arguments a tool's `inputSchema` declares, after checking every
    /// `x-mcp-header` annotation in it.
    ///
    /// An annotation is valid when its value is a non-empty string of HTTP token characters
    /// (RFC 9110 `tchar`), unique within the schema ignoring case, on a property of type
    /// `string`, `integer` or `boolean` (optionally also `null`), and reachable from the root
    /// through `properties` keys only (never through `items`, composition or conditional
    /// keywords, `$ref` or definitions). `Err` describes the first invalid annotation: the
    /// specification requires clients to drop such a tool, so a server should not offer it.
    pub fn from_input_schema(schema: &JsonObject) -> Result<Vec<MirroredParam>, String> {
        let mut walk = Walk::default();
        walk.schema(schema, Some(&[]))?;
        Ok(walk.found)
    }
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
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
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

/// Checks the `Mcp-Param-*` headers of a `tools/call` against its arguments.
///
/// `headers` holds each `Mcp-Param-*` header as (name after the prefix, value decoded from
/// its base64 sentinel form or why it is malformed). Headers the tool does not declare are
/// ignored. `Err` says why the request must be rejected with `-32020`.
pub(crate) fn check_headers(
    mirrored: &[MirroredParam],
    arguments: Option<&JsonObject>,
    headers: &[(String, Result<String, String>)],
) -> Result<(), String> {
    for param in mirrored {
        let value = arguments
            .and_then(|args| lookup(args, &param.path))
            .filter(|v| !v.is_null());
        let mut sent = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(&param.header));
        let header = sent.next().map(|(_, v)| v);
        if sent.next().is_some() {
            return Err(format!("Mcp-Param-{} header is repeated", param.header));
        }
        match (value, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "Missing Mcp-Param-{} header for argument {}",
                    param.header,
                    param.path.join(".")
                ));
            }
            (None, Some(_)) => {
                return Err(format!(
                    "Mcp-Param-{} header given, but argument {} is absent",
                    param.header,
                    param.path.join(".")
                ));
            }
            (Some(_), Some(Err(why))) => {
                return Err(format!(
                    "Malformed Mcp-Param-{} header: {why}",
                    param.header
                ));
            }
            (Some(value), Some(Ok(text))) => {
                if !matches(value, text) {
                    return Err(format!(
                        "Mcp-Param-{} header does not match argument {}",
                        param.header,
                        param.path.join(".")
                    ));
                }
            }
        }
    }
    Ok(())
}

fn lookup<'a>(arguments: &'a JsonObject, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(arguments.get(first)?, |value, key| {
        value.as_object()?.get(key)
    })
}

/// Whether a header's text mirrors a body value: strings exactly, booleans as
/// `true`/`false`, numbers numerically (`42` and `42.0` agree).
fn matches(value: &Value, text: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(schema: Value) -> Result<Vec<MirroredParam>, String> {
        MirroredParam::from_input_schema(schema.as_object().unwrap())
    }

    #[test]
    fn finds_annotations_reachable_through_properties() {
        let found = params(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "cfg": {"type": "object", "properties": {
                    "n": {"type": ["integer", "null"], "x-mcp-header": "N"}}},
                "x-mcp-header": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}}
            }
        }))
        .unwrap();
        assert_eq!(
            found,
            vec![
                MirroredParam {
                    header: "Region".into(),
                    path: vec!["region".into()]
                },
                MirroredParam {
                    header: "N".into(),
                    path: vec!["cfg".into(), "n".into()]
                },
            ]
        );
    }

    #[test]
    fn rejects_invalid_annotations() {
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 1}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "null", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "My Region"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A:B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Région"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A\t1"}}}),
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"type": "string", "x-mcp-header": "REGION"}}}),
            json!({"properties": {"a": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ] {
            assert!(params(bad.clone()).is_err(), "{bad}");
        }
    }

    fn check(args: Value, headers: &[(&str, Result<&str, &str>)]) -> Result<(), String> {
        let mirrored = params(json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"}
        }}))
        .unwrap();
        let headers: Vec<(String, Result<String, String>)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.map(str::to_owned).map_err(str::to_owned)))
            .collect();
        check_headers(&mirrored, args.as_object(), &headers)
    }

    #[test]
    fn headers_must_mirror_the_arguments() {
        let all = [
            ("region", Ok("us-west1")),
            ("COUNT", Ok("42")),
            ("Dry", Ok("true")),
        ];
        check(
            json!({"region": "us-west1", "count": 42, "dry": true}),
            &all,
        )
        .unwrap();
        check(
            json!({"region": "us-west1", "count": 42.0, "dry": true}),
            &all,
        )
        .unwrap();
        // Absent and null arguments expect no header; unknown headers are ignored.
        check(json!({"region": null}), &[("other", Err("bad"))]).unwrap();
        check(json!({}), &[]).unwrap();

        for (args, headers) in [
            (json!({"region": "us-west1"}), vec![]),
            (json!({"region": "us-west1"}), vec![("region", Ok("eu"))]),
            (
                json!({"region": "us-west1"}),
                vec![("region", Err("bad base64"))],
            ),
            (
                json!({"region": "us-west1"}),
                vec![("region", Ok("us-west1")), ("Region", Ok("us-west1"))],
            ),
            (json!({}), vec![("region", Ok("us-west1"))]),
            (json!({"count": 42}), vec![("count", Ok("43"))]),
            (json!({"dry": false}), vec![("dry", Ok("False"))]),
        ] {
            assert!(check(args.clone(), &headers).is_err(), "{args} {headers:?}");
        }
    }
}
