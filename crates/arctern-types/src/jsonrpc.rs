//! JSON-RPC 2.0 framing as MCP uses it: request ids, requests, notifications, responses,
//! and a classifier for incoming messages.
//!
//! MCP messages are single JSON-RPC objects (batches were removed in 2025-06-18). Params and
//! results are carried as [`RawValue`] by default so that a receiver parses the envelope once
//! and the payload exactly once, into the type the method calls for.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{ErrorCode, ErrorObject};

/// The only JSON-RPC version: `"2.0"`.
pub const JSONRPC_VERSION: &str = "2.0";

/// The `"jsonrpc": "2.0"` member. Zero-sized; deserializing anything other than `"2.0"` fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Cow<'de, str> = Deserialize::deserialize(d)?;
        if v == JSONRPC_VERSION {
            Ok(JsonRpcVersion)
        } else {
            Err(de::Error::invalid_value(
                de::Unexpected::Str(&v),
                &"the JSON-RPC version \"2.0\"",
            ))
        }
    }
}

/// A request id: a string or an integer, never `null`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or integer request id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("request id out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// A request that expects a response.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub struct JsonRpcRequest<P = Box<RawValue>> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id the response will echo.
    pub id: RequestId,
    /// The method name, such as `tools/call`.
    pub method: Cow<'static, str>,
    /// The parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    /// A request with parameters.
    pub fn new(id: impl Into<RequestId>, method: impl Into<Cow<'static, str>>, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A one-way message that is never answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub struct JsonRpcNotification<P = Box<RawValue>> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The notification name, such as `notifications/progress`.
    pub method: Cow<'static, str>,
    /// The parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcNotification<P> {
    /// A notification with parameters.
    pub fn new(method: impl Into<Cow<'static, str>>, params: P) -> Self {
        JsonRpcNotification {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A successful response (`JSONRPCResultResponse`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonRpcResponse<R = Box<RawValue>> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object.
    pub result: R,
}

impl<R> JsonRpcResponse<R> {
    /// A response carrying `result` for request `id`.
    pub fn new(id: RequestId, result: R) -> Self {
        JsonRpcResponse {
            jsonrpc: JsonRpcVersion,
            id,
            result,
        }
    }
}

/// An error response (`JSONRPCErrorResponse`). The id is absent only when the request's id
/// could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers, when it could be read.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable_id"
    )]
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

impl JsonRpcErrorResponse {
    /// An error response for request `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcErrorResponse {
            jsonrpc: JsonRpcVersion,
            id,
            error,
        }
    }
}

/// Either kind of response (`JSONRPCResponse`): a result or an error.
///
/// Deserializing looks for an `error` member: present means [`JsonRpcResponseOrError::Error`],
/// absent means [`JsonRpcResponseOrError::Result`].
#[derive(Debug, Clone)]
pub enum JsonRpcResponseOrError<R = Value> {
    /// A successful response.
    Result(JsonRpcResponse<R>),
    /// An error response.
    Error(JsonRpcErrorResponse),
}

impl<R: Serialize> Serialize for JsonRpcResponseOrError<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonRpcResponseOrError::Result(r) => r.serialize(s),
            JsonRpcResponseOrError::Error(e) => e.serialize(s),
        }
    }
}

impl<'de, R: DeserializeOwned> Deserialize<'de> for JsonRpcResponseOrError<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = crate::util::buffer_object(d, "a JSON-RPC response (an object)")?;
        if map.contains_key("error") {
            crate::util::from_object(map).map(JsonRpcResponseOrError::Error)
        } else {
            crate::util::from_object(map).map(JsonRpcResponseOrError::Result)
        }
    }
}

impl<R> JsonRpcResponseOrError<R> {
    /// The id of the request answered (absent only on an error whose request id was unreadable).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            JsonRpcResponseOrError::Result(r) => Some(&r.id),
            JsonRpcResponseOrError::Error(e) => e.id.as_ref(),
        }
    }

    /// The result, or the error object.
    pub fn into_result(self) -> Result<R, ErrorObject> {
        match self {
            JsonRpcResponseOrError::Result(r) => Ok(r.result),
            JsonRpcResponseOrError::Error(e) => Err(e.error),
        }
    }
}

