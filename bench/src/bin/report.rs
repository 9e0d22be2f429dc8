//! Turns one benchmark run (the load generator's JSON lines, criterion's estimates and a
//! description of the machine) into the Markdown table and the JSON document of results,
//! with ratios between the servers and the targets of issue 6 evaluated.
//!
//! ```text
//! report --runs results/run.jsonl --criterion target/criterion --machine machine.json \
//!        --md results/latest.md --json results/latest.json
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use arctern_bench::record::RunRecord;
use clap::Parser;
use serde::Serialize;
use serde_json::Value;

#[derive(Parser)]
#[command(about = "Benchmark report: Markdown table and JSON")]
struct Cli {
    /// The load generator's results (one JSON object per line).
    #[arg(long)]
    runs: PathBuf,
    /// Criterion's output directory (optional).
    #[arg(long)]
    criterion: Option<PathBuf>,
    /// A JSON object describing the machine and the run.
    #[arg(long)]
    machine: Option<PathBuf>,
    /// Where to write the Markdown report.
    #[arg(long)]
    md: PathBuf,
    /// Where to write the JSON report.
    #[arg(long)]
    json: PathBuf,
}

/// The servers, in table order.
const PEERS: [&str; 4] = ["ceiling", "arctern", "rmcp", "python"];

/// The throughput scenarios, in table order: (scenario, concurrency, description).
const ROWS: [(&str, u32, &str); 10] = [
    ("echo", 1, "HTTP `tools/call` echo, 1 connection"),
    ("echo", 8, "HTTP `tools/call` echo, 8 connections"),
    ("echo", 32, "HTTP `tools/call` echo, 32 connections"),
    ("confirm", 1, "HTTP 2-round `confirm` flow, 1 connection"),
    ("confirm", 32, "HTTP 2-round `confirm` flow, 32 connections"),
    (
        "list100",
        32,
        "HTTP `tools/list`, 100 tools, 32 connections",
    ),
    (
        "echo100",
        1,
        "HTTP echo, 100 tools registered, 1 connection",
    ),
    (
        "echo100",
        32,
        "HTTP echo, 100 tools registered, 32 connections",
    ),
    ("stdio", 1, "stdio echo, 1 in flight"),
    ("stdio", 32, "stdio echo, 32 in flight"),
];

#[derive(Serialize)]
struct Target {
    target: String,
    measured: Option<f64>,
    threshold: String,
    met: Option<bool>,
    note: String,
}

#[derive(Serialize)]
struct Report<'a> {
    machine: Value,
    runs: &'a [RunRecord],
    failed_runs: Vec<String>,
    micro_ns: &'a BTreeMap<String, f64>,
    targets: &'a [Target],
}

struct Runs {
    all: Vec<RunRecord>,
}

impl Runs {
    /// The last run of `peer` / `scenario` / `concurrency` (a later run overrides).
    fn get(&self, peer: &str, scenario: &str, concurrency: u32) -> Option<&RunRecord> {
        self.all
            .iter()
            .rev()
            .find(|r| r.peer == peer && r.scenario == scenario && r.concurrency == concurrency)
    }

    /// Like [`get`](Self::get), but only a run without errors.
    fn ok(&self, peer: &str, scenario: &str, concurrency: u32) -> Option<&RunRecord> {
        self.get(peer, scenario, concurrency).filter(|r| r.ok())
    }

