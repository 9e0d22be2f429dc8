//! Questions as values: the key, what the user is asked, and how the answer is read.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use arctern_types::elicitation::{
    ElicitAction, ElicitRequestParams, ElicitValue, EnumSchema, MultiSelectEnumSchema,
    PrimitiveSchemaDefinition, RequestedSchema, SingleSelectEnumSchema,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
};
use arctern_types::mrtr::{InputRequest, InputRequestKind, InputResponse};
use arctern_types::roots::Root;
use arctern_types::sampling::{
    CreateMessageRequestParams, CreateMessageResult, ModelPreferences, SamplingMessage,
};
use serde::de::DeserializeOwned;

use super::schema::form_schema_for;

/// The most tokens [`Ask::sample`] lets the model generate unless told otherwise.
pub const DEFAULT_SAMPLE_MAX_TOKENS: u64 = 1024;

/// One question to the user (or the user's client), answered with an `A`.
///
/// A question is a value: its key in `inputRequests`, what is asked, and how the answer is
/// read. Build it where the handler knows what to ask — choices computed at run time
/// included — and hand it to [`Questions`](super::Questions), or return it from
/// [`Question::ask`](super::Question::ask) for the parameter form.
///
/// | constructor | the user sees | answer |
/// |---|---|---|
/// | [`form`](Ask::form) | a form with the fields of `T` | `T` |
/// | [`text`](Ask::text) | one text field | `String` |
/// | [`choice`](Ask::choice) | one choice among options | `String` (the option's value) |
/// | [`choices`](Ask::choices) | several choices among options | `Vec<String>` |
/// | [`confirm`](Ask::confirm) | a yes/no checkbox | `bool` |
/// | [`url`](Ask::url) | a link to open out of band | `()` (consent) |
/// | [`sample`](Ask::sample), [`sampling`](Ask::sampling) | (an LLM completion) | [`CreateMessageResult`] |
/// | [`roots`](Ask::roots) | (the client's roots) | `Vec<Root>` |
///
/// Single-field questions (`text`, `choice`, `choices`, `confirm`) name their one field after
/// the key. An answer that does not fit — a choice that was not offered, a field missing or
/// of the wrong type, a value out of bounds — is refused before the handler sees it, and
/// the question is asked again with the reason added to its message.
///
/// ```
/// use arctern::server::mrtr::Ask;
///
/// let hotels = [("h-17", "Hotel Avenida"), ("h-42", "Casa do Rio")];
/// let hotel: Ask<String> = Ask::choice("hotel", "Which hotel in Lisbon?", hotels);
/// assert_eq!(hotel.key(), "hotel");
/// ```
pub struct Ask<A> {
    key: Cow<'static, str>,
    question: Result<InputRequest, Arc<str>>,
    read: Read<A>,
}

/// Reads the answer to a question under its key, once it is known to fit; `Err` says why
/// it does not.
pub(crate) type Read<A> = fn(&str, &InputResponse) -> Result<A, String>;

impl<A> Clone for Ask<A> {
    fn clone(&self) -> Self {
        Ask {
            key: self.key.clone(),
            question: self.question.clone(),
            read: self.read,
        }
    }
}

impl<A> fmt::Debug for Ask<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask")
            .field("key", &self.key)
            .field("question", &self.question)
            .finish_non_exhaustive()
    }
}

impl<A> PartialEq for Ask<A> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.question == other.question
    }
}

/// One option of a choice: the value the answer carries, and the title the user sees (the
/// value itself when there is none). Converts from a value (`"s"`, `String`) or a
/// `(value, title)` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    value: String,
    title: Option<String>,
}

impl Choice {
    /// An option with a title.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        Choice {
            value: value.into(),
            title: Some(title.into()),
        }
    }

    /// The value the answer carries when this option is chosen.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl From<&str> for Choice {
    fn from(value: &str) -> Self {
        Choice {
            value: value.to_owned(),
            title: None,
        }
    }
}

impl From<String> for Choice {
    fn from(value: String) -> Self {
        Choice { value, title: None }
    }
}

impl From<&String> for Choice {
    fn from(value: &String) -> Self {
        Choice::from(value.as_str())
    }
}

impl<V: Into<String>, T: Into<String>> From<(V, T)> for Choice {
    fn from((value, title): (V, T)) -> Self {
        Choice::new(value, title)
    }
}

impl<A> Ask<A> {
    fn new(
        key: impl Into<Cow<'static, str>>,
        question: Result<InputRequest, Arc<str>>,
        read: Read<A>,
    ) -> Self {
        Ask {
            key: key.into(),
            question,
            read,
        }
    }

