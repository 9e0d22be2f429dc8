//! arctern's OAuth client against a server protected by the Python reference SDK's
//! resource-server support (`mcp` 2.3.0, `python/protected_server.py`), whose tokens come
//! from arctern's test authorization server in this process (the Python server checks
//! them by introspection there): discovery from the Python server's `401` and metadata,
//! registration, the authorization code flow with PKCE, then a multi round-trip flow with
//! the token.

mod common;

use std::sync::{Arc, Mutex};

use arctern::auth::client::{Headless, OAuth};
use arctern::client::{Client, HttpTransport};
use arctern::testing::TestAuthServer;
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use common::{PATIENCE, Process, fixture, python, scripted_form_answer, text};
use serde_json::json;
use tokio::process::Command;

#[tokio::test]
async fn our_oauth_client_against_the_python_protected_server() {
    let Some(python) = python() else { return };
    // A client that asks for no scope gets mcp:tools, which the Python server requires.
    let auth = TestAuthServer::builder()
        .default_scopes(["mcp:tools"])
        .start()
        .await
        .unwrap();
    let mut command = Command::new(&python);
    command
        .arg(fixture("protected_server.py"))
        .arg(auth.issuer());
    let mut server = Process::spawn("python protected_server.py", command);
    let url = server.wait_for_line("listening ").await;

    let oauth = OAuth::builder()
        .client_name("arctern-interop-oauth-client")
        .step(Headless::new("http://127.0.0.1:9/callback"))
        .build();
    let transport = HttpTransport::builder(&url)
        .authorizer(oauth.clone())
        .build()
        .unwrap();
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let client = Client::builder()
        .name("arctern-interop-oauth-client")
        .request_timeout(PATIENCE)
        .on_elicit(move |question| {
            let log = log.clone();
            async move {
                let ElicitRequestParams::Form(form) = question.params() else {
                    return Ok(ElicitResult::decline());
                };
                log.lock().unwrap().push(form.message.clone());
                let fields: Vec<&str> = form.requested_schema.properties.names().collect();
                Ok(scripted_form_answer(&fields))
            }
        })
        .connect_with(transport)
        .await
        .unwrap_or_else(|e| panic!("{e}\n--- server stderr:\n{}", server.stderr()));
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.server_info().unwrap().name, "py-protected");
    let sign_ins = auth.authorization_requests();
    assert!(sign_ins >= 1, "signed in");

    let whoami = client.call_tool("whoami", json!({})).await.unwrap();
    let who = text(&whoami.content);
    assert!(
        who.starts_with("test-user ") && who.split(' ').any(|s| s == "mcp:tools"),
        "{who}"
    );

    let provisioned = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&provisioned.content),
        "Provisioned orders in eu-west-1 with 20 GB"
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "Which region should the database live in?",
            "How many GB in eu-west-1?"
        ]
    );
    assert!(auth.introspections() >= 1, "the Python server introspected");
    assert_eq!(
        auth.authorization_requests(),
        sign_ins,
        "the token was reused"
    );
    client.close().await.unwrap();
}