    /// Median idle RSS of `peer` over its HTTP runs of the two-tool server (every run starts a
    /// fresh process, so each is one sample of the same quantity).
    fn idle_rss_kib(&self, peer: &str) -> Option<f64> {
        let mut samples: Vec<u64> = self
            .all
            .iter()
            .filter(|r| r.peer == peer && (r.scenario == "echo" || r.scenario == "confirm"))
            .map(|r| r.rss_idle_kib)
            .filter(|&k| k > 0)
            .collect();
        samples.sort_unstable();
        let n = samples.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(samples[n / 2] as f64),
            _ => Some((samples[n / 2 - 1] + samples[n / 2]) as f64 / 2.0),
        }
    }

    /// The single startup run of `peer` over `transport`.
    fn startup(&self, peer: &str, transport: &str) -> Option<&RunRecord> {
        let scenario = format!("startup-{transport}");
        self.all
            .iter()
            .rev()
            .find(|r| r.peer == peer && r.scenario == scenario)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let text = std::fs::read_to_string(&cli.runs)?;
    let mut all = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        all.push(
            serde_json::from_str::<RunRecord>(line)
                .map_err(|e| format!("{}:{}: {e}", cli.runs.display(), i + 1))?,
        );
    }
    let runs = Runs { all };
    let micro = match &cli.criterion {
        Some(dir) => criterion_medians(dir),
        None => BTreeMap::new(),
    };
    let machine: Value = match &cli.machine {
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path)?)?,
        None => Value::Null,
    };
    let targets = targets(&runs, &micro);
    let failed: Vec<String> = runs
        .all
        .iter()
        .filter(|r| !r.ok())
        .map(|r| {
            format!(
                "{} {} c={}: {} errors{}",
                r.peer,
                r.scenario,
                r.concurrency,
                r.errors,
                r.error_samples
                    .first()
                    .map(|s| format!(" (first: {s})"))
                    .unwrap_or_default()
            )
        })
        .collect();

    let md = markdown(&runs, &micro, &targets, &machine, &failed);
    std::fs::write(&cli.md, &md)?;
    let report = Report {
        machine,
        runs: &runs.all,
        failed_runs: failed,
        micro_ns: &micro,
        targets: &targets,
    };
    std::fs::write(&cli.json, serde_json::to_string_pretty(&report)? + "\n")?;
    print!("{md}");
    Ok(())
}

/// Median estimates (ns) of every criterion benchmark under `dir`, by full id.
fn criterion_medians(dir: &Path) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(groups) = std::fs::read_dir(dir) else {
        return out;
    };
    for group in groups.flatten() {
        let Ok(benches) = std::fs::read_dir(group.path()) else {
            continue;
        };
        for bench in benches.flatten() {
            let new = bench.path().join("new");
            let read = |name: &str| -> Option<Value> {
                serde_json::from_str(&std::fs::read_to_string(new.join(name)).ok()?).ok()
            };
            let (Some(meta), Some(estimates)) = (read("benchmark.json"), read("estimates.json"))
            else {
                continue;
            };
            if let (Some(id), Some(median)) = (
                meta["full_id"].as_str(),
                estimates["median"]["point_estimate"].as_f64(),
            ) {
                out.insert(id.to_owned(), median);
            }
        }
    }
    out
}

