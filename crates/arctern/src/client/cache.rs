//! A small response cache that follows the 2026-07-28 caching rules.
//!
//! Off unless [`ClientBuilder::cache`](super::ClientBuilder::cache) turns it on. When on:
//!
//! - Only results of `server/discover`, the four list methods (each page on its own) and
//!   `resources/read` are kept, keyed by method and cursor or URI.
//! - A result is kept for its `ttlMs`; a result with `ttlMs` 0 or absent (an older server)
//!   is not kept at all. Both `cacheScope`s are reused, since one client holds one
//!   authorization context.
//! - A `resources/read` result is kept only when it came from a first attempt: results of
//!   retries carrying `inputResponses` or `requestState`, and `input_required` results, are
//!   never kept.
//! - A list-changed notification seen on a subscription drops that list (the resources one
//!   also drops the templates); `notifications/resources/updated` drops that URI.
//! - At most `max_entries` results and `max_bytes` bytes of them are kept; expired ones go
//!   first, then the oldest. A result larger than the whole byte budget is not kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::time::Instant;

struct Entry {
    raw: Arc<RawValue>,
    expires: Instant,
    order: u64,
}

pub(crate) struct Cache {
    max_entries: usize,
    max_bytes: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    entries: HashMap<(&'static str, String), Entry>,
    counter: u64,
    /// The bytes of every kept result (their JSON text).
    bytes: usize,
}

impl State {
    fn remove(&mut self, key: &(&'static str, String)) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.raw.get().len();
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&(&'static str, String), &Entry) -> bool) {
        let mut freed = 0;
        self.entries.retain(|k, e| {
            let kept = keep(k, e);
            if !kept {
                freed += e.raw.get().len();
            }
            kept
        });
        self.bytes -= freed;
    }
}

impl Cache {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        Cache {
            max_entries: max_entries.max(1),
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh entry, if there is one.
    pub(crate) fn get(&self, method: &'static str, key: &str) -> Option<Arc<RawValue>> {
        let mut state = self.lock();
        let k = (method, key.to_owned());
        match state.entries.get(&k) {
            Some(e) if e.expires > Instant::now() => Some(e.raw.clone()),
            Some(_) => {
                state.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Keeps `raw` for `ttl_ms` (nothing when 0).
    pub(crate) fn put(&self, method: &'static str, key: &str, raw: Arc<RawValue>, ttl_ms: u64) {
        let size = raw.get().len();
        if ttl_ms == 0 || size > self.max_bytes {
            return;
        }
        let now = Instant::now();
        let expires = now + Duration::from_millis(ttl_ms.min(u64::MAX / 2));
        let mut state = self.lock();
        let key = (method, key.to_owned());
        state.remove(&key);
        let full =
            |s: &State| s.entries.len() >= self.max_entries || s.bytes + size > self.max_bytes;
        if full(&state) {
            state.retain(|_, e| e.expires > now);
        }
        while full(&state) {
            let Some(oldest) = state
                .entries
                .iter()
                .min_by_key(|(_, e)| e.order)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            state.remove(&oldest);
        }
        state.counter += 1;
        let order = state.counter;
        state.bytes += size;
        state.entries.insert(
            key,
            Entry {
                raw,
                expires,
                order,
            },
        );
    }

    /// Drops every entry of `method`.
    pub(crate) fn invalidate_method(&self, method: &str) {
        self.lock().retain(|(m, _), _| *m != method);
    }

    /// Drops one entry.
    pub(crate) fn invalidate(&self, method: &'static str, key: &str) {
        self.lock().remove(&(method, key.to_owned()));
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        let mut state = self.lock();
        state.entries.clear();
        state.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(bytes: usize) -> Arc<RawValue> {
        Arc::from(RawValue::from_string(format!("\"{}\"", "x".repeat(bytes - 2))).unwrap())
    }

    #[tokio::test]
    async fn the_byte_budget_evicts_the_oldest_and_refuses_what_never_fits() {
        let cache = Cache::new(100, 1000);
        cache.put("m", "a", raw(400), 60_000);
        cache.put("m", "b", raw(400), 60_000);
        cache.put("m", "c", raw(400), 60_000);
        assert!(cache.get("m", "a").is_none(), "the oldest made room");
        assert!(cache.get("m", "b").is_some() && cache.get("m", "c").is_some());
        cache.put("m", "huge", raw(1001), 60_000);
        assert!(cache.get("m", "huge").is_none());
        assert!(
            cache.get("m", "c").is_some(),
            "a refused result evicts nothing"
        );
        // Replacing an entry counts its bytes once.
        for _ in 0..10 {
            cache.put("m", "c", raw(400), 60_000);
        }
        assert!(cache.get("m", "b").is_some());
        assert_eq!(cache.lock().bytes, 800);
        cache.invalidate_method("m");
        assert_eq!(cache.lock().bytes, 0);
    }
}
