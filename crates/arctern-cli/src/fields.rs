//! The fields of an elicitation form (`requestedSchema`): what each expects, and typing and
//! checking values against it. Shared by the interactive form and `--answer`.

use std::fmt;

use arctern::types::elicitation::{
    BooleanSchema, ElicitValue, EnumSchema, MultiSelectEnumSchema, NumberSchema, NumberType,
    PrimitiveSchemaDefinition, SingleSelectEnumSchema, StringFormat, StringSchema,
};
use serde_json::{Number, Value};

/// One option of a choice: the value sent, and what the user sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The value submitted.
    pub value: String,
    /// The display title (the value itself when the schema has no titles).
    pub title: String,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.title)
    }
}

/// A field's kind, flattened from the schema's variants.
#[derive(Debug, Clone)]
pub enum Kind<'a> {
    /// Free text.
    Text(&'a StringSchema),
    /// A number or an integer.
    Number(&'a NumberSchema),
    /// Yes or no.
    Boolean(&'a BooleanSchema),
    /// One of several options.
    Single {
        /// The options.
        options: Vec<Choice>,
        /// The pre-selected value.
        default: Option<&'a str>,
    },
    /// Any number of several options.
    Multi {
        /// The options.
        options: Vec<Choice>,
        /// The pre-selected values.
        default: Option<&'a [String]>,
        /// The fewest to select.
        min: Option<u64>,
        /// The most to select.
        max: Option<u64>,
    },
}

fn untitled(options: &[String]) -> Vec<Choice> {
    options
        .iter()
        .map(|o| Choice {
            value: o.clone(),
            title: o.clone(),
        })
        .collect()
}

/// The kind of a field.
pub fn kind(schema: &PrimitiveSchemaDefinition) -> Kind<'_> {
    match schema {
        PrimitiveSchemaDefinition::String(s) => Kind::Text(s),
        PrimitiveSchemaDefinition::Number(n) => Kind::Number(n),
        PrimitiveSchemaDefinition::Boolean(b) => Kind::Boolean(b),
        PrimitiveSchemaDefinition::Enum(e) => match e {
            EnumSchema::SingleSelect(SingleSelectEnumSchema::Untitled(s)) => Kind::Single {
                options: untitled(&s.options),
                default: s.default.as_deref(),
            },
            EnumSchema::SingleSelect(SingleSelectEnumSchema::Titled(s)) => Kind::Single {
                options: s
                    .one_of
                    .iter()
                    .map(|o| Choice {
                        value: o.value.clone(),
                        title: o.title.clone(),
                    })
                    .collect(),
                default: s.default.as_deref(),
            },
            EnumSchema::LegacyTitled(s) => Kind::Single {
                options: s
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Choice {
                        value: v.clone(),
                        title: s
                            .enum_names
                            .as_ref()
                            .and_then(|names| names.get(i))
                            .cloned()
                            .unwrap_or_else(|| v.clone()),
                    })
                    .collect(),
                default: s.default.as_deref(),
            },
            EnumSchema::MultiSelect(MultiSelectEnumSchema::Untitled(s)) => Kind::Multi {
                options: untitled(&s.items.options),
                default: s.default.as_deref(),
                min: s.min_items,
                max: s.max_items,
            },
            EnumSchema::MultiSelect(MultiSelectEnumSchema::Titled(s)) => Kind::Multi {
                options: s
                    .items
                    .any_of
                    .iter()
                    .map(|o| Choice {
                        value: o.value.clone(),
                        title: o.title.clone(),
                    })
                    .collect(),
                default: s.default.as_deref(),
                min: s.min_items,
                max: s.max_items,
            },
        },
    }
}

