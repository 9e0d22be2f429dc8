//! The load generator: a closed loop of MCP 2026-07-28 requests against one server, on a
//! current-thread tokio runtime (pin it to its own core), with a latency histogram, error
//! counting and the server's RSS sampled from `/proc`.
//!
//! Subcommands:
//!
//! * `http` — N keep-alive HTTP/1.1 connections (raw hyper client, `TCP_NODELAY`), each
//!   sending its next request as soon as the previous reply is checked. Modes: `echo`,
//!   `confirm` (two rounds per measured call; the retry echoes the state byte for byte with
//!   a new id), `list` (`tools/list`, checking the number of tools).
//! * `stdio` — spawns the server as a child and keeps N requests in flight on its pipe.
//! * `startup` — spawns the server repeatedly and times process start to first answered
//!   request.
//! * `streams` — opens N `subscriptions/listen` streams (one bare socket each, subscribed to
//!   the listen resource), reads the server's RSS before and with them open, then times
//!   `publish` calls from sending each to the update's arrival on every stream.
//! * `wait` — waits until a TCP port accepts connections (used by `run.sh`).
//! * `tls-ca` — makes a test CA and a server certificate for `127.0.0.1` (the HTTPS rows).
//!
//! With `--tls-ca`, `http` speaks HTTPS (rustls on ring, trusting only that CA, no session
//! resumption): before the measured run it times `--handshakes` full handshakes one after
//! the other on fresh connections, with the server's CPU time over them, so that the
//! handshake is reported apart from the per-call cost of the keep-alive connections.
//!
//! Every reply is checked (status, id, content); failures are counted and reported, and
//! `run.sh` marks a run with errors as failed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arctern_bench::cpu::{own_cpu, process_cpu};
use arctern_bench::measure::{Tally, Window};
use arctern_bench::record::{RunRecord, loadavg_1m};
use arctern_bench::rss::{Sampler, vm_rss_kib};
use arctern_bench::wire;
use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_util::either::Either;

/// How long a single request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Parser)]
#[command(name = "load", about = "Closed-loop MCP load generator")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Keep-alive HTTP/1.1 connections in a closed loop.
    Http(HttpArgs),
    /// N requests in flight on the stdio pipe of a spawned server.
    Stdio(StdioArgs),
    /// Process start to first answered request, repeated.
    Startup(StartupArgs),
    /// Idle `subscriptions/listen` streams: memory per stream and publish-to-delivery time.
    Streams(StreamsArgs),
    /// Make a test CA and a server certificate for 127.0.0.1 signed by it.
    TlsCa {
        /// Where `ca.pem`, `cert.pem` (leaf, then CA) and `key.pem` go.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Wait until a TCP address accepts connections.
    Wait {
        /// The address, such as 127.0.0.1:8000.
        #[arg(long)]
        addr: SocketAddr,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
    },
}

#[derive(Args)]
struct Common {
    /// The server's name in the results (arctern, rmcp, python, ceiling).
    #[arg(long)]
    peer: String,
    /// The scenario's name in the results (defaults to the mode).
    #[arg(long)]
    scenario: Option<String>,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Append the result as one JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// `tools/call echo`.
    Echo,
    /// The two-round `tools/call confirm` flow.
    Confirm,
    /// `tools/list`.
    List,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Echo => "echo",
            Mode::Confirm => "confirm",
            Mode::List => "list",
        }
    }
}

#[derive(Args)]
struct HttpArgs {
    #[command(flatten)]
    common: Common,
    /// The server's address.
    #[arg(long)]
    addr: SocketAddr,
    /// The MCP endpoint's path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// What each call does.
    #[arg(long, value_enum, default_value_t = Mode::Echo)]
    mode: Mode,
    /// Tools `tools/list` must return (mode `list`).
    #[arg(long, default_value_t = arctern_bench::MANY_TOOLS)]
    expect_tools: usize,
    /// Keep-alive connections, each with one request in flight.
    #[arg(long, default_value_t = 1)]
    conns: u32,
    /// The server's process id, for RSS sampling.
    #[arg(long)]
    pid: Option<u32>,
    /// Speak HTTPS, trusting only the CA certificate in this PEM file.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// With `--tls-ca`: full handshakes timed before the measured run.
    #[arg(long, default_value_t = 200)]
    handshakes: u64,
}

#[derive(Args)]
struct StdioArgs {
    #[command(flatten)]
    common: Common,
    /// Requests kept in flight on the pipe.
    #[arg(long, default_value_t = 1)]
    inflight: u32,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    Http,
    Stdio,
}

