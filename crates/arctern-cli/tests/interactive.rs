//! The interactive side, for real: the `arctern` binary runs in a pseudo-terminal and the
//! test types into its forms like a person would (answering, re-typing after a validation
//! error, declining, a multi-select, Ctrl-C), watches a progress bar draw, and consents to
//! a URL. The screen is read with escape sequences stripped; waits are generous and
//! nothing is timed.

#![cfg(unix)]

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arctern::server::McpServer;
use arctern::server::mrtr::{
    Answer, AnswerOutcome, Ask, AskContext, Decision, Interrupt, NoArgs, NotYet, Question,
    Questions,
};
use common::{ARCTERN, Demo, protected_server, scratch};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use schemars::JsonSchema;
use serde::Deserialize;

/// How long to wait for something to appear on the screen.
const PATIENCE: Duration = Duration::from_secs(60);

const ENTER: &str = "\r";
const DOWN: &str = "\x1b[B";
const BACKSPACE: &str = "\x7f";
const CTRL_C: &str = "\x03";

/// `arctern` in a pseudo-terminal.
struct Terminal {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    // Dropping the master would hang up the terminal.
    _master: Box<dyn MasterPty + Send>,
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of the (stripped) output earlier expectations consumed.
    seen: usize,
}

impl Terminal {
    fn spawn(dir: &Path, args: &[&str]) -> Terminal {
        Terminal::spawn_with(dir, args, &[])
    }

    /// [`spawn`](Self::spawn) with environment variables set.
    fn spawn_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols: 160,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut command = CommandBuilder::new(ARCTERN);
        command.args(args);
        command.cwd(dir);
        command.env("TERM", "xterm-256color");
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pair.slave.spawn_command(command).expect("spawn arctern");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            child,
            writer,
            _master: pair.master,
            screen,
            seen: 0,
        }
    }

    /// Everything shown so far, escape sequences removed.
    fn text(&self) -> String {
        strip_ansi(&String::from_utf8_lossy(&self.screen.lock().unwrap()))
    }

    /// Waits until `needle` shows after what earlier expectations matched.
    fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = self.text();
            if let Some(at) = text[self.seen.min(text.len())..].find(needle) {
                self.seen += at + needle.len();
                return;
            }
            if Instant::now() > deadline {
                panic!("{needle:?} never showed; the screen so far:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("type");
        self.writer.flush().expect("flush");
    }

    /// Waits for the exit code.
    fn exit_code(&mut self) -> u32 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll arctern") {
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("arctern did not exit; the screen:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

/// Removes CSI and OSC escape sequences and carriage returns.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    // Parameters, then one final byte in @..~.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.peek() == Some(&'\\')) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn typing_the_region_into_the_form() {
    let demo = Demo::start();
    let dir = scratch("pty-provision");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "provision", "--arg", "name=orders"],
    );
    // The server's own name, and where it really is.
    t.expect("arctern-demo (at http://127.0.0.1:");
    t.expect("asks (tool provision, question \"region\")");
    t.expect("Which region should the database live in?");
    t.expect("Decline");
    t.send(ENTER);
    t.expect("region:");
    t.expect("A cloud region, such as eu-west-1.");
    // An empty answer to a required field is refused, and asked again.
    t.send(ENTER);
    t.expect("A value is required.");
    t.send("eu-west-1");
    t.send(ENTER);
    t.expect("Provisioned database \"orders\" in eu-west-1.");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn declining_the_question() {
    let demo = Demo::start();
    let dir = scratch("pty-decline");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "provision", "--arg", "name=orders"],
    );
    t.expect("Cancel");
    t.send(DOWN);
    t.send(ENTER);
    t.expect("Your response: Decline");
    t.expect("The user declined the question \"region\"");
    assert_eq!(t.exit_code(), 4);
}