/// The field's title and description.
pub fn labels(schema: &PrimitiveSchemaDefinition) -> (Option<&str>, Option<&str>) {
    use EnumSchema as E;
    use MultiSelectEnumSchema as M;
    use PrimitiveSchemaDefinition as P;
    use SingleSelectEnumSchema as S;
    let (t, d) = match schema {
        P::String(s) => (&s.title, &s.description),
        P::Number(s) => (&s.title, &s.description),
        P::Boolean(s) => (&s.title, &s.description),
        P::Enum(E::SingleSelect(S::Untitled(s))) => (&s.title, &s.description),
        P::Enum(E::SingleSelect(S::Titled(s))) => (&s.title, &s.description),
        P::Enum(E::LegacyTitled(s)) => (&s.title, &s.description),
        P::Enum(E::MultiSelect(M::Untitled(s))) => (&s.title, &s.description),
        P::Enum(E::MultiSelect(M::Titled(s))) => (&s.title, &s.description),
    };
    (t.as_deref(), d.as_deref())
}

/// What a field expects, in words ("an integer from 1 to 90").
pub fn describe(kind: &Kind<'_>) -> String {
    match kind {
        Kind::Text(s) => {
            let mut out = match s.format {
                Some(StringFormat::Email) => "an email address".to_owned(),
                Some(StringFormat::Uri) => "a URI".to_owned(),
                Some(StringFormat::Date) => "a date (YYYY-MM-DD)".to_owned(),
                Some(StringFormat::DateTime) => {
                    "a date and time (RFC 3339, such as 2026-07-28T09:30:00Z)".to_owned()
                }
                None => "text".to_owned(),
            };
            match (s.min_length, s.max_length) {
                (Some(a), Some(b)) => out.push_str(&format!(", {a} to {b} characters")),
                (Some(a), None) => out.push_str(&format!(", at least {a} characters")),
                (None, Some(b)) => out.push_str(&format!(", at most {b} characters")),
                (None, None) => {}
            }
            out
        }
        Kind::Number(n) => {
            let mut out = match n.kind {
                NumberType::Integer => "an integer".to_owned(),
                NumberType::Number => "a number".to_owned(),
            };
            match (n.minimum, n.maximum) {
                (Some(a), Some(b)) => out.push_str(&format!(" from {a} to {b}")),
                (Some(a), None) => out.push_str(&format!(" of at least {a}")),
                (None, Some(b)) => out.push_str(&format!(" of at most {b}")),
                (None, None) => {}
            }
            out
        }
        Kind::Boolean(_) => "yes or no (true/false)".to_owned(),
        Kind::Single { options, .. } => format!("one of: {}", offered(options)),
        Kind::Multi {
            options, min, max, ..
        } => {
            let mut out = format!("any of: {}", offered(options));
            match (min, max) {
                (Some(a), Some(b)) => out.push_str(&format!(" ({a} to {b} of them)")),
                (Some(a), None) => out.push_str(&format!(" (at least {a})")),
                (None, Some(b)) => out.push_str(&format!(" (at most {b})")),
                (None, None) => {}
            }
            out
        }
    }
}

/// The field's default value, if the schema gives one.
pub fn default_value(kind: &Kind<'_>) -> Option<ElicitValue> {
    match kind {
        Kind::Text(s) => s.default.clone().map(ElicitValue::String),
        Kind::Number(n) => n.default.and_then(|d| number_value(n.kind, d)),
        Kind::Boolean(b) => b.default.map(ElicitValue::Boolean),
        Kind::Single { default, .. } => default.map(|d| ElicitValue::String(d.to_owned())),
        Kind::Multi { default, .. } => default.map(|d| ElicitValue::StringArray(d.to_vec())),
    }
}

/// `d` as a JSON number, an integer for integer fields.
fn number_value(kind: NumberType, d: f64) -> Option<ElicitValue> {
    if kind == NumberType::Integer && d.fract() == 0.0 && d.abs() < 9.0e15 {
        // Exact: `d` is integral and well within i64.
        return Some(ElicitValue::Number(Number::from(d as i64)));
    }
    ElicitValue::float(d)
}

