//! Multi round-trip requests (MRTR).
//!
//! `tools/call`, `prompts/get` and `resources/read` may answer with an
//! [`InputRequiredResult`] (`"resultType": "input_required"`) holding [`InputRequests`] (what
//! the server needs from the client: an elicitation, a sampling completion, the roots) and/or
//! an opaque `requestState`. The client obtains the answers and retries the same method with a
//! new JSON-RPC id, carrying [`InputResponses`] under the same keys and the `requestState`
//! echoed byte for byte ([`InputResponseRequestParams`]).
//!
//! [`InputRequest`] is tagged by `method`. [`InputResponse`] is **untagged** on the wire: a
//! server should decode each answer by the kind of the request it issued under the same key
//! ([`InputResponse::decode_for`], [`InputResponse::into_kind`]); the plain `Deserialize`
//! impl is a best-effort guess that never fails (see [`InputResponse`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::capabilities::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
};
use crate::elicitation::{
    ElicitRequest, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, RequestedSchema,
};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::result::ResultType;
use crate::roots::{ListRootsRequest, ListRootsResult};
use crate::sampling::{CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult};
use crate::tags;
use crate::util::{buffer, buffer_object, from_object, serialize_variants, str_member};

/// The three kinds of input a server may request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum InputRequestKind {
    /// `elicitation/create`: ask the user.
    Elicitation,
    /// `sampling/createMessage`: ask the client's LLM.
    Sampling,
    /// `roots/list`: ask for the client's roots.
    Roots,
}

impl InputRequestKind {
    /// Every kind.
    pub const ALL: [InputRequestKind; 3] = [
        InputRequestKind::Elicitation,
        InputRequestKind::Sampling,
        InputRequestKind::Roots,
    ];

    /// The method name of requests of this kind.
    pub const fn method(self) -> &'static str {
        match self {
            InputRequestKind::Elicitation => tags::ElicitationCreate::VALUE,
            InputRequestKind::Sampling => tags::SamplingCreateMessage::VALUE,
            InputRequestKind::Roots => tags::RootsList::VALUE,
        }
    }

    /// The kind of a method name, if it is one of the three.
    pub fn from_method(method: &str) -> Option<Self> {
        InputRequestKind::ALL
            .into_iter()
            .find(|k| k.method() == method)
    }
}

impl fmt::Display for InputRequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method())
    }
}

/// One thing a server needs from the client (`InputRequest`), tagged by `method`.
///
/// Deserializing reads `method` first: `elicitation/create`, `sampling/createMessage` and
/// `roots/list` decode the matching request; any other method is rejected (no other request
/// may be smuggled into `inputRequests`).
// Wire data held briefly; boxing the large variant would only make matching clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequest),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequest),
    /// `roots/list`.
    ListRoots(ListRootsRequest),
}

serialize_variants!(InputRequest {
    Elicit,
    CreateMessage,
    ListRoots
});

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "an input request (an object)")?;
        match str_member(&map, "method").and_then(InputRequestKind::from_method) {
            Some(InputRequestKind::Elicitation) => from_object(map).map(InputRequest::Elicit),
            Some(InputRequestKind::Sampling) => from_object(map).map(InputRequest::CreateMessage),
            Some(InputRequestKind::Roots) => from_object(map).map(InputRequest::ListRoots),
            None => match str_member(&map, "method") {
                Some(other) => Err(serde::de::Error::unknown_variant(
                    other,
                    &[
                        tags::ElicitationCreate::VALUE,
                        tags::SamplingCreateMessage::VALUE,
                        tags::RootsList::VALUE,
                    ],
                )),
                None => Err(serde::de::Error::missing_field("method")),
            },
        }
    }
}

impl InputRequest {
    /// A form-mode elicitation asking `message`, answered in the shape of `schema`.
    pub fn elicit_form(message: impl Into<String>, schema: RequestedSchema) -> Self {
        InputRequest::Elicit(ElicitRequest::new(ElicitRequestFormParams::new(
            message, schema,
        )))
    }