#[derive(Args)]
struct StartupArgs {
    /// The server's name in the results.
    #[arg(long)]
    peer: String,
    /// How the first request is sent.
    #[arg(long, value_enum)]
    transport: Transport,
    /// The address the server will listen on (HTTP).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Process starts to time.
    #[arg(long, default_value_t = 5)]
    repeat: u32,
    /// Append the result as one JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
struct StreamsArgs {
    /// The server's name in the results.
    #[arg(long)]
    peer: String,
    /// The scenario's name in the results.
    #[arg(long, default_value = "streams")]
    scenario: String,
    /// The server's address.
    #[arg(long)]
    addr: SocketAddr,
    /// The MCP endpoint's path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// The server's process id, for RSS and CPU time.
    #[arg(long)]
    pid: Option<u32>,
    /// Streams to open.
    #[arg(long, default_value_t = 10_000)]
    streams: u32,
    /// Streams being opened at once.
    #[arg(long, default_value_t = 128)]
    open_batch: u32,
    /// `publish` calls to time, one after the other.
    #[arg(long, default_value_t = 20)]
    publishes: u32,
    /// Seconds to wait, with every stream open, before reading the RSS.
    #[arg(long, default_value_t = 1.0)]
    settle: f64,
    /// Seconds any one step (opening every stream, one publish reaching every stream) may
    /// take before the run fails.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Append the result as one JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let outcome = runtime.block_on(async {
        match cli.command {
            Cmd::Http(args) => run_http(args).await,
            Cmd::Stdio(args) => run_stdio(args).await,
            Cmd::Startup(args) => run_startup(args).await,
            Cmd::Streams(args) => run_streams(args).await,
            Cmd::TlsCa { dir } => arctern_bench::tls::make_test_ca(&dir).map(|()| None),
            Cmd::Wait { addr, timeout } => wait_for(addr, Duration::from_secs_f64(timeout))
                .await
                .map(|_| None),
        }
    });
    match outcome {
        Ok(Some(record)) if record.ok() => ExitCode::SUCCESS,
        Ok(Some(_)) => ExitCode::from(2),
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("load: {e}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// CPU time of the server and of the load generator over the measured window.
struct CpuWindow(tokio::task::JoinHandle<Option<(Duration, Duration)>>);

impl CpuWindow {
    /// Reads both CPU clocks when `window` starts and when it ends.
    fn start(pid: Option<u32>, window: Window) -> CpuWindow {
        CpuWindow(tokio::spawn(async move {
            let pid = pid?;
            tokio::time::sleep_until(window.start.into()).await;
            let (server0, own0) = (process_cpu(pid)?, own_cpu()?);
            tokio::time::sleep_until(window.end.into()).await;
            let (server1, own1) = (process_cpu(pid)?, own_cpu()?);
            Some((server1.saturating_sub(server0), own1.saturating_sub(own0)))
        }))
    }

    /// Fills the CPU fields of `record` (left at 0 when unknown).
    async fn finish(self, mut record: RunRecord, window: Window) -> RunRecord {
        if let Ok(Some((server, own))) = self.0.await {
            let wall = (window.end - window.start).as_secs_f64();
            if record.calls > 0 {
                record.server_cpu_us_per_call = server.as_secs_f64() * 1e6 / record.calls as f64;
            }
            record.server_cpu_util = server.as_secs_f64() / wall;
            record.load_cpu_util = own.as_secs_f64() / wall;
        }
        record
    }
}

fn finish(record: RunRecord, out: Option<&PathBuf>) -> Result<Option<RunRecord>, BoxError> {
    println!("{}", record.summary());
    for sample in &record.error_samples {
        println!("    error: {sample}");
    }
    if let Some(path) = out {
        record.append_to(path)?;
    }
    Ok(Some(record))
}

// ---------------------------------------------------------------------------------------
// HTTP

/// What every HTTP worker needs.
struct HttpTarget {
    addr: SocketAddr,
    host: String,
    path: String,
    mode: Mode,
    expect_tools: usize,
    /// HTTPS: the connector, and the name the certificate must carry.
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

/// A TCP connection to the target with `TCP_NODELAY`, and over HTTPS its TLS handshake.
async fn connect_stream(
    target: &HttpTarget,
) -> Result<Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>, BoxError> {
    let stream = TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    Ok(match &target.tls {
        None => Either::Left(stream),
        Some((connector, name)) => Either::Right(connector.connect(name.clone(), stream).await?),
    })
}

async fn connect(target: &HttpTarget) -> Result<SendRequest<Full<Bytes>>, BoxError> {
    let stream = connect_stream(target).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the server closes the connection.
        let _ = connection.await;
    });
    Ok(sender)
}

/// Times `count` full TLS handshakes one after the other, each on a fresh connection closed
/// right after, and the server's CPU time over them: (latencies, server CPU per handshake
/// in microseconds, or 0 when unknown).
async fn time_handshakes(
    target: &HttpTarget,
    count: u64,
    pid: Option<u32>,
) -> Result<(Tally, f64), BoxError> {
    let mut tally = Tally::new();
    let before = pid.and_then(process_cpu);
    for _ in 0..count {
        let started = Instant::now();
        let mut stream = connect_stream(target).await?;
        tally.record(started.elapsed());
        // close_notify and FIN, so that the server finishes with the connection now.
        let _ = stream.shutdown().await;
    }
    // Let the server see the last close before reading its clock.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = pid.and_then(process_cpu);
    let cpu = match (before, after) {
        (Some(b), Some(a)) if count > 0 => a.saturating_sub(b).as_secs_f64() * 1e6 / count as f64,
        _ => 0.0,
    };
    Ok((tally, cpu))
}

/// Why a call failed: the connection is unusable, or the reply was wrong.
enum CallError {
    Transport(String),
    Reply(String),
}

impl CallError {
    fn message(self) -> String {
        match self {
            CallError::Transport(m) => format!("transport: {m}"),
            CallError::Reply(m) => m,
        }
    }
}

/// Sends one POST and returns the JSON-RPC message of its reply.
async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &HttpTarget,
    method: &str,
    name: Option<&str>,
    body: Vec<u8>,
) -> Result<Vec<u8>, CallError> {
    let transport = |e: &dyn std::fmt::Display| CallError::Transport(e.to_string());
    let mut request = Request::post(target.path.as_str())
        .header(HOST, target.host.as_str())
        .header(CONTENT_TYPE, wire::JSON)
        .header(ACCEPT, wire::ACCEPT);
    for (name, value) in wire::mcp_headers(method, name) {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| transport(&e))?;
    let exchange = async {
        let response = send(sender, target, request).await?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| transport(&e))?
            .to_bytes();
        if status != StatusCode::OK {
            return Err(CallError::Reply(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            )));
        }
        wire::reply_message(content_type.as_deref(), &body)
            .map(|m| m.into_owned())
            .map_err(CallError::Reply)
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(CallError::Transport("timed out".into())),
    }
}

