//! The benchmark contract on the wire: the JSON-RPC bodies and HTTP headers the load
//! generator sends (always the full 2026-07-28 envelope), and the checks every reply must
//! pass before it counts.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::PROTOCOL_VERSION;

/// The `_meta` envelope every request carries: protocol version, client info, and client
/// capabilities that declare (form) elicitation, which `confirm` needs.
pub const REQUEST_META: &str = concat!(
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"arctern-bench","version":"0.1.0"},"#,
    r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#
);

/// The answer to `confirm`'s question sent in round 2.
pub const CONFIRM_ANSWER: &str = r#"{"confirm":{"action":"accept","content":{"ok":true}}}"#;

/// The `Content-Type` of every request body and of the ceiling's replies.
pub const JSON: &str = "application/json";

/// The `Accept` header of every request.
pub const ACCEPT: &str = "application/json, text/event-stream";

/// The HTTP headers of one request besides `Host`, `Content-Type`, `Accept` and
/// `Content-Length`: `MCP-Protocol-Version`, `Mcp-Method` and, for `tools/call`,
/// `Mcp-Name`.
pub fn mcp_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
    let mut headers = vec![
        ("mcp-protocol-version", PROTOCOL_VERSION),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    headers
}

/// A `tools/call` body for `tool` with `{"text": text}`. With `retry = Some(state)` it is
/// the second round of `confirm`: it carries the answer and `state`, which must be the raw
/// JSON string of the `requestState` received (it is echoed byte for byte).
pub fn tools_call_body(id: u64, tool: &str, text: &str, retry: Option<&str>) -> Vec<u8> {
    let mut body = String::with_capacity(400 + retry.map_or(0, str::len));
    let _ = write!(
        body,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":{{"text":{}}},"#,
        json_string(tool),
        json_string(text),
    );
    if let Some(state) = retry {
        let _ = write!(
            body,
            r#""inputResponses":{CONFIRM_ANSWER},"requestState":{state},"#
        );
    }
    body.push_str(REQUEST_META);
    body.push_str("}}");
    body.into_bytes()
}

/// A `tools/call publish` body announcing an update of `uri` (the open-streams scenario).
pub fn publish_body(id: u64, uri: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"publish","arguments":{{"uri":{}}},{REQUEST_META}}}}}"#,
        json_string(uri)
    )
    .into_bytes()
}

/// A `subscriptions/listen` body subscribing to updates of `uri`.
pub fn listen_body(id: u64, uri: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{{"resourceSubscriptions":[{}]}},{REQUEST_META}}}}}"#,
        json_string(uri)
    )
    .into_bytes()
}

/// The complete HTTP/1.1 request of a `subscriptions/listen` stream, as sent on a bare
/// socket: POST `path` on `host` with the same headers as every other request.
pub fn listen_request(host: &str, path: &str, id: u64, uri: &str) -> Vec<u8> {
    let body = listen_body(id, uri);
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: {JSON}\r\naccept: {ACCEPT}\r\n"
    );
    for (name, value) in mcp_headers("subscriptions/listen", None) {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let _ = write!(head, "content-length: {}\r\n\r\n", body.len());
    let mut request = head.into_bytes();
    request.extend_from_slice(&body);
    request
}

/// One message on a `subscriptions/listen` stream, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenEvent {
    /// `notifications/subscriptions/acknowledged`, honouring the subscription to the URI.
    Acknowledged,
    /// `notifications/resources/updated` for the URI.
    Updated,
}

