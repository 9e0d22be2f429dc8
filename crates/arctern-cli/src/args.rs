//! Tool arguments from the command line: `--json '{…}'`, then each `--arg key=value` typed
//! from the tool's input schema.
//!
//! A value is typed by the property's JSON Schema `type` (or the types of its `enum`,
//! `const`, `anyOf`/`oneOf` branches): `null`, then `boolean` (`true`/`false`), `integer`,
//! `number`, `array` (a JSON array, or a comma-separated list whose items are typed from
//! `items`; repeating the flag appends), `object` (a JSON object), and finally `string` (the
//! text as it is). So `count=3` is the number 3 when `count` is an integer, and the string
//! `"3"` when it is a string. Values outside an `enum` or the `minimum`/`maximum` bounds are
//! refused, and so are missing `required` properties.
//!
//! An `--arg` the schema does not list is refused, with the closest listed name when one is
//! near ("did you mean"): a schema that leaves `additionalProperties` unsaid is the norm
//! (schemars, Zod, Pydantic), and most servers then drop a key they do not know, so a typo
//! would silently lose the value. Only a schema that explicitly allows other properties
//! (`additionalProperties: true` or a schema), or that lists none, takes unlisted keys: typed
//! by that schema, or else as JSON if the value parses and as a string otherwise. `--json` is not checked this way; it is
//! the way to send what the schema does not describe.
//!
//! A key given twice is refused (the second value is not quietly kept over the first), except
//! for a list parameter, where repeating the flag appends.

use std::collections::HashSet;

use arctern::types::meta::JsonObject;
use serde_json::{Number, Value};

/// The order in which types are tried: the most specific reading of the text first.
const ORDER: [&str; 7] = [
    "null", "boolean", "integer", "number", "array", "object", "string",
];

/// Builds the arguments object of a call.
pub fn build(
    schema: &JsonObject,
    json: Option<&str>,
    pairs: &[String],
) -> Result<JsonObject, String> {
    let mut out = match json {
        None => JsonObject::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => return Err(format!("--json must be a JSON object, not {other}")),
            Err(e) => return Err(format!("--json is not valid JSON: {e}")),
        },
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let open = takes_unlisted(schema);
    let mut given: HashSet<&str> = HashSet::new();
    let mut unknown: Vec<&str> = Vec::new();
    for pair in pairs {
        let (key, raw) = split_pair(pair, "--arg")?;
        let property = properties.and_then(|p| p.get(key));
        let value = match property {
            Some(p) => coerce(raw, p).map_err(|e| format!("--arg {key}: {e}"))?,
            None if open => match schema.get("additionalProperties") {
                Some(other @ Value::Object(_)) => {
                    coerce(raw, other).map_err(|e| format!("--arg {key}: {e}"))?
                }
                _ => untyped(raw),
            },
            None => {
                if !unknown.contains(&key) {
                    unknown.push(key);
                }
                continue;
            }
        };
        let again = !given.insert(key);
        match (out.get_mut(key), value) {
            // A repeated flag for a list parameter adds to the list.
            (Some(Value::Array(existing)), Value::Array(more)) if again => existing.extend(more),
            _ if again => {
                return Err(format!(
                    "--arg {key} is given twice; give each parameter once (repeating the flag \
                     appends only to a list parameter)"
                ));
            }
            (_, value) => {
                out.insert(key.to_owned(), value);
            }
        }
    }
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !out.contains_key(*name))
        .map(|name| describe_parameter(name, properties.and_then(|p| p.get(name))))
        .collect();
    let missing = (!missing.is_empty()).then(|| {
        format!(
            "missing required argument{}: {} (pass --arg NAME=VALUE or --json)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join("; ")
        )
    });
    if !unknown.is_empty() {
        let listed = properties
            .into_iter()
            .flat_map(|p| p.keys().map(String::as_str));
        let mut message = unknown
            .iter()
            .map(|key| {
                format!(
                    "--arg {key}: the tool has no parameter {key:?}{}",
                    crate::suggest::hint(key, listed.clone())
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        message.push_str(&format!("; it takes: {}", names(properties)));
        if let Some(missing) = missing {
            message.push_str(&format!("\n{missing}"));
        }
        return Err(message);
    }
    match missing {
        Some(missing) => Err(missing),
        None => Ok(out),
    }
}

/// Whether the schema takes properties it does not list: it says so
/// (`additionalProperties` `true` or a schema), or it lists none.
fn takes_unlisted(schema: &JsonObject) -> bool {
    match schema.get("additionalProperties") {
        Some(Value::Bool(allowed)) => *allowed,
        Some(Value::Object(_)) => true,
        _ => schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none(),
    }
}

/// Splits `key=value` at the first `=`.
pub fn split_pair<'a>(pair: &'a str, flag: &str) -> Result<(&'a str, &'a str), String> {
    match pair.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(format!("{flag} expects KEY=VALUE, got {pair:?}")),
    }
}

