//! arctern's `Client`, pinned to the legacy era, against the Python reference SDK's
//! `MCPServer` (`mcp` 2.3.0, `python/server.py`), over Streamable HTTP and over stdio.
//!
//! On a 2025-11-25 session the Python server asks its questions with real server→client
//! requests (`elicitation/create`, `sampling/createMessage`, `roots/list`) in the middle of
//! the tool call; the client answers them with the same callbacks its modern loop uses.

mod common;

use std::sync::{Arc, Mutex};

use arctern::Era;
use arctern::client::{Client, ClientBuilder, StdioCommand};
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use common::{
    PATIENCE, Process, ROOT, fixture, python, scripted_form_answer, text,
    with_scripted_model_and_roots,
};
use serde_json::json;
use tokio::process::Command;

/// The questions the server asked: (method of the call they arrived in, tool, message).
type Asked = Arc<Mutex<Vec<(String, String, String)>>>;

/// A legacy client that answers the server's questions by the fields they ask for.
fn builder(asked: &Asked) -> ClientBuilder {
    let log = asked.clone();
    let builder = Client::builder()
        .name("arctern-interop-legacy-client")
        .era(Era::Legacy)
        .request_timeout(PATIENCE)
        .on_elicit(move |question| {
            let log = log.clone();
            async move {
                let ElicitRequestParams::Form(form) = question.params() else {
                    return Ok(ElicitResult::decline());
                };
                log.lock().unwrap().push((
                    question.origin().method().to_owned(),
                    question.origin().target().to_owned(),
                    form.message.clone(),
                ));
                let fields: Vec<&str> = form.requested_schema.properties.names().collect();
                Ok(scripted_form_answer(&fields))
            }
        });
    with_scripted_model_and_roots(builder)
}

/// The flows of a legacy session: tools with elicitation (two rounds), sampling and roots,
/// a prompt, a resource template, `ping`.
async fn exercise(client: &Client, asked: &Asked) {
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(client.server_info().unwrap().name, "py-interop");
    assert!(client.server_capabilities().unwrap().tools.is_some());
    client.ping().await.unwrap();

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

    // Two elicitations, sent as server→client requests during the call.
    let provisioned = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&provisioned.content),
        "Provisioned orders in eu-west-1 with 20 GB"
    );
    let asked = std::mem::take(&mut *asked.lock().unwrap());
    let expected = |message: &str| {
        (
            "tools/call".to_owned(),
            "provision".to_owned(),
            message.to_owned(),
        )
    };
    assert_eq!(
        asked,
        [
            expected("Which region should the database live in?"),
            expected("How many GB in eu-west-1?")
        ]
    );

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

    let greeting = client
        .get_prompt("greeting", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&greeting.messages[0].content), "Say hello to Ada.");
    let notes = client.read_resource("notes://rust").await.unwrap();
    assert_eq!(text(&notes.contents), "Notes about rust.");

    match client.call_tool("no_such_tool", json!({})).await {
        Ok(result) => assert_eq!(result.is_error, Some(true), "{result:?}"),
        Err(e) => assert!(e.protocol_error().is_some(), "{e}"),
    }
}

#[tokio::test]
async fn our_legacy_client_against_the_python_server_over_http() {
    let Some(python) = python() else { return };
    let mut command = Command::new(&python);
    command.arg(fixture("server.py")).arg("http");
    let mut server = Process::spawn("python server.py http", command);
    let url = server.wait_for_line("listening ").await;

    let asked = Asked::default();
    let client = builder(&asked).connect(&url).await.unwrap();
    exercise(&client, &asked).await;
    // Ends the session (DELETE) and the transport: nothing more goes out.
    client.close().await.unwrap();
    assert!(client.list_tools().await.is_err());
}

#[tokio::test]
async fn our_legacy_client_against_the_python_server_over_stdio() {
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
