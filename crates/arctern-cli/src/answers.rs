//! Answers given on the command line, before the server asks: `--answer KEY=VALUE` and
//! `--decline KEY`, matched to the server's questions by their key, or by their place.
//!
//! A question's key is its `inputRequests` key on a 2026-07-28 server (a name the server
//! chose, such as `region`), or, on a 2025 server, the id of the server's `elicitation/create`
//! request (`0`, `1`, …), which depends on what else the server asked before: `--root`
//! alone can shift it. So a question can also be named by its place, `@N`: the Nth question
//! of the command (from 1), in the order they are asked; questions asked at the same time
//! (one round of a 2026-07-28 server) are numbered in the order they reach the command. A
//! question asked again under the same key (its answer was not accepted) keeps its number.
//! A key matches before a place.
//!
//! For a form, the value is a JSON object of the form's fields
//! (`--answer region='{"region":"eu-west-1"}'`). When the form has exactly one field, the
//! value may instead be that field's value alone (`--answer region=eu-west-1`): text for a
//! text field, a number, `true`/`false`, an option's value or title, a comma-separated list
//! or JSON array for a multi-select. Fields left out take their default; a required field
//! without a default must be given. For a URL question, the value is `accept` (consent: the
//! URL is printed, not opened), `decline` or `cancel`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use arctern::types::elicitation::{ElicitContent, ElicitResult, RequestedSchema};
use serde_json::Value;

use crate::args::split_pair;
use crate::fields;

/// A question's pre-answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pre<'a> {
    /// `--answer KEY=VALUE`.
    Answer(&'a str),
    /// `--decline KEY`.
    Decline,
}

/// Every pre-answer of the command line, and which were used.
#[derive(Debug, Default)]
pub struct PreAnswers {
    answers: BTreeMap<String, String>,
    declines: BTreeSet<String>,
    used: Mutex<BTreeSet<String>>,
}

impl PreAnswers {
    /// Reads `--answer` and `--decline` values.
    pub fn parse(answers: &[String], declines: &[String]) -> Result<Self, String> {
        let mut out = PreAnswers::default();
        for pair in answers {
            let (key, value) = split_pair(pair, "--answer")?;
            check_place(key, "--answer")?;
            if out
                .answers
                .insert(key.to_owned(), value.to_owned())
                .is_some()
            {
                return Err(format!("--answer {key} is given twice"));
            }
        }
        for key in declines {
            check_place(key, "--decline")?;
            if out.answers.contains_key(key) {
                return Err(format!("{key} is both answered (--answer) and declined"));
            }
            out.declines.insert(key.clone());
        }
        Ok(out)
    }

    /// The pre-answer for the question with key `key`, the `place`th of the command: by its
    /// key, else by its place (`@N`); with the key or place it was given for.
    pub fn lookup(&self, key: &str, place: usize) -> Option<(&str, Pre<'_>)> {
        self.lookup_exact(key)
            .or_else(|| self.lookup_exact(&format!("@{place}")))
    }

    fn lookup_exact(&self, selector: &str) -> Option<(&str, Pre<'_>)> {
        let found = if let Some((given, v)) = self.answers.get_key_value(selector) {
            (given.as_str(), Pre::Answer(v.as_str()))
        } else {
            (self.declines.get(selector)?.as_str(), Pre::Decline)
        };
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(selector.to_owned());
        Some(found)
    }

    /// The keys (and places) given but never asked.
    pub fn unused(&self) -> Vec<String> {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        self.answers
            .keys()
            .chain(self.declines.iter())
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect()
    }
}

/// A key that starts with `@` names a place: `@` and a number from 1.
fn check_place(key: &str, flag: &str) -> Result<(), String> {
    let Some(place) = key.strip_prefix('@') else {
        return Ok(());
    };
    match place.parse::<usize>() {
        Ok(n) if n >= 1 && !place.starts_with('+') => Ok(()),
        _ => Err(format!(
            "{flag} {key}: a question's place is @ and its number, from 1 (@1 is the first \
             question asked)"
        )),
    }
}

