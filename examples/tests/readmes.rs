//! The READMEs and guides hold to what they show: the README's server is one program in both
//! READMEs and in the examples, the crates.io pages render as written, every feature and guide
//! is listed, every published package carries the license texts, and every host
//! configuration of the hosts guide parses and starts a server that answers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The crates published to crates.io.
const PUBLISHED: [&str; 5] = [
    "arctern-types",
    "arctern-macros",
    "arctern",
    "arctern-redis",
    "arctern-cli",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of a Markdown text: (info string, body).
fn blocks(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                let info = line.trim_start().trim_start_matches('`').trim().to_owned();
                open = Some((info, String::new()));
            }
            (Some(_), true) => out.push(open.take().unwrap()),
            (Some((_, body)), false) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, false) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    out
}

/// The text of the section under `## heading`, to the next `## `.
fn section<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let start = markdown
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let rest = &markdown[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    &rest[..end]
}

fn first_rust_block(markdown: &str) -> String {
    blocks(markdown)
        .into_iter()
        .find(|(info, _)| info.starts_with("rust"))
        .map(|(_, body)| body)
        .expect("a Rust block")
}

#[test]
fn the_readme_server_is_one_program() {
    let quickstart = read("examples/src/quickstart.rs");
    let repository = first_rust_block(section(&read("README.md"), "A server"));
    let crate_page = first_rust_block(section(&read("crates/arctern/README.md"), "A server"));
    assert_eq!(
        repository, quickstart,
        "README.md's server is examples/src/quickstart.rs"
    );
    assert_eq!(
        crate_page, quickstart,
        "crates/arctern/README.md's server is examples/src/quickstart.rs"
    );
    let client = |path: &str| first_rust_block(section(&read(path), "A client"));
    assert_eq!(client("README.md"), client("crates/arctern/README.md"));
}

/// crates.io renders a README verbatim: rustdoc's hidden lines and intra-doc links would show.
#[test]
fn the_readmes_read_as_written() {
    let mut readmes = vec!["README.md".to_owned()];
    readmes.extend(PUBLISHED.iter().map(|c| format!("crates/{c}/README.md")));
    for path in readmes {
        let text = read(&path);
        for (info, body) in blocks(&text) {
            if !info.starts_with("rust") {
                continue;
            }
            assert!(
                !info.contains("ignore"),
                "{path}: a Rust block that is not compiled"
            );
            for line in body.lines() {
                let t = line.trim_start();
                assert!(
                    !(t == "#" || t.starts_with("# ")),
                    "{path}: a hidden doc-test line: {line:?}"
                );
            }
        }
        let prose: String = prose(&text);
        for (i, _) in prose.match_indices("[`") {
            let close = prose[i..].find("`]").map(|j| i + j + 2);
            if let Some(close) = close {
                assert!(
                    prose[close..].starts_with('('),
                    "{path}: an intra-doc link: {}",
                    &prose[i..close]
                );
            }
        }
        assert!(!prose.contains("](crate::"), "{path}: an intra-doc link");
    }
}

/// The Markdown outside code blocks.
fn prose(markdown: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
        } else if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_published_package_carries_the_license_texts() {
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let original = read(license);
        assert!(original.len() > 1000, "{license} is the full text");
        for krate in PUBLISHED {
            assert_eq!(
                read(&format!("crates/{krate}/{license}")),
                original,
                "crates/{krate}/{license} is a copy of the root's"
            );
            let manifest = read(&format!("crates/{krate}/Cargo.toml"));
            let include = manifest
                .lines()
                .find(|l| l.starts_with("include = "))
                .unwrap_or_else(|| panic!("{krate}: an include list"));
            assert!(include.contains(license), "{krate} packages {license}");
        }
    }
}

/// The `[features]` of a manifest: name, and whether a `##` comment documents it.
fn features(manifest: &str) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    let mut documented = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            inside = line == "[features]";
            continue;
        }
        if !inside {
            continue;
        }
        if line.starts_with("## ") {
            documented = true;
        } else if let Some((name, _)) = line.split_once(" = ")
            && !name.starts_with(' ')
        {
            out.insert(name.trim().to_owned(), documented);
            documented = false;
        }
    }
    out
}