/// A run's server CPU time per call in µs, if it was measured.
fn cpu_per_call(run: Option<&RunRecord>) -> Option<f64> {
    run.map(|r| r.server_cpu_us_per_call).filter(|&us| us > 0.0)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn targets(runs: &Runs, micro: &BTreeMap<String, f64>) -> Vec<Target> {
    let thr = |peer, scenario, c| runs.ok(peer, scenario, c).map(|r| r.calls_per_s);
    let p50 = |peer, scenario, c| runs.ok(peer, scenario, c).map(|r| r.p50_us);
    let cpu = |peer, scenario, c| cpu_per_call(runs.ok(peer, scenario, c));
    let cpu_note = |scenario, c| match (cpu("arctern", scenario, c), cpu("rmcp", scenario, c)) {
        (Some(a), Some(r)) => format!(
            "server CPU per call: arctern {a:.1} µs, rmcp {r:.1} µs ({} cheaper)",
            fmt_ratio(Some(r / a))
        ),
        _ => String::new(),
    };
    let missing = "a run is missing or failed".to_owned();
    let check = |target: &str,
                 measured: Option<f64>,
                 threshold: String,
                 pass: fn(f64) -> bool,
                 note: String| Target {
        target: target.to_owned(),
        measured,
        threshold,
        met: measured.map(pass),
        note: if measured.is_some() {
            note
        } else {
            missing.clone()
        },
    };
    let mut out = Vec::new();

    let echo32 = ratio(thr("arctern", "echo", 32), thr("rmcp", "echo", 32));
    let ceiling32 = ratio(thr("ceiling", "echo", 32), thr("rmcp", "echo", 32));
    out.push(check(
        "echo throughput at 32 connections vs rmcp",
        echo32,
        "≥ 3.00×".into(),
        |r| r >= 3.0,
        match ceiling32 {
            Some(c) => format!(
                "the ceiling (trivial hyper server) does {c:.2}× rmcp; arctern reaches {:.0} % of it; {}",
                100.0 * ratio(thr("arctern", "echo", 32), thr("ceiling", "echo", 32)).unwrap_or(0.0),
                cpu_note("echo", 32)
            ),
            None => cpu_note("echo", 32),
        },
    ));
    let p50_1 = ratio(p50("arctern", "echo", 1), p50("rmcp", "echo", 1));
    out.push(check(
        "p50 latency at 1 connection vs rmcp",
        p50_1,
        "≤ 0.50×".into(),
        |r| r <= 0.5,
        match p50("ceiling", "echo", 1) {
            Some(c) => format!("the ceiling's p50 is {c:.0} µs"),
            None => String::new(),
        },
    ));
    let flow = ratio(p50("arctern", "confirm", 1), p50("arctern", "echo", 1));
    out.push(check(
        "2-round confirm flow vs one plain call (p50, 1 connection)",
        flow,
        "≤ 2.20×".into(),
        |r| r <= 2.2,
        match ratio(thr("arctern", "echo", 32), thr("arctern", "confirm", 32)) {
            Some(r) => format!("at 32 connections a flow costs {r:.2}× an echo call in throughput"),
            None => String::new(),
        },
    ));
    let seal = micro.get("state/arctern/seal+open").map(|ns| ns / 1000.0);
    out.push(check(
        "seal + unseal (µs)",
        seal,
        "≤ 1.00 µs".into(),
        |us| us <= 1.0,
        match micro.get("state/rmcp/seal+open") {
            Some(ns) => format!("rmcp's HMAC codec: {:.2} µs", ns / 1000.0),
            None => String::new(),
        },
    ));
    // Cost per flow: the server's CPU time, which the load generator cannot cap (throughput
    // can never exceed half the ceiling's requests per second).
    let python = ratio(cpu("python", "confirm", 32), cpu("arctern", "confirm", 32));
    out.push(check(
        "server CPU per confirm flow, Python reference / arctern (32 connections)",
        python,
        "≥ 40×".into(),
        |r| r >= 40.0,
        format!(
            "throughput: {} the Python reference's; p50 at 1 connection: {} faster",
            fmt_ratio(ratio(
                thr("arctern", "confirm", 32),
                thr("python", "confirm", 32)
            )),
            fmt_ratio(ratio(
                p50("python", "confirm", 1),
                p50("arctern", "confirm", 1)
            ))
        ),
    ));
    let stdio = ratio(thr("arctern", "stdio", 32), thr("rmcp", "stdio", 32));
    out.push(check(
        "stdio throughput at 32 in flight vs rmcp",
        stdio,
        "≥ 2.00×".into(),
        |r| r >= 2.0,
        cpu_note("stdio", 32),
    ));
    let many = ratio(thr("arctern", "echo100", 32), thr("arctern", "echo", 32));
    out.push(check(
        "echo throughput with 100 tools vs 2 tools (32 connections)",
        many,
        "≥ 0.95× (no drop beyond noise)".into(),
        |r| r >= 0.95,
        format!(
            "at 1 connection: {}; server CPU per call with 100 tools vs 2: {}",
            fmt_ratio(ratio(
                thr("arctern", "echo100", 1),
                thr("arctern", "echo", 1)
            )),
            fmt_ratio(ratio(
                cpu("arctern", "echo100", 32),
                cpu("arctern", "echo", 32)
            ))
        ),
    ));
    let idle = |peer| runs.idle_rss_kib(peer);
    let rss = ratio(idle("arctern"), idle("rmcp"));
    out.push(check(
        "idle RSS vs rmcp",
        rss,
        "≤ 1.00×".into(),
        |r| r <= 1.0,
        match (idle("arctern"), idle("rmcp")) {
            (Some(a), Some(b)) => format!("{:.1} MiB vs {:.1} MiB", a / 1024.0, b / 1024.0),
            _ => String::new(),
        },
    ));
    out
}

fn fmt_thr(v: f64) -> String {
    let n = v.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn fmt_us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r >= 10.0 => format!("{r:.0}×"),
        Some(r) => format!("{r:.2}×"),
        None => "–".into(),
    }
}