    /// A URL-mode elicitation sending the user to `url`.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        InputRequest::Elicit(ElicitRequest::new(ElicitRequestUrlParams::new(
            message, url,
        )))
    }

    /// A sampling request.
    pub fn sample(params: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage(CreateMessageRequest::new(params))
    }

    /// A roots request.
    pub fn list_roots() -> Self {
        InputRequest::ListRoots(ListRootsRequest::new())
    }

    /// The kind of request.
    pub fn kind(&self) -> InputRequestKind {
        match self {
            InputRequest::Elicit(_) => InputRequestKind::Elicitation,
            InputRequest::CreateMessage(_) => InputRequestKind::Sampling,
            InputRequest::ListRoots(_) => InputRequestKind::Roots,
        }
    }

    /// The method name.
    pub fn method(&self) -> &'static str {
        self.kind().method()
    }

    /// The client capabilities this request needs: `{"elicitation":{}}` for a form,
    /// `{"elicitation":{"url":{}}}` for a URL, `{"sampling":{}}` (with `"tools":{}` when the
    /// request offers tools) and `{"roots":{}}`. Suitable as `data.requiredCapabilities` of a
    /// `-32021` error.
    pub fn required_capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        match self {
            InputRequest::Elicit(e) => {
                let mut elicitation = ElicitationCapability::default();
                if e.params.is_url() {
                    elicitation.url = Some(JsonObject::new());
                }
                caps.elicitation = Some(elicitation);
            }
            InputRequest::CreateMessage(s) => {
                let mut sampling = SamplingCapability::default();
                if s.params.uses_tools() {
                    sampling.tools = Some(JsonObject::new());
                }
                caps.sampling = Some(sampling);
            }
            InputRequest::ListRoots(_) => caps.roots = Some(RootsCapability::default()),
        }
        caps
    }

    /// Whether a client declaring `capabilities` supports this request (the server must not
    /// send it otherwise).
    pub fn is_supported_by(&self, capabilities: &ClientCapabilities) -> bool {
        match self {
            InputRequest::Elicit(e) => match e.params {
                ElicitRequestParams::Form(_) => capabilities.supports_elicitation_form(),
                ElicitRequestParams::Url(_) => capabilities.supports_elicitation_url(),
            },
            InputRequest::CreateMessage(s) => {
                capabilities.supports_sampling()
                    && (!s.params.uses_tools() || capabilities.supports_sampling_tools())
            }
            InputRequest::ListRoots(_) => capabilities.supports_roots(),
        }
    }
}

impl From<ElicitRequest> for InputRequest {
    fn from(r: ElicitRequest) -> Self {
        InputRequest::Elicit(r)
    }
}

impl From<CreateMessageRequest> for InputRequest {
    fn from(r: CreateMessageRequest) -> Self {
        InputRequest::CreateMessage(r)
    }
}

impl From<ListRootsRequest> for InputRequest {
    fn from(r: ListRootsRequest) -> Self {
        InputRequest::ListRoots(r)
    }
}

/// The input requests of one round, by server-chosen key (`InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The answers of one round, by the keys of the requests they answer (`InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// The client's answer to one [`InputRequest`] (`InputResponse`).
///
/// The union is untagged on the wire, so the reliable way to read an answer is by the kind of
/// request that was asked under its key: [`InputResponse::decode_for`] for a raw JSON value, or
/// [`InputResponse::into_kind`] for an already decoded one.
///
/// The `Deserialize` impl is a best-effort guess that never fails, so that one malformed
/// answer (perhaps under a key the server does not need) cannot make a whole request
/// unreadable. It looks at the members that tell the three shapes apart, in this order:
///
/// 1. an object with `action` is decoded as an [`ElicitResult`];
/// 2. else an object with `roots` as a [`ListRootsResult`];
/// 3. else an object with `model`, `role` or `content` as a [`CreateMessageResult`];
///
/// and anything that does not decode that way (not an object, no telling member, or invalid
/// members) is kept verbatim as [`InputResponse::Unrecognized`]. Nothing is lost: every
/// variant serializes back to what was received.
// Wire data, usually held briefly in a small map; boxing the sampling variant would only
// make matching clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputResponse {
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// A value that is none of the three shapes, kept as received. Treat it as invalid input
    /// (a JSON-RPC error or a fresh `input_required`), never as an answer.
    Unrecognized(Value),
}

