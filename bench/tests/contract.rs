//! Correctness only: every Rust server of the benchmark and the TypeScript SDK's server
//! honour the benchmark contract, as checked by the load generator itself (it exits non-zero
//! on any wrong reply), including the open-streams variant; the floor moves the same bytes
//! as an HTTP echo call; and the load generator takes a keep-alive connection that the
//! server closes the way nginx does as no error. Short runs; nothing here looks at how fast
//! anything is.
//!
//! The TypeScript test installs the pinned SDK on first use (`typescript/env.sh`, into a
//! cache outside the checkout, from npm); it is skipped, saying so, only when Node.js or npm
//! is missing.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use arctern_bench::floor;

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

/// A server's command line: the program and the arguments before `--port`.
type Cmd<'a> = &'a [&'a str];

fn start(cmd: Cmd<'_>, port: u16, variant: Option<&str>) -> Server {
    let mut command = Command::new(cmd[0]);
    command.args(&cmd[1..]).args(["--port", &port.to_string()]);
    command.args(variant);
    let server = Server(command.spawn().unwrap());
    let waited = Command::new(LOAD)
        .args(["wait", "--addr", &format!("127.0.0.1:{port}")])
        .status()
        .unwrap();
    assert!(waited.success(), "{cmd:?} did not start");
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

fn http(cmd: Cmd<'_>, modes: &[(&str, &str)], many: bool) {
    let port = free_port();
    let server = start(cmd, port, many.then_some("--many"));
    let addr = format!("127.0.0.1:{port}");
    let pid = server.0.id().to_string();
    for (mode, conns) in modes {
        load(&[
            "http", "--addr", &addr, "--mode", mode, "--conns", conns, "--pid", &pid,
        ]);
    }
}

fn stdio(cmd: Cmd<'_>) {
    let mut args = vec!["stdio", "--inflight", "4", "--"];
    args.extend(cmd);
    args.push("--stdio");
    load(&args);
}

/// The listen variant: a few streams open, are acknowledged, and receive every update.
fn streams(cmd: Cmd<'_>) {
    let port = free_port();
    let server = start(cmd, port, Some("--listen"));
    let status = Command::new(LOAD)
        .args([
            "streams",
            "--peer",
            "test",
            "--streams",
            "20",
            "--open-batch",
            "8",
        ])
        .args(["--publishes", "3", "--settle", "0.1", "--timeout", "20"])
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .args(["--pid", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "load streams against {cmd:?} reported errors"
    );
}

#[test]
fn arctern_honours_the_contract() {
    let bin = [env!("CARGO_BIN_EXE_arctern-server")];
    http(&bin, &[("echo", "2"), ("confirm", "2")], false);
    http(&bin, &[("list", "1"), ("echo", "1")], true);
    stdio(&bin);
    streams(&bin);
}

#[test]
fn rmcp_honours_the_contract() {
    let bin = [env!("CARGO_BIN_EXE_rmcp-server")];
    http(&bin, &[("echo", "2"), ("confirm", "2")], false);
    http(&bin, &[("list", "1"), ("echo", "1")], true);
    stdio(&bin);
    streams(&bin);
}

#[test]
fn the_typescript_sdk_honours_the_contract() {
    let env = concat!(env!("CARGO_MANIFEST_DIR"), "/typescript/env.sh");
    let installed = Command::new(env).output().unwrap();
    if installed.status.code() == Some(3) {
        eprintln!(
            "SKIPPED the_typescript_sdk_honours_the_contract: {}",
            String::from_utf8_lossy(&installed.stderr).trim()
        );
        return;
    }
    assert!(
        installed.status.success(),
        "typescript/env.sh failed: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let script = String::from_utf8(installed.stdout).unwrap();
    let cmd = ["node", script.trim()];
    http(&cmd, &[("echo", "2"), ("confirm", "2")], false);
    http(&cmd, &[("list", "1"), ("echo", "1")], true);
    stdio(&cmd);
    streams(&cmd);
}

#[test]
fn arctern_answers_in_process() {
    for mode in ["echo", "round1", "round2"] {
        let status = Command::new(env!("CARGO_BIN_EXE_arctern-server"))
            .args(["--in-process", mode, "--iterations", "10"])
            .status()
            .unwrap();
        assert!(status.success(), "--in-process {mode} failed");
    }
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

/// Reads one HTTP/1.1 message framed by `content-length` (all the framing the benchmark's
/// messages use) and returns its bytes; `None` when the peer closed the connection before a
/// message began.
fn read_http_message(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut message = Vec::new();
    let mut byte = [0u8; 1];
    while !message.ends_with(b"\r\n\r\n") {
        // A reset counts as a close: the load generator may drop a connection at any time.
        match stream.read(&mut byte).unwrap_or(0) {
            0 if message.is_empty() => return None,
            0 => panic!("the connection closed inside a message head"),
            _ => message.push(byte[0]),
        }
    }
    let head = String::from_utf8(message.clone()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a content-length");
    let start = message.len();
    message.resize(start + length, 0);
    stream.read_exact(&mut message[start..]).unwrap();
    Some(message)
}

/// Lines of an HTTP head with the `date` header's value blanked.
fn without_date(message: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(message.to_vec()).unwrap();
    let date = text
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("date: "))
        .expect("a date header");
    text.replace(date, &format!("date: {}", "x".repeat(date.len() - 6)))
        .into_bytes()
}

#[test]
fn the_floor_moves_the_bytes_of_an_http_echo_call() {
    // The load generator talks to the ceiling through a relay here, which keeps the first
    // request and the first response as they crossed the wire.
    let ceiling_port = free_port();
    let _ceiling = start(&[env!("CARGO_BIN_EXE_ceiling")], ceiling_port, None);
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_port = relay.local_addr().unwrap().port();
    let captured = thread::spawn(move || {
        let (mut client, _) = relay.accept().unwrap();
        let mut upstream = TcpStream::connect(("127.0.0.1", ceiling_port)).unwrap();
        let request = read_http_message(&mut client).expect("a request");
        upstream.write_all(&request).unwrap();
        let response = read_http_message(&mut upstream).expect("a response");
        client.write_all(&response).unwrap();
        // The rest of the run passes through untouched.
        let (mut client_in, mut upstream_out) =
            (client.try_clone().unwrap(), upstream.try_clone().unwrap());
        let forward = thread::spawn(move || {
            let _ = io::copy(&mut client_in, &mut upstream_out);
            let _ = upstream_out.shutdown(Shutdown::Write);
        });
        let _ = io::copy(&mut upstream, &mut client);
        let _ = forward.join();
        (request, response)
    });
    let addr = format!("127.0.0.1:{relay_port}");
    load(&["http", "--addr", &addr, "--mode", "echo", "--conns", "1"]);
    let (request, response) = captured.join().unwrap();

    // The load generator's first call on its first connection is id 1, text "c0-1".
    let expected = floor::Exchange::echo(&addr, 1);
    assert_eq!(
        String::from_utf8_lossy(&request),
        String::from_utf8_lossy(&expected.request),
        "the floor's request differs from the load generator's"
    );
    assert_eq!(
        String::from_utf8_lossy(&without_date(&response)),
        String::from_utf8_lossy(&without_date(&expected.response)),
        "the floor's response differs from the ceiling's"
    );
}

/// A relay in front of the ceiling that ends every client connection the way nginx ends a
/// keep-alive connection after `keepalive_requests` replies: the last reply carries
/// `Connection: close`, then the connection closes. Here that is every third reply.
struct ClosingRelay {
    addr: String,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    accepting: Option<thread::JoinHandle<()>>,
}

impl ClosingRelay {
    const REPLIES_PER_CONNECTION: usize = 3;

    fn start(upstream_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let accepting = thread::spawn({
            let (connections, stop) = (connections.clone(), stop.clone());
            move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    connections.fetch_add(1, Ordering::SeqCst);
                    let client = client.unwrap();
                    thread::spawn(move || Self::relay(client, upstream_port));
                }
            }
        });
        ClosingRelay {
            addr,
            connections,
            stop,
            accepting: Some(accepting),
        }
    }

    fn relay(mut client: TcpStream, upstream_port: u16) {
        let mut upstream = TcpStream::connect(("127.0.0.1", upstream_port)).unwrap();
        for reply in 1..=Self::REPLIES_PER_CONNECTION {
            let Some(request) = read_http_message(&mut client) else {
                return;
            };
            upstream.write_all(&request).unwrap();
            let mut response = read_http_message(&mut upstream).expect("a response");
            if reply == Self::REPLIES_PER_CONNECTION {
                let status_line_end = response.windows(2).position(|w| w == b"\r\n").unwrap();
                response.splice(
                    status_line_end + 2..status_line_end + 2,
                    b"connection: close\r\n".iter().copied(),
                );
            }
            if client.write_all(&response).is_err() {
                return;
            }
        }
        let _ = client.shutdown(Shutdown::Both);
    }
}

impl Drop for ClosingRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(&self.addr);
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

#[test]
fn a_request_the_closed_connection_never_took_goes_out_on_a_new_one() {
    let ceiling_port = free_port();
    let _ceiling = start(&[env!("CARGO_BIN_EXE_ceiling")], ceiling_port, None);
    let relay = ClosingRelay::start(ceiling_port);
    // `load` exits non-zero on any error: before the fix, the request after each
    // `Connection: close` went to the closed connection and counted as one.
    let addr = relay.addr.as_str();
    load(&["http", "--addr", addr, "--mode", "echo", "--conns", "2"]);
    let connections = relay.connections.load(Ordering::SeqCst);
    assert!(
        connections > 10,
        "the relay closed only {connections} connections, too few to test reconnection"
    );
}

#[test]
fn the_floor_answers_its_ping() {
    let port = free_port();
    let server = Server(
        Command::new(env!("CARGO_BIN_EXE_floor"))
            .args(["serve", "--port", &port.to_string()])
            .spawn()
            .unwrap(),
    );
    let waited = Command::new(LOAD)
        .args(["wait", "--addr", &format!("127.0.0.1:{port}")])
        .status()
        .unwrap();
    assert!(waited.success());
    let pid = server.0.id().to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_floor"))
        .args(["ping", "--port", &port.to_string(), "--pid", &pid])
        .args(["--duration", "0.3", "--warmup", "0.1"])
        .status()
        .unwrap();
    assert!(status.success(), "floor ping reported errors");
}
