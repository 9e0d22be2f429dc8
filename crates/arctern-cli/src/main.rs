//! The `arctern` command: serve a demo MCP server, and call any MCP server from a terminal.
//!
//! ```text
//! arctern serve [--bind 127.0.0.1] [--port 8000] [--stdio]   the demo server (fleet member: --key-file, --redis, --instance-id)
//! arctern serve --auth [--tls-cert FILE --tls-key FILE]   protected by OAuth, over HTTPS
//! arctern call <URL> <TOOL> [--arg K=V]... [--json '{…}']
//! arctern call --stdio "<COMMAND>" <TOOL> ...         the same, with the server as a child process
//! arctern discover | tools | prompts | resources [<URL> | --stdio "<COMMAND>"]
//! arctern read <URL> <URI>          arctern prompt <URL> <NAME> [--arg K=V]...
//! arctern inspect <URL> | --stdio -- <COMMAND> [ARGS]...   the web inspector on loopback
//! arctern apps check <URL> | --stdio "<COMMAND>" [--call TOOL[=JSON]]...   what an MCP Apps host would refuse
//! arctern call <URL> <TOOL> --app-info          a tool's MCP Apps view and its metadata
//! arctern login <URL>               arctern logout <URL>
//! arctern completions bash|zsh|fish|powershell|elvish
//! ```
//!
//! `call` lists the server's tools to find the tool's input schema and types each `--arg`
//! from it (`count=3` is a number when `count` is an integer; see [`args`]). When the server
//! answers `input_required`, each question is answered in turn: from `--answer KEY=VALUE` or
//! `--decline KEY` when given (a question is also named by its place, `@N`, which scripts
//! need for 2025 servers, whose keys are request ids; see [`answers`]), otherwise in an
//! interactive terminal form
//! built from the question's `requestedSchema` (see [`form`]), with accept, decline and
//! cancel. Choices show their options by title (by value when they have none) and are picked
//! with the arrow keys; `--answer` takes an option's value or title and is checked against
//! the options offered before it is sent. When the server asks a question again because it
//! did not accept an answer, its reason is shown (and a refused `--answer` stops the
//! command). A URL question shows the full URL and its domain and opens nothing without
//! consent, and so do the pages of a `-32042` "URL elicitation required" error (exit 4).
//! Sampling requests go to `--sampling-command` (see [`sampling`]) and are refused without
//! it; roots come from `--root`. A question that cannot be answered fails with its details
//! on stderr and a generic reason for the server, and its failure decides the exit code
//! whatever the server makes of the refusal. A mistyped tool, prompt, argument or resource
//! gets the closest name (see [`suggest`]). Progress notifications draw progress bars and log
//! messages print on stderr; results print on stdout, images and audio are saved to files.
//!
//! HTTPS servers are verified against the system's roots, `SSL_CERT_FILE` and `--cacert
//! FILE`. A server that wants OAuth gets it: the first time, the command shows the sign-in
//! page's URL and domain and opens the browser only with consent, then receives the
//! authorization code on a loopback redirect (see [`login`]); the token is kept, so the next
//! command needs no sign-in. `arctern login URL` signs in ahead of time, `arctern logout URL`
//! forgets.
//!
//! For scripts: `--output json` prints one JSON document on stdout (`{"result": …}` or
//! `{"error": …}`), and when stdin is not a terminal (or with `--no-input`) a question
//! without a pre-answer fails at once with its key and expected schema instead of waiting.
//!
//! # Exit codes
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | success |
//! | 1 | the tool ran and reported an error (`isError`); for `apps check`, a rule failed |
//! | 2 | usage error: bad flags, an argument that does not fit the tool's schema, an unknown tool or prompt, a malformed or unfitting `--answer` (or one the server did not accept) |
//! | 3 | connection or protocol failure: the server could not be reached or started, answered with a JSON-RPC error, or timed out |
//! | 4 | input required but not given: a question with no `--answer` when stdin is not a terminal, a question this command cannot answer (sampling without `--sampling-command`, roots without `--root`), a declined or cancelled question that kept the request from completing, or pages to open first (`-32042`) |
//! | 5 | a local step failed: the sampling command, or saving a file |
//! | 130 | interrupted with Ctrl-C in a form |