fn nullable_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RequestId>, D::Error> {
    Option::<RequestId>::deserialize(d)
}

/// Any single JSON-RPC message, classified by its members.
///
/// Params and results stay raw; parse them with the type the method calls for.
#[derive(Debug, Clone)]
pub enum JsonRpcMessage {
    /// A request (has `id` and `method`).
    Request(JsonRpcRequest),
    /// A notification (has `method`, no `id`).
    Notification(JsonRpcNotification),
    /// A successful response (has `result`).
    Response(JsonRpcResponse),
    /// An error response (has `error`).
    Error(JsonRpcErrorResponse),
}

impl Serialize for JsonRpcMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonRpcMessage::Request(m) => m.serialize(s),
            JsonRpcMessage::Notification(m) => m.serialize(s),
            JsonRpcMessage::Response(m) => m.serialize(s),
            JsonRpcMessage::Error(m) => m.serialize(s),
        }
    }
}

/// Why a received message could not be accepted, and the error to answer it with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MessageError {
    /// The id of the offending message, when it could be read.
    pub id: Option<RequestId>,
    /// The error to send back (`-32700` or `-32600`).
    pub error: ErrorObject,
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for MessageError {}

/// All members a JSON-RPC message may have; classified afterwards.
#[derive(Deserialize)]
struct RawMessage {
    jsonrpc: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "nullable_id")]
    id: Option<RequestId>,
    method: Option<String>,
    params: Option<Box<RawValue>>,
    result: Option<Box<RawValue>>,
    error: Option<ErrorObject>,
}

impl JsonRpcMessage {
    /// Parses and classifies one message.
    ///
    /// Invalid JSON gives `-32700`; valid JSON that is not a single JSON-RPC 2.0 message
    /// (a batch, a wrong member type, a missing `method`) gives `-32600`, with the message's id
    /// when it can be read.
    // The error is only built for malformed input and answered at once; boxing it would cost
    // every caller an allocation-shaped API for no gain.
    #[allow(clippy::result_large_err)]
    pub fn from_slice(bytes: &[u8]) -> Result<JsonRpcMessage, MessageError> {
        match serde_json::from_slice::<RawMessage>(bytes) {
            Ok(raw) => raw.classify(),
            Err(e) => Err(Self::diagnose(bytes, e)),
        }
    }

    fn diagnose(bytes: &[u8], err: serde_json::Error) -> MessageError {
        // Only reached on failure: reparse loosely to tell bad JSON from a bad shape and to
        // recover the id if there is one.
        match serde_json::from_slice::<Value>(bytes) {
            Err(_) => MessageError {
                id: None,
                error: ErrorObject::parse_error(format!("Parse error: {err}")),
            },
            Ok(Value::Array(_)) => MessageError {
                id: None,
                error: ErrorObject::invalid_request("Batch requests are not supported"),
            },
            Ok(Value::Object(map)) => MessageError {
                id: map.get("id").and_then(|v| RequestId::deserialize(v).ok()),
                error: ErrorObject::invalid_request(format!("Invalid request: {err}")),
            },
            Ok(_) => MessageError {
                id: None,
                error: ErrorObject::invalid_request("A JSON-RPC message must be a JSON object"),
            },
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            JsonRpcMessage::Request(r) => Some(&r.method),
            JsonRpcMessage::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            JsonRpcMessage::Request(r) => Some(&r.id),
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            JsonRpcMessage::Notification(_) => None,
        }
    }
}

impl std::str::FromStr for JsonRpcMessage {
    type Err = MessageError;
    /// Parses a message from a string; see [`JsonRpcMessage::from_slice`].
    fn from_str(text: &str) -> Result<JsonRpcMessage, MessageError> {
        Self::from_slice(text.as_bytes())
    }
}

