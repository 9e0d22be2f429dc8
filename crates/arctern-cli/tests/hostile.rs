//! The `arctern` command against small hostile servers on 127.0.0.1 (issue 19, findings 13
//! to 16): escape sequences in everything a server says, silence, and rounds that ask for
//! many LLM completions. Each server is a plain HTTP/1.1 responder on a thread that stops by
//! itself after a minute.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::run;
use serde_json::{Value, json};

/// What the server does with one JSON-RPC message: a reply (content type, body), or `None`
/// to keep the request waiting until the server stops.
type Script = fn(&Value) -> Option<(&'static str, String)>;

/// Serves `script` on 127.0.0.1 for a minute; returns the endpoint URL.
fn hostile(script: Script) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            match listener.accept() {
                Ok((stream, _)) => {
                    std::thread::spawn(move || serve(stream, script, until));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    url
}

fn serve(stream: TcpStream, script: Script, until: Instant) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if !request_line.starts_with("POST") {
            let _ = out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
            continue;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let reply = if message.get("id").is_none() {
            Some(("", String::new()))
        } else {
            script(&message)
        };
        let Some((content_type, body)) = reply else {
            // Silence: hold the request until the server stops.
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        };
        let head = if content_type.is_empty() {
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
        } else {
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
        };
        if out.write_all(head.as_bytes()).is_err() || out.write_all(body.as_bytes()).is_err() {
            return;
        }
    }
}

fn json_reply(message: &Value, result: Value) -> Option<(&'static str, String)> {
    Some((
        "application/json",
        json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string(),
    ))
}

fn discover(message: &Value) -> Option<(&'static str, String)> {
    json_reply(
        message,
        json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo":
                {"name": "\u{1b}]0;pwned\u{7}hostile", "version": "0"}}}),
    )
}

/// An OSC 8 link whose visible text lies, a window title, a screen clear, a line overwrite.
const NASTY: &str = "\u{1b}]8;;https://evil.example/\u{1b}\\https://accounts.google.com/\u{1b}]8;;\u{1b}\\ \u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{1b}[2K\u{9b}31m\u{202e}";

fn nasty_server(message: &Value) -> Option<(&'static str, String)> {
    match message["method"].as_str().unwrap_or("") {
        "server/discover" => discover(message),
        "tools/list" => json_reply(
            message,
            json!({"tools": [{"name": "t", "description": NASTY,
                "inputSchema": {"type": "object"}}]}),
        ),
        "tools/call" if message["params"]["name"] == "fails" => Some((
            "application/json",
            json!({"jsonrpc": "2.0", "id": message["id"],
                "error": {"code": -32000, "message": NASTY}})
            .to_string(),
        )),
        "tools/call" => {
            let token = &message["params"]["_meta"]["progressToken"];
            let events = [
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "error", "logger": NASTY, "data": NASTY}}),
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 2,
                        "message": NASTY}}),
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "content": [{"type": "text", "text": NASTY}]}}),
            ];
            let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            Some(("text/event-stream", body))
        }
        _ => None,
    }
}

fn assert_clean(what: &str, text: &str) {
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\r', '\u{202e}'] {
        assert!(
            !text.contains(bad),
            "{what} holds {bad:?} from the server:\n{text:?}"
        );
    }
}