mod answers;
mod apps;
mod args;
mod demo_notes;
mod exit;
mod fields;
mod form;
mod inspect;
mod inspector;
mod login;
mod output;
mod progress;
mod sampling;
mod sanitize;
mod serve;
mod session;
mod suggest;
mod task_view;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use arctern::client::Client;
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::exit::{Exit, Failure};
use crate::output::Format;
use crate::session::{AnswerArgs, CapabilityArgs, ConnectArgs, Endpoint, Session, split_target};

/// The exit codes, as `--help` shows them.
const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    the tool ran and reported an error (isError); for apps check, a rule failed
  2    usage error: bad flags, an argument that does not fit the tool's schema, an unknown
       tool or prompt, a malformed or unfitting --answer (or one the server did not accept)
  3    connection or protocol failure: the server could not be reached or started,
       answered with a JSON-RPC error, or timed out
  4    input required but not given: a question with no --answer when stdin is not a
       terminal (or with --no-input), a question this command cannot answer (sampling
       without --sampling-command, roots without --root), a declined or cancelled
       question that kept the request from completing, or pages to open first (-32042)
  5    a local step failed: the sampling command, or saving a file
  130  interrupted with Ctrl-C in a form";

/// How `--answer` reads, as `--help` shows it.
const ANSWER_HELP: &str = "\
Answering without a terminal:
  --answer KEY=JSON answers the question with key KEY (its key in inputRequests) with a
  JSON object of the form's fields:  --answer region='{\"region\":\"eu-west-1\"}'
  When the form has exactly one field, the value alone works too:  --answer region=eu-west-1
  (text as is; numbers; true/false; an option's value or title; a comma-separated list or
  JSON array for a multi-select). Fields left out take their default. An answer is checked
  against the question before it is sent (the options offered, bounds, formats): one that
  does not fit fails with exit code 2, and so does one the server asks again for, with the
  server's reason. URL questions take accept, decline or cancel. --decline KEY declines. A
  question without either, when stdin is not a terminal, fails at once with exit code 4,
  naming its key and expected schema.

  A 2025 server's question keys are its request ids (0, 1, ...), which change with what it
  asked before (--root alone can shift them). Name a question by its place instead: @1 is
  the first question of the command, @2 the second, in the order they are asked:
    --answer @1='{\"name\":\"Ada\"}' --decline @2
  A key matches before a place; a question asked again under the same key keeps its place.";

#[derive(Parser)]
#[command(
    name = "arctern",
    version,
    about = "Serve and call Model Context Protocol servers",
    after_help = EXIT_CODES
)]
struct Cli {
    /// Output format: text for people, or one JSON document on stdout for scripts.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    output: Format,
    #[command(flatten)]
    telemetry: telemetry::TelemetryArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the demo server: tools that ask the user, the client's LLM or its roots before
    /// they finish, a prompt and a resource template that ask too, and the benchmark's echo
    /// and confirm.
    Serve(serve::ServeArgs),
    /// Call a tool; the server's questions are asked in the terminal (or answered with
    /// --answer).
    #[command(
        override_usage = "arctern call [OPTIONS] <URL> <TOOL>\n       \
                          arctern call [OPTIONS] --stdio <COMMAND> <TOOL>",
        after_help = format!("{ANSWER_HELP}\n\n{EXIT_CODES}")
    )]
    Call(CallArgs),
    /// Show what the server says about itself (server/discover).
    #[command(after_help = EXIT_CODES)]
    Discover(ListArgs),
    /// List the server's tools and their parameters (* marks required ones).
    #[command(after_help = EXIT_CODES)]
    Tools(ListArgs),
    /// List the server's prompts and their arguments.
    #[command(after_help = EXIT_CODES)]
    Prompts(ListArgs),
    /// List the server's resources and resource templates.
    #[command(after_help = EXIT_CODES)]
    Resources(ListArgs),
    /// Read a resource (answering the server's questions like call does).
    #[command(
        override_usage = "arctern read [OPTIONS] <URL> <URI>\n       \
                          arctern read [OPTIONS] --stdio <COMMAND> <URI>",
        after_help = format!("{ANSWER_HELP}\n\n{EXIT_CODES}")
    )]
    Read(ReadArgs),
    /// Get a prompt (answering the server's questions like call does).
    #[command(
        override_usage = "arctern prompt [OPTIONS] <URL> <NAME>\n       \
                          arctern prompt [OPTIONS] --stdio <COMMAND> <NAME>",
        after_help = format!("{ANSWER_HELP}\n\n{EXIT_CODES}")
    )]
    Prompt(PromptArgs),
    /// Inspect a server in the browser: a page on loopback that lists its tools, prompts and
    /// resources, calls them, answers their questions, and shows every call as one flow of
    /// rounds (ids, questions, answers, state sizes, latency, human wait) and every frame.
    #[command(override_usage = "arctern inspect [OPTIONS] <URL>\n       \
                          arctern inspect [OPTIONS] --stdio -- <COMMAND> [ARGS]...")]
    Inspect(inspector::InspectArgs),
    /// MCP Apps: check a server's views and the tools pointing at them as a host would.
    Apps(apps::AppsArgs),
    /// Sign in to a server that wants OAuth (in the browser, with consent), and keep the
    /// token for the next commands (in $ARCTERN_CREDENTIALS, else
    /// ~/.config/arctern/credentials.json).
    #[command(after_help = EXIT_CODES)]
    Login(LoginArgs),
    /// Forget the sign-in kept for a server.
    #[command(after_help = EXIT_CODES)]
    Logout {
        /// The server's URL.
        #[arg(value_name = "URL")]
        url: String,
    },
    /// Print a shell completion script for the subcommands and their flags.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions {
        /// The shell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// How to install a completion script, as `arctern completions --help` shows it.