fn names(properties: Option<&JsonObject>) -> String {
    match properties {
        Some(p) if !p.is_empty() => p.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => "no parameters".into(),
    }
}

/// `name (integer) — description`, for messages and listings.
pub fn describe_parameter(name: &str, schema: Option<&Value>) -> String {
    let Some(schema) = schema else {
        return name.to_owned();
    };
    let types = allowed_types(schema);
    let mut out = name.to_owned();
    if !types.is_empty() {
        out.push_str(&format!(" ({})", types.join(" | ")));
    }
    if let Some(d) = schema.get("description").and_then(Value::as_str) {
        out.push_str(&format!(" — {d}"));
    }
    out
}

/// A value for a property the schema does not describe.
fn untyped(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The JSON types a schema allows, in [`ORDER`]; empty when it does not say.
pub fn allowed_types(schema: &Value) -> Vec<&'static str> {
    let mut found: HashSet<&'static str> = HashSet::new();
    if !collect_types(schema, &mut found) {
        return Vec::new();
    }
    ORDER
        .iter()
        .copied()
        .filter(|t| found.contains(t))
        .collect()
}

/// Adds the types `schema` allows to `found`; false when it allows anything.
fn collect_types(schema: &Value, found: &mut HashSet<&'static str>) -> bool {
    let intern = |t: &str| ORDER.iter().copied().find(|o| *o == t);
    match schema.get("type") {
        Some(Value::String(t)) => {
            found.extend(intern(t));
            return true;
        }
        Some(Value::Array(ts)) => {
            found.extend(ts.iter().filter_map(Value::as_str).filter_map(intern));
            return true;
        }
        _ => {}
    }
    let literals: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(options)), _) => options.iter().collect(),
        (_, Some(c)) => vec![c],
        _ => Vec::new(),
    };
    if !literals.is_empty() {
        found.extend(literals.into_iter().map(json_type));
        return true;
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(union) {
            for branch in branches {
                if !collect_types(branch, found) {
                    return false;
                }
            }
            return true;
        }
    }
    false
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Types `raw` by `schema`.
pub fn coerce(raw: &str, schema: &Value) -> Result<Value, String> {
    let types = allowed_types(schema);
    let value = if types.is_empty() {
        untyped(raw)
    } else {
        types
            .iter()
            .find_map(|t| read_as(t, raw, schema))
            .ok_or_else(|| format!("{raw:?} is not {}", expected(&types)))?
    };
    check(&value, schema)?;
    Ok(value)
}

fn read_as(t: &str, raw: &str, schema: &Value) -> Option<Value> {
    match t {
        "null" => (raw == "null").then_some(Value::Null),
        "boolean" => match raw {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => raw
            .parse::<i64>()
            .map(Number::from)
            .or_else(|_| raw.parse::<u64>().map(Number::from))
            .ok()
            .map(Value::Number),
        "number" => raw
            .parse::<i64>()
            .ok()
            .map(Number::from)
            .or_else(|| raw.parse::<f64>().ok().and_then(Number::from_f64))
            .map(Value::Number),
        "array" => {
            if raw.trim_start().starts_with('[') {
                return serde_json::from_str::<Value>(raw)
                    .ok()
                    .filter(Value::is_array);
            }
            let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|item| coerce(item, &items).ok())
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)
        }
        "object" => serde_json::from_str::<Value>(raw)
            .ok()
            .filter(Value::is_object),
        "string" => Some(Value::String(raw.to_owned())),
        _ => None,
    }
}

