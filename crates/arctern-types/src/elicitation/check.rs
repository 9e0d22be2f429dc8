//! Checking a form's answer against the schema it was asked with.

use std::fmt;

use super::{
    ElicitContent, ElicitValue, EnumSchema, MultiSelectEnumSchema, NumberType,
    PrimitiveSchemaDefinition, RequestedSchema, SingleSelectEnumSchema, StringFormat,
};

/// Why a form's answer does not fit the schema it was asked with: the field and the problem,
/// in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentError {
    field: String,
    problem: String,
}

impl ContentError {
    fn new(field: &str, problem: impl Into<String>) -> Self {
        ContentError {
            field: field.to_owned(),
            problem: problem.into(),
        }
    }

    /// The field at fault.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for ContentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for ContentError {}

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
    /// ```
    pub fn check(&self, content: Option<&ElicitContent>) -> Result<(), ContentError> {
        let empty = ElicitContent::new();
        let content = content.unwrap_or(&empty);
        for name in self.required.iter().flatten() {
            if !content.contains_key(name) {
                return Err(ContentError::new(name, "an answer is required"));
            }
        }
        for (name, schema) in self.properties.iter() {
            if let Some(value) = content.get(name) {
                check_field(schema, value).map_err(|problem| ContentError::new(name, problem))?;
            }
        }
        Ok(())
    }
}

fn check_field(schema: &PrimitiveSchemaDefinition, value: &ElicitValue) -> Result<(), String> {
    match schema {
        PrimitiveSchemaDefinition::String(s) => {
            let text = value.as_str().ok_or("must be text")?;
            let chars = text.chars().count() as u64;
            if let Some(min) = s.min_length
                && chars < min
            {
                return Err(format!("must be at least {min} characters long"));
            }
            if let Some(max) = s.max_length
                && chars > max
            {
                return Err(format!("must be at most {max} characters long"));
            }
            match s.format {
                Some(format) if !has_format(text, format) => {
                    Err(format!("must be {}", format_name(format)))
                }
                _ => Ok(()),
            }
        }
        PrimitiveSchemaDefinition::Number(s) => {
            let ElicitValue::Number(n) = value else {
                return Err("must be a number".into());
            };
            let x = n.as_f64().ok_or("must be a number")?;
            if s.kind == NumberType::Integer && !(n.is_i64() || n.is_u64() || x.fract() == 0.0) {
                return Err("must be a whole number".into());
            }
            if let Some(min) = s.minimum
                && x < min
            {
                return Err(format!("must be at least {min}"));
            }
            if let Some(max) = s.maximum
                && x > max
            {
                return Err(format!("must be at most {max}"));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Boolean(_) => match value {
            ElicitValue::Boolean(_) => Ok(()),
            _ => Err("must be true or false".into()),
        },
        PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(s)) => {
            let picked = value.as_string_array().ok_or("must be a list of options")?;
            let (offered, min, max): (Vec<&str>, _, _) = match s {
                MultiSelectEnumSchema::Untitled(s) => (
                    s.items.options.iter().map(String::as_str).collect(),
                    s.min_items,
                    s.max_items,
                ),
                MultiSelectEnumSchema::Titled(s) => (
                    s.items.any_of.iter().map(|o| o.value.as_str()).collect(),
                    s.min_items,
                    s.max_items,
                ),
            };
            if let Some(stray) = picked.iter().find(|p| !offered.contains(&p.as_str())) {
                return Err(format!("{stray:?} is not one of the options"));
            }
            if picked
                .iter()
                .enumerate()
                .any(|(i, p)| picked[..i].contains(p))
            {
                return Err("an option is selected twice".into());
            }
            let count = picked.len() as u64;
            if let Some(min) = min
                && count < min
            {
                return Err(format!("select at least {min}"));
            }
            if let Some(max) = max
                && count > max
            {
                return Err(format!("select at most {max}"));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Enum(single) => {
            let picked = value.as_str().ok_or("must be one of the options")?;
            let offered = match single {
                EnumSchema::SingleSelect(SingleSelectEnumSchema::Untitled(s)) => {
                    s.options.iter().any(|o| o == picked)
                }
                EnumSchema::SingleSelect(SingleSelectEnumSchema::Titled(s)) => {
                    s.one_of.iter().any(|o| o.value == picked)
                }
                EnumSchema::LegacyTitled(s) => s.options.iter().any(|o| o == picked),
                EnumSchema::MultiSelect(_) => unreachable!("matched above"),
            };
            if offered {
                Ok(())
            } else {
                Err(format!("{picked:?} is not one of the options"))
            }
        }
    }
}

fn format_name(format: StringFormat) -> &'static str {
    match format {
        StringFormat::Email => "an email address",
        StringFormat::Uri => "a URI (with a scheme, such as https:)",
        StringFormat::Date => "a date (YYYY-MM-DD)",
        StringFormat::DateTime => "a date and time (RFC 3339, such as 2026-07-28T09:30:00Z)",
    }
}

fn has_format(text: &str, format: StringFormat) -> bool {
    match format {
        StringFormat::Email => text.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !text.chars().any(char::is_whitespace)
        }),
        StringFormat::Uri => {
            let scheme = text.split_once(':').map(|(s, _)| s).unwrap_or("");
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !text.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        StringFormat::Date => is_date(text),
        StringFormat::DateTime => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && is_time_with_offset(time)),
    }
}

/// `YYYY-MM-DD`, a real calendar day.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `HH:MM:SS[.frac](Z|±HH:MM)` (RFC 3339 `full-time`; a leap second is allowed).
fn is_time_with_offset(text: &str) -> bool {
    let (time, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let offset_ok = match offset.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h @ ..] if h.len() == 5 && h[2] == b':' => {
            matches!((digits(&h[0..2]), digits(&h[3..5])), (Some(hh), Some(mm)) if hh < 24 && mm < 60)
        }
        _ => false,
    };
    let b = time.as_bytes();
    if !offset_ok || b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let fraction_ok = match &b[8..] {
        [] => true,
        [b'.', rest @ ..] => !rest.is_empty() && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    matches!(
        (digits(&b[0..2]), digits(&b[3..5]), digits(&b[6..8])),
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s <= 60
    ) && fraction_ok
}

fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
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
        assert_eq!(problem(&schema, &[]), "name: an answer is required");
        assert!(schema.check(None).is_err());
        assert_eq!(
            problem(&schema, &[("name", true.into())]),
            "name: must be text"
        );
        assert_eq!(
            problem(&schema, &[("name", "Ada".into()), ("age", "7".into())]),
            "age: must be a number"
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
