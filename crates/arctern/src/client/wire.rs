//! Serializing requests with their `_meta` envelope, and reading results.
//!
//! The envelope's fixed parts (capabilities, client info) are serialized once when the
//! client is built and spliced in as raw JSON, so a request costs one serialization of its
//! own params.

use std::borrow::Cow;
use std::collections::BTreeMap;

use arctern_types::completion::{CompleteArgument, CompleteContext, CompletionReference};
use arctern_types::logging::LoggingLevel;
use arctern_types::meta::JsonObject;
use arctern_types::mrtr::InputResponses;
use arctern_types::result::ResultType;
use arctern_types::subscriptions::SubscriptionFilter;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{Error, ErrorKind, Result};

/// The `_meta` of one request.
#[derive(Serialize)]
pub(crate) struct Envelope<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) capabilities: &'a RawValue,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) log_level: Option<LoggingLevel>,
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub(crate) progress_token: Option<i64>,
    /// `traceparent`, `tracestate`, `baggage` (feature `otel`).
    #[serde(flatten)]
    pub(crate) trace: &'a TraceFields,
}

#[cfg(feature = "otel")]
pub(crate) use crate::otel::TraceFields;

/// Without the `otel` feature a request carries no trace context.
#[cfg(not(feature = "otel"))]
#[derive(Serialize, Default, Clone)]
pub(crate) struct TraceFields {}

#[cfg(not(feature = "otel"))]
impl TraceFields {
    pub(crate) fn is_empty(&self) -> bool {
        true
    }
}

// The typed encoding, which the tests compare the spliced one with.
#[cfg(test)]
#[derive(Serialize)]
struct Params<'a, P: Serialize> {
    #[serde(flatten)]
    params: &'a P,
    #[serde(rename = "_meta")]
    meta: Envelope<'a>,
}

#[cfg(test)]
#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: Params<'a, P>,
}

/// Serializes a whole JSON-RPC request.
#[cfg(test)]
pub(crate) fn encode_request<P: Serialize>(
    id: i64,
    method: &str,
    params: &P,
    meta: Envelope<'_>,
) -> Result<Bytes> {
    let request = Request {
        jsonrpc: "2.0",
        id,
        method,
        params: Params { params, meta },
    };
    let mut buf = Vec::with_capacity(256);
    serde_json::to_writer(&mut buf, &request)
        .map_err(|e| Error::new(ErrorKind::Codec, "could not encode a request").with_source(e))?;
    Ok(Bytes::from(buf))
}

/// Serializes the params of a request on their own (the pipeline carries them so, to send
/// them again without the caller's types).
pub(crate) fn params_raw<P: Serialize>(params: &P) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(params)
        .map_err(|e| Error::new(ErrorKind::Codec, "could not encode a request").with_source(e))
}

/// The members of serialized params, without the braces: `None` when they are not an
/// object.
fn members(params: &RawValue) -> Option<&str> {
    let text = params.get().trim();
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    Some(inner.trim())
}

/// Writes `{"jsonrpc":"2.0","id":…,"method":…,"params":{<members>,"_meta":<meta>}}`, the
/// `_meta` member left out for `None`.
fn splice<M: Serialize>(
    id: i64,
    method: &str,
    params: &RawValue,
    meta: Option<&M>,
) -> Result<Bytes> {
    let codec = |e| Error::new(ErrorKind::Codec, "could not encode a request").with_source(e);
    let members = members(params)
        .ok_or_else(|| Error::new(ErrorKind::Codec, "request params must be a JSON object"))?;
    let mut buf = Vec::with_capacity(members.len() + 320);
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // Writing to a `Vec` cannot fail.
    let _ = std::io::Write::write_fmt(&mut buf, format_args!("{id}"));
    buf.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut buf, method).map_err(codec)?;
    buf.extend_from_slice(br#","params":{"#);
    buf.extend_from_slice(members.as_bytes());
    if let Some(meta) = meta {
        if !members.is_empty() {
            buf.push(b',');
        }
        buf.extend_from_slice(br#""_meta":"#);
        serde_json::to_writer(&mut buf, meta).map_err(codec)?;
    }
    buf.extend_from_slice(b"}}");
    Ok(Bytes::from(buf))
}

/// [`encode_request`] of params serialized already.
pub(crate) fn encode_request_raw(
    id: i64,
    method: &str,
    params: &RawValue,
    meta: Envelope<'_>,
) -> Result<Bytes> {
    splice(id, method, params, Some(&meta))
}

/// [`encode_legacy_request`] of params serialized already.
pub(crate) fn encode_legacy_request_raw(
    id: i64,
    method: &str,
    params: &RawValue,
    progress_token: Option<i64>,
    trace: &TraceFields,
) -> Result<Bytes> {
    let meta = (progress_token.is_some() || !trace.is_empty()).then_some(LegacyMeta {
        progress_token,
        trace,
    });
    splice(id, method, params, meta.as_ref())
}

/// The `arguments` of serialized `tools/call` params (for the headers that mirror them).
pub(crate) fn arguments_of(params: &RawValue) -> Option<JsonObject> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        arguments: Option<JsonObject>,
    }
    serde_json::from_str::<Probe>(params.get())
        .ok()
        .and_then(|p| p.arguments)
}

