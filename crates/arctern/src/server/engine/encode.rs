//! Writing responses: the 2026-07-28 shape (with `resultType`, caching hints and
//! `serverInfo` in `_meta`), and the legacy shape (without the members only 2026-07-28
//! has). JSON envelopes are spliced by hand so that a result serialized beforehand
//! ([`Listed::shared`](crate::server::Listed::shared)) is copied, not parsed again.

use arctern_types::legacy::strip_modern_members;
use arctern_types::meta::{JsonObject, Meta, SERVER_INFO_KEY};
use arctern_types::mrtr::InputRequiredResult;
use arctern_types::{ErrorObject, RequestId};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::Server;
use crate::server::config::CacheHint;
use crate::server::listed::Shared;
use crate::server::mrtr::write_question;
use crate::server::wire::WireResult;

impl<H> Server<H> {
    /// Encodes a successful response, stamping `serverInfo` into the result's `_meta`.
    pub(crate) fn encode_result<R: WireResult>(&self, id: &RequestId, mut result: R) -> Bytes {
        let meta = result.meta_mut().take();
        let mut buf = result_head(256, id);
        let start = buf.len();
        if let Err(e) = serde_json::to_writer(&mut buf, &result) {
            tracing::error!(error = %e, "could not serialize a result");
            return unserializable(id);
        }
        self.finish_result(buf, start, meta.as_ref())
    }

    /// Encodes an `input_required` result as [`encode_result`](Self::encode_result) would
    /// (the same members in the same order), but copies each question's JSON from where it
    /// was serialized once (see [`write_question`]) instead of serializing it again.
    pub(crate) fn encode_input_required(
        &self,
        id: &RequestId,
        mut result: InputRequiredResult,
    ) -> Bytes {
        let meta = result.meta.take();
        let mut buf = result_head(512, id);
        let start = buf.len();
        buf.extend_from_slice(b"{\"resultType\":");
        write_json(&mut buf, &result.result_type);
        let mut written = Ok(());
        if let Some(requests) = &result.input_requests {
            buf.extend_from_slice(b",\"inputRequests\":{");
            for (i, (key, request)) in requests.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_json(&mut buf, key);
                buf.push(b':');
                written = written.and(write_question(&mut buf, key, request));
            }
            buf.push(b'}');
        }
        if let Some(state) = &result.request_state {
            buf.extend_from_slice(b",\"requestState\":");
            write_json(&mut buf, state);
        }
        for (key, value) in &result.extra {
            buf.push(b',');
            write_json(&mut buf, key);
            buf.push(b':');
            write_json(&mut buf, value);
        }
        buf.push(b'}');
        if let Err(e) = written {
            tracing::error!(error = %e, "could not serialize a result");
            return unserializable(id);
        }
        self.finish_result(buf, start, meta.as_ref())
    }

    /// Encodes a successful response whose result was serialized beforehand: copies it in,
    /// then adds the caching hints it leaves unset and stamps `serverInfo`, as
    /// [`encode_result`](Self::encode_result) does for a value.
    pub(crate) fn encode_shared(
        &self,
        id: &RequestId,
        shared: &Shared,
        hint: Option<CacheHint>,
    ) -> Bytes {
        let info_len = self
            .inner
            .server_info
            .as_deref()
            .map_or(0, |i| i.get().len());
        let mut buf = result_head(shared.json.len() + info_len + 128, id);
        let start = buf.len();
        buf.extend_from_slice(&shared.json);
        if let Some(hint) = hint {
            if shared.ttl_unset {
                push_member(&mut buf, start, "ttlMs", &hint.ttl_ms);
            }
            if shared.scope_unset {
                push_member(&mut buf, start, "cacheScope", &hint.scope);
            }
        }
        self.finish_result(buf, start, shared.meta.as_ref())
    }

    /// Ends a response whose result object (from `start`) is in `buf`: merges `serverInfo`
    /// into the result's `_meta` and closes the envelope.
    fn finish_result(&self, mut buf: Vec<u8>, start: usize, meta: Option<&Meta>) -> Bytes {
        debug_assert_eq!(buf.last(), Some(&b'}'));
        let info = self
            .inner
            .server_info
            .as_deref()
            .filter(|_| meta.is_none_or(|m| !m.contains_key(SERVER_INFO_KEY)));
        let has_meta = info.is_some() || meta.is_some_and(|m| !m.is_empty());
        if has_meta {
            buf.pop();
            if buf.len() - start > 1 {
                buf.push(b',');
            }
            buf.extend_from_slice(b"\"_meta\":{");
            let mut first = true;
            if let Some(info) = info {
                buf.extend_from_slice(b"\"io.modelcontextprotocol/serverInfo\":");
                buf.extend_from_slice(info.get().as_bytes());
                first = false;
            }
            for (k, v) in meta.into_iter().flatten() {
                if !first {
                    buf.push(b',');
                }
                first = false;
                write_json(&mut buf, k);
                buf.push(b':');
                write_json(&mut buf, v);
            }
            buf.extend_from_slice(b"}}");
        }
        buf.push(b'}');
        Bytes::from(buf)
    }
}

/// A buffer of `capacity` bytes holding the start of a response, up to where its result
/// goes: `{"jsonrpc":"2.0","id":…,"result":`.
fn result_head(capacity: usize, id: &RequestId) -> Vec<u8> {
    let mut buf = Vec::with_capacity(capacity);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(&mut buf, id);
    buf.extend_from_slice(b",\"result\":");
    buf
}