fn cell(run: Option<&RunRecord>) -> String {
    match run {
        None => "–".into(),
        Some(r) if !r.ok() => format!("**FAILED** ({} errors)", r.errors),
        Some(r) => format!(
            "{} ({} / {})",
            fmt_thr(r.calls_per_s),
            fmt_us(r.p50_us),
            fmt_us(r.p99_us)
        ),
    }
}

fn markdown(
    runs: &Runs,
    micro: &BTreeMap<String, f64>,
    targets: &[Target],
    machine: &Value,
    failed: &[String],
) -> String {
    let mut md = String::new();
    let m = |k: &str| machine[k].as_str().unwrap_or("?").to_owned();
    let _ = writeln!(md, "## Benchmark results\n");
    let _ = writeln!(
        md,
        "{} · {} · {} CPUs · {} · arctern {} · rmcp 3.11.0 · Python mcp 2.3.0 ({}) · \
         {} s per row after {} s warm-up · server pinned to CPU 0, load generator to CPU 1 · \
         1-minute load average {} at start, {} at end\n",
        m("date"),
        m("cpu"),
        m("cpus"),
        m("kernel"),
        m("commit"),
        m("python"),
        m("duration_s"),
        m("warmup_s"),
        m("loadavg_start"),
        m("loadavg_end"),
    );
    let _ = writeln!(
        md,
        "Each cell: calls per second (p50 / p99 latency). A `confirm` call is a complete \
         two-round flow (two HTTP requests). The ceiling is a trivial hyper server answering \
         the bytes of an echo reply: the most this machine and load generator allow. Ratios \
         compare throughput (higher is better for arctern).\n"
    );
    let _ = writeln!(
        md,
        "| scenario | ceiling | arctern | rmcp (fair config) | Python reference | arctern / rmcp | arctern / Python |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for (scenario, c, description) in ROWS {
        let thr = |peer| runs.ok(peer, scenario, c).map(|r| r.calls_per_s);
        let _ = writeln!(
            md,
            "| {description} | {} | {} | {} | {} | {} | {} |",
            cell(runs.get("ceiling", scenario, c)),
            cell(runs.get("arctern", scenario, c)),
            cell(runs.get("rmcp", scenario, c)),
            cell(runs.get("python", scenario, c)),
            fmt_ratio(ratio(thr("arctern"), thr("rmcp"))),
            fmt_ratio(ratio(thr("arctern"), thr("python"))),
        );
    }

    let _ = writeln!(
        md,
        "\n### Latency ratios (p50, lower is better for arctern)\n"
    );
    let _ = writeln!(md, "| scenario | arctern / rmcp | arctern / Python |");
    let _ = writeln!(md, "|---|---:|---:|");
    for (scenario, c, description) in ROWS {
        let p = |peer| runs.ok(peer, scenario, c).map(|r| r.p50_us);
        let _ = writeln!(
            md,
            "| {description} | {} | {} |",
            fmt_ratio(ratio(p("arctern"), p("rmcp"))),
            fmt_ratio(ratio(p("arctern"), p("python"))),
        );
    }

    let _ = writeln!(
        md,
        "\n### Server CPU time per call (lower is better for arctern)\n\n\
         The server's own CPU time (all threads, user + system) during the measured window \
         divided by the calls completed, with the share of its core it used in parentheses. \
         It does not depend on what else ran on that core, and a share well below 100 % means \
         the load generator, not the server, set the pace.\n"
    );
    let _ = writeln!(
        md,
        "| scenario | ceiling | arctern | rmcp (fair config) | Python reference | arctern / rmcp | arctern / Python |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for (scenario, c, description) in ROWS {
        let cpu = |peer| cpu_per_call(runs.ok(peer, scenario, c));
        let cpu_cell = |peer| match runs.ok(peer, scenario, c) {
            Some(r) if r.server_cpu_us_per_call > 0.0 => format!(
                "{:.1} µs ({:.0} %)",
                r.server_cpu_us_per_call,
                100.0 * r.server_cpu_util
            ),
            _ => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {description} | {} | {} | {} | {} | {} | {} |",
            cpu_cell("ceiling"),
            cpu_cell("arctern"),
            cpu_cell("rmcp"),
            cpu_cell("python"),
            fmt_ratio(ratio(cpu("arctern"), cpu("rmcp"))),
            fmt_ratio(ratio(cpu("arctern"), cpu("python"))),
        );
    }

    let _ = writeln!(md, "\n### Start-up and memory\n");
    let _ = writeln!(
        md,
        "| server | start → first answer, HTTP (p50, max) | start → first answer, stdio (p50, max) | idle RSS | peak RSS, echo ×32 | peak RSS, confirm ×32 | peak RSS, stdio ×32 |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for peer in PEERS {
        let startup = |t| match runs.startup(peer, t) {
            Some(r) if r.ok() => format!("{} ({})", fmt_us(r.p50_us), fmt_us(r.max_us)),
            Some(r) => format!("**FAILED** ({} errors)", r.errors),
            None => "–".into(),
        };
        let mib = |kib: Option<u64>| match kib {
            Some(k) if k > 0 => format!("{:.1} MiB", k as f64 / 1024.0),
            _ => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {peer} | {} | {} | {} | {} | {} | {} |",
            startup("http"),
            startup("stdio"),
            mib(runs.idle_rss_kib(peer).map(|k| k as u64)),
            mib(runs.get(peer, "echo", 32).map(|r| r.rss_peak_kib)),
            mib(runs.get(peer, "confirm", 32).map(|r| r.rss_peak_kib)),
            mib(runs.get(peer, "stdio", 32).map(|r| r.rss_peak_kib)),
        );
    }
    let _ = writeln!(
        md,
        "\nIdle RSS: after start-up, before the first request (median over the fresh server of every \
         HTTP echo and confirm run). Peak: highest of samples every \
         200 ms during the run."
    );

    if !micro.is_empty() {
        let _ = writeln!(md, "\n### Micro-benchmarks (criterion, median)\n");
        let _ = writeln!(md, "| benchmark | time |");
        let _ = writeln!(md, "|---|---:|");
        for (id, ns) in micro {
            let _ = writeln!(md, "| `{id}` | {ns:.0} ns |");
        }
    }

    let _ = writeln!(md, "\n### Targets (issue 6)\n");
    let _ = writeln!(md, "| target | measured | required | met | note |");
    let _ = writeln!(md, "|---|---:|---:|:---:|---|");
    for t in targets {
        let measured = match (t.measured, t.threshold.contains("µs")) {
            (Some(v), true) => format!("{v:.2} µs"),
            (Some(v), false) => fmt_ratio(Some(v)),
            (None, _) => "–".into(),
        };
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "n/a",
        };
        let _ = writeln!(
            md,
            "| {} | {measured} | {} | {met} | {} |",
            t.target, t.threshold, t.note
        );
    }

    if !failed.is_empty() {
        let _ = writeln!(md, "\n### Failed runs\n");
        for f in failed {
            let _ = writeln!(md, "- {f}");
        }
    }
    md
}
