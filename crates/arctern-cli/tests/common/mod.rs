//! Helpers shared by the `arctern` command's tests: the demo server as a child process,
//! servers in this process, and running the command.

// Each test file uses a different part of these helpers.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use arctern::auth::resource::{ProtectedResource, VerifiedToken};
use arctern::server::{Handler, McpServer, RequestContext, Server};
use arctern::testing::TestAuthServer;
use arctern::transport::http::HttpServer;
use tokio::net::TcpListener;

/// The `arctern` binary under test.
pub const ARCTERN: &str = env!("CARGO_BIN_EXE_arctern");

/// `arctern serve --port 0`, killed when dropped. Each test starts its own: a server kept in
/// a static would outlive the test process.
pub struct Demo {
    child: Child,
    endpoint: String,
    /// Its stderr after the line with the URL.
    log: Arc<Mutex<String>>,
}

impl Demo {
    /// Starts the demo server on a free port and reads the URL it prints.
    pub fn start() -> Demo {
        Demo::start_with(&[])
    }

    /// [`start`](Self::start) with more `serve` flags (`--auth`, `--tls-cert`...).
    pub fn start_with(flags: &[&str]) -> Demo {
        let mut child = Command::new(ARCTERN)
            .args(["serve", "--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start arctern serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("arctern serve printed its URL")
                .expect("read arctern serve's stderr");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim().to_owned();
            }
        };
        // Keep draining stderr so that the server never blocks on a full pipe.
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        assert!(
            url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"),
            "{url}"
        );
        assert!(
            !url.contains(":0/"),
            "the printed URL names the real port: {url}"
        );
        Demo {
            child,
            endpoint: url,
            log,
        }
    }

    /// The MCP endpoint it printed.
    pub fn url(&self) -> &str {
        &self.endpoint
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it printed on stderr after the URL, so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits (at most a minute) until its stderr after the URL holds `needle` `times` times.
    pub fn wait_for_log(&self, needle: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.log().matches(needle).count() < times {
            if Instant::now() > deadline {
                panic!("{needle:?} never showed; the server said:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A runtime for servers served from inside a test process, shared by its tests.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// Serves `server` over HTTP on a free port for the rest of the test process; returns the
/// endpoint's URL.
pub fn serve<H: Handler>(server: Server<H>) -> String {
    runtime().block_on(async move {
        let bound = HttpServer::new(server)
            .bind(("127.0.0.1", 0))
            .listen()
            .await
            .expect("listen");
        let url = bound.url().to_string();
        tokio::spawn(async move {
            let _ = bound.serve_with_shutdown(std::future::pending()).await;
        });
        url
    })
}

/// A fresh empty directory for a test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arctern-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// What a run of the command left.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl Run {
    /// The stdout as JSON (for `--output json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `arctern ARGS` in `dir` without a terminal (stdin is empty), with a time limit.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    run_with(dir, args, &[])
}

/// [`run_in`] with environment variables set.
pub fn run_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut child = Command::new(ARCTERN)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arctern");
    // Drained on threads, so that a large output never blocks the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll arctern") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "arctern {args:?} did not finish in time:\n{}",
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Runs `arctern ARGS` in the system's temporary directory.
pub fn run(args: &[&str]) -> Run {
    run_in(&std::env::temp_dir(), args)
}

async fn whoami(ctx: RequestContext) -> String {
    let scopes = ctx
        .extensions()
        .get::<VerifiedToken>()
        .map(|t| t.scopes.join(","))
        .unwrap_or_default();
    format!(
        "hello {} ({scopes})",
        ctx.principal().map(|p| p.0.clone()).unwrap_or_default()
    )
}

/// An OAuth-protected MCP server (the protected-resource layer, the test authorization
/// server), for the rest of the test process.
pub struct ProtectedServer {
    /// Its MCP endpoint.
    pub url: String,
    /// Its authorization server.
    pub auth: Arc<TestAuthServer>,
}

/// Starts one (each test its own).
pub fn protected_server() -> ProtectedServer {
    runtime().block_on(async {
        let auth = Arc::new(TestAuthServer::start().await.unwrap());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let protected = ProtectedResource::builder(url.clone())
            .authorization_server(auth.issuer())
            .verifier(auth.jwt_verifier(&url).build().unwrap())
            .build()
            .unwrap();
        let server = McpServer::new("protected")
            .tool("whoami", "Who is calling.", whoami)
            .build()
            .unwrap();
        let [path_based, root] = protected.metadata_paths();
        let app = axum::Router::new()
            .route_service("/mcp", protected.layer().wrap(server.http_service()))
            .route_service(&path_based, protected.metadata_service())
            .route_service(&root, protected.metadata_service());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ProtectedServer { url, auth }
    })
}

/// A server that checks an answer itself (a code) and asks again, with its reason, when it is
/// wrong: the command cannot know beforehand, so it shows the server's reason. Served from
/// this process.
pub fn vault() -> &'static str {
    use arctern::server::mrtr::Responses;
    use arctern::types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};
    use arctern::types::mrtr::{InputRequest, InputRequiredResult};
    use arctern::types::tools::CallToolResult;

    async fn unlock(Responses(answers): Responses) -> arctern::Outcome<CallToolResult> {
        let code = answers
            .get("code")
            .and_then(|r| r.as_elicit())
            .and_then(|e| e.content.as_ref())
            .and_then(|c| c.get("code"))
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        let message = match code.as_deref() {
            Some("1234") => return arctern::Outcome::Complete(CallToolResult::text("Unlocked.")),
            Some(wrong) => format!(
                "Enter the code.\n\nThe previous answer was not accepted: code: {wrong:?} is \
                 not the code."
            ),
            None => "Enter the code.".to_owned(),
        };
        let schema = RequestedSchema::new().required("code", PrimitiveSchemaDefinition::string());
        arctern::Outcome::InputRequired(
            InputRequiredResult::new()
                .with_input_request("code", InputRequest::elicit_form(message, schema))
                .with_request_state("asked"),
        )
    }

    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let server = McpServer::new("vault")
            .tool("unlock", "Unlocks with a code.", unlock)
            .build()
            .expect("a valid server");
        serve(server)
    })
}

/// The cache folder of `scripts/everything-env.sh`, under the user's cache directory.
const EVERYTHING: &str = "arctern/server-everything-2026.8.31";

/// The third-party peers installed by `scripts/everything-env.sh`: the official MCP
/// "everything" test server (npm `@modelcontextprotocol/server-everything` 2026.8.31,
/// TypeScript SDK 1.x, protocol 2025-11-25) and `two-questions.mjs` on the same SDK.
pub struct Everything {
    dir: PathBuf,
}

impl Everything {
    /// The `--stdio` command line of the everything server.
    pub fn stdio(&self) -> String {
        format!("node {} stdio", quote(&self.entry()))
    }

