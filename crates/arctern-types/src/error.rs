//! JSON-RPC error objects and the error codes MCP assigns.
//!
//! A protocol error is data: an [`ErrorObject`] with a [`ErrorCode`], a short message and
//! optional structured `data`. Codes from `-32020` to `-32099` are reserved for the MCP
//! specification; `-32000..=-32019` are legacy, implementation-defined codes that new code
//! should not emit.

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::JsonRpcErrorResponse;
use crate::meta::JsonObject;

/// A JSON-RPC error code.
///
/// A transparent `i32`: unknown codes received from a peer are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// `-32700`: the message is not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// `-32600`: the JSON is not a valid JSON-RPC request.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// `-32601`: unknown method, or a method gated by a capability the server does not
    /// advertise. Answered with HTTP 404 on the 2026-07-28 wire.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// `-32602`: invalid parameters. Also used for a malformed `_meta` envelope, unknown
    /// tools or prompts, invalid cursors, unknown resources and rejected `requestState`.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// `-32603`: an internal error of the server.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// `-32020`: an HTTP header is missing, malformed, or disagrees with the body
    /// (`HeaderMismatchError`). HTTP 400.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// `-32021`: the request needs a client capability the client did not declare
    /// (`MissingRequiredClientCapabilityError`). HTTP 400.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// `-32022`: the server does not support the requested protocol version
    /// (`UnsupportedProtocolVersionError`). HTTP 400.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// `-32002`: "resource not found" up to 2025-11-25. Retired in 2026-07-28 (now
    /// `-32602`); never emitted on the modern wire, still accepted from old servers.
    pub const LEGACY_RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// `-32042`: "URL elicitation required", 2025-11-25 only. Retired in 2026-07-28.
    pub const LEGACY_URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

    /// The numeric value.
    pub const fn code(self) -> i32 {
        self.0
    }

    /// The name the specification gives this code, if it has one.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            -32700 => "ParseError",
            -32600 => "InvalidRequest",
            -32601 => "MethodNotFound",
            -32602 => "InvalidParams",
            -32603 => "InternalError",
            -32020 => "HeaderMismatch",
            -32021 => "MissingRequiredClientCapability",
            -32022 => "UnsupportedProtocolVersion",
            -32002 => "ResourceNotFound (legacy)",
            -32042 => "UrlElicitationRequired (legacy)",
            _ => return None,
        })
    }

    /// Whether the code lies in the range the MCP specification reserves for itself
    /// (`-32020..=-32099`).
    pub const fn is_mcp_reserved(self) -> bool {
        self.0 <= -32020 && self.0 >= -32099
    }

    /// Whether this is one of the errors that a 2026-07-28 server uses to reject a request's
    /// envelope (`-32020`, `-32021`, `-32022`). A client uses this to recognise a modern
    /// server when it probes a server's era.
    pub const fn is_modern_envelope_error(self) -> bool {
        matches!(self.0, -32022..=-32020)
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        ErrorCode(code)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What kind of error occurred.
    pub code: ErrorCode,
    /// A short description, ideally one sentence.
    pub message: Cow<'static, str>,
    /// Structured details defined by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700` Parse error.
    pub fn parse_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }

    /// `-32600` Invalid Request.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }

    /// `-32601` Method not found, naming the method in the message.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32602` Invalid params.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603` Internal error.
    pub fn internal_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32020` HeaderMismatch.
    pub fn header_mismatch(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// `-32021` MissingRequiredClientCapability, with `data.requiredCapabilities` set to the
    /// capabilities object the request needs (for example `{"elicitation":{}}`).
    pub fn missing_client_capability(required: Value) -> Self {
        let mut data = serde_json::Map::new();
        data.insert("requiredCapabilities".to_owned(), required);
        Self::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(Value::Object(data))
    }

    /// `-32022` UnsupportedProtocolVersion, with `data.supported` and `data.requested`.
    pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> Self {
        let mut data = serde_json::Map::new();
        data.insert(
            "supported".to_owned(),
            Value::Array(
                supported
                    .iter()
                    .map(|v| Value::String((*v).to_owned()))
                    .collect(),
            ),
        );
        data.insert("requested".to_owned(), Value::String(requested.to_owned()));
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(Value::Object(data))
    }

    /// The `data.supported` list of an UnsupportedProtocolVersion error, if present.
    pub fn supported_versions(&self) -> Option<Vec<String>> {
        if self.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
            return None;
        }
        let list = self.data.as_ref()?.get("supported")?.as_array()?;
        Some(
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        )
    }
}

impl ErrorObject {
    /// `-32021` MissingRequiredClientCapability with `data.requiredCapabilities` set to
    /// `required` (see [`InputRequest::required_capabilities`](crate::mrtr::InputRequest::required_capabilities)).
    pub fn missing_required_capabilities(required: &ClientCapabilities) -> Self {
        Self::missing_client_capability(serde_json::to_value(required).unwrap_or(Value::Null))
    }

    /// `data` decoded into `T`; `None` when there is no data.
    pub fn data_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        Some(T::deserialize(self.data.as_ref()?))
    }
}

/// `ParseError`: an [`ErrorObject`] with code `-32700`.
pub type ParseError = ErrorObject;
/// `InvalidRequestError`: an [`ErrorObject`] with code `-32600`.
pub type InvalidRequestError = ErrorObject;
/// `MethodNotFoundError`: an [`ErrorObject`] with code `-32601`.
pub type MethodNotFoundError = ErrorObject;
/// `InvalidParamsError`: an [`ErrorObject`] with code `-32602`.
pub type InvalidParamsError = ErrorObject;
/// `InternalError`: an [`ErrorObject`] with code `-32603`.
pub type InternalError = ErrorObject;
/// `HeaderMismatchError`: an error response with code `-32020`
/// ([`ErrorObject::header_mismatch`]).
pub type HeaderMismatchError = JsonRpcErrorResponse;
/// `UnsupportedProtocolVersionError`: an error response with code `-32022` and
/// [`UnsupportedProtocolVersionData`] ([`ErrorObject::unsupported_protocol_version`]).
pub type UnsupportedProtocolVersionError = JsonRpcErrorResponse;
/// `MissingRequiredClientCapabilityError`: an error response with code `-32021` and
/// [`MissingRequiredClientCapabilityData`] ([`ErrorObject::missing_required_capabilities`]).
pub type MissingRequiredClientCapabilityError = JsonRpcErrorResponse;

/// The `data` of an UnsupportedProtocolVersion error (`-32022`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnsupportedProtocolVersionData {
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The version the request asked for, echoed.
    pub requested: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of a MissingRequiredClientCapability error (`-32021`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs, as a capabilities object.
    pub required_capabilities: ClientCapabilities,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code.0)
    }
}

impl std::error::Error for ErrorObject {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_serialize_as_plain_integers() {
        let e = ErrorObject::invalid_params("bad cursor");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -32602, "message": "bad cursor"})
        );
    }

    #[test]
    fn unsupported_version_carries_supported_and_requested() {
        let e = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "1900-01-01");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": ["2026-07-28"], "requested": "1900-01-01"}})
        );
        assert_eq!(e.supported_versions().unwrap(), vec!["2026-07-28"]);
    }

    #[test]
    fn typed_error_data() {
        let e = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "v9");
        let d: UnsupportedProtocolVersionData = e.data_as().unwrap().unwrap();
        assert_eq!(d.requested, "v9");
        let caps: ClientCapabilities = serde_json::from_value(json!({"sampling": {}})).unwrap();
        let e = ErrorObject::missing_required_capabilities(&caps);
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -32021, "message": "Missing required client capability",
                   "data": {"requiredCapabilities": {"sampling": {}}}})
        );
        let d: MissingRequiredClientCapabilityData = e.data_as().unwrap().unwrap();
        assert!(d.required_capabilities.supports_sampling());
        assert!(
            ErrorObject::internal_error("x")
                .data_as::<Value>()
                .is_none()
        );
    }

    #[test]
    fn reserved_range() {
        assert!(ErrorCode::HEADER_MISMATCH.is_mcp_reserved());
        assert!(ErrorCode(-32099).is_mcp_reserved());
        assert!(!ErrorCode(-32019).is_mcp_reserved());
        assert!(!ErrorCode::INVALID_PARAMS.is_mcp_reserved());
        assert!(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.is_modern_envelope_error());
        assert!(!ErrorCode(-32023).is_modern_envelope_error());
    }
}
