//! Finding the Python reference SDK's virtualenv, and running the Python fixtures.

#![allow(dead_code)] // each test binary uses its own part

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::client::ClientBuilder;
use arctern::types::elicitation::ElicitResult;
use arctern::types::roots::Root;
use arctern::types::sampling::CreateMessageResult;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The folder `scripts/python-env.sh` creates under the cache root.
const VENV: &str = "arctern/python-mcp-2.3.0";
/// Written by the script once the virtualenv is complete.
const READY: &str = ".arctern-ready";
/// The root the scripted clients share.
pub const ROOT: &str = "file:///srv/interop";

/// How the scripted user fills a form, by the fields it asks for.
pub fn scripted_form_answer(fields: &[&str]) -> ElicitResult {
    match fields {
        ["region"] => ElicitResult::accept([("region", "eu-west-1")]),
        ["gigabytes"] => ElicitResult::accept([("gigabytes", 20)]),
        ["audience"] => ElicitResult::accept([("audience", "the board")]),
        _ => ElicitResult::decline(),
    }
}

/// Adds the scripted model (which checks it was asked about arctern) and the shared root.
pub fn with_scripted_model_and_roots(builder: ClientBuilder) -> ClientBuilder {
    builder
        .on_sample(|question| async move {
            let asked = question.messages[0]
                .content
                .first_text()
                .unwrap_or_default()
                .to_owned();
            assert!(asked.contains("arctern"), "{asked}");
            Ok(CreateMessageResult::text(
                "stub-model",
                "Fast, safe, yours.",
            ))
        })
        .roots(vec![Root::new(ROOT).with_name("interop")])
}

/// The text of every content block of a result.
pub fn text(content: &impl Serialize) -> String {
    let value = serde_json::to_value(content).unwrap();
    let blocks = value.as_array().cloned().unwrap_or_else(|| vec![value]);
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Bound on every wait, so that a broken peer fails the test instead of hanging it.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The virtualenv's interpreter: `ARCTERN_PYTHON`, else the script's cache folder. `None`
/// (after a loud notice) when neither exists, unless `ARCTERN_REQUIRE_PYTHON=1`, which
/// makes a missing interpreter a failure (the test command sets it).
pub fn python() -> Option<PathBuf> {
    let required = std::env::var("ARCTERN_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
    if let Some(explicit) = std::env::var_os("ARCTERN_PYTHON").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        assert!(
            path.is_file(),
            "ARCTERN_PYTHON={} does not exist; run scripts/python-env.sh",
            path.display()
        );
        return Some(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(venv) = cache.map(|c| c.join(VENV))
        && venv.join(READY).is_file()
    {
        return Some(venv.join("bin").join("python"));
    }
    assert!(
        !required,
        "ARCTERN_REQUIRE_PYTHON=1 but the Python reference SDK is not installed: \
         run scripts/python-env.sh (or set ARCTERN_PYTHON)"
    );
    // Straight to the process's stderr: the test harness captures `eprintln!`, and a skip
    // must not go unnoticed.
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n*** SKIPPED: interop test against the Python reference SDK: no virtualenv found.\n\
         *** Run scripts/python-env.sh once (scripts/test.sh does), or set ARCTERN_PYTHON.\n"
    );
    None
}

/// A file of `interop/python/`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(name)
}

/// A child process whose stderr is kept and shown only if the test fails. Killed when
/// dropped; its stdin is a pipe that closes then, which makes the fixtures exit by
/// themselves even if the kill is missed.
pub struct Process {
    pub child: Child,
    stderr: Arc<Mutex<String>>,
    label: String,
}

impl Process {
    /// Starts `program` with `args`, stdin and stdout piped.
    pub fn spawn(label: &str, mut command: Command) -> Process {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{label} does not start: {e}"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        Process {
            child,
            stderr,
            label: label.to_owned(),
        }
    }

    /// Reads stdout until a line starts with `prefix`; returns the rest of that line.
    pub async fn wait_for_line(&mut self, prefix: &str) -> String {
        let stdout = self.child.stdout.as_mut().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let found = tokio::time::timeout(PATIENCE, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix(prefix) {
                    return Some(rest.trim().to_owned());
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(rest)) => rest,
            _ => panic!(
                "{} never printed {prefix:?}; its stderr:\n{}",
                self.label,
                self.stderr()
            ),
        }
    }

    /// What the process wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- stderr of {}:\n{}", self.label, self.stderr());
        }
    }
}