/// The `_meta` of a legacy request: a progress token when one is wanted, and trace context.
#[derive(Serialize)]
struct LegacyMeta<'a> {
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<i64>,
    #[serde(flatten)]
    trace: &'a TraceFields,
}

#[derive(Serialize)]
struct LegacyParams<'a, P: Serialize> {
    #[serde(flatten)]
    params: &'a P,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<LegacyMeta<'a>>,
}

#[derive(Serialize)]
struct LegacyRequest<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: LegacyParams<'a, P>,
}

/// Serializes a whole JSON-RPC request of a legacy session: no envelope (the session
/// negotiated it), `_meta.progressToken` only when progress is wanted, trace context when
/// there is some.
pub(crate) fn encode_legacy_request<P: Serialize>(
    id: i64,
    method: &str,
    params: &P,
    progress_token: Option<i64>,
    trace: &TraceFields,
) -> Result<Bytes> {
    let request = LegacyRequest {
        jsonrpc: "2.0",
        id,
        method,
        params: LegacyParams {
            params,
            meta: (progress_token.is_some() || !trace.is_empty()).then_some(LegacyMeta {
                progress_token,
                trace,
            }),
        },
    };
    let mut buf = Vec::with_capacity(256);
    serde_json::to_writer(&mut buf, &request)
        .map_err(|e| Error::new(ErrorKind::Codec, "could not encode a request").with_source(e))?;
    Ok(Bytes::from(buf))
}

/// Params of requests that carry nothing but the envelope.
#[derive(Serialize)]
pub(crate) struct NoParams {}

/// Params of the list requests.
#[derive(Serialize)]
pub(crate) struct CursorParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<&'a str>,
}

/// The multi round-trip members of a retry.
#[derive(Serialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Retry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<&'a InputResponses>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<&'a str>,
}

/// `tools/call` params.
#[derive(Serialize)]
pub(crate) struct CallToolParams<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a JsonObject>,
    #[serde(flatten)]
    pub(crate) retry: Retry<'a>,
}

/// `prompts/get` params.
#[derive(Serialize)]
pub(crate) struct GetPromptParams<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a BTreeMap<String, String>>,
    #[serde(flatten)]
    pub(crate) retry: Retry<'a>,
}

/// `resources/read` params.
#[derive(Serialize)]
pub(crate) struct ReadResourceParams<'a> {
    pub(crate) uri: &'a str,
    #[serde(flatten)]
    pub(crate) retry: Retry<'a>,
}

/// The params of one round of `tools/call`, `prompts/get` or `resources/read`: serialized
/// as the variant's own.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum RoundParams<'a> {
    Tool(CallToolParams<'a>),
    Prompt(GetPromptParams<'a>),
    Resource(ReadResourceParams<'a>),
}

/// `completion/complete` params.
#[derive(Serialize)]
pub(crate) struct CompleteParams<'a> {
    #[serde(rename = "ref")]
    pub(crate) reference: &'a CompletionReference,
    pub(crate) argument: &'a CompleteArgument,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<&'a CompleteContext>,
}

/// `subscriptions/listen` params.
#[derive(Serialize)]
pub(crate) struct ListenParams<'a> {
    pub(crate) notifications: &'a SubscriptionFilter,
}

/// The `resultType` of a result, read without decoding the rest.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
}

/// How a result reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Complete,
    InputRequired,
    /// A task (the tasks extension).
    Task,
    Unknown(String),
}

/// Reads a result's `resultType`: absent means complete (older servers).
pub(crate) fn result_kind(raw: &RawValue) -> Result<Kind> {
    let not_object = || {
        Error::new(
            ErrorKind::Codec,
            "the server sent a result that is not an object",
        )
    };
    // A derived struct would also accept a JSON array.
    if !raw.get().starts_with('{') {
        return Err(not_object());
    }
    let peek: Peek<'_> =
        serde_json::from_str(raw.get()).map_err(|e| not_object().with_source(e))?;
    Ok(match peek.result_type.as_deref() {
        None => Kind::Complete,
        Some(t) if t == ResultType::COMPLETE.as_str() => Kind::Complete,
        Some(t) if t == ResultType::INPUT_REQUIRED.as_str() => Kind::InputRequired,
        Some(t) if t == ResultType::TASK.as_str() => Kind::Task,
        Some(t) => Kind::Unknown(t.to_owned()),
    })
}