    /// The key of the question in `inputRequests` (and of its answer in `inputResponses`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The request that goes to the client, or why the question cannot be asked (a
    /// [`form`](Ask::form) whose type is not a flat struct, a choice without options).
    pub fn request(&self) -> Result<&InputRequest, &str> {
        self.question.as_ref().map_err(|why| &**why)
    }

    pub(crate) fn into_parts(self) -> (Cow<'static, str>, Result<InputRequest, Arc<str>>, Read<A>) {
        (self.key, self.question, self.read)
    }

    /// A form of one required field named after the key (or why it cannot be asked).
    fn single_field(
        key: Cow<'static, str>,
        message: impl Into<String>,
        field: Result<PrimitiveSchemaDefinition, Arc<str>>,
        read: Read<A>,
    ) -> Self {
        let question = field.map(|field| {
            let schema = RequestedSchema::new().required(key.as_ref(), field);
            InputRequest::elicit_form(message, schema)
        });
        Ask::new(key, question, read)
    }

    /// Changes the one field of a single-field form (named after the key).
    fn map_field(mut self, f: impl FnOnce(&mut PrimitiveSchemaDefinition)) -> Self {
        if let Ok(InputRequest::Elicit(e)) = &mut self.question
            && let ElicitRequestParams::Form(form) = &mut e.params
            && let Some(field) = form.requested_schema.properties.get_mut(&self.key)
        {
            f(field);
        }
        self
    }

    fn map_sampling(mut self, f: impl FnOnce(&mut CreateMessageRequestParams)) -> Self {
        if let Ok(InputRequest::CreateMessage(m)) = &mut self.question {
            f(&mut m.params);
        }
        self
    }
}

impl<T: DeserializeOwned + schemars::JsonSchema + 'static> Ask<T> {
    /// A form with the fields of `T` (its JSON Schema must be a flat object of strings,
    /// numbers, booleans and enums; doc comments become field descriptions).
    pub fn form(key: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let question = form_schema_for::<T>()
            .map(|schema| InputRequest::elicit_form(message, schema))
            .map_err(|why| {
                Arc::from(format!(
                    "{} cannot be asked in a form: {why}",
                    type_name::<T>()
                ))
            });
        Ask::new(key, question, read_form::<T>)
    }
}

impl Ask<String> {
    /// One text field, named after the key.
    pub fn text(key: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let field = Ok(PrimitiveSchemaDefinition::string());
        Ask::single_field(key.into(), message, field, read_text)
    }

    /// One choice among `options`, computed whenever the question is built; the answer is
    /// the chosen option's value. Options are values or `(value, title)` pairs.
    pub fn choice<O: Into<Choice>>(
        key: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        options: impl IntoIterator<Item = O>,
    ) -> Self {
        let key = key.into();
        let field = options_field(&key, options, Select::One);
        Ask::single_field(key, message, field, read_text)
    }

    /// Pre-selects an option (or pre-fills the text field).
    pub fn default_value(self, value: impl Into<String>) -> Self {
        let value = value.into();
        self.map_field(|field| match field {
            PrimitiveSchemaDefinition::String(s) => s.default = Some(value),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Untitled(s),
            )) => s.default = Some(value),
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(
                SingleSelectEnumSchema::Titled(s),
            )) => s.default = Some(value),
            _ => {}
        })
    }
}

impl Ask<Vec<String>> {
    /// Several choices among `options`; the answer is the chosen options' values. Bound the
    /// number with [`min_selected`](Self::min_selected) and
    /// [`max_selected`](Self::max_selected).
    pub fn choices<O: Into<Choice>>(
        key: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        options: impl IntoIterator<Item = O>,
    ) -> Self {
        let key = key.into();
        let field = options_field(&key, options, Select::Many);
        Ask::single_field(key, message, field, read_choices)
    }

    /// The fewest options the user must select.
    pub fn min_selected(self, count: u64) -> Self {
        self.map_field(|field| set_items(field, |min, _| *min = Some(count)))
    }

    /// The most options the user may select.
    pub fn max_selected(self, count: u64) -> Self {
        self.map_field(|field| set_items(field, |_, max| *max = Some(count)))
    }
}

impl Ask<bool> {
    /// A yes/no confirmation: one checkbox, named after the key.
    pub fn confirm(key: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let field = Ok(PrimitiveSchemaDefinition::boolean());
        Ask::single_field(key.into(), message, field, read_confirm)
    }
}

impl Ask<()> {
    /// A URL the user opens out of band (to sign in, pay, authorize...). Accepting means the
    /// user consented to open it; the server learns the outcome its own way and may ask again.
    pub fn url(
        key: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        Ask::new(
            key,
            Ok(InputRequest::elicit_url(message, url)),
            read_consent,
        )
    }
}

