//! Connecting to a server, and answering what it asks while a command runs: forms and URLs
//! (from pre-answers or the terminal), sampling (through `--sampling-command`), roots (from
//! `--root`), with progress bars and log lines on stderr.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::ErrorKind;
use arctern::client::{
    Client, ClientBuilder, ClientHandler, HandlerCapabilities, Input, StdioCommand, StdioTransport,
    Transport,
};
use arctern::types::ErrorCode;
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern::types::legacy::UrlElicitationRequiredData;
use arctern::types::logging::LoggingLevel;
use arctern::types::roots::{ListRootsRequestParams, ListRootsResult, Root};
use arctern::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use clap::Args;
use serde_json::json;

use crate::answers::{self, Pre, PreAnswers};
use crate::exit::{Exit, Failure};
use crate::form::{self, Asker, Reply};
use crate::progress::Progress;
use crate::sampling;

/// What a handler's error says when a question is not answered. It may reach the server, so
/// it is the same whatever the reason, which stays on this side (see [`Session::fail`]).
const UNANSWERED: &str = "the question was not answered";

/// Where the server is, besides the positional URL.
#[derive(Debug, Clone, Args, Default)]
pub struct ConnectArgs {
    /// Start the server as a child process and talk to it over stdio; the command line is
    /// split like a shell would ("node server.js --flag"). Replaces the URL.
    #[arg(long, value_name = "COMMAND")]
    pub stdio: Option<String>,
    /// An HTTP header sent with every request, as "Name: value" (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Give up when the whole command (connecting, every request and question) takes longer
    /// than this many seconds. Without it, a server that sends nothing for 60 seconds (no
    /// answer, no progress) is given up on.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// An environment variable for a --stdio server, as NAME=VALUE (repeatable). The server
    /// gets only these and HOME, LOGNAME, PATH, SHELL, TERM and USER from this environment.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Trust the CA certificates of this PEM file for HTTPS, besides the system's
    /// (repeatable; SSL_CERT_FILE works too).
    #[arg(long, value_name = "FILE")]
    pub cacert: Vec<std::path::PathBuf>,
    /// How long a sign-in in the browser may take, in seconds (for servers that want OAuth).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub login_timeout: u64,
}

impl ConnectArgs {
    /// `--timeout`, checked.
    pub fn whole_timeout(&self) -> Result<Option<Duration>, Failure> {
        match self.timeout {
            None => Ok(None),
            Some(secs) if secs.is_finite() && secs > 0.0 => {
                Ok(Some(Duration::from_secs_f64(secs.min(1e9))))
            }
            Some(_) => Err(Failure::usage(
                "--timeout must be a positive number of seconds",
            )),
        }
    }
}

/// What the client offers besides forms: the client's LLM and its roots. A server may list
/// some tools only to clients that offer these, so the listing commands take them too.
#[derive(Debug, Clone, Args, Default)]
pub struct CapabilityArgs {
    /// A program that answers sampling requests: it gets the request as JSON on stdin and
    /// prints a CreateMessageResult JSON or plain text. Without it, sampling is refused.
    #[arg(long, value_name = "PROGRAM")]
    pub sampling_command: Option<String>,
    /// A directory (or file:// URI) the server may see as a root (repeatable). Without any,
    /// the roots capability is not declared.
    #[arg(long = "root", value_name = "PATH|URI")]
    pub roots: Vec<String>,
}

/// How the server's questions are answered.
#[derive(Debug, Clone, Args)]
pub struct AnswerArgs {
    /// Answers a question without asking: KEY is its key, or @N for the Nth question asked;
    /// VALUE is a JSON object of the form's fields, or the value alone when the form has one
    /// field (repeatable). For URL questions: accept, decline or cancel.
    #[arg(long = "answer", value_name = "KEY=VALUE")]
    pub answers: Vec<String>,
    /// Declines a question without asking: its key, or @N (repeatable).
    #[arg(long = "decline", value_name = "KEY")]
    pub declines: Vec<String>,
    /// Never show a form, even on a terminal: questions without --answer fail (exit 4).
    #[arg(long)]
    pub no_input: bool,
    #[command(flatten)]
    pub caps: CapabilityArgs,
    /// The least severe server log message to print on stderr.
    #[arg(long, value_name = "LEVEL", default_value = "info", value_parser = parse_level)]
    pub log_level: LoggingLevel,
}

