//! Elicitation: asking the user for input, as an `elicitation/create` input request.
//!
//! A form-mode elicitation describes a flat object whose properties are restricted JSON
//! Schemas ([`PrimitiveSchemaDefinition`]); a URL-mode elicitation sends the user to a web
//! page (required for sensitive data). The answer is an [`ElicitResult`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use crate::meta::JsonObject;
use crate::tags;
use crate::util::{buffer, buffer_object, from_object, serialize_variants, str_member, unexpected};

mod check;

/// An elicitation input request (`ElicitRequest`): `{"method": "elicitation/create",
/// "params": ...}`, without JSON-RPC members. Carried in
/// [`InputRequiredResult::input_requests`](crate::mrtr::InputRequiredResult::input_requests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitRequest {
    /// Always `"elicitation/create"`.
    pub method: tags::ElicitationCreate,
    /// What to ask.
    pub params: ElicitRequestParams,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequest {
    /// A request with these params.
    pub fn new(params: impl Into<ElicitRequestParams>) -> Self {
        ElicitRequest {
            method: tags::ElicitationCreate,
            params: params.into(),
            extra: JsonObject::new(),
        }
    }
}

/// The params of an elicitation (`ElicitRequestParams`): a form or a URL.
///
/// Deserializing looks at `mode`: `"url"` is [`ElicitRequestParams::Url`]; `"form"` or no
/// `mode` at all is [`ElicitRequestParams::Form`]; any other mode is rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// Form mode: structured input in the client's UI.
    Form(ElicitRequestFormParams),
    /// URL mode: an out-of-band web flow.
    Url(ElicitRequestUrlParams),
}

serialize_variants!(ElicitRequestParams { Form, Url });

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "elicitation params (an object)")?;
        match map.get("mode") {
            None => from_object(map).map(ElicitRequestParams::Form),
            Some(Value::String(m)) if m == tags::FormMode::VALUE => {
                from_object(map).map(ElicitRequestParams::Form)
            }
            Some(Value::String(m)) if m == tags::UrlMode::VALUE => {
                from_object(map).map(ElicitRequestParams::Url)
            }
            Some(Value::String(m)) => Err(de::Error::unknown_variant(m, &["form", "url"])),
            Some(other) => Err(de::Error::invalid_type(
                unexpected(other),
                &"the mode string",
            )),
        }
    }
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }

    /// Whether this is a URL-mode elicitation.
    pub fn is_url(&self) -> bool {
        matches!(self, ElicitRequestParams::Url(_))
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(p)
    }
}

impl From<ElicitRequestUrlParams> for ElicitRequestParams {
    fn from(p: ElicitRequestUrlParams) -> Self {
        ElicitRequestParams::Url(p)
    }
}

/// Form-mode params (`ElicitRequestFormParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequestFormParams {
    /// `"form"`, or absent (form is the default mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<tags::FormMode>,
    /// What to ask the user.
    pub message: String,
    /// The shape of the answer.
    pub requested_schema: RequestedSchema,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestFormParams {
    /// A form asking `message` with an explicit `"mode": "form"`.
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams {
            mode: Some(tags::FormMode),
            message: message.into(),
            requested_schema,
            extra: Default::default(),
        }
    }
}

/// URL-mode params (`ElicitRequestURLParams`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: tags::UrlMode,
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestUrlParams {
    /// A URL-mode elicitation.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestUrlParams {
            mode: tags::UrlMode,
            message: message.into(),
            url: url.into(),
            extra: Default::default(),
        }
    }
}

/// The schema of a form's answer (`ElicitRequestFormParams.requestedSchema`): a flat object
/// of primitive properties.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestedSchema {
    /// The JSON Schema dialect, if given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub kind: tags::ObjectType,
    /// The fields, by name, in the order the server declared them.
    pub properties: SchemaProperties,
    /// The names of the fields that must be filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestedSchema {
    /// An empty form.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an optional field.
    pub fn optional(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        self.properties.insert(name.into(), schema.into());
        self
    }

    /// Adds a required field.
    pub fn required(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        let name = name.into();
        let required = self.required.get_or_insert_with(Vec::new);
        if !required.contains(&name) {
            required.push(name.clone());
        }
        self.properties.insert(name, schema.into());
        self
    }

    /// Whether the field `name` is required.
    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .as_ref()
            .is_some_and(|r| r.iter().any(|n| n == name))
    }
}