#[test]
fn a_form_with_every_kind_of_field() {
    let demo = Demo::start();
    let dir = scratch("pty-invite");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "invite", "--arg", "workspace=acme"],
    );
    t.expect("Whom should I invite to acme?");
    t.expect("Cancel");
    t.send(ENTER);
    // An email address, checked, then fixed.
    t.expect("email:");
    t.send("ada");
    t.send(ENTER);
    t.expect("Expected an email address");
    t.send("@example.com");
    t.send(ENTER);
    // A single choice with titles.
    t.expect("Admin (can also manage people)");
    t.send(DOWN);
    t.send(ENTER);
    t.expect("role: Editor (can change things)");
    // A multi-select: at least one, then two.
    t.expect("Operations");
    t.send(ENTER);
    t.expect("Select at least 1.");
    t.send(" ");
    t.send(DOWN);
    t.send(DOWN);
    t.send(" ");
    t.send(ENTER);
    t.expect("teams: Backend, Data");
    // A bounded integer with a default.
    t.expect("days:");
    t.expect("an integer from 1 to 90");
    t.send("200");
    t.send(ENTER);
    t.expect("At most 90, please.");
    t.send(&BACKSPACE.repeat(3));
    t.send("30");
    t.send(ENTER);
    // A yes/no with a default.
    t.expect("notify:");
    t.send("n");
    t.send(ENTER);
    t.expect(
        "Invited ada@example.com to acme as editor (backend, data); the invitation lasts 30 \
         days, no email sent.",
    );
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_yes_no_without_a_default_must_be_typed() {
    let demo = Demo::start();
    let dir = scratch("pty-confirm");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "confirm", "--arg", "text=ship it"],
    );
    t.expect("question \"confirm\"");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("ok:");
    t.expect("Go ahead?");
    // Enter alone assumes nothing.
    t.send(ENTER);
    t.expect("try typing 'y' for yes or 'n' for no");
    t.send("y");
    t.send(ENTER);
    t.expect("ship it");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn the_progress_bar_draws() {
    let demo = Demo::start();
    let dir = scratch("pty-progress");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "slow_count", "--arg", "steps=5"],
    );
    t.expect("[#");
    t.expect("100% step 5 of 5");
    t.expect("Counted to 5.");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_task_shows_its_progress_and_asks_mid_way() {
    let demo = Demo::start();
    let dir = scratch("pty-task");
    let mut t = Terminal::spawn(
        &dir,
        &[
            "call",
            demo.url(),
            "deploy",
            "--arg",
            "service=billing",
            "--arg",
            "steps=3",
        ],
    );
    t.expect("the call runs as task");
    t.expect("arctern: task working");
    t.expect("building billing: step 1 of 3");
    t.expect("[#");
    // The mid-task question is a form like any other.
    t.expect("question \"ship\"");
    t.expect("Ship it to production?");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("ship:");
    t.send("y");
    t.send(ENTER);
    t.expect("Deployed billing to production.");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn ctrl_c_cancels_a_running_task() {
    let demo = Demo::start();
    let dir = scratch("pty-task-cancel");
    let mut t = Terminal::spawn(
        &dir,
        &[
            "call",
            demo.url(),
            "deploy",
            "--arg",
            "service=billing",
            "--arg",
            "steps=100",
        ],
    );
    t.expect("the call runs as task ");
    let screen = t.text();
    let at = screen.find("the call runs as task ").unwrap() + "the call runs as task ".len();
    let id: String = screen[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_eq!(id.len(), 32, "{screen}");
    t.expect("step 2 of 100");
    t.send(CTRL_C);
    t.expect(&format!("arctern: interrupted; cancelled task {id}"));
    assert_eq!(t.exit_code(), 130);
    // The server saw the cancellation.
    let status = common::runtime().block_on(async {
        let client = arctern::client::Client::builder()
            .connect(demo.url())
            .await
            .unwrap();
        client.get_task(&id).await.unwrap().task.status
    });
    assert_eq!(status, arctern::types::tasks::TaskStatus::Cancelled);
}

#[test]
fn ctrl_c_in_a_form_stops_the_command() {
    let demo = Demo::start();
    let dir = scratch("pty-interrupt");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "provision", "--arg", "name=orders"],
    );
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("region:");
    t.send(CTRL_C);
    t.expect("arctern: interrupted");
    assert_eq!(t.exit_code(), 130);
}

// ------------------------------------------------------------------ a URL question

/// A sign-in page the user opens (URL mode: no fields).
struct SignIn;