impl AnswerArgs {
    /// No answers: for the commands that only list, with what the client offers.
    pub fn offering(caps: CapabilityArgs) -> Self {
        AnswerArgs {
            caps,
            ..AnswerArgs::default()
        }
    }
}

impl Default for AnswerArgs {
    fn default() -> Self {
        AnswerArgs {
            answers: Vec::new(),
            declines: Vec::new(),
            no_input: false,
            caps: CapabilityArgs::default(),
            log_level: LoggingLevel::Info,
        }
    }
}

fn parse_level(s: &str) -> Result<LoggingLevel, String> {
    s.parse::<LoggingLevel>().map_err(|_| {
        "expected debug, info, notice, warning, error, critical, alert or emergency".to_owned()
    })
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Streamable HTTP URL.
    Url(String),
    /// A command line to start.
    Stdio(Vec<String>),
}

impl Endpoint {
    /// From the positional URL (if any) and `--stdio`.
    pub fn resolve(url: Option<String>, conn: &ConnectArgs) -> Result<Endpoint, Failure> {
        match (url, &conn.stdio) {
            (Some(_), Some(_)) => Err(Failure::usage(
                "give either a URL or --stdio COMMAND, not both",
            )),
            (None, None) => Err(Failure::usage(
                "give the server's URL (such as http://127.0.0.1:8000/mcp) or --stdio COMMAND",
            )),
            (Some(url), None) => {
                if !url.contains("://") {
                    return Err(Failure::usage(format!(
                        "{url:?} is not a URL; give the server's URL (such as \
                         http://127.0.0.1:8000/mcp) or --stdio COMMAND"
                    )));
                }
                Ok(Endpoint::Url(url))
            }
            (None, Some(command)) => match shlex::split(command) {
                Some(words) if !words.is_empty() => Ok(Endpoint::Stdio(words)),
                _ => Err(Failure::usage(format!(
                    "--stdio {command:?} is not a command line"
                ))),
            },
        }
    }

    /// For messages.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Url(u) => u.clone(),
            Endpoint::Stdio(words) => format!("`{}`", words.join(" ")),
        }
    }
}

/// Splits a positional pair `<URL> <NAME>` (or `<NAME>` alone with `--stdio`).
pub fn split_target(
    first: String,
    second: Option<String>,
    conn: &ConnectArgs,
    what: &str,
) -> Result<(Endpoint, String), Failure> {
    match (conn.stdio.is_some(), second) {
        (true, None) => Ok((Endpoint::resolve(None, conn)?, first)),
        (true, Some(extra)) => Err(Failure::usage(format!(
            "with --stdio, give only the {what} (unexpected {extra:?})"
        ))),
        (false, Some(name)) => Ok((Endpoint::resolve(Some(first), conn)?, name)),
        (false, None) => Err(Failure::usage(format!(
            "give the server's URL and the {what}, or --stdio COMMAND and the {what}"
        ))),
    }
}

