//! One completion per flow: a store the request-state boundary asks before a round runs.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::state::FlowId;

/// What [`OneTimeStore`] methods return.
pub type StoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, OneTimeStoreError>> + Send + 'a>>;

/// The answer to [`OneTimeStore::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The round may run; the caller ends the claim with [`OneTimeStore::finish`].
    Granted,
    /// Another round of the flow is running.
    Busy,
    /// The flow has completed.
    Completed,
}

/// Makes every multi round-trip flow complete at most once.
///
/// Without a store, a client may present a round's sealed request state again while it is
/// valid, and the handler runs again with the same answers (see the
/// [module docs](super)). With one, the server's request-state boundary claims the flow before
/// every later round (round 1 onwards; round 0 has no state to replay) and refuses the
/// round with the fixed request-state error if the flow has completed or another round of it
/// is running. A round that asks more questions releases its claim; one that ends the call
/// (with a result or an error) completes the flow, which stays refused until `expires`, after
/// which no token of the flow is valid anyway.
///
/// A store that fails (`Err`) fails the round closed: the client gets an internal error and
/// the handler does not run. A round whose request is cancelled while it runs keeps its claim
/// until `expires`: whether its side effect happened is unknown, so the flow is not run again.
///
/// [`MemoryOneTimeStore`] serves one process; a fleet needs a shared store (every instance
/// must see every claim).
pub trait OneTimeStore: Send + Sync + 'static {
    /// Claims `flow` for one round. The store may forget the claim after `expires`.
    fn claim(&self, flow: FlowId, expires: SystemTime) -> StoreFuture<'_, Claim>;

    /// Ends a claim: `completed` marks the flow completed until `expires`; otherwise the
    /// claim is released and the next round of the flow may run.
    fn finish(&self, flow: FlowId, completed: bool, expires: SystemTime) -> StoreFuture<'_, ()>;
}

/// A [`OneTimeStore`] failed (unreachable, full...).
#[derive(Debug)]
pub struct OneTimeStoreError(Box<dyn std::error::Error + Send + Sync>);

impl OneTimeStoreError {
    /// An error with this cause.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        OneTimeStoreError(cause.into())
    }
}

impl fmt::Display for OneTimeStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one-time store: {}", self.0)
    }
}

impl std::error::Error for OneTimeStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// A [`OneTimeStore`] in this process's memory, for one server process.
///
/// Holds at most `capacity` flows (default 100,000, a few megabytes); expired ones are
/// dropped when room is needed. When every entry is still live, new claims fail (closed).
///
/// ```
/// use arctern::server::McpServer;
/// use arctern::server::mrtr::MemoryOneTimeStore;
///
/// let server = McpServer::new("bookings").one_time_store(MemoryOneTimeStore::new());
/// ```
#[derive(Debug)]
pub struct MemoryOneTimeStore {
    flows: Mutex<HashMap<FlowId, Entry>>,
    capacity: usize,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    completed: bool,
    expires: SystemTime,
}

/// Flows a [`MemoryOneTimeStore`] holds by default.
pub const DEFAULT_ONE_TIME_CAPACITY: usize = 100_000;

impl Default for MemoryOneTimeStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryOneTimeStore {
    /// A store holding up to [`DEFAULT_ONE_TIME_CAPACITY`] flows.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_ONE_TIME_CAPACITY)
    }

    /// A store holding up to `capacity` flows.
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryOneTimeStore {
            flows: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// How many flows the store holds now (claimed or completed, expired ones included
    /// until they are dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the store holds no flows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FlowId, Entry>> {
        self.flows.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn claim_now(&self, flow: FlowId, expires: SystemTime) -> Result<Claim, OneTimeStoreError> {
        let now = SystemTime::now();
        let mut flows = self.lock();
        if let Some(entry) = flows.get(&flow)
            && entry.expires > now
        {
            return Ok(if entry.completed {
                Claim::Completed
            } else {
                Claim::Busy
            });
        }
        if flows.len() >= self.capacity && !flows.contains_key(&flow) {
            flows.retain(|_, e| e.expires > now);
            if flows.len() >= self.capacity {
                return Err(OneTimeStoreError::new(format!(
                    "full: {} live flows",
                    flows.len()
                )));
            }
        }
        flows.insert(
            flow,
            Entry {
                completed: false,
                expires,
            },
        );
        Ok(Claim::Granted)
    }

    fn finish_now(&self, flow: FlowId, completed: bool, expires: SystemTime) {
        let mut flows = self.lock();
        if completed {
            flows.insert(
                flow,
                Entry {
                    completed: true,
                    expires,
                },
            );
        } else {
            flows.remove(&flow);
        }
    }
}

impl OneTimeStore for MemoryOneTimeStore {
    fn claim(&self, flow: FlowId, expires: SystemTime) -> StoreFuture<'_, Claim> {
        let claimed = self.claim_now(flow, expires);
        Box::pin(async move { claimed })
    }

    fn finish(&self, flow: FlowId, completed: bool, expires: SystemTime) -> StoreFuture<'_, ()> {
        self.finish_now(flow, completed, expires);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn id(n: u8) -> FlowId {
        FlowId::from_bytes([n; 16])
    }

    #[tokio::test]
    async fn a_flow_completes_once() {
        let store = MemoryOneTimeStore::new();
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(store.claim(id(1), later).await.unwrap(), Claim::Granted);
        assert_eq!(store.claim(id(1), later).await.unwrap(), Claim::Busy);
        // Another flow is independent.
        assert_eq!(store.claim(id(2), later).await.unwrap(), Claim::Granted);
        // A round that asks more releases its claim.
        store.finish(id(1), false, later).await.unwrap();
        assert_eq!(store.claim(id(1), later).await.unwrap(), Claim::Granted);
        store.finish(id(1), true, later).await.unwrap();
        assert_eq!(store.claim(id(1), later).await.unwrap(), Claim::Completed);
    }

    #[tokio::test]
    async fn expired_entries_make_room_and_a_full_store_fails_closed() {
        let store = MemoryOneTimeStore::with_capacity(2);
        let past = SystemTime::now() - Duration::from_secs(1);
        let later = SystemTime::now() + Duration::from_secs(60);
        store.claim(id(1), past).await.unwrap();
        store.finish(id(1), true, past).await.unwrap();
        // Expired: claimable again, and its room reusable.
        assert_eq!(store.claim(id(1), later).await.unwrap(), Claim::Granted);
        store.claim(id(3), past).await.unwrap();
        assert_eq!(store.claim(id(2), later).await.unwrap(), Claim::Granted);
        assert_eq!(store.len(), 2);
        let full = store.claim(id(4), later).await.unwrap_err();
        assert!(full.to_string().contains("full"), "{full}");
    }
}