impl Ask<CreateMessageResult> {
    /// An LLM completion of `prompt` (one user message), at most
    /// [`DEFAULT_SAMPLE_MAX_TOKENS`] tokens unless [`max_tokens`](Self::max_tokens) says
    /// otherwise.
    pub fn sample(key: impl Into<Cow<'static, str>>, prompt: impl Into<String>) -> Self {
        let params = CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text(prompt)],
            DEFAULT_SAMPLE_MAX_TOKENS,
        );
        Ask::sampling(key, params)
    }

    /// An LLM completion with full control of the request (several messages, tools,
    /// temperature, stop sequences...).
    pub fn sampling(key: impl Into<Cow<'static, str>>, params: CreateMessageRequestParams) -> Self {
        Ask::new(key, Ok(InputRequest::sample(params)), read_sample)
    }

    /// The most tokens to generate.
    pub fn max_tokens(self, tokens: u64) -> Self {
        self.map_sampling(|p| p.max_tokens = tokens)
    }

    /// A system prompt the client may use.
    pub fn system(self, prompt: impl Into<String>) -> Self {
        self.map_sampling(|p| p.system_prompt = Some(prompt.into()))
    }

    /// Which model the server would prefer; the client decides.
    pub fn model_preferences(self, preferences: ModelPreferences) -> Self {
        self.map_sampling(|p| p.model_preferences = Some(preferences))
    }
}

impl Ask<Vec<Root>> {
    /// The client's roots (`roots/list`). Keyed like every question, so a call can ask for
    /// them more than once (before and after the user changes them, say).
    pub fn roots(key: impl Into<Cow<'static, str>>) -> Self {
        Ask::new(key, Ok(InputRequest::list_roots()), read_roots)
    }
}

fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

fn titled(option: Choice) -> (String, String) {
    let title = option.title.unwrap_or_else(|| option.value.clone());
    (option.value, title)
}

/// How many options a choice takes.
#[derive(Clone, Copy)]
enum Select {
    One,
    Many,
}

/// The field of a choice among `options`: titled when any option has a title, so the user
/// sees every title; an empty list is an error, since nothing could be answered.
fn options_field<O: Into<Choice>>(
    key: &str,
    options: impl IntoIterator<Item = O>,
    select: Select,
) -> Result<PrimitiveSchemaDefinition, Arc<str>> {
    let options: Vec<Choice> = options.into_iter().map(Into::into).collect();
    if options.is_empty() {
        return Err(Arc::from(format!("the choice {key:?} offers no options")));
    }
    Ok(if options.iter().any(|o| o.title.is_some()) {
        let options: Vec<(String, String)> = options.into_iter().map(titled).collect();
        match select {
            Select::One => TitledSingleSelectEnumSchema::new(options).into(),
            Select::Many => TitledMultiSelectEnumSchema::new(options).into(),
        }
    } else {
        let values: Vec<String> = options.into_iter().map(|o| o.value).collect();
        match select {
            Select::One => UntitledSingleSelectEnumSchema::new(values).into(),
            Select::Many => UntitledMultiSelectEnumSchema::new(values).into(),
        }
    })
}

fn set_items(
    field: &mut PrimitiveSchemaDefinition,
    f: impl FnOnce(&mut Option<u64>, &mut Option<u64>),
) {
    match field {
        PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
            MultiSelectEnumSchema::Untitled(s),
        )) => f(&mut s.min_items, &mut s.max_items),
        PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(
            MultiSelectEnumSchema::Titled(s),
        )) => f(&mut s.min_items, &mut s.max_items),
        _ => {}
    }
}

/// The accepted content of a form answer (the caller has checked the action).
fn accepted_field<'a>(key: &str, response: &'a InputResponse) -> Result<&'a ElicitValue, String> {
    response
        .as_elicit()
        .and_then(|e| e.content.as_ref())
        .and_then(|c| c.get(key))
        .ok_or_else(|| format!("{key}: a value is required"))
}

fn read_form<T: DeserializeOwned>(_key: &str, response: &InputResponse) -> Result<T, String> {
    let content = response.as_elicit().and_then(|e| e.content.as_ref());
    let value = match content {
        Some(c) => serde_json::to_value(c).map_err(|e| e.to_string())?,
        None => serde_json::Value::Object(Default::default()),
    };
    T::deserialize(&value).map_err(|e| e.to_string())
}

fn read_text(key: &str, response: &InputResponse) -> Result<String, String> {
    accepted_field(key, response)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{key}: must be text"))
}

