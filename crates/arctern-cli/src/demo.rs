//! The demo server of `arctern serve`: one tool, prompt or resource per idea.

use std::time::Duration;

use arctern::server::extract::Args;
use arctern::server::mrtr::{
    Answer, Ask, AskContext, NotYet, Question, Roots, Sample, SamplingQuestion,
};
use arctern::server::{McpHandler, McpServer, RequestContext, ResourceTemplateSpec, Server};
use arctern::types::prompts::PromptMessage;
use arctern::types::sampling::{CreateMessageRequestParams, SamplingMessage};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `provision`.
#[derive(Deserialize, JsonSchema)]
pub struct Provision {
    /// Name of the database to create.
    pub name: String,
}

/// The region `provision` asks for.
#[derive(Deserialize, JsonSchema)]
pub struct Region {
    /// A cloud region, such as eu-west-1.
    pub region: String,
}

impl Question for Region {
    const KEY: &'static str = "region";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Which region should the database live in?"))
    }
}

async fn provision(Args(p): Args<Provision>, Answer(r): Answer<Region>) -> String {
    format!("Provisioned database {:?} in {}.", p.name, r.region)
}

/// Who the `briefing` prompt is for.
#[derive(Deserialize, JsonSchema)]
pub struct Audience {
    /// Who will read the briefing (for example: engineers, executives).
    pub audience: String,
}

impl Question for Audience {
    const KEY: &'static str = "audience";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Who is the briefing for?"))
    }
}

/// Arguments of the `briefing` prompt.
#[derive(Deserialize, JsonSchema)]
pub struct BriefingArgs {
    /// The topic of the briefing.
    pub topic: String,
}

async fn briefing(
    Args(a): Args<BriefingArgs>,
    Answer(who): Answer<Audience>,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user_text(format!(
        "Write a one-page briefing on {} for {}. Lead with what they must decide.",
        a.topic, who.audience
    ))]
}

/// Variables of the `config://{env}` template.
#[derive(Deserialize, JsonSchema)]
pub struct ConfigVars {
    /// The environment.
    pub env: String,
}

/// The confirmation `config://{env}` asks for before revealing a configuration.
#[derive(Deserialize, JsonSchema)]
pub struct RevealConfig {
    /// Show the configuration?
    pub reveal: bool,
}

impl Question for RevealConfig {
    const KEY: &'static str = "reveal";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let env = cx
            .arguments::<ConfigVars>()
            .map(|v| v.env)
            .unwrap_or_default();
        Ok(Ask::form(format!("Reveal the {env} configuration?")))
    }
}

async fn config(Args(vars): Args<ConfigVars>, Answer(ok): Answer<RevealConfig>) -> String {
    if ok.reveal {
        serde_json::json!({"env": vars.env, "replicas": 3, "log_level": "info"}).to_string()
    } else {
        format!("The {} configuration stays hidden.", vars.env)
    }
}

/// Arguments of `slow_count`.
#[derive(Deserialize, JsonSchema)]
pub struct SlowCount {
    /// How many steps (1 to 100).
    pub steps: u32,
}

async fn slow_count(ctx: RequestContext, Args(a): Args<SlowCount>) -> String {
    let steps = a.steps.clamp(1, 100);
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("step {step} of {steps}")),
        )
        .await;
    }
    format!("Counted to {steps}.")
}

/// Arguments of `haiku`.
#[derive(Deserialize, JsonSchema)]
pub struct HaikuArgs {
    /// What the haiku is about.
    pub topic: String,
}

/// The completion `haiku` asks the client's LLM for.
pub struct HaikuRequest;

impl SamplingQuestion for HaikuRequest {
    const KEY: &'static str = "haiku";
    fn ask(cx: &AskContext<'_>) -> Result<CreateMessageRequestParams, NotYet> {
        let topic = cx
            .arguments::<HaikuArgs>()
            .map(|a| a.topic)
            .unwrap_or_default();
        Ok(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text(format!(
                "Write a haiku about {topic}."
            ))],
            200,
        ))
    }
}

async fn haiku(Args(_): Args<HaikuArgs>, sample: Sample<HaikuRequest>) -> String {
    match serde_json::to_value(&sample.0.content) {
        Ok(v) => v
            .get("text")
            .and_then(|t| t.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string()),
        Err(e) => format!("The model answered with something unreadable: {e}"),
    }
}

async fn list_roots(Roots(roots): Roots) -> String {
    if roots.is_empty() {
        return "The client shares no roots.".into();
    }
    let lines: Vec<String> = roots
        .iter()
        .map(|r| match &r.name {
            Some(name) => format!("{name}: {}", r.uri),
            None => r.uri.clone(),
        })
        .collect();
    lines.join("\n")
}

