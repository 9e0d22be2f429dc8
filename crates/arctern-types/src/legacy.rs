//! The legacy wire: what only the 2025 revisions (2025-11-25 and 2025-06-18) have.
//!
//! Legacy revisions negotiate the protocol version and the client's capabilities once, with
//! `initialize`, instead of in every request's `_meta`. They also have session-scoped methods
//! (`ping`, `logging/setLevel`, `resources/subscribe`/`unsubscribe`), real server→client
//! JSON-RPC requests (`elicitation/create`, `sampling/createMessage`, `roots/list`, `ping`),
//! and results without `resultType`, `ttlMs` or `cacheScope`.
//!
//! Everything else is shared with 2026-07-28: the content, tool, prompt and resource types of
//! this crate read legacy messages as they are (a missing `resultType` reads as
//! `"complete"`), and [`to_legacy_result`] writes a 2026-07-28 result in the legacy shape.
//!
//! | schema (2025-11-25) | Rust |
//! | --- | --- |
//! | `InitializeRequest`, `InitializeRequestParams`, `InitializeResult` | [`InitializeRequest`], [`InitializeRequestParams`], [`InitializeResult`] |
//! | `InitializedNotification`, `RootsListChangedNotification` | [`InitializedNotification`], [`RootsListChangedNotification`] |
//! | `PingRequest`, `RequestParams`, `NotificationParams`, `EmptyResult` | [`PingRequest`], [`RequestParams`], [`NotificationParams`], [`EmptyResult`] |
//! | `SetLevelRequest(Params)`, `SubscribeRequest(Params)`, `UnsubscribeRequest(Params)` | [`SetLevelRequest`], [`SetLevelRequestParams`], [`SubscribeRequest`], [`SubscribeRequestParams`], [`UnsubscribeRequest`], [`UnsubscribeRequestParams`] |
//! | `ElicitRequest`, `ElicitRequestParams`, `ElicitRequestFormParams`, `ElicitRequestURLParams` | [`ElicitRequest`], [`ElicitRequestParams`], [`ElicitRequestFormParams`], [`ElicitRequestUrlParams`] |
//! | `CreateMessageRequest`, `CreateMessageRequestParams`, `ListRootsRequest` | [`CreateMessageRequest`], [`CreateMessageRequestParams`], [`ListRootsRequest`] |
//! | `ServerRequest` (its `params` and `method`) | [`ServerRequest`] |
//! | `ElicitationCompleteNotification` | [`ElicitationCompleteNotification`], [`ElicitationCompleteNotificationParams`] |
//! | `URLElicitationRequiredError` | [`url_elicitation_required`], [`UrlElicitationRequiredData`] |
//! | resource not found (`-32002`) | [`resource_not_found`] |

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::elicitation::{self, RequestedSchema};
use crate::error::{ErrorCode, ErrorObject};
use crate::implementation::Implementation;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId};
use crate::logging::LoggingLevel;
use crate::meta::{JsonObject, Meta};
use crate::methods;
use crate::mrtr::{InputRequest, InputRequestKind};
use crate::progress::ProgressToken;
use crate::sampling;
use crate::tags;
use crate::util::{buffer_object, from_object, str_member};
use crate::version::ProtocolVersion;

/// The members a 2026-07-28 result has and a legacy result does not: [`to_legacy_result`]
/// removes them.
pub const MODERN_ONLY_RESULT_MEMBERS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Params that carry nothing but an optional `_meta` (`RequestParams` of the legacy schema):
/// `ping`, `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestParams {
    /// Request metadata (a `progressToken`, …).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestParams {
    /// The progress token in `_meta`, if any.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        progress_token(self.meta.as_ref())
    }
}

/// Notification params that carry nothing but an optional `_meta` (`NotificationParams` of the
/// legacy schema): `notifications/initialized`, `notifications/roots/list_changed`, the list
/// changed notifications.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A result with nothing in it (`EmptyResult`): the answer to `ping`, `logging/setLevel`,
/// `resources/subscribe` and `resources/unsubscribe`. Serializes as `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `initialize` (`InitializeRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The newest revision the client supports.
    pub protocol_version: String,
    /// What the client supports, for the whole session.
    pub capabilities: ClientCapabilities,
    /// Who the client says it is.
    pub client_info: Implementation,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl InitializeRequestParams {
    /// An `initialize` proposing `protocol_version`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        InitializeRequestParams {
            meta: None,
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
            extra: Default::default(),
        }
    }
}