/// Connects `builder` to `endpoint` with the connection flags: OAuth as `arctern login` does
/// it (the browser step asks on the terminal when `interactive`), `--header`, `--cacert`,
/// `--env`. `wrap` gets the transport first: `arctern inspect` records frames through it.
pub async fn connect_builder(
    builder: ClientBuilder,
    endpoint: &Endpoint,
    conn: &ConnectArgs,
    interactive: bool,
    wrap: impl FnOnce(Arc<dyn Transport>) -> Arc<dyn Transport>,
) -> Result<Client, Failure> {
    let where_ = endpoint.describe();
    let transport: Arc<dyn Transport> = match endpoint {
        Endpoint::Url(url) => {
            let (oauth, _) = crate::login::oauth(url, interactive, conn.login_timeout).await?;
            Arc::new(crate::login::transport(url, conn, Some(oauth))?)
        }
        Endpoint::Stdio(words) => {
            if !conn.headers.is_empty() {
                return Err(Failure::usage("--header applies to HTTP servers only"));
            }
            if !conn.cacert.is_empty() {
                return Err(Failure::usage("--cacert applies to HTTPS servers only"));
            }
            let (program, args) = words.split_first().expect("resolve refuses empty commands");
            let mut command = StdioCommand::new(program).args(args);
            for pair in &conn.env {
                match pair.split_once('=') {
                    Some((name, value)) if !name.is_empty() => {
                        command = command.env(name, value);
                    }
                    _ => {
                        return Err(Failure::usage(format!(
                            "--env expects NAME=VALUE, got {pair:?}"
                        )));
                    }
                }
            }
            Arc::new(
                StdioTransport::spawn(command)
                    .map_err(|e| crate::exit::could_not_connect(&e, &where_))?,
            )
        }
    };
    builder
        .connect_with(wrap(transport))
        .await
        .map_err(|e| crate::exit::could_not_connect(&e, &where_))
}

/// The state of one command while it talks to a server.
pub struct Session {
    pre: PreAnswers,
    interactive: bool,
    sampling: Option<Vec<String>>,
    roots: Vec<Root>,
    log_level: LoggingLevel,
    /// Bars and stderr lines.
    pub progress: Progress,
    /// One form at a time on the terminal, though a round's questions are answered at once.
    terminal: tokio::sync::Mutex<()>,
    /// The first failure a question ran into; it decides the exit code.
    problem: Mutex<Option<Failure>>,
    /// Whether some question was declined or cancelled.
    refused: AtomicBool,
    /// Where the server is, for the lines that name who asks (its self-chosen name alone
    /// could claim to be anyone).
    endpoint: std::sync::OnceLock<String>,
    /// Whether the user let `--sampling-command` run (asked once, on a terminal).
    sampling_allowed: tokio::sync::OnceCell<bool>,
    /// The keys of the questions asked so far, in the order they were first asked: a
    /// question's place (`@N`) is its index here plus one.
    asked: Mutex<Vec<String>>,
}