const COMPLETIONS_HELP: &str = "\
Install (then start a new shell):
  bash        arctern completions bash > ~/.local/share/bash-completion/completions/arctern
  zsh         arctern completions zsh > ~/.zfunc/_arctern
              (with fpath+=~/.zfunc before compinit in ~/.zshrc)
  fish        arctern completions fish > ~/.config/fish/completions/arctern.fish
  powershell  arctern completions powershell >> $PROFILE
  elvish      arctern completions elvish >> ~/.config/elvish/rc.elv";

#[derive(Args)]
struct LoginArgs {
    /// The server's URL, such as https://mcp.example.com/mcp.
    #[arg(value_name = "URL")]
    url: String,
    #[command(flatten)]
    conn: ConnectArgs,
}

#[derive(Args)]
struct CallArgs {
    /// The server's URL, such as http://127.0.0.1:8000/mcp (with --stdio: the tool).
    #[arg(value_name = "URL")]
    first: String,
    /// The tool to call.
    #[arg(value_name = "TOOL")]
    second: Option<String>,
    /// A tool argument, typed from the tool's input schema: count=3 is a number when count
    /// is an integer; lists are JSON arrays or comma-separated, and repeating the flag
    /// appends. A key the schema does not list, or one given twice, is refused (--json takes
    /// any key).
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// All arguments as one JSON object; --arg values are merged over it.
    #[arg(long, value_name = "JSON")]
    json: Option<String>,
    /// Where images and audio from the result are saved [default: the current directory].
    #[arg(long, value_name = "DIR")]
    save_dir: Option<PathBuf>,
    /// Show the tool's MCP Apps view and its metadata (resource URI, visibility, MIME type,
    /// CSP, permissions, domain, border) instead of calling it.
    #[arg(long)]
    app_info: bool,
    #[command(flatten)]
    conn: ConnectArgs,
    #[command(flatten)]
    answers: AnswerArgs,
}

#[derive(Args)]
struct ListArgs {
    /// The server's URL, such as http://127.0.0.1:8000/mcp (or use --stdio).
    #[arg(value_name = "URL")]
    url: Option<String>,
    #[command(flatten)]
    conn: ConnectArgs,
    /// What the client offers: a server may list some tools, prompts or resources only to
    /// clients with these.
    #[command(flatten)]
    caps: CapabilityArgs,
}

#[derive(Args)]
struct ReadArgs {
    /// The server's URL (with --stdio: the resource URI).
    #[arg(value_name = "URL")]
    first: String,
    /// The resource URI, such as config://prod.
    #[arg(value_name = "URI")]
    second: Option<String>,
    /// Where binary contents are saved [default: the current directory].
    #[arg(long, value_name = "DIR")]
    save_dir: Option<PathBuf>,
    #[command(flatten)]
    conn: ConnectArgs,
    #[command(flatten)]
    answers: AnswerArgs,
}

