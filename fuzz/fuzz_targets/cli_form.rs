//! The CLI's schema-to-form builder (`arctern-cli`'s `fields` module, compiled in as it is):
//! a server's `requestedSchema` becomes form fields (kind, labels, description, default), and
//! a user's text answer is typed and checked against each field. The input is the schema
//! (JSON), then a newline and the answer text. Nothing panics; an answer accepted as text is
//! accepted again, as the same value, when given as JSON (`--answer` takes both).
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/arctern-cli/src/fields.rs"]
mod fields;

use arctern_types::elicitation::RequestedSchema;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, answer) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(schema) = serde_json::from_str::<RequestedSchema>(schema) else {
        return;
    };
    for (name, field) in schema.properties.iter() {
        let _ = (name, schema.is_required(name));
        let (_title, _description) = fields::labels(field);
        let kind = fields::kind(field);
        let described = fields::describe(&kind);
        assert!(!described.is_empty());
        let _ = fields::default_value(&kind);
        if let Ok(value) = fields::from_text(&kind, answer) {
            let json = serde_json::to_value(&value).expect("a value serializes");
            assert_eq!(
                fields::from_json(&kind, &json).as_ref(),
                Ok(&value),
                "{described}: {answer:?} accepted as text, not as JSON {json}"
            );
        }
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(answer) {
            let _ = fields::from_json(&kind, &json);
        }
    }
});
