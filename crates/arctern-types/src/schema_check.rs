//! Validation against the official MCP JSON Schemas, for tests.
//!
//! Only built with the `schema-check` feature, which embeds the schema files from the
//! workspace's `fixtures/schema/` directory; it therefore works in a checkout of the arctern
//! repository, not from a published crate. Not part of the public API.
//!
//! ```
//! # use serde_json::json;
//! use arctern_types::schema_check;
//!
//! let result = json!({"resultType": "complete", "content": []});
//! schema_check::validate("CallToolResult", &result).unwrap();
//! assert!(schema_check::validate("CallToolResult", &json!({})).is_err());
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

/// The revisions whose schema is available, newest first.
pub const REVISIONS: [&str; 3] = ["2026-07-28", "2025-11-25", "2025-06-18"];

/// The revision [`validate`] checks against.
pub const LATEST: &str = "2026-07-28";

fn source(revision: &str) -> Option<(usize, &'static str)> {
    Some(match revision {
        "2026-07-28" => (
            0,
            include_str!("../../../fixtures/schema/2026-07-28/schema.json"),
        ),
        "2025-11-25" => (
            1,
            include_str!("../../../fixtures/schema/2025-11-25/schema.json"),
        ),
        "2025-06-18" => (
            2,
            include_str!("../../../fixtures/schema/2025-06-18/schema.json"),
        ),
        _ => return None,
    })
}

/// The parsed schema document of `revision`.
pub fn document(revision: &str) -> Result<&'static Value, String> {
    static DOCUMENTS: [OnceLock<Value>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (index, text) = source(revision)
        .ok_or_else(|| format!("no schema for revision {revision:?} (known: {REVISIONS:?})"))?;
    if let Some(doc) = DOCUMENTS[index].get() {
        return Ok(doc);
    }
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| format!("the {revision} schema is not valid JSON: {e}"))?;
    Ok(DOCUMENTS[index].get_or_init(|| doc))
}

/// The member holding the definitions: `$defs` (2020-12) or `definitions` (draft-07).
fn definitions_key(doc: &Value) -> &'static str {
    if doc.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    }
}

/// The names of every definition of `revision`, sorted.
pub fn definitions(revision: &str) -> Result<Vec<String>, String> {
    let doc = document(revision)?;
    let defs = doc
        .get(definitions_key(doc))
        .and_then(Value::as_object)
        .ok_or_else(|| format!("the {revision} schema has no definitions"))?;
    let mut names: Vec<String> = defs.keys().cloned().collect();
    names.sort();
    Ok(names)
}

type Cache = Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>;

fn validator(revision: &str, def: &str) -> Result<Arc<jsonschema::Validator>, String> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (revision.to_owned(), def.to_owned());
    if let Some(v) = cache.lock().map_err(|e| e.to_string())?.get(&key) {
        return Ok(v.clone());
    }
    let doc = document(revision)?;
    let defs_key = definitions_key(doc);
    let defs = doc
        .get(defs_key)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("the {revision} schema has no definitions"))?;
    if !defs.contains_key(def) {
        return Err(format!("the {revision} schema has no definition {def:?}"));
    }
    // A root that carries every definition and refers to one of them, so that `$ref`s
    // between definitions resolve inside the document.
    let mut root = Map::new();
    if let Some(dialect) = doc.get("$schema") {
        root.insert("$schema".to_owned(), dialect.clone());
    }
    root.insert(defs_key.to_owned(), Value::Object(defs.clone()));
    root.insert(
        "allOf".to_owned(),
        json!([{ "$ref": format!("#/{defs_key}/{def}") }]),
    );
    let compiled = jsonschema::validator_for(&Value::Object(root))
        .map_err(|e| format!("cannot compile {revision} {def}: {e}"))?;
    let compiled = Arc::new(compiled);
    cache
        .lock()
        .map_err(|e| e.to_string())?
        .insert(key, compiled.clone());
    Ok(compiled)
}

/// Validates `value` against definition `def` of the 2026-07-28 schema.
///
/// The error lists every violation as `instance path: message`.
pub fn validate(def: &str, value: &Value) -> Result<(), String> {
    validate_for(LATEST, def, value)
}

/// Validates `value` against definition `def` of `revision` (`"2026-07-28"`, `"2025-11-25"`
/// or `"2025-06-18"`).
pub fn validate_for(revision: &str, def: &str, value: &Value) -> Result<(), String> {
    let validator = validator(revision, def)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            format!("{}: {e}", if path.is_empty() { "/" } else { &path })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{revision} {def}: {} error(s): {}",
            errors.len(),
            errors.join("; ")
        ))
    }
}

/// Serializes `value` and validates it against `def` of the 2026-07-28 schema.
pub fn validate_serialized<T: serde::Serialize>(def: &str, value: &T) -> Result<(), String> {
    let json = serde_json::to_value(value).map_err(|e| format!("cannot serialize: {e}"))?;
    validate(def, &json)
}
