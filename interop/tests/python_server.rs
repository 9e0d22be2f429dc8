//! arctern's `Client` against an `MCPServer` on the Python reference SDK (`mcp` 2.3.0,
//! `python/server.py`), over Streamable HTTP and over stdio (the client spawns the server).

mod common;

use std::sync::{Arc, Mutex};

use arctern::client::{Client, ClientBuilder, StdioCommand};
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use common::{
    PATIENCE, Process, ROOT, fixture, python, scripted_form_answer, text,
    with_scripted_model_and_roots,
};
use serde_json::json;
use tokio::process::Command;

/// The questions the server asked: (key in `inputRequests`, message), in order.
type Asked = Arc<Mutex<Vec<(String, String)>>>;

/// A client that answers the server's questions by the fields they ask for.
fn builder(asked: &Asked) -> ClientBuilder {
    let log = asked.clone();
    let builder = Client::builder()
        .name("arctern-interop-client")
        .request_timeout(PATIENCE)
        .on_elicit(move |question| {
            let log = log.clone();
            async move {
                let ElicitRequestParams::Form(form) = question.params() else {
                    return Ok(ElicitResult::decline());
                };
                log.lock()
                    .unwrap()
                    .push((question.key().to_owned(), form.message.clone()));
                let fields: Vec<&str> = form.requested_schema.properties.names().collect();
                Ok(scripted_form_answer(&fields))
            }
        });
    with_scripted_model_and_roots(builder)
}

/// Every exchange the interop servers support, checked.
async fn exercise(client: &Client, asked: &Asked) {
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.server_info().unwrap().name, "py-interop");

    let tools: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in ["echo", "add", "provision", "tagline", "show_roots"] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }

    let echo = client
        .call_tool("echo", json!({"text": "héllo, wörld"}))
        .await
        .unwrap();
    assert_eq!(text(&echo.content), "héllo, wörld");
    assert_ne!(echo.is_error, Some(true));
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3.5}))
        .await
        .unwrap();
    assert_eq!(text(&sum.content), "2.0 + 3.5 = 5.5");

    // Two rounds of elicitation: the size question is built from the region answer.
    let provisioned = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&provisioned.content),
        "Provisioned orders in eu-west-1 with 20 GB"
    );
    {
        let asked = std::mem::take(&mut *asked.lock().unwrap());
        let messages: Vec<&str> = asked.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "Which region should the database live in?",
                "How many GB in eu-west-1?"
            ]
        );
        // The Python SDK keys resolver questions by `module:function`.
        assert!(asked[0].0.ends_with(":ask_region"), "{asked:?}");
        assert!(asked[1].0.ends_with(":ask_size"), "{asked:?}");
    }

    let tagline = client
        .call_tool("tagline", json!({"product": "arctern"}))
        .await
        .unwrap();
    assert_eq!(
        text(&tagline.content),
        "arctern: Fast, safe, yours. (stub-model)"
    );

    let roots = client.call_tool("show_roots", json!({})).await.unwrap();
    assert_eq!(text(&roots.content), format!("interop={ROOT}"));

    let prompts: Vec<String> = client
        .list_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(
        prompts.contains(&"greeting".into()) && prompts.contains(&"briefing".into()),
        "{prompts:?}"
    );
    let greeting = client
        .get_prompt("greeting", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&greeting.messages[0].content), "Say hello to Ada.");
    let briefing = client
        .get_prompt("briefing", json!({"topic": "MRTR"}))
        .await
        .unwrap();
    assert_eq!(
        text(&briefing.messages[0].content),
        "Write a briefing on MRTR for the board."
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [("audience".to_owned(), "Who is the briefing for?".to_owned())]
    );

    let templates = client.list_resource_templates().await.unwrap();
    let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["notes://{topic}"]);
    let notes = client.read_resource("notes://rust").await.unwrap();
    assert_eq!(text(&notes.contents), "Notes about rust.");

    // An unknown tool is an error (a protocol error or an isError result), never a success.
    match client.call_tool("no_such_tool", json!({})).await {
        Ok(result) => assert_eq!(result.is_error, Some(true), "{result:?}"),
        Err(e) => assert!(e.protocol_error().is_some(), "{e}"),
    }
}

#[tokio::test]
async fn our_client_against_the_python_server_over_http() {
    let Some(python) = python() else { return };
    let mut command = Command::new(&python);
    command.arg(fixture("server.py")).arg("http");
    let mut server = Process::spawn("python server.py http", command);
    let url = server.wait_for_line("listening ").await;

    let asked = Asked::default();
    let client = builder(&asked).connect(&url).await.unwrap();
    exercise(&client, &asked).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn our_client_against_the_python_server_over_stdio() {
    let Some(python) = python() else { return };
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    let command = StdioCommand::new(&python)
        .arg(fixture("server.py"))
        .arg("stdio")
        .on_stderr(move |line| {
            let mut all = sink.lock().unwrap();
            all.push_str(line);
            all.push('\n');
        });
    let asked = Asked::default();
    let client = builder(&asked).connect_stdio(command).await.unwrap();
    // Shows the server's log if an assertion fails.
    let guard = StderrOnPanic(stderr);
    exercise(&client, &asked).await;
    client.close().await.unwrap();
    drop(guard);
}

struct StderrOnPanic(Arc<Mutex<String>>);

impl Drop for StderrOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- stderr of python server.py stdio:\n{}",
                self.0.lock().unwrap()
            );
        }
    }
}
