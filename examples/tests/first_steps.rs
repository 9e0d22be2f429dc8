//! The examples a newcomer reaches for first, each run for real: the stdio calculator as a
//! child process speaking JSON lines, the HTTP servers on 127.0.0.1 called by arctern's
//! client, the axum application's own routes over plain HTTP, and the client example against
//! both kinds of server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use arctern::client::Client;
use arctern::types::completion::PromptReference;
use arctern::types::content::{ContentBlock, ResourceContents};
use base64::Engine as _;
use serde_json::{Value, json};

/// How long a test waits for an answer that should come.
const PATIENCE: Duration = Duration::from_secs(20);

/// An example started as a child process; killed when dropped.
struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an HTTP example on a free port and returns it with the URL it printed.
fn start_http(binary: &str) -> (Running, String) {
    let mut child = Command::new(binary)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the example prints its URL");
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "first line {url:?}");
    (Running { child }, url)
}

async fn connect(url: &str) -> Client {
    Client::builder()
        .name("first-steps-test")
        .connect(url)
        .await
        .expect("connects")
}

/// The text blocks of a tool result, joined by newlines.
fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A stdio server as a child process: one JSON-RPC message per line each way.
struct StdioChild {
    _running: Running,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl StdioChild {
    fn start(binary: &str) -> StdioChild {
        let mut child = Command::new(binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the example starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        StdioChild {
            _running: Running { child },
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("writes a line");
        self.stdin.flush().expect("flushes");
    }

    /// The next message from the server.
    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a 2026-07-28 request (the envelope in `_meta`) and returns the response.
    fn request(&mut self, id: i64, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "first-steps-test", "version": "0"}
        });
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.recv();
        assert_eq!(response["id"], id, "{response}");
        response
    }
}

#[test]
fn the_calculator_answers_over_stdio() {
    let mut calc = StdioChild::start(env!("CARGO_BIN_EXE_calculator_stdio"));
    let tools = calc.request(1, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "subtract", "multiply", "divide"]);
    let schema = &tools["result"]["tools"][0]["inputSchema"];
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The left operand."
    );
    assert_eq!(schema["required"], json!(["a", "b"]));

    let call = |name: &str, a: f64, b: f64| json!({"name": name, "arguments": {"a": a, "b": b}});
    let sum = calc.request(2, "tools/call", call("add", 2.0, 40.0));
    assert_eq!(sum["result"]["content"][0]["text"], "42", "{sum}");
    let quotient = calc.request(3, "tools/call", call("divide", 10.0, 4.0));
    assert_eq!(quotient["result"]["content"][0]["text"], "2.5");

    // The tool's own failure is a result the model can read, not a protocol error.
    let by_zero = calc.request(4, "tools/call", call("divide", 1.0, 0.0));
    assert_eq!(by_zero["result"]["isError"], true, "{by_zero}");
    assert_eq!(
        by_zero["result"]["content"][0]["text"],
        "Cannot divide by zero."
    );
    // Arguments that break the advertised schema are refused the same way, naming the field.
    let bad = calc.request(
        5,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Invalid arguments for add: b: a value is required"),
        "{bad}"
    );
}

/// What a host of today (Claude Desktop, Cursor, VS Code) sends: the 2025 handshake.
#[test]
fn the_calculator_serves_a_2025_host() {
    let mut calc = StdioChild::start(env!("CARGO_BIN_EXE_calculator_stdio"));
    calc.send(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "a-host", "version": "1.0"}
        }
    }));
    let init = calc.recv();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "calculator");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    calc.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    calc.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "multiply", "arguments": {"a": 6, "b": 7}}
    }));
    let product = calc.recv();
    assert_eq!(product["id"], 1);
    assert_eq!(product["result"]["content"][0]["text"], "42", "{product}");
}

#[tokio::test]
async fn structured_output_declares_and_fills_its_schema() {
    let (_server, url) = start_http(env!("CARGO_BIN_EXE_structured_output"));
    let client = connect(&url).await;
    let tools = client.list_tools().await.unwrap();
    let forecast = tools.iter().find(|t| t.name == "forecast").unwrap();
    let output = Value::Object(forecast.output_schema.clone().expect("an outputSchema"));
    assert_eq!(output["type"], "object");
    assert!(output["properties"]["days"].is_object(), "{output}");
    let input = Value::Object(forecast.input_schema.clone());
    assert_eq!(input["properties"]["days"]["maximum"], 7, "{input}");

    let result = client
        .call_tool("forecast", json!({"city": "Oslo", "days": 2}))
        .await
        .unwrap();
    assert!(!result.is_tool_error());
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(structured["city"], "Oslo");
    assert_eq!(structured["days"].as_array().unwrap().len(), 2);
    assert_eq!(structured["days"][0]["offset"], 1);
    // The text block carries the same JSON, for clients that read only text.
    let text: Value = serde_json::from_str(&text_of(&result.content)).unwrap();
    assert_eq!(text, structured);
    // And the client decodes it into a type of its own.
    #[derive(serde::Deserialize)]
    struct Day {
        high_celsius: f64,
    }
    #[derive(serde::Deserialize)]
    struct Forecast {
        days: Vec<Day>,
    }
    let typed: Forecast = client
        .call_tool_json("forecast", json!({"city": "Oslo", "days": 2}))
        .await
        .unwrap();
    assert_eq!(
        typed.days[1].high_celsius,
        structured["days"][1]["high_celsius"].as_f64().unwrap()
    );
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read() {
    let (_server, url) = start_http(env!("CARGO_BIN_EXE_resources"));
    let client = connect(&url).await;
    let resources = client.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["docs://readme", "docs://pixel.png"]);
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "notes://{name}");

    let readme = client.read_resource("docs://readme").await.unwrap();
    let ResourceContents::Text(text) = &readme.contents[0] else {
        panic!("text contents: {readme:?}");
    };
    assert!(text.text.starts_with("# Notes"));
    assert_eq!(text.mime_type.as_deref(), Some("text/markdown"));

    let pixel = client.read_resource("docs://pixel.png").await.unwrap();
    let ResourceContents::Blob(blob) = &pixel.contents[0] else {
        panic!("blob contents: {pixel:?}");
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&blob.blob)
        .unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(blob.mime_type.as_deref(), Some("image/png"));

    let note = client.read_resource("notes://groceries").await.unwrap();
    let ResourceContents::Text(text) = &note.contents[0] else {
        panic!("text contents: {note:?}");
    };
    assert_eq!(text.text, "Milk, bread, coffee.");
    assert_eq!(text.uri, "notes://groceries");

    let missing = client.read_resource("notes://nothing").await.unwrap_err();
    let error = missing.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error.code.0, -32602, "{missing}");
    assert!(error.message.contains("notes://nothing"), "{missing}");
}

