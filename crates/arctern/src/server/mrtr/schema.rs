//! Turning a Rust type's JSON Schema into the restricted, flat schema of a form elicitation.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use arctern_types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};
use arctern_types::meta::JsonObject;
use serde_json::Value;

use crate::server::extract::schema_for;

/// String formats a form field may declare.
const STRING_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// Keys each kind of field may carry; anything else is dropped (for example schemars'
/// `format: "int32"` on integers).
const STRING_KEYS: [&str; 7] = [
    "type",
    "title",
    "description",
    "minLength",
    "maxLength",
    "format",
    "default",
];
const NUMBER_KEYS: [&str; 6] = [
    "type",
    "title",
    "description",
    "minimum",
    "maximum",
    "default",
];
const BOOLEAN_KEYS: [&str; 4] = ["type", "title", "description", "default"];

/// The form schema for `T`: a flat object of string, number, integer, boolean and enum
/// fields, as elicitation requires. Fails with a message naming the first field that cannot
/// be asked in a form.
///
/// Built once per type: generating a schema costs tens of microseconds, and a question's
/// schema is needed on every round that asks or checks it.
pub(crate) fn form_schema_for<T: schemars::JsonSchema + 'static>() -> Result<RequestedSchema, String>
{
    type Cache = HashMap<TypeId, Result<RequestedSchema, String>>;
    static CACHE: LazyLock<RwLock<Cache>> = LazyLock::new(Default::default);
    let id = TypeId::of::<T>();
    if let Some(cached) = CACHE.read().ok().and_then(|c| c.get(&id).cloned()) {
        return cached;
    }
    let built = form_schema(&schema_for::<T>());
    if let Ok(mut cache) = CACHE.write() {
        cache.insert(id, built.clone());
    }
    built
}

pub(crate) fn form_schema(schema: &JsonObject) -> Result<RequestedSchema, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form answer must be a struct (a JSON object)".into());
    }
    let mut out = RequestedSchema::new();
    let empty = JsonObject::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for (name, prop) in properties {
        let Some(prop) = prop.as_object() else {
            return Err(format!("field {name:?} has no schema"));
        };
        let field = field_schema(prop).map_err(|why| format!("field {name:?} {why}"))?;
        out.properties.insert(name.clone(), field);
    }
    if !required.is_empty() {
        out.required = Some(required);
    }
    Ok(out)
}

fn field_schema(prop: &JsonObject) -> Result<PrimitiveSchemaDefinition, String> {
    let mut prop = prop.clone();
    // `Option<T>` fields come out as `type: ["T", "null"]`; a form field is simply optional.
    if let Some(Value::Array(types)) = prop.get("type") {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        match non_null.as_slice() {
            [one] => {
                let one = (*one).clone();
                prop.insert("type".into(), one);
            }
            _ => return Err("must have exactly one type".into()),
        }
    }
    // Optional enums come out as `anyOf: [{enum...}, {type: null}]`.
    if let Some(Value::Array(any)) = prop.get("anyOf").cloned() {
        let non_null: Vec<&Value> = any
            .iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if let [inner] = non_null.as_slice()
            && let Some(inner) = inner.as_object()
        {
            prop.remove("anyOf");
            for (k, v) in inner {
                prop.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    let kind = prop.get("type").and_then(Value::as_str).map(str::to_owned);
    let keep: &[&str] = match kind.as_deref() {
        Some("string") if prop.contains_key("enum") || prop.contains_key("oneOf") => &[],
        Some("string") => &STRING_KEYS,
        Some("number") | Some("integer") => &NUMBER_KEYS,
        Some("boolean") => &BOOLEAN_KEYS,
        Some("array") => &[],
        None if prop.contains_key("oneOf") || prop.contains_key("enum") => {
            // A titled enum from schemars has no top-level type.
            prop.insert("type".into(), "string".into());
            &[]
        }
        Some(other) => return Err(format!("has type {other:?}, which a form cannot ask")),
        None => {
            return Err(
                "has no type a form can ask (nested objects and references are not allowed)".into(),
            );
        }
    };
    if !keep.is_empty() {
        prop.retain(|k, _| keep.contains(&k.as_str()));
    }
    if kind.as_deref() == Some("string")
        && let Some(format) = prop.get("format").and_then(Value::as_str)
        && !STRING_FORMATS.contains(&format)
    {
        prop.remove("format");
    }
    // Titled single-select: schemars writes `oneOf: [{const, description|title}]`.
    if let Some(Value::Array(options)) = prop.get_mut("oneOf") {
        for option in options.iter_mut() {
            if let Some(o) = option.as_object_mut() {
                if !o.contains_key("title")
                    && let Some(d) = o.get("description").cloned()
                {
                    o.insert("title".into(), d);
                }
                if !o.contains_key("title")
                    && let Some(c) = o.get("const").cloned()
                {
                    o.insert("title".into(), c);
                }
                o.retain(|k, _| k == "const" || k == "title");
            }
        }
    }
    serde_json::from_value(Value::Object(prop))
        .map_err(|e| format!("cannot be asked in a form: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Tier {
        Small,
        Large,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        /// Who orders.
        name: String,
        count: u32,
        rush: Option<bool>,
        tier: Tier,
        email: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Order,
    }

    #[test]
    fn flat_structs_become_forms() {
        let schema = form_schema_for::<Order>().unwrap();
        let v = serde_json::to_value(&schema).unwrap();
        assert_eq!(v["type"], "object");
        assert_eq!(v["properties"]["name"]["type"], "string");
        assert_eq!(v["properties"]["name"]["description"], "Who orders.");
        assert_eq!(v["properties"]["count"]["type"], "integer");
        assert!(v["properties"]["count"].get("format").is_none());
        assert_eq!(v["properties"]["rush"]["type"], "boolean");
        assert_eq!(
            v["properties"]["tier"]["enum"],
            serde_json::json!(["Small", "Large"])
        );
        let required: Vec<&str> = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert!(required.contains(&"name") && !required.contains(&"rush"));
        arctern_fixtures::schema_check::validate_for(
            "2026-07-28",
            "ElicitRequestFormParams",
            &serde_json::json!({
                "message": "m", "requestedSchema": v
            }),
        )
        .unwrap();
    }

    #[test]
    fn nested_structs_are_refused() {
        let err = form_schema_for::<Nested>().unwrap_err();
        assert!(err.contains("inner"), "{err}");
    }
}