serialize_variants!(InputResponse {
    Elicit,
    CreateMessage,
    ListRoots,
    Unrecognized
});

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(InputResponse::guess(buffer(d)?))
    }
}

impl InputResponse {
    /// The best-effort classification described on the type.
    pub fn guess(value: Value) -> Self {
        let kind = match &value {
            Value::Object(map) if map.contains_key("action") => InputRequestKind::Elicitation,
            Value::Object(map) if map.contains_key("roots") => InputRequestKind::Roots,
            Value::Object(map)
                if map.contains_key("model")
                    || map.contains_key("role")
                    || map.contains_key("content") =>
            {
                InputRequestKind::Sampling
            }
            _ => return InputResponse::Unrecognized(value),
        };
        Self::decode_ref(kind, &value).unwrap_or(InputResponse::Unrecognized(value))
    }

    /// Decodes `value` as the answer to a request of `kind`; fails if it does not have that
    /// shape.
    pub fn decode_for(kind: InputRequestKind, value: Value) -> Result<Self, serde_json::Error> {
        Self::decode_ref(kind, &value)
    }

    fn decode_ref(kind: InputRequestKind, value: &Value) -> Result<Self, serde_json::Error> {
        match kind {
            InputRequestKind::Elicitation => {
                ElicitResult::deserialize(value).map(InputResponse::Elicit)
            }
            InputRequestKind::Sampling => {
                CreateMessageResult::deserialize(value).map(InputResponse::CreateMessage)
            }
            InputRequestKind::Roots => {
                ListRootsResult::deserialize(value).map(InputResponse::ListRoots)
            }
        }
    }

    /// This answer read as the answer to a request of `kind`: itself if the guess already
    /// agrees, else its JSON decoded for `kind` (which fails if it does not have that shape).
    pub fn into_kind(self, kind: InputRequestKind) -> Result<Self, serde_json::Error> {
        if self.kind() == Some(kind) {
            return Ok(self);
        }
        let value = serde_json::to_value(&self)?;
        Self::decode_for(kind, value)
    }

    /// The kind this answer was read as; `None` for [`InputResponse::Unrecognized`].
    pub fn kind(&self) -> Option<InputRequestKind> {
        match self {
            InputResponse::Elicit(_) => Some(InputRequestKind::Elicitation),
            InputResponse::CreateMessage(_) => Some(InputRequestKind::Sampling),
            InputResponse::ListRoots(_) => Some(InputRequestKind::Roots),
            InputResponse::Unrecognized(_) => None,
        }
    }

    /// The elicitation answer, if this is one.
    pub fn as_elicit(&self) -> Option<&ElicitResult> {
        match self {
            InputResponse::Elicit(r) => Some(r),
            _ => None,
        }
    }

    /// The sampling answer, if this is one.
    pub fn as_create_message(&self) -> Option<&CreateMessageResult> {
        match self {
            InputResponse::CreateMessage(r) => Some(r),
            _ => None,
        }
    }

    /// The roots answer, if this is one.
    pub fn as_list_roots(&self) -> Option<&ListRootsResult> {
        match self {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        }
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(r: ElicitResult) -> Self {
        InputResponse::Elicit(r)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(r: CreateMessageResult) -> Self {
        InputResponse::CreateMessage(r)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(r: ListRootsResult) -> Self {
        InputResponse::ListRoots(r)
    }
}

/// The interim result of a multi round-trip request (`InputRequiredResult`,
/// `"resultType": "input_required"`). At least one of `inputRequests` and `requestState` must
/// be present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputRequiredResult {
    /// `"input_required"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What the client must obtain before retrying, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client must echo exactly on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        Self::new()
    }
}

impl InputRequiredResult {
    /// An empty `input_required` result; add requests and/or state before sending it.
    pub fn new() -> Self {
        InputRequiredResult {
            result_type: ResultType::INPUT_REQUIRED,
            meta: None,
            input_requests: None,
            request_state: None,
            extra: JsonObject::new(),
        }
    }