fn expected(types: &[&str]) -> String {
    let words: Vec<&str> = types
        .iter()
        .map(|t| match *t {
            "null" => "null",
            "boolean" => "a boolean (true or false)",
            "integer" => "an integer",
            "number" => "a number",
            "array" => "a list (a JSON array, or comma-separated)",
            "object" => "a JSON object",
            _ => "a string",
        })
        .collect();
    words.join(" or ")
}

/// The checks beyond the type: `enum`, `const`, numeric bounds.
fn check(value: &Value, schema: &Value) -> Result<(), String> {
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!("{value} is not one of: {}", list.join(", ")));
    }
    if let Some(c) = schema.get("const")
        && c != value
    {
        return Err(format!("must be {c}"));
    }
    if let Some(v) = value.as_f64() {
        let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
        if let Some(min) = bound("minimum")
            && v < min
        {
            return Err(format!("{value} is below the minimum {min}"));
        }
        if let Some(max) = bound("maximum")
            && v > max
        {
            return Err(format!("{value} is above the maximum {max}"));
        }
        if let Some(min) = bound("exclusiveMinimum")
            && v <= min
        {
            return Err(format!("{value} must be greater than {min}"));
        }
        if let Some(max) = bound("exclusiveMaximum")
            && v >= max
        {
            return Err(format!("{value} must be less than {max}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> JsonObject {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer", "minimum": 1},
                "ratio": {"type": "number"},
                "force": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "sizes": {"type": "array", "items": {"type": "integer"}},
                "meta": {"type": "object"},
                "level": {"enum": ["low", "high"]},
                "maybe": {"type": ["integer", "null"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
            },
            "required": ["name"]
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn args(pairs: &[&str]) -> Result<Value, String> {
        let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
        build(&schema(), None, &pairs).map(Value::Object)
    }

    #[test]
    fn values_are_typed_from_the_schema() {
        let v = args(&[
            "name=123",
            "count=3",
            "ratio=0.5",
            "force=true",
            "tags=a, b",
            "sizes=[1,2]",
            "meta={\"k\":1}",
            "level=high",
            "maybe=null",
            "either=7",
        ])
        .unwrap();
        assert_eq!(
            v,
            json!({
                "name": "123", "count": 3, "ratio": 0.5, "force": true, "tags": ["a", "b"],
                "sizes": [1, 2], "meta": {"k": 1}, "level": "high", "maybe": null, "either": 7
            })
        );
    }

    #[test]
    fn unlisted_keys_go_only_where_the_schema_takes_them() {
        let pairs = ["extra=[1]".to_owned(), "other=plain text".to_owned()];
        // Allowed outright, or with nothing listed: as JSON when it parses, else as text.
        for s in [
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
            json!({"type": "object"}),
        ] {
            let v = build(s.as_object().unwrap(), None, &pairs).unwrap();
            assert_eq!(
                Value::Object(v),
                json!({"extra": [1], "other": "plain text"})
            );
        }
        // Allowed with a schema: typed by it.
        let s = json!({"type": "object", "properties": {},
            "additionalProperties": {"type": "integer"}});
        let v = build(s.as_object().unwrap(), None, &["n=3".to_owned()]).unwrap();
        assert_eq!(Value::Object(v), json!({"n": 3}));
        let e = build(s.as_object().unwrap(), None, &["n=x".to_owned()]).unwrap_err();
        assert!(e.contains("--arg n") && e.contains("integer"), "{e}");
        // --json is the way to send what the schema does not list.
        let v = build(&schema(), Some(r#"{"name": "a", "extra": 1}"#), &[]).unwrap();
        assert_eq!(v["extra"], 1);
    }

    #[test]
    fn unknown_keys_are_named_with_the_closest_parameter() {
        // The review's case: a typo of a required parameter names both.
        let e = args(&["nme=orders"]).unwrap_err();
        assert!(
            e.starts_with("--arg nme: the tool has no parameter \"nme\" (did you mean \"name\"?)"),
            "{e}"
        );
        assert!(e.contains("; it takes: name, count,"), "{e}");
        assert!(
            e.contains("\nmissing required argument: name (string)"),
            "{e}"
        );
        // Every unknown key is named once; a far one gets no guess.
        let e = args(&["name=x", "cuont=1", "zzzzzz=2", "zzzzzz=3"]).unwrap_err();
        assert!(
            e.contains(
                "--arg cuont: the tool has no parameter \"cuont\" (did you mean \"count\"?)"
            ),
            "{e}"
        );
        assert_eq!(e.matches("zzzzzz").count(), 2, "{e}");
        assert!(e.contains("no parameter \"zzzzzz\"; it takes"), "{e}");
        assert!(!e.contains("missing required"), "{e}");
        // A schema without a single parameter says so.
        let s = json!({"type": "object", "properties": {}});
        let e = build(s.as_object().unwrap(), None, &["a=1".to_owned()]).unwrap_err();
        assert!(e.ends_with("it takes: no parameters"), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_refused_unless_it_is_a_list() {
        let e = args(&["name=hi", "name=there"]).unwrap_err();
        assert!(e.starts_with("--arg name is given twice"), "{e}");
        let e = args(&["name=x", "count=1", "count=2"]).unwrap_err();
        assert!(e.starts_with("--arg count is given twice"), "{e}");
        // Lists append; a JSON value from --json is replaced by the first --arg, not doubled.
        let v = build(
            &schema(),
            Some(r#"{"name": "a", "tags": ["x"]}"#),
            &["tags=y".to_owned(), "tags=z".to_owned()],
        )
        .unwrap();
        assert_eq!(v["tags"], json!(["y", "z"]));
    }

    #[test]
    fn repeated_array_flags_append() {
        let v = args(&["name=x", "tags=a", "tags=b,c", "sizes=1", "sizes=2"]).unwrap();
        assert_eq!(v["tags"], json!(["a", "b", "c"]));
        assert_eq!(v["sizes"], json!([1, 2]));
    }

    #[test]
    fn values_that_do_not_fit_are_refused_clearly() {
        let e = args(&["name=x", "count=three"]).unwrap_err();
        assert!(e.contains("--arg count") && e.contains("an integer"), "{e}");
        let e = args(&["name=x", "count=0"]).unwrap_err();
        assert!(e.contains("minimum"), "{e}");
        let e = args(&["name=x", "force=yes"]).unwrap_err();
        assert!(e.contains("boolean"), "{e}");
        let e = args(&["name=x", "level=medium"]).unwrap_err();
        assert!(e.contains("\"low\", \"high\""), "{e}");
        let e = args(&["name=x", "sizes=1,x"]).unwrap_err();
        assert!(e.contains("list"), "{e}");
        let e = args(&["noequals"]).unwrap_err();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = args(&["count=2"]).unwrap_err();
        assert!(
            e.contains("missing required argument: name (string)"),
            "{e}"
        );
    }

    #[test]
    fn json_is_merged_under_args() {
        let v = build(
            &schema(),
            Some(r#"{"name": "a", "count": 2}"#),
            &["count=5".to_owned()],
        )
        .unwrap();
        assert_eq!(Value::Object(v), json!({"name": "a", "count": 5}));
        assert!(build(&schema(), Some("[1]"), &[]).is_err());
        assert!(build(&schema(), Some("{"), &[]).is_err());
    }

    #[test]
    fn closed_schemas_refuse_unknown_arguments() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": false});
        let e = build(s.as_object().unwrap(), None, &["b=1".to_owned()]).unwrap_err();
        assert!(
            e.contains("no parameter \"b\"") && e.contains("takes: a"),
            "{e}"
        );
    }
}
