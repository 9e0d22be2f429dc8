//! `conformance-client`: the client the official MCP conformance suite drives.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call conformance-client http://127.0.0.1:PORT/mcp
//! ```
//!
//! The suite starts a mock server per scenario and runs this binary with the server's URL as
//! the last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO`, the wire version in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, extra data as JSON in
//! `MCP_CONFORMANCE_CONTEXT`. Every exchange goes through [`arctern::client::Client`], so the
//! suite checks the SDK, not this file.
//!
//! Scenarios named `auth/…` run with an [`arctern::auth::client::OAuth`] authorizer: the
//! authorization code flow with a headless step (the suite's authorization server
//! redirects at once; the code is read from `Location`), the suite's Client ID Metadata
//! Document URL, and what `MCP_CONFORMANCE_CONTEXT` gives — a pre-registered client (with a
//! secret or a private key) pinned to the authorization server the context names (its
//! `issuer`, or the audience of the workload's JWT), and the grant of the extension
//! scenarios (client credentials, JWT bearer, enterprise-managed).
//!
//! The wire decides the era: a wire before 2026-07-28 pins the client to the legacy era
//! (`initialize`, a session, server→client requests answered by the same handlers), so that
//! nothing of the modern wire (a `server/discover` probe) reaches a mock that validates every
//! message against its own revision's schema.
//!
//! Logs go to stderr only (filter with `RUST_LOG`). Exit status: 0 when the scenario's
//! actions all succeeded, 1 when one failed (the error is on stderr), 2 on a usage error.

use std::process::ExitCode;
use std::time::Duration;

use arctern::Era;
use arctern::auth::client::{EnterpriseManaged, Grant, Headless, OAuth, PreRegistered};
use arctern::auth::jose::SigningKey;
use arctern::client::{Client, Continuation, HttpTransport, InputOrigin, Outcome};
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern::types::roots::Root;
use arctern::types::sampling::CreateMessageResult;
use arctern::types::tools::{CallToolResult, Tool};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use tracing_subscriber::EnvFilter;

/// A bound on every single request, well inside the suite's per-scenario kill timer, so
/// that a stuck exchange ends with a message instead of a silent kill.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