    /// Adds an input request under `key` (replacing any request with that key).
    pub fn with_input_request(
        mut self,
        key: impl Into<String>,
        request: impl Into<InputRequest>,
    ) -> Self {
        self.input_requests
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), request.into());
        self
    }

    /// Sets the request state.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }

    /// Whether the result carries at least one input request or a request state, as the
    /// specification requires.
    pub fn is_well_formed(&self) -> bool {
        self.input_requests.as_ref().is_some_and(|r| !r.is_empty()) || self.request_state.is_some()
    }
}

/// The part a multi round-trip retry adds to a request's params
/// (`InputResponseRequestParams`); the base of `CallToolRequestParams`,
/// `GetPromptRequestParams` and `ReadResourceRequestParams`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputResponseRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// Answers to the input requests of the previous round, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of the previous round, echoed exactly. When present it must be a
    /// string: `null` is refused like any other non-string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::mrtr::echoed_state"
    )]
    pub request_state: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Reads an echoed `requestState`: present means a string (`null` included is refused, so
/// that a server tells "no state" only from an absent member).
pub(crate) fn echoed_state<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The result of a method that may need more input (`tools/call`, `prompts/get`,
/// `resources/read`): the complete result `T`, or an [`InputRequiredResult`]. Servers return
/// it from handlers; clients decode it.
///
/// Deserializing reads `resultType`: `"complete"`, or no `resultType` at all (an older
/// server), decodes `T`; `"input_required"` gives [`Outcome::InputRequired`] and `"task"`
/// [`Outcome::Task`]. Any other value is refused, naming it: the specification makes a
/// `resultType` the client does not recognize an invalid result, since only the client knows
/// which extensions it declared. Non-exhaustive: extensions add result types.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome<T> {
    /// The final result.
    Complete(T),
    /// The server needs input; retry with the answers.
    InputRequired(InputRequiredResult),
    /// The request became a task (tasks extension, `"resultType": "task"`): poll it with
    /// `tasks/get`. Only a client that declared the extension receives it.
    Task(crate::tasks::CreateTaskResult),
}

serialize_variants!(Outcome<T> { Complete, InputRequired, Task });

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Outcome<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a result (an object)")?;
        match map.get("resultType") {
            None => from_object(map).map(Outcome::Complete),
            Some(Value::String(t)) if *t == ResultType::COMPLETE.as_str() => {
                from_object(map).map(Outcome::Complete)
            }
            Some(Value::String(t)) if *t == ResultType::INPUT_REQUIRED.as_str() => {
                from_object(map).map(Outcome::InputRequired)
            }
            Some(Value::String(t)) if *t == ResultType::TASK.as_str() => {
                from_object(map).map(Outcome::Task)
            }
            Some(Value::String(other)) => Err(serde::de::Error::custom(format_args!(
                "unrecognized resultType {other:?} (expected \"complete\", \"input_required\" or \"task\")"
            ))),
            Some(other) => Err(serde::de::Error::invalid_type(
                crate::util::unexpected(other),
                &"a resultType string",
            )),
        }
    }
}

impl<T> Outcome<T> {
    /// Whether this is an `input_required` result.
    pub fn is_input_required(&self) -> bool {
        matches!(self, Outcome::InputRequired(_))
    }

    /// Whether this is the final result.
    pub fn is_complete(&self) -> bool {
        matches!(self, Outcome::Complete(_))
    }

    /// Whether the request became a task.
    pub fn is_task(&self) -> bool {
        matches!(self, Outcome::Task(_))
    }

    /// The input request, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Outcome::InputRequired(r) => Some(r),
            Outcome::Complete(_) | Outcome::Task(_) => None,
        }
    }

    /// The task the request became, if it did.
    pub fn task(self) -> Option<crate::tasks::CreateTaskResult> {
        match self {
            Outcome::Task(t) => Some(t),
            Outcome::Complete(_) | Outcome::InputRequired(_) => None,
        }
    }

    /// Maps the final result.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Complete(t) => Outcome::Complete(f(t)),
            Outcome::InputRequired(r) => Outcome::InputRequired(r),
            Outcome::Task(t) => Outcome::Task(t),
        }
    }

    /// The complete result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Outcome::Complete(t) => Some(t),
            Outcome::InputRequired(_) | Outcome::Task(_) => None,
        }
    }

    /// The complete result, or the input required (a task is not expected here: it is
    /// reported as an `input_required` result without requests, which no server sends).
    #[allow(clippy::result_large_err)]
    pub fn into_result(self) -> Result<T, InputRequiredResult> {
        match self {
            Outcome::Complete(t) => Ok(t),
            Outcome::InputRequired(r) => Err(r),
            Outcome::Task(_) => Err(InputRequiredResult::new()),
        }
    }
}

