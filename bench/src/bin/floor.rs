//! The latency floor of the benchmark's arrangement: a blocking `std::net` ping-pong over
//! one TCP connection (`TCP_NODELAY`) moving the same bytes as one HTTP `tools/call` echo —
//! the request as the load generator writes it, the response as the ceiling writes it — with
//! fixed-size framing, no HTTP parsing and no async runtime (see `arctern_bench::floor`).
//! Run with the server and the client on different cores, it shows what the kernel and the
//! (virtual) machine alone take for one round trip there; on one core, what is left without
//! cross-core wake-ups.
//!
//! ```text
//! floor serve --port N
//! floor ping --port N [--duration S] [--warmup S] [--pid PID] [--out FILE]
//! ```
//!
//! `ping` writes the same result record as the load generator (peer `floor`).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use arctern_bench::cpu::{own_cpu, process_cpu};
use arctern_bench::floor::{Exchange, Pinger};
use arctern_bench::measure::{Tally, Window};
use arctern_bench::record::RunRecord;
use arctern_bench::rss::vm_rss_kib;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "floor",
    about = "Blocking TCP ping-pong with the bytes of an HTTP echo call"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Answer every request with the response, one thread per connection.
    Serve {
        /// Port to listen on (127.0.0.1).
        #[arg(long)]
        port: u16,
    },
    /// One connection, one request at a time, for a measured window.
    Ping(PingArgs),
}

#[derive(clap::Args)]
struct PingArgs {
    /// The server's port (127.0.0.1).
    #[arg(long)]
    port: u16,
    /// The name in the results.
    #[arg(long, default_value = "floor")]
    peer: String,
    /// The scenario's name in the results.
    #[arg(long, default_value = "floor")]
    scenario: String,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// The server's process id, for its CPU time and RSS.
    #[arg(long)]
    pid: Option<u32>,
    /// Append the result as one JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Cmd::Serve { port } => serve(port).map(|()| true),
        Cmd::Ping(args) => ping(args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("floor: {e}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn serve(port: u16) -> Result<(), BoxError> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let exchange = Exchange::for_port(port);
    loop {
        let (stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        let exchange = exchange.clone();
        std::thread::spawn(move || {
            // A probe that connects and closes answers nothing; a wrong request ends the
            // connection, and the client reports it.
            if let Err(e) = arctern_bench::floor::serve(stream, &exchange) {
                eprintln!("floor: connection ended: {e}");
            }
        });
    }
}

/// CPU time of the server (if known) and of this process.
fn cpu_now(pid: Option<u32>) -> Option<(Duration, Duration)> {
    Some((process_cpu(pid?)?, own_cpu()?))
}

fn ping(args: PingArgs) -> Result<bool, BoxError> {
    let exchange = Exchange::for_port(args.port);
    let (request_bytes, response_bytes) = (exchange.request.len(), exchange.response.len());
    let connect = || -> Result<Pinger, BoxError> {
        Ok(Pinger::new(
            TcpStream::connect(("127.0.0.1", args.port))?,
            exchange.clone(),
        )?)
    };
    let rss_idle = args.pid.and_then(vm_rss_kib).unwrap_or(0);
    let mut pinger = connect()?;
    let mut tally = Tally::new();
    let window = Window::after_warmup(args.warmup, args.duration);
    let mut cpu_start = None;
    let mut cpu_end = None;
    loop {
        // The CPU clocks are read between calls, outside any timed call.
        let now = Instant::now();
        if cpu_start.is_none() && now >= window.start {
            cpu_start = Some(cpu_now(args.pid));
        }
        if now >= window.end {
            cpu_end = cpu_now(args.pid);
            break;
        }
        let started = Instant::now();
        match pinger.call() {
            Ok(()) => {
                let ended = Instant::now();
                if window.contains(started, ended) {
                    tally.record(ended - started);
                }
            }
            Err(e) => {
                tally.error(e);
                match connect() {
                    Ok(fresh) => pinger = fresh,
                    Err(e) => {
                        tally.error(format!("reconnect failed: {e}"));
                        break;
                    }
                }
            }
        }
    }
    let rss_after = args.pid.and_then(vm_rss_kib).unwrap_or(0);
    let base = RunRecord {
        peer: args.peer,
        scenario: args.scenario,
        concurrency: 1,
        requests_per_call: 1,
        rss_idle_kib: rss_idle,
        rss_peak_kib: rss_idle.max(rss_after),
        rss_after_kib: rss_after,
        request_bytes: request_bytes as u64,
        response_bytes: response_bytes as u64,
        ..RunRecord::default()
    };
    let mut record = tally.into_record(base, window.end - window.start);
    if let (Some(Some((server0, own0))), Some((server1, own1))) = (cpu_start, cpu_end) {
        let wall = (window.end - window.start).as_secs_f64();
        let server = server1.saturating_sub(server0).as_secs_f64();
        if record.calls > 0 {
            record.server_cpu_us_per_call = server * 1e6 / record.calls as f64;
        }
        record.server_cpu_util = server / wall;
        record.load_cpu_util = own1.saturating_sub(own0).as_secs_f64() / wall;
    }
    println!(
        "{}  ({request_bytes} B → {response_bytes} B)",
        record.summary()
    );
    for sample in &record.error_samples {
        println!("    error: {sample}");
    }
    if let Some(path) = &args.out {
        record.append_to(path)?;
    }
    Ok(record.ok())
}
