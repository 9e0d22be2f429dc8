//! Checking a form's answer against the schema it was asked with, by the crate's one
//! [checker](crate::check): the form compiles straight from its typed schema.

use serde_json::Value;

use super::{
    ElicitContent, ElicitValue, EnumSchema, MultiSelectEnumSchema, NumberType,
    PrimitiveSchemaDefinition, RequestedSchema, SingleSelectEnumSchema, StringFormat,
};
use crate::check::{CheckError, Checker, Format, Node, Types};

impl RequestedSchema {
    /// Checks a form's answer: every required field is there, and every field the schema
    /// declares has the declared type and keeps its bounds (lengths, ranges, formats, the
    /// offered options, the number of selections). Fields the schema does not declare are
    /// not checked. `None` (accepted without content) is an empty answer.
    ///
    /// ```
    /// use arctern_types::elicitation::{ElicitValue, PrimitiveSchemaDefinition, RequestedSchema};
    ///
    /// let schema = RequestedSchema::new()
    ///     .required("size", PrimitiveSchemaDefinition::single_select(["S", "M", "L"]));
    /// let answer = [("size".to_owned(), ElicitValue::from("XL"))].into();
    /// let err = schema.check(Some(&answer)).unwrap_err();
    /// assert_eq!(err.field(), "size");
    /// assert_eq!(err.to_string(), "size: \"XL\" is not one of the options");
    /// ```
    pub fn check(&self, content: Option<&ElicitContent>) -> Result<(), CheckError> {
        let answer: serde_json::Map<String, Value> = content
            .into_iter()
            .flatten()
            .map(|(name, value)| (name.clone(), json(value)))
            .collect();
        self.checker().check(&Value::Object(answer))
    }

    /// This form's schema compiled for checking answers (what [`check`](Self::check) runs).
    pub fn checker(&self) -> Checker {
        let mut nodes = vec![Node::default()];
        let mut root = Node {
            types: Some(Types::OBJECT),
            required: self.required.clone().unwrap_or_default(),
            ..Node::default()
        };
        for (name, schema) in self.properties.iter() {
            let field = field(schema, &mut nodes);
            root.properties
                .insert(name.to_owned(), push(&mut nodes, field));
        }
        nodes[0] = root;
        Checker::from_nodes(nodes)
    }
}

fn push(nodes: &mut Vec<Node>, node: Node) -> usize {
    nodes.push(node);
    nodes.len() - 1
}

fn strings<'a>(options: impl IntoIterator<Item = &'a String>) -> Option<Vec<Value>> {
    Some(options.into_iter().cloned().map(Value::String).collect())
}

/// The node of one form field. A choice has no `type` of its own: what is not one of the
/// options is refused as such.
fn field(schema: &PrimitiveSchemaDefinition, nodes: &mut Vec<Node>) -> Node {
    match schema {
        PrimitiveSchemaDefinition::String(s) => Node {
            types: Some(Types::STRING),
            min_length: s.min_length,
            max_length: s.max_length,
            format: s.format.map(|f| match f {
                StringFormat::Email => Format::Email,
                StringFormat::Uri => Format::Uri,
                StringFormat::Date => Format::Date,
                StringFormat::DateTime => Format::DateTime,
            }),
            ..Node::default()
        },
        PrimitiveSchemaDefinition::Number(s) => Node {
            types: Some(match s.kind {
                NumberType::Integer => Types::INTEGER,
                NumberType::Number => Types::NUMBER,
            }),
            minimum: s.minimum,
            maximum: s.maximum,
            ..Node::default()
        },
        PrimitiveSchemaDefinition::Boolean(_) => Node {
            types: Some(Types::BOOLEAN),
            ..Node::default()
        },
        PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(s)) => {
            let (options, min_items, max_items) = match s {
                MultiSelectEnumSchema::Untitled(s) => {
                    (strings(&s.items.options), s.min_items, s.max_items)
                }
                MultiSelectEnumSchema::Titled(s) => (
                    strings(s.items.any_of.iter().map(|o| &o.value)),
                    s.min_items,
                    s.max_items,
                ),
            };
            let items = push(
                nodes,
                Node {
                    options,
                    ..Node::default()
                },
            );
            Node {
                types: Some(Types::ARRAY),
                items: Some(items),
                min_items,
                max_items,
                unique_items: true,
                ..Node::default()
            }
        }
        PrimitiveSchemaDefinition::Enum(single) => Node {
            options: match single {
                EnumSchema::SingleSelect(SingleSelectEnumSchema::Untitled(s)) => {
                    strings(&s.options)
                }
                EnumSchema::SingleSelect(SingleSelectEnumSchema::Titled(s)) => {
                    strings(s.one_of.iter().map(|o| &o.value))
                }
                EnumSchema::LegacyTitled(s) => strings(&s.options),
                EnumSchema::MultiSelect(_) => unreachable!("matched above"),
            },
            ..Node::default()
        },
    }
}