/// The fields of a form (`requestedSchema.properties`): a map from field name to schema that
/// keeps the order in which the fields were declared (clients show them in that order).
/// A repeated name replaces the earlier field in place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaProperties(Vec<(String, PrimitiveSchemaDefinition)>);

impl SchemaProperties {
    /// No fields.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field at the end, or replaces the field of the same name in place; returns the
    /// replaced schema.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        schema: PrimitiveSchemaDefinition,
    ) -> Option<PrimitiveSchemaDefinition> {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => Some(std::mem::replace(old, schema)),
            None => {
                self.0.push((name, schema));
                None
            }
        }
    }

    /// The schema of field `name`.
    pub fn get(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The schema of field `name`, to change it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut PrimitiveSchemaDefinition> {
        self.0.iter_mut().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The fields in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &PrimitiveSchemaDefinition)> {
        self.0.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// The field names in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<String>> FromIterator<(K, PrimitiveSchemaDefinition)> for SchemaProperties {
    fn from_iter<I: IntoIterator<Item = (K, PrimitiveSchemaDefinition)>>(iter: I) -> Self {
        let mut props = SchemaProperties::new();
        for (name, schema) in iter {
            props.insert(name, schema);
        }
        props
    }
}

impl IntoIterator for SchemaProperties {
    type Item = (String, PrimitiveSchemaDefinition);
    type IntoIter = std::vec::IntoIter<(String, PrimitiveSchemaDefinition)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Serialize for SchemaProperties {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, schema) in &self.0 {
            map.serialize_entry(name, schema)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SchemaProperties {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;

        impl<'de> de::Visitor<'de> for FieldsVisitor {
            type Value = SchemaProperties;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of field schemas")
            }

            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<Self::Value, A::Error> {
                let mut props = SchemaProperties::new();
                while let Some((name, schema)) =
                    access.next_entry::<String, PrimitiveSchemaDefinition>()?
                {
                    props.insert(name, schema);
                }
                Ok(props)
            }
        }

        d.deserialize_map(FieldsVisitor)
    }
}

/// The user's decision (`ElicitResult.action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form (or, in URL mode, consented to open the URL).
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

/// The answer to an elicitation (`ElicitResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, for form mode with `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ElicitContent>,
    /// Unknown members (such as a `_meta` from an older client), kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The submitted values of a form, by field name.
pub type ElicitContent = BTreeMap<String, ElicitValue>;

impl ElicitResult {
    /// The user submitted these values:
    /// `ElicitResult::accept([("name", ElicitValue::from("octocat"))])`.
    pub fn accept<K, V>(content: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<ElicitValue>,
    {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(
                content
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
            extra: JsonObject::new(),
        }
    }

    /// The user submitted this JSON object. Fails if it is not an object whose values are
    /// strings, numbers, booleans or arrays of strings.
    pub fn accept_json(content: Value) -> Result<Self, serde_json::Error> {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(serde_json::from_value(content)?),
            extra: JsonObject::new(),
        })
    }

    /// Consent to a URL-mode elicitation: `accept` without content.
    pub fn accept_url() -> Self {
        Self::action(ElicitAction::Accept)
    }

    /// The user declined.
    pub fn decline() -> Self {
        Self::action(ElicitAction::Decline)
    }

    /// The user cancelled.
    pub fn cancel() -> Self {
        Self::action(ElicitAction::Cancel)
    }

    fn action(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            extra: JsonObject::new(),
        }
    }

    /// Whether the user accepted.
    pub fn is_accepted(&self) -> bool {
        self.action == ElicitAction::Accept
    }

    /// The content decoded into `T` (for example a struct with one field per form field).
    /// `None` when there is no content.
    pub fn content_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        let content = self.content.as_ref()?;
        Some(serde_json::to_value(content).and_then(serde_json::from_value))
    }
}