#[derive(Args)]
struct PromptArgs {
    /// The server's URL (with --stdio: the prompt's name).
    #[arg(value_name = "URL")]
    first: String,
    /// The prompt's name.
    #[arg(value_name = "NAME")]
    second: Option<String>,
    /// A prompt argument (repeatable).
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// Where images and audio in the messages are saved [default: the current directory].
    #[arg(long, value_name = "DIR")]
    save_dir: Option<PathBuf>,
    #[command(flatten)]
    conn: ConnectArgs,
    #[command(flatten)]
    answers: AnswerArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(output::stderr_styled())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Scripts that asked for JSON get it for a bad command line too (exit 2).
            if e.use_stderr() && wants_json(std::env::args().skip(1)) {
                let first = e.to_string();
                let message = first
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                output::json(&Failure::usage(message).to_json());
            }
            e.exit()
        }
    };
    let format = cli.output;
    let telemetry = match telemetry::start(&cli.telemetry, cli.command.name()) {
        Ok(t) => t,
        Err(e) => return fail(Failure::usage(e), format),
    };
    let outcome = match cli.command {
        Command::Serve(a) => serve::serve(a, format)
            .await
            .map(|()| Exit::Ok)
            .map_err(|e| Failure::new(Exit::Connection, format!("serve: {e}"))),
        Command::Call(a) => within(a.conn.whole_timeout(), call(a, format)).await,
        Command::Discover(a) => {
            within(a.conn.whole_timeout(), list(a, format, List::Discover)).await
        }
        Command::Tools(a) => within(a.conn.whole_timeout(), list(a, format, List::Tools)).await,
        Command::Prompts(a) => within(a.conn.whole_timeout(), list(a, format, List::Prompts)).await,
        Command::Resources(a) => {
            within(a.conn.whole_timeout(), list(a, format, List::Resources)).await
        }
        Command::Read(a) => within(a.conn.whole_timeout(), read(a, format)).await,
        Command::Apps(a) => apps::run(a, format).await,
        Command::Prompt(a) => within(a.conn.whole_timeout(), prompt(a, format)).await,
        Command::Inspect(a) => inspector::inspect(a, format).await,
        Command::Login(a) => {
            if a.conn.stdio.is_some() {
                Err(Failure::usage("login applies to HTTP servers only"))
            } else {
                login::login(&a.url, &a.conn).await
            }
        }
        Command::Logout { url } => login::logout(&url).await,
        Command::Completions { shell } => {
            // Into memory first: the generator panics on a write error, and a closed pipe
            // (`| head`) is none worth a panic.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "arctern", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &script);
            Ok(Exit::Ok)
        }
    };
    // Spans and metrics still buffered are exported before the process ends.
    telemetry.shutdown().await;
    match outcome {
        Ok(exit) => exit.into(),
        Err(f) => fail(f, format),
    }
}

fn fail(f: Failure, format: Format) -> ExitCode {
    eprintln!("arctern: {}", sanitize::text(&f.message));
    if format == Format::Json {
        output::json(&f.to_json());
    }
    f.exit.into()
}

impl Command {
    /// The subcommand's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Command::Serve(_) => "serve",
            Command::Call(_) => "call",
            Command::Discover(_) => "discover",
            Command::Tools(_) => "tools",
            Command::Prompts(_) => "prompts",
            Command::Resources(_) => "resources",
            Command::Read(_) => "read",
            Command::Prompt(_) => "prompt",
            Command::Inspect(_) => "inspect",
            Command::Apps(_) => "apps",
            Command::Login(_) => "login",
            Command::Logout { .. } => "logout",
            Command::Completions { .. } => "completions",
        }
    }
}

/// Whether a command line that clap refused asked for `--output json`.
fn wants_json(args: impl Iterator<Item = String>) -> bool {
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg == "--output=json" || (arg == "--output" && args.peek().is_some_and(|v| v == "json"))
        {
            return true;
        }
    }
    false
}