/// Sends a request on the connection, or on a new one when the server has closed it since
/// the last reply. That is how keep-alive connections end (nginx closes one after
/// `keepalive_requests` replies, the last with `Connection: close`): a request that was never
/// sent is not a failed call. One sent and left unanswered is.
async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &HttpTarget,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, CallError> {
    let transport = |e: &dyn std::fmt::Display| CallError::Transport(e.to_string());
    if sender.is_closed() || sender.ready().await.is_err() {
        *sender = connect(target).await.map_err(|e| transport(&e))?;
        sender.ready().await.map_err(|e| transport(&e))?;
    }
    match sender.try_send_request(request).await {
        Ok(response) => Ok(response),
        Err(mut e) => match e.take_message() {
            Some(unsent) => {
                *sender = connect(target).await.map_err(|e| transport(&e))?;
                sender.ready().await.map_err(|e| transport(&e))?;
                sender.send_request(unsent).await.map_err(|e| transport(&e))
            }
            None => Err(transport(&e.into_error())),
        },
    }
}

/// One measured call: one request, or the two rounds of `confirm`.
async fn http_call(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &HttpTarget,
    conn: u32,
    seq: &mut u64,
) -> Result<(), CallError> {
    *seq += 1;
    let id = *seq;
    match target.mode {
        Mode::Echo => {
            let text = format!("c{conn}-{id}");
            let body = wire::tools_call_body(id, "echo", &text, None);
            let reply = post(sender, target, "tools/call", Some("echo"), body).await?;
            wire::check_text_result(&reply, id, &text).map_err(CallError::Reply)
        }
        Mode::Confirm => {
            let text = format!("c{conn}-{id}");
            let body = wire::tools_call_body(id, "confirm", &text, None);
            let reply = post(sender, target, "tools/call", Some("confirm"), body).await?;
            let state = wire::check_confirm_round1(&reply, id).map_err(CallError::Reply)?;
            *seq += 1;
            let retry_id = *seq;
            let body = wire::tools_call_body(retry_id, "confirm", &text, Some(&state));
            let reply = post(sender, target, "tools/call", Some("confirm"), body).await?;
            wire::check_text_result(&reply, retry_id, &text)
                .map_err(|e| CallError::Reply(format!("round 2: {e}")))
        }
        Mode::List => {
            let body = wire::tools_list_body(id);
            let reply = post(sender, target, "tools/list", None, body).await?;
            wire::check_tools_list(&reply, id, target.expect_tools).map_err(CallError::Reply)
        }
    }
}