/// The content a pre-answer gives a form (see the module docs for the rules).
pub fn form_content(raw: &str, schema: &RequestedSchema) -> Result<ElicitContent, String> {
    let props = &schema.properties;
    let mut content = ElicitContent::new();
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => {
            for (name, value) in &map {
                let Some(field) = props.get(name) else {
                    return Err(format!(
                        "the form has no field {name:?}{}; its fields: {}",
                        crate::suggest::hint(name, props.names()),
                        field_names(schema)
                    ));
                };
                let v = fields::from_json(&fields::kind(field), value)
                    .map_err(|e| format!("field {name}: {e}"))?;
                content.insert(name.clone(), v);
            }
        }
        parsed if props.len() == 1 => {
            let Some((name, field)) = props.iter().next() else {
                unreachable!("one field")
            };
            let kind = fields::kind(field);
            // A JSON scalar or array is taken as JSON when it fits, as text otherwise
            // (`3` for a text field is the text "3").
            let value = match parsed {
                Ok(json) => {
                    fields::from_json(&kind, &json).or_else(|_| fields::from_text(&kind, raw))
                }
                Err(_) => fields::from_text(&kind, raw),
            }
            .map_err(|e| format!("field {name}: {e}"))?;
            content.insert(name.to_owned(), value);
        }
        _ => {
            return Err(format!(
                "expected a JSON object with the form's fields ({}); the one-value shorthand \
                 works only for forms with exactly one field",
                field_names(schema)
            ));
        }
    }
    for (name, field) in props.iter() {
        if content.contains_key(name) {
            continue;
        }
        if let Some(d) = fields::default_value(&fields::kind(field)) {
            content.insert(name.to_owned(), d);
        } else if schema.is_required(name) {
            return Err(format!("the required field {name:?} is missing"));
        }
    }
    // The check the server makes before it accepts an answer (options offered, bounds,
    // formats, counts): what it would refuse is refused here, before anything is sent.
    schema
        .check(Some(&content))
        .map_err(|e| format!("field {}: {}", e.field(), e.problem()))?;
    Ok(content)
}

/// The answer a pre-answer gives a URL question.
pub fn url_answer(raw: &str) -> Result<ElicitResult, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "accept" | "open" | "yes" | "true" => Ok(ElicitResult::accept_url()),
        "decline" | "no" | "false" => Ok(ElicitResult::decline()),
        "cancel" => Ok(ElicitResult::cancel()),
        _ => Err(format!(
            "a URL question takes accept, decline or cancel, not {raw:?}"
        )),
    }
}