/// One submitted value: a string, a number, a boolean or an array of strings (for
/// multi-select fields).
///
/// The 2026-07-28 JSON Schema types numbers here as `integer` while the TypeScript schema says
/// `number`; any JSON number is accepted and kept exactly as received ([`Number`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number, as received.
    Number(Number),
    /// A boolean.
    Boolean(bool),
    /// The selected options of a multi-select field.
    StringArray(Vec<String>),
}

impl Serialize for ElicitValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitValue::String(v) => v.serialize(s),
            ElicitValue::Number(v) => v.serialize(s),
            ElicitValue::Boolean(v) => v.serialize(s),
            ElicitValue::StringArray(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "a string, number, boolean or array of strings";
        match buffer(d)? {
            Value::String(s) => Ok(ElicitValue::String(s)),
            Value::Number(n) => Ok(ElicitValue::Number(n)),
            Value::Bool(b) => Ok(ElicitValue::Boolean(b)),
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    other => Err(de::Error::invalid_type(unexpected(&other), &"a string")),
                })
                .collect::<Result<_, _>>()
                .map(ElicitValue::StringArray),
            other => Err(de::Error::invalid_type(unexpected(&other), &EXPECTED)),
        }
    }
}

impl ElicitValue {
    /// A number from a float; `None` if it is not finite.
    pub fn float(value: f64) -> Option<Self> {
        Number::from_f64(value).map(ElicitValue::Number)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ElicitValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ElicitValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as `f64`, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ElicitValue::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The number as `i64`, if this is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ElicitValue::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The selected options, if this is an array.
    pub fn as_string_array(&self) -> Option<&[String]> {
        match self {
            ElicitValue::StringArray(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for ElicitValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElicitValue::String(s) => f.write_str(s),
            ElicitValue::Number(n) => fmt::Display::fmt(n, f),
            ElicitValue::Boolean(b) => fmt::Display::fmt(b, f),
            ElicitValue::StringArray(v) => f.write_str(&v.join(", ")),
        }
    }
}

impl From<String> for ElicitValue {
    fn from(v: String) -> Self {
        ElicitValue::String(v)
    }
}

impl From<&str> for ElicitValue {
    fn from(v: &str) -> Self {
        ElicitValue::String(v.to_owned())
    }
}

impl From<bool> for ElicitValue {
    fn from(v: bool) -> Self {
        ElicitValue::Boolean(v)
    }
}

impl From<i64> for ElicitValue {
    fn from(v: i64) -> Self {
        ElicitValue::Number(v.into())
    }
}

impl From<i32> for ElicitValue {
    fn from(v: i32) -> Self {
        ElicitValue::Number(v.into())
    }
}

impl From<u64> for ElicitValue {
    fn from(v: u64) -> Self {
        ElicitValue::Number(v.into())
    }
}

impl From<Number> for ElicitValue {
    fn from(v: Number) -> Self {
        ElicitValue::Number(v)
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(v: Vec<String>) -> Self {
        ElicitValue::StringArray(v)
    }
}

impl From<Vec<&str>> for ElicitValue {
    fn from(v: Vec<&str>) -> Self {
        ElicitValue::StringArray(v.into_iter().map(str::to_owned).collect())
    }
}

/// The schema of one form field (`PrimitiveSchemaDefinition`).
///
/// The union is untagged on the wire; deserializing picks the variant deterministically from
/// `type` and the members present:
///
/// | `type` | members | variant |
/// | --- | --- | --- |
/// | `"string"` | `oneOf` or `enum` | [`Enum`](PrimitiveSchemaDefinition::Enum) (see [`EnumSchema`]) |
/// | `"string"` | neither | [`String`](PrimitiveSchemaDefinition::String) |
/// | `"number"`, `"integer"` | | [`Number`](PrimitiveSchemaDefinition::Number) |
/// | `"boolean"` | | [`Boolean`](PrimitiveSchemaDefinition::Boolean) |
/// | `"array"` | | [`Enum`](PrimitiveSchemaDefinition::Enum) (multi-select) |
///
/// Any other `type` is rejected.
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// A text field.
    String(StringSchema),
    /// A number field.
    Number(NumberSchema),
    /// A checkbox.
    Boolean(BooleanSchema),
    /// A choice among options.
    Enum(EnumSchema),
}

serialize_variants!(PrimitiveSchemaDefinition {
    String,
    Number,
    Boolean,
    Enum
});

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a field schema (an object)")?;
        match str_member(&map, "type") {
            Some("string") if map.contains_key("oneOf") || map.contains_key("enum") => {
                from_object(map).map(PrimitiveSchemaDefinition::Enum)
            }
            Some("string") => from_object(map).map(PrimitiveSchemaDefinition::String),
            Some("number" | "integer") => from_object(map).map(PrimitiveSchemaDefinition::Number),
            Some("boolean") => from_object(map).map(PrimitiveSchemaDefinition::Boolean),
            Some("array") => from_object(map).map(PrimitiveSchemaDefinition::Enum),
            Some(other) => Err(de::Error::unknown_variant(
                other,
                &["string", "number", "integer", "boolean", "array"],
            )),
            None => Err(de::Error::missing_field("type")),
        }
    }
}