impl RawMessage {
    #[allow(clippy::result_large_err)]
    fn classify(self) -> Result<JsonRpcMessage, MessageError> {
        let invalid = |id: Option<RequestId>, msg: &'static str| MessageError {
            id,
            error: ErrorObject::new(ErrorCode::INVALID_REQUEST, msg),
        };
        match self.jsonrpc.as_deref().map(RawValue::get) {
            Some("\"2.0\"") => {}
            Some(_) => return Err(invalid(self.id, "The jsonrpc member must be \"2.0\"")),
            None => return Err(invalid(self.id, "The jsonrpc member is missing")),
        }
        if let Some(params) = &self.params {
            let first = params.get().as_bytes().first().copied();
            if !matches!(first, Some(b'{') | Some(b'[')) {
                return Err(invalid(self.id, "params must be an object or an array"));
            }
        }
        match (self.method, self.id, self.result, self.error) {
            (Some(method), Some(id), None, None) => Ok(JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc: JsonRpcVersion,
                id,
                method: Cow::Owned(method),
                params: self.params,
            })),
            (Some(method), None, None, None) => {
                Ok(JsonRpcMessage::Notification(JsonRpcNotification {
                    jsonrpc: JsonRpcVersion,
                    method: Cow::Owned(method),
                    params: self.params,
                }))
            }
            (None, Some(id), Some(result), None) => Ok(JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion,
                id,
                result,
            })),
            (None, id, None, Some(error)) => Ok(JsonRpcMessage::Error(JsonRpcErrorResponse {
                jsonrpc: JsonRpcVersion,
                id,
                error,
            })),
            (_, id, _, _) => Err(invalid(
                id,
                "Not a JSON-RPC request, notification or response",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_strings_or_integers() {
        assert_eq!(
            serde_json::from_str::<RequestId>("7").unwrap(),
            RequestId::Number(7)
        );
        assert_eq!(
            serde_json::from_str::<RequestId>("\"a\"").unwrap(),
            RequestId::String("a".into())
        );
        assert!(serde_json::from_str::<RequestId>("1.5").is_err());
        assert!(serde_json::from_str::<RequestId>("null").is_err());
        assert!(serde_json::from_str::<RequestId>("true").is_err());
    }

    #[test]
    fn classifies_messages() {
        let m = JsonRpcMessage::from_slice(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}"#,
        )
        .unwrap();
        assert!(matches!(m, JsonRpcMessage::Request(ref r) if r.method == "tools/list"));
        let m =
            JsonRpcMessage::from_slice(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)
                .unwrap();
        assert!(matches!(m, JsonRpcMessage::Notification(_)));
        let m = JsonRpcMessage::from_slice(br#"{"jsonrpc":"2.0","id":"x","result":{}}"#).unwrap();
        assert!(matches!(m, JsonRpcMessage::Response(_)));
        let m = JsonRpcMessage::from_slice(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
        )
        .unwrap();
        assert!(matches!(m, JsonRpcMessage::Error(ref e) if e.id.is_none()));
    }

    #[test]
    fn rejects_bad_messages_with_the_right_code() {
        let e = JsonRpcMessage::from_slice(b"{not json").unwrap_err();
        assert_eq!(e.error.code, ErrorCode::PARSE_ERROR);
        let e =
            JsonRpcMessage::from_slice(br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#).unwrap_err();
        assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
        let e =
            JsonRpcMessage::from_slice(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
        assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(e.id, Some(RequestId::Number(3)));
        let e = JsonRpcMessage::from_slice(br#"{"jsonrpc":"2.0","id":4,"method":5}"#).unwrap_err();
        assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(e.id, Some(RequestId::Number(4)));
        let e = JsonRpcMessage::from_slice(br#"{"jsonrpc":"2.0","id":5,"method":"x","params":3}"#)
            .unwrap_err();
        assert_eq!(e.id, Some(RequestId::Number(5)));
        let e = JsonRpcMessage::from_slice(b"42").unwrap_err();
        assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn response_or_error() {
        let r: JsonRpcResponseOrError =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}})).unwrap();
        assert_eq!(r.id(), Some(&RequestId::Number(1)));
        assert_eq!(r.into_result().unwrap(), json!({"a": 1}));
        let v = json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "m"}});
        let r: JsonRpcResponseOrError = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        assert_eq!(
            r.into_result().unwrap_err().code,
            ErrorCode::METHOD_NOT_FOUND
        );
    }

    #[test]
    fn serializes_with_version() {
        let req = JsonRpcRequest::new(1, "tools/list", json!({"_meta": {}}));
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}})
        );
        let err = JsonRpcErrorResponse::new(None, ErrorObject::parse_error("bad"));
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}})
        );
    }
}
