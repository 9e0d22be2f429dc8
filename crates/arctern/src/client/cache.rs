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
//! - At most `max_entries` results are kept; expired ones go first, then the oldest.

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
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    entries: HashMap<(&'static str, String), Entry>,
    counter: u64,
}

impl Cache {
    pub(crate) fn new(max_entries: usize) -> Self {
        Cache {
            max_entries: max_entries.max(1),
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
                state.entries.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Keeps `raw` for `ttl_ms` (nothing when 0).
    pub(crate) fn put(&self, method: &'static str, key: &str, raw: Arc<RawValue>, ttl_ms: u64) {
        if ttl_ms == 0 {
            return;
        }
        let now = Instant::now();
        let expires = now + Duration::from_millis(ttl_ms.min(u64::MAX / 2));
        let mut state = self.lock();
        if state.entries.len() >= self.max_entries {
            state.entries.retain(|_, e| e.expires > now);
        }
        if state.entries.len() >= self.max_entries
            && let Some(oldest) = state
                .entries
                .iter()
                .min_by_key(|(_, e)| e.order)
                .map(|(k, _)| k.clone())
        {
            state.entries.remove(&oldest);
        }
        state.counter += 1;
        let order = state.counter;
        state.entries.insert(
            (method, key.to_owned()),
            Entry {
                raw,
                expires,
                order,
            },
        );
    }

    /// Drops every entry of `method`.
    pub(crate) fn invalidate_method(&self, method: &str) {
        self.lock().entries.retain(|(m, _), _| *m != method);
    }

    /// Drops one entry.
    pub(crate) fn invalidate(&self, method: &'static str, key: &str) {
        self.lock().entries.remove(&(method, key.to_owned()));
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        self.lock().entries.clear();
    }
}
