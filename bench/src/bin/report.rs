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

/// The servers, in table order, with their column headings.
const PEERS: [&str; 5] = ["ceiling", "arctern", "rmcp", "typescript", "python"];

/// The column heading of each server in [`PEERS`].
fn peer_heading(peer: &str) -> &'static str {
    match peer {
        "ceiling" => "ceiling",
        "arctern" => "arctern",
        "rmcp" => "rmcp (fair config)",
        "typescript" => "TypeScript SDK",
        "python" => "Python reference",
        _ => "?",
    }
}

/// The peers arctern is compared with, and the headings of those ratio columns.
const VERSUS: [(&str, &str); 3] = [
    ("rmcp", "arctern / rmcp"),
    ("typescript", "arctern / TypeScript"),
    ("python", "arctern / Python"),
];

/// `| a | b | … |` and its alignment row (the first column left, the others right).
fn table_head(md: &mut String, columns: &[&str]) {
    let _ = writeln!(md, "| {} |", columns.join(" | "));
    let _ = writeln!(md, "|---{}|", "|---:".repeat(columns.len() - 1));
}

/// The headings of a table with one column per server and one per ratio.
fn peer_columns(first: &'static str) -> Vec<&'static str> {
    let mut columns = vec![first];
    columns.extend(PEERS.iter().map(|p| peer_heading(p)));
    columns.extend(VERSUS.iter().map(|(_, h)| *h));
    columns
}

/// The throughput scenarios, in table order: (scenario, concurrency, description).
const ROWS: [(&str, u32, &str); 15] = [
    ("echo", 1, "HTTP `tools/call` echo, 1 connection"),
    (
        SAME_CORE,
        1,
        "HTTP `tools/call` echo, 1 connection, load generator on the server's core",
    ),
    ("echo", 8, "HTTP `tools/call` echo, 8 connections"),
    ("echo", 32, "HTTP `tools/call` echo, 32 connections"),
    ("confirm", 1, "HTTP 2-round `confirm` flow, 1 connection"),
    ("confirm", 32, "HTTP 2-round `confirm` flow, 32 connections"),
    ("https-echo", 1, "HTTPS `tools/call` echo, 1 connection"),
    ("https-echo", 32, "HTTPS `tools/call` echo, 32 connections"),
    (
        "https-confirm",
        1,
        "HTTPS 2-round `confirm` flow, 1 connection",
    ),
    (
        "https-confirm",
        32,
        "HTTPS 2-round `confirm` flow, 32 connections",
    ),
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

/// The open-streams scenario.
const STREAMS: &str = "streams";

/// The echo at 1 connection with the load generator pinned to the server's core.
const SAME_CORE: &str = "echo-samecore";

/// The floor's peer name and its scenarios across cores and on one core.
const FLOOR: &str = "floor";
const FLOOR_SAME_CORE: &str = "floor-samecore";

/// The interleaved runs of arctern's 2-tool and 100-tool servers (32 connections).
const PAIR_TWO: &str = "echo-pair";
const PAIR_MANY: &str = "echo100-pair";
const PAIR_CONNS: u32 = 32;

/// The interleaved runs of arctern and rmcp over stdio (32 requests in flight).
const STDIO_PAIR: &str = "stdio-pair";
const STDIO_PAIR_INFLIGHT: u32 = 32;

/// The runs of one side of an interleaved comparison, and how the report names it.
#[derive(Clone, Copy)]
struct Series {
    peer: &'static str,
    scenario: &'static str,
    label: &'static str,
}

/// The 100-tool comparison: 100 tools (the subject) against 2 tools, which run first.
const MANY_TOOLS: Series = Series {
    peer: "arctern",
    scenario: PAIR_MANY,
    label: "100 tools",
};
const TWO_TOOLS: Series = Series {
    peer: "arctern",
    scenario: PAIR_TWO,
    label: "2 tools",
};

/// The stdio comparison: arctern (the subject, run first) against rmcp.
const STDIO_ARCTERN: Series = Series {
    peer: "arctern",
    scenario: STDIO_PAIR,
    label: "arctern",
};
const STDIO_RMCP: Series = Series {
    peer: "rmcp",
    scenario: STDIO_PAIR,
    label: "rmcp",
};

#[derive(Serialize)]
struct Target {
    target: String,
    measured: Option<f64>,
    threshold: String,
    met: Option<bool>,
    /// Reported for information next to a target of issue 6, not a target itself.
    supplementary: bool,
    note: String,
}

#[derive(Serialize)]
struct Report<'a> {
    machine: Value,
    runs: &'a [RunRecord],
    failed_runs: Vec<String>,
    micro_ns: &'a BTreeMap<String, f64>,
    /// The latency floor and the 1-connection echo p50s, across cores and on one core.
    latency_floor: LatencyFloor,
    /// arctern's interleaved 2-tool / 100-tool runs at 32 connections, if run.
    interleaved_many_tools: Option<Interleaved>,
    /// The interleaved arctern / rmcp stdio runs at 32 in flight, if run.
    interleaved_stdio: Option<Interleaved>,
    targets: &'a [Target],
}

/// p50 latencies (µs) at 1 connection by peer, across cores and on one core.
#[derive(Serialize)]
struct LatencyFloor {
    request_bytes: Option<u64>,
    response_bytes: Option<u64>,
    cross_core_p50_us: BTreeMap<String, f64>,
    same_core_p50_us: BTreeMap<String, f64>,
}

impl LatencyFloor {
    fn new(runs: &Runs) -> LatencyFloor {
        let p50s = |scenario: &str, floor: &str| {
            let mut out = BTreeMap::new();
            for peer in PEERS {
                if let Some(r) = runs.ok(peer, scenario, 1) {
                    out.insert(peer.to_owned(), r.p50_us);
                }
            }
            if let Some(r) = runs.ok(FLOOR, floor, 1) {
                out.insert(FLOOR.to_owned(), r.p50_us);
            }
            out
        };
        let floor = runs
            .ok(FLOOR, FLOOR, 1)
            .or_else(|| runs.ok(FLOOR, FLOOR_SAME_CORE, 1));
        LatencyFloor {
            request_bytes: floor.map(|r| r.request_bytes),
            response_bytes: floor.map(|r| r.response_bytes),
            cross_core_p50_us: p50s("echo", FLOOR),
            same_core_p50_us: p50s(SAME_CORE, FLOOR_SAME_CORE),
        }
    }
}

/// Medians over interleaved pairs of runs: the n-th run of one side and the n-th run of the
/// other ran one right after the other (a fresh server each), so each pair's ratio cancels
/// slow drifts of the machine.
#[derive(Serialize)]
struct Interleaved {
    /// The side whose throughput is the numerator of the ratios (100 tools; arctern).
    subject: Side,
    /// The side it is compared with (2 tools; rmcp).
    reference: Side,
    /// Whether the subject's run comes first in each pair (tables list the sides in run
    /// order).
    subject_first: bool,
    /// Connections (HTTP) or requests in flight (stdio) of every run.
    concurrency: u32,
    /// The complete pairs (both runs without errors), in the order run.
    pairs: Vec<Pair>,
    /// subject / reference throughput of each complete pair.
    pair_ratios: Vec<f64>,
    /// The median of `pair_ratios` (the figure the target uses: each ratio compares two
    /// runs made one after the other, which cancels slow drifts of the machine), or the ratio
    /// of the medians when no pair is complete.
    ratio: f64,
    /// median subject throughput / median reference throughput.
    ratio_of_medians: f64,
    /// median subject CPU per call / median reference CPU per call, when measured.
    cpu_ratio: Option<f64>,
    /// Measured seconds of one run.
    duration_s: f64,
}

/// The successful runs of one side of an interleaved comparison.
#[derive(Serialize)]
struct Side {
    /// The server measured.
    peer: &'static str,
    /// The scenario's name in the runs.
    scenario: &'static str,
    /// How the report names this side.
    label: &'static str,
    /// Successful runs.
    runs: usize,
    /// Median calls per second of the successful runs.
    median_calls_per_s: f64,
    /// (max − min) / median of the successful runs' throughput.
    spread: f64,
    /// Median server CPU per call (µs) of the successful runs, when measured.
    median_cpu_us_per_call: Option<f64>,
}

impl Side {
    /// `None` unless at least one of `all` succeeded.
    fn new(series: Series, all: &[&RunRecord]) -> Option<Side> {
        let ok: Vec<&RunRecord> = all.iter().copied().filter(|r| r.ok()).collect();
        let thr: Vec<f64> = ok.iter().map(|r| r.calls_per_s).collect();
        let cpu: Vec<f64> = ok
            .iter()
            .map(|r| r.server_cpu_us_per_call)
            .filter(|&us| us > 0.0)
            .collect();
        let median_calls_per_s = median(&thr)?;
        Some(Side {
            peer: series.peer,
            scenario: series.scenario,
            label: series.label,
            runs: thr.len(),
            median_calls_per_s,
            spread: spread(&thr, median_calls_per_s),
            median_cpu_us_per_call: median(&cpu),
        })
    }
}

/// One complete pair of an interleaved comparison.
#[derive(Serialize)]
struct Pair {
    /// The subject's calls per second.
    subject_calls_per_s: f64,
    /// The reference's calls per second.
    reference_calls_per_s: f64,
    /// The subject's server CPU per call (µs; 0 when unknown).
    subject_cpu_us_per_call: f64,
    /// The reference's server CPU per call (µs; 0 when unknown).
    reference_cpu_us_per_call: f64,
}

impl Interleaved {
    /// `None` unless at least one run of each side succeeded.
    fn new(
        runs: &Runs,
        subject: Series,
        reference: Series,
        subject_first: bool,
        concurrency: u32,
    ) -> Option<Interleaved> {
        let subject_runs = runs.all_of(subject.peer, subject.scenario, concurrency);
        let reference_runs = runs.all_of(reference.peer, reference.scenario, concurrency);
        // The n-th run of each side belong to the same pair; a failed run drops its pair.
        let pairs: Vec<Pair> = subject_runs
            .iter()
            .zip(&reference_runs)
            .filter(|(s, r)| s.ok() && r.ok())
            .map(|(s, r)| Pair {
                subject_calls_per_s: s.calls_per_s,
                reference_calls_per_s: r.calls_per_s,
                subject_cpu_us_per_call: s.server_cpu_us_per_call,
                reference_cpu_us_per_call: r.server_cpu_us_per_call,
            })
            .collect();
        let pair_ratios: Vec<f64> = pairs
            .iter()
            .map(|p| p.subject_calls_per_s / p.reference_calls_per_s)
            .collect();
        let duration_s = reference_runs
            .iter()
            .chain(&subject_runs)
            .find(|r| r.ok())
            .map_or(0.0, |r| r.duration_s);
        let subject = Side::new(subject, &subject_runs)?;
        let reference = Side::new(reference, &reference_runs)?;
        let ratio_of_medians = subject.median_calls_per_s / reference.median_calls_per_s;
        Some(Interleaved {
            ratio: median(&pair_ratios).unwrap_or(ratio_of_medians),
            ratio_of_medians,
            cpu_ratio: ratio(
                subject.median_cpu_us_per_call,
                reference.median_cpu_us_per_call,
            ),
            subject,
            reference,
            subject_first,
            concurrency,
            pairs,
            pair_ratios,
            duration_s,
        })
    }

    /// arctern's 2-tool / 100-tool pairs (the 2-tool run first), if run.
    fn many_tools(runs: &Runs) -> Option<Interleaved> {
        Interleaved::new(runs, MANY_TOOLS, TWO_TOOLS, false, PAIR_CONNS)
    }

    /// The arctern / rmcp stdio pairs (the arctern run first), if run.
    fn stdio(runs: &Runs) -> Option<Interleaved> {
        Interleaved::new(runs, STDIO_ARCTERN, STDIO_RMCP, true, STDIO_PAIR_INFLIGHT)
    }

    /// The two sides in the order each pair ran them.
    fn sides(&self) -> (&Side, &Side) {
        if self.subject_first {
            (&self.subject, &self.reference)
        } else {
            (&self.reference, &self.subject)
        }
    }

    /// A pair's (calls per second, server CPU per call) of each side, in run order.
    fn in_run_order(&self, p: &Pair) -> ((f64, f64), (f64, f64)) {
        let subject = (p.subject_calls_per_s, p.subject_cpu_us_per_call);
        let reference = (p.reference_calls_per_s, p.reference_cpu_us_per_call);
        if self.subject_first {
            (subject, reference)
        } else {
            (reference, subject)
        }
    }

    /// The start of a target's note: the pairs' ratios and their median, then the ratio
    /// of the median throughputs with each side's spread.
    fn pairs_note(&self) -> String {
        let (first, second) = self.sides();
        let side = |s: &Side| {
            format!(
                "{} {} calls/s, spread {:.1} % over {} runs",
                s.label,
                fmt_thr(s.median_calls_per_s),
                100.0 * s.spread,
                s.runs
            )
        };
        format!(
            "median of the per-pair ratios over {} pairs of interleaved {:.0}-s runs ({}, {}, \
             {}, …): {} (pairs: {}); ratio of the median throughputs: {} ({}; {}; spread = \
             (max − min) / median)",
            self.pair_ratios.len(),
            self.duration_s,
            first.label,
            second.label,
            first.label,
            fmt_ratio(Some(self.ratio)),
            self.pair_ratios
                .iter()
                .map(|&r| fmt_ratio(Some(r)))
                .collect::<Vec<_>>()
                .join(", "),
            fmt_ratio(Some(self.ratio_of_medians)),
            side(first),
            side(second),
        )
    }
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// (max − min) / median.
fn spread(values: &[f64], median: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    if median > 0.0 {
        (max - min) / median
    } else {
        0.0
    }
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

    /// Every run of `peer` / `scenario` / `concurrency`, in the order run.
    fn all_of(&self, peer: &str, scenario: &str, concurrency: u32) -> Vec<&RunRecord> {
        self.all
            .iter()
            .filter(|r| r.peer == peer && r.scenario == scenario && r.concurrency == concurrency)
            .collect()
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
    let floor = LatencyFloor::new(&runs);
    let many_pairs = Interleaved::many_tools(&runs);
    let stdio_pairs = Interleaved::stdio(&runs);
    let targets = targets(
        &runs,
        &micro,
        &floor,
        many_pairs.as_ref(),
        stdio_pairs.as_ref(),
    );
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

    let md = markdown(
        &runs,
        &micro,
        &targets,
        many_pairs.as_ref(),
        stdio_pairs.as_ref(),
        &machine,
        &failed,
    );
    std::fs::write(&cli.md, &md)?;
    let report = Report {
        machine,
        runs: &runs.all,
        failed_runs: failed,
        micro_ns: &micro,
        latency_floor: floor,
        interleaved_many_tools: many_pairs,
        interleaved_stdio: stdio_pairs,
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

fn targets(
    runs: &Runs,
    micro: &BTreeMap<String, f64>,
    floor: &LatencyFloor,
    many_pairs: Option<&Interleaved>,
    stdio_pairs: Option<&Interleaved>,
) -> Vec<Target> {
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
        supplementary: false,
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
        p50_note(runs, floor),
    ));
    // Not a target: the same call with the load generator on the server's core, where no
    // cross-core wake-up is left in the latency.
    let same = ratio(p50("arctern", SAME_CORE, 1), p50("rmcp", SAME_CORE, 1));
    out.push(Target {
        target: "p50 latency at 1 connection vs rmcp, load generator on the server's core \
                 (supplementary)"
            .into(),
        measured: same,
        threshold: "none (information)".into(),
        met: None,
        supplementary: true,
        note: if same.is_some() {
            same_core_note(runs, floor)
        } else {
            missing.clone()
        },
    });
    let flow = ratio(p50("arctern", "confirm", 1), p50("arctern", "echo", 1));
    let flow32 = ratio(thr("arctern", "echo", 32), thr("arctern", "confirm", 32));
    out.push(check(
        "2-round confirm flow vs one plain call (p50, 1 connection)",
        flow,
        "≤ 2.20×".into(),
        |r| r <= 2.2,
        match flow32 {
            Some(r) => format!("at 32 connections a flow costs {r:.2}× an echo call in throughput"),
            None => String::new(),
        },
    ));
    out.push(check(
        "2-round confirm flow vs one echo call, throughput at 32 connections",
        flow32,
        "≤ 2.20×".into(),
        |r| r <= 2.2,
        {
            let mut parts = vec![
                "a flow is two requests, so 2.00× is the cost of the second \
                                  round trip alone"
                    .to_owned(),
            ];
            if let (Some(f), Some(e)) = (cpu("arctern", "confirm", 32), cpu("arctern", "echo", 32))
            {
                parts.push(format!(
                    "server CPU per flow {f:.1} µs, per echo call {e:.1} µs ({})",
                    fmt_ratio(Some(f / e))
                ));
            }
            if let Some(r) = ratio(thr("rmcp", "echo", 32), thr("rmcp", "confirm", 32)) {
                parts.push(format!("rmcp: {}", fmt_ratio(Some(r))));
            }
            parts.join("; ")
        },
    ));
    let share = ratio(thr("arctern", "echo", 32), thr("ceiling", "echo", 32));
    out.push(check(
        "echo throughput at 32 connections, share of the ceiling",
        share,
        "≥ 90 %".into(),
        |r| r >= 0.9,
        match (
            thr("arctern", "echo", 32),
            thr("ceiling", "echo", 32),
            cpu("arctern", "echo", 32),
            cpu("ceiling", "echo", 32),
        ) {
            (Some(a), Some(c), Some(ca), Some(cc)) => format!(
                "arctern {} calls/s, ceiling {} calls/s; server CPU per call: arctern {ca:.1} µs, \
                 ceiling {cc:.1} µs",
                fmt_thr(a),
                fmt_thr(c)
            ),
            _ => String::new(),
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
    let typescript = ratio(
        cpu("typescript", "confirm", 32),
        cpu("arctern", "confirm", 32),
    );
    out.push(check(
        "server CPU per confirm flow, TypeScript SDK / arctern (32 connections)",
        typescript,
        "≥ 10×".into(),
        |r| r >= 10.0,
        format!(
            "throughput: {} the TypeScript SDK's; p50 at 1 connection: {} faster",
            fmt_ratio(ratio(
                thr("arctern", "confirm", 32),
                thr("typescript", "confirm", 32)
            )),
            fmt_ratio(ratio(
                p50("typescript", "confirm", 1),
                p50("arctern", "confirm", 1)
            ))
        ),
    ));
    let single = ratio(thr("arctern", "stdio", 32), thr("rmcp", "stdio", 32));
    // The pairs decide only once one is complete; until then, the single rows do.
    let (stdio, stdio_note) = match stdio_pairs.filter(|i| !i.pairs.is_empty()) {
        Some(i) => {
            let cpu = match (
                i.subject.median_cpu_us_per_call,
                i.reference.median_cpu_us_per_call,
            ) {
                (Some(a), Some(r)) => format!(
                    "server CPU per call (medians): arctern {a:.1} µs, rmcp {r:.1} µs ({} \
                     cheaper)",
                    fmt_ratio(Some(r / a))
                ),
                _ => "server CPU per call not measured".into(),
            };
            let rows = match (single, runs.ok("arctern", "stdio", 32)) {
                (Some(_), Some(r)) => {
                    format!(
                        "the single {:.0}-s rows: {}",
                        r.duration_s,
                        fmt_ratio(single)
                    )
                }
                _ => "the single rows: –".into(),
            };
            (Some(i.ratio), format!("{}; {cpu}; {rows}", i.pairs_note()))
        }
        None => (
            single,
            match cpu_note("stdio", 32) {
                c if c.is_empty() => "one run each (no complete interleaved pair)".into(),
                c => format!("one run each (no complete interleaved pair); {c}"),
            },
        ),
    };
    out.push(check(
        "stdio throughput at 32 in flight vs rmcp",
        stdio,
        "≥ 2.00×".into(),
        |r| r >= 2.0,
        stdio_note,
    ));
    let single = ratio(thr("arctern", "echo100", 32), thr("arctern", "echo", 32));
    let at_1 = format!(
        "at 1 connection: {}",
        fmt_ratio(ratio(
            thr("arctern", "echo100", 1),
            thr("arctern", "echo", 1)
        ))
    );
    let (many, many_note) = match many_pairs {
        Some(i) => (
            Some(i.ratio),
            format!(
                "{}; server CPU per call with 100 tools vs 2 (medians): {}; the single {:.0}-s \
                 rows: {}; {at_1}",
                i.pairs_note(),
                fmt_ratio(i.cpu_ratio),
                runs.ok("arctern", "echo", 32).map_or(0.0, |r| r.duration_s),
                fmt_ratio(single),
            ),
        ),
        None => (
            single,
            format!(
                "one run each (no interleaved runs); {at_1}; server CPU per call with 100 tools \
                 vs 2: {}",
                fmt_ratio(ratio(
                    cpu("arctern", "echo100", 32),
                    cpu("arctern", "echo", 32)
                ))
            ),
        ),
    };
    out.push(check(
        "echo throughput with 100 tools vs 2 tools (32 connections)",
        many,
        "≥ 0.95× (no drop beyond noise)".into(),
        |r| r >= 0.95,
        many_note,
    ));
    let per_stream = |peer: &str| {
        runs.all
            .iter()
            .rev()
            .find(|r| r.peer == peer && r.scenario == STREAMS)
            .and_then(bytes_per_stream)
    };
    let streams_open = runs
        .all
        .iter()
        .rev()
        .find(|r| r.peer == "arctern" && r.scenario == STREAMS)
        .map_or(0, |r| r.concurrency);
    out.push(check(
        "memory per idle subscriptions/listen stream vs rmcp",
        ratio(per_stream("arctern"), per_stream("rmcp")),
        "≤ 1.00×".into(),
        |r| r <= 1.0,
        {
            let listed: Vec<String> = ["arctern", "rmcp", "typescript"]
                .into_iter()
                .filter_map(|p| per_stream(p).map(|b| format!("{p} {:.1} KiB", b / 1024.0)))
                .collect();
            format!(
                "per stream with {} open: {}",
                fmt_thr(f64::from(streams_open)),
                listed.join(", ")
            )
        },
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

/// The floor's p50 across cores and on one core, if measured.
fn floor_p50s(runs: &Runs) -> (Option<f64>, Option<f64>) {
    let p50 = |scenario| runs.ok(FLOOR, scenario, 1).map(|r| r.p50_us);
    (p50(FLOOR), p50(FLOOR_SAME_CORE))
}

/// "R B → S B" of the floor's messages, if known.
fn floor_bytes(floor: &LatencyFloor) -> String {
    match (floor.request_bytes, floor.response_bytes) {
        (Some(q), Some(r)) if q > 0 && r > 0 => format!(" ({q} B → {r} B)"),
        _ => String::new(),
    }
}

/// The note of the official p50 target: what the arrangement itself allows.
fn p50_note(runs: &Runs, floor: &LatencyFloor) -> String {
    let p50 = |peer, scenario| runs.ok(peer, scenario, 1).map(|r| r.p50_us);
    let mut parts = Vec::new();
    match floor_p50s(runs) {
        (Some(cross), same) => parts.push(format!(
            "kernel/VM floor, blocking ping-pong of the same bytes without HTTP{}: {} across \
             cores{}",
            floor_bytes(floor),
            fmt_us(cross),
            same.map(|s| format!(", {} on one core", fmt_us(s)))
                .unwrap_or_default()
        )),
        (None, _) => parts.push("floor not measured".into()),
    }
    if let Some(c) = p50("ceiling", "echo") {
        parts.push(format!("ceiling {}", fmt_us(c)));
    }
    if let Some(r) = p50("rmcp", "echo") {
        let goal = r / 2.0;
        let below = match floor_p50s(runs).0 {
            Some(f) if goal < f => " (below the floor)",
            Some(_) => "",
            None => "",
        };
        parts.push(format!("0.50× rmcp is {}{below}", fmt_us(goal)));
    }
    parts.join("; ")
}

/// The note of the same-core p50 line: every p50 on one core and the part above the floor.
fn same_core_note(runs: &Runs, floor: &LatencyFloor) -> String {
    let p50 = |peer| runs.ok(peer, SAME_CORE, 1).map(|r| r.p50_us);
    let mut parts = Vec::new();
    let listed: Vec<String> = ["arctern", "rmcp", "ceiling"]
        .into_iter()
        .filter_map(|peer| p50(peer).map(|v| format!("{peer} {}", fmt_us(v))))
        .collect();
    let same_floor = floor_p50s(runs).1;
    let mut all = listed;
    if let Some(f) = same_floor {
        all.push(format!("floor {}{}", fmt_us(f), floor_bytes(floor)));
    }
    parts.push(format!("p50 on one core: {}", all.join(", ")));
    if let (Some(a), Some(r), Some(f)) = (p50("arctern"), p50("rmcp"), same_floor)
        && a > f
        && r > f
    {
        parts.push(format!(
            "above the floor: arctern {}, rmcp {} ({})",
            fmt_us(a - f),
            fmt_us(r - f),
            fmt_ratio(Some((a - f) / (r - f)))
        ));
    }
    let cpu = |peer| cpu_per_call(runs.ok(peer, SAME_CORE, 1));
    if let (Some(a), Some(r)) = (cpu("arctern"), cpu("rmcp")) {
        parts.push(format!(
            "server CPU per call: arctern {a:.1} µs, rmcp {r:.1} µs"
        ));
    }
    parts.push("the official target stays across cores".into());
    parts.join("; ")
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

/// The HTTPS rows' plain-HTTP twins: (HTTPS scenario, HTTP scenario, what a call is).
const HTTPS_TWINS: [(&str, &str, &str); 2] = [
    ("https-echo", "echo", "echo"),
    ("https-confirm", "confirm", "`confirm` flow"),
];

/// The handshakes of the HTTPS runs, and what TLS adds to a call's server CPU.
fn https_table(md: &mut String, runs: &Runs) {
    let peers = ["arctern", "rmcp"];
    if !HTTPS_TWINS.iter().any(|(https, _, _)| {
        peers
            .iter()
            .any(|p| runs.ok(p, https, 1).or(runs.ok(p, https, 32)).is_some())
    }) {
        return;
    }
    let _ = writeln!(
        md,
        "\n### HTTPS: the handshake apart from the calls\n\n\
         Both servers on rustls with the ring provider (arctern's built-in TLS; rmcp behind \
         `tokio-rustls` with the same configuration), a test CA made for the run, an ECDSA \
         P-256 certificate. Before each HTTPS run the load generator times full handshakes \
         one after the other (a fresh TCP connection each, no session resumption, closed \
         right after): p50 / p99 from connecting to the client's end of the handshake, and \
         the server's CPU time per handshake. The last columns are what TLS adds to the \
         server's CPU per call on keep-alive connections: HTTPS minus HTTP in the same run.\n"
    );
    let _ = writeln!(
        md,
        "| run | handshakes | arctern handshake (p50 / p99) | rmcp handshake (p50 / p99) | arctern server CPU per handshake | rmcp server CPU per handshake | TLS per call, arctern | TLS per call, rmcp |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (https, http, what) in HTTPS_TWINS {
        for c in [1, 32] {
            let run = |p| runs.ok(p, https, c);
            if peers.iter().all(|p| run(p).is_none()) {
                continue;
            }
            let count = peers
                .iter()
                .filter_map(|p| run(p))
                .map(|r| r.handshakes)
                .max()
                .unwrap_or(0);
            let hs = |p| match run(p) {
                Some(r) if r.handshakes > 0 => format!(
                    "{} / {}",
                    fmt_us(r.handshake_p50_us),
                    fmt_us(r.handshake_p99_us)
                ),
                _ => "–".into(),
            };
            let hs_cpu = |p| match run(p) {
                Some(r) if r.handshake_server_cpu_us > 0.0 => {
                    format!("{:.0} µs", r.handshake_server_cpu_us)
                }
                _ => "–".into(),
            };
            let added = |p| match (cpu_per_call(run(p)), cpu_per_call(runs.ok(p, http, c))) {
                (Some(tls), Some(plain)) => format!("{:+.1} µs", tls - plain),
                _ => "–".into(),
            };
            let conns = if c == 1 { "connection" } else { "connections" };
            let _ = writeln!(
                md,
                "| {what}, {c} {conns} | {count} | {} | {} | {} | {} | {} | {} |",
                hs("arctern"),
                hs("rmcp"),
                hs_cpu("arctern"),
                hs_cpu("rmcp"),
                added("arctern"),
                added("rmcp"),
            );
        }
    }
}

fn markdown(
    runs: &Runs,
    micro: &BTreeMap<String, f64>,
    targets: &[Target],
    many_pairs: Option<&Interleaved>,
    stdio_pairs: Option<&Interleaved>,
    machine: &Value,
    failed: &[String],
) -> String {
    let mut md = String::new();
    let m = |k: &str| machine[k].as_str().unwrap_or("?").to_owned();
    let _ = writeln!(md, "## Benchmark results\n");
    let _ = writeln!(
        md,
        "{} · {} · {} CPUs · {} · arctern {} · rmcp 3.11.0 · TypeScript SDK \
         @modelcontextprotocol/server 2.4.0 (Node.js {}) · Python mcp 2.3.0 ({}) · \
         {} s per row after {} s warm-up · server pinned to CPU {}, load generator to CPU {} \
         (except the rows marked \"on the server's core\", where both run on CPU {}) · \
         1-minute load average {} at start, {} at end\n",
        m("date"),
        m("cpu"),
        m("cpus"),
        m("kernel"),
        m("commit"),
        m("node"),
        m("python"),
        m("duration_s"),
        m("warmup_s"),
        m("server_cpu"),
        m("load_cpu"),
        m("server_cpu"),
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
    table_head(&mut md, &peer_columns("scenario"));
    for (scenario, c, description) in ROWS {
        let thr = |peer| runs.ok(peer, scenario, c).map(|r| r.calls_per_s);
        let mut cells = vec![description.to_owned()];
        cells.extend(PEERS.iter().map(|p| cell(runs.get(p, scenario, c))));
        cells.extend(
            VERSUS
                .iter()
                .map(|(p, _)| fmt_ratio(ratio(thr("arctern"), thr(p)))),
        );
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    https_table(&mut md, runs);

    let _ = writeln!(
        md,
        "\n### Latency ratios (p50, lower is better for arctern)\n"
    );
    let mut columns = vec!["scenario"];
    columns.extend(VERSUS.iter().map(|(_, h)| *h));
    table_head(&mut md, &columns);
    for (scenario, c, description) in ROWS {
        let p = |peer| runs.ok(peer, scenario, c).map(|r| r.p50_us);
        let mut cells = vec![description.to_owned()];
        cells.extend(
            VERSUS
                .iter()
                .map(|(peer, _)| fmt_ratio(ratio(p("arctern"), p(peer)))),
        );
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }

    let _ = writeln!(
        md,
        "\n### Server CPU time per call (lower is better for arctern)\n\n\
         The server's own CPU time (all threads, user + system) during the measured window \
         divided by the calls completed, with the share of its core it used in parentheses. \
         It does not depend on what else ran on that core, and a share well below 100 % means \
         the load generator, not the server, set the pace.\n"
    );
    table_head(&mut md, &peer_columns("scenario"));
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
        let mut cells = vec![description.to_owned()];
        cells.extend(PEERS.iter().map(|p| cpu_cell(p)));
        cells.extend(
            VERSUS
                .iter()
                .map(|(p, _)| fmt_ratio(ratio(cpu("arctern"), cpu(p)))),
        );
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }

    latency_floor_table(&mut md, runs, machine);
    if let Some(i) = many_pairs {
        let _ = writeln!(
            md,
            "\n### 100 tools vs 2 tools, interleaved (arctern, {PAIR_CONNS} connections)\n\n\
             Alternating runs of {:.0} s with 2 tools and with 100 tools registered (a fresh \
             server each). Each pair is a 2-tool run and the 100-tool run right after it, so a \
             slow drift of the machine hits both alike; the target uses the median of the \
             pairs' ratios. Each cell: calls per second (server CPU per call).\n",
            i.duration_s
        );
        interleaved_table(&mut md, i, "100 / 2");
    }
    if let Some(i) = stdio_pairs {
        let _ = writeln!(
            md,
            "\n### stdio at {STDIO_PAIR_INFLIGHT} in flight, interleaved (arctern vs rmcp)\n\n\
             Alternating runs of {:.0} s of arctern and of rmcp over stdio (a fresh server \
             each). Each pair is an arctern run and the rmcp run right after it, so a slow \
             drift of the machine hits both alike; the target uses the median of the pairs' \
             ratios. Each cell: calls per second (server CPU per call).\n",
            i.duration_s
        );
        interleaved_table(&mut md, i, "arctern / rmcp");
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

    streams_table(&mut md, runs);

    if !micro.is_empty() {
        let _ = writeln!(md, "\n### Micro-benchmarks (criterion, median)\n");
        let _ = writeln!(md, "| benchmark | time |");
        let _ = writeln!(md, "|---|---:|");
        for (id, ns) in micro {
            let _ = writeln!(md, "| `{id}` | {ns:.0} ns |");
        }
    }

    let _ = writeln!(md, "\n### Targets (issues 6 and 17)\n");
    let _ = writeln!(md, "| target | measured | required | met | note |");
    let _ = writeln!(md, "|---|---:|---:|:---:|---|");
    for t in targets {
        let measured = match t.measured {
            Some(v) if t.threshold.contains("µs") => format!("{v:.2} µs"),
            Some(v) if t.threshold.contains('%') => format!("{:.0} %", 100.0 * v),
            Some(v) => fmt_ratio(Some(v)),
            None => "–".into(),
        };
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None if t.supplementary => "–",
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

/// Bytes of server memory per open stream: the RSS with every stream open minus the RSS
/// before, divided by the streams.
fn bytes_per_stream(r: &RunRecord) -> Option<f64> {
    (r.ok() && r.concurrency > 0 && r.rss_after_kib > 0 && r.rss_idle_kib > 0).then(|| {
        (r.rss_after_kib as f64 - r.rss_idle_kib as f64) * 1024.0 / f64::from(r.concurrency)
    })
}

/// The open-streams scenario, one line per server that ran it.
fn streams_table(md: &mut String, runs: &Runs) {
    let rows: Vec<&RunRecord> = PEERS
        .iter()
        .filter_map(|p| {
            runs.all
                .iter()
                .rev()
                .find(|r| r.peer == *p && r.scenario == STREAMS)
        })
        .collect();
    let Some(first) = rows.first() else {
        return;
    };
    let _ = writeln!(
        md,
        "\n### Open `subscriptions/listen` streams\n\n\
         {} idle streams, each its own connection subscribed to one resource; then {} `publish` \
         calls one after the other, each announcing `notifications/resources/updated` for that \
         resource, timed from sending the call to the update's arrival on each stream. Per \
         stream: (RSS with every stream open and idle − RSS before the first) ÷ streams. The \
         load generator reads every stream on one core, so the time to the last stream \
         includes its own work for the streams before it; the CPU shares (of the publishing \
         window, pauses between publishes included) show which side set the pace.\n",
        fmt_thr(f64::from(first.concurrency)),
        first.publishes.max(1)
    );
    table_head(
        md,
        &[
            "server",
            "open all (s)",
            "RSS before",
            "RSS with the streams",
            "per stream",
            "publish → one stream (p50 / p99)",
            "publish → every stream (median / slowest)",
            "server CPU per delivery",
            "CPU share: server / load generator",
        ],
    );
    for r in rows {
        if !r.ok() {
            let _ = writeln!(
                md,
                "| {} | **FAILED** ({}) | | | | | | | |",
                r.peer,
                r.error_samples.first().map_or("errors", String::as_str)
            );
            continue;
        }
        let _ = writeln!(
            md,
            "| {} | {:.2} | {:.1} MiB | {:.1} MiB | {} | {} / {} | {} / {} | {:.2} µs | {:.0} % / {:.0} % |",
            r.peer,
            r.open_s,
            r.rss_idle_kib as f64 / 1024.0,
            r.rss_after_kib as f64 / 1024.0,
            bytes_per_stream(r).map_or("–".into(), |b| format!("{:.1} KiB", b / 1024.0)),
            fmt_us(r.p50_us),
            fmt_us(r.p99_us),
            fmt_us(r.all_delivered_p50_us),
            fmt_us(r.all_delivered_max_us),
            r.server_cpu_us_per_call,
            100.0 * r.server_cpu_util,
            100.0 * r.load_cpu_util,
        );
    }
}

/// Latency at 1 connection across cores and on one core, with the floor beside the servers.
fn latency_floor_table(md: &mut String, runs: &Runs, machine: &Value) {
    let floor = runs.get(FLOOR, FLOOR, 1);
    let floor_same = runs.get(FLOOR, FLOOR_SAME_CORE, 1);
    let same_core_rows = PEERS
        .iter()
        .any(|peer| runs.get(peer, SAME_CORE, 1).is_some());
    if floor.is_none() && floor_same.is_none() && !same_core_rows {
        return;
    }
    let cpu = |k: &str| machine[k].as_str().unwrap_or("?").to_owned();
    let bytes = floor
        .or(floor_same)
        .filter(|r| r.request_bytes > 0)
        .map(|r| {
            format!(
                " ({} bytes out: the request with its HTTP head as the load generator sends it; \
                 {} bytes back: the ceiling's response)",
                r.request_bytes, r.response_bytes
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        md,
        "\n### Latency at 1 connection: across cores and on one core\n\n\
         Each cell: p50 / p99. The floor is a blocking `std::net` ping-pong over one TCP \
         connection (`TCP_NODELAY`) moving the same bytes as one echo call{bytes}, with no HTTP \
         parsing and no async runtime on either side: what the kernel and the machine take \
         for one round trip in that placement, which no server can beat. Across cores, each \
         call wakes an idle core twice; on one core, the latency is the work of both sides and \
         the switches between them.\n"
    );
    let mut columns = vec!["placement", "floor (no HTTP)"];
    columns.extend(PEERS.iter().map(|p| peer_heading(p)));
    columns.push("arctern / rmcp (p50)");
    table_head(md, &columns);
    let latency = |run: Option<&RunRecord>| match run {
        None => "–".into(),
        Some(r) if !r.ok() => format!("**FAILED** ({} errors)", r.errors),
        Some(r) => format!("{} / {}", fmt_us(r.p50_us), fmt_us(r.p99_us)),
    };
    for (placement, scenario, floor_run) in [
        (
            format!(
                "server on CPU {}, load generator on CPU {}",
                cpu("server_cpu"),
                cpu("load_cpu")
            ),
            "echo",
            floor,
        ),
        (
            format!("both on CPU {}", cpu("server_cpu")),
            SAME_CORE,
            floor_same,
        ),
    ] {
        let p50 = |peer| runs.ok(peer, scenario, 1).map(|r| r.p50_us);
        let mut cells = vec![placement, latency(floor_run)];
        cells.extend(PEERS.iter().map(|p| latency(runs.get(p, scenario, 1))));
        cells.push(fmt_ratio(ratio(p50("arctern"), p50("rmcp"))));
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    let floor_cpu: Vec<String> = [(floor, "across cores"), (floor_same, "on one core")]
        .into_iter()
        .filter_map(|(r, label)| {
            let r = r.filter(|r| r.ok())?;
            Some(format!(
                "{label} {} calls/s, server CPU {:.1} µs per call",
                fmt_thr(r.calls_per_s),
                r.server_cpu_us_per_call
            ))
        })
        .collect();
    if !floor_cpu.is_empty() {
        let _ = writeln!(md, "\nThe floor: {}.", floor_cpu.join("; "));
    }
}

/// The pairs of an interleaved comparison, one line each, the sides in run order, then the
/// medians; the caller writes the heading.
fn interleaved_table(md: &mut String, i: &Interleaved, ratio_header: &str) {
    let (first, second) = i.sides();
    let _ = writeln!(
        md,
        "| pair | {} | {} | {ratio_header} |",
        first.label, second.label
    );
    let _ = writeln!(md, "|---|---:|---:|---:|");
    for (n, (p, r)) in i.pairs.iter().zip(&i.pair_ratios).enumerate() {
        let ((thr_a, cpu_a), (thr_b, cpu_b)) = i.in_run_order(p);
        let _ = writeln!(
            md,
            "| {} | {} ({cpu_a:.1} µs) | {} ({cpu_b:.1} µs) | {} |",
            n + 1,
            fmt_thr(thr_a),
            fmt_thr(thr_b),
            fmt_ratio(Some(*r)),
        );
    }
    let _ = writeln!(
        md,
        "| median (spread) | {} ({:.1} %) | {} ({:.1} %) | {} ({:.1} %) |",
        fmt_thr(first.median_calls_per_s),
        100.0 * first.spread,
        fmt_thr(second.median_calls_per_s),
        100.0 * second.spread,
        fmt_ratio(Some(i.ratio)),
        100.0 * spread(&i.pair_ratios, i.ratio),
    );
    let _ = writeln!(
        md,
        "\nSpread: (max − min) / median of the runs in that column. The ratio of the two \
         median throughputs is {}.",
        fmt_ratio(Some(i.ratio_of_medians))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with `errors` errors (0: a successful run).
    fn run(
        peer: &str,
        scenario: &str,
        c: u32,
        calls_per_s: f64,
        cpu: f64,
        errors: u64,
    ) -> RunRecord {
        RunRecord {
            peer: peer.into(),
            scenario: scenario.into(),
            concurrency: c,
            duration_s: 5.0,
            calls: (calls_per_s * 5.0) as u64,
            requests_per_call: 1,
            errors,
            calls_per_s,
            server_cpu_us_per_call: cpu,
            ..RunRecord::default()
        }
    }

    fn pair(arctern: f64, rmcp: f64) -> [RunRecord; 2] {
        [
            run("arctern", STDIO_PAIR, 32, arctern, 5.0, 0),
            run("rmcp", STDIO_PAIR, 32, rmcp, 10.0, 0),
        ]
    }

    /// The single 10-s stdio rows at 32 in flight: 1.95× apart.
    fn single_rows() -> Vec<RunRecord> {
        let mut a = run("arctern", "stdio", 32, 195_000.0, 6.0, 0);
        let mut r = run("rmcp", "stdio", 32, 100_000.0, 12.0, 0);
        a.duration_s = 10.0;
        r.duration_s = 10.0;
        vec![a, r]
    }

    fn stdio_target(runs: &Runs) -> Target {
        let pairs = Interleaved::stdio(runs);
        targets(
            runs,
            &BTreeMap::new(),
            &LatencyFloor::new(runs),
            None,
            pairs.as_ref(),
        )
        .into_iter()
        .find(|t| t.target == "stdio throughput at 32 in flight vs rmcp")
        .unwrap()
    }

    fn approx(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn stdio_pairs_match_in_run_order_and_the_target_takes_the_median_ratio() {
        // Other rows between the pairs, as in a real run, must not disturb the matching.
        let mut all = single_rows();
        for (a, r) in [
            (220_000.0, 100_000.0),
            (150_000.0, 75_000.0),
            (190_000.0, 100_000.0),
        ] {
            all.extend(pair(a, r));
            all.push(run("arctern", "stdio", 1, 11_000.0, 40.0, 0));
        }
        let runs = Runs { all };
        let i = Interleaved::stdio(&runs).unwrap();
        assert_eq!(i.pairs.len(), 3);
        assert_eq!(i.pairs[1].subject_calls_per_s, 150_000.0);
        assert_eq!(i.pairs[1].reference_calls_per_s, 75_000.0);
        assert_eq!(i.pair_ratios, vec![2.2, 2.0, 1.9]);
        assert_eq!(i.ratio, 2.0);
        // The medians (190,000 and 100,000) give another figure: the ratio of the medians.
        assert!(approx(i.ratio_of_medians, 1.9));
        assert_eq!(i.cpu_ratio, Some(0.5));
        assert_eq!((i.subject.runs, i.reference.runs), (3, 3));
        assert!(approx(i.subject.spread, 70_000.0 / 190_000.0));

        let t = stdio_target(&runs);
        assert_eq!(t.measured, Some(2.0));
        assert_eq!(t.met, Some(true));
        assert!(t.note.starts_with(
            "median of the per-pair ratios over 3 pairs of interleaved 5-s runs (arctern, rmcp, \
             arctern, …): 2.00× (pairs: 2.20×, 2.00×, 1.90×); ratio of the median throughputs: \
             1.90× (arctern 190,000 calls/s, spread 36.8 % over 3 runs; rmcp 100,000 calls/s, \
             spread 25.0 % over 3 runs;"
        ));
        assert!(t.note.contains(
            "server CPU per call (medians): arctern 5.0 µs, rmcp 10.0 µs (2.00× cheaper)"
        ));
        assert!(
            t.note.ends_with("the single 10-s rows: 1.95×"),
            "{}",
            t.note
        );
    }

    #[test]
    fn a_failed_run_drops_its_pair_only() {
        let mut all = Vec::new();
        all.extend(pair(220_000.0, 100_000.0));
        let [mut a, r] = pair(300_000.0, 100_000.0);
        a.errors = 2;
        all.extend([a, r]);
        let [a, mut r] = pair(190_000.0, 100_000.0);
        r.errors = 1;
        all.extend([a, r]);
        all.extend(pair(180_000.0, 100_000.0));
        let runs = Runs { all };
        let i = Interleaved::stdio(&runs).unwrap();
        assert_eq!(i.pair_ratios, vec![2.2, 1.8]);
        assert!(approx(i.ratio, 2.0));
        // Each side's medians count its own successful runs, failed ones left out.
        assert_eq!((i.subject.runs, i.reference.runs), (3, 3));
        assert_eq!(i.subject.median_calls_per_s, 190_000.0);
        let t = stdio_target(&runs);
        assert!(approx(t.measured.unwrap(), 2.0));
        assert!(t.note.contains("over 2 pairs"), "{}", t.note);
        assert!(t.note.ends_with("the single rows: –"), "{}", t.note);
    }

    #[test]
    fn without_a_complete_pair_the_target_uses_the_single_rows() {
        // Each side has a successful run, but never in the same pair.
        let mut all = single_rows();
        let [a, mut r] = pair(220_000.0, 100_000.0);
        r.errors = 3;
        all.extend([a, r]);
        let [mut a, r] = pair(200_000.0, 90_000.0);
        a.errors = 1;
        all.extend([a, r]);
        let runs = Runs { all };
        let i = Interleaved::stdio(&runs).unwrap();
        assert!(i.pairs.is_empty());
        let t = stdio_target(&runs);
        assert!(approx(t.measured.unwrap(), 1.95));
        assert_eq!(t.met, Some(false));
        assert_eq!(
            t.note,
            "one run each (no complete interleaved pair); server CPU per call: arctern 6.0 µs, \
             rmcp 12.0 µs (2.00× cheaper)"
        );
    }

    #[test]
    fn without_pairs_or_rows_the_stdio_target_is_missing() {
        let runs = Runs { all: Vec::new() };
        assert!(Interleaved::stdio(&runs).is_none());
        let t = stdio_target(&runs);
        assert_eq!(t.measured, None);
        assert_eq!(t.met, None);
        assert_eq!(t.note, "a run is missing or failed");
    }

    #[test]
    fn the_100_tool_pairs_divide_100_tools_by_2() {
        let mut all = Vec::new();
        for (two, many) in [
            (86_000.0, 81_700.0),
            (85_000.0, 87_550.0),
            (80_000.0, 72_000.0),
        ] {
            all.push(run("arctern", PAIR_TWO, 32, two, 11.0, 0));
            all.push(run("arctern", PAIR_MANY, 32, many, 11.0, 0));
        }
        let runs = Runs { all };
        let i = Interleaved::many_tools(&runs).unwrap();
        let ratios: Vec<f64> = i.pair_ratios.iter().map(|r| (r * 100.0).round()).collect();
        assert_eq!(ratios, vec![95.0, 103.0, 90.0]);
        assert!(approx(i.ratio, 0.95));
        assert_eq!(i.cpu_ratio, Some(1.0));
    }

    fn target<'a>(all: &'a [Target], name: &str) -> &'a Target {
        all.iter()
            .find(|t| t.target == name)
            .unwrap_or_else(|| panic!("no target {name:?}"))
    }

    fn all_targets(runs: &Runs) -> Vec<Target> {
        targets(runs, &BTreeMap::new(), &LatencyFloor::new(runs), None, None)
    }

    /// One open-streams run: `kib_before` and `kib_open` of server RSS, 1,000 streams.
    fn streams_run(peer: &str, kib_before: u64, kib_open: u64) -> RunRecord {
        RunRecord {
            peer: peer.into(),
            scenario: STREAMS.into(),
            concurrency: 1000,
            calls: 5000,
            requests_per_call: 1,
            p50_us: 900.0,
            p99_us: 4000.0,
            rss_idle_kib: kib_before,
            rss_after_kib: kib_open,
            publishes: 5,
            all_delivered_p50_us: 4100.0,
            all_delivered_max_us: 5000.0,
            open_s: 0.5,
            server_cpu_us_per_call: 1.5,
            ..RunRecord::default()
        }
    }

    #[test]
    fn the_flow_and_ceiling_targets_use_the_32_connection_rows() {
        let runs = Runs {
            all: vec![
                run("ceiling", "echo", 32, 100_000.0, 7.0, 0),
                run("arctern", "echo", 32, 80_000.0, 12.0, 0),
                run("arctern", "confirm", 32, 30_000.0, 33.0, 0),
                run("rmcp", "echo", 32, 20_000.0, 42.0, 0),
                run("rmcp", "confirm", 32, 8_000.0, 100.0, 0),
                run("typescript", "confirm", 32, 300.0, 3300.0, 0),
            ],
        };
        let all = all_targets(&runs);
        let flow = target(
            &all,
            "2-round confirm flow vs one echo call, throughput at 32 connections",
        );
        assert!(approx(flow.measured.unwrap(), 80.0 / 30.0));
        assert_eq!(flow.met, Some(false));
        assert!(
            flow.note
                .contains("per flow 33.0 µs, per echo call 12.0 µs (2.75×)"),
            "{}",
            flow.note
        );
        assert!(flow.note.ends_with("rmcp: 2.50×"), "{}", flow.note);
        let share = target(
            &all,
            "echo throughput at 32 connections, share of the ceiling",
        );
        assert!(approx(share.measured.unwrap(), 0.8));
        assert_eq!(share.met, Some(false));
        let ts = target(
            &all,
            "server CPU per confirm flow, TypeScript SDK / arctern (32 connections)",
        );
        assert!(approx(ts.measured.unwrap(), 100.0));
        assert_eq!(ts.met, Some(true));
        assert!(
            ts.note.starts_with("throughput: 100× the TypeScript SDK's"),
            "{}",
            ts.note
        );

        let md = markdown(&runs, &BTreeMap::new(), &all, None, None, &Value::Null, &[]);
        assert!(md.contains(
            "| echo throughput at 32 connections, share of the ceiling | 80 % | ≥ 90 % | **no** |"
        ));
        assert!(md.contains(
            "| scenario | ceiling | arctern | rmcp (fair config) | TypeScript SDK | Python reference \
             | arctern / rmcp | arctern / TypeScript | arctern / Python |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        ));
        assert!(md.contains(
            "| HTTP 2-round `confirm` flow, 32 connections | – | 30,000 (0 µs / 0 µs) | 8,000 (0 µs \
             / 0 µs) | 300 (0 µs / 0 µs) | – | 3.75× | 100× | – |"
        ));
    }

    #[test]
    fn streams_give_memory_per_stream_and_its_target() {
        let runs = Runs {
            all: vec![
                streams_run("arctern", 6000, 18_000),
                streams_run("rmcp", 6000, 56_000),
                streams_run("typescript", 70_000, 100_000),
            ],
        };
        assert!(approx(
            bytes_per_stream(&runs.all[0]).unwrap(),
            12.0 * 1024.0
        ));
        let all = all_targets(&runs);
        let t = target(&all, "memory per idle subscriptions/listen stream vs rmcp");
        assert!(approx(t.measured.unwrap(), 0.24));
        assert_eq!(t.met, Some(true));
        assert_eq!(
            t.note,
            "per stream with 1,000 open: arctern 12.0 KiB, rmcp 50.0 KiB, typescript 30.0 KiB"
        );
        let md = markdown(&runs, &BTreeMap::new(), &all, None, None, &Value::Null, &[]);
        assert!(md.contains("### Open `subscriptions/listen` streams\n\n1,000 idle streams"));
        assert!(md.contains(
            "| arctern | 0.50 | 5.9 MiB | 17.6 MiB | 12.0 KiB | 900 µs / 4.00 ms | 4.10 ms / 5.00 ms \
             | 1.50 µs | 0 % / 0 % |"
        ));
        // A failed run says so instead of inventing figures.
        let mut failed = streams_run("rmcp", 6000, 0);
        failed.errors = 1;
        failed.error_samples = vec!["stream 7: the server closed the stream".into()];
        let runs = Runs { all: vec![failed] };
        assert_eq!(bytes_per_stream(&runs.all[0]), None);
        let md = markdown(&runs, &BTreeMap::new(), &[], None, None, &Value::Null, &[]);
        assert!(md.contains("| rmcp | **FAILED** (stream 7: the server closed the stream) |"));
    }

    #[test]
    fn the_markdown_lists_the_stdio_pairs_in_run_order() {
        let mut all = single_rows();
        all.extend(pair(220_000.0, 100_000.0));
        all.extend(pair(150_000.0, 75_000.0));
        let runs = Runs { all };
        let stdio = Interleaved::stdio(&runs);
        let md = markdown(
            &runs,
            &BTreeMap::new(),
            &[],
            None,
            stdio.as_ref(),
            &Value::Null,
            &[],
        );
        let section = md
            .split("### stdio at 32 in flight, interleaved (arctern vs rmcp)\n")
            .nth(1)
            .unwrap();
        assert!(section.contains(
            "| pair | arctern | rmcp | arctern / rmcp |\n\
             |---|---:|---:|---:|\n\
             | 1 | 220,000 (5.0 µs) | 100,000 (10.0 µs) | 2.20× |\n\
             | 2 | 150,000 (5.0 µs) | 75,000 (10.0 µs) | 2.00× |\n\
             | median (spread) | 185,000 (37.8 %) | 87,500 (28.6 %) | 2.10× (9.5 %) |\n"
        ));
        assert!(!md.contains("### 100 tools vs 2 tools"));
    }
}
