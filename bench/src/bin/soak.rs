//! Load and faults over time: the figures of the "Soak" section of `bench/README.md`.
//!
//! ```text
//! soak [--secs 60] [--clients 1000] [--slow 2000] [--smoke]
//! ```
//!
//! 1. **Keep-alive soak.** An arctern server with the benchmark contract's `echo` and
//!    `confirm` (this program again, as a child process: `soak --serve-port N`) on 127.0.0.1; `--clients` arctern clients, each on its own keep-alive
//!    connection, call `echo` and the two-round `confirm` in turn for `--secs` seconds. The
//!    server's RSS is read at the start, every few seconds, at its peak and after the clients
//!    left. Every error is counted.
//! 2. **Slow clients alongside.** From a third of the run on, `--slow` sockets attack the
//!    server: half send a request head one byte every 2 s, half send a head announcing a
//!    4 MB body and then one byte every 2 s; each reconnects when cut off. The ordinary
//!    clients' latency is reported before and during the attack.
//! 3. **A stdio server killed mid-flow** (both eras): the client's call must fail promptly
//!    with a clear transport error.
//! 4. **A legacy HTTP client whose server restarts** on the same port: its next call
//!    re-initializes the session and carries on.
//!
//! `--smoke` is a few seconds of everything with a few clients (for CI); its figures mean
//! nothing. Exits non-zero when a check fails (an error in the soak, a call that hangs).

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arctern::Era;
use arctern::client::{Client, ClientBuilder, StdioCommand};
use arctern::server::McpServer;
use arctern::types::elicitation::ElicitResult;
use arctern_bench::contract;
use arctern_bench::rss::vm_rss_kib;
use clap::Parser;
use hdrhistogram::Histogram;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

#[derive(Parser)]
#[command(about = "arctern soak: keep-alive load, slow clients, killed and restarted servers")]
struct Cli {
    /// How long the keep-alive soak runs.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    /// Ordinary clients, one keep-alive connection each.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Slow-client sockets of the attack.
    #[arg(long, default_value_t = 2000)]
    slow: usize,
    /// A few seconds with a few clients (CI): checks that everything runs.
    #[arg(long)]
    smoke: bool,
    /// Be the server (HTTP on 127.0.0.1 at this port); the soak starts itself so.
    #[arg(long, hide = true)]
    serve_port: Option<u16>,
    /// Be the server, over stdio.
    #[arg(long, hide = true)]
    serve_stdio: bool,
}

/// The benchmark contract's `echo` and `confirm`.
fn contract_server() -> McpServer {
    McpServer::new("arctern-soak")
        .tool("echo", contract::ECHO, contract::echo)
        .tool("confirm", contract::CONFIRM, contract::confirm)
}