/// Checks text against a string field (length, format).
pub fn check_text(s: &StringSchema, v: &str) -> Result<(), String> {
    let len = v.chars().count() as u64;
    if let Some(min) = s.min_length
        && len < min
    {
        return Err(format!("At least {min} characters, please."));
    }
    if let Some(max) = s.max_length
        && len > max
    {
        return Err(format!("At most {max} characters, please."));
    }
    if let Some(format) = s.format {
        check_format(format, v)?;
    }
    Ok(())
}

/// Checks a value against a string format.
pub fn check_format(format: StringFormat, v: &str) -> Result<(), String> {
    let (ok, what) = match format {
        StringFormat::Email => (is_email(v), "an email address, such as ada@example.com"),
        StringFormat::Uri => (is_uri(v), "an absolute URI, such as https://example.com/x"),
        StringFormat::Date => (is_date(v), "a date as YYYY-MM-DD, such as 2026-07-28"),
        StringFormat::DateTime => (
            is_date_time(v),
            "a date and time (RFC 3339), such as 2026-07-28T09:30:00Z",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("Expected {what}."))
    }
}

/// A pragmatic address check: one `@`, a non-empty local part, a dotted domain, no spaces.
fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !v.chars().any(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
}

fn is_uri(v: &str) -> bool {
    iri_string::types::UriStr::new(v).is_ok()
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn is_date(v: &str) -> bool {
    let mut parts = v.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339 `date-time`: `full-date "T" full-time`, with `Z` or a numeric offset.
fn is_date_time(v: &str) -> bool {
    let Some(t) = v.find(['T', 't']) else {
        return false;
    };
    let (date, time) = (&v[..t], &v[t + 1..]);
    if !is_date(date) {
        return false;
    }
    let (clock, offset) = if let Some(rest) = time.strip_suffix(['Z', 'z']) {
        (rest, None)
    } else if let Some(i) = time.rfind(['+', '-']) {
        (&time[..i], Some(&time[i + 1..]))
    } else {
        return false;
    };
    if let Some(offset) = offset {
        let Some((h, m)) = offset.split_once(':') else {
            return false;
        };
        match (digits(h, 2), digits(m, 2)) {
            (Some(h), Some(m)) if h < 24 && m < 60 => {}
            _ => return false,
        }
    }
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    if let Some(frac) = frac
        && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let mut parts = hms.split(':');
    let (Some(h), Some(m), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    matches!(
        (digits(h, 2), digits(m, 2), digits(s, 2)),
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s <= 60
    )
}

/// Parses and checks a number typed for a number field.
pub fn parse_number(n: &NumberSchema, text: &str) -> Result<Number, String> {
    let text = text.trim();
    let value = match n.kind {
        NumberType::Integer => match text.parse::<i64>() {
            Ok(i) => Number::from(i),
            Err(_) => return Err("Expected a whole number.".into()),
        },
        NumberType::Number => {
            if let Ok(i) = text.parse::<i64>() {
                Number::from(i)
            } else {
                match text.parse::<f64>().ok().and_then(Number::from_f64) {
                    Some(v) => v,
                    None => return Err("Expected a number.".into()),
                }
            }
        }
    };
    check_number(n, &value)?;
    Ok(value)
}

/// Checks a number's kind and bounds.
pub fn check_number(n: &NumberSchema, value: &Number) -> Result<(), String> {
    if n.kind == NumberType::Integer && !(value.is_i64() || value.is_u64()) {
        return Err("Expected a whole number.".into());
    }
    let Some(v) = value.as_f64() else {
        return Err("Expected a number.".into());
    };
    if let Some(min) = n.minimum
        && v < min
    {
        return Err(format!("At least {min}, please."));
    }
    if let Some(max) = n.maximum
        && v > max
    {
        return Err(format!("At most {max}, please."));
    }
    Ok(())
}

/// Reads yes or no.
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "y" | "1" => Ok(true),
        "false" | "no" | "n" | "0" => Ok(false),
        _ => Err("Expected true or false.".into()),
    }
}

/// Finds an option by its value, or else by its title (ignoring case).
pub fn pick<'a>(options: &'a [Choice], text: &str) -> Result<&'a Choice, String> {
    options
        .iter()
        .find(|c| c.value == text)
        .or_else(|| options.iter().find(|c| c.title.eq_ignore_ascii_case(text)))
        .ok_or_else(|| {
            format!(
                "{text:?} is not offered; expected one of: {}.",
                offered(options)
            )
        })
}