impl<T> From<InputRequiredResult> for Outcome<T> {
    fn from(r: InputRequiredResult) -> Self {
        Outcome::InputRequired(r)
    }
}

impl From<crate::tools::CallToolResult> for Outcome<crate::tools::CallToolResult> {
    fn from(r: crate::tools::CallToolResult) -> Self {
        Outcome::Complete(r)
    }
}

impl From<crate::prompts::GetPromptResult> for Outcome<crate::prompts::GetPromptResult> {
    fn from(r: crate::prompts::GetPromptResult) -> Self {
        Outcome::Complete(r)
    }
}

impl From<crate::resources::ReadResourceResult> for Outcome<crate::resources::ReadResourceResult> {
    fn from(r: crate::resources::ReadResourceResult) -> Self {
        Outcome::Complete(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elicitation::PrimitiveSchemaDefinition;
    use crate::sampling::SamplingMessage;
    use crate::tools::CallToolResult;
    use serde_json::json;

    fn elicitation() -> InputRequest {
        InputRequest::elicit_form(
            "Your name?",
            RequestedSchema::new().required("name", PrimitiveSchemaDefinition::string()),
        )
    }

    #[test]
    fn input_requests_are_tagged_by_method() {
        let r: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
        assert_eq!(r.kind(), InputRequestKind::Roots);
        let e = serde_json::from_value::<InputRequest>(json!({"method": "ping"})).unwrap_err();
        assert!(e.to_string().contains("unknown variant `ping`"), "{e}");
        assert!(serde_json::from_value::<InputRequest>(json!({"params": {}})).is_err());
        // The variant's own error comes through.
        let e = serde_json::from_value::<InputRequest>(
            json!({"method": "sampling/createMessage", "params": {"messages": []}}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("maxTokens"), "{e}");
    }

    #[test]
    fn builds_an_input_required_result_with_each_kind() {
        let r = InputRequiredResult::new()
            .with_input_request("name", elicitation())
            .with_input_request(
                "key",
                InputRequest::elicit_url("Set your key", "https://x.example/k"),
            )
            .with_input_request(
                "q",
                InputRequest::sample(CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("?")],
                    10,
                )),
            )
            .with_input_request("roots", InputRequest::list_roots())
            .with_request_state("s1");
        assert!(r.is_well_formed());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(v["inputRequests"]["roots"], json!({"method": "roots/list"}));
        assert_eq!(v["inputRequests"]["key"]["params"]["mode"], "url");
        let back: InputRequiredResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        assert!(!InputRequiredResult::new().is_well_formed());
    }

    #[test]
    fn capabilities_needed_by_each_request() {
        let caps = |v: Value| serde_json::from_value::<ClientCapabilities>(v).unwrap();
        let url = InputRequest::elicit_url("m", "https://x");
        assert_eq!(
            serde_json::to_value(url.required_capabilities()).unwrap(),
            json!({"elicitation": {"url": {}}})
        );
        assert_eq!(
            serde_json::to_value(elicitation().required_capabilities()).unwrap(),
            json!({"elicitation": {}})
        );
        assert_eq!(
            serde_json::to_value(InputRequest::list_roots().required_capabilities()).unwrap(),
            json!({"roots": {}})
        );
        assert!(elicitation().is_supported_by(&caps(json!({"elicitation": {}}))));
        assert!(!url.is_supported_by(&caps(json!({"elicitation": {}}))));
        assert!(url.is_supported_by(&caps(json!({"elicitation": {"url": {}}}))));
        assert!(!elicitation().is_supported_by(&caps(json!({"sampling": {}}))));
        let mut p = CreateMessageRequestParams::new(vec![], 1);
        p.tools = Some(vec![]);
        let s = InputRequest::sample(p);
        assert_eq!(
            serde_json::to_value(s.required_capabilities()).unwrap(),
            json!({"sampling": {"tools": {}}})
        );
        assert!(!s.is_supported_by(&caps(json!({"sampling": {}}))));
        assert!(s.is_supported_by(&caps(json!({"sampling": {"tools": {}}}))));
    }

    #[test]
    fn input_responses_decode_by_kind() {
        let elicit = json!({"action": "accept", "content": {"name": "octocat"}});
        let sample = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        let roots = json!({"roots": [{"uri": "file:///r"}]});

        let r = InputResponse::decode_for(InputRequestKind::Elicitation, elicit.clone()).unwrap();
        assert_eq!(
            r.as_elicit().unwrap().content.as_ref().unwrap()["name"].as_str(),
            Some("octocat")
        );
        assert!(InputResponse::decode_for(InputRequestKind::Sampling, elicit.clone()).is_err());
        assert!(InputResponse::decode_for(InputRequestKind::Roots, elicit.clone()).is_err());
        assert!(InputResponse::decode_for(InputRequestKind::Sampling, sample.clone()).is_ok());
        assert!(InputResponse::decode_for(InputRequestKind::Elicitation, sample.clone()).is_err());
        assert!(InputResponse::decode_for(InputRequestKind::Roots, roots.clone()).is_ok());
        assert!(InputResponse::decode_for(InputRequestKind::Elicitation, json!(12345)).is_err());
        assert!(InputResponse::decode_for(InputRequestKind::Elicitation, Value::Null).is_err());

        // into_kind agrees with a correct guess and re-reads a wrong one.
        let guessed: InputResponse = serde_json::from_value(roots.clone()).unwrap();
        assert_eq!(guessed.kind(), Some(InputRequestKind::Roots));
        assert!(guessed.clone().into_kind(InputRequestKind::Roots).is_ok());
        assert!(guessed.into_kind(InputRequestKind::Elicitation).is_err());
        let garbage: InputResponse = serde_json::from_value(json!(12345)).unwrap();
        assert!(garbage.into_kind(InputRequestKind::Elicitation).is_err());
    }

    #[test]
    fn untagged_guess_is_deterministic_and_lossless() {
        let cases = [
            (
                json!({"action": "decline"}),
                Some(InputRequestKind::Elicitation),
            ),
            (json!({"roots": []}), Some(InputRequestKind::Roots)),
            (
                json!({"role": "assistant", "content": [], "model": "m"}),
                Some(InputRequestKind::Sampling),
            ),
            (json!({"action": "maybe"}), None),
            (json!({"roots": "x"}), None),
            (json!({"role": "assistant"}), None),
            (json!({}), None),
            (json!(12345), None),
            (json!(null), None),
            (json!("accept"), None),
        ];
        for (v, kind) in cases {
            let r: InputResponse = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(r.kind(), kind, "{v}");
            assert_eq!(serde_json::to_value(&r).unwrap(), v, "lossless: {v}");
        }
        // A malformed answer under an unrelated key does not spoil the params.
        let p: InputResponseRequestParams = serde_json::from_value(json!({
            "_meta": {}, "inputResponses": {"user_name": {"action": "accept", "content": {"name": "x"}}, "junk": 7}
        }))
        .unwrap();
        let responses = p.input_responses.unwrap();
        assert!(responses["user_name"].as_elicit().is_some());
        assert!(matches!(responses["junk"], InputResponse::Unrecognized(_)));
    }

    #[test]
    fn maybe_input_required_reads_result_type() {
        let r: Outcome<CallToolResult> =
            serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
                .unwrap();
        assert!(r.is_input_required());
        let r: Outcome<CallToolResult> =
            serde_json::from_value(json!({"content": [{"type": "text", "text": "ok"}]})).unwrap();
        let r = r.complete().unwrap();
        assert!(r.result_type.is_complete());
        // An unknown result type is not silently treated as complete data of another shape.
        assert!(
            serde_json::from_value::<Outcome<CallToolResult>>(
                json!({"resultType": "task", "task": {}})
            )
            .is_err()
        );
        let m: Outcome<CallToolResult> = CallToolResult::text("x").into();
        assert_eq!(serde_json::to_value(&m).unwrap()["resultType"], "complete");
    }
}
