//! Log lines that a peer can trigger at will, at most one per interval.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lets one log line through per interval and counts the ones held back, so that a client
/// sending bad input on purpose cannot flood the log.
#[derive(Debug)]
pub(crate) struct RateLimited {
    interval_ms: u64,
    /// When the last line went out, in milliseconds since the first use plus one (0:
    /// never).
    last: AtomicU64,
    suppressed: AtomicU64,
}

fn now_ms() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl RateLimited {
    /// At most one line per `interval`.
    pub(crate) const fn new(interval: Duration) -> Self {
        RateLimited {
            interval_ms: interval.as_millis() as u64,
            last: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Runs `log` with the number of lines held back since the last one, unless a line
    /// went out less than an interval ago; returns whether it ran.
    pub(crate) fn log(&self, log: impl FnOnce(u64)) -> bool {
        let now = now_ms().saturating_add(1);
        let last = self.last.load(Ordering::Acquire);
        let due = last == 0 || now.saturating_sub(last) >= self.interval_ms;
        if due
            && self
                .last
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            log(self.suppressed.swap(0, Ordering::AcqRel));
            true
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_a_count_of_the_rest() {
        let limit = RateLimited::new(Duration::from_secs(3600));
        let mut seen = Vec::new();
        for _ in 0..5 {
            limit.log(|suppressed| seen.push(suppressed));
        }
        assert_eq!(seen, vec![0]);
        let every_time = RateLimited::new(Duration::ZERO);
        assert!(every_time.log(|_| {}));
        assert!(every_time.log(|suppressed| assert_eq!(suppressed, 0)));
        let held = RateLimited::new(Duration::from_secs(3600));
        held.log(|_| {});
        held.log(|_| {});
        let mut count = None;
        // Made due: the line reports the one held back.
        held.last.store(0, Ordering::Release);
        held.log(|suppressed| count = Some(suppressed));
        assert_eq!(count, Some(1));
    }
}