async fn http_worker(
    target: Arc<HttpTarget>,
    conn: u32,
    mut sender: SendRequest<Full<Bytes>>,
    window: Window,
) -> Tally {
    let mut tally = Tally::new();
    let mut seq = 0u64;
    loop {
        let started = Instant::now();
        if started >= window.end {
            break;
        }
        match http_call(&mut sender, &target, conn, &mut seq).await {
            Ok(()) => {
                let ended = Instant::now();
                if window.contains(started, ended) {
                    tally.record(ended - started);
                }
            }
            Err(CallError::Reply(m)) => tally.error(m),
            Err(e @ CallError::Transport(_)) => {
                tally.error(e.message());
                match connect(&target).await {
                    Ok(fresh) => sender = fresh,
                    Err(e) => {
                        tally.error(format!("reconnect failed: {e}"));
                        break;
                    }
                }
            }
        }
    }
    tally
}

async fn run_http(args: HttpArgs) -> Result<Option<RunRecord>, BoxError> {
    let HttpArgs {
        common,
        addr,
        path,
        mode,
        expect_tools,
        conns,
        pid,
        tls_ca,
        handshakes,
    } = args;
    let tls = match &tls_ca {
        Some(ca) => {
            let config = arctern_bench::tls::client_config(ca)?;
            let name = ServerName::IpAddress(addr.ip().into());
            Some((tokio_rustls::TlsConnector::from(config), name))
        }
        None => None,
    };
    let target = Arc::new(HttpTarget {
        addr,
        host: addr.to_string(),
        path,
        mode,
        expect_tools,
        tls,
    });
    let rss_idle = pid.and_then(vm_rss_kib).unwrap_or(0);
    let handshake = match &target.tls {
        Some(_) if handshakes > 0 => Some(time_handshakes(&target, handshakes, pid).await?),
        _ => None,
    };
    let mut senders = Vec::with_capacity(conns as usize);
    for _ in 0..conns {
        senders.push(connect(&target).await?);
    }
    let sampler = pid.map(Sampler::start);
    let window = Window::after_warmup(common.warmup, common.duration);
    let cpu = CpuWindow::start(pid, window);
    let workers: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(i, sender)| {
            tokio::spawn(http_worker(
                target.clone(),
                u32::try_from(i).unwrap_or(u32::MAX),
                sender,
                window,
            ))
        })
        .collect();
    let mut tally = Tally::new();
    for worker in workers {
        tally.merge(worker.await?);
    }
    let rss_peak = sampler.map(Sampler::stop).unwrap_or(0);
    let rss_after = pid.and_then(vm_rss_kib).unwrap_or(0);
    let base = RunRecord {
        peer: common.peer,
        scenario: common.scenario.unwrap_or_else(|| mode.name().to_owned()),
        concurrency: conns,
        requests_per_call: if mode == Mode::Confirm { 2 } else { 1 },
        rss_idle_kib: rss_idle,
        rss_peak_kib: rss_peak.max(rss_after),
        rss_after_kib: rss_after,
        handshakes: handshake.as_ref().map_or(0, |(t, _)| t.len()),
        handshake_p50_us: handshake.as_ref().map_or(0.0, |(t, _)| t.quantile_us(0.5)),
        handshake_p99_us: handshake.as_ref().map_or(0.0, |(t, _)| t.quantile_us(0.99)),
        handshake_server_cpu_us: handshake.as_ref().map_or(0.0, |(_, cpu)| *cpu),
        ..RunRecord::default()
    };
    let record = cpu
        .finish(tally.into_record(base, window.end - window.start), window)
        .await;
    if record.handshakes > 0 {
        println!(
            "    TLS handshakes: {} (p50 {:.0} us, p99 {:.0} us, server cpu {:.1} us each)",
            record.handshakes,
            record.handshake_p50_us,
            record.handshake_p99_us,
            record.handshake_server_cpu_us
        );
    }
    finish(record, common.out.as_ref())
}