/// How a person in another terminal runs this program: `arctern` when that name on the
/// `PATH` is this program; `cargo run -p arctern-cli --` when it runs from a cargo build
/// (the README's first command); otherwise its full path.
pub(crate) fn how_to_run() -> String {
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "arctern".into();
    };
    let name = format!("arctern{}", std::env::consts::EXE_SUFFIX);
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|dir| std::fs::canonicalize(dir.join(&name)).is_ok_and(|p| p == me))
    });
    if on_path {
        "arctern".into()
    } else if me.components().any(|c| c.as_os_str() == "target") {
        "cargo run -p arctern-cli --".into()
    } else {
        let path = me.display().to_string();
        shlex::try_quote(&path).map_or(path.clone(), |q| q.into_owned())
    }
}

/// Runs a command within `--timeout`, all of it: connecting (the legacy handshake and its
/// `GET` stream included), listing, every round and question. Dropping the command on time
/// closes its connections and stops a stdio server.
async fn within(
    limit: Result<Option<std::time::Duration>, Failure>,
    command: impl std::future::Future<Output = Result<Exit, Failure>>,
) -> Result<Exit, Failure> {
    let Some(limit) = limit? else {
        return command.await;
    };
    tokio::time::timeout(limit, command)
        .await
        .unwrap_or_else(|_| {
            Err(Failure::new(
                Exit::Connection,
                format!("gave up after {} seconds (--timeout)", limit.as_secs_f64()),
            ))
        })
}

/// Connects with a session for `answers`.
async fn open(
    endpoint: &Endpoint,
    conn: &ConnectArgs,
    answers: &AnswerArgs,
) -> Result<(Arc<Session>, Client), Failure> {
    let session = Session::new(answers)?;
    let client = session.connect(endpoint, conn).await?;
    Ok((session, client))
}

/// After a request that may have asked questions: a failure a question recorded (no answer
/// could be given, an `--answer` that does not fit, a sampling command that failed) decides
/// the outcome, whatever the server made of the refusal: a 2026-07-28 call stops with an
/// error, but a 2025 server gets an error answer to its request and may turn it into an
/// `isError` result or even a success, which is then not shown. Otherwise the request's own
/// error, with `-32042`'s pages shown (see [`Session::urls_required`]).
async fn settle<T>(
    session: &Session,
    outcome: Result<T, arctern::Error>,
    what: &str,
) -> Result<T, Failure> {
    session.progress.finish();
    let asked = session.asked();
    for key in session.unused_answers() {
        let place = key.strip_prefix('@').and_then(|n| n.parse::<usize>().ok());
        let note = match place {
            Some(n) if n <= asked.len() => format!(
                "question {key:?} (--answer/--decline) was not used: that question was answered \
                 by its key, {:?}",
                asked[n - 1]
            ),
            Some(_) => format!(
                "question {key:?} (--answer/--decline) was never asked ({} question{} asked)",
                asked.len(),
                if asked.len() == 1 { " was" } else { "s were" }
            ),
            None => format!(
                "question {key:?} (--answer/--decline) was never asked{}",
                suggest::hint(&key, asked.iter().map(String::as_str))
            ),
        };
        session.note(&format!("arctern: note: {note}"));
    }
    if let Some(problem) = session.take_problem() {
        return Err(problem);
    }
    match outcome {
        Ok(value) => Ok(value),
        Err(e) => Err(match session.urls_required(&e, what).await {
            Some(f) => f,
            None => Failure::from_client(&e, what),
        }),
    }
}

fn save_dir(dir: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::new(Exit::Local, format!("--save-dir {}: {e}", dir.display())))?;
    Ok(dir)
}

async fn call(a: CallArgs, format: Format) -> Result<Exit, Failure> {
    let (endpoint, tool_name) = split_target(a.first, a.second, &a.conn, "tool")?;
    let dir = save_dir(a.save_dir)?;
    let (session, client) = open(&endpoint, &a.conn, &a.answers).await?;
    let tools = client
        .list_tools()
        .await
        .map_err(|e| Failure::from_client(&e, "tools/list"))?;
    let tool = inspect::find_tool(&tools, &tool_name)?;
    if a.app_info {
        let shown = apps::app_info(&client, tool, format).await;
        let _ = client.close().await;
        return shown;
    }
    let arguments =
        args::build(&tool.input_schema, a.json.as_deref(), &a.args).map_err(Failure::usage)?;
    let what = format!("calling tool {tool_name:?}");
    let result = task_view::call(&client, &session, &tool_name, &arguments).await;
    let _ = client.close().await;
    let result = settle(&session, result?, &what).await?;
    let exit = output::call_result(&tool_name, &result, &dir, format)?;
    // A declined or cancelled question kept the tool from finishing.
    Ok(if exit == Exit::ToolError && session.refused() {
        Exit::Input
    } else {
        exit
    })
}