/// The answer to `initialize` (`InitializeResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The revision the session speaks: the client's proposal when the server supports it,
    /// else the server's choice.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who the server says it is.
    pub server_info: Implementation,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl InitializeResult {
    /// The answer to `initialize`: the session's revision, what the server offers, and who it
    /// is.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult {
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            ..Default::default()
        }
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

/// Params of `logging/setLevel` (`SetLevelRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SetLevelRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The least severe level the client wants to receive.
    pub level: LoggingLevel,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SetLevelRequestParams {
    /// Asks for messages at `level` or more severe.
    pub fn new(level: LoggingLevel) -> Self {
        SetLevelRequestParams {
            meta: None,
            level,
            extra: Default::default(),
        }
    }
}

/// Params of `resources/subscribe` (`SubscribeRequestParams`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscribeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The resource to hear about.
    pub uri: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscribeRequestParams {
    /// Subscribes to `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        SubscribeRequestParams {
            meta: None,
            uri: uri.into(),
            extra: Default::default(),
        }
    }
}

/// Params of `resources/unsubscribe` (`UnsubscribeRequestParams`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnsubscribeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The resource to stop hearing about.
    pub uri: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UnsubscribeRequestParams {
    /// Unsubscribes from `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        UnsubscribeRequestParams {
            meta: None,
            uri: uri.into(),
            extra: Default::default(),
        }
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only): the out-of-band
/// interaction of a URL-mode elicitation finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitationCompleteNotificationParams {
    /// The `elicitationId` of the URL-mode elicitation.
    pub elicitation_id: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCompleteNotificationParams {
    /// The URL-mode elicitation `elicitation_id` finished.
    pub fn new(elicitation_id: impl Into<String>) -> Self {
        ElicitationCompleteNotificationParams {
            elicitation_id: elicitation_id.into(),
            extra: JsonObject::new(),
        }
    }
}

/// Form-mode params of a legacy `elicitation/create` request (`ElicitRequestFormParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequestFormParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `"form"` on 2025-11-25; absent on 2025-06-18, which has no modes.
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
    /// A form asking `message`, with `"mode": "form"` (2025-11-25; leave `mode` out for
    /// 2025-06-18).
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams {
            meta: None,
            mode: Some(tags::FormMode),
            message: message.into(),
            requested_schema,
            extra: JsonObject::new(),
        }
    }
}

/// URL-mode params of a legacy `elicitation/create` request (`ElicitRequestURLParams`,
/// 2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequestUrlParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Always `"url"`.
    pub mode: tags::UrlMode,
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Identifies this elicitation in `notifications/elicitation/complete` and in
    /// `-32042` errors; the 2025-11-25 schema requires it.
    pub elicitation_id: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestUrlParams {
    /// A URL-mode elicitation with this id.
    pub fn new(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        ElicitRequestUrlParams {
            meta: None,
            mode: tags::UrlMode,
            message: message.into(),
            url: url.into(),
            elicitation_id: elicitation_id.into(),
            extra: Default::default(),
        }
    }
}

/// The params of a legacy `elicitation/create` request (`ElicitRequestParams`).
///
/// Deserializing looks at `mode`: `"url"` is [`ElicitRequestParams::Url`]; `"form"` or no
/// `mode` is [`ElicitRequestParams::Form`]; any other mode is rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode (2025-11-25 only).
    Url(ElicitRequestUrlParams),
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(f) => f.serialize(s),
            ElicitRequestParams::Url(u) => u.serialize(s),
        }
    }
}

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
            Some(_) => Err(de::Error::custom("the elicitation mode must be a string")),
        }
    }
}

/// Params of a legacy `sampling/createMessage` request (`CreateMessageRequestParams`): the
/// 2026-07-28 params plus an optional `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateMessageRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What to sample.
    #[serde(flatten)]
    pub params: sampling::CreateMessageRequestParams,
}

