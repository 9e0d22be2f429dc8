//! Limits on what one connection, and every connection of a server together, may have in
//! flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default [`ConnectionLimits::max_in_flight`]: 1024 requests per connection.
pub const DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION: usize = 1024;
/// The default [`ConnectionLimits::max_in_flight_total`]: 16 384 requests over every
/// connection of a server.
pub const DEFAULT_MAX_IN_FLIGHT_TOTAL: usize = 16 * 1024;

/// How many requests a [`Connection`](super::Connection) may have in flight, and how many
/// every connection of one server may have together (a stdio process, the 2025-era
/// sessions of Streamable HTTP, in-memory and custom transports; 2026-07-28 requests over
/// HTTP are independent and bounded by the HTTP server's own in-flight cap).
///
/// A request beyond either limit is answered at once with a `-32603` error saying which
/// limit it met (its `data` holds `{"limit": N, "scope": "connection"|"server"}`), and runs
/// nothing. Open `subscriptions/listen` streams and legacy requests waiting for the
/// client's answer count as in flight.
///
/// ```
/// use arctern::server::ServerConfig;
/// use arctern::server::connection::ConnectionLimits;
///
/// let config = ServerConfig::new("demo", "1.0.0")
///     .connection_limits(ConnectionLimits::default().max_in_flight(64).max_in_flight_total(4096));
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Most requests in flight on one connection (default
    /// [`DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION`]).
    pub max_in_flight: usize,
    /// Most requests in flight over every connection of the server (default
    /// [`DEFAULT_MAX_IN_FLIGHT_TOTAL`]).
    pub max_in_flight_total: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION,
            max_in_flight_total: DEFAULT_MAX_IN_FLIGHT_TOTAL,
        }
    }
}

impl ConnectionLimits {
    /// Sets the most requests in flight on one connection (at least 1).
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.max(1);
        self
    }

    /// Sets the most requests in flight over every connection of the server (at least 1).
    pub fn max_in_flight_total(mut self, requests: usize) -> Self {
        self.max_in_flight_total = requests.max(1);
        self
    }
}

/// The requests in flight over every connection of one server.
#[derive(Debug, Default)]
pub(crate) struct TotalInFlight(AtomicUsize);

impl TotalInFlight {
    /// Takes a place if fewer than `limit` are taken.
    pub(crate) fn try_take(self: &Arc<Self>, limit: usize) -> Option<TotalPlace> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()?;
        Some(TotalPlace(self.clone()))
    }

    /// Places taken.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// One place among the server's requests in flight, given back on drop.
#[derive(Debug)]
pub(crate) struct TotalPlace(Arc<TotalInFlight>);

impl Drop for TotalPlace {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::AcqRel);
    }
}
