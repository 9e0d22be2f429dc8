//! The requests a connection is serving, by id, for `notifications/cancelled` and draining.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arctern_types::RequestId;
use futures::future::AbortHandle;
use tokio::sync::Notify;

/// Shards of the map, so that requests registering and finishing on many threads rarely
/// contend on one lock.
const SHARDS: usize = 16;

/// The requests in flight on one connection.
pub(super) struct InFlight {
    shards: [Mutex<HashMap<RequestId, Entry>>; SHARDS],
    /// Tells an entry from a later one that reused its id.
    next_generation: AtomicU64,
    /// Requests registered and not yet finished.
    active: AtomicUsize,
    /// Signalled when `active` drops to zero.
    idle: Notify,
}

struct Entry {
    generation: u64,
    abort: AbortHandle,
}

impl InFlight {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(InFlight {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            next_generation: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            idle: Notify::new(),
        })
    }

    fn shard(&self, id: &RequestId) -> MutexGuard<'_, HashMap<RequestId, Entry>> {
        let hash = match id {
            // Consecutive integer ids, the usual case, spread evenly.
            RequestId::Number(n) => *n as u64,
            // FNV-1a: a fast, good enough spread for string ids.
            RequestId::String(s) => s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            }),
        };
        self.shards[(hash % SHARDS as u64) as usize]
            .lock()
            // The critical sections never panic; a poisoned map is still consistent.
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request; `None` if a request with this id is still in flight.
    pub(super) fn register(
        self: &Arc<Self>,
        id: &RequestId,
        abort: AbortHandle,
    ) -> Option<Registered> {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        {
            let mut shard = self.shard(id);
            if shard.contains_key(id) {
                return None;
            }
            shard.insert(id.clone(), Entry { generation, abort });
        }
        self.active.fetch_add(1, Ordering::AcqRel);
        Some(Registered {
            in_flight: self.clone(),
            id: id.clone(),
            generation,
        })
    }

    /// Cancels the request with this id; returns whether one was in flight.
    pub(super) fn abort(&self, id: &RequestId) -> bool {
        let entry = self.shard(id).remove(id);
        match entry {
            Some(entry) => {
                entry.abort.abort();
                true
            }
            None => false,
        }
    }

    /// Cancels every request; returns how many there were.
    pub(super) fn abort_all(&self) -> usize {
        let mut count = 0;
        for shard in &self.shards {
            let drained: Vec<Entry> = shard
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain()
                .map(|(_, entry)| entry)
                .collect();
            for entry in drained {
                entry.abort.abort();
                count += 1;
            }
        }
        count
    }

    /// Requests in flight.
    pub(super) fn len(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// Waits until no request is in flight.
    pub(super) async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            // Register before checking, so a request finishing in between is not missed.
            notified.as_mut().enable();
            if self.active.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// A request's place in the map: it leaves the map when this is dropped, however the request
/// ends (answered, cancelled, or closed with the connection).
pub(super) struct Registered {
    in_flight: Arc<InFlight>,
    id: RequestId,
    generation: u64,
}

impl Registered {
    /// Gives the request a new abort handle (its answer became a stream); `false` if it was
    /// cancelled meanwhile.
    pub(super) fn replace(&self, abort: AbortHandle) -> bool {
        let mut shard = self.in_flight.shard(&self.id);
        match shard.get_mut(&self.id) {
            Some(entry) if entry.generation == self.generation => {
                entry.abort = abort;
                true
            }
            _ => false,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        {
            let mut shard = self.in_flight.shard(&self.id);
            if shard
                .get(&self.id)
                .is_some_and(|entry| entry.generation == self.generation)
            {
                shard.remove(&self.id);
            }
        }
        if self.in_flight.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.in_flight.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_in_flight_cannot_be_registered_twice() {
        let in_flight = InFlight::new();
        let id = RequestId::Number(7);
        let first = in_flight.register(&id, AbortHandle::new_pair().0).unwrap();
        assert!(in_flight.register(&id, AbortHandle::new_pair().0).is_none());
        assert_eq!(in_flight.len(), 1);
        drop(first);
        assert_eq!(in_flight.len(), 0);
        assert!(in_flight.register(&id, AbortHandle::new_pair().0).is_some());
    }

    #[test]
    fn aborting_cancels_and_frees_the_id() {
        let in_flight = InFlight::new();
        let id = RequestId::String("a".into());
        let (abort, _registration) = AbortHandle::new_pair();
        let registered = in_flight.register(&id, abort.clone()).unwrap();
        assert!(in_flight.abort(&id));
        assert!(abort.is_aborted());
        assert!(!registered.replace(AbortHandle::new_pair().0));
        // The id is free again even before the cancelled request winds down.
        let again = in_flight.register(&id, AbortHandle::new_pair().0).unwrap();
        drop(registered);
        assert_eq!(in_flight.len(), 1);
        assert!(again.replace(AbortHandle::new_pair().0));
        assert_eq!(in_flight.abort_all(), 1);
    }
}