/// A legacy `initialize` request.
pub type InitializeRequest = JsonRpcRequest<InitializeRequestParams>;
/// The response to `initialize`.
pub type InitializeResultResponse = JsonRpcResponse<InitializeResult>;
/// `notifications/initialized`.
pub type InitializedNotification = JsonRpcNotification<NotificationParams>;
/// A `ping` (sent by either side).
pub type PingRequest = JsonRpcRequest<RequestParams>;
/// `logging/setLevel`.
pub type SetLevelRequest = JsonRpcRequest<SetLevelRequestParams>;
/// `resources/subscribe`.
pub type SubscribeRequest = JsonRpcRequest<SubscribeRequestParams>;
/// `resources/unsubscribe`.
pub type UnsubscribeRequest = JsonRpcRequest<UnsubscribeRequestParams>;
/// `notifications/roots/list_changed` (client to server).
pub type RootsListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `notifications/elicitation/complete` (server to client, 2025-11-25 only).
pub type ElicitationCompleteNotification =
    JsonRpcNotification<ElicitationCompleteNotificationParams>;
/// A server→client `elicitation/create` request.
pub type ElicitRequest = JsonRpcRequest<ElicitRequestParams>;
/// A server→client `sampling/createMessage` request.
pub type CreateMessageRequest = JsonRpcRequest<CreateMessageRequestParams>;
/// A server→client `roots/list` request.
pub type ListRootsRequest = JsonRpcRequest<RequestParams>;