/// A call that takes longer than this counts as hung.
const HANG: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> ExitCode {
    let mut cli = Cli::parse();
    if let Some(port) = cli.serve_port {
        return match contract_server().serve_http(("127.0.0.1", port)).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    if cli.serve_stdio {
        return match contract_server().serve_stdio().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    if cli.smoke {
        cli.secs = 3;
        cli.clients = 10;
        cli.slow = 10;
    }
    let server = std::env::current_exe().expect("own path");
    println!(
        "soak: {} clients for {} s, {} slow sockets, on {} CPUs",
        cli.clients,
        cli.secs,
        cli.slow,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut failed = false;
    match soak(&server, &cli).await {
        Ok(ok) => failed |= !ok,
        Err(e) => {
            println!("soak: FAILED to run: {e}");
            failed = true;
        }
    }
    for era in [Era::Modern, Era::Legacy] {
        match killed_mid_flow(&server, era).await {
            Ok(ok) => failed |= !ok,
            Err(e) => {
                println!("stdio kill ({era:?}): FAILED to run: {e}");
                failed = true;
            }
        }
    }
    match restarted(&server).await {
        Ok(ok) => failed |= !ok,
        Err(e) => {
            println!("legacy restart: FAILED to run: {e}");
            failed = true;
        }
    }
    if failed {
        println!("soak: some check FAILED");
        ExitCode::FAILURE
    } else {
        println!("soak: every check passed");
        ExitCode::SUCCESS
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A free port on 127.0.0.1 (bound and released).
fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts the benchmark server on `port` and waits until it accepts connections.
async fn start_server(server: &Path, port: u16) -> Result<Child, Error> {
    let child = Command::new(server)
        .args(["--serve-port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", server.display()))?;
    let until = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if Instant::now() > until {
            return Err("the server did not start listening".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(child)
}

fn confirming() -> ClientBuilder {
    Client::builder()
        .name("soak")
        .on_elicit(|_| async { Ok(ElicitResult::accept([("ok", true)])) })
}

/// One ordinary client's latencies, before and during the attack.
struct Latencies {
    calm: Histogram<u64>,
    attacked: Histogram<u64>,
}

impl Latencies {
    fn new() -> Self {
        let h = || Histogram::new_with_bounds(1, 120_000_000, 3).expect("valid bounds");
        Latencies {
            calm: h(),
            attacked: h(),
        }
    }
}

#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    errors: AtomicU64,
    samples: Mutex<Vec<String>>,
}

impl Tally {
    fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() < 5 {
            samples.push(what);
        }
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn ms(micros: u64) -> String {
    format!("{:.2} ms", micros as f64 / 1000.0)
}

async fn soak(server: &Path, cli: &Cli) -> Result<bool, Error> {
    let port = free_port()?;
    let mut child = start_server(server, port).await?;
    let pid = child.id().ok_or("the server has no pid")?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let rss_start = vm_rss_kib(pid).unwrap_or(0);

    // Connect every client first (discovery), so that the window measures calls only.
    let mut clients = Vec::with_capacity(cli.clients);
    for _ in 0..cli.clients {
        clients.push(confirming().connect(&url).await?);
    }
    let rss_connected = vm_rss_kib(pid).unwrap_or(0);

    let tally = Arc::new(Tally::default());
    let attacking = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let window = Duration::from_secs(cli.secs);
    let started = Instant::now();
    let deadline = started + window;

    // RSS over time: every tenth of the window, and the peak.
    let series = Arc::new(Mutex::new(Vec::new()));
    let peak = Arc::new(AtomicU64::new(rss_connected));
    let sampler = tokio::spawn({
        let (series, peak, stop) = (series.clone(), peak.clone(), stop.clone());
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            let every = (window / 10).max(Duration::from_millis(200));
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                if let Some(kib) = vm_rss_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                    if Instant::now() >= next {
                        series
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((started.elapsed().as_secs(), kib));
                        next += every;
                    }
                }
            }
        }
    });

    let attack = tokio::spawn(slow_attack(
        port,
        cli.slow,
        started + window / 3,
        deadline,
        attacking.clone(),
    ));

    let mut tasks = Vec::with_capacity(clients.len());
    for (n, client) in clients.into_iter().enumerate() {
        let (tally, attacking) = (tally.clone(), attacking.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::new();
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let text = format!("c{n}-{i}");
                let tool = if i.is_multiple_of(2) {
                    "confirm"
                } else {
                    "echo"
                };
                let begun = Instant::now();
                let outcome =
                    tokio::time::timeout(HANG, client.call_tool(tool, json!({ "text": text })))
                        .await;
                let micros = begun.elapsed().as_micros().min(120_000_000) as u64;
                tally.calls.fetch_add(1, Ordering::Relaxed);
                match outcome {
                    Ok(Ok(result)) => {
                        let got = serde_json::to_value(&result.content).unwrap_or_default();
                        if got[0]["text"] != text.as_str() || result.is_error == Some(true) {
                            tally.error(format!("{tool}: unexpected result {got}"));
                        }
                    }
                    Ok(Err(e)) => tally.error(format!("{tool}: {e}")),
                    Err(_) => tally.error(format!("{tool}: no answer within {HANG:?}")),
                }
                let h = if attacking.load(Ordering::Relaxed) {
                    &mut lat.attacked
                } else {
                    &mut lat.calm
                };
                let _ = h.record(micros.max(1));
            }
            let _ = client.close().await;
            lat
        }));
    }
    let mut all = Latencies::new();
    for task in tasks {
        let lat = task.await?;
        all.calm.add(&lat.calm)?;
        all.attacked.add(&lat.attacked)?;
    }
    let elapsed = started.elapsed();
    let attack = attack.await?;
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    // The clients closed their connections: let the server settle, then read RSS again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_end = vm_rss_kib(pid).unwrap_or(0);
    let _ = child.kill().await;

    let calls = tally.calls.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed);
    println!(
        "keep-alive soak: {calls} calls (echo and 2-round confirm, in turn) in {:.1} s = {:.0} calls/s, {errors} errors",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64()
    );
    for sample in tally
        .samples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
    {
        println!("  error: {sample}");
    }
    let line = |name: &str, h: &Histogram<u64>| {
        if h.is_empty() {
            println!("  {name}: no calls");
        } else {
            println!(
                "  {name}: {} calls, p50 {}, p99 {}, max {}",
                h.len(),
                ms(h.value_at_quantile(0.5)),
                ms(h.value_at_quantile(0.99)),
                ms(h.max())
            );
        }
    };
    line("before the attack", &all.calm);
    line("during the attack", &all.attacked);
    println!(
        "  slow-client attack: {} sockets from {:.0} s on; {} connections opened, {} cut off by the server, {} refused",
        cli.slow,
        window.as_secs_f64() / 3.0,
        attack.opened,
        attack.cut_off,
        attack.refused
    );
    println!(
        "  server RSS: start {}, after connecting {}, peak {}, end {}",
        mib(rss_start),
        mib(rss_connected),
        mib(peak.load(Ordering::Relaxed)),
        mib(rss_end)
    );
    let series = series.lock().unwrap_or_else(|e| e.into_inner());
    let points: Vec<String> = series
        .iter()
        .map(|(s, kib)| format!("{s}s {}", mib(*kib)))
        .collect();
    println!("  server RSS over time: {}", points.join(", "));
    Ok(errors == 0)
}