type Failure = Box<dyn std::error::Error>;
type Step = Result<(), Failure>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_ansi(false)
        .init();

    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server-url>  (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let wire = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(e) => {
                eprintln!("conformance-client: MCP_CONFORMANCE_CONTEXT is not JSON: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => Value::Null,
    };
    eprintln!("conformance-client: scenario {scenario:?} at wire {wire:?} against {url}");
    let era = if !wire.is_empty() && wire.as_str() < "2026-07-28" {
        Some(Era::Legacy)
    } else {
        None
    };

    match run(&scenario, &url, &context, era).await {
        Ok(()) => {
            eprintln!("conformance-client: scenario {scenario:?} done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance-client: scenario {scenario:?} failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str, context: &Value, era: Option<Era>) -> Step {
    let oauth = if scenario.starts_with("auth/") {
        Some(oauth(scenario, context)?)
    } else {
        None
    };
    let client = connect(url, era, oauth).await?;
    let result = match scenario {
        "tools_call" => tools_call(&client).await,
        "request-metadata" => request_metadata(&client).await,
        "sep-2322-client-request-state" => request_state(&client).await,
        "http-standard-headers" => standard_headers(&client).await,
        "http-custom-headers" => custom_headers(&client, context).await,
        "http-invalid-tool-headers" => invalid_tool_headers(&client).await,
        "json-schema-ref-no-deref" => list_only(&client).await,
        "json-schema-2020-12-preservation" => schema_preservation(&client).await,
        // Connecting did the handshake; one request shows the session works.
        "initialize" => list_only(&client).await,
        // The tool asks a question whose fields all have defaults; `fill_form` takes them.
        "elicitation-sep1034-client-defaults" => {
            call_listed(&client, "test_client_elicitation_defaults").await
        }
        // The server ends the call's SSE stream early; the transport resumes it.
        "sse-retry" => call_listed(&client, "test_reconnection").await,
        other => {
            eprintln!(
                "conformance-client: no specific actions for scenario {other:?}; \
                 listing tools and calling each"
            );
            call_every_tool(&client).await
        }
    };
    client.close().await?;
    result
}

/// The redirect URI of the headless authorization step: the suite's authorization server
/// redirects there at once, and nothing needs to listen.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The Client ID Metadata Document URL the suite expects (its authorization server never
/// fetches it).
const CLIENT_METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

fn context_str<'a>(context: &'a Value, key: &str) -> Result<&'a str, Failure> {
    context
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT has no {key}").into())
}

/// The authorization server the context names for the pre-registered client: its
/// `issuer`, else the audience of the workload's JWT (a workload identity token is minted
/// for one authorization server).
fn issuer(context: &Value) -> Option<String> {
    if let Some(issuer) = context.get("issuer").and_then(Value::as_str) {
        return Some(issuer.to_owned());
    }
    let jwt = context.get("valid_jwt").and_then(Value::as_str)?;
    let payload = jwt.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?,
    )
    .ok()?;
    match &claims["aud"] {
        Value::String(aud) => Some(aud.clone()),
        Value::Array(auds) => auds.first().and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// OAuth as the scenario describes it: the authorization code flow with a headless step
/// by default; the grant, and a pre-registered client, from the context.
fn oauth(scenario: &str, context: &Value) -> Result<OAuth, Failure> {
    let mut builder = OAuth::builder()
        .client_name("arctern-conformance-client")
        .step(Headless::new(REDIRECT_URI))
        .client_metadata_document(CLIENT_METADATA_DOCUMENT);
    if let Some(id) = context.get("client_id").and_then(Value::as_str) {
        let mut client = match issuer(context) {
            Some(issuer) => PreRegistered::new(id, issuer),
            // The client credentials and enterprise-managed scenarios name no authorization
            // server, and theirs listens on a port chosen at run time: the suite's MCP
            // server is trusted to name it.
            None => PreRegistered::unpinned(id),
        };
        if let Some(secret) = context.get("client_secret").and_then(Value::as_str) {
            client = client.secret(secret);
        }
        if let Some(pem) = context.get("private_key_pem").and_then(Value::as_str) {
            client = client.private_key(SigningKey::from_pkcs8_pem(pem)?);
        }
        builder = builder.pre_registered(client);
    }
    builder = match scenario {
        "auth/client-credentials-basic" | "auth/client-credentials-jwt" => {
            builder.grant(Grant::ClientCredentials)
        }
        "auth/wif-jwt-bearer" => builder.grant(Grant::JwtBearer {
            assertion: context_str(context, "valid_jwt")?.to_owned(),
        }),
        "auth/enterprise-managed-authorization" => {
            builder.grant(Grant::EnterpriseManaged(EnterpriseManaged::new(
                context_str(context, "idp_token_endpoint")?,
                context_str(context, "idp_client_id")?,
                context_str(context, "idp_id_token")?,
            )))
        }
        _ => builder,
    };
    Ok(builder.build())
}

/// A client that answers every kind of question, so that it declares (and the suite can
/// check) every client capability. `era` pins the era; `None` detects it. With `oauth`,
/// every request is authorized.
async fn connect(url: &str, era: Option<Era>, oauth: Option<OAuth>) -> Result<Client, Failure> {
    let mut builder = Client::builder();
    if let Some(era) = era {
        builder = builder.era(era);
    }
    let client = builder
        .name("arctern-conformance-client")
        .request_timeout(REQUEST_TIMEOUT)
        .on_elicit(|question| async move {
            let content = match question.params() {
                ElicitRequestParams::Form(form) => serde_json::to_value(&form.requested_schema)
                    .map(|schema| fill_form(&schema))
                    .unwrap_or_default(),
                _ => Map::new(),
            };
            let content = Value::Object(content);
            eprintln!(
                "conformance-client: answering {:?} with {content}",
                question.key()
            );
            ElicitResult::accept_json(content).map_err(|e| {
                arctern::Error::new(arctern::ErrorKind::Codec, "bad elicitation answer")
                    .with_source(e)
            })
        })
        .on_sample(|question| async move {
            eprintln!(
                "conformance-client: answering sampling request {:?}",
                question.key()
            );
            Ok(CreateMessageResult::text(
                "conformance-model",
                "This is a canned answer from the conformance client.",
            ))
        })
        .roots(vec![Root::new("file:///conformance/root")]);
    let mut transport = HttpTransport::builder(url);
    if let Some(oauth) = oauth {
        transport = transport.authorizer(oauth);
    }
    let client = client.connect_with(transport.build()?).await?;
    eprintln!(
        "conformance-client: connected at {} ({:?} era) to {:?}",
        client.protocol_version(),
        client.era(),
        client.server_info().map(|i| i.name)
    );
    Ok(client)
}

/// An accepting answer to a form: each field's default, else a value of its type.
fn fill_form(schema: &Value) -> Map<String, Value> {
    let mut content = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return content;
    };
    for (name, field) in properties {
        let value = field.get("default").cloned().unwrap_or_else(|| {
            let first_option = field
                .get("enum")
                .and_then(|e| e.get(0))
                .or_else(|| field.pointer("/oneOf/0/const"))
                .cloned();
            match field.get("type").and_then(Value::as_str) {
                Some("boolean") => json!(true),
                Some("integer") => json!(1),
                Some("number") => json!(1),
                Some("array") => json!([]),
                _ => first_option.unwrap_or_else(|| json!("conformance")),
            }
        });
        content.insert(name.clone(), value);
    }
    content
}

/// Arguments that satisfy a tool's `required` list: a value of each required property's
/// type.
fn sample_arguments(tool: &Tool) -> Value {
    let schema = &tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

fn summarize(result: &CallToolResult) -> String {
    serde_json::to_string(&result.content).unwrap_or_default()
}

async fn list_tools(client: &Client) -> Result<Vec<Tool>, Failure> {
    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("conformance-client: tools {names:?}");
    Ok(tools)
}

async fn call(client: &Client, name: &str, arguments: Value) -> Result<CallToolResult, Failure> {
    let result = client.call_tool(name, arguments).await?;
    eprintln!(
        "conformance-client: {name} -> {}{}",
        summarize(&result),
        if result.is_error == Some(true) {
            " (isError)"
        } else {
            ""
        }
    );
    Ok(result)
}

/// Lists tools and calls `add_numbers` (or the first tool) with two numbers.
async fn tools_call(client: &Client) -> Step {
    let tools = list_tools(client).await?;
    let tool = tools
        .iter()
        .find(|t| t.name == "add_numbers")
        .or(tools.first())
        .ok_or("the server lists no tools")?;
    call(client, &tool.name, json!({"a": 5, "b": 3})).await?;
    Ok(())
}

/// Connecting already sent `server/discover` (and retried it after the mock's `-32022`);
/// one more request shows the envelope and headers on an ordinary method.
async fn request_metadata(client: &Client) -> Step {
    list_tools(client).await?;
    Ok(())
}

/// The MRTR client rules: state echoed exactly on a new id, nothing carried into an
/// unrelated call made between the rounds, no state invented, a result without
/// `resultType` taken as complete.
async fn request_state(client: &Client) -> Step {
    list_tools(client).await?;

    // The manual loop, so that another call can happen between the two rounds.
    let echo = "test_mrtr_echo_state";
    let round = client
        .call_tool_once(echo, json!({}), Continuation::new())
        .await?;
    let Outcome::InputRequired(irr) = round else {
        return Err(format!("{echo} completed without asking for input").into());
    };
    call(client, "test_mrtr_unrelated", json!({})).await?;
    let answers = client.answer(InputOrigin::tool(echo), &irr).await?;
    let retry = Continuation::after(&irr).with_responses(answers);
    match client.call_tool_once(echo, json!({}), retry).await? {
        Outcome::Complete(result) => {
            eprintln!("conformance-client: {echo} -> {}", summarize(&result))
        }
        _ => return Err(format!("{echo} still wants input after the retry").into()),
    }

    // The automatic loop for the others.
    call(client, "test_mrtr_no_state", json!({})).await?;
    call(client, "test_mrtr_no_result_type", json!({})).await?;
    Ok(())
}

/// Every method that has standard headers: each listed tool, resource and prompt.
async fn standard_headers(client: &Client) -> Step {
    for tool in list_tools(client).await? {
        call(client, &tool.name, sample_arguments(&tool)).await?;
    }
    for resource in client.list_resources().await? {
        let read = client.read_resource(&resource.uri).await?;
        eprintln!(
            "conformance-client: read {} ({} contents)",
            resource.uri,
            read.contents.len()
        );
    }
    for prompt in client.list_prompts().await? {
        let got = client.get_prompt(&prompt.name, Value::Null).await?;
        eprintln!(
            "conformance-client: prompt {} ({} messages)",
            prompt.name,
            got.messages.len()
        );
    }
    Ok(())
}

/// The calls the suite lists in the context's `toolCalls`, with exactly those arguments.
async fn custom_headers(client: &Client, context: &Value) -> Step {
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    list_tools(client).await?;
    for entry in calls {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a toolCalls entry has no name")?;
        let arguments = entry.get("arguments").cloned().unwrap_or(Value::Null);
        call(client, name, arguments).await?;
    }
    Ok(())
}

/// The SDK drops tools with invalid `x-mcp-header` annotations from the list; everything
/// left is called.
async fn invalid_tool_headers(client: &Client) -> Step {
    let tools = list_tools(client).await?;
    if !tools.iter().any(|t| t.name == "valid_tool") {
        return Err("valid_tool was not listed".into());
    }
    for tool in tools {
        call(client, &tool.name, sample_arguments(&tool)).await?;
    }
    Ok(())
}

/// Lists tools and does nothing with their schemas (the SDK never dereferences `$ref`).
async fn list_only(client: &Client) -> Step {
    list_tools(client).await?;
    Ok(())
}

/// Sends `json_schema_2020_12_tool`'s input schema back, as received, to `json_schema_echo`.
async fn schema_preservation(client: &Client) -> Step {
    let tools = list_tools(client).await?;
    let focal = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .ok_or("json_schema_2020_12_tool was not listed")?;
    let schema = Value::Object(focal.input_schema.clone());
    call(client, "json_schema_echo", json!({ "schema": schema })).await?;
    Ok(())
}

/// Lists tools and calls `name` without arguments.
async fn call_listed(client: &Client, name: &str) -> Step {
    let tools = list_tools(client).await?;
    if !tools.iter().any(|t| t.name == name) {
        return Err(format!("{name} was not listed").into());
    }
    call(client, name, json!({})).await?;
    Ok(())
}

/// The default for scenarios without specific actions.
async fn call_every_tool(client: &Client) -> Step {
    for tool in list_tools(client).await? {
        call(client, &tool.name, sample_arguments(&tool)).await?;
    }
    Ok(())
}