impl Session {
    /// A session for these flags. Forms are shown when stdin is a terminal, unless
    /// `--no-input`.
    pub fn new(args: &AnswerArgs) -> Result<Arc<Session>, Failure> {
        let pre = PreAnswers::parse(&args.answers, &args.declines).map_err(Failure::usage)?;
        let sampling = match &args.caps.sampling_command {
            None => None,
            Some(c) => match shlex::split(c) {
                Some(words) if !words.is_empty() => Some(words),
                _ => {
                    return Err(Failure::usage(format!(
                        "--sampling-command {c:?} is not a command line"
                    )));
                }
            },
        };
        let roots = args
            .caps
            .roots
            .iter()
            .map(|r| root(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Failure::usage)?;
        Ok(Arc::new(Session {
            pre,
            interactive: !args.no_input && std::io::stdin().is_terminal(),
            sampling,
            roots,
            log_level: args.log_level,
            progress: Progress::new(),
            terminal: tokio::sync::Mutex::new(()),
            problem: Mutex::new(None),
            refused: AtomicBool::new(false),
            endpoint: std::sync::OnceLock::new(),
            sampling_allowed: tokio::sync::OnceCell::new(),
            asked: Mutex::new(Vec::new()),
        }))
    }

    /// Connects to the server (and runs discovery).
    pub async fn connect(
        self: &Arc<Self>,
        endpoint: &Endpoint,
        conn: &ConnectArgs,
    ) -> Result<Client, Failure> {
        self.connect_as(endpoint, conn, |b| b).await
    }

    /// Connects with the client adjusted by `configure` (for example to declare an
    /// extension).
    pub async fn connect_as(
        self: &Arc<Self>,
        endpoint: &Endpoint,
        conn: &ConnectArgs,
        configure: impl FnOnce(arctern::client::ClientBuilder) -> arctern::client::ClientBuilder,
    ) -> Result<Client, Failure> {
        let _ = self
            .endpoint
            .set(crate::sanitize::line(&endpoint.describe()).into_owned());
        let progress = self.clone();
        let logs = self.clone();
        let mut builder = Client::builder()
            .name("arctern-cli")
            .version(env!("CARGO_PKG_VERSION"))
            .handler(Handler(self.clone()))
            .on_progress(move |p| progress.progress.update(&p))
            .on_log(self.log_level, move |m| logs.progress.log(&m));
        if let Some(limit) = conn.whole_timeout()? {
            builder = builder.request_timeout(limit);
        }
        let builder = configure(builder);
        connect_builder(builder, endpoint, conn, self.interactive, |t| t).await
    }

    /// The failure a question ran into, if any.
    pub fn take_problem(&self) -> Option<Failure> {
        self.problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Whether a question ran into a failure (see [`take_problem`](Self::take_problem)).
    pub fn has_problem(&self) -> bool {
        self.problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Whether some question was declined or cancelled.
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::SeqCst)
    }

    /// Pre-answers nobody asked for.
    pub fn unused_answers(&self) -> Vec<String> {
        self.pre.unused()
    }

    /// Prints a note on stderr.
    pub fn note(&self, line: &str) {
        self.progress.println(line);
    }

    /// Records `f` (the first one wins) and turns it into the error a handler returns. That
    /// error can reach the server (a 2025 server gets an error answer to its request, and
    /// may show it back), so it says only that the question went unanswered: `f`, with
    /// what is local (the command line, paths, the `--answer` hints, a sampling command's
    /// output), stays on this side, where it decides the exit code.
    fn fail(&self, f: Failure) -> arctern::Error {
        let mut slot = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(f);
        arctern::Error::new(ErrorKind::InputRequired, UNANSWERED)
    }

    /// The question with key `key` is asked: its place (from 1), and whether it was asked
    /// before.
    fn place(&self, key: &str) -> (usize, bool) {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        match asked.iter().position(|k| k == key) {
            Some(i) => (i + 1, true),
            None => {
                asked.push(key.to_owned());
                (asked.len(), false)
            }
        }
    }

    /// The keys of the questions asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn refuse(&self, result: ElicitResult) -> ElicitResult {
        self.refused.store(true, Ordering::SeqCst);
        result
    }

