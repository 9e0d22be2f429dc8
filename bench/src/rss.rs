//! Resident set size of a process, read from `/proc/<pid>/status`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often [`Sampler`] reads the server's RSS.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// `VmRSS` of `pid` in KiB, or `None` when the process is gone or the field is missing.
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_field_kib(&status, "VmRSS:")
}

/// One `<field>   123 kB` line of a `/proc/<pid>/status` text, in KiB.
pub fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// Samples a process's RSS every [`SAMPLE_EVERY`] on the current tokio runtime and keeps
/// the highest value seen.
#[derive(Debug)]
pub struct Sampler {
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `pid`.
    pub fn start(pid: u32) -> Sampler {
        let peak = Arc::new(AtomicU64::new(vm_rss_kib(pid).unwrap_or(0)));
        let task = tokio::spawn({
            let peak = peak.clone();
            async move {
                let mut tick = tokio::time::interval(SAMPLE_EVERY);
                loop {
                    tick.tick().await;
                    if let Some(kib) = vm_rss_kib(pid) {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                }
            }
        });
        Sampler { peak, task }
    }

    /// Stops sampling and returns the peak in KiB (0 if nothing could be read).
    pub fn stop(self) -> u64 {
        self.task.abort();
        self.peak.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_lines() {
        let status = "Name:\tx\nVmHWM:\t  9000 kB\nVmRSS:\t    5120 kB\n";
        assert_eq!(status_field_kib(status, "VmRSS:"), Some(5120));
        assert_eq!(status_field_kib(status, "VmHWM:"), Some(9000));
        assert_eq!(status_field_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn reads_own_rss() {
        assert!(vm_rss_kib(std::process::id()).unwrap() > 0);
    }
}