async fn wait_for(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, BoxError> {
    let deadline = Instant::now() + timeout;
    loop {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= deadline => {
                return Err(
                    format!("{addr} did not accept connections within {timeout:?}: {e}").into(),
                );
            }
            Err(_) => tokio::time::sleep(Duration::from_micros(500)).await,
        }
    }
}

// ---------------------------------------------------------------------------------------
// stdio

fn spawn(command: &[String]) -> Result<Child, BoxError> {
    let (program, args) = command.split_first().ok_or("no server command")?;
    Ok(Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?)
}

async fn stop(mut child: Child) {
    let _ = child.start_kill();
    let _ = child.wait().await;
}

fn stdio_text(id: u64) -> String {
    format!("s{id}")
}

fn stdio_request(id: u64) -> Vec<u8> {
    let mut body = wire::tools_call_body(id, "echo", &stdio_text(id), None);
    body.push(b'\n');
    body
}

/// Reads the next response line; notifications and requests from the server are skipped.
async fn next_response<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<u64, String> {
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', line)
            .await
            .map_err(|e| format!("reading stdout: {e}"))?;
        if n == 0 {
            return Err("the server closed its stdout".into());
        }
        let message = line.trim_ascii();
        if message.is_empty() {
            continue;
        }
        if let Some(id) = wire::response_id(message)? {
            return Ok(id);
        }
    }
}

async fn run_stdio(args: StdioArgs) -> Result<Option<RunRecord>, BoxError> {
    let StdioArgs {
        common,
        inflight,
        command,
    } = args;
    let mut child = spawn(&command)?;
    let pid = child.id().ok_or("the server exited at once")?;
    let mut writer = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let mut reader = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::with_capacity(4096);
    let mut tally = Tally::new();

    // One request first: the server is up, and its RSS is "idle after one request".
    writer.write_all(&stdio_request(0)).await?;
    writer.flush().await?;
    let first = tokio::time::timeout(REQUEST_TIMEOUT, next_response(&mut reader, &mut line)).await;
    match first {
        Ok(Ok(0)) => wire::check_text_result(line.trim_ascii(), 0, &stdio_text(0))
            .map_err(|e| format!("first request: {e}"))?,
        Ok(Ok(other)) => return Err(format!("first response has id {other}").into()),
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => return Err("no answer to the first request".into()),
    }
    let rss_idle = vm_rss_kib(pid).unwrap_or(0);
    let sampler = Sampler::start(pid);

    let window = Window::after_warmup(common.warmup, common.duration);
    let cpu = CpuWindow::start(Some(pid), window);
    let mut sent: std::collections::HashMap<u64, Instant> =
        std::collections::HashMap::with_capacity(inflight as usize * 2);
    let mut next_id = 1u64;
    for _ in 0..inflight {
        sent.insert(next_id, Instant::now());
        writer.write_all(&stdio_request(next_id)).await?;
        next_id += 1;
    }
    writer.flush().await?;
    let mut sending = true;
    while !sent.is_empty() {
        let id = match tokio::time::timeout(REQUEST_TIMEOUT, next_response(&mut reader, &mut line))
            .await
        {
            Ok(Ok(id)) => id,
            Ok(Err(e)) => {
                tally.error(e);
                break;
            }
            Err(_) => {
                tally.error(format!(
                    "{} requests unanswered for {REQUEST_TIMEOUT:?}",
                    sent.len()
                ));
                break;
            }
        };
        let ended = Instant::now();
        match sent.remove(&id) {
            None => tally.error(format!("response to unknown id {id}")),
            Some(started) => {
                match wire::check_text_result(line.trim_ascii(), id, &stdio_text(id)) {
                    Ok(()) if window.contains(started, ended) => tally.record(ended - started),
                    Ok(()) => {}
                    Err(e) => tally.error(e),
                }
            }
        }
        if ended >= window.end {
            sending = false;
        }
        if sending {
            sent.insert(next_id, Instant::now());
            writer.write_all(&stdio_request(next_id)).await?;
            next_id += 1;
        }
        // Flush before the next read can block: once no complete reply is left in the read
        // buffer, the server may be waiting for the requests still buffered here.
        if !reader.buffer().contains(&b'\n') {
            writer.flush().await?;
        }
    }
    let rss_peak = sampler.stop();
    let rss_after = vm_rss_kib(pid).unwrap_or(0);
    let base = RunRecord {
        peer: common.peer,
        scenario: common.scenario.unwrap_or_else(|| "stdio".to_owned()),
        concurrency: inflight,
        requests_per_call: 1,
        rss_idle_kib: rss_idle,
        rss_peak_kib: rss_peak.max(rss_after),
        rss_after_kib: rss_after,
        ..RunRecord::default()
    };
    // The CPU reading must happen while the server still runs.
    let record = cpu
        .finish(tally.into_record(base, window.end - window.start), window)
        .await;
    drop(writer);
    stop(child).await;
    finish(record, common.out.as_ref())
}

