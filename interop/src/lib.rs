//! Interoperability with the Python reference implementation of MCP (PyPI `mcp` 2.3.0).
//!
//! Both directions, over Streamable HTTP and over stdio:
//!
//! * `tests/python_server.rs`: arctern's [`Client`](arctern::client::Client) against
//!   `python/server.py`, an `MCPServer` on the Python SDK;
//! * `tests/python_client.rs`: `python/client.py`, the Python SDK's `Client`, against
//!   [`server()`] served by the `interop-server` binary;
//! * `tests/python_oauth_client.rs`: `python/oauth_client.py`, the Python SDK's client with
//!   its OAuth support, against [`protected_server()`] behind arctern's protected-resource
//!   layer and an in-process test authorization server (`interop-server --http-auth`):
//!   discovery, registration, PKCE, a scope step-up, then a multi round-trip flow;
//! * `tests/python_oauth_server.rs`: arctern's OAuth client against
//!   `python/protected_server.py`, protected by the Python SDK's resource-server support
//!   (tokens from arctern's test authorization server, checked by introspection).
//!
//! Both servers offer the same kinds of things: plain tools, a tool that asks two questions
//! in two rounds (the second depends on the first answer), a tool that samples the client's
//! LLM, one that reads the client's roots, a plain prompt, a prompt that asks a question,
//! and a resource template.
//!
//! The Python side runs in a virtualenv that `scripts/python-env.sh` creates once (pinned
//! by `python/requirements.txt`) and whose interpreter it prints; the tests find it through
//! `ARCTERN_PYTHON` or in the script's cache folder.

use arctern::auth::resource::VerifiedToken;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question, Roots};
use arctern::server::{
    McpHandler, McpServer, RegistrationError, ResourceTemplateSpec, Server, ToolSpec,
};
use arctern::types::prompts::PromptMessage;
use arctern::types::sampling::CreateMessageResult;
use schemars::JsonSchema;
use serde::Deserialize;

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "arctern-interop";

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
pub struct Text {
    /// Any text.
    pub text: String,
}

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
pub struct Addends {
    /// The first number.
    pub a: f64,
    /// The second number.
    pub b: f64,
}

/// Arguments of `provision`.
#[derive(Deserialize, JsonSchema)]
pub struct Provision {
    /// Name of the database.
    pub name: String,
}

/// The first question of `provision`.
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which region should the database live in?")]
pub struct Region {
    /// A cloud region, such as eu-west-1.
    pub region: String,
}

/// The second question of `provision`: built from the first answer, so asked a round later.
#[derive(Deserialize, JsonSchema)]
pub struct Size {
    /// Disk size in GB.
    pub gigabytes: u32,
}

impl Question for Size {
    type Args = NoArgs;
    type Answer = Size;
    fn ask(cx: &AskContext<'_, NoArgs>) -> Result<Ask<Size>, NotYet> {
        let region = cx.answer::<Region>()?;
        Ok(Ask::form(
            "size",
            format!("How many GB in {}?", region.region),
        ))
    }
}

/// Arguments of `tagline`.
#[derive(Deserialize, JsonSchema)]
pub struct Product {
    /// The product to find a tagline for.
    pub product: String,
}

/// The completion `tagline` asks the client's LLM for.
pub struct TaglineRequest;

impl Question for TaglineRequest {
    type Args = Product;
    type Answer = CreateMessageResult;
    fn ask(cx: &AskContext<'_, Product>) -> Result<Ask<CreateMessageResult>, NotYet> {
        let prompt = format!("Suggest a tagline for {}.", cx.args().product);
        Ok(Ask::sample("tagline", prompt).max_tokens(50))
    }
}

/// Arguments of the `greeting` prompt.
#[derive(Deserialize, JsonSchema)]
pub struct Name {
    /// Who to greet.
    pub name: String,
}

/// Arguments of the `briefing` prompt.
#[derive(Deserialize, JsonSchema)]
pub struct Topic {
    /// The topic.
    pub topic: String,
}