    async fn elicit(&self, input: Input<ElicitRequestParams>) -> arctern::Result<ElicitResult> {
        let key = input.key().to_owned();
        let mut asker = self.asker(&input);
        let (place, again) = self.place(&key);
        // A form asked again in one command did not take its answer; the server's message
        // says why. (A URL question may be asked again until the user finishes out of band.)
        asker.again = again && matches!(input.params(), ElicitRequestParams::Form(_));
        // Messages name the question as the command line did: by its key, or its place.
        match self.pre.lookup(&key, place) {
            Some((given, Pre::Decline)) => {
                self.note(&format!("Declined question {given:?} (--decline)."));
                return Ok(self.refuse(ElicitResult::decline()));
            }
            // The same answer would be refused again: stop, and show the server's reason.
            Some((given, Pre::Answer(_))) if asker.again => {
                return Err(self.fail(not_accepted(given, input.params())));
            }
            Some((given, Pre::Answer(raw))) => {
                return self.pre_answer(given, raw, input.params());
            }
            None => {}
        }
        if !self.interactive {
            return Err(self.fail(unanswered(&key, place, &asker, input.params())));
        }
        // Shown on the terminal: no escape sequence of the server's gets through.
        let params = crate::sanitize::elicitation(input.params()).map_err(|why| {
            self.fail(Failure::new(
                Exit::Input,
                format!("could not show question {key:?} safely: {why}"),
            ))
        })?;
        let _terminal = self.terminal.lock().await;
        self.progress.clear();
        let reply = tokio::task::spawn_blocking(move || match &params {
            ElicitRequestParams::Form(f) => form::ask_form(&asker, f),
            ElicitRequestParams::Url(u) => form::ask_url(&asker, u),
            _ => Err("this kind of question cannot be shown".to_owned()),
        })
        .await
        .map_err(|e| self.fail(Failure::new(Exit::Local, format!("the form failed: {e}"))))?
        .map_err(|e| {
            self.fail(Failure::new(
                Exit::Input,
                format!("could not show the form for question {key:?}: {e}"),
            ))
        })?;
        match reply {
            Reply::Accept(Some(content)) => Ok(ElicitResult::accept(content)),
            Reply::Accept(None) => Ok(ElicitResult::accept_url()),
            Reply::Decline => Ok(self.refuse(ElicitResult::decline())),
            Reply::Cancel => Ok(self.refuse(ElicitResult::cancel())),
            Reply::Interrupted => Err(self.fail(Failure::new(Exit::Interrupted, "interrupted"))),
        }
    }

    fn pre_answer(
        &self,
        key: &str,
        raw: &str,
        params: &ElicitRequestParams,
    ) -> arctern::Result<ElicitResult> {
        match params {
            ElicitRequestParams::Form(f) => match answers::form_content(raw, &f.requested_schema) {
                Ok(content) => Ok(ElicitResult::accept(content)),
                Err(why) => Err(self.fail(
                    Failure::usage(format!(
                        "--answer {key} does not fit the question {:?}: {why}",
                        f.message
                    ))
                    .with("key", json!(key))
                    .with("requestedSchema", json!(f.requested_schema)),
                )),
            },
            ElicitRequestParams::Url(u) => match answers::url_answer(raw) {
                Ok(result) => {
                    if result.is_accepted() {
                        self.note(&format!(
                            "Consented to open {} for question {key:?} (--answer); open it to \
                             continue.",
                            u.url
                        ));
                        Ok(result)
                    } else {
                        Ok(self.refuse(result))
                    }
                }
                Err(why) => Err(self.fail(
                    Failure::usage(format!("--answer {key}: {why}"))
                        .with("key", json!(key))
                        .with("url", json!(u.url)),
                )),
            },
            _ => Err(self.fail(Failure::usage(format!(
                "--answer {key}: this kind of question cannot be answered"
            )))),
        }
    }