#[derive(Deserialize)]
struct ListenMessage<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<ListenParams<'a>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ListenParams<'a> {
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
    notifications: Option<HonouredFilter>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<BTreeMap<Cow<'a, str>, &'a RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HonouredFilter {
    #[serde(default)]
    resource_subscriptions: Vec<String>,
}

/// Checks one message of the `subscriptions/listen` stream opened with request `id` and
/// subscribed to `uri`: the acknowledgement honouring `uri`, or an update of `uri`, each
/// tagged with the subscription id `id`. Anything else (an error, the final result, another
/// notification, a wrong or missing subscription id) is an error.
pub fn check_listen_event(data: &str, id: u64, uri: &str) -> Result<ListenEvent, String> {
    let message: ListenMessage<'_> =
        serde_json::from_str(data).map_err(|e| format!("stream message is not JSON-RPC: {e}"))?;
    if let Some(error) = message.error {
        return Err(format!("JSON-RPC error: {}", truncate(error.get(), 200)));
    }
    if message.result.is_some() {
        return Err("the stream ended with its final result".into());
    }
    let method = message
        .method
        .ok_or_else(|| format!("not a notification: {}", truncate(data, 200)))?;
    let params = message
        .params
        .ok_or_else(|| format!("{method} without params"))?;
    let tagged = params
        .meta
        .as_ref()
        .and_then(|m| m.get("io.modelcontextprotocol/subscriptionId"))
        .map(|v| v.get());
    if tagged != Some(id.to_string().as_str()) {
        return Err(format!(
            "{method} tagged with subscription id {tagged:?}, expected {id}"
        ));
    }
    match method.as_ref() {
        "notifications/subscriptions/acknowledged" => {
            let honoured = params
                .notifications
                .map(|f| f.resource_subscriptions)
                .unwrap_or_default();
            if honoured.iter().any(|u| u == uri) {
                Ok(ListenEvent::Acknowledged)
            } else {
                Err(format!(
                    "the acknowledgement does not honour the subscription to {uri} ({honoured:?})"
                ))
            }
        }
        "notifications/resources/updated" => match params.uri.as_deref() {
            Some(got) if got == uri => Ok(ListenEvent::Updated),
            got => Err(format!("update of {got:?}, expected {uri}")),
        },
        other => Err(format!("unexpected {other} on the stream")),
    }
}

/// The ceiling's reply to an echo request body: the bytes of an echo reply as an MCP server
/// writes it, with the request's raw `id` and `text` copied into a fixed template (a byte
/// scan, no JSON parser).
pub fn ceiling_reply(request: &[u8]) -> Vec<u8> {
    let id = raw_member(request, b"\"id\":").unwrap_or(b"null");
    let text = raw_member(request, b"\"text\":").unwrap_or(b"\"\"");
    let mut reply = Vec::with_capacity(192 + text.len());
    reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    reply.extend_from_slice(id);
    reply.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    reply.extend_from_slice(text);
    reply.extend_from_slice(
        br#"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ceiling","version":"0.1.0"}}}}"#,
    );
    reply
}

/// The JSON value after `"key":` in `body`: a number, or a string with its quotes.
fn raw_member<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = body.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &body[start..];
    if rest.first() == Some(&b'"') {
        let mut escaped = false;
        for (i, &b) in rest.iter().enumerate().skip(1) {
            match b {
                b'\\' if !escaped => escaped = true,
                b'"' if !escaped => return Some(&rest[..=i]),
                _ => escaped = false,
            }
        }
        None
    } else {
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// A `tools/list` body.
pub fn tools_list_body(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{REQUEST_META}}}}}"#)
        .into_bytes()
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// The JSON-RPC message in a reply body: the body itself for `application/json`, or the
/// `data:` of the SSE event that carries a response (`result` or `error`).
pub fn reply_message<'a>(
    content_type: Option<&str>,
    body: &'a [u8],
) -> Result<Cow<'a, [u8]>, String> {
    let sse = content_type.is_some_and(|ct| ct.starts_with("text/event-stream"));
    if !sse {
        return Ok(Cow::Borrowed(body));
    }
    let text = std::str::from_utf8(body).map_err(|_| "SSE body is not UTF-8".to_owned())?;
    // Events are separated by blank lines; an event's data lines are joined with '\n'.
    for event in text.split("\n\n").flat_map(|e| e.split("\r\n\r\n")) {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        let joined = data.join("\n");
        if joined.contains("\"result\"") || joined.contains("\"error\"") {
            return Ok(Cow::Owned(joined.into_bytes()));
        }
    }
    Err("SSE stream without a response event".to_owned())
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The numeric id of a response, `None` for a notification or request (a message with a
/// `method`), or an error for anything that is not JSON-RPC or has a non-numeric id.
pub fn response_id(message: &[u8]) -> Result<Option<u64>, String> {
    let envelope: Envelope<'_> =
        serde_json::from_slice(message).map_err(|e| format!("message is not JSON-RPC: {e}"))?;
    if envelope.method.is_some() {
        return Ok(None);
    }
    match envelope.id {
        Some(id) => id
            .get()
            .parse()
            .map(Some)
            .map_err(|_| format!("response id {} is not a number", truncate(id.get(), 40))),
        None => Err(format!(
            "response without id: {}",
            truncate(&String::from_utf8_lossy(message), 200)
        )),
    }
}

/// The `result` of a response to request `id`, or why there is none.
fn result_of<'a>(message: &'a [u8], id: u64) -> Result<&'a str, String> {
    let envelope: Envelope<'a> =
        serde_json::from_slice(message).map_err(|e| format!("reply is not JSON-RPC: {e}"))?;
    if let Some(error) = envelope.error {
        return Err(format!("JSON-RPC error: {}", truncate(error.get(), 200)));
    }
    let got = envelope.id.map(RawValue::get).unwrap_or("null");
    if got != id.to_string() {
        return Err(format!("reply id {got} does not match request id {id}"));
    }
    envelope
        .result
        .map(RawValue::get)
        .ok_or_else(|| "response without result".to_owned())
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextResult<'a> {
    #[serde(borrow)]
    content: Vec<Block<'a>>,
    #[serde(borrow)]
    result_type: Option<Cow<'a, str>>,
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// Checks a complete `tools/call` result: one text block equal to `expected`.
pub fn check_text_result(message: &[u8], id: u64, expected: &str) -> Result<(), String> {
    let result = result_of(message, id)?;
    let result: TextResult<'_> =
        serde_json::from_str(result).map_err(|e| format!("not a CallToolResult: {e}"))?;
    if let Some(kind) = result.result_type.as_deref()
        && kind != "complete"
    {
        return Err(format!("resultType {kind:?}, expected \"complete\""));
    }
    if result.is_error == Some(true) {
        return Err("the tool reported isError".to_owned());
    }
    match result.content.as_slice() {
        [block] if block.kind == "text" && block.text.as_deref() == Some(expected) => Ok(()),
        [block] => Err(format!(
            "content block {:?} {:?}, expected text {expected:?}",
            block.kind, block.text
        )),
        blocks => Err(format!("{} content blocks, expected 1", blocks.len())),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired<'a> {
    #[serde(borrow)]
    result_type: Cow<'a, str>,
    #[serde(default)]
    input_requests: BTreeMap<String, InputRequest>,
    #[serde(borrow)]
    request_state: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InputRequest {
    method: String,
    params: ElicitParams,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ElicitParams {
    mode: Option<String>,
    requested_schema: RequestedSchema,
}

#[derive(Deserialize)]
struct RequestedSchema {
    properties: BTreeMap<String, Property>,
}

#[derive(Deserialize)]
struct Property {
    #[serde(rename = "type")]
    kind: String,
}

/// Checks round 1 of `confirm` — `input_required` with exactly one form elicitation under
/// `confirm` asking for `{ok: boolean}`, and a `requestState` — and returns the state as
/// its raw JSON string, to be echoed byte for byte.
pub fn check_confirm_round1(message: &[u8], id: u64) -> Result<String, String> {
    let result = result_of(message, id)?;
    let result: InputRequired<'_> =
        serde_json::from_str(result).map_err(|e| format!("not an InputRequiredResult: {e}"))?;
    if result.result_type != "input_required" {
        return Err(format!(
            "resultType {:?}, expected \"input_required\"",
            result.result_type
        ));
    }
    if result.input_requests.len() != 1 {
        return Err(format!(
            "{} input requests, expected 1",
            result.input_requests.len()
        ));
    }
    let request = result
        .input_requests
        .get("confirm")
        .ok_or_else(|| "no input request under the key \"confirm\"".to_owned())?;
    if request.method != "elicitation/create" {
        return Err(format!("input request method {:?}", request.method));
    }
    if request.params.mode.as_deref().is_some_and(|m| m != "form") {
        return Err(format!("elicitation mode {:?}", request.params.mode));
    }
    match request.params.requested_schema.properties.get("ok") {
        Some(p) if p.kind == "boolean" => {}
        _ => return Err("requested schema has no boolean \"ok\"".to_owned()),
    }
    let state = result
        .request_state
        .ok_or_else(|| "input_required without requestState".to_owned())?
        .get();
    if !state.starts_with('"') || state.len() < 3 {
        return Err(format!(
            "requestState is not a non-empty string: {}",
            truncate(state, 80)
        ));
    }
    Ok(state.to_owned())
}

#[derive(Deserialize)]
struct ListResult<'a> {
    #[serde(borrow)]
    tools: Vec<ToolEntry<'a>>,
}

#[derive(Deserialize)]
struct ToolEntry<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

/// Checks a `tools/list` result: `expected` tools, `echo` among them.
pub fn check_tools_list(message: &[u8], id: u64, expected: usize) -> Result<(), String> {
    let result = result_of(message, id)?;
    let result: ListResult<'_> =
        serde_json::from_str(result).map_err(|e| format!("not a ListToolsResult: {e}"))?;
    if result.tools.len() != expected {
        return Err(format!(
            "{} tools listed, expected {expected}",
            result.tools.len()
        ));
    }
    if !result.tools.iter().any(|t| t.name == "echo") {
        return Err("echo is not listed".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_requests_and_events() {
        let request =
            String::from_utf8(listen_request("127.0.0.1:1", "/mcp", 9, "bench://r")).unwrap();
        let (head, body) = request.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /mcp HTTP/1.1\r\n"));
        assert!(head.contains("mcp-method: subscriptions/listen\r\n"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["method"], "subscriptions/listen");
        assert_eq!(
            v["params"]["notifications"]["resourceSubscriptions"][0],
            "bench://r"
        );
        let v: serde_json::Value = serde_json::from_slice(&publish_body(3, "bench://r")).unwrap();
        assert_eq!(v["params"]["arguments"]["uri"], "bench://r");

        let meta =
            |id: &str| format!(r#""_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}}"#);
        let ack = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"notifications":{{"resourceSubscriptions":["bench://r"]}},{}}}}}"#,
            meta("9")
        );
        assert_eq!(
            check_listen_event(&ack, 9, "bench://r"),
            Ok(ListenEvent::Acknowledged)
        );
        assert!(
            check_listen_event(&ack, 8, "bench://r")
                .unwrap_err()
                .contains("subscription id")
        );
        let refused = ack.replace(r#"["bench://r"]"#, "[]");
        assert!(
            check_listen_event(&refused, 9, "bench://r")
                .unwrap_err()
                .contains("honour")
        );
        let update = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"bench://r",{}}}}}"#,
            meta("9")
        );
        assert_eq!(
            check_listen_event(&update, 9, "bench://r"),
            Ok(ListenEvent::Updated)
        );
        assert!(check_listen_event(&update, 9, "bench://other").is_err());
        let string_id = update.replace(":9}", r#":"9"}"#);
        assert!(check_listen_event(&string_id, 9, "bench://r").is_err());
        let error = r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"Subscription limit reached"}}"#;
        assert!(
            check_listen_event(error, 9, "bench://r")
                .unwrap_err()
                .contains("limit")
        );
    }

    #[test]
    fn call_bodies_are_valid_json_with_the_envelope() {
        let body = tools_call_body(7, "echo", "hi \"there\"", None);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["method"], "tools/call");
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(v["params"]["arguments"]["text"], "hi \"there\"");
        let meta = &v["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            PROTOCOL_VERSION
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object());
        assert!(v["params"].get("requestState").is_none());

        let retry = tools_call_body(8, "confirm", "x", Some(r#""tok.en""#));
        let raw = String::from_utf8(retry.clone()).unwrap();
        assert!(raw.contains(r#""requestState":"tok.en""#));
        let v: serde_json::Value = serde_json::from_slice(&retry).unwrap();
        assert_eq!(
            v["params"]["inputResponses"]["confirm"]["content"]["ok"],
            true
        );
        assert_eq!(v["params"]["inputResponses"]["confirm"]["action"], "accept");

        let list: serde_json::Value = serde_json::from_slice(&tools_list_body(9)).unwrap();
        assert_eq!(list["method"], "tools/list");
        assert!(list["params"]["_meta"].is_object());
    }

    #[test]
    fn the_ceiling_copies_id_and_text() {
        let request = tools_call_body(42, "echo", "a \"q\" b", None);
        let reply = ceiling_reply(&request);
        check_text_result(&reply, 42, "a \"q\" b").unwrap();
    }

    #[test]
    fn checks_text_results() {
        let ok = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a"}],"resultType":"complete"}}"#;
        check_text_result(ok, 3, "a").unwrap();
        assert!(check_text_result(ok, 4, "a").unwrap_err().contains("id"));
        assert!(check_text_result(ok, 3, "b").is_err());
        let err = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}"#;
        assert!(
            check_text_result(err, 3, "a")
                .unwrap_err()
                .contains("-32602")
        );
        let flagged = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a"}],"isError":true}}"#;
        assert!(check_text_result(flagged, 3, "a").is_err());
    }

    #[test]
    fn checks_confirm_round1_and_keeps_the_raw_state() {
        let reply = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"mode":"form","message":"Confirm?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"AbC-_9"}}"#;
        assert_eq!(check_confirm_round1(reply, 1).unwrap(), r#""AbC-_9""#);
        let no_state = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}}}"#;
        assert!(check_confirm_round1(no_state, 1).is_err());
        let other_key = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"x":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}},"requestState":"s"}}"#;
        assert!(check_confirm_round1(other_key, 1).is_err());
    }

    #[test]
    fn finds_the_response_in_an_sse_body() {
        let body = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"z\"}]}}\r\n\r\n";
        let message = reply_message(Some("text/event-stream"), body).unwrap();
        check_text_result(&message, 2, "z").unwrap();
        assert!(reply_message(Some("text/event-stream"), b": ping\n\n").is_err());
    }

    #[test]
    fn checks_tool_lists() {
        let reply = br#"{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"echo","inputSchema":{}},{"name":"t1"}]}}"#;
        check_tools_list(reply, 5, 2).unwrap();
        assert!(check_tools_list(reply, 5, 100).is_err());
    }
}