impl PrimitiveSchemaDefinition {
    /// A text field.
    pub fn string() -> Self {
        PrimitiveSchemaDefinition::String(StringSchema::default())
    }

    /// A number field (any number).
    pub fn number() -> Self {
        PrimitiveSchemaDefinition::Number(NumberSchema::new(NumberType::Number))
    }

    /// A number field (integers only).
    pub fn integer() -> Self {
        PrimitiveSchemaDefinition::Number(NumberSchema::new(NumberType::Integer))
    }

    /// A checkbox.
    pub fn boolean() -> Self {
        PrimitiveSchemaDefinition::Boolean(BooleanSchema::default())
    }

    /// A single choice among plain options.
    pub fn single_select(options: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledSingleSelectEnumSchema::new(options).into()
    }

    /// A single choice among options with display titles: `(value, title)` pairs.
    pub fn titled_single_select<V: Into<String>, T: Into<String>>(
        options: impl IntoIterator<Item = (V, T)>,
    ) -> Self {
        TitledSingleSelectEnumSchema::new(options).into()
    }

    /// Several choices among plain options.
    pub fn multi_select(options: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledMultiSelectEnumSchema::new(options).into()
    }

    /// Several choices among options with display titles: `(value, title)` pairs.
    pub fn titled_multi_select<V: Into<String>, T: Into<String>>(
        options: impl IntoIterator<Item = (V, T)>,
    ) -> Self {
        TitledMultiSelectEnumSchema::new(options).into()
    }

    /// Sets the title (the field label).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        *self.labels().0 = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        *self.labels().1 = Some(description.into());
        self
    }

    fn labels(&mut self) -> (&mut Option<String>, &mut Option<String>) {
        match self {
            PrimitiveSchemaDefinition::String(s) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Number(s) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Boolean(s) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Untitled(s),
            )) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Titled(s),
            )) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
                MultiSelectEnumSchema::Untitled(s),
            )) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
                MultiSelectEnumSchema::Titled(s),
            )) => (&mut s.title, &mut s.description),
            PrimitiveSchemaDefinition::Enum(EnumSchema::LegacyTitled(s)) => {
                (&mut s.title, &mut s.description)
            }
        }
    }
}

/// A text field (`StringSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// A format the value must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl StringSchema {
    /// A text field.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the bounds of the length, in characters.
    pub fn with_length(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_length = min;
        self.max_length = max;
        self
    }

    /// Sets the format the value must have.
    pub fn with_format(mut self, format: StringFormat) -> Self {
        self.format = Some(format);
        self
    }
}

