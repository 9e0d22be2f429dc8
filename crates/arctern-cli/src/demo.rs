//! The demo server of `arctern serve`: one tool, prompt or resource per idea.

use std::time::Duration;

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question, Questions, Roots};
use arctern::server::tasks::{TaskConfig, TaskError, TaskHandle, TaskSupport};
use arctern::server::{
    McpHandler, McpServer, RequestContext, ResourceTemplateSpec, Server, ToolSpec, ViewSpec,
};
use arctern::types::prompts::PromptMessage;
use arctern::types::sampling::CreateMessageResult;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `provision`.
#[derive(Deserialize, JsonSchema)]
pub struct Provision {
    /// Name of the database to create.
    pub name: String,
}

/// The region `provision` asks for.
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "region", message = "Which region should the database live in?")]
pub struct Region {
    /// A cloud region, such as eu-west-1.
    pub region: String,
}

async fn provision(Args(p): Args<Provision>, Answer(r): Answer<Region>) -> String {
    format!("Provisioned database {:?} in {}.", p.name, r.region)
}

/// Who the `briefing` prompt is for.
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "audience", message = "Who is the briefing for?")]
pub struct Audience {
    /// Who will read the briefing (for example: engineers, executives).
    pub audience: String,
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
pub struct RevealConfig;

impl Question for RevealConfig {
    type Args = ConfigVars;
    type Answer = bool;
    fn ask(cx: &AskContext<'_, ConfigVars>) -> Result<Ask<bool>, NotYet> {
        let env = &cx.args().env;
        Ok(Ask::confirm(
            "reveal",
            format!("Reveal the {env} configuration?"),
        ))
    }
}

async fn config(Args(vars): Args<ConfigVars>, Answer(reveal): Answer<RevealConfig>) -> String {
    if reveal {
        serde_json::json!({"env": vars.env, "replicas": 3, "log_level": "info"}).to_string()
    } else {
        format!("The {} configuration stays hidden.", vars.env)
    }
}

/// Arguments of `slow_count`.
#[derive(Deserialize, JsonSchema)]
pub struct SlowCount {
    /// How many steps (1 to 100).
    #[schemars(range(min = 1, max = 100))]
    pub steps: u32,
}

/// The bounds are in the schema, which the server checks before the handler runs: a call
/// with `steps: 500` is refused naming `steps`, rather than counting to 100.
async fn slow_count(ctx: RequestContext, Args(a): Args<SlowCount>) -> String {
    let steps = a.steps;
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

/// Arguments of `deploy`.
#[derive(Deserialize, JsonSchema)]
pub struct DeployArgs {
    /// The service to deploy.
    pub service: String,
    /// How many build steps run before it asks (1 to 100; 300 ms each).
    #[serde(default = "default_steps")]
    #[schemars(range(min = 1, max = 100))]
    pub steps: u32,
}

fn default_steps() -> u32 {
    4
}

/// A long job run as a task: build steps with progress, one question mid-way (asked through
/// `tasks/get`, answered through `tasks/update`), and cooperative cancellation.
async fn deploy(task: TaskHandle, Args(a): Args<DeployArgs>) -> Result<String, TaskError> {
    let steps = a.steps;
    let total = u64::from(steps) + 1;
    for step in 1..=steps {
        task.progress(
            u64::from(step),
            Some(total),
            format!("building {}: step {step} of {steps}", a.service),
        )
        .await;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(300)) => {}
            () = task.cancelled() => return Err(TaskError::Cancelled),
        }
    }
    let ship = task
        .ask(Ask::confirm(
            "ship",
            format!("The build of {} passed. Ship it to production?", a.service),
        ))
        .await?;
    if !ship {
        return Ok(format!("Built {}; kept it out of production.", a.service));
    }
    task.progress(total, Some(total), "shipped").await;
    Ok(format!("Deployed {} to production.", a.service))
}

/// Arguments of `haiku`.
#[derive(Deserialize, JsonSchema)]
pub struct HaikuArgs {
    /// What the haiku is about.
    pub topic: String,
}

/// The completion `haiku` asks the client's LLM for.
pub struct HaikuRequest;

impl Question for HaikuRequest {
    type Args = HaikuArgs;
    type Answer = CreateMessageResult;
    fn ask(cx: &AskContext<'_, HaikuArgs>) -> Result<Ask<CreateMessageResult>, NotYet> {
        let topic = &cx.args().topic;
        Ok(Ask::sample("haiku", format!("Write a haiku about {topic}.")).max_tokens(200))
    }
}

/// Only the question reads the arguments; its `Args` are the tool's input schema.
async fn haiku(Answer(poem): Answer<HaikuRequest>) -> String {
    match poem.content.first_text() {
        Some(text) => text.to_owned(),
        None => "The model answered without text.".to_owned(),
    }
}

async fn list_roots(Answer(roots): Answer<Roots>) -> String {
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
    type Args = InviteArgs;
    type Answer = Invitation;
    fn ask(cx: &AskContext<'_, InviteArgs>) -> Result<Ask<Invitation>, NotYet> {
        let workspace = &cx.args().workspace;
        Ok(Ask::form(
            "invitation",
            format!("Whom should I invite to {workspace}?"),
        ))
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
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "confirm", message = "Confirm?")]
pub struct Confirm {
    /// Go ahead?
    pub ok: bool,
}

async fn confirm(Args(a): Args<TextArg>, Answer(c): Answer<Confirm>) -> String {
    if c.ok {
        a.text
    } else {
        "Not confirmed.".into()
    }
}

