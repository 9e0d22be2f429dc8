//! What every measured run shares: the latency histogram with error counting, and the
//! measured window after the warm-up. The load generator and the floor use the same code, so
//! their percentiles are computed the same way.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::record::{RunRecord, loadavg_1m};

/// How many error messages a run keeps.
pub const ERROR_SAMPLES: usize = 5;

/// Latencies and errors of one worker (or one stdio pipe).
pub struct Tally {
    histogram: Histogram<u64>,
    /// Failed calls.
    pub errors: u64,
    /// The first few error messages.
    pub samples: Vec<String>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally::new()
    }
}

impl Tally {
    /// An empty tally (latencies from 1 µs to 120 s, 3 significant digits).
    pub fn new() -> Tally {
        Tally {
            histogram: Histogram::new_with_bounds(1, 120_000_000, 3).expect("valid bounds"),
            errors: 0,
            samples: Vec::new(),
        }
    }

    /// Records one call's latency (in whole microseconds, at least 1).
    pub fn record(&mut self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        self.histogram.saturating_record(us);
    }

    /// How many latencies were recorded.
    pub fn len(&self) -> u64 {
        self.histogram.len()
    }

    /// Whether no latency was recorded.
    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The latency at quantile `q` (0 to 1), microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        self.histogram.value_at_quantile(q) as f64
    }

    /// Counts one failed call, keeping its message if there is room.
    pub fn error(&mut self, message: String) {
        self.errors += 1;
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(message);
        }
    }

    /// Adds another tally's latencies and errors to this one.
    pub fn merge(&mut self, other: Tally) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms with the same bounds");
        self.errors += other.errors;
        for s in other.samples {
            if self.samples.len() < ERROR_SAMPLES {
                self.samples.push(s);
            }
        }
    }

    /// The record of a run that measured for `measured`: `base` with the calls, errors,
    /// throughput, percentiles and load average filled in.
    pub fn into_record(self, base: RunRecord, measured: Duration) -> RunRecord {
        let h = &self.histogram;
        let calls = h.len();
        let secs = measured.as_secs_f64();
        RunRecord {
            duration_s: secs,
            calls,
            errors: self.errors,
            error_samples: self.samples,
            calls_per_s: if secs > 0.0 { calls as f64 / secs } else { 0.0 },
            p50_us: h.value_at_quantile(0.50) as f64,
            p90_us: h.value_at_quantile(0.90) as f64,
            p99_us: h.value_at_quantile(0.99) as f64,
            max_us: h.max() as f64,
            loadavg_1m: loadavg_1m(),
            ..base
        }
    }
}

/// The measured window shared by all workers of a run.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// When measuring starts (after the warm-up).
    pub start: Instant,
    /// When measuring ends.
    pub end: Instant,
}

impl Window {
    /// The window that starts `warmup` seconds from now and lasts `duration` seconds.
    pub fn after_warmup(warmup: f64, duration: f64) -> Window {
        let start = Instant::now() + Duration::from_secs_f64(warmup);
        Window {
            start,
            end: start + Duration::from_secs_f64(duration),
        }
    }

    /// Whether a call that ran from `started` to `ended` counts.
    pub fn contains(&self, started: Instant, ended: Instant) -> bool {
        started >= self.start && ended <= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_errors_reach_the_record() {
        let mut a = Tally::new();
        for us in 1..=100 {
            a.record(Duration::from_micros(us));
        }
        let mut b = Tally::new();
        b.error("boom".into());
        a.merge(b);
        let record = a.into_record(RunRecord::default(), Duration::from_secs(2));
        assert_eq!(record.calls, 100);
        assert_eq!(record.errors, 1);
        assert_eq!(record.error_samples, ["boom"]);
        assert_eq!(record.calls_per_s, 50.0);
        assert_eq!(record.p50_us, 50.0);
        assert_eq!(record.p99_us, 99.0);
        assert_eq!(record.max_us, 100.0);
    }

    #[test]
    fn a_call_counts_only_inside_the_window() {
        let w = Window::after_warmup(0.0, 1.0);
        assert!(w.contains(w.start, w.end));
        assert!(!w.contains(w.start - Duration::from_millis(1), w.start));
        assert!(!w.contains(w.start, w.end + Duration::from_millis(1)));
    }
}