impl Question for SignIn {
    type Args = NoArgs;
    type Answer = ();
    fn ask(_cx: &AskContext<'_, NoArgs>) -> Result<Ask<()>, NotYet> {
        Ok(Ask::url(
            "sign_in",
            "Sign in to the billing service to continue.",
            "https://billing.example.com/authorize?session=42",
        ))
    }
}

/// A pair of checkboxes (a multi-select without titles).
#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "extras", message = "Include anything else?")]
struct Extras {
    /// What else to include.
    extras: Vec<Extra>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Extra {
    Invoices,
    Receipts,
    Refunds,
}

fn billing() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let server = McpServer::new("billing")
            .tool(
                "export",
                "Exports billing data after sign-in.",
                |AnswerOutcome(signed_in): AnswerOutcome<SignIn>, Answer(e): Answer<Extras>| async move {
                    let extras: Vec<&str> = e
                        .extras
                        .iter()
                        .map(|x| match x {
                            Extra::Invoices => "invoices",
                            Extra::Receipts => "receipts",
                            Extra::Refunds => "refunds",
                        })
                        .collect();
                    match signed_in {
                        Decision::Accepted(_) => format!("Exported: {}", extras.join(" + ")),
                        _ => "Not signed in.".to_owned(),
                    }
                },
            )
            .build()
            .expect("a valid server");
        common::serve(server)
    })
}

#[test]
fn a_url_question_shows_the_domain_and_asks_first() {
    let dir = scratch("pty-url");
    let mut t = Terminal::spawn(&dir, &["call", billing(), "export"]);
    // Both questions come in one round; they are asked one at a time, in key order.
    t.expect("Include anything else?");
    t.send(ENTER);
    t.expect("refunds");
    t.send(DOWN);
    t.send(" ");
    t.send(DOWN);
    t.send(" ");
    t.send(ENTER);
    t.expect("extras: receipts, refunds");
    t.expect("Sign in to the billing service to continue.");
    t.expect("URL:    https://billing.example.com/authorize?session=42");
    t.expect("Domain: billing.example.com");
    t.expect("Open it in the browser");
    // Not the browser: the test machine has none. Printing it is consent too.
    t.send(DOWN);
    t.send(ENTER);
    t.expect("Open this URL to continue: https://billing.example.com/authorize?session=42");
    t.expect("Exported: receipts + refunds");
    assert_eq!(t.exit_code(), 0);
}

// ------------------------------------------------------------------ choices computed at run time

#[test]
fn choosing_a_hotel_with_the_arrow_keys() {
    let demo = Demo::start();
    let dir = scratch("pty-hotel");
    let mut t = Terminal::spawn(
        &dir,
        &["call", demo.url(), "book_hotel", "--arg", "city=Oslo"],
    );
    t.expect("arctern-demo (at http://127.0.0.1:");
    t.expect("asks (tool book_hotel, question \"hotel\")");
    t.expect("Which hotel in Oslo?");
    t.expect("Cancel");
    t.send(ENTER);
    // The hotels of Oslo, by title; the values stay behind the titles.
    t.expect("Fjord Hotel");
    t.expect("Aurora Inn");
    t.expect("Opera Lodge");
    t.send(DOWN);
    t.send(ENTER);
    t.expect("hotel: Aurora Inn");
    t.expect("Booked Aurora Inn in Oslo.");
    assert_eq!(t.exit_code(), 0);
    let screen = t.text();
    assert!(!screen.contains("osl-aurora"), "{screen}");
    assert!(!screen.contains("Hotel Avenida"), "{screen}");
}

/// Options computed in the body: a titled multi-select with bounds, and an untitled choice.
fn shop() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let server = McpServer::new("shop")
            .tool("pack", "Packs a parcel.", |q: Questions| async move {
                let extras = [
                    ("gift", "Gift wrap"),
                    ("card", "Greeting card"),
                    ("fast", "Express shipping"),
                ];
                let extras = q.ask(
                    Ask::choices("extras", "Which extras? One or two.", extras)
                        .min_selected(1)
                        .max_selected(2),
                );
                let size = q.ask(Ask::choice("size", "Which box size?", ["S", "M", "L"]));
                let (extras, size) = q.ready((extras, size))?;
                Ok::<_, Interrupt>(format!(
                    "Packed a size {size} box with {}.",
                    extras.join(" + ")
                ))
            })
            .build()
            .expect("a valid server");
        common::serve(server)
    })
}