enum List {
    Discover,
    Tools,
    Prompts,
    Resources,
}

async fn list(a: ListArgs, format: Format, what: List) -> Result<Exit, Failure> {
    let endpoint = Endpoint::resolve(a.url, &a.conn)?;
    let (_session, client) = open(&endpoint, &a.conn, &AnswerArgs::offering(a.caps)).await?;
    let done = match what {
        List::Discover => inspect::discover(&client, format).await,
        List::Tools => client
            .list_tools()
            .await
            .map(|t| inspect::tools(&t, format))
            .map_err(|e| Failure::from_client(&e, "tools/list")),
        List::Prompts => client
            .list_prompts()
            .await
            .map(|p| inspect::prompts(&p, format))
            .map_err(|e| Failure::from_client(&e, "prompts/list")),
        List::Resources => inspect::list_resources(&client)
            .await
            .map(|(r, t)| inspect::resources(&r, &t, format)),
    };
    let _ = client.close().await;
    done.map(|()| Exit::Ok)
}

async fn read(a: ReadArgs, format: Format) -> Result<Exit, Failure> {
    let (endpoint, uri) = split_target(a.first, a.second, &a.conn, "resource URI")?;
    let dir = save_dir(a.save_dir)?;
    let (session, client) = open(&endpoint, &a.conn, &a.answers).await?;
    let what = format!("reading {uri}");
    let result = client.read_resource(&uri).await;
    // An unknown URI: the closest the server lists, asked only now that it failed.
    let closest = match &result {
        Err(e) if e.protocol_error().is_some() && !session.has_problem() => {
            inspect::closest_resource(&client, &uri).await
        }
        _ => None,
    };
    let _ = client.close().await;
    let result = settle(&session, result, &what).await.map_err(|mut f| {
        if let Some(name) = closest {
            f.message.push_str(&format!(" (did you mean {name:?}?)"));
            f = f.with("didYouMean", serde_json::json!(name));
        }
        f
    })?;
    inspect::read_result(&uri, &result, &dir, format)?;
    Ok(Exit::Ok)
}

async fn prompt(a: PromptArgs, format: Format) -> Result<Exit, Failure> {
    let (endpoint, name) = split_target(a.first, a.second, &a.conn, "prompt name")?;
    let dir = save_dir(a.save_dir)?;
    let (session, client) = open(&endpoint, &a.conn, &a.answers).await?;
    let prompts = client
        .list_prompts()
        .await
        .map_err(|e| Failure::from_client(&e, "prompts/list"))?;
    let found = inspect::find_prompt(&prompts, &name)?;
    let arguments = inspect::prompt_arguments(found, &a.args)?;
    let what = format!("getting prompt {name:?}");
    let result = client.get_prompt(&name, &arguments).await;
    let _ = client.close().await;
    let result = settle(&session, result, &what).await?;
    inspect::prompt_result(&name, &result, &dir, format)?;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_is_wanted_for_usage_errors_when_asked() {
        let args = |s: &str| {
            s.split(' ')
                .map(str::to_owned)
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(wants_json(args("call --output json --bogus")));
        assert!(wants_json(args("tools --output=json")));
        assert!(!wants_json(args("call --output text --bogus")));
        assert!(!wants_json(args("call --output")));
    }

    #[test]
    fn help_lists_the_exit_codes() {
        let help = Cli::command().render_help().to_string();
        assert!(help.contains("130  interrupted"), "{help}");
        let mut cmd = Cli::command();
        let call = cmd.find_subcommand_mut("call").unwrap();
        let help = call.render_long_help().to_string();
        assert!(help.contains("--answer region=eu-west-1"), "{help}");
        assert!(help.contains("4    input required"), "{help}");
        assert!(
            help.contains("--answer @1='{\"name\":\"Ada\"}' --decline @2"),
            "{help}"
        );
    }
}