    async fn sample(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> arctern::Result<CreateMessageResult> {
        let Some(command) = &self.sampling else {
            // Not reached: the capability is declared only with a command.
            return Err(self.fail(Failure::new(
                Exit::Input,
                "sampling is refused without --sampling-command",
            )));
        };
        let asked = input.samplings_in_round().max(1);
        let allowed = self
            .sampling_allowed
            .get_or_init(|| self.allow_sampling(self.asker(&input).server, asked, &command[0]))
            .await;
        if !*allowed {
            return Err(self.fail(Failure::new(
                Exit::Input,
                "sampling was refused: the LLM completions were not allowed",
            )));
        }
        self.note(&format!(
            "{} asks for {} (question {:?}); running {}.",
            self.asker(&input).server,
            completions(asked),
            input.key(),
            command[0]
        ));
        sampling::run(command, input.params()).await.map_err(|why| {
            self.fail(Failure::new(
                Exit::Local,
                format!("the sampling command failed: {why}"),
            ))
        })
    }
}

impl Session {
    /// `-32042` "URL elicitation required" (2025-11-25): the request needs the user to open
    /// pages first, listed in the error's `data.elicitations`. Each is shown like a URL
    /// question (its message, its URL, the domain, the same warnings); on a terminal each web
    /// page may be opened, with consent; nothing is opened otherwise. The command then stops
    /// with exit 4: run it again once the pages are done. `None` for any other error.
    pub async fn urls_required(&self, e: &arctern::Error, what: &str) -> Option<Failure> {
        let obj = e
            .protocol_error()
            .filter(|o| o.code == ErrorCode::LEGACY_URL_ELICITATION_REQUIRED)?;
        let pages = obj
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<UrlElicitationRequiredData>(d).ok())
            .map(|d| d.elicitations)
            .unwrap_or_default();
        let reason = crate::sanitize::line(&obj.message).into_owned();
        let server = self.endpoint.get().cloned().unwrap_or_default();
        let (them, pages_n) = match pages.len() {
            1 => ("it", "a page".to_owned()),
            n => ("them", format!("{n} pages")),
        };
        let head = format!(
            "{what}: the server at {server} needs you to open {pages_n} first (error -32042: \
             {reason}){}",
            if pages.is_empty() {
                ", but names none (data.elicitations is missing or empty)"
            } else {
                ""
            }
        );
        // Each page, numbered; `styled` for a terminal (the domain in bold).
        let listing = |styled: bool| {
            let mut out = String::new();
            for (i, page) in pages.iter().enumerate() {
                let message = crate::sanitize::line(&page.message);
                out.push_str(&format!("\n  {}. {message}", i + 1));
                for l in form::url_lines(&page.url, styled).0 {
                    out.push_str(&format!("\n     {l}"));
                }
            }
            out
        };
        let details: Vec<serde_json::Value> = pages
            .iter()
            .map(|p| {
                json!({
                    "message": p.message,
                    "url": p.url,
                    "domain": form::url_parts(&p.url).and_then(|u| u.host),
                    "elicitationId": p.elicitation_id,
                })
            })
            .collect();
        let web: Vec<&str> = pages
            .iter()
            .filter(|p| form::url_lines(&p.url, false).1)
            .map(|p| p.url.as_str())
            .collect();
        let mut opened = 0;
        let mut text = if self.interactive && !web.is_empty() {
            let _terminal = self.terminal.lock().await;
            self.progress.clear();
            // Written as is: every piece of server text in it is already made safe.
            eprintln!("{head}{}", listing(true));
            for (i, page) in pages.iter().enumerate() {
                if !web.contains(&page.url.as_str()) {
                    continue;
                }
                if pages.len() > 1 {
                    eprintln!("Page {}:", i + 1);
                }
                let url = page.url.clone();
                let consent = tokio::task::spawn_blocking(move || form::ask_open(&url)).await;
                if matches!(consent, Ok(Ok(true))) {
                    opened += 1;
                }
            }
            format!("{what}: the server needs you to open {pages_n} first (above)")
        } else {
            format!("{head}{}", listing(false))
        };
        if !pages.is_empty() {
            text.push_str(&if opened > 0 {
                "\n  Finish there, then run the command again.".to_owned()
            } else {
                format!(
                    "\n  Nothing was opened: open {them} yourself, finish there, then run the \
                     command again."
                )
            });
        }
        Some(
            Failure::new(Exit::Input, text)
                .with("elicitations", json!(details))
                .with(
                    "protocolError",
                    serde_json::to_value(obj).unwrap_or(serde_json::Value::Null),
                ),
        )
    }
}

fn completions(n: usize) -> String {
    match n {
        1 => "an LLM completion".to_owned(),
        n => format!("{n} LLM completions in this round"),
    }
}