/// `name (required), other`, for messages.
pub fn field_names(schema: &RequestedSchema) -> String {
    if schema.properties.is_empty() {
        return "none".into();
    }
    schema
        .properties
        .names()
        .map(|n| {
            if schema.is_required(n) {
                format!("{n} (required)")
            } else {
                n.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An example `--answer` for a form, for messages: `KEY='{"a":"…"}'`, with the required
/// fields (or all, when none is required).
pub fn example(key: &str, schema: &RequestedSchema) -> String {
    let any_required = schema.properties.names().any(|n| schema.is_required(n));
    let fields: Vec<String> = schema
        .properties
        .iter()
        .filter(|(name, _)| !any_required || schema.is_required(name))
        .map(|(name, field)| {
            let kind = fields::kind(field);
            let sample = match &kind {
                fields::Kind::Text(_) => "\"…\"".to_owned(),
                fields::Kind::Number(n) => fields::default_value(&kind)
                    .map(|v| v.to_string())
                    .or_else(|| n.minimum.map(|m| m.to_string()))
                    .unwrap_or_else(|| "0".into()),
                fields::Kind::Boolean(_) => "true".to_owned(),
                fields::Kind::Single { options, .. } => options
                    .first()
                    .map(|c| Value::String(c.value.clone()).to_string())
                    .unwrap_or_else(|| "\"…\"".into()),
                fields::Kind::Multi { options, .. } => format!(
                    "[{}]",
                    options
                        .first()
                        .map(|c| Value::String(c.value.clone()).to_string())
                        .unwrap_or_default()
                ),
            };
            format!("{}:{sample}", Value::String(name.to_owned()))
        })
        .collect();
    format!("{key}='{{{}}}'", fields.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arctern::types::elicitation::ElicitValue;
    use serde_json::json;

    fn schema(v: Value) -> RequestedSchema {
        serde_json::from_value(v).unwrap()
    }

    fn region() -> RequestedSchema {
        schema(json!({"type": "object", "properties": {
            "region": {"type": "string"}}, "required": ["region"]}))
    }

    #[test]
    fn one_field_forms_take_the_shorthand() {
        let c = form_content("eu-west-1", &region()).unwrap();
        assert_eq!(c["region"], ElicitValue::from("eu-west-1"));
        let c = form_content(r#"{"region":"us-east-1"}"#, &region()).unwrap();
        assert_eq!(c["region"], ElicitValue::from("us-east-1"));
        // A number-looking value for a text field stays text.
        let c = form_content("3", &region()).unwrap();
        assert_eq!(c["region"], ElicitValue::from("3"));
        let ok = schema(
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"]}),
        );
        assert_eq!(
            form_content("true", &ok).unwrap()["ok"],
            ElicitValue::Boolean(true)
        );
        assert!(
            form_content("perhaps", &ok)
                .unwrap_err()
                .contains("field ok")
        );
    }

    #[test]
    fn larger_forms_need_an_object_and_fill_defaults() {
        let s = schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "email": {"type": "string", "format": "email"},
            "colors": {"type": "array", "items": {"type": "string", "enum": ["r", "g"]}}
        }, "required": ["email"]}));
        let e = form_content("ada", &s).unwrap_err();
        assert!(e.contains("exactly one field"), "{e}");
        let e = form_content("{}", &s).unwrap_err();
        assert!(e.contains("\"email\" is missing"), "{e}");
        let e = form_content(r#"{"email":"nope"}"#, &s).unwrap_err();
        assert!(e.contains("field email"), "{e}");
        let e = form_content(r#"{"mail":"a@b.co"}"#, &s).unwrap_err();
        assert!(
            e.contains("no field \"mail\" (did you mean \"email\"?)"),
            "{e}"
        );
        let c = form_content(r#"{"email":"ada@example.com","colors":["g"]}"#, &s).unwrap();
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"name": "John Doe", "age": 30, "email": "ada@example.com", "colors": ["g"]})
        );
        assert_eq!(example("k", &s), r#"k='{"email":"…"}'"#);
        let all_optional = schema(json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1}, "b": {"type": "boolean"}}}));
        assert_eq!(example("k", &all_optional), r#"k='{"n":1,"b":true}'"#);
    }

    #[test]
    fn a_choice_takes_an_offered_value_or_title_and_nothing_else() {
        let hotels = schema(json!({"type": "object", "properties": {
            "hotel": {"type": "string", "oneOf": [
                {"const": "osl-fjord", "title": "Fjord Hotel"},
                {"const": "osl-aurora", "title": "Aurora Inn"}]}},
            "required": ["hotel"]}));
        let c = form_content("osl-aurora", &hotels).unwrap();
        assert_eq!(c["hotel"], ElicitValue::from("osl-aurora"));
        let c = form_content("fjord hotel", &hotels).unwrap();
        assert_eq!(c["hotel"], ElicitValue::from("osl-fjord"));
        let c = form_content(r#"{"hotel":"Aurora Inn"}"#, &hotels).unwrap();
        assert_eq!(c["hotel"], ElicitValue::from("osl-aurora"));
        assert_eq!(
            form_content("lis-avenida", &hotels).unwrap_err(),
            "field hotel: \"lis-avenida\" is not offered; expected one of: osl-fjord (Fjord \
             Hotel), osl-aurora (Aurora Inn)."
        );
        // A server default outside its own options is not sent on its behalf: the schema
        // check refuses it, as the server would.
        let odd = schema(json!({"type": "object", "properties": {
            "size": {"type": "string", "enum": ["S", "M"], "default": "XL"}}}));
        assert_eq!(
            form_content("{}", &odd).unwrap_err(),
            "field size: \"XL\" is not one of the options"
        );
    }

    #[test]
    fn pre_answers_are_looked_up_by_key_and_tracked() {
        let p = PreAnswers::parse(
            &["region=eu".to_owned(), "other={}".to_owned()],
            &["confirm".to_owned()],
        )
        .unwrap();
        assert_eq!(p.lookup("region", 1), Some(("region", Pre::Answer("eu"))));
        assert_eq!(p.lookup("confirm", 2), Some(("confirm", Pre::Decline)));
        assert_eq!(p.lookup("missing", 3), None);
        assert_eq!(p.unused(), ["other"]);
        assert!(PreAnswers::parse(&["a=1".into(), "a=2".into()], &[]).is_err());
        assert!(PreAnswers::parse(&["a=1".into()], &["a".into()]).is_err());
        assert!(PreAnswers::parse(&["novalue".into()], &[]).is_err());
    }

    #[test]
    fn pre_answers_are_looked_up_by_place_when_no_key_matches() {
        let p = PreAnswers::parse(
            &[
                "@1=first".to_owned(),
                "@2=second".to_owned(),
                "7=by-key".to_owned(),
            ],
            &["@4".to_owned()],
        )
        .unwrap();
        // A 2025 server's request ids: 0 is the first question, 7 the third.
        assert_eq!(p.lookup("0", 1), Some(("@1", Pre::Answer("first"))));
        assert_eq!(p.lookup("5", 2), Some(("@2", Pre::Answer("second"))));
        // A key matches before a place.
        assert_eq!(p.lookup("7", 3), Some(("7", Pre::Answer("by-key"))));
        assert_eq!(p.lookup("9", 4), Some(("@4", Pre::Decline)));
        assert_eq!(p.lookup("10", 5), None);
        assert!(p.unused().is_empty(), "{:?}", p.unused());
        for bad in ["@0", "@", "@x", "@-1", "@+1"] {
            let e = PreAnswers::parse(&[format!("{bad}=v")], &[]).unwrap_err();
            assert!(e.contains("from 1"), "{bad}: {e}");
            assert!(PreAnswers::parse(&[], &[bad.to_owned()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn url_answers() {
        assert!(url_answer("accept").unwrap().is_accepted());
        assert!(!url_answer("decline").unwrap().is_accepted());
        assert!(url_answer("maybe").is_err());
    }
}
