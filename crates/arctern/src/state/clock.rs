//! Time sources for token expiry.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time, in whole seconds since the Unix epoch.
///
/// Expiry is checked at one-second resolution, which is ample for time windows of minutes.
/// Every server process that verifies another's tokens must have a roughly synchronised
/// clock (see [`StateSealerBuilder::clock_skew`](super::StateSealerBuilder::clock_skew)).
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time as Unix seconds.
    fn now_unix(&self) -> u64;
}

/// The system's wall clock ([`SystemTime::now`]). A clock set before 1970 reads as 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs())
    }
}

/// A clock that only moves when told to, for tests.
///
/// Clones share the same time, so a test can keep one handle and give another to a
/// [`StateSealer`](super::StateSealer):
///
/// ```
/// use arctern::state::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(1_000);
/// let shared = clock.clone();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(shared.now_unix(), 1_005);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `unix_seconds`.
    pub fn new(unix_seconds: u64) -> Self {
        ManualClock {
            now: Arc::new(AtomicU64::new(unix_seconds)),
        }
    }

    /// A clock starting at the current system time.
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now_unix())
    }

    /// Sets the time (for every clone).
    pub fn set(&self, unix_seconds: u64) {
        self.now.store(unix_seconds, Ordering::Relaxed);
    }

    /// Moves the time forward by `by`, rounded down to whole seconds (for every clone).
    pub fn advance(&self, by: Duration) {
        let secs = by.as_secs();
        // `fetch_update` never fails with a closure that always returns `Some`.
        let _ = self
            .now
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_add(secs))
            });
    }

    /// Moves the time back by `by`, rounded down to whole seconds (for every clone); stops at 0.
    pub fn rewind(&self, by: Duration) {
        let secs = by.as_secs();
        let _ = self
            .now
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_sub(secs))
            });
    }
}

impl Clock for ManualClock {
    fn now_unix(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}