/// Arguments of `invite`.
#[derive(Deserialize, JsonSchema)]
pub struct InviteArgs {
    /// The workspace to invite someone to.
    pub workspace: String,
}

/// A teammate's role (a single choice with titles).
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Viewer (read only)
    Viewer,
    /// Editor (can change things)
    Editor,
    /// Admin (can also manage people)
    Admin,
}

/// A team of the workspace (the options of a multi-select).
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Team {
    /// Backend.
    Backend,
    /// Frontend.
    Frontend,
    /// Data.
    Data,
    /// Operations.
    Ops,
}

/// The teams as a multi-select with titles, at least one chosen.
fn teams_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "minItems": 1,
        "items": {"anyOf": [
            {"const": "backend", "title": "Backend"},
            {"const": "frontend", "title": "Frontend"},
            {"const": "data", "title": "Data"},
            {"const": "ops", "title": "Operations"}
        ]}
    })
}

fn default_days() -> u32 {
    7
}

fn default_notify() -> bool {
    true
}

/// What `invite` asks, in one form with a field of every kind: an email address, a titled
/// choice, a multi-select, a bounded integer with a default, and a yes/no with a default.
#[derive(Deserialize, JsonSchema)]
pub struct Invitation {
    /// Their email address.
    #[schemars(email)]
    pub email: String,
    /// What they may do.
    pub role: Role,
    /// The teams they join.
    #[schemars(schema_with = "teams_schema")]
    pub teams: Vec<Team>,
    /// How many days the invitation stays valid.
    #[serde(default = "default_days")]
    #[schemars(range(min = 1, max = 90))]
    pub days: u32,
    /// Email them the invitation now?
    #[serde(default = "default_notify")]
    pub notify: bool,
}

impl Question for Invitation {
    const KEY: &'static str = "invitation";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let workspace = cx
            .arguments::<InviteArgs>()
            .map(|a| a.workspace)
            .unwrap_or_default();
        Ok(Ask::form(format!("Whom should I invite to {workspace}?")))
    }
}

async fn invite(Args(a): Args<InviteArgs>, Answer(i): Answer<Invitation>) -> String {
    let role = match i.role {
        Role::Viewer => "viewer",
        Role::Editor => "editor",
        Role::Admin => "admin",
    };
    let teams: Vec<&str> = i
        .teams
        .iter()
        .map(|t| match t {
            Team::Backend => "backend",
            Team::Frontend => "frontend",
            Team::Data => "data",
            Team::Ops => "ops",
        })
        .collect();
    let teams = if teams.is_empty() {
        "no team".to_owned()
    } else {
        teams.join(", ")
    };
    format!(
        "Invited {} to {} as {role} ({teams}); the invitation lasts {} days{}.",
        i.email,
        a.workspace,
        i.days,
        if i.notify {
            " and was emailed"
        } else {
            ", no email sent"
        }
    )
}

/// Arguments of `echo` and `confirm` (the benchmark contract).
#[derive(Deserialize, JsonSchema)]
pub struct TextArg {
    /// Any text.
    pub text: String,
}

async fn echo(Args(a): Args<TextArg>) -> String {
    a.text
}

/// The confirmation `confirm` asks for (the benchmark contract: key `confirm`, `{ok: bool}`).
#[derive(Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead?
    pub ok: bool,
}

impl Question for Confirm {
    const KEY: &'static str = "confirm";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Confirm?"))
    }
}

async fn confirm(Args(a): Args<TextArg>, Answer(c): Answer<Confirm>) -> String {
    if c.ok {
        a.text
    } else {
        "Not confirmed.".into()
    }
}

/// The demo server.
pub fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("arctern-demo")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(
            "A demonstration of multi round-trip requests: tools that ask the user, the client's \
             LLM, or the client's roots before they finish.",
        )
        .tool(
            "provision",
            "Provision a database. Asks which region to put it in.",
            provision,
        )
        .tool(
            "slow_count",
            "Counts slowly, reporting progress at each step.",
            slow_count,
        )
        .tool(
            "invite",
            "Invites a teammate. Asks one form: email, role, teams, how long, whether to email.",
            invite,
        )
        .tool("haiku", "Writes a haiku by asking the client's LLM.", haiku)
        .tool(
            "list_roots",
            "Lists the directories the client shares (its roots).",
            list_roots,
        )
        .tool("echo", "Returns its text.", echo)
        .tool(
            "confirm",
            "Returns its text after the user confirms.",
            confirm,
        )
        .prompt(
            "briefing",
            "A briefing on a topic. Asks who it is for.",
            briefing,
        )
        .resource_template(
            ResourceTemplateSpec::new("config://{env}", "config")
                .description("The configuration of an environment. Asks before revealing it.")
                .mime_type("application/json"),
            config,
        )
        .build()
}