fn json(value: &ElicitValue) -> Value {
    match value {
        ElicitValue::String(s) => Value::String(s.clone()),
        ElicitValue::Number(n) => Value::Number(n.clone()),
        ElicitValue::Boolean(b) => Value::Bool(*b),
        ElicitValue::StringArray(v) => v.iter().cloned().map(Value::String).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elicitation::{NumberSchema, StringSchema, TitledMultiSelectEnumSchema};

    fn answer(pairs: &[(&str, ElicitValue)]) -> ElicitContent {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn problem(schema: &RequestedSchema, pairs: &[(&str, ElicitValue)]) -> String {
        schema.check(Some(&answer(pairs))).unwrap_err().to_string()
    }

    #[test]
    fn required_fields_and_types() {
        let schema = RequestedSchema::new()
            .required("name", PrimitiveSchemaDefinition::string())
            .optional("age", PrimitiveSchemaDefinition::integer())
            .optional("ok", PrimitiveSchemaDefinition::boolean());
        assert!(
            schema
                .check(Some(&answer(&[("name", "Ada".into())])))
                .is_ok()
        );
        assert_eq!(problem(&schema, &[]), "name: a value is required");
        assert!(schema.check(None).is_err());
        assert_eq!(
            problem(&schema, &[("name", true.into())]),
            "name: must be text"
        );
        assert_eq!(
            problem(&schema, &[("name", "Ada".into()), ("age", "7".into())]),
            "age: must be a whole number"
        );
        assert_eq!(
            problem(
                &schema,
                &[
                    ("name", "Ada".into()),
                    ("age", ElicitValue::float(7.5).unwrap())
                ]
            ),
            "age: must be a whole number"
        );
        assert!(
            schema
                .check(Some(&answer(&[
                    ("name", "Ada".into()),
                    ("age", ElicitValue::float(7.0).unwrap())
                ])))
                .is_ok()
        );
        assert_eq!(
            problem(&schema, &[("name", "Ada".into()), ("ok", "yes".into())]),
            "ok: must be true or false"
        );
        // Undeclared fields are not the schema's business.
        assert!(
            schema
                .check(Some(&answer(&[("name", "Ada".into()), ("x", 1i64.into())])))
                .is_ok()
        );
    }

    #[test]
    fn bounds() {
        let text = StringSchema {
            min_length: Some(2),
            max_length: Some(3),
            ..Default::default()
        };
        let schema = RequestedSchema::new().optional("code", text).optional(
            "n",
            NumberSchema::new(NumberType::Number).with_range(Some(1.0), Some(2.5)),
        );
        assert!(
            schema
                .check(Some(&answer(&[("code", "äö".into())])))
                .is_ok()
        );
        assert!(problem(&schema, &[("code", "a".into())]).contains("at least 2"));
        assert!(problem(&schema, &[("code", "abcd".into())]).contains("at most 3"));
        assert!(problem(&schema, &[("n", 3i64.into())]).contains("at most 2.5"));
        assert!(problem(&schema, &[("n", 0i64.into())]).contains("at least 1"));
    }

    #[test]
    fn options() {
        let schema = RequestedSchema::new()
            .optional(
                "hotel",
                PrimitiveSchemaDefinition::titled_single_select([("h1", "One"), ("h2", "Two")]),
            )
            .optional("size", PrimitiveSchemaDefinition::single_select(["S", "M"]))
            .optional("extras", {
                let mut s = TitledMultiSelectEnumSchema::new([("a", "A"), ("b", "B"), ("c", "C")]);
                s.min_items = Some(1);
                s.max_items = Some(2);
                s
            });
        assert!(
            schema
                .check(Some(&answer(&[("hotel", "h2".into())])))
                .is_ok()
        );
        assert_eq!(
            problem(&schema, &[("hotel", "Two".into())]),
            "hotel: \"Two\" is not one of the options"
        );
        assert!(problem(&schema, &[("size", "L".into())]).contains("\"L\" is not one of"));
        assert!(
            schema
                .check(Some(&answer(&[("extras", vec!["a", "c"].into())])))
                .is_ok()
        );
        assert!(problem(&schema, &[("extras", vec!["a", "z"].into())]).contains("\"z\""));
        assert!(problem(&schema, &[("extras", vec!["a", "a"].into())]).contains("twice"));
        assert!(
            problem(&schema, &[("extras", Vec::<String>::new().into())]).contains("at least 1")
        );
        assert!(problem(&schema, &[("extras", vec!["a", "b", "c"].into())]).contains("at most 2"));
        assert!(problem(&schema, &[("extras", "a".into())]).contains("list"));
        // A choice refuses anything that is not one of its options, whatever its type.
        assert_eq!(
            problem(&schema, &[("size", true.into())]),
            "size: true is not one of the options"
        );
    }

    #[test]
    fn formats() {
        let field = |format| StringSchema {
            format: Some(format),
            ..Default::default()
        };
        let cases = [
            (StringFormat::Email, "ada@example.org", true),
            (StringFormat::Email, "ada@", false),
            (StringFormat::Email, "a b@example.org", false),
            (StringFormat::Uri, "https://example.org/x", true),
            (StringFormat::Uri, "urn:isbn:0451450523", true),
            (StringFormat::Uri, "example.org", false),
            (StringFormat::Uri, "https://exa mple.org", false),
            (StringFormat::Date, "2024-02-29", true),
            (StringFormat::Date, "2023-02-29", false),
            (StringFormat::Date, "2026-13-01", false),
            (StringFormat::Date, "2026-7-28", false),
            (StringFormat::DateTime, "2026-07-28T09:30:00Z", true),
            (
                StringFormat::DateTime,
                "2026-07-28T09:30:00.250+02:00",
                true,
            ),
            (StringFormat::DateTime, "2026-07-28T24:30:00Z", false),
            (StringFormat::DateTime, "2026-07-28T09:30:00", false),
            (StringFormat::DateTime, "2026-07-28 09:30:00Z", false),
        ];
        for (format, text, ok) in cases {
            let schema = RequestedSchema::new().required("f", field(format));
            let result = schema.check(Some(&answer(&[("f", text.into())])));
            assert_eq!(result.is_ok(), ok, "{format:?} {text:?}: {result:?}");
        }
    }
}
