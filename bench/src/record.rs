//! The record one measured run writes (one JSON object per line in a results file), read
//! back by the report.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One measured run of one scenario against one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunRecord {
    /// The server measured: `arctern`, `rmcp`, `python`, `ceiling`, or `floor` (the
    /// blocking TCP ping-pong without HTTP).
    pub peer: String,
    /// The scenario: `echo`, `echo-samecore` (the load generator on the server's core),
    /// `confirm`, `list100`, `echo100`, `echo-pair` and `echo100-pair` (the interleaved
    /// 2-tool / 100-tool comparison), `stdio`, `stdio-pair` (the interleaved arctern / rmcp
    /// comparison), `startup-http`, `startup-stdio`, `floor`, `floor-samecore`, `streams`
    /// (idle `subscriptions/listen` streams and the delivery of published updates to all of
    /// them).
    pub scenario: String,
    /// Connections (HTTP), requests in flight (stdio), repetitions (startup), or open
    /// `subscriptions/listen` streams (streams).
    pub concurrency: u32,
    /// Measured seconds (after warm-up).
    pub duration_s: f64,
    /// Completed measured calls; a `confirm` call is a complete two-round flow. For
    /// `streams`: updates delivered (streams × publishes).
    pub calls: u64,
    /// HTTP requests (or stdio messages) per call: 2 for `confirm`, else 1.
    pub requests_per_call: u32,
    /// Failed calls: transport errors, wrong status, wrong id, wrong content. A run with
    /// errors is reported as failed.
    pub errors: u64,
    /// The first few error messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_samples: Vec<String>,
    /// Calls per second.
    pub calls_per_s: f64,
    /// Latency percentiles of a call, in microseconds (the whole flow for `confirm`; time to
    /// the first answered request for startup; for `streams`, from sending the `publish` call
    /// to the update's arrival on one stream, over every delivery).
    pub p50_us: f64,
    /// 90th percentile, microseconds.
    pub p90_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// Slowest call, microseconds.
    pub max_us: f64,
    /// Server RSS before the first measured request, KiB (HTTP: before any request; stdio:
    /// after the first answered request; startup: right after the first answer; streams:
    /// after one `publish` call, before any stream is opened).
    pub rss_idle_kib: u64,
    /// Highest server RSS sampled every 200 ms during the run, KiB.
    pub rss_peak_kib: u64,
    /// Server RSS right after the run, KiB (streams: with every stream open and idle, before
    /// the first publish).
    pub rss_after_kib: u64,
    /// Server CPU time (user + system, all threads) per measured call during the measured
    /// window, microseconds (streams: per delivered update, over the publishes); 0 when unknown. Unlike throughput, it does not depend on what
    /// else runs on the server's core.
    #[serde(default)]
    pub server_cpu_us_per_call: f64,
    /// Share of the measured window the server spent on a CPU (1.0 = its core saturated).
    #[serde(default)]
    pub server_cpu_util: f64,
    /// Share of the measured window the load generator spent on a CPU; near 1.0 it, not the
    /// server, limited throughput.
    #[serde(default)]
    pub load_cpu_util: f64,
    /// The 1-minute load average when the run ended (other work on the machine shows here).
    pub loadavg_1m: f64,
    /// `streams`: how many `publish` calls were measured; 0 for other scenarios. (For
    /// `streams`, the CPU shares above cover the publishing window.)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub publishes: u64,
    /// `streams`: the median over the publishes of the time from sending `publish` to the
    /// update's arrival on the last of the streams, microseconds; 0 for other scenarios.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub all_delivered_p50_us: f64,
    /// `streams`: the slowest publish's time to the last stream, microseconds.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub all_delivered_max_us: f64,
    /// `streams`: seconds to open every stream and receive every acknowledgement.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub open_s: f64,
    /// HTTPS rows: full TLS handshakes timed before the measured run (a fresh TCP
    /// connection each, no session resumption, closed right after); 0 over plain HTTP.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handshakes: u64,
    /// HTTPS rows: median time from starting to connect to the client's end of the TLS
    /// handshake, microseconds.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub handshake_p50_us: f64,
    /// HTTPS rows: 99th percentile of the handshake time, microseconds.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub handshake_p99_us: f64,
    /// HTTPS rows: the server's CPU time per handshake (accepting the connection, the
    /// handshake, and closing), microseconds.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub handshake_server_cpu_us: f64,
    /// Bytes of one request on the wire, when fixed (the floor); 0 when not recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub request_bytes: u64,
    /// Bytes of one response on the wire, when fixed (the floor); 0 when not recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub response_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}

impl RunRecord {
    /// Whether the run had no errors and measured at least one call.
    pub fn ok(&self) -> bool {
        self.errors == 0 && self.calls > 0
    }

    /// One line summing the run up, for the terminal.
    pub fn summary(&self) -> String {
        let status = if self.ok() { "ok" } else { "FAILED" };
        format!(
            "{:<8} {:<14} c={:<3} {:>10.0} calls/s  p50 {:>8.1} us  p90 {:>8.1} us  p99 {:>8.1} us  \
             cpu/call {:.1} us  cpu server/load {:.0}%/{:.0}%  \
             rss idle/peak/after {}/{}/{} KiB  errors {}  load {:.2}  [{status}]",
            self.peer,
            self.scenario,
            self.concurrency,
            self.calls_per_s,
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.server_cpu_us_per_call,
            100.0 * self.server_cpu_util,
            100.0 * self.load_cpu_util,
            self.rss_idle_kib,
            self.rss_peak_kib,
            self.rss_after_kib,
            self.errors,
            self.loadavg_1m,
        )
    }

    /// Appends the record as one JSON line to `path`.
    pub fn append_to(&self, path: &Path) -> std::io::Result<()> {
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        writeln!(file, "{}", serde_json::to_string(self)?)
    }
}

/// The 1-minute load average, or 0 if it cannot be read.
pub fn loadavg_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}