impl Session {
    /// Asks once, on a terminal, before `--sampling-command` runs (each run may be a paid
    /// completion); without a terminal the flag is the consent.
    async fn allow_sampling(&self, server: String, asked: usize, program: &str) -> bool {
        if !self.interactive {
            return true;
        }
        let _terminal = self.terminal.lock().await;
        self.progress.clear();
        let question = crate::sanitize::line(&format!(
            "{server} asks for {}. Run {program} for them (and for later ones of this command)?",
            completions(asked)
        ))
        .into_owned();
        tokio::task::spawn_blocking(move || {
            inquire::Confirm::new(&question)
                .with_default(false)
                .prompt()
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false)
    }
}

/// The failure for a question asked again after its `--answer` was sent: the server did not
/// accept it. Its message, reason included, is shown as the server wrote it.
fn not_accepted(key: &str, params: &ElicitRequestParams) -> Failure {
    let message = params.message();
    let shown: Vec<String> = message
        .lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect();
    Failure::usage(format!(
        "the server did not accept --answer {key}; it asks again:\n{}",
        shown.join("\n")
    ))
    .with("key", json!(key))
    .with("question", json!(message))
}

/// The failure for a question nobody may answer: it names the key and what it expects. A
/// key of digits is a 2025 server's request id, which shifts with what the server asked
/// before: the hint names the question by its place (`@N`) instead.
fn unanswered(key: &str, place: usize, asker: &Asker, params: &ElicitRequestParams) -> Failure {
    let by_place = format!("@{place}");
    let selector = if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        by_place.as_str()
    } else {
        key
    };
    let head = format!(
        "{} asks {:?} (question {key:?}, the {} of this command, {}), and no answer was given \
         (stdin is not a terminal, or --no-input)",
        asker.server,
        params.message(),
        nth_question(place),
        asker.request
    );
    let why = if selector == key {
        String::new()
    } else {
        format!(
            "\n  ({selector}: the question's place; its key {key:?} is the server's request id, \
             which changes with what the server asks before)"
        )
    };
    let failure = match params {
        ElicitRequestParams::Form(f) => {
            let schema = serde_json::to_string(&f.requested_schema).unwrap_or_default();
            let mut message = format!(
                "{head}.\n  expected: {schema}\n  answer with --answer {}",
                answers::example(selector, &f.requested_schema)
            );
            if f.requested_schema.properties.len() == 1 {
                message.push_str(&format!(" or --answer {selector}=VALUE (one field)"));
            }
            message.push_str(&format!(", or pass --decline {selector}{why}"));
            Failure::new(Exit::Input, message)
                .with("question", json!(f.message))
                .with("requestedSchema", json!(f.requested_schema))
        }
        ElicitRequestParams::Url(u) => Failure::new(
            Exit::Input,
            format!(
                "{head}.\n  it asks to open {}\n  answer with --answer {selector}=accept (the URL \
                 is printed, not opened), or pass --decline {selector}{why}",
                u.url
            ),
        )
        .with("question", json!(u.message))
        .with("url", json!(u.url)),
        _ => Failure::new(Exit::Input, format!("{head}.")),
    };
    failure.with("key", json!(key)).with("place", json!(place))
}

/// `1st question`, `2nd question`, … `11th question`, `21st question`.
fn nth_question(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix} question")
}

/// The server as it calls itself, terminal-safe.
fn server_name<P>(input: &Input<P>) -> String {
    let name = input
        .server_info()
        .map(|s| s.title.clone().unwrap_or_else(|| s.name.clone()))
        .unwrap_or_else(|| "The server".to_owned());
    crate::sanitize::line(&name).into_owned()
}

impl Session {
    fn asker<P>(&self, input: &Input<P>) -> Asker {
        let mut asker = asker(input);
        if let Some(endpoint) = self.endpoint.get() {
            asker.server = format!("{} (at {endpoint})", asker.server);
        }
        asker
    }
}

fn asker<P>(input: &Input<P>) -> Asker {
    let origin = input.origin();
    let kind = match origin.method() {
        "tools/call" => "tool",
        "prompts/get" => "prompt",
        "resources/read" => "resource",
        other => other,
    };
    Asker {
        server: server_name(input),
        request: crate::sanitize::line(&format!("{kind} {}", origin.target())).into_owned(),
        key: input.key().to_owned(),
        again: false,
    }
}

