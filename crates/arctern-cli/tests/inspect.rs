//! `arctern inspect`, without a browser: the real binary against the demo server, spoken to
//! over real HTTP on loopback. Every rule that keeps the page safe on loopback has a test
//! here (the token, `Host`, `Origin`, `Sec-Fetch-Site`, the headers, the bind address, what
//! the API cannot do), and so has a whole multi round-trip flow answered through the API.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{ARCTERN, Demo};
use serde_json::{Value, json};

/// `arctern inspect URL --no-open --output json`, killed when dropped.
struct Inspect {
    child: Child,
    port: u16,
    token: String,
}

impl Inspect {
    fn start(url: &str, flags: &[&str]) -> Inspect {
        let mut child = Command::new(ARCTERN)
            .args(["inspect", url, "--no-open", "--output", "json"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start arctern inspect");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let line: Value = serde_json::from_str(&first).expect("a JSON first line");
        let url = line["url"].as_str().expect("a url").to_owned();
        let rest = url.strip_prefix("http://127.0.0.1:").expect("on loopback");
        let (port, fragment) = rest.split_once('/').unwrap();
        let token = fragment
            .strip_prefix("#k=")
            .expect("the token in the fragment");
        assert_eq!(token.len(), 64, "256 bits, hex");
        Inspect {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A request with the right Host and token.
    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> Response {
        let auth = self.bearer();
        let mut headers = vec![("Authorization", auth.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let text = body.map(Value::to_string);
        request(
            self.port,
            method,
            path,
            &self.host(),
            &headers,
            text.as_deref(),
        )
    }

    fn flow(&self, id: u64) -> Value {
        let flows = self.api("GET", "/api/flows", None).json();
        flows
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .cloned()
            .expect("the flow is listed")
    }

    /// Waits (at most a minute) for the questions waiting in the page.
    fn questions(&self, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let q = self.api("GET", "/api/questions", None).json();
            let q = q.as_array().unwrap().clone();
            if q.len() >= count {
                return q;
            }
            assert!(Instant::now() < deadline, "no question came");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (at most a minute) until flow `id` is no longer running.
    fn finished(&self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let flow = self.flow(id);
            if flow["status"] != "running" {
                return flow;
            }
            assert!(Instant::now() < deadline, "the flow never finished: {flow}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Response {
    status: u16,
    headers: HashMap<String, Vec<String>>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(name)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    fn json(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.body);
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    fn error(&self) -> String {
        let v: Value = serde_json::from_str(&self.body).expect("a JSON error");
        v["error"].as_str().unwrap_or_default().to_owned()
    }
}

/// One HTTP/1.1 request, written by hand so that any `Host` can be sent.
fn request(
    port: u16,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(text.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut headers: HashMap<String, Vec<String>> = HashMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers
                .entry(k.trim().to_ascii_lowercase())
                .or_default()
                .push(v.trim().to_owned());
        }
    }
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn assert_secured(r: &Response, what: &str) {
    let csp = r.header("content-security-policy").unwrap_or_default();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(part), "{what}: CSP {csp:?} lacks {part}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{what}: {csp}"
    );
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{what}");
    assert_eq!(
        r.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(r.header("cache-control"), Some("no-store"), "{what}");
    assert!(r.header("set-cookie").is_none(), "{what}: no cookie, ever");
}

#[test]
fn the_page_holds_no_secret_and_every_response_is_locked_down() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let host = inspect.host();
    let shell = request(inspect.port, "GET", "/", &host, &[], None);
    assert_eq!(shell.status, 200);
    assert!(
        !shell.body.contains(&inspect.token),
        "the token is not in the HTML"
    );
    assert!(
        shell
            .body
            .contains(r#"<script type="module" src="/app.js"></script>"#),
        "{}",
        shell.body
    );
    assert_eq!(
        shell.body.matches("<script").count(),
        1,
        "no inline script: {}",
        shell.body
    );
    assert_secured(&shell, "/");
    for path in ["/app.js", "/style.css"] {
        let r = request(inspect.port, "GET", path, &host, &[], None);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.contains(&inspect.token), "{path}");
        assert_secured(&r, path);
    }
    let js = request(inspect.port, "GET", "/app.js", &host, &[], None).body;
    assert!(
        !js.contains("innerHTML") && !js.contains("eval(") && !js.contains("document.cookie"),
        "the page writes server text as text only"
    );
    assert_secured(&inspect.api("GET", "/api/tools", None), "an API answer");
    assert_secured(
        &request(inspect.port, "GET", "/api/tools", &host, &[], None),
        "a refusal",
    );
    assert_secured(
        &request(inspect.port, "GET", "/nowhere", &host, &[], None),
        "a 404",
    );
}

#[test]
fn the_api_wants_the_launch_token_as_a_bearer_header() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let host = inspect.host();
    let status = |headers: &[(&str, &str)], path: &str| {
        request(inspect.port, "GET", path, &host, headers, None).status
    };
    assert_eq!(status(&[], "/api/tools"), 401);
    let wrong = format!("Bearer {}", "0".repeat(64));
    assert_eq!(status(&[("Authorization", &wrong)], "/api/tools"), 401);
    let short = format!("Bearer {}", &inspect.token[..63]);
    assert_eq!(status(&[("Authorization", &short)], "/api/tools"), 401);
    let bare = inspect.token.clone();
    assert_eq!(status(&[("Authorization", &bare)], "/api/tools"), 401);
    let cookie = format!("k={}", inspect.token);
    assert_eq!(status(&[("Cookie", &cookie)], "/api/tools"), 401);
    let query = format!("/api/tools?k={}", inspect.token);
    assert_eq!(status(&[], &query), 401);
    let tools = inspect.api("GET", "/api/tools", None).json();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"book_hotel"), "{names:?}");
    // A second launch has its own token.
    let other = Inspect::start(demo.url(), &[]);
    assert_ne!(other.token, inspect.token);
    let theirs = inspect.bearer();
    let r = request(
        other.port,
        "GET",
        "/api/tools",
        &other.host(),
        &[("Authorization", &theirs)],
        None,
    );
    assert_eq!(r.status, 401);
}

#[test]
fn only_the_loopback_name_and_port_are_answered() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let auth = inspect.bearer();
    let status = |host: &str, path: &str| {
        request(
            inspect.port,
            "GET",
            path,
            host,
            &[("Authorization", &auth)],
            None,
        )
        .status
    };
    let port = inspect.port;
    // A DNS-rebinding page names its own host: refused, the page itself included.
    assert_eq!(status(&format!("rebind.attacker.test:{port}"), "/"), 421);
    assert_eq!(
        status(&format!("rebind.attacker.test:{port}"), "/api/tools"),
        421
    );
    assert_eq!(
        status(&format!("127.0.0.1:{}", port.wrapping_add(1)), "/"),
        421
    );
    assert_eq!(status("127.0.0.1", "/"), 421);
    assert_eq!(status(&format!("localhost:{port}"), "/api/tools"), 200);
    assert_eq!(status(&format!("127.0.0.1:{port}"), "/api/tools"), 200);
}

#[test]
fn cross_site_and_foreign_origin_requests_are_refused() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let host = inspect.host();
    let auth = inspect.bearer();
    let with = |extra: (&str, &str)| {
        request(
            inspect.port,
            "GET",
            "/api/tools",
            &host,
            &[("Authorization", &auth), extra],
            None,
        )
        .status
    };
    assert_eq!(with(("Sec-Fetch-Site", "cross-site")), 403);
    assert_eq!(with(("Origin", "http://attacker.test")), 403);
    assert_eq!(with(("Origin", "null")), 403);
    let other_port = format!("http://127.0.0.1:{}", inspect.port.wrapping_add(1));
    assert_eq!(with(("Origin", &other_port)), 403);
    let own = format!("http://{host}");
    assert_eq!(with(("Origin", &own)), 200);
    assert_eq!(with(("Sec-Fetch-Site", "same-origin")), 200);
    // The page itself is not served into another site either.
    let r = request(
        inspect.port,
        "GET",
        "/",
        &host,
        &[("Sec-Fetch-Site", "cross-site")],
        None,
    );
    assert_eq!(r.status, 403);
    // A form post (no preflight) cannot reach the API.
    let r = request(
        inspect.port,
        "POST",
        "/api/call",
        &host,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some("kind=tool&name=echo"),
    );
    assert_eq!(r.status, 415);
}

#[test]
fn a_non_loopback_bind_needs_allow_remote() {
    let out = Command::new(ARCTERN)
        .args([
            "inspect",
            "http://127.0.0.1:9/mcp",
            "--no-open",
            "--bind",
            "0.0.0.0",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing served, no URL printed");
    // With it, the inspector serves (and still only to the names it knows).
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &["--bind", "0.0.0.0", "--allow-remote"]);
    let r = inspect.api("GET", "/api/connection", None);
    assert_eq!(r.status, 200);
    let r = request(
        inspect.port,
        "GET",
        "/",
        &format!("rebind.attacker.test:{}", inspect.port),
        &[],
        None,
    );
    assert_eq!(r.status, 421);
}

#[test]
fn the_api_cannot_change_the_target_start_processes_or_read_files() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    for (method, path) in [
        ("POST", "/api/connect"),
        ("POST", "/api/stdio"),
        ("POST", "/api/target"),
        ("GET", "/api/fetch"),
        ("GET", "/api/file"),
        ("GET", "/../../etc/passwd"),
        ("GET", "/api/../../etc/passwd"),
    ] {
        let body = json!({ "url": "http://example.com", "command": "sh" });
        let r = inspect.api(method, path, (method == "POST").then_some(&body));
        assert!(
            r.status == 404 || r.status == 405,
            "{method} {path}: {}",
            r.status
        );
    }
    let r = inspect.api(
        "POST",
        "/api/call",
        Some(&json!({ "kind": "stdio", "name": "sh" })),
    );
    assert_eq!(r.status, 400);
    // The target stays what the command line said.
    let c = inspect.api("GET", "/api/connection", None).json();
    assert_eq!(c["target"], demo.url());
    assert_eq!(c["serverInfo"]["name"], "arctern-demo");
}

#[test]
fn a_bad_argument_is_refused_with_the_message_of_arctern_call() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let r = inspect.api(
        "POST",
        "/api/call",
        Some(&json!({ "kind": "tool", "name": "slow_count", "args": { "steps": "many" } })),
    );
    assert_eq!(r.status, 400);
    let page = r.error();
    let cli = Command::new(ARCTERN)
        .args([
            "call",
            demo.url(),
            "slow_count",
            "--arg",
            "steps=many",
            "--output",
            "json",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(cli.status.code(), Some(2));
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(page, cli["error"]["message"].as_str().unwrap());
    assert!(page.contains("steps"), "{page}");
    let r = inspect.api(
        "POST",
        "/api/call",
        Some(&json!({ "kind": "tool", "name": "book_hotl" })),
    );
    assert_eq!(r.status, 400);
    assert!(r.error().contains("book_hotel"), "{}", r.error());
}

#[test]
fn a_flow_answered_through_the_page_is_one_flow_with_its_rounds() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let started = inspect
        .api(
            "POST",
            "/api/call",
            Some(&json!({ "kind": "tool", "name": "book_hotel", "args": { "city": "Oslo" } })),
        )
        .json();
    let id = started["flow"].as_u64().unwrap();
    // A second call waits for this one.
    let busy = inspect.api(
        "POST",
        "/api/call",
        Some(&json!({ "kind": "tool", "name": "echo", "args": { "text": "x" } })),
    );
    assert_eq!(busy.status, 409);
    let q = inspect.questions(1).remove(0);
    assert_eq!(q["kind"], "elicitation/form");
    assert_eq!(q["key"], "hotel");
    assert_eq!(q["flow"], id);
    let field = &q["fields"][0];
    assert_eq!(field["kind"], "single");
    assert!(
        field["options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["value"] == "osl-fjord"),
        "{field}"
    );
    let qid = q["id"].as_u64().unwrap();
    let path = format!("/api/questions/{qid}");
    // Checked like the terminal form: a value that is not offered is refused, and the
    // question stays open.
    let bad = inspect.api(
        "POST",
        &path,
        Some(&json!({ "action": "accept", "fields": { "hotel": "Hilton" } })),
    );
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains("Hilton"), "{}", bad.error());
    std::thread::sleep(Duration::from_millis(30));
    let good = inspect.api(
        "POST",
        &path,
        Some(&json!({ "action": "accept", "fields": { "hotel": "Fjord Hotel" } })),
    );
    assert_eq!(good.status, 200, "{}", good.body);
    let flow = inspect.finished(id);
    assert_eq!(flow["status"], "complete", "{flow}");
    let rounds = flow["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{flow}");
    assert_eq!(rounds[0]["resultType"], "input_required");
    assert_eq!(rounds[1]["resultType"], "complete");
    assert_ne!(rounds[0]["id"], rounds[1]["id"]);
    assert!(!rounds[0]["id"].is_null());
    let state = &rounds[0]["stateReceived"];
    assert!(state["bytes"].as_u64().unwrap() > 0, "{flow}");
    assert_eq!(
        &rounds[1]["stateSent"], state,
        "the state went back as it came"
    );
    assert!(rounds[0]["humanWaitMs"].as_u64().unwrap() >= 30, "{flow}");
    assert_eq!(
        rounds[0]["answers"][0]["content"],
        json!({ "hotel": "osl-fjord" })
    );
    let text = flow["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "Booked Fjord Hotel in Oslo.");
    let command = flow["command"].as_str().unwrap();
    assert!(
        command.contains("book_hotel")
            && command.contains(r#"--answer 'hotel={"hotel":"osl-fjord"}'"#),
        "{command}"
    );
    // The copied command does the same from a terminal.
    let words = shlex::split(command).unwrap();
    let out = Command::new(ARCTERN)
        .args(&words[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Booked Fjord Hotel in Oslo."
    );
    // The frames are there, with the rounds' ids.
    let frames = inspect.api("GET", "/api/frames", None).json();
    let sent: Vec<&Value> = frames["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["direction"] == "sent" && f["message"]["method"] == "tools/call")
        .map(|f| &f["message"]["id"])
        .collect();
    assert_eq!(sent, [&rounds[0]["id"], &rounds[1]["id"]]);
}

#[test]
fn the_state_lab_shows_what_a_replayed_tampered_or_dropped_state_does() {
    let demo = Demo::start();
    let inspect = Inspect::start(demo.url(), &[]);
    let id = inspect
        .api(
            "POST",
            "/api/call",
            Some(&json!({ "kind": "tool", "name": "book_hotel", "args": { "city": "Kyoto" } })),
        )
        .json()["flow"]
        .as_u64()
        .unwrap();
    let q = inspect.questions(1).remove(0);
    let path = format!("/api/questions/{}", q["id"]);
    let answer = json!({ "action": "accept", "fields": { "hotel": "kyo-gion" } });
    assert_eq!(inspect.api("POST", &path, Some(&answer)).status, 200);
    assert_eq!(inspect.finished(id)["status"], "complete");
    let lab = format!("/api/flows/{id}/lab");
    let run = |action: &str, round: usize| {
        let before = inspect.flow(id)["lab"].as_array().unwrap().len();
        let r = inspect.api(
            "POST",
            &lab,
            Some(&json!({ "round": round, "action": action })),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let runs = inspect.flow(id)["lab"].as_array().unwrap().clone();
            if runs.len() > before {
                return runs[before].clone();
            }
            assert!(Instant::now() < deadline, "the experiment never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let tamper = run("tamper", 1);
    assert!(
        tamper["actual"].as_str().unwrap().contains("-32602"),
        "{tamper}"
    );
    assert!(tamper["expected"].as_str().unwrap().contains("-32602"));
    // Answered again, or refused by a server that lets a state be used once (the demo does).
    let replay = run("replay", 1);
    let actual = replay["actual"].as_str().unwrap();
    assert!(
        actual == "complete" || actual.contains("-32602"),
        "{replay}"
    );
    let drop = run("drop", 1);
    let actual = drop["actual"].as_str().unwrap();
    assert!(
        actual.starts_with("input_required") || actual.starts_with("error"),
        "{drop}"
    );
    // Round 0 carried no state: nothing to tamper with.
    let r = inspect.api(
        "POST",
        &lab,
        Some(&json!({ "round": 0, "action": "tamper" })),
    );
    assert_eq!(r.status, 400);
    let r = inspect.api("POST", &lab, Some(&json!({ "round": 1, "action": "move" })));
    assert_eq!(r.status, 400);
}