// ---------------------------------------------------------------------------------------
// startup

/// Starts the server once and returns the time to its first answer and its RSS then.
async fn start_once(args: &StartupArgs) -> Result<(Duration, u64), String> {
    let started = Instant::now();
    let mut child = spawn(&args.command).map_err(|e| e.to_string())?;
    let pid = child.id().unwrap_or(0);
    let outcome = match args.transport {
        Transport::Http => {
            let addr = args.addr.ok_or("--addr is needed for HTTP")?;
            let target = HttpTarget {
                addr,
                host: addr.to_string(),
                path: "/mcp".into(),
                mode: Mode::Echo,
                expect_tools: 0,
                tls: None,
            };
            let first = async {
                let stream = wait_for(addr, REQUEST_TIMEOUT)
                    .await
                    .map_err(|e| e.to_string())?;
                stream.set_nodelay(true).map_err(|e| e.to_string())?;
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream))
                        .await
                        .map_err(|e| e.to_string())?;
                let driver = tokio::spawn(connection);
                let mut seq = 0;
                let answered = http_call(&mut sender, &target, 0, &mut seq)
                    .await
                    .map_err(CallError::message);
                let elapsed = started.elapsed();
                // Close our side first, so that the port is free for the next start.
                drop(sender);
                let _ = driver.await;
                answered.map(|()| elapsed)
            };
            first.await
        }
        Transport::Stdio => {
            let first = async {
                let mut stdin = child.stdin.take().ok_or("no stdin")?;
                let mut reader = BufReader::new(child.stdout.take().ok_or("no stdout")?);
                stdin
                    .write_all(&stdio_request(0))
                    .await
                    .map_err(|e| e.to_string())?;
                stdin.flush().await.map_err(|e| e.to_string())?;
                let mut line = Vec::new();
                let id = next_response(&mut reader, &mut line).await?;
                let elapsed = started.elapsed();
                if id != 0 {
                    return Err(format!("first response has id {id}"));
                }
                wire::check_text_result(line.trim_ascii(), 0, &stdio_text(0))?;
                Ok(elapsed)
            };
            match tokio::time::timeout(REQUEST_TIMEOUT, first).await {
                Ok(r) => r,
                Err(_) => Err("no answer".into()),
            }
        }
    };
    let rss = vm_rss_kib(pid).unwrap_or(0);
    stop(child).await;
    outcome.map(|elapsed| (elapsed, rss))
}