/// Decodes a result of a known type.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(raw: &RawValue, what: &str) -> Result<T> {
    serde_json::from_str(raw.get()).map_err(|e| {
        Error::new(
            ErrorKind::Codec,
            format!("the server sent a malformed {what} result"),
        )
        .with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_with_the_envelope_last() {
        let caps = RawValue::from_string("{}".into()).unwrap();
        let info = RawValue::from_string(r#"{"name":"c","version":"1"}"#.into()).unwrap();
        let args: JsonObject = serde_json::from_str(r#"{"a":1}"#).unwrap();
        let bytes = encode_request(
            7,
            "tools/call",
            &CallToolParams {
                name: "t",
                arguments: Some(&args),
                retry: Retry {
                    input_responses: None,
                    request_state: Some("s\"1"),
                },
            },
            Envelope {
                version: "2026-07-28",
                capabilities: &caps,
                info: Some(&info),
                log_level: None,
                progress_token: Some(7),
                trace: &TraceFields::default(),
            },
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"requestState":"s\"1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":7}}}"#
        );
        let empty = encode_request(
            1,
            "server/discover",
            &NoParams {},
            Envelope {
                version: "v",
                capabilities: &caps,
                info: None,
                log_level: Some(LoggingLevel::Info),
                progress_token: None,
                trace: &TraceFields::default(),
            },
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&empty).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}}"#
        );
    }

    #[test]
    fn encodes_legacy_requests_without_the_envelope() {
        let bytes = encode_legacy_request(
            3,
            "tools/list",
            &CursorParams { cursor: None },
            None,
            &TraceFields::default(),
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#
        );
        let bytes =
            encode_legacy_request(4, "ping", &NoParams {}, Some(4), &TraceFields::default())
                .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"progressToken":4}}}"#
        );
    }

    #[test]
    fn reads_result_types() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(result_kind(&raw("{}")).unwrap(), Kind::Complete);
        assert_eq!(
            result_kind(&raw(r#"{"resultType":"input_required"}"#)).unwrap(),
            Kind::InputRequired
        );
        assert_eq!(
            result_kind(&raw(r#"{"resultType":"task"}"#)).unwrap(),
            Kind::Task
        );
        assert_eq!(
            result_kind(&raw(r#"{"resultType":"later"}"#)).unwrap(),
            Kind::Unknown("later".into())
        );
        assert!(result_kind(&raw("[]")).is_err());
    }

    #[test]
    fn raw_params_encode_as_typed_ones_do() {
        let caps = serde_json::value::to_raw_value(&serde_json::json!({"roots": {}})).unwrap();
        let trace = TraceFields::default();
        let meta = || Envelope {
            version: "2026-07-28",
            capabilities: &caps,
            info: None,
            log_level: None,
            progress_token: Some(7),
            trace: &trace,
        };
        for params in [
            serde_json::json!({}),
            serde_json::json!({"name": "echo", "arguments": {"text": "a}b"}}),
        ] {
            let raw = params_raw(&params).unwrap();
            assert_eq!(
                encode_request_raw(7, "tools/call", &raw, meta()).unwrap(),
                encode_request(7, "tools/call", &params, meta()).unwrap()
            );
            assert_eq!(
                encode_legacy_request_raw(8, "tools/call", &raw, None, &trace).unwrap(),
                encode_legacy_request(8, "tools/call", &params, None, &trace).unwrap()
            );
            assert_eq!(
                encode_legacy_request_raw(8, "tools/call", &raw, Some(8), &trace).unwrap(),
                encode_legacy_request(8, "tools/call", &params, Some(8), &trace).unwrap()
            );
        }
        let list = params_raw(&serde_json::json!([1])).unwrap();
        assert!(encode_request_raw(1, "x", &list, meta()).is_err());
        let args = params_raw(&serde_json::json!({"name": "t", "arguments": {"a": 1}})).unwrap();
        assert_eq!(arguments_of(&args).unwrap()["a"], 1);
    }

    #[cfg(feature = "otel")]
    #[test]
    fn trace_context_goes_in_meta_unprefixed() {
        let caps = serde_json::value::to_raw_value(&serde_json::json!({})).unwrap();
        let trace = TraceFields {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: None,
            baggage: Some("tenant=acme".into()),
        };
        let bytes = encode_request(
            2,
            "tools/list",
            &NoParams {},
            Envelope {
                version: "v",
                capabilities: &caps,
                info: None,
                log_level: None,
                progress_token: None,
                trace: &trace,
            },
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","baggage":"tenant=acme"}}}"#
        );
        let legacy = encode_legacy_request(3, "ping", &NoParams {}, None, &trace).unwrap();
        assert_eq!(
            std::str::from_utf8(&legacy).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","baggage":"tenant=acme"}}}"#
        );
    }
}