#[test]
fn run_time_choices_respect_their_bounds_and_show_titles_or_values() {
    let dir = scratch("pty-pack");
    let mut t = Terminal::spawn(&dir, &["call", shop(), "pack"]);
    // Asked one at a time, in key order.
    t.expect("Which extras? One or two.");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("Express shipping");
    t.expect("choose 1 to 2");
    // None selected: too few.
    t.send(ENTER);
    t.expect("Select at least 1.");
    // All three: too many.
    t.send(" ");
    t.send(DOWN);
    t.send(" ");
    t.send(DOWN);
    t.send(" ");
    t.send(ENTER);
    t.expect("Select at most 2.");
    // Drop the third.
    t.send(" ");
    t.send(ENTER);
    t.expect("extras: Gift wrap, Greeting card");
    // Options without titles are shown by value.
    t.expect("Which box size?");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("L");
    t.send(DOWN);
    t.send(DOWN);
    t.send(ENTER);
    t.expect("size: L");
    t.expect("Packed a size L box with gift + card.");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_refused_answer_is_asked_again_with_the_server_s_reason() {
    // The vault checks the code itself; the form cannot know it beforehand.
    let dir = scratch("pty-vault");
    let mut t = Terminal::spawn(&dir, &["call", common::vault(), "unlock"]);
    t.expect("vault (at http://127.0.0.1:");
    t.expect("asks (tool unlock, question \"code\")");
    t.expect("Enter the code.");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("code:");
    t.send("0000");
    t.send(ENTER);
    t.expect("vault (at http://127.0.0.1:");
    t.expect("asks again (tool unlock, question \"code\")");
    t.expect("The previous answer was not accepted: code: \"0000\" is not the code.");
    t.expect("Cancel");
    t.send(ENTER);
    t.expect("code:");
    t.send("1234");
    t.send(ENTER);
    t.expect("Unlocked.");
    assert_eq!(t.exit_code(), 0);
}

/// A stand-in for the browser: follows the sign-in URL like a browser would (the test
/// authorization server approves at once and redirects to the command's loopback
/// listener), and records the URL it was given.
fn fake_browser(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("browser.sh");
    let record = dir.join("browser-visits.txt");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\nexec curl -s -L -o /dev/null \"$1\"\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn signs_in_through_the_browser_with_consent_then_calls_again_without_signing_in() {
    let server = protected_server();
    let dir = scratch("pty-oauth");
    let browser = fake_browser(&dir);
    let creds = dir.join("credentials.json");
    let env = [
        ("BROWSER", browser.to_str().unwrap()),
        ("ARCTERN_CREDENTIALS", creds.to_str().unwrap()),
    ];
    let mut t = Terminal::spawn_with(&dir, &["call", &server.url, "whoami"], &env);
    t.expect("needs you to sign in.");
    t.expect("URL:    http://127.0.0.1:");
    t.expect("Domain: 127.0.0.1");
    t.expect("Open the sign-in page?");
    t.expect("nothing is opened unless you choose to");
    // Nothing was opened before consent.
    assert!(!dir.join("browser-visits.txt").exists());
    t.send(ENTER);
    t.expect("Waiting for the sign-in to finish");
    t.expect(&format!("hello {} ", server.auth.issuer()));
    assert_eq!(t.exit_code(), 0);
    let visits = std::fs::read_to_string(dir.join("browser-visits.txt")).unwrap();
    assert!(visits.contains("/authorize?"), "{visits}");
    assert!(visits.contains("code_challenge_method=S256"), "{visits}");
    assert_eq!(server.auth.authorization_requests(), 1);
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&creds).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the token cache is private");
    }

    // Again, without a terminal this time: the kept token is used, nobody is asked.
    let run = common::run_with(&dir, &["call", &server.url, "whoami"], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("hello "), "{run:?}");
    assert_eq!(server.auth.authorization_requests(), 1);

    // `logout` forgets it: the next call without a terminal has to ask for a login.
    let run = common::run_with(&dir, &["logout", &server.url], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("Signed out of"), "{run:?}");
    let run = common::run_with(&dir, &["call", &server.url, "whoami"], &env);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("arctern login"), "{run:?}");

    // `login` signs in ahead of time, through the same browser flow.
    let mut t = Terminal::spawn_with(&dir, &["login", &server.url], &env);
    t.expect("Open the sign-in page?");
    t.send(ENTER);
    t.expect("Signed in to ");
    assert_eq!(t.exit_code(), 0);
    let run = common::run_with(&dir, &["call", &server.url, "whoami"], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(server.auth.authorization_requests(), 2);
}

