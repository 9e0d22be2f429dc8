//! Correctness only: every Rust server of the benchmark honours the benchmark contract, as
//! checked by the load generator itself (it exits non-zero on any wrong reply). Short runs;
//! nothing here looks at how fast anything is.

use std::net::TcpListener;
use std::process::{Child, Command};

const LOAD: &str = env!("CARGO_BIN_EXE_load");

/// A port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(bin: &str, port: u16, many: bool) -> Server {
    let mut command = Command::new(bin);
    command.args(["--port", &port.to_string()]);
    if many {
        command.arg("--many");
    }
    let server = Server(command.spawn().unwrap());
    let waited = Command::new(LOAD)
        .args(["wait", "--addr", &format!("127.0.0.1:{port}")])
        .status()
        .unwrap();
    assert!(waited.success(), "{bin} did not start");
    server
}

/// Runs `load SUBCOMMAND ARGS…` as a short run; the common options go right after the
/// subcommand, before a stdio server command that follows `--`.
fn load(args: &[&str]) {
    let (subcommand, rest) = args.split_first().unwrap();
    let status = Command::new(LOAD)
        .arg(subcommand)
        .args(["--peer", "test", "--duration", "0.3", "--warmup", "0.1"])
        .args(rest)
        .status()
        .unwrap();
    assert!(status.success(), "load {args:?} reported errors");
}

fn http(bin: &str, modes: &[(&str, &str)], many: bool) {
    let port = free_port();
    let server = start(bin, port, many);
    let addr = format!("127.0.0.1:{port}");
    let pid = server.0.id().to_string();
    for (mode, conns) in modes {
        load(&[
            "http", "--addr", &addr, "--mode", mode, "--conns", conns, "--pid", &pid,
        ]);
    }
}

fn stdio(bin: &str) {
    load(&["stdio", "--inflight", "4", "--", bin, "--stdio"]);
}

#[test]
fn arctern_honours_the_contract() {
    let bin = env!("CARGO_BIN_EXE_arctern-server");
    http(bin, &[("echo", "2"), ("confirm", "2")], false);
    http(bin, &[("list", "1"), ("echo", "1")], true);
    stdio(bin);
}

#[test]
fn rmcp_honours_the_contract() {
    let bin = env!("CARGO_BIN_EXE_rmcp-server");
    http(bin, &[("echo", "2"), ("confirm", "2")], false);
    http(bin, &[("list", "1"), ("echo", "1")], true);
    stdio(bin);
}

#[test]
fn the_ceiling_answers_echo_replies() {
    let port = free_port();
    let server = Server(
        Command::new(env!("CARGO_BIN_EXE_ceiling"))
            .args(["--port", &port.to_string()])
            .spawn()
            .unwrap(),
    );
    let addr = format!("127.0.0.1:{port}");
    let waited = Command::new(LOAD)
        .args(["wait", "--addr", &addr])
        .status()
        .unwrap();
    assert!(waited.success());
    load(&["http", "--addr", &addr, "--mode", "echo", "--conns", "2"]);
    drop(server);
}