async fn run_startup(args: StartupArgs) -> Result<Option<RunRecord>, BoxError> {
    let mut times = Vec::new();
    let mut tally = Tally::new();
    let mut rss = 0;
    for _ in 0..args.repeat {
        match start_once(&args).await {
            Ok((elapsed, kib)) => {
                times.push(elapsed);
                tally.record(elapsed);
                rss = rss.max(kib);
            }
            Err(e) => tally.error(e),
        }
        // Let the killed process's port and memory go.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    times.sort();
    let pick = |q: f64| -> f64 {
        if times.is_empty() {
            return 0.0;
        }
        let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
        times[rank - 1].as_secs_f64() * 1e6
    };
    let transport = match args.transport {
        Transport::Http => "http",
        Transport::Stdio => "stdio",
    };
    let record = RunRecord {
        peer: args.peer.clone(),
        scenario: format!("startup-{transport}"),
        concurrency: args.repeat,
        duration_s: 0.0,
        calls: times.len() as u64,
        requests_per_call: 1,
        errors: tally.errors,
        error_samples: tally.samples,
        calls_per_s: 0.0,
        p50_us: pick(0.5),
        p90_us: pick(0.9),
        p99_us: pick(0.99),
        max_us: pick(1.0),
        rss_idle_kib: rss,
        rss_peak_kib: rss,
        rss_after_kib: rss,
        loadavg_1m: loadavg_1m(),
        ..RunRecord::default()
    };
    finish(record, args.out.as_ref())
}

// ---------------------------------------------------------------------------------------
// streams

/// What a stream task reports.
enum StreamNote {
    /// The stream is open and acknowledged.
    Open,
    /// The stream's n-th update (from 1) arrived at this instant.
    Update(u32, Instant),
    /// The stream failed.
    Failed(String),
}

/// One `subscriptions/listen` stream on a bare socket: opens it, then reports the
/// acknowledgement and every update until the socket closes or the task is aborted.
async fn listen_stream(
    addr: SocketAddr,
    request: Vec<u8>,
    id: u64,
    notes: tokio::sync::mpsc::Sender<StreamNote>,
    opening: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::AsyncReadExt;
    let fail = async |m: String| {
        let _ = notes
            .send(StreamNote::Failed(format!("stream {id}: {m}")))
            .await;
    };
    let mut socket = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => return fail(format!("connect: {e}")).await,
    };
    let _ = socket.set_nodelay(true);
    if let Err(e) = socket.write_all(&request).await {
        return fail(format!("write: {e}")).await;
    }
    let mut response = arctern_bench::stream::SseResponse::new();
    let mut buf = vec![0u8; 4096];
    let mut opening = Some(opening);
    let mut updates = 0u32;
    loop {
        let n = match socket.read(&mut buf).await {
            Ok(0) => return fail("the server closed the stream".into()).await,
            Ok(n) => n,
            Err(e) => return fail(format!("read: {e}")).await,
        };
        let arrived = Instant::now();
        let events = match response.feed(&buf[..n]) {
            Ok(events) => events,
            Err(e) => return fail(e.0).await,
        };
        for data in events {
            match wire::check_listen_event(&data, id, arctern_bench::LISTEN_RESOURCE) {
                Ok(wire::ListenEvent::Acknowledged) if opening.is_some() => {
                    opening = None;
                    let _ = notes.send(StreamNote::Open).await;
                }
                Ok(wire::ListenEvent::Updated) if opening.is_none() => {
                    updates += 1;
                    let _ = notes.send(StreamNote::Update(updates, arrived)).await;
                }
                Ok(event) => return fail(format!("{event:?} out of order")).await,
                Err(e) => return fail(e).await,
            }
        }
    }
}

/// Stream notes queued for the main loop before the stream tasks wait.
const NOTES_BUFFER: usize = 4096;

