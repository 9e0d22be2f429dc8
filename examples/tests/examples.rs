//! Runs every example as a real process on 127.0.0.1 and drives its flow over HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// A running example; killed when dropped.
struct Example {
    child: Child,
    url: String,
}

impl Example {
    fn start(binary: &str, env: &[(&str, &str)]) -> Example {
        let mut cmd = Command::new(binary);
        cmd.args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("the example starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the example prints its URL");
        let url = line.trim().to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "unexpected first line {url:?}"
        );
        Example { child, url }
    }

    /// Sends one 2026-07-28 request and returns the final JSON-RPC message.
    fn request(&self, id: i64, method: &str, name: Option<&str>, params: Value) -> Value {
        self.request_as(id, method, name, params, json!({"elicitation": {}}))
    }

    /// [`request`](Self::request) with these client capabilities.
    fn request_as(
        &self,
        id: i64,
        method: &str,
        name: Option<&str>,
        mut params: Value,
        capabilities: Value,
    ) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities
        });
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let addr = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let mut stream = TcpStream::connect(addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let name_header = name
            .map(|n| format!("Mcp-Name: {n}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\n{name_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("reads the response");
        let (head, payload) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let message: Value = serde_json::from_str(payload.trim()).expect("a JSON body");
        assert_eq!(message["id"], id);
        // Rejected request state and envelope errors are a 400; everything else a 200.
        let envelope = (-32022..=-32020).contains(&message["error"]["code"].as_i64().unwrap_or(0));
        let expected =
            if message["error"]["message"] == "Invalid or expired requestState" || envelope {
                "400"
            } else {
                "200"
            };
        assert!(head.starts_with(&format!("HTTP/1.1 {expected}")), "{head}");
        message
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[test]
fn provision_on_the_low_level_server() {
    let ex = Example::start(env!("CARGO_BIN_EXE_provision"), &[]);
    let tools = ex.request(1, "tools/list", None, json!({}));
    assert_eq!(tools["result"]["tools"][0]["name"], "provision");
    let args = json!({"name": "provision", "arguments": {"name": "orders"}});
    let r1 = ex.request(2, "tools/call", Some("provision"), args.clone());
    assert_eq!(r1["result"]["resultType"], "input_required");
    assert_eq!(
        r1["result"]["inputRequests"]["region"]["method"],
        "elicitation/create"
    );
    let state = r1["result"]["requestState"].as_str().unwrap();
    assert_ne!(
        state, "provision-v1",
        "the handler's plaintext is sealed on the wire"
    );
    let mut retry = args.clone();
    retry["inputResponses"] = json!({"region": accept(json!({"region": "eu-west-1"}))});
    retry["requestState"] = json!(state);
    let r2 = ex.request(3, "tools/call", Some("provision"), retry.clone());
    assert_eq!(
        r2["result"]["content"][0]["text"],
        "Provisioned database \"orders\" in eu-west-1."
    );
    // The same answer with a forged state is refused.
    retry["requestState"] = json!("provision-v1");
    let r3 = ex.request(4, "tools/call", Some("provision"), retry);
    assert_eq!(r3["error"]["message"], "Invalid or expired requestState");
}

#[test]
fn briefing_prompt_asks_for_its_audience() {
    let ex = Example::start(env!("CARGO_BIN_EXE_briefing"), &[]);
    let params = json!({"name": "briefing", "arguments": {"topic": "the Q3 migration"}});
    let r1 = ex.request(1, "prompts/get", Some("briefing"), params.clone());
    let ask = &r1["result"]["inputRequests"]["audience"];
    assert_eq!(
        ask["params"]["message"],
        "Who is the briefing on the Q3 migration for?"
    );
    let mut retry = params;
    retry["inputResponses"] = json!({"audience": accept(json!({"audience": "executives"}))});
    retry["requestState"] = r1["result"]["requestState"].clone();
    let r2 = ex.request(2, "prompts/get", Some("briefing"), retry);
    let text = r2["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("the Q3 migration for executives"), "{text}");
}

#[test]
fn config_template_asks_before_reading() {
    let ex = Example::start(env!("CARGO_BIN_EXE_config_template"), &[]);
    let params = json!({"uri": "config://prod"});
    let r1 = ex.request(1, "resources/read", Some("config://prod"), params.clone());
    assert_eq!(
        r1["result"]["inputRequests"]["reveal"]["params"]["message"],
        "The prod configuration holds connection strings. Reveal it?"
    );
    let mut retry = params;
    retry["inputResponses"] = json!({"reveal": accept(json!({"reveal": true}))});
    retry["requestState"] = r1["result"]["requestState"].clone();
    let r2 = ex.request(2, "resources/read", Some("config://prod"), retry);
    let contents = &r2["result"]["contents"][0];
    assert_eq!(contents["uri"], "config://prod");
    assert_eq!(contents["mimeType"], "application/json");
    let config: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(config["env"], "prod");
}

#[test]
fn dependency_form_batches_then_asks_the_dependent_question() {
    let ex = Example::start(env!("CARGO_BIN_EXE_dependency_form"), &[]);
    let args = json!({"name": "plan_trip", "arguments": {}});
    let r1 = ex.request(1, "tools/call", Some("plan_trip"), args.clone());
    let keys: Vec<&String> = r1["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["dates", "destination"]);
    let mut r2_params = args.clone();
    r2_params["inputResponses"] = json!({
        "destination": accept(json!({"city": "Lisbon"})),
        "dates": accept(json!({"from": "2027-05-01", "nights": 3}))
    });
    r2_params["requestState"] = r1["result"]["requestState"].clone();
    let r2 = ex.request(2, "tools/call", Some("plan_trip"), r2_params);
    let asks = r2["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asks.keys().collect::<Vec<_>>(), ["hotel"]);
    assert_eq!(asks["hotel"]["params"]["message"], "Which hotel in Lisbon?");
    let mut r3_params = args;
    // The answer is the chosen option's value: the hotel's id among those offered.
    r3_params["inputResponses"] = json!({"hotel": accept(json!({"hotel": "lisbon-0"}))});
    r3_params["requestState"] = r2["result"]["requestState"].clone();
    let r3 = ex.request(3, "tools/call", Some("plan_trip"), r3_params);
    assert_eq!(
        r3["result"]["content"][0]["text"],
        "Booked Central Lisbon from 2027-05-01 for 3 nights."
    );
}

/// A test-only key (32 bytes, base64).
const KEYS: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

#[test]
fn a_flow_started_on_one_process_finishes_on_another() {
    let a = Example::start(
        env!("CARGO_BIN_EXE_shared_keys"),
        &[("ARCTERN_STATE_KEYS", KEYS)],
    );
    let b = Example::start(
        env!("CARGO_BIN_EXE_shared_keys"),
        &[("ARCTERN_STATE_KEYS", KEYS)],
    );
    let args = json!({"name": "transfer", "arguments": {"amount": 1250, "to": "ACME"}});
    let r1 = a.request(1, "tools/call", Some("transfer"), args.clone());
    assert_eq!(r1["result"]["resultType"], "input_required");
    let mut retry = args;
    retry["inputResponses"] = json!({"confirm": accept(json!({"ok": true}))});
    retry["requestState"] = r1["result"]["requestState"].clone();
    let r2 = b.request(2, "tools/call", Some("transfer"), retry.clone());
    let text = r2["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Sent 1250 cents to ACME"), "{text}");
    assert!(
        text.contains(&format!("process {}", b.child.id())),
        "finished by the second process: {text}"
    );

    // A process with other keys refuses the token.
    let other = Example::start(
        env!("CARGO_BIN_EXE_shared_keys"),
        &[(
            "ARCTERN_STATE_KEYS",
            "k2:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=",
        )],
    );
    let r3 = other.request(3, "tools/call", Some("transfer"), retry);
    assert_eq!(
        r3["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState"})
    );
}

/// Runs a client example to completion and returns its stdout; a failed run fails the test.
fn run_client(binary: &str, args: &[&str]) -> String {
    let out = Command::new(binary)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("the client example runs");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert!(
        out.status.success(),
        "{args:?} exited with {}:\n{stdout}",
        out.status
    );
    stdout
}

#[test]
fn resume_flow_finishes_in_a_second_process() {
    let server = Example::start(env!("CARGO_BIN_EXE_provision"), &[]);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join(format!("resume-flow-{}.json", std::process::id()));
    let file_arg = file.to_str().expect("a UTF-8 path");
    let bin = env!("CARGO_BIN_EXE_resume_flow");

    // Process one: a single round, saved.
    let out = run_client(
        bin,
        &["start", "--url", &server.url, "--state-file", file_arg],
    );
    assert!(
        out.contains("[region] Which region should the database live in? (fields: region)"),
        "{out}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved["url"], server.url.as_str());
    assert_eq!(saved["arguments"], json!({"name": "orders"}));
    assert_eq!(saved["questions"]["region"]["method"], "elicitation/create");
    let state = saved["continuation"]["requestState"].as_str().unwrap();
    assert!(!state.is_empty() && state != "provision-v1", "{state}");
    assert!(saved["continuation"].get("inputResponses").is_none());

    // A finish without the required answer fails before sending anything; the flow survives.
    let refused = Command::new(bin)
        .args(["finish", "--state-file", file_arg])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("no --answer for the required field `region`"),
        "{why}"
    );
    assert!(file.exists());

    // Process two: answers, retries, and prints the tool's result.
    let out = run_client(
        bin,
        &[
            "finish",
            "--state-file",
            file_arg,
            "--answer",
            "region=eu-west-1",
        ],
    );
    assert_eq!(out.trim(), "Provisioned database \"orders\" in eu-west-1.");
    assert!(!file.exists(), "a finished flow leaves no state behind");
}

#[test]
fn client_callbacks_answer_every_round() {
    let server = Example::start(env!("CARGO_BIN_EXE_release_notes"), &[]);
    let out = run_client(
        env!("CARGO_BIN_EXE_client_callbacks"),
        &["--url", &server.url, "--audience", "operators"],
    );
    let lines: Vec<&str> = out.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{out}"))
    };
    // Round 1: the form and the roots (answered concurrently, so in either order).
    let asked = at("release_notes asks [audience]: Who are the release notes for 2.0 for?");
    let answered = at("  answered: operators");
    assert!(asked < answered);
    at("release_notes asks [roots] for roots: file:///workspace/api, file:///workspace/web");
    // Round 2: the sampling request depends on the answer.
    let sampled = at(
        "release_notes asks [summary] the model: Summarize release 2.0 in one sentence for operators.",
    );
    assert!(answered < sampled);
    // Round 3: progress as the body runs, then the result.
    let p1 = at("progress 1/2: Read the changelog under file:///workspace/api");
    let p2 = at("progress 2/2: Read the changelog under file:///workspace/web");
    let result = at("result: Release notes for 2.0 (operators, 2 roots): \
                     Deploys roll back on their own when a health check fails.");
    assert!(sampled < p1 && p1 < p2 && p2 < result, "{out}");
    assert_eq!(result, lines.len() - 1, "{out}");
}

#[test]
fn oauth_client_signs_in_once_and_reuses_the_token() {
    let output = Command::new(env!("CARGO_BIN_EXE_oauth_client"))
        .stderr(Stdio::inherit())
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("connection 1: [{"), "{stdout}");
    assert!(stdout.contains("connection 2: [{"), "{stdout}");
    assert!(stdout.contains("hello http://127.0.0.1:"), "{stdout}");
    // Two connections, one sign-in: the second reused the kept token.
    assert!(
        stdout.contains("sign-ins at the authorization server: 1"),
        "{stdout}"
    );
}

#[test]
fn protected_server_challenges_then_accepts_its_token() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_protected"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut url, mut token) = (String::new(), String::new());
    out.read_line(&mut url).unwrap();
    out.read_line(&mut token).unwrap();
    let ex = Example {
        child,
        url: url.trim().to_owned(),
    };
    let token = token.trim();
    let addr = ex
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let post = |auth: Option<&str>| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "whoami", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let mut stream = TcpStream::connect(&addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let auth = auth
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: whoami\r\n{auth}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    };
    let refused = post(None);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains(&format!(
            "www-authenticate: bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\""
        )),
        "{refused}"
    );
    let accepted = post(Some(token));
    assert!(accepted.starts_with("HTTP/1.1 200"), "{accepted}");
    assert!(
        accepted.contains("test-user (client test-client, scopes: mcp:tools)"),
        "{accepted}"
    );
}