#[test]
fn every_feature_is_documented_and_listed() {
    let features = features(&read("crates/arctern/Cargo.toml"));
    let readme = read("crates/arctern/README.md");
    let table = section(&readme, "Cargo features");
    for (name, documented) in &features {
        if name == "default" {
            continue;
        }
        assert!(
            documented,
            "feature {name} has a `##` comment (the docs' feature list)"
        );
        assert!(
            table.contains(&format!("| `{name}` |")),
            "the README's feature table lists {name}"
        );
    }
    assert!(features.len() >= 10, "{features:?}");
}

#[test]
fn every_guide_is_listed() {
    let docs = read("crates/arctern/src/docs.rs");
    let guides: Vec<&str> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(" {"))
        .collect();
    assert!(guides.len() >= 10, "{guides:?}");
    let readme = read("crates/arctern/README.md");
    let front = read("crates/arctern/src/lib.rs");
    for guide in guides {
        assert!(
            readme.contains(&format!(
                "[`{guide}`](https://docs.rs/arctern/latest/arctern/docs/{guide}/index.html)"
            )),
            "the README links the guide {guide}"
        );
        assert!(
            front.contains(&format!("[`docs::{guide}`]")),
            "the front page lists the guide {guide}"
        );
    }
}

/// Starts `program args` as a host would and checks that it answers a 2025 `initialize`.
fn answers_initialize(program: &str, args: &[String]) -> Value {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} starts: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "a-host", "version": "1"}}
    });
    writeln!(stdin, "{init}").unwrap();
    stdin.flush().unwrap();
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the server answers");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// The binaries the guide's configurations name, by file name.
fn example_binary(command: &str) -> Option<&'static str> {
    match Path::new(command).file_name()?.to_str()? {
        "calculator_stdio" => Some(env!("CARGO_BIN_EXE_calculator_stdio")),
        _ => None,
    }
}

#[test]
fn every_host_configuration_starts_a_server_that_answers() {
    let guide = read("crates/arctern/docs/hosts.md");
    let quickstart = read("examples/src/quickstart.rs");
    assert!(
        quickstart.contains(r#".serve_http("127.0.0.1:8000")"#),
        "the guide's URL is the README server's address"
    );
    let url = "http://127.0.0.1:8000/mcp";
    let mut started = 0;
    let mut configs = 0;
    let mut host = "";
    for line_or_block in guide.split("\n# ").skip(1) {
        host = line_or_block.lines().next().unwrap_or(host);
        for (info, body) in blocks(line_or_block) {
            if info != "json" {
                continue;
            }
            configs += 1;
            let config: Value =
                serde_json::from_str(&body).unwrap_or_else(|e| panic!("{host}: {e}\n{body}"));
            let top = if host == "VS Code" {
                "servers"
            } else {
                "mcpServers"
            };
            let servers = config[top]
                .as_object()
                .unwrap_or_else(|| panic!("{host}: servers under {top:?}"));
            assert_eq!(config.as_object().unwrap().len(), 1, "{host}: {config}");
            for (name, server) in servers {
                let kind = server["type"].as_str();
                if host == "VS Code" || host == "Claude Code" {
                    assert!(kind.is_some(), "{host}: {name} names its type");
                }
                if let Some(target) = server["url"].as_str() {
                    assert_eq!(target, url, "{host}: {name}");
                    assert!(kind.is_none_or(|k| k == "http"), "{host}: {name}");
                    continue;
                }
                let command = server["command"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{host}: {name} has a command or a url"));
                assert!(kind.is_none_or(|k| k == "stdio"), "{host}: {name}");
                let args: Vec<String> = server["args"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
                if command == "npx" {
                    // The bridge of a stdio-only host to the HTTP server.
                    assert_eq!(args, ["-y", "mcp-remote", url], "{host}: {name}");
                    continue;
                }
                assert!(command.starts_with('/'), "{host}: an absolute path");
                let program = example_binary(command)
                    .unwrap_or_else(|| panic!("{host}: {command} is an example binary"));
                let answer = answers_initialize(program, &args);
                assert_eq!(answer["id"], 1, "{host}: {answer}");
                assert_eq!(answer["result"]["serverInfo"]["name"], "calculator");
                assert!(answer["result"]["capabilities"]["tools"].is_object());
                started += 1;
            }
        }
    }
    assert_eq!(configs, 5, "one or two configurations per host");
    assert_eq!(started, 4, "every stdio configuration was started");
}