async fn run_streams(args: StreamsArgs) -> Result<Option<RunRecord>, BoxError> {
    let step = Duration::from_secs_f64(args.timeout);
    let limit = open_files_limit();
    if let Some(limit) = limit
        && u64::from(args.streams) + 64 > limit
    {
        return Err(format!(
            "{} streams need as many sockets, and this process may open {limit} files: raise \
             the limit (ulimit -n) or open fewer streams",
            args.streams
        )
        .into());
    }
    let target = HttpTarget {
        addr: args.addr,
        host: args.addr.to_string(),
        path: args.path.clone(),
        mode: Mode::Echo,
        expect_tools: 0,
        tls: None,
    };
    let mut trigger = connect(&target).await?;
    let mut seq = u64::from(args.streams);
    let mut publish = async |sender: &mut SendRequest<Full<Bytes>>| -> Result<(), String> {
        seq += 1;
        let body = wire::publish_body(seq, arctern_bench::LISTEN_RESOURCE);
        let reply = post(sender, &target, "tools/call", Some("publish"), body)
            .await
            .map_err(CallError::message)?;
        wire::check_text_result(&reply, seq, "published").map_err(|e| format!("publish: {e}"))
    };
    // One publish with no stream open: the code paths are warm before the RSS is read.
    publish(&mut trigger).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_before = args.pid.and_then(vm_rss_kib).unwrap_or(0);
    let sampler = args.pid.map(Sampler::start);

    // Bounded: a server that floods a stream makes its reader wait, not this process grow.
    let (tx, mut notes) = tokio::sync::mpsc::channel(NOTES_BUFFER);
    let opening = Arc::new(tokio::sync::Semaphore::new(args.open_batch.max(1) as usize));
    let mut tasks = tokio::task::JoinSet::new();
    let mut tally = Tally::new();
    let started = Instant::now();
    let host = args.addr.to_string();
    let mut open = 0u32;
    let mut failed = None;
    let mut next = 1u32;
    // Opens streams while keeping at most `open_batch` handshakes in flight.
    while open < args.streams && failed.is_none() {
        while next <= args.streams {
            let Ok(permit) = opening.clone().try_acquire_owned() else {
                break;
            };
            let id = u64::from(next);
            let request =
                wire::listen_request(&host, &args.path, id, arctern_bench::LISTEN_RESOURCE);
            tasks.spawn(listen_stream(args.addr, request, id, tx.clone(), permit));
            next += 1;
        }
        match tokio::time::timeout_at((started + step).into(), notes.recv()).await {
            Ok(Some(StreamNote::Open)) => open += 1,
            Ok(Some(StreamNote::Failed(e))) => failed = Some(e),
            Ok(Some(StreamNote::Update(..))) => {
                failed = Some("an update before any publish".into())
            }
            Ok(None) => failed = Some("every stream ended".into()),
            Err(_) => {
                failed = Some(format!(
                    "{open} of {} streams open after {:?}",
                    args.streams, step
                ))
            }
        }
    }
    let open_s = started.elapsed().as_secs_f64();
    let mut record = RunRecord {
        peer: args.peer.clone(),
        scenario: args.scenario.clone(),
        concurrency: args.streams,
        requests_per_call: 1,
        rss_idle_kib: rss_before,
        open_s,
        ..RunRecord::default()
    };
    if let Some(e) = failed {
        tally.error(e);
        tasks.abort_all();
        record.rss_peak_kib = sampler.map(Sampler::stop).unwrap_or(0);
        return finish(tally.into_record(record, Duration::ZERO), args.out.as_ref());
    }
    tokio::time::sleep(Duration::from_secs_f64(args.settle)).await;
    let rss_open = args.pid.and_then(vm_rss_kib).unwrap_or(0);

    // The publishes, one after the other, each waiting for its update on every stream.
    let cpu0 = args.pid.and_then(process_cpu);
    let own0 = own_cpu();
    let measured = Instant::now();
    let mut all_delivered = Vec::with_capacity(args.publishes as usize);
    'publishes: for n in 1..=args.publishes {
        let sent = Instant::now();
        if let Err(e) = publish(&mut trigger).await {
            tally.error(e);
            break;
        }
        let mut delivered = 0u32;
        let mut last = sent;
        while delivered < args.streams {
            match tokio::time::timeout_at((sent + step).into(), notes.recv()).await {
                Ok(Some(StreamNote::Update(k, at))) if k == n => {
                    delivered += 1;
                    tally.record(at - sent);
                    last = last.max(at);
                }
                Ok(Some(StreamNote::Update(k, _))) => {
                    tally.error(format!("update {k} arrived during publish {n}"));
                    break 'publishes;
                }
                Ok(Some(StreamNote::Failed(e))) => {
                    tally.error(e);
                    break 'publishes;
                }
                Ok(Some(StreamNote::Open)) | Ok(None) => {
                    tally.error("the streams ended".into());
                    break 'publishes;
                }
                Err(_) => {
                    tally.error(format!(
                        "publish {n} reached {delivered} of {} streams in {step:?}",
                        args.streams
                    ));
                    break 'publishes;
                }
            }
        }
        all_delivered.push((last - sent).as_secs_f64() * 1e6);
        // Let the server settle before the next publish.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = measured.elapsed();
    let cpu1 = args.pid.and_then(process_cpu);
    let own1 = own_cpu();
    tasks.abort_all();
    let rss_peak = sampler.map(Sampler::stop).unwrap_or(0);
    all_delivered.sort_by(f64::total_cmp);
    record.publishes = all_delivered.len() as u64;
    record.all_delivered_p50_us = all_delivered
        .get(all_delivered.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0.0);
    record.all_delivered_max_us = all_delivered.last().copied().unwrap_or(0.0);
    record.rss_after_kib = rss_open;
    record.rss_peak_kib = rss_peak.max(rss_open);
    let mut record = tally.into_record(record, elapsed);
    // Throughput means nothing here; the CPU time is per delivered update.
    record.calls_per_s = 0.0;
    let wall = elapsed.as_secs_f64();
    if let (Some(a), Some(b)) = (cpu0, cpu1)
        && record.calls > 0
    {
        let server = b.saturating_sub(a).as_secs_f64();
        record.server_cpu_us_per_call = server * 1e6 / record.calls as f64;
        record.server_cpu_util = server / wall;
    }
    if let (Some(a), Some(b)) = (own0, own1) {
        record.load_cpu_util = b.saturating_sub(a).as_secs_f64() / wall;
    }
    finish(record, args.out.as_ref())
}

/// The soft limit on open files of this process, from `/proc/self/limits`.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