/// Arguments of `book_hotel`.
#[derive(Deserialize, JsonSchema)]
pub struct Trip {
    /// The city to stay in: Lisbon, Oslo or Kyoto.
    pub city: String,
}

/// The cities `book_hotel` books in, and their hotels: `(value, title)`.
pub const HOTELS: [(&str, &[(&str, &str)]); 3] = [
    (
        "Lisbon",
        &[
            ("lis-avenida", "Hotel Avenida"),
            ("lis-alfama", "Casa da Alfama"),
            ("lis-tejo", "Tejo River Suites"),
        ],
    ),
    (
        "Oslo",
        &[
            ("osl-fjord", "Fjord Hotel"),
            ("osl-aurora", "Aurora Inn"),
            ("osl-opera", "Opera Lodge"),
        ],
    ),
    (
        "Kyoto",
        &[
            ("kyo-gion", "Gion Ryokan"),
            ("kyo-kamo", "Kamogawa House"),
            ("kyo-bamboo", "Bamboo Grove Hotel"),
        ],
    ),
];

/// A city `book_hotel` books in (matched ignoring case), with its hotels.
pub fn hotels_in(city: &str) -> Option<(&'static str, &'static [(&'static str, &'static str)])> {
    let city = city.trim();
    HOTELS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(city))
        .copied()
}

/// Asks for a hotel among the city's (a choice computed at run time); a city without hotels
/// is a tool error, and nothing is asked.
async fn book_hotel(
    Args(trip): Args<Trip>,
    q: Questions,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let Some((city, hotels)) = hotels_in(&trip.city) else {
        let cities: Vec<&str> = HOTELS.iter().map(|(name, _)| *name).collect();
        return Err(format!(
            "No hotels in {:?}: this demo books hotels in {} only.",
            trip.city,
            cities.join(", ")
        )
        .into());
    };
    let hotel = q.answer(Ask::choice(
        "hotel",
        format!("Which hotel in {city}?"),
        hotels.iter().copied(),
    ))?;
    // The answer is one of the offered values: the server refused anything else.
    let title = hotels
        .iter()
        .find(|(value, _)| *value == hotel)
        .map_or(hotel.as_str(), |(_, title)| title);
    Ok(format!("Booked {title} in {city}."))
}

/// Arguments of `show_echo`.
#[derive(Deserialize, JsonSchema)]
pub struct ShowEcho {
    /// The text to echo and show.
    pub text: String,
}

/// The URI of the demo's MCP Apps view.
pub const ECHO_VIEW: &str = "ui://arctern-demo/echo.html";

/// The demo's MCP Apps view: the last echoed text, and a form that echoes again through the
/// host. Plain HTML and script, no libraries.
pub const ECHO_VIEW_HTML: &str = include_str!("demo/echo_view.html");

async fn show_echo(Args(e): Args<ShowEcho>) -> String {
    // The text is the result for the model and for hosts without Apps; the view shows it.
    e.text
}

/// The demo server.
pub fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    builder().build()
}

/// The OAuth scope every request to the protected demo needs (`arctern serve --auth`).
pub const ACCESS_SCOPE: &str = "mcp:tools";

/// The OAuth scope `provision` needs besides [`ACCESS_SCOPE`] when the demo is protected: a
/// token without it gets `403 insufficient_scope`, and the client signs in again for it.
pub const PROVISION_SCOPE: &str = "db:write";

/// How the demo runs tasks: in this process's memory (`arctern serve --redis` keeps them in
/// Redis instead), polled every 200 ms so a short demo task shows each step.
pub fn task_config() -> TaskConfig {
    TaskConfig::default().poll_interval(Duration::from_millis(200))
}

/// The demo server's builder (`arctern serve` adds the fleet settings and the notes to it).
pub fn builder() -> McpServer {
    build(&[])
}

/// The builder of the demo protected by OAuth (`arctern serve --auth`): the same tools,
/// with `provision` declaring [`PROVISION_SCOPE`]. Serve it behind a protected-resource
/// layer, which establishes the caller's scopes; without one, `provision` is refused.
pub fn protected_builder() -> McpServer {
    build(&[PROVISION_SCOPE])
}

/// The demo, with the scopes `provision` declares.
fn build(provision_scopes: &[&str]) -> McpServer {
    McpServer::new("arctern-demo")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(
            "A demonstration of multi round-trip requests: tools that ask the user, the client's \
             LLM, or the client's roots before they finish.",
        )
        .tool_spec(
            ToolSpec::new("provision")
                .description("Provision a database. Asks which region to put it in.")
                .scopes(provision_scopes.iter().copied()),
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
        .tool(
            "book_hotel",
            "Books a hotel in Lisbon, Oslo or Kyoto. Asks which one, among the city's hotels.",
            book_hotel,
        )
        .tool("echo", "Returns its text.", echo)
        .view(
            ViewSpec::new(ECHO_VIEW, "echo-view")
                .title("Echo")
                .description("Shows what show_echo echoed, and echoes again.")
                .html(ECHO_VIEW_HTML)
                .prefers_border(true),
        )
        .tool_spec(
            ToolSpec::new("show_echo")
                .description(
                    "Returns its text, shown in an MCP Apps view by hosts that render them.",
                )
                .ui(ECHO_VIEW),
            show_echo,
        )
        .tasks(task_config())
        .tool_spec(
            ToolSpec::new("deploy")
                .description(
                    "Builds and deploys a service as a task: progress at each step, and one \
                     question before it ships.",
                )
                .task(TaskSupport::Optional),
            deploy,
        )
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
}