/// Before: every server string reached the terminal raw (window titles, lying links, a
/// cleared screen).
#[test]
fn server_text_reaches_the_terminal_neutralized() {
    let url = hostile(nasty_server);
    let tools = run(&["tools", &url]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert_clean("tools' stdout", &tools.stdout);
    assert!(
        tools.stdout.contains("\\x1b]8;;https://evil.example/"),
        "{}",
        tools.stdout
    );

    let call = run(&["call", &url, "t"]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert_clean("call's stdout", &call.stdout);
    assert_clean("call's stderr (logs, progress)", &call.stderr);
    assert!(call.stderr.contains("[error]"), "{}", call.stderr);

    let failed = run(&["call", &url, "fails"]);
    assert_ne!(failed.code, 0);
    assert_clean("an error's stderr", &failed.stderr);
}

/// `--output json` stays exact: the document parses back to the server's own strings.
#[test]
fn json_output_keeps_server_text_exact() {
    let url = hostile(nasty_server);
    let tools = run(&["tools", &url, "--output", "json"]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert_clean("the JSON document", &tools.stdout);
    let document: Value = serde_json::from_str(&tools.stdout).unwrap();
    assert_eq!(document["tools"][0]["description"], NASTY);

    let call = run(&["call", &url, "t", "--output", "json"]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    let document: Value = serde_json::from_str(&call.stdout).unwrap();
    assert_eq!(
        document["result"]["content"][0]["text"], NASTY,
        "{document}"
    );
    assert_clean("stderr in JSON mode", &call.stderr);
}

fn silent_call(message: &Value) -> Option<(&'static str, String)> {
    match message["method"].as_str().unwrap_or("") {
        "server/discover" => discover(message),
        "tools/list" => json_reply(
            message,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        ),
        _ => None,
    }
}

fn silent_legacy_handshake(message: &Value) -> Option<(&'static str, String)> {
    match message["method"].as_str().unwrap_or("") {
        "server/discover" => Some((
            "application/json",
            json!({"jsonrpc": "2.0", "id": message["id"],
                "error": {"code": -32601, "message": "Method not found"}})
            .to_string(),
        )),
        "initialize" => json_reply(
            message,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "0"}}),
        ),
        _ => None,
    }
}

/// Before: `--timeout` bounded single requests only; a silent server hung the command.
#[test]
fn timeout_bounds_the_whole_command() {
    let url = hostile(silent_call);
    let call = run(&["call", &url, "t", "--timeout", "1"]);
    assert_eq!(call.code, 3, "{}", call.stderr);

    let url = hostile(silent_legacy_handshake);
    let tools = run(&["tools", &url, "--timeout", "1"]);
    assert_eq!(tools.code, 3, "{}", tools.stderr);
}

fn three_completions(message: &Value) -> Option<(&'static str, String)> {
    match message["method"].as_str().unwrap_or("") {
        "server/discover" => discover(message),
        "tools/list" => json_reply(
            message,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        ),
        "tools/call" if message["params"]["inputResponses"].is_object() => json_reply(
            message,
            json!({"content": [{"type": "text", "text": "sampled"}]}),
        ),
        "tools/call" => {
            let ask = json!({"method": "sampling/createMessage", "params": {"messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}});
            json_reply(
                message,
                json!({"resultType": "input_required",
                    "inputRequests": {"a": ask, "b": ask, "c": ask}}),
            )
        }
        _ => None,
    }
}

/// The command says how many completions a round asks for (and, on a terminal, asks first).
#[cfg(unix)]
#[test]
fn the_sampling_note_counts_the_completions_of_a_round() {
    let url = hostile(three_completions);
    let call = run(&[
        "call",
        &url,
        "t",
        "--sampling-command",
        "sh -c 'cat >/dev/null; echo a completion'",
    ]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert!(
        call.stderr
            .contains("asks for 3 LLM completions in this round"),
        "{}",
        call.stderr
    );
    assert!(call.stdout.contains("sampled"), "{}", call.stdout);
}

/// A plain HTTP/1.1 responder on 127.0.0.1 for a minute that records every request line
/// (`METHOD target`) and answers with `respond(method, target, own address)`: a status, a
/// `www-authenticate` value (empty: none) and a JSON body.
type Respond = fn(&str, &str, std::net::SocketAddr) -> (u16, String, String);

fn recorder(
    respond: Respond,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    listener.set_nonblocking(true).unwrap();
    let log = seen.clone();
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut out = stream;
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim_end().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length.min(1 << 20)];
            let _ = reader.read_exact(&mut body);
            let mut parts = line.split_whitespace();
            let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            log.lock().unwrap().push(format!("{method} {target}"));
            let (code, challenge, body) = respond(method, target, addr);
            let challenge = if challenge.is_empty() {
                String::new()
            } else {
                format!("www-authenticate: {challenge}\r\n")
            };
            let _ = out.write_all(
                format!(
                    "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\n{challenge}\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (addr, seen)
}

/// The "internal" service of the review's attack: anything it receives is a finding.
fn internal(_: &str, _: &str, _: std::net::SocketAddr) -> (u16, String, String) {
    (200, String::new(), json!({"client_id": "x"}).to_string())
}

static INTERNAL: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();

/// An MCP server that wants a token, is its own authorization server, and registers
/// clients at the internal service.
fn wants_sign_in(method: &str, target: &str, addr: std::net::SocketAddr) -> (u16, String, String) {
    let origin = format!("http://{addr}");
    let internal = INTERNAL.get().copied().unwrap();
    match (method, target) {
        (_, "/mcp") => (
            401,
            format!(
                r#"Bearer resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp", scope="mcp evil-scope""#
            ),
            String::new(),
        ),
        (_, "/.well-known/oauth-protected-resource/mcp") => (
            200,
            String::new(),
            json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]})
                .to_string(),
        ),
        (_, "/.well-known/oauth-authorization-server") => (
            200,
            String::new(),
            json!({
                "issuer": origin,
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "registration_endpoint": format!("http://{internal}/admin/delete-everything"),
                "code_challenge_methods_supported": ["S256"],
            })
            .to_string(),
        ),
        _ => (404, String::new(), String::new()),
    }
}

/// Issue 30, finding 2: without a terminal the command says so before it discovers or
/// registers anything (the review saw a registration `POST` to an attacker-chosen URL).
#[test]
fn a_sign_in_without_a_terminal_sends_nothing_beyond_the_first_request() {
    let (internal_addr, internal_seen) = recorder(internal);
    INTERNAL.set(internal_addr).unwrap();
    let (mcp, mcp_seen) = recorder(wants_sign_in);
    let dir = common::scratch("no-terminal-sign-in");
    let credentials = dir.join("credentials.json");
    let run = common::run_with(
        &dir,
        &["tools", &format!("http://{mcp}/mcp")],
        &[("ARCTERN_CREDENTIALS", credentials.to_str().unwrap())],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("no terminal"), "{run:?}");
    assert!(
        internal_seen.lock().unwrap().is_empty(),
        "{:?}",
        internal_seen.lock().unwrap()
    );
    let seen = mcp_seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.ends_with(" /mcp")), "{seen:?}");
    assert!(!credentials.exists());
}