#[test]
fn migration_runs_as_a_task_that_asks_half_way() {
    let ex = Example::start(env!("CARGO_BIN_EXE_migration_task"), &[]);
    let caps = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created = ex.request_as(
        1,
        "tools/call",
        Some("migrate"),
        json!({"name": "migrate", "arguments": {"tables": 2}}),
        caps.clone(),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = |n: i64| {
        ex.request_as(
            n,
            "tasks/get",
            Some(&id),
            json!({"taskId": id}),
            caps.clone(),
        )["result"]
            .clone()
    };
    let mut task = get(2);
    for n in 3..200 {
        if task["status"] == "input_required" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        task = get(n);
    }
    assert_eq!(task["status"], "input_required", "{task}");
    assert!(task["inputRequests"]["switch"].is_object(), "{task}");
    let ack = ex.request_as(
        300,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": {"switch": accept(json!({"switch": true}))}}),
        caps.clone(),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let mut task = get(301);
    for n in 302..400 {
        if task["status"] == "completed" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        task = get(n);
    }
    assert_eq!(
        task["result"]["content"][0]["text"], "Migrated 2 tables and switched traffic.",
        "{task}"
    );
    // Without the extension, the task-only tool is refused with -32021.
    let refused = ex.request(
        500,
        "tools/call",
        Some("migrate"),
        json!({"name": "migrate", "arguments": {"tables": 1}}),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}