/// `StringSchema.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// An email address.
    Email,
    /// A URI.
    Uri,
    /// A date (`YYYY-MM-DD`).
    Date,
    /// A date and time (RFC 3339).
    DateTime,
}

/// A number field (`NumberSchema`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub kind: NumberType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest allowed value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub minimum: Option<f64>,
    /// The largest allowed value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub maximum: Option<f64>,
    /// The pre-filled value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub default: Option<f64>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl NumberSchema {
    /// A number field of the given kind.
    pub fn new(kind: NumberType) -> Self {
        NumberSchema {
            kind,
            ..Default::default()
        }
    }

    /// Sets the bounds.
    pub fn with_range(mut self, minimum: Option<f64>, maximum: Option<f64>) -> Self {
        self.minimum = minimum;
        self.maximum = maximum;
        self
    }
}

/// `NumberSchema.type`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// Integers only.
    Integer,
}

/// A checkbox (`BooleanSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub kind: tags::BooleanType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl BooleanSchema {
    /// A checkbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the pre-filled value.
    pub fn with_default(mut self, default: bool) -> Self {
        self.default = Some(default);
        self
    }
}

/// An option with a display title (the items of `oneOf` / `anyOf` in titled enum schemas).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EnumOption {
    /// The value submitted when the option is chosen.
    #[serde(rename = "const")]
    pub value: String,
    /// What the user sees.
    pub title: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl EnumOption {
    /// An option.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption {
            value: value.into(),
            title: title.into(),
            extra: Default::default(),
        }
    }
}

/// A single choice among plain options (`UntitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    #[serde(rename = "enum")]
    pub options: Vec<String>,
    /// The pre-selected option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UntitledSingleSelectEnumSchema {
    /// A choice among `options`.
    pub fn new(options: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledSingleSelectEnumSchema {
            options: options.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }
}

/// A single choice among titled options (`TitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<EnumOption>,
    /// The pre-selected option's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TitledSingleSelectEnumSchema {
    /// A choice among `(value, title)` options.
    pub fn new<V: Into<String>, T: Into<String>>(
        options: impl IntoIterator<Item = (V, T)>,
    ) -> Self {
        TitledSingleSelectEnumSchema {
            one_of: options
                .into_iter()
                .map(|(v, t)| EnumOption::new(v, t))
                .collect(),
            ..Default::default()
        }
    }
}