#[derive(Default)]
struct Attack {
    opened: u64,
    cut_off: u64,
    refused: u64,
}

/// `sockets` slow clients from `start` until `deadline`; each reconnects when cut off.
async fn slow_attack(
    port: u16,
    sockets: usize,
    start: Instant,
    deadline: Instant,
    attacking: Arc<AtomicBool>,
) -> Attack {
    tokio::time::sleep_until(start.into()).await;
    attacking.store(true, Ordering::Relaxed);
    let opened = Arc::new(AtomicU64::new(0));
    let cut_off = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(sockets);
    for n in 0..sockets {
        let (opened, cut_off, refused) = (opened.clone(), cut_off.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            // Half dribble the head, half announce a large body and dribble that.
            let head_only = n % 2 == 0;
            while Instant::now() < deadline {
                let Ok(mut socket) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                else {
                    refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                };
                opened.fetch_add(1, Ordering::Relaxed);
                let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4000000\r\n\r\n";
                let (prefix, dribble): (&[u8], &[u8]) = if head_only {
                    (b"", head)
                } else {
                    (head, b"{")
                };
                if socket.write_all(prefix).await.is_err() {
                    cut_off.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let mut at = 0;
                let mut alive = true;
                while alive && Instant::now() < deadline {
                    let byte = if head_only {
                        dribble.get(at).copied().unwrap_or(b' ')
                    } else {
                        b' '
                    };
                    at += 1;
                    alive = socket.write_all(&[byte]).await.is_ok();
                    if alive {
                        let wait = Duration::from_secs(2).min(deadline - Instant::now().min(deadline));
                        tokio::time::sleep(wait).await;
                    }
                }
                if !alive {
                    cut_off.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    attacking.store(false, Ordering::Relaxed);
    Attack {
        opened: opened.load(Ordering::Relaxed),
        cut_off: cut_off.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
    }
}

/// A stdio server killed while a call waits on it: the call must fail promptly.
async fn killed_mid_flow(server: &Path, era: Era) -> Result<bool, Error> {
    let pidfile = std::env::temp_dir().join(format!("arctern-soak-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let script = format!(
        "echo $$ > '{}'; exec '{}' --serve-stdio",
        pidfile.display(),
        server.display()
    );
    let killed_at = Arc::new(Mutex::new(None::<Instant>));
    let (file, at) = (pidfile.clone(), killed_at.clone());
    let client = Client::builder()
        .name("soak-kill")
        .era(era)
        .on_elicit(move |_| {
            let (file, at) = (file.clone(), at.clone());
            async move {
                // Mid-flow: the server waits for this answer (legacy: inside the call;
                // modern: between the rounds). Kill it now.
                let pid = std::fs::read_to_string(&file).unwrap_or_default();
                let status = std::process::Command::new("kill")
                    .args(["-9", pid.trim()])
                    .status();
                *at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                if !status.is_ok_and(|s| s.success()) {
                    return Err(arctern::Error::new(
                        arctern::ErrorKind::Io,
                        "could not kill the server",
                    ));
                }
                if era == Era::Legacy {
                    // Never answer: the call must fail on its own.
                    std::future::pending::<()>().await;
                }
                Ok(ElicitResult::accept([("ok", true)]))
            }
        })
        .connect_stdio(StdioCommand::new("sh").args(["-c", &script]))
        .await?;
    let outcome = tokio::time::timeout(
        HANG,
        client.call_tool("confirm", json!({"text": "mid-flow"})),
    )
    .await;
    let failed_at = Instant::now();
    let _ = std::fs::remove_file(&pidfile);
    let after = killed_at
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map(|k| failed_at.saturating_duration_since(k));
    let ok = match (&outcome, after) {
        (Ok(Err(e)), Some(after)) => {
            println!(
                "stdio server killed mid-flow ({era:?} era): the call failed {:.1} ms after the kill: {:?}: {e}",
                after.as_secs_f64() * 1000.0,
                e.kind()
            );
            true
        }
        (Ok(Ok(_)), _) => {
            println!("stdio server killed mid-flow ({era:?} era): FAILED: the call succeeded");
            false
        }
        (Err(_), _) => {
            println!("stdio server killed mid-flow ({era:?} era): FAILED: the call hung");
            false
        }
        (Ok(Err(e)), None) => {
            println!("stdio server killed mid-flow ({era:?} era): FAILED before the kill: {e}");
            false
        }
    };
    Ok(ok)
}

/// A legacy HTTP session whose server restarts on the same port.
async fn restarted(server: &Path) -> Result<bool, Error> {
    let port = free_port()?;
    let mut child = start_server(server, port).await?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = confirming().era(Era::Legacy).connect(&url).await?;
    let echo = |text: &'static str| client.call_tool("echo", json!({ "text": text }));
    echo("before").await?;
    let _ = child.kill().await;
    let _ = child.wait().await;
    let down = echo("while down").await;
    let mut child = start_server(server, port).await?;
    let begun = Instant::now();
    let after = tokio::time::timeout(HANG, echo("after")).await;
    let took = begun.elapsed();
    let confirmed = tokio::time::timeout(
        HANG,
        client.call_tool("confirm", json!({"text": "two rounds"})),
    )
    .await;
    let _ = client.close().await;
    let _ = child.kill().await;
    let down = match down {
        Ok(_) => "succeeded (?)".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    };
    match (after, confirmed) {
        (Ok(Ok(_)), Ok(Ok(_))) => {
            println!(
                "legacy HTTP client, server restarted: the call while it was down failed ({down}); \
                 the first call after the restart re-initialized and succeeded in {:.1} ms; a \
                 2-round call on the new session succeeded",
                took.as_secs_f64() * 1000.0
            );
            Ok(true)
        }
        (after, confirmed) => {
            println!(
                "legacy HTTP client, server restarted: FAILED: after {:?}, confirm {:?}",
                after.map(|r| r.map(drop)),
                confirmed.map(|r| r.map(drop))
            );
            Ok(false)
        }
    }
}