#[tokio::test]
async fn prompts_complete_their_arguments() {
    let (_server, url) = start_http(env!("CARGO_BIN_EXE_prompts"));
    let client = connect(&url).await;
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    let arguments = prompts[0].arguments.clone().unwrap_or_default();
    let described: Vec<(&str, bool)> = arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required.unwrap_or(false)))
        .collect();
    assert_eq!(described, [("language", true), ("framework", false)]);
    assert!(client.server_capabilities().unwrap().completions.is_some());

    let languages = client
        .complete(PromptReference::new("code_review"), "language", "r", None)
        .await
        .unwrap();
    assert_eq!(languages.completion.values, ["rust"]);
    // The frameworks follow the language already chosen.
    let context = [("language".to_owned(), "rust".to_owned())].into();
    let frameworks = client
        .complete(
            PromptReference::new("code_review"),
            "framework",
            "a",
            Some(context),
        )
        .await
        .unwrap();
    assert_eq!(frameworks.completion.values, ["actix-web", "axum"]);
    let any = client
        .complete(PromptReference::new("code_review"), "framework", "", None)
        .await
        .unwrap();
    assert_eq!(any.completion.values.len(), 9);

    let prompt = client
        .get_prompt(
            "code_review",
            json!({"language": "rust", "framework": "axum"}),
        )
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 2);
    let first = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(first["role"], "user");
    assert_eq!(
        first["content"]["text"],
        "Review the following rust code, written with axum. Point out bugs first, then style."
    );
}

/// One plain HTTP/1.1 GET; the status line and the body.
fn http_get(url: &str, path: &str) -> (String, String) {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn the_axum_app_shares_its_state_with_the_tools() {
    let (_server, url) = start_http(env!("CARGO_BIN_EXE_axum_app"));
    let (status, body) = http_get(&url, "/health");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, "ok\n");
    for n in 1..=2 {
        let (_, body) = http_get(&url, "/");
        assert_eq!(body, format!("Hello, visitor number {n}.\n"));
    }
    let (status, _) = http_get(&url, "/elsewhere");
    assert_eq!(status, "HTTP/1.1 404 Not Found");

    let client = connect(&url).await;
    let visits = client.call_tool("visits", ()).await.unwrap();
    assert_eq!(text_of(&visits.content), "2 visits so far.");
    let reset = client.call_tool("reset_visits", ()).await.unwrap();
    assert_eq!(text_of(&reset.content), "Reset the count of 2 visits.");
    let (_, body) = http_get(&url, "/");
    assert_eq!(body, "Hello, visitor number 1.\n");
}

fn run_client(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_list_and_call"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the client runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn the_client_lists_and_calls_over_stdio() {
    let output = run_client(&[
        env!("CARGO_BIN_EXE_calculator_stdio"),
        "add",
        r#"{"a":2,"b":40}"#,
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        "calculator (2026-07-28) has these tools:\n\
         - add: Add two numbers.\n\
         - subtract: Subtract b from a.\n\
         - multiply: Multiply two numbers.\n\
         - divide: Divide a by b.\n\
         add answered:\n\
         42\n"
    );
}

#[test]
fn the_client_lists_and_calls_over_http() {
    let (_server, url) = start_http(env!("CARGO_BIN_EXE_structured_output"));
    let output = run_client(&[&url, "forecast", r#"{"city":"Kyoto","days":1}"#]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("weather (2026-07-28) has these tools:"));
    assert_eq!(
        lines.next(),
        Some("- forecast: The weather for the next days in a city.")
    );
    assert_eq!(lines.next(), Some("forecast answered:"));
    let text: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let structured = lines.next().unwrap().strip_prefix("structured: ").unwrap();
    assert_eq!(text, serde_json::from_str::<Value>(structured).unwrap());
    assert_eq!(text["city"], "Kyoto");
}