/// The `items` of an [`UntitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The options.
    #[serde(rename = "enum")]
    pub options: Vec<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Several choices among plain options (`UntitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: tags::ArrayType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: UntitledEnumItems,
    /// The pre-selected options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UntitledMultiSelectEnumSchema {
    /// Several choices among `options`.
    pub fn new(options: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledMultiSelectEnumSchema {
            items: UntitledEnumItems {
                kind: tags::StringType,
                options: options.into_iter().map(Into::into).collect(),
                extra: Default::default(),
            },
            ..Default::default()
        }
    }
}

/// The `items` of a [`TitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<EnumOption>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Several choices among titled options (`TitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: tags::ArrayType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: TitledEnumItems,
    /// The pre-selected option values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TitledMultiSelectEnumSchema {
    /// Several choices among `(value, title)` options.
    pub fn new<V: Into<String>, T: Into<String>>(
        options: impl IntoIterator<Item = (V, T)>,
    ) -> Self {
        TitledMultiSelectEnumSchema {
            items: TitledEnumItems {
                any_of: options
                    .into_iter()
                    .map(|(v, t)| EnumOption::new(v, t))
                    .collect(),
                extra: Default::default(),
            },
            ..Default::default()
        }
    }
}

/// A single choice with titles in a parallel `enumNames` array (`LegacyTitledEnumSchema`).
/// Deprecated in favour of [`TitledSingleSelectEnumSchema`]; still accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    #[serde(rename = "enum")]
    pub options: Vec<String>,
    /// Display names, parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The pre-selected option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl LegacyTitledEnumSchema {
    /// A choice among `options`, shown as `names` (parallel to `options`).
    pub fn new(
        options: impl IntoIterator<Item = impl Into<String>>,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        LegacyTitledEnumSchema {
            options: options.into_iter().map(Into::into).collect(),
            enum_names: Some(names.into_iter().map(Into::into).collect()),
            ..Default::default()
        }
    }
}

/// A single choice (`SingleSelectEnumSchema`). Deserializing: an object with `oneOf` is
/// [`Titled`](SingleSelectEnumSchema::Titled), otherwise
/// [`Untitled`](SingleSelectEnumSchema::Untitled).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SingleSelectEnumSchema {
    /// Plain options.
    Untitled(UntitledSingleSelectEnumSchema),
    /// Options with titles.
    Titled(TitledSingleSelectEnumSchema),
}

serialize_variants!(SingleSelectEnumSchema { Untitled, Titled });

impl<'de> Deserialize<'de> for SingleSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a single-select schema (an object)")?;
        if map.contains_key("oneOf") {
            from_object(map).map(SingleSelectEnumSchema::Titled)
        } else {
            from_object(map).map(SingleSelectEnumSchema::Untitled)
        }
    }
}

/// Several choices (`MultiSelectEnumSchema`). Deserializing: an object whose `items` has
/// `anyOf` is [`Titled`](MultiSelectEnumSchema::Titled), otherwise
/// [`Untitled`](MultiSelectEnumSchema::Untitled).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MultiSelectEnumSchema {
    /// Plain options.
    Untitled(UntitledMultiSelectEnumSchema),
    /// Options with titles.
    Titled(TitledMultiSelectEnumSchema),
}

serialize_variants!(MultiSelectEnumSchema { Untitled, Titled });

impl<'de> Deserialize<'de> for MultiSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a multi-select schema (an object)")?;
        let titled = map
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(|items| items.contains_key("anyOf"));
        if titled {
            from_object(map).map(MultiSelectEnumSchema::Titled)
        } else {
            from_object(map).map(MultiSelectEnumSchema::Untitled)
        }
    }
}

/// A choice among options (`EnumSchema`).
///
/// Deserializing: `"type": "array"` is [`MultiSelect`](EnumSchema::MultiSelect); a string
/// schema with `oneOf` is a titled [`SingleSelect`](EnumSchema::SingleSelect); one with
/// `enumNames` is [`LegacyTitled`](EnumSchema::LegacyTitled); one with only `enum` is an
/// untitled single select. (A legacy schema without `enumNames` is indistinguishable from an
/// untitled one and reads as the latter; both serialize identically.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EnumSchema {
    /// Pick one.
    SingleSelect(SingleSelectEnumSchema),
    /// Pick several.
    MultiSelect(MultiSelectEnumSchema),
    /// Pick one, titles in `enumNames` (deprecated).
    LegacyTitled(LegacyTitledEnumSchema),
}

serialize_variants!(EnumSchema {
    SingleSelect,
    MultiSelect,
    LegacyTitled
});

impl<'de> Deserialize<'de> for EnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "an enum schema (an object)")?;
        match str_member(&map, "type") {
            Some("array") => from_object(map).map(EnumSchema::MultiSelect),
            Some("string") if map.contains_key("oneOf") => {
                from_object(map).map(EnumSchema::SingleSelect)
            }
            Some("string") if map.contains_key("enumNames") => {
                from_object(map).map(EnumSchema::LegacyTitled)
            }
            Some("string") if map.contains_key("enum") => {
                from_object(map).map(EnumSchema::SingleSelect)
            }
            Some("string") => Err(de::Error::missing_field("enum")),
            Some(other) => Err(de::Error::unknown_variant(other, &["string", "array"])),
            None => Err(de::Error::missing_field("type")),
        }
    }
}

impl From<StringSchema> for PrimitiveSchemaDefinition {
    fn from(s: StringSchema) -> Self {
        PrimitiveSchemaDefinition::String(s)
    }
}

impl From<NumberSchema> for PrimitiveSchemaDefinition {
    fn from(s: NumberSchema) -> Self {
        PrimitiveSchemaDefinition::Number(s)
    }
}

impl From<BooleanSchema> for PrimitiveSchemaDefinition {
    fn from(s: BooleanSchema) -> Self {
        PrimitiveSchemaDefinition::Boolean(s)
    }
}

impl From<EnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: EnumSchema) -> Self {
        PrimitiveSchemaDefinition::Enum(s)
    }
}

impl From<UntitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledSingleSelectEnumSchema) -> Self {
        EnumSchema::SingleSelect(SingleSelectEnumSchema::Untitled(s)).into()
    }
}

impl From<TitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledSingleSelectEnumSchema) -> Self {
        EnumSchema::SingleSelect(SingleSelectEnumSchema::Titled(s)).into()
    }
}

impl From<UntitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledMultiSelectEnumSchema) -> Self {
        EnumSchema::MultiSelect(MultiSelectEnumSchema::Untitled(s)).into()
    }
}

impl From<TitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledMultiSelectEnumSchema) -> Self {
        EnumSchema::MultiSelect(MultiSelectEnumSchema::Titled(s)).into()
    }
}

impl From<LegacyTitledEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: LegacyTitledEnumSchema) -> Self {
        EnumSchema::LegacyTitled(s).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(v: Value) -> PrimitiveSchemaDefinition {
        let f: PrimitiveSchemaDefinition = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&f).unwrap(), v, "round trip");
        f
    }

    #[test]
    fn field_schemas_pick_their_variant_deterministically() {
        assert!(matches!(
            field(json!({"type": "string", "format": "email"})),
            PrimitiveSchemaDefinition::String(_)
        ));
        assert!(
            matches!(field(json!({"type": "integer", "minimum": 1})), PrimitiveSchemaDefinition::Number(n) if n.kind == NumberType::Integer)
        );
        assert!(matches!(
            field(json!({"type": "number", "maximum": 2.5})),
            PrimitiveSchemaDefinition::Number(_)
        ));
        assert!(matches!(
            field(json!({"type": "boolean", "default": true})),
            PrimitiveSchemaDefinition::Boolean(_)
        ));
        assert!(matches!(
            field(json!({"type": "string", "enum": ["a", "b"]})),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Untitled(_)
            ))
        ));
        assert!(matches!(
            field(json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]})),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Titled(_)
            ))
        ));
        assert!(matches!(
            field(json!({"type": "string", "enum": ["a"], "enumNames": ["A"]})),
            PrimitiveSchemaDefinition::Enum(EnumSchema::LegacyTitled(_))
        ));
        assert!(matches!(
            field(json!({"type": "array", "items": {"type": "string", "enum": ["a"]}})),
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
                MultiSelectEnumSchema::Untitled(_)
            ))
        ));
        assert!(matches!(
            field(
                json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "default": ["a"]})
            ),
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
                MultiSelectEnumSchema::Titled(_)
            ))
        ));
        for bad in [
            json!({"type": "object"}),
            json!({"title": "x"}),
            json!({"type": "string", "minLength": "3"}),
            json!("string"),
        ] {
            assert!(
                serde_json::from_value::<PrimitiveSchemaDefinition>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn integral_numbers_stay_integers() {
        let f = PrimitiveSchemaDefinition::Number(
            NumberSchema::new(NumberType::Integer).with_range(Some(0.0), Some(1e300)),
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"type":"integer","minimum":0,"maximum":1e+300}"#
        );
    }

    #[test]
    fn params_pick_form_or_url_by_mode() {
        let p: ElicitRequestParams = serde_json::from_value(json!({
            "message": "m", "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        assert!(matches!(p, ElicitRequestParams::Form(ref f) if f.mode.is_none()));
        let p: ElicitRequestParams =
            serde_json::from_value(json!({"mode": "url", "message": "m", "url": "https://x"}))
                .unwrap();
        assert!(p.is_url());
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "voice", "message": "m"}))
                .is_err()
        );
        // URL mode needs its url.
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "url", "message": "m"}))
                .is_err()
        );
    }

    #[test]
    fn form_builder() {
        let schema = RequestedSchema::new()
            .required(
                "name",
                PrimitiveSchemaDefinition::string().with_title("Name"),
            )
            .optional(
                "colors",
                PrimitiveSchemaDefinition::multi_select(["red", "green"]),
            );
        let p = ElicitRequestFormParams::new("Who are you?", schema);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"mode": "form", "message": "Who are you?", "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "colors": {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}}
                },
                "required": ["name"]
            }})
        );
    }

    #[test]
    fn form_fields_keep_their_order() {
        let text = r#"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"number"}}}"#;
        let schema: RequestedSchema = serde_json::from_str(text).unwrap();
        assert_eq!(
            schema.properties.names().collect::<Vec<_>>(),
            ["zeta", "alpha", "mid"]
        );
        assert_eq!(serde_json::to_string(&schema).unwrap(), text);
        assert!(matches!(
            schema.properties.get("alpha"),
            Some(PrimitiveSchemaDefinition::Boolean(_))
        ));
        assert!(!schema.is_required("alpha"));
        let mut props = schema.properties;
        assert!(
            props
                .insert("zeta", PrimitiveSchemaDefinition::integer())
                .is_some()
        );
        assert_eq!(props.names().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
        assert!(
            serde_json::from_str::<RequestedSchema>(r#"{"type":"object","properties":[]}"#)
                .is_err()
        );
    }

    #[test]
    fn elicit_content_values() {
        let r: ElicitResult = serde_json::from_value(json!({
            "action": "accept",
            "content": {"s": "x", "i": 30, "f": 2.5, "b": false, "a": ["r", "g"]}
        }))
        .unwrap();
        let c = r.content.as_ref().unwrap();
        assert_eq!(c["s"].as_str(), Some("x"));
        assert_eq!(c["i"].as_i64(), Some(30));
        assert_eq!(c["f"].as_f64(), Some(2.5));
        assert_eq!(c["b"].as_bool(), Some(false));
        assert_eq!(c["a"].as_string_array().unwrap(), ["r", "g"]);
        // Integers stay integers on the way out.
        assert_eq!(serde_json::to_value(&r).unwrap()["content"]["i"], json!(30));
        for bad in [
            json!({"x": null}),
            json!({"x": {"y": 1}}),
            json!({"x": [1]}),
        ] {
            let v = json!({"action": "accept", "content": bad});
            assert!(serde_json::from_value::<ElicitResult>(v).is_err(), "{bad}");
        }
        assert!(serde_json::from_value::<ElicitResult>(json!({"action": "maybe"})).is_err());
    }

    #[test]
    fn elicit_result_constructors() {
        assert_eq!(
            serde_json::to_value(ElicitResult::accept([
                ("n", ElicitValue::from(1)),
                ("b", true.into())
            ]))
            .unwrap(),
            json!({"action": "accept", "content": {"n": 1, "b": true}})
        );
        assert_eq!(
            serde_json::to_value(ElicitResult::decline()).unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            serde_json::to_value(ElicitResult::cancel()).unwrap(),
            json!({"action": "cancel"})
        );
        assert_eq!(
            serde_json::to_value(ElicitResult::accept_url()).unwrap(),
            json!({"action": "accept"})
        );
        let r = ElicitResult::accept_json(json!({"region": "eu"})).unwrap();
        #[derive(serde::Deserialize)]
        struct Region {
            region: String,
        }
        assert_eq!(r.content_as::<Region>().unwrap().unwrap().region, "eu");
        assert!(ElicitResult::accept_json(json!([1])).is_err());
    }
}