/// The question of the `briefing` prompt.
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "audience", message = "Who is the briefing for?")]
pub struct Audience {
    /// Who will read the briefing.
    pub audience: String,
}

async fn echo(Args(t): Args<Text>) -> String {
    t.text
}

async fn add(Args(n): Args<Addends>) -> String {
    format!("{} + {} = {}", n.a, n.b, n.a + n.b)
}

async fn provision(
    Args(p): Args<Provision>,
    Answer(r): Answer<Region>,
    Answer(s): Answer<Size>,
) -> String {
    format!(
        "Provisioned {} in {} with {} GB",
        p.name, r.region, s.gigabytes
    )
}

async fn tagline(Args(p): Args<Product>, Answer(sample): Answer<TaglineRequest>) -> String {
    let content = serde_json::to_value(&sample.content).unwrap_or_default();
    let text = content
        .get("text")
        .and_then(|t| t.as_str())
        .map_or_else(|| content.to_string(), str::to_owned);
    format!("{}: {text} ({})", p.product, sample.model)
}

async fn show_roots(Answer(roots): Answer<Roots>) -> String {
    roots
        .iter()
        .map(|r| format!("{}={}", r.name.as_deref().unwrap_or(""), r.uri))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn greeting(Args(n): Args<Name>) -> Vec<PromptMessage> {
    vec![PromptMessage::user_text(format!(
        "Say hello to {}.",
        n.name
    ))]
}

async fn briefing(Args(t): Args<Topic>, Answer(a): Answer<Audience>) -> Vec<PromptMessage> {
    vec![PromptMessage::user_text(format!(
        "Write a briefing on {} for {}.",
        t.topic, a.audience
    ))]
}

async fn notes(Args(t): Args<Topic>) -> String {
    format!("Notes about {}.", t.topic)
}

async fn whoami(token: VerifiedToken) -> String {
    format!(
        "{} {} {}",
        token.issuer,
        token.subject,
        token.scopes.join(" ")
    )
}

/// The scope every request to the protected server needs.
pub const BASE_SCOPE: &str = "mcp:tools";
/// The scope `provision` needs on the protected server.
pub const PROVISION_SCOPE: &str = "db:write";

/// The server the Python client with OAuth talks to (`interop-server --http-auth`, behind
/// the test authorization server): `whoami` (who the token says is calling) and
/// `provision` (two questions), which needs [`PROVISION_SCOPE`] on top of [`BASE_SCOPE`].
/// Its counterpart is `python/protected_server.py`.
pub fn protected_server() -> Result<Server<McpHandler>, RegistrationError> {
    McpServer::new(SERVER_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .tool("whoami", "Who the access token says is calling.", whoami)
        .tool_spec(
            ToolSpec::new("provision")
                .description("Provisions a database; asks for its region, then for its size.")
                .scopes([PROVISION_SCOPE]),
            provision,
        )
        .build()
}

/// The server the Python client talks to (`interop-server`), the counterpart of
/// `python/server.py`.
pub fn server() -> Result<Server<McpHandler>, RegistrationError> {
    McpServer::new(SERVER_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .tool("echo", "Returns its text.", echo)
        .tool("add", "Adds two numbers.", add)
        .tool(
            "provision",
            "Provisions a database; asks for its region, then for its size.",
            provision,
        )
        .tool(
            "tagline",
            "Writes a tagline by asking the client's LLM.",
            tagline,
        )
        .tool("show_roots", "Lists the client's roots.", show_roots)
        .prompt("greeting", "A greeting for someone.", greeting)
        .prompt(
            "briefing",
            "A briefing on a topic; asks who it is for.",
            briefing,
        )
        .resource_template(
            ResourceTemplateSpec::new("notes://{topic}", "notes")
                .description("Notes about a topic.")
                .mime_type("text/plain"),
            notes,
        )
        .build()
}