fn read_choices(key: &str, response: &InputResponse) -> Result<Vec<String>, String> {
    accepted_field(key, response)?
        .as_string_array()
        .map(<[String]>::to_vec)
        .ok_or_else(|| format!("{key}: must be a list of options"))
}

fn read_confirm(key: &str, response: &InputResponse) -> Result<bool, String> {
    accepted_field(key, response)?
        .as_bool()
        .ok_or_else(|| format!("{key}: must be true or false"))
}

fn read_consent(_key: &str, response: &InputResponse) -> Result<(), String> {
    match response.as_elicit() {
        Some(e) if e.action == ElicitAction::Accept => Ok(()),
        _ => Err("the answer is not a consent".into()),
    }
}

fn read_sample(_key: &str, response: &InputResponse) -> Result<CreateMessageResult, String> {
    response
        .as_create_message()
        .cloned()
        .ok_or_else(|| "the answer is not a completion".into())
}

fn read_roots(_key: &str, response: &InputResponse) -> Result<Vec<Root>, String> {
    response
        .as_list_roots()
        .map(|list| list.roots.clone())
        .ok_or_else(|| "the answer is not a list of roots".into())
}

/// The question asked again after its answer was refused: the reason follows the message
/// (only elicitations have a message a person reads).
pub(crate) fn with_reason(question: &InputRequest, reason: &str) -> InputRequest {
    let mut question = question.clone();
    if let InputRequest::Elicit(e) = &mut question {
        let message = match &mut e.params {
            ElicitRequestParams::Form(f) => &mut f.message,
            ElicitRequestParams::Url(u) => &mut u.message,
            _ => return question,
        };
        message.push_str("\n\n");
        message.push_str(reason);
    }
    question
}

/// Checks an answer against its question before it is read: the kind, and for a form the
/// fields against the schema that was asked.
pub(crate) fn check(question: &InputRequest, response: &InputResponse) -> Result<(), String> {
    match (question, response) {
        (InputRequest::Elicit(e), InputResponse::Elicit(answer)) => match &e.params {
            ElicitRequestParams::Form(form) if answer.action == ElicitAction::Accept => form
                .requested_schema
                .check(answer.content.as_ref())
                .map_err(|e| e.to_string()),
            _ => Ok(()),
        },
        (InputRequest::CreateMessage(_), InputResponse::CreateMessage(_))
        | (InputRequest::ListRoots(_), InputResponse::ListRoots(_)) => Ok(()),
        (q, _) => Err(format!(
            "the answer is not {}",
            match q.kind() {
                InputRequestKind::Elicitation => "an elicitation result",
                InputRequestKind::Sampling => "a completion",
                InputRequestKind::Roots => "a list of roots",
                _ => "the answer the question asks for",
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one field of a single-field question.
    fn field<A>(ask: &Ask<A>) -> &PrimitiveSchemaDefinition {
        match ask.request() {
            Ok(InputRequest::Elicit(e)) => match &e.params {
                ElicitRequestParams::Form(form) => {
                    form.requested_schema.properties.get(ask.key()).unwrap()
                }
                _ => panic!("not a form"),
            },
            _ => panic!("not an elicitation"),
        }
    }

    /// Which select schema a field is.
    fn select(field: &PrimitiveSchemaDefinition) -> &'static str {
        match field {
            PrimitiveSchemaDefinition::Enum(EnumSchema::SingleSelect(s)) => match s {
                SingleSelectEnumSchema::Untitled(_) => "one, untitled",
                SingleSelectEnumSchema::Titled(_) => "one, titled",
            },
            PrimitiveSchemaDefinition::Enum(EnumSchema::MultiSelect(s)) => match s {
                MultiSelectEnumSchema::Untitled(_) => "many, untitled",
                MultiSelectEnumSchema::Titled(_) => "many, titled",
            },
            _ => "not a select",
        }
    }

    #[test]
    fn choices_are_single_or_multi_select_titled_when_any_option_has_a_title() {
        let untitled = ["a", "b"];
        let titled = [("a", "A"), ("b", "B")];
        assert_eq!(
            select(field(&Ask::choice("k", "m", untitled))),
            "one, untitled"
        );
        assert_eq!(select(field(&Ask::choice("k", "m", titled))), "one, titled");
        assert_eq!(
            select(field(&Ask::choices("k", "m", untitled))),
            "many, untitled"
        );
        assert_eq!(
            select(field(&Ask::choices("k", "m", titled))),
            "many, titled"
        );
        let empty: [&str; 0] = [];
        assert_eq!(
            Ask::choices("k", "m", empty).request().unwrap_err(),
            "the choice \"k\" offers no options"
        );
    }
}