#[test]
fn serve_auth_then_call_signs_in_steps_up_for_provision_and_completes_it() {
    // `arctern serve --auth`, a child process: the demo behind OAuth, its authorization
    // server in the same process. It says how to sign in.
    let demo = Demo::start_with(&["--auth"]);
    demo.wait_for_log("Or sign in ahead of time", 1);
    let said = demo.log();
    assert!(
        said.contains("Authorization server: http://127.0.0.1:"),
        "{said}"
    );
    assert!(
        said.contains(&format!("call {} provision --arg name=orders", demo.url())),
        "{said}"
    );
    let dir = scratch("pty-serve-auth");
    let browser = fake_browser(&dir);
    let creds = dir.join("credentials.json");
    let env = [
        ("BROWSER", browser.to_str().unwrap()),
        ("ARCTERN_CREDENTIALS", creds.to_str().unwrap()),
    ];
    // Without a token and without a terminal, the command says to sign in first.
    let refused = common::run_with(&dir, &["tools", demo.url()], &env);
    assert_eq!(refused.code, 3, "{refused:?}");
    assert!(refused.stderr.contains("arctern login"), "{refused:?}");

    // `arctern call` in a terminal: signs in for mcp:tools (listing the tools), then again
    // for db:write when provision answers 403 insufficient_scope, then asks the question.
    let mut t = Terminal::spawn_with(
        &dir,
        &["call", demo.url(), "provision", "--arg", "name=orders"],
        &env,
    );
    t.expect("needs you to sign in.");
    t.expect("Open the sign-in page?");
    t.send(ENTER);
    t.expect("needs you to sign in.");
    t.expect("Open the sign-in page?");
    t.send(ENTER);
    t.expect("Which region should the database live in?");
    t.send(ENTER);
    t.expect("region:");
    t.send("eu-west-1");
    t.send(ENTER);
    t.expect("Provisioned database \"orders\" in eu-west-1.");
    assert_eq!(t.exit_code(), 0);
    let visits = std::fs::read_to_string(dir.join("browser-visits.txt")).unwrap();
    let visits: Vec<&str> = visits.lines().collect();
    assert_eq!(visits.len(), 2, "{visits:?}");
    assert!(visits[0].contains("/authorize?"), "{visits:?}");
    assert!(visits[0].contains("scope=mcp%3Atools"), "{visits:?}");
    assert!(!visits[0].contains("db%3Awrite"), "{visits:?}");
    assert!(visits[1].contains("db%3Awrite"), "{visits:?}");

    // The token is kept, with both scopes: the next provision needs no terminal.
    let run = common::run_with(
        &dir,
        &[
            "call",
            demo.url(),
            "provision",
            "--arg",
            "name=billing",
            "--answer",
            "region=us-east-1",
        ],
        &env,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("Provisioned database \"billing\" in us-east-1."),
        "{run:?}"
    );
    let again = std::fs::read_to_string(dir.join("browser-visits.txt")).unwrap();
    assert_eq!(again.lines().count(), 2, "no new sign-in: {again}");
}

// ------------------------------------------------------------------ pages a request needs, colour