/// The error response for a result that could not be serialized.
fn unserializable(id: &RequestId) -> Bytes {
    encode_error(
        Some(id),
        &ErrorObject::internal_error("Could not serialize the result"),
    )
}

/// Encodes an error response; the id is omitted when unknown.
pub(crate) fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Bytes {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",");
    if let Some(id) = id {
        buf.extend_from_slice(b"\"id\":");
        write_json(&mut buf, id);
        buf.push(b',');
    }
    buf.extend_from_slice(b"\"error\":");
    write_json(&mut buf, error);
    buf.push(b'}');
    Bytes::from(buf)
}

/// Adds `"key":value` as the last member of the JSON object that starts at `start` and ends
/// `buf`.
fn push_member<T: Serialize + ?Sized>(buf: &mut Vec<u8>, start: usize, key: &str, value: &T) {
    debug_assert_eq!(buf.last(), Some(&b'}'));
    buf.pop();
    if buf.len() - start > 1 {
        buf.push(b',');
    }
    write_json(buf, key);
    buf.push(b':');
    write_json(buf, value);
    buf.push(b'}');
}

fn write_json<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    // Ids, strings and JSON values cannot fail to serialize into a Vec.
    serde_json::to_writer(&mut *buf, value).expect("JSON value serializes");
}

/// `{"jsonrpc":"2.0","id":…,"result":{}}`.
pub(crate) fn encode_empty(id: &RequestId) -> Bytes {
    encode_raw(id, b"{}")
}

/// Encodes a result without the members only 2026-07-28 has (`resultType`, `ttlMs`,
/// `cacheScope`).
pub(crate) fn encode_legacy_result<R: Serialize>(id: &RequestId, result: &R) -> Bytes {
    let value = match serde_json::to_value(result) {
        Ok(Value::Object(mut map)) => {
            strip_modern_members(&mut map);
            Value::Object(map)
        }
        Ok(_) | Err(_) => {
            tracing::error!("could not serialize a result as a JSON object");
            return unserializable(id);
        }
    };
    match serde_json::to_vec(&value) {
        Ok(bytes) => encode_raw(id, &bytes),
        Err(_) => unserializable(id),
    }
}

/// Encodes a result serialized beforehand exactly as [`encode_legacy_result`] encodes its
/// value.
pub(crate) fn encode_legacy_shared(id: &RequestId, shared: &Shared) -> Bytes {
    let parsed: JsonObject = match serde_json::from_slice(&shared.json) {
        Ok(map) => map,
        Err(_) => {
            tracing::error!("a prepared result is not a JSON object");
            return unserializable(id);
        }
    };
    // Put `_meta` back where the value has it, right after `resultType`, so that stripping
    // leaves the members in the same order.
    let mut map = JsonObject::with_capacity(parsed.len() + 1);
    let mut members = parsed.into_iter().peekable();
    if let Some(meta) = &shared.meta {
        if let Some((key, value)) = members.next_if(|(key, _)| key == "resultType") {
            map.insert(key, value);
        }
        map.insert("_meta".to_owned(), Value::Object(meta.clone()));
    }
    map.extend(members);
    strip_modern_members(&mut map);
    match serde_json::to_vec(&map) {
        Ok(bytes) => encode_raw(id, &bytes),
        Err(_) => unserializable(id),
    }
}

fn encode_raw(id: &RequestId, result: &[u8]) -> Bytes {
    let mut buf = result_head(32 + result.len(), id);
    buf.extend_from_slice(result);
    buf.push(b'}');
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use arctern_types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};
    use arctern_types::mrtr::InputRequest;
    use serde_json::json;

    use super::*;
    use crate::server::McpServer;
    use crate::server::mrtr::digest_of;

    /// The spliced `input_required` encoding is byte for byte the generic one, whether the
    /// question's JSON is remembered yet or not, and follows a changed question.
    #[test]
    fn input_required_splices_the_same_bytes() {
        let server = McpServer::new("encode-test").build().unwrap();
        let id = RequestId::Number(3);
        let question = |message: &str| {
            InputRequest::elicit_form(
                message,
                RequestedSchema::new().required("ok", PrimitiveSchemaDefinition::boolean()),
            )
        };
        let result = |message: &str| {
            let mut meta = Meta::new();
            meta.insert("note".into(), json!("kept"));
            let mut extra = JsonObject::new();
            extra.insert("x-extra".into(), json!([1, "two"]));
            let mut result = InputRequiredResult::new()
                .with_input_request("b-key", question(message))
                .with_input_request("a \"key\"", question("Other?"))
                .with_request_state("sealed-state");
            result.meta = Some(meta);
            result.extra = extra;
            result
        };
        for message in ["Go ahead?", "Go ahead?", "Changed?", "Changed?"] {
            let generic = server.encode_result(&id, result(message));
            let spliced = server.encode_input_required(&id, result(message));
            assert_eq!(
                std::str::from_utf8(&spliced).unwrap(),
                std::str::from_utf8(&generic).unwrap()
            );
            // Remembered from now on (as the boundary's pins do on a real round).
            digest_of("b-key", &question(message));
        }
    }
}