/// A root from `--root`: a URI as it is, or a path made absolute as a `file://` URI.
pub fn root(arg: &str) -> Result<Root, String> {
    if arg.contains("://") {
        return Ok(Root::new(arg));
    }
    let path = Path::new(arg);
    let absolute = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .map_err(|e| format!("--root {arg:?}: {e}"))?;
    let name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let mut root = Root::new(file_uri(&absolute));
    if let Some(name) = name {
        root = root.with_name(name);
    }
    Ok(root)
}

/// `file://` plus the percent-encoded absolute path.
fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut out = String::from("file://");
    if !text.starts_with('/') {
        // Windows drive paths: file:///C:/...
        out.push('/');
    }
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~:".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The client's side of the questions, backed by the session.
struct Handler(Arc<Session>);

impl ClientHandler for Handler {
    fn capabilities(&self) -> HandlerCapabilities {
        let mut caps = HandlerCapabilities::none().elicitation().elicitation_url();
        if self.0.sampling.is_some() {
            caps = caps.sampling();
        }
        if !self.0.roots.is_empty() {
            caps = caps.roots();
        }
        caps
    }

    fn elicit(
        &self,
        input: Input<ElicitRequestParams>,
    ) -> impl Future<Output = arctern::Result<ElicitResult>> + Send {
        let session = self.0.clone();
        async move { session.elicit(input).await }
    }

    fn create_message(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> impl Future<Output = arctern::Result<CreateMessageResult>> + Send {
        let session = self.0.clone();
        async move { session.sample(input).await }
    }

    fn list_roots(
        &self,
        _input: Input<ListRootsRequestParams>,
    ) -> impl Future<Output = arctern::Result<ListRootsResult>> + Send {
        std::future::ready(Ok(ListRootsResult::new(self.0.roots.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_become_file_uris() {
        let r = root("file:///srv/data").unwrap();
        assert_eq!(r.uri, "file:///srv/data");
        let dir = std::env::temp_dir().join("arctern cli root");
        std::fs::create_dir_all(&dir).unwrap();
        let r = root(dir.to_str().unwrap()).unwrap();
        assert!(r.uri.starts_with("file:///"), "{}", r.uri);
        assert!(r.uri.ends_with("/arctern%20cli%20root"), "{}", r.uri);
        assert_eq!(r.name.as_deref(), Some("arctern cli root"));
    }

    #[test]
    fn questions_are_numbered_in_english() {
        let n: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111]
            .into_iter()
            .map(nth_question)
            .collect();
        assert_eq!(
            n.iter()
                .map(|s| s.trim_end_matches(" question"))
                .collect::<Vec<_>>(),
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
                "111th"
            ]
        );
    }

    #[test]
    fn endpoints() {
        let conn = ConnectArgs::default();
        assert_eq!(
            Endpoint::resolve(Some("http://h/mcp".into()), &conn).unwrap(),
            Endpoint::Url("http://h/mcp".into())
        );
        assert!(Endpoint::resolve(Some("provision".into()), &conn).is_err());
        assert!(Endpoint::resolve(None, &conn).is_err());
        let conn = ConnectArgs {
            stdio: Some("arctern serve --stdio 'a b'".into()),
            ..Default::default()
        };
        assert_eq!(
            Endpoint::resolve(None, &conn).unwrap(),
            Endpoint::Stdio(vec![
                "arctern".into(),
                "serve".into(),
                "--stdio".into(),
                "a b".into()
            ])
        );
        let (e, tool) = split_target("provision".into(), None, &conn, "tool").unwrap();
        assert!(matches!(e, Endpoint::Stdio(_)));
        assert_eq!(tool, "provision");
        assert!(split_target("http://h".into(), Some("t".into()), &conn, "tool").is_err());
        let plain = ConnectArgs::default();
        assert!(split_target("http://h".into(), None, &plain, "tool").is_err());
    }
}