/// A stand-in for the browser that only records the URL it was given.
fn recording_browser(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("record-url.sh");
    let record = dir.join("opened.txt");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn pages_a_request_needs_are_shown_and_opened_only_with_consent() {
    // The official everything server answers -32042 with a page to open first.
    let Some(peers) = common::everything() else {
        return;
    };
    let dir = scratch("pty-url-required");
    let _ = std::fs::remove_file(dir.join("opened.txt"));
    let browser = recording_browser(&dir);
    let stdio = peers.stdio();
    let args = [
        "call",
        "--stdio",
        stdio.as_str(),
        "trigger-url-elicitation",
        "--arg",
        "url=https://example.com/start",
        "--arg",
        "errorPath=true",
    ];
    let env = [("BROWSER", browser.to_str().unwrap())];
    let mut t = Terminal::spawn_with(&dir, &args, &env);
    t.expect("needs you to open a page first (error -32042:");
    t.expect("1. Open this link to satisfy the prerequisite, then retry the request.");
    t.expect("URL:    https://modelcontextprotocol.io");
    t.expect("Domain: modelcontextprotocol.io");
    t.expect("Open the page?");
    t.expect("nothing is opened unless you choose to");
    assert!(!dir.join("opened.txt").exists(), "opened before consent");
    t.send(ENTER);
    t.expect("Finish there, then run the command again.");
    assert_eq!(t.exit_code(), 4);
    // The browser is started, not waited for: its record may come a moment later.
    let deadline = Instant::now() + PATIENCE;
    let opened = loop {
        match std::fs::read_to_string(dir.join("opened.txt")) {
            Ok(text) if text.ends_with('\n') => break text,
            _ if Instant::now() > deadline => panic!("the browser was never started"),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    assert_eq!(opened, "https://modelcontextprotocol.io\n");

    // Declining to open it: nothing is opened, the page is still named.
    let _ = std::fs::remove_file(dir.join("opened.txt"));
    let mut t = Terminal::spawn_with(&dir, &args, &env);
    t.expect("Open the page?");
    t.send(DOWN);
    t.send(ENTER);
    t.expect("Nothing was opened: open it yourself, finish there, then run the command again.");
    assert_eq!(t.exit_code(), 4);
    assert!(!dir.join("opened.txt").exists());
}

#[test]
fn no_color_keeps_a_terminal_free_of_colour() {
    // `arctern serve` logs a warning first; on a terminal it is coloured, unless NO_COLOR.
    let dir = scratch("pty-no-color");
    let warned = |env: &[(&str, &str)]| {
        let mut t = Terminal::spawn_with(&dir, &["serve", "--port", "0"], env);
        t.expect("listening on");
        let raw = String::from_utf8_lossy(&t.screen.lock().unwrap()).into_owned();
        raw.lines()
            .find(|l| l.contains("request state is sealed"))
            .unwrap_or_else(|| panic!("no warning:\n{raw}"))
            .to_owned()
    };
    let coloured = warned(&[]);
    assert!(coloured.contains("\x1b["), "{coloured:?}");
    for value in ["1", "true"] {
        let plain = warned(&[("NO_COLOR", value)]);
        assert!(plain.contains("WARN"), "{plain:?}");
        assert!(!plain.contains('\x1b'), "NO_COLOR={value}: {plain:?}");
    }
    // Set but empty means unset (no-color.org).
    let empty = warned(&[("NO_COLOR", "")]);
    assert!(empty.contains("\x1b["), "{empty:?}");

    // The command's own styles too: a URL question shows the domain in bold, unless NO_COLOR.
    let domain = |env: &[(&str, &str)]| {
        let mut t = Terminal::spawn_with(&dir, &["call", billing(), "export"], env);
        t.expect("Include anything else?");
        t.send(ENTER);
        t.expect("refunds");
        t.send(DOWN);
        t.send(" ");
        t.send(ENTER);
        t.expect("extras: receipts");
        t.expect("Open it in the browser");
        let raw = String::from_utf8_lossy(&t.screen.lock().unwrap()).into_owned();
        t.send(CTRL_C);
        let _ = t.exit_code();
        raw.lines()
            .find(|l| l.contains("Domain: "))
            .unwrap_or_else(|| panic!("no domain:\n{raw}"))
            .to_owned()
    };
    assert!(
        domain(&[]).contains("Domain: \x1b[1mbilling.example.com"),
        "bold on a terminal"
    );
    let plain = domain(&[("NO_COLOR", "1")]);
    assert!(plain.contains("Domain: billing.example.com"), "{plain:?}");
}