/// The options as a person picks them: `value (title)`, or the value alone when it is its
/// own title.
fn offered(options: &[Choice]) -> String {
    options
        .iter()
        .map(|c| {
            if c.title == c.value {
                c.value.clone()
            } else {
                format!("{} ({})", c.value, c.title)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks how many options are selected.
pub fn check_count(count: usize, min: Option<u64>, max: Option<u64>) -> Result<(), String> {
    let count = count as u64;
    if let Some(min) = min
        && count < min
    {
        return Err(format!("Select at least {min}."));
    }
    if let Some(max) = max
        && count > max
    {
        return Err(format!("Select at most {max}."));
    }
    Ok(())
}

/// Types a value given as text (the shorthand of `--answer`): a number for number fields,
/// true/false for booleans, an option's value or title for choices, a comma-separated list
/// (or a JSON array) for multi-selects, the text itself for text fields.
pub fn from_text(kind: &Kind<'_>, text: &str) -> Result<ElicitValue, String> {
    match kind {
        Kind::Text(s) => {
            check_text(s, text)?;
            Ok(ElicitValue::String(text.to_owned()))
        }
        Kind::Number(n) => parse_number(n, text).map(ElicitValue::Number),
        Kind::Boolean(_) => parse_bool(text).map(ElicitValue::Boolean),
        Kind::Single { options, .. } => {
            pick(options, text.trim()).map(|c| ElicitValue::String(c.value.clone()))
        }
        Kind::Multi {
            options, min, max, ..
        } => {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) {
                return from_json(kind, &Value::Array(items));
            }
            let picked = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| pick(options, s).map(|c| c.value.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            check_count(picked.len(), *min, *max)?;
            Ok(ElicitValue::StringArray(picked))
        }
    }
}

/// Checks a JSON value against a field.
pub fn from_json(kind: &Kind<'_>, value: &Value) -> Result<ElicitValue, String> {
    match (kind, value) {
        (Kind::Text(s), Value::String(v)) => {
            check_text(s, v)?;
            Ok(ElicitValue::String(v.clone()))
        }
        (Kind::Number(n), Value::Number(v)) => {
            check_number(n, v)?;
            Ok(ElicitValue::Number(v.clone()))
        }
        (Kind::Boolean(_), Value::Bool(b)) => Ok(ElicitValue::Boolean(*b)),
        (Kind::Single { options, .. }, Value::String(v)) => {
            pick(options, v).map(|c| ElicitValue::String(c.value.clone()))
        }
        (
            Kind::Multi {
                options, min, max, ..
            },
            Value::Array(items),
        ) => {
            let picked = items
                .iter()
                .map(|item| match item {
                    Value::String(s) => pick(options, s).map(|c| c.value.clone()),
                    _ => Err("Expected an array of strings.".to_owned()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            check_count(picked.len(), *min, *max)?;
            Ok(ElicitValue::StringArray(picked))
        }
        (kind, _) => Err(format!("Expected {}.", describe(kind))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(v: Value) -> PrimitiveSchemaDefinition {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn formats() {
        assert!(is_email("ada@example.com"));
        for bad in [
            "ada",
            "@example.com",
            "ada@",
            "ada@example",
            "a b@x.io",
            "a@@x.io",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
        assert!(is_uri("https://example.com/a?b#c"));
        assert!(is_uri("urn:isbn:0451450523"));
        assert!(!is_uri("example.com"));
        assert!(!is_uri("not a uri"));
        assert!(is_date("2024-02-29"));
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "24-01-01",
            "2024-01-32",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
        for good in [
            "2026-07-28T09:30:00Z",
            "2026-07-28t09:30:00.123+02:00",
            "2026-07-28T23:59:60-05:30",
        ] {
            assert!(is_date_time(good), "{good}");
        }
        for bad in [
            "2026-07-28",
            "2026-07-28T09:30Z",
            "2026-07-28T24:00:00Z",
            "2026-07-28T09:30:00",
            "2026-07-28T09:30:00.Z",
            "2026-07-28T09:30:00+0200",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn numbers_keep_their_kind_and_bounds() {
        let f = field(json!({"type": "integer", "minimum": 1, "maximum": 90}));
        let Kind::Number(n) = kind(&f) else { panic!() };
        assert_eq!(parse_number(n, "30").unwrap(), Number::from(30));
        assert!(parse_number(n, "2.5").is_err());
        assert!(parse_number(n, "0").unwrap_err().contains("At least 1"));
        assert!(parse_number(n, "91").unwrap_err().contains("At most 90"));
        let f = field(json!({"type": "number", "default": 95.5}));
        let k = kind(&f);
        let Kind::Number(n) = k else { panic!() };
        assert_eq!(parse_number(n, "2.5").unwrap().as_f64(), Some(2.5));
        assert_eq!(
            serde_json::to_value(default_value(&k).unwrap()).unwrap(),
            json!(95.5)
        );
        let f = field(json!({"type": "integer", "default": 30}));
        assert_eq!(
            serde_json::to_value(default_value(&kind(&f)).unwrap()).unwrap(),
            json!(30)
        );
    }

    #[test]
    fn choices_accept_values_or_titles() {
        let f = field(json!({"type": "string", "oneOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}));
        let k = kind(&f);
        assert_eq!(from_text(&k, "v2").unwrap(), ElicitValue::from("v2"));
        assert_eq!(from_text(&k, "first").unwrap(), ElicitValue::from("v1"));
        assert_eq!(
            from_text(&k, "third").unwrap_err(),
            "\"third\" is not offered; expected one of: v1 (First), v2 (Second)."
        );
        let f = field(json!({"type": "string", "enum": ["a", "b"], "enumNames": ["Ay", "Bee"]}));
        let Kind::Single { options, .. } = kind(&f) else {
            panic!()
        };
        assert_eq!(options[1].title, "Bee");
    }

    #[test]
    fn multi_selects_take_lists() {
        let f = field(json!({"type": "array", "minItems": 1,
            "items": {"type": "string", "enum": ["red", "green", "blue"]}}));
        let k = kind(&f);
        assert_eq!(
            from_text(&k, "red, blue").unwrap(),
            ElicitValue::from(vec!["red", "blue"])
        );
        assert_eq!(
            from_text(&k, r#"["green"]"#).unwrap(),
            ElicitValue::from(vec!["green"])
        );
        assert!(from_text(&k, "").unwrap_err().contains("at least 1"));
        assert!(from_json(&k, &json!([1])).is_err());
        assert!(from_json(&k, &json!("red")).is_err());
    }

    #[test]
    fn text_checks_length_and_format() {
        let f = field(json!({"type": "string", "format": "email", "maxLength": 20}));
        let k = kind(&f);
        assert!(from_text(&k, "ada@example.com").is_ok());
        assert!(from_text(&k, "ada").unwrap_err().contains("email"));
        assert!(from_json(&k, &json!("a-very-long-address@example.com")).is_err());
        assert!(
            from_json(&k, &json!(3))
                .unwrap_err()
                .contains("an email address")
        );
        assert_eq!(describe(&k), "an email address, at most 20 characters");
    }

    #[test]
    fn booleans() {
        let f = field(json!({"type": "boolean"}));
        let k = kind(&f);
        assert_eq!(from_text(&k, "yes").unwrap(), ElicitValue::Boolean(true));
        assert_eq!(
            from_json(&k, &json!(false)).unwrap(),
            ElicitValue::Boolean(false)
        );
        assert!(from_text(&k, "maybe").is_err());
    }
}