    /// The everything server's entry point.
    pub fn entry(&self) -> PathBuf {
        self.dir
            .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    }

    /// The `--stdio` command line of `two-questions.mjs`.
    pub fn two_questions(&self) -> String {
        format!("node {}", quote(&self.dir.join("two-questions.mjs")))
    }
}

/// A path as one shell word.
pub fn quote(path: &Path) -> String {
    shlex::try_quote(&path.to_string_lossy())
        .expect("a path without NUL")
        .into_owned()
}

/// The peers of [`Everything`]: from `ARCTERN_EVERYTHING` (the folder the script prints),
/// else from the script's cache. `None` (after a loud notice) when neither is there or `node`
/// is missing, unless `ARCTERN_REQUIRE_NODE=1` (set by `scripts/test.sh`), which makes that
/// a failure.
pub fn everything() -> Option<Everything> {
    let required = std::env::var("ARCTERN_REQUIRE_NODE").is_ok_and(|v| v == "1");
    let dir = match std::env::var_os("ARCTERN_EVERYTHING").filter(|v| !v.is_empty()) {
        Some(explicit) => Some(PathBuf::from(explicit)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|cache| cache.join(EVERYTHING)),
    };
    let peers = dir
        .map(|dir| Everything { dir })
        .filter(|p| p.dir.join(".arctern-ready").is_file() && p.entry().is_file());
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if let Some(peers) = peers.filter(|_| node) {
        return Some(peers);
    }
    assert!(
        !required,
        "ARCTERN_REQUIRE_NODE=1 but the everything server cannot run: {}",
        if node {
            "it is not installed (run scripts/everything-env.sh, or set ARCTERN_EVERYTHING)"
        } else {
            "node is not on the PATH"
        }
    );
    // Straight to the process's stderr: the test harness captures `eprintln!`, and a skip
    // must not go unnoticed.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr().lock(),
        b"\n*** SKIPPED: test against the official MCP everything server: it is not installed \
          (or node is missing).\n*** Run scripts/everything-env.sh once (scripts/test.sh does), \
          or set ARCTERN_EVERYTHING.\n\n",
    );
    None
}