/// A request a legacy server sends to the client (`ServerRequest`, without the tasks
/// requests): its method and params.
///
/// Serializes as `{"method": …, "params": …}`; [`ServerRequest::to_jsonrpc`] adds the
/// JSON-RPC members. Deserializing reads `method` first and rejects any other method.
// Wire data held briefly; boxing the large variant would only make matching clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerRequest {
    /// `ping`.
    Ping(RequestParams),
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list`.
    ListRoots(RequestParams),
}

impl ServerRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            ServerRequest::Ping(_) => methods::legacy::PING,
            ServerRequest::Elicit(_) => methods::ELICITATION_CREATE,
            ServerRequest::CreateMessage(_) => methods::SAMPLING_CREATE_MESSAGE,
            ServerRequest::ListRoots(_) => methods::ROOTS_LIST,
        }
    }

    /// The params as JSON (`None` for a `ping` or `roots/list` without `_meta`).
    pub fn params_value(&self) -> Result<Option<Value>, serde_json::Error> {
        let value = match self {
            ServerRequest::Ping(p) | ServerRequest::ListRoots(p) => {
                if p.meta.is_none() {
                    return Ok(None);
                }
                serde_json::to_value(p)?
            }
            ServerRequest::Elicit(p) => serde_json::to_value(p)?,
            ServerRequest::CreateMessage(p) => serde_json::to_value(p)?,
        };
        Ok(Some(value))
    }

    /// The whole JSON-RPC request with id `id`.
    pub fn to_jsonrpc(&self, id: RequestId) -> Result<JsonRpcRequest<Value>, serde_json::Error> {
        Ok(JsonRpcRequest {
            jsonrpc: Default::default(),
            id,
            method: self.method().into(),
            params: self.params_value()?,
        })
    }

    /// The request's `_meta`, if any.
    pub fn meta(&self) -> Option<&Meta> {
        match self {
            ServerRequest::Ping(p) | ServerRequest::ListRoots(p) => p.meta.as_ref(),
            ServerRequest::Elicit(ElicitRequestParams::Form(f)) => f.meta.as_ref(),
            ServerRequest::Elicit(ElicitRequestParams::Url(u)) => u.meta.as_ref(),
            ServerRequest::CreateMessage(c) => c.meta.as_ref(),
        }
    }

    /// Sets `key` to `value` in the request's `_meta` (creating it if need be).
    pub fn insert_meta(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        let meta = match self {
            ServerRequest::Ping(p) | ServerRequest::ListRoots(p) => &mut p.meta,
            ServerRequest::Elicit(ElicitRequestParams::Form(f)) => &mut f.meta,
            ServerRequest::Elicit(ElicitRequestParams::Url(u)) => &mut u.meta,
            ServerRequest::CreateMessage(c) => &mut c.meta,
        };
        meta.get_or_insert_with(Meta::new)
            .insert(key.into(), value.into());
    }

    /// The `inputRequests` key this request stands for, when an arctern server's legacy shim
    /// named it in `_meta` ([`INPUT_KEY_META_KEY`](crate::meta::INPUT_KEY_META_KEY)).
    pub fn input_key(&self) -> Option<&str> {
        self.meta()?.get(crate::meta::INPUT_KEY_META_KEY)?.as_str()
    }

    /// Reads a request from its method and params (`None` when the request had none).
    pub fn from_parts(method: &str, params: Option<Value>) -> Result<Self, serde_json::Error> {
        let params = params.unwrap_or_else(|| Value::Object(Map::new()));
        Ok(match method {
            methods::legacy::PING => ServerRequest::Ping(serde_json::from_value(params)?),
            methods::ELICITATION_CREATE => ServerRequest::Elicit(serde_json::from_value(params)?),
            methods::SAMPLING_CREATE_MESSAGE => {
                ServerRequest::CreateMessage(serde_json::from_value(params)?)
            }
            methods::ROOTS_LIST => ServerRequest::ListRoots(serde_json::from_value(params)?),
            other => {
                return Err(de::Error::unknown_variant(
                    other,
                    &[
                        methods::legacy::PING,
                        methods::ELICITATION_CREATE,
                        methods::SAMPLING_CREATE_MESSAGE,
                        methods::ROOTS_LIST,
                    ],
                ));
            }
        })
    }

    /// The server→client request that asks what an input request of a multi round-trip
    /// result asks, on a session speaking `version`.
    ///
    /// A URL-mode elicitation gets `elicitation_id` (the 2025-11-25 schema requires one) and
    /// is refused on 2025-06-18, which has no URL mode; that revision also gets form
    /// elicitations without `mode`, and refuses sampling with tools.
    pub fn from_input_request(
        request: InputRequest,
        version: &ProtocolVersion,
        elicitation_id: impl FnOnce() -> String,
    ) -> Result<Self, NotExpressible> {
        let modes = *version >= ProtocolVersion::V2025_11_25;
        Ok(match request {
            InputRequest::Elicit(e) => {
                match e.params {
                    elicitation::ElicitRequestParams::Form(f) => {
                        ServerRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams {
                            meta: None,
                            mode: if modes { Some(tags::FormMode) } else { None },
                            message: f.message,
                            requested_schema: f.requested_schema,
                            extra: Default::default(),
                        }))
                    }
                    elicitation::ElicitRequestParams::Url(u) => {
                        if !modes {
                            return Err(NotExpressible {
                                kind: InputRequestKind::Elicitation,
                                version: version.clone(),
                                reason: "URL-mode elicitation does not exist before 2025-11-25",
                            });
                        }
                        ServerRequest::Elicit(ElicitRequestParams::Url(
                            ElicitRequestUrlParams::new(u.message, u.url, elicitation_id()),
                        ))
                    }
                }
            }
            InputRequest::CreateMessage(s) => {
                if !modes && s.params.uses_tools() {
                    return Err(NotExpressible {
                        kind: InputRequestKind::Sampling,
                        version: version.clone(),
                        reason: "sampling with tools does not exist before 2025-11-25",
                    });
                }
                ServerRequest::CreateMessage(CreateMessageRequestParams {
                    meta: None,
                    params: s.params,
                })
            }
            InputRequest::ListRoots(r) => ServerRequest::ListRoots(RequestParams {
                meta: r.params.and_then(|p| p.meta),
                extra: Default::default(),
            }),
        })
    }

    /// The input request asking the same thing (`None` for `ping`), so that one set of
    /// client handlers answers both eras. The `elicitationId` of a URL-mode elicitation and
    /// any `_meta` are dropped.
    pub fn to_input_request(&self) -> Option<InputRequest> {
        Some(match self {
            ServerRequest::Ping(_) => return None,
            ServerRequest::Elicit(ElicitRequestParams::Form(f)) => {
                InputRequest::elicit_form(f.message.clone(), f.requested_schema.clone())
            }
            ServerRequest::Elicit(ElicitRequestParams::Url(u)) => {
                InputRequest::elicit_url(u.message.clone(), u.url.clone())
            }
            ServerRequest::CreateMessage(p) => InputRequest::sample(p.params.clone()),
            ServerRequest::ListRoots(_) => InputRequest::list_roots(),
        })
    }
}

impl Serialize for ServerRequest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeMap};
        let params = self.params_value().map_err(S::Error::custom)?;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("method", self.method())?;
        if let Some(params) = params {
            map.serialize_entry("params", &params)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ServerRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = buffer_object(d, "a server request (an object)")?;
        let method = str_member(&map, "method")
            .ok_or_else(|| de::Error::missing_field("method"))?
            .to_owned();
        ServerRequest::from_parts(&method, map.remove("params")).map_err(de::Error::custom)
    }
}

/// An input request that a legacy session cannot carry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotExpressible {
    /// The kind of request.
    pub kind: InputRequestKind,
    /// The session's revision.
    pub version: ProtocolVersion,
    /// Why.
    pub reason: &'static str,
}

impl fmt::Display for NotExpressible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cannot be sent on a {} session: {}",
            self.kind, self.version, self.reason
        )
    }
}

impl std::error::Error for NotExpressible {}

/// The `data` of a `-32042` URL elicitation required error (2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UrlElicitationRequiredData {
    /// The URL-mode elicitations the client must complete before retrying.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `-32042` URLElicitationRequiredError (2025-11-25 only; retired in 2026-07-28): the request
/// needs the user to complete these URL-mode elicitations first.
pub fn url_elicitation_required(elicitations: Vec<ElicitRequestUrlParams>) -> ErrorObject {
    let data = serde_json::to_value(UrlElicitationRequiredData {
        elicitations,
        extra: Default::default(),
    })
    .unwrap_or(Value::Null);
    ErrorObject::new(
        ErrorCode::LEGACY_URL_ELICITATION_REQUIRED,
        "URL elicitation required",
    )
    .with_data(data)
}

/// `-32002` resource not found, with `data.uri`: how the legacy revisions answer a
/// `resources/read` of an unknown URI (2026-07-28 uses `-32602`).
pub fn resource_not_found(uri: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::LEGACY_RESOURCE_NOT_FOUND,
        format!("Resource not found: {uri}"),
    )
    .with_data(json!({ "uri": uri }))
}

/// The `-32602` error of an `initialize` that the server cannot answer with any version it
/// serves, with `data.supported` and `data.requested` (the legacy lifecycle's shape).
pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> ErrorObject {
    ErrorObject::invalid_params("Unsupported protocol version")
        .with_data(json!({ "supported": supported, "requested": requested }))
}

/// The version a legacy server answers `initialize` with: the client's proposal when it is one
/// of `served`, else the first (newest) of `served`. `None` when `served` is empty.
pub fn negotiate_version(requested: &str, served: &[ProtocolVersion]) -> Option<ProtocolVersion> {
    served
        .iter()
        .find(|v| v.as_str() == requested)
        .or_else(|| served.first())
        .cloned()
}

/// The client capabilities that mean something on `version`: on 2025-06-18 (which has no
/// elicitation modes and no sampling with tools) `elicitation.url`, `elicitation.form` and
/// `sampling.tools` are dropped, so that a request that needs them is refused.
pub fn client_capabilities_for(
    version: &ProtocolVersion,
    mut capabilities: ClientCapabilities,
) -> ClientCapabilities {
    if *version < ProtocolVersion::V2025_11_25 {
        if let Some(e) = capabilities.elicitation.as_mut() {
            e.url = None;
            e.form = None;
        }
        if let Some(s) = capabilities.sampling.as_mut() {
            s.tools = None;
        }
    }
    capabilities
}

/// The server capabilities a legacy `initialize` announces: those of 2026-07-28, with
/// `extensions` (the 2025 schemas do not name it but admit it, and 2025-era hosts read
/// extensions such as MCP Apps from it).
pub fn server_capabilities_for(capabilities: &ServerCapabilities) -> ServerCapabilities {
    capabilities.clone()
}

/// Serializes a 2026-07-28 result in its legacy shape: the same JSON without `resultType`,
/// `ttlMs` and `cacheScope`.
///
/// Fails only if `result` does not serialize, or does not serialize to an object.
pub fn to_legacy_result<T: Serialize>(result: &T) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(result)?;
    match value.as_object_mut() {
        Some(map) => {
            strip_modern_members(map);
            Ok(value)
        }
        None => Err(de::Error::custom("a result must be a JSON object")),
    }
}

/// Removes the members only 2026-07-28 results have ([`MODERN_ONLY_RESULT_MEMBERS`]).
pub fn strip_modern_members(result: &mut JsonObject) {
    for key in MODERN_ONLY_RESULT_MEMBERS {
        result.remove(key);
    }
}

fn progress_token(meta: Option<&Meta>) -> Option<ProgressToken> {
    meta?
        .get("progressToken")
        .and_then(|v| ProgressToken::deserialize(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_requests_round_trip() {
        let r = ServerRequest::Elicit(ElicitRequestParams::Url(ElicitRequestUrlParams::new(
            "Sign in",
            "https://example.com/login",
            "e-1",
        )));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"method": "elicitation/create", "params": {"mode": "url",
                "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e-1"}})
        );
        assert_eq!(serde_json::from_value::<ServerRequest>(v).unwrap(), r);
        let ping = ServerRequest::Ping(RequestParams::default());
        assert_eq!(
            serde_json::to_value(&ping).unwrap(),
            json!({"method": "ping"})
        );
        assert_eq!(
            serde_json::from_value::<ServerRequest>(json!({"method": "ping"})).unwrap(),
            ping
        );
        assert!(serde_json::from_value::<ServerRequest>(json!({"method": "tools/list"})).is_err());
    }

    #[test]
    fn input_requests_become_server_requests() {
        let v11 = ProtocolVersion::V2025_11_25;
        let v06 = ProtocolVersion::V2025_06_18;
        let url = InputRequest::elicit_url("Open", "https://example.com");
        let r = ServerRequest::from_input_request(url.clone(), &v11, || "id-1".into()).unwrap();
        assert!(
            matches!(&r, ServerRequest::Elicit(ElicitRequestParams::Url(u)) if u.elicitation_id == "id-1")
        );
        assert_eq!(r.to_input_request().unwrap(), url);
        let e = ServerRequest::from_input_request(url, &v06, || unreachable!()).unwrap_err();
        assert_eq!(e.kind, InputRequestKind::Elicitation);
        let form = InputRequest::elicit_form("Name?", RequestedSchema::new());
        let r = ServerRequest::from_input_request(form.clone(), &v06, String::new).unwrap();
        assert_eq!(
            r.params_value().unwrap().unwrap(),
            json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}})
        );
        let r = ServerRequest::from_input_request(form, &v11, String::new).unwrap();
        assert_eq!(r.params_value().unwrap().unwrap()["mode"], "form");
        let roots =
            ServerRequest::from_input_request(InputRequest::list_roots(), &v06, String::new)
                .unwrap();
        assert_eq!(roots.to_jsonrpc(RequestId::Number(3)).unwrap().params, None);
    }

    #[test]
    fn negotiation_and_capabilities() {
        let served = ProtocolVersion::LEGACY;
        assert_eq!(
            negotiate_version("2025-06-18", served).unwrap(),
            ProtocolVersion::V2025_06_18
        );
        assert_eq!(
            negotiate_version("2024-11-05", served).unwrap(),
            ProtocolVersion::V2025_11_25
        );
        assert_eq!(
            negotiate_version("2026-07-28", served).unwrap(),
            ProtocolVersion::V2025_11_25
        );
        assert!(negotiate_version("2025-06-18", &[]).is_none());
        let caps: ClientCapabilities = serde_json::from_value(
            json!({"elicitation": {"url": {}, "form": {}}, "sampling": {"tools": {}}}),
        )
        .unwrap();
        let old = client_capabilities_for(&ProtocolVersion::V2025_06_18, caps.clone());
        assert!(old.supports_elicitation_form());
        assert!(!old.supports_elicitation_url());
        assert!(!old.supports_sampling_tools());
        let new = client_capabilities_for(&ProtocolVersion::V2025_11_25, caps.clone());
        assert_eq!(new, caps);
    }

    #[test]
    fn results_lose_their_modern_members() {
        let v = to_legacy_result(
            &json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": []}),
        )
        .unwrap();
        assert_eq!(v, json!({"tools": []}));
        assert!(to_legacy_result(&json!([1])).is_err());
        assert_eq!(
            serde_json::to_value(EmptyResult::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn legacy_errors() {
        let e = resource_not_found("file:///x");
        assert_eq!(e.code, ErrorCode::LEGACY_RESOURCE_NOT_FOUND);
        assert_eq!(e.data.unwrap()["uri"], "file:///x");
        let e = url_elicitation_required(vec![ElicitRequestUrlParams::new("m", "https://a", "i")]);
        let d: UrlElicitationRequiredData = e.data_as().unwrap().unwrap();
        assert_eq!(d.elicitations[0].elicitation_id, "i");
        let e = unsupported_protocol_version(&["2025-11-25"], "1.0");
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn progress_tokens_are_read_from_meta() {
        let p: RequestParams =
            serde_json::from_value(json!({"_meta": {"progressToken": "t"}})).unwrap();
        assert_eq!(p.progress_token(), Some(ProgressToken::from("t")));
    }
}
