//! One completion per flow: a store the request-state boundary asks before a round runs.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::server::budget::{Budget, Caller, OverBudget, Scope};
use crate::state::FlowId;

/// What [`OneTimeStore`] methods return.
pub type StoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, OneTimeStoreError>> + Send + 'a>>;

/// The answer to [`OneTimeStore::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The round may run; the caller ends the claim with [`OneTimeStore::finish`].
    Granted,
    /// Another round of the flow is running.
    Busy,
    /// The flow has completed.
    Completed,
    /// The flow is new to the store and its caller holds its share of the store (or the
    /// store is full): this caller is refused with the [`OverBudget`] error, others are
    /// not.
    OverBudget(OverBudget),
}

/// Makes every multi round-trip flow complete at most once.
///
/// Without a store, a client may present a round's sealed request state again while it is
/// valid, and the handler runs again with the same answers (see the
/// [module docs](super)). With one, the server's request-state boundary claims the flow before
/// every later round (round 1 onwards; round 0 has no state to replay) and refuses the
/// round with the fixed request-state error if the flow has completed or another round of it
/// is running. A round that asks more questions releases its claim; one that ends the call
/// (with a result or an error) completes the flow, which stays refused until every token of
/// the flow has expired.
///
/// The `expires` the server passes are token expiries: to [`claim`](Self::claim), when the
/// presented token stops opening; to [`finish`](Self::finish), when the flow's newest token
/// does (the presented one for a completion, the next round's for a release). A store keeps
/// what it knows of a flow until the latest `expires` it was given for it: then no token of
/// the flow opens, and forgetting it is safe.
///
/// A store that fails (`Err`) fails the round closed: the client gets an internal error and
/// the handler does not run. A round whose request is cancelled while it runs keeps its claim
/// until `expires`: whether its side effect happened is unknown, so the flow is not run again.
/// A store that bounds its size answers [`Claim::OverBudget`] for a new flow of a caller over
/// its share, so that one caller filling it does not switch multi round-trip calls off for
/// everyone.
///
/// [`MemoryOneTimeStore`] serves one process; a fleet needs a shared store (every instance
/// must see every claim).
pub trait OneTimeStore: Send + Sync + 'static {
    /// Claims `flow` for one round of `caller`'s; `expires` is when the presented token
    /// stops opening.
    fn claim(&self, flow: FlowId, expires: SystemTime, caller: &Caller) -> StoreFuture<'_, Claim>;

    /// Ends a claim: `completed` marks the flow completed; otherwise the claim is released
    /// and the next round of the flow may run. Either way the store keeps the flow until
    /// `expires` (or a later time it was given before).
    fn finish(
        &self,
        flow: FlowId,
        completed: bool,
        expires: SystemTime,
        caller: &Caller,
    ) -> StoreFuture<'_, ()>;
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

/// What one flow costs a [`MemoryOneTimeStore`] at most, in bytes, for sizing it: an entry
/// is 18 bytes of hash table (the 16-byte flow id, its state and the table's control byte),
/// a table is between 44% and 88% full, so a flow takes 21 to 41 bytes; the rest covers the
/// per-caller counts and a table's growth.
pub const ONE_TIME_BYTES_PER_FLOW: usize = 48;

/// The memory a [`MemoryOneTimeStore`] may use unless told otherwise (64 MiB).
pub const DEFAULT_ONE_TIME_MEMORY: usize = 64 * 1024 * 1024;

/// Flows a [`MemoryOneTimeStore`] holds unless told otherwise:
/// [`DEFAULT_ONE_TIME_MEMORY`] / [`ONE_TIME_BYTES_PER_FLOW`] (1,398,101). With the default
/// ten-minute token lifetime and one minute of clock skew, it carries about 2,100 flows a
/// second (see the [budgets guide](crate::docs::budgets) for sizing).
pub const DEFAULT_ONE_TIME_CAPACITY: usize = DEFAULT_ONE_TIME_MEMORY / ONE_TIME_BYTES_PER_FLOW;

/// The fraction of a [`MemoryOneTimeStore`]'s capacity one caller may hold unless told
/// otherwise: a quarter (1 / this).
pub const DEFAULT_ONE_TIME_SHARE_DIVISOR: usize = 4;

/// How many generations a store's window is cut into: the finer, the sooner a flow is
/// forgotten after its tokens expire (at most one generation late), the more tables a claim
/// looks in.
const GENERATIONS: u32 = 16;

/// A [`OneTimeStore`] in this process's memory, for one server process.
///
/// **Size.** It holds at most `capacity` flows (default [`DEFAULT_ONE_TIME_CAPACITY`], from
/// a [`DEFAULT_ONE_TIME_MEMORY`] budget at [`ONE_TIME_BYTES_PER_FLOW`]). Each flow is kept
/// until its newest token expires (at most the sealer's TTL after its last round, less for a
/// flow whose last round came late in its token's life), so a store must hold the flow rate
/// times the token lifetime: [`for_rate`](Self::for_rate) sizes it so, and
/// [`with_memory`](Self::with_memory) from a memory budget.
///
/// **Expiry.** Flows live in generations by when their tokens expire (the window cut into
/// 16); a generation whose time is past is dropped whole. A claim looks the flow up in each
/// live generation (about 17) and never scans the store, so it costs the same near empty
/// and near full.
///
/// **Shares.** A new flow counts against its [`Caller`] (principal, else peer address) until
/// its tokens expire; a caller holding its share (default a quarter of the capacity,
/// [`caller_share`](Self::caller_share)) is refused with [`Claim::OverBudget`], and so is
/// any caller when the whole store is full. Rounds of flows the store already holds are
/// never refused for size.
///
/// ```
/// use std::time::Duration;
/// use arctern::server::McpServer;
/// use arctern::server::mrtr::MemoryOneTimeStore;
///
/// // 5,000 flows a second under the default ten-minute token lifetime (about 144 MB).
/// let store = MemoryOneTimeStore::for_rate(5_000, Duration::from_secs(600))
///     .caller_share(1_000_000);
/// assert_eq!(store.capacity(), 3_000_000);
/// let server = McpServer::new("bookings").one_time_store(store);
/// ```
#[derive(Debug)]
pub struct MemoryOneTimeStore {
    ring: Mutex<Ring>,
    capacity: usize,
    share: usize,
    /// The width of a generation, in milliseconds.
    width_ms: u64,
}

/// What the store knows of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A round asked more; the next may run.
    Open,
    /// A round is running.
    Busy,
    /// A round ended the call.
    Done,
}

/// Hashes flow ids by their own bits: they are 128 random bits the server minted and
/// sealed, so a client cannot choose them to collide, and a keyed hash would buy nothing.
#[derive(Default)]
struct FlowIdHasher(u64);

impl Hasher for FlowIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(29) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
}

type Flows = HashMap<FlowId, State, BuildHasherDefault<FlowIdHasher>>;

/// The flows whose newest token expires before `end_ms`.
#[derive(Debug)]
struct Generation {
    end_ms: u64,
    flows: Flows,
    /// Flows of this generation counted against each caller.
    charges: HashMap<Caller, u32>,
}

#[derive(Debug, Default)]
struct Ring {
    /// Ordered by `end_ms`.
    generations: VecDeque<Generation>,
    /// Flows in all generations.
    len: usize,
    /// Flows counted against each caller, over all generations.
    charges: HashMap<Caller, usize>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Ring {
    /// Drops the generations whose time is past.
    fn expire(&mut self, now_ms: u64) {
        while self.generations.front().is_some_and(|g| g.end_ms <= now_ms) {
            let Some(old) = self.generations.pop_front() else {
                break;
            };
            self.len -= old.flows.len();
            for (caller, n) in old.charges {
                if let Some(total) = self.charges.get_mut(&caller) {
                    *total = total.saturating_sub(n as usize);
                    if *total == 0 {
                        self.charges.remove(&caller);
                    }
                }
            }
        }
    }

    /// The generation holding `flow` (the newest, should an older copy remain) and the
    /// flow's state.
    fn find(&self, flow: &FlowId) -> Option<(usize, State)> {
        self.generations
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, g)| g.flows.get(flow).map(|s| (i, *s)))
    }

    /// The index of the generation ending at `end_ms`, made if missing.
    fn generation(&mut self, end_ms: u64) -> usize {
        match self.generations.binary_search_by_key(&end_ms, |g| g.end_ms) {
            Ok(i) => i,
            Err(i) => {
                self.generations.insert(
                    i,
                    Generation {
                        end_ms,
                        flows: Flows::default(),
                        charges: HashMap::new(),
                    },
                );
                i
            }
        }
    }

    /// Adds `flow` to the generation ending at `end_ms`, counted against `caller`.
    fn insert(&mut self, flow: FlowId, state: State, end_ms: u64, caller: &Caller) {
        let i = self.generation(end_ms);
        let generation = &mut self.generations[i];
        if generation.flows.insert(flow, state).is_none() {
            self.len += 1;
            *generation.charges.entry(caller.clone()).or_default() += 1;
            *self.charges.entry(caller.clone()).or_default() += 1;
        }
    }

    /// Sets the state of `flow`, found in generation `at`, keeping it until `end_ms` if
    /// that is later than its generation's end (it moves, and so does the caller's count).
    fn update(&mut self, flow: FlowId, at: usize, state: State, end_ms: u64, caller: &Caller) {
        let generation = &mut self.generations[at];
        if end_ms <= generation.end_ms {
            generation.flows.insert(flow, state);
            return;
        }
        generation.flows.remove(&flow);
        self.len -= 1;
        if let Some(n) = generation.charges.get_mut(caller).filter(|n| **n > 0) {
            *n -= 1;
            if let Some(total) = self.charges.get_mut(caller) {
                *total = total.saturating_sub(1);
            }
        }
        self.insert(flow, state, end_ms, caller);
    }

    /// When the first flow counted against `caller` (any flow, for `None`) is due to go.
    fn retry_after(&self, caller: Option<&Caller>, now_ms: u64) -> Duration {
        let end = self
            .generations
            .iter()
            .find(|g| match caller {
                Some(c) => g.charges.get(c).is_some_and(|n| *n > 0),
                None => !g.flows.is_empty(),
            })
            .map_or(now_ms, |g| g.end_ms);
        Duration::from_millis(end.saturating_sub(now_ms))
    }
}

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

    /// A store holding up to `capacity` flows (at least one), a caller up to a quarter of
    /// them, with its generations cut for the default token lifetime
    /// ([`DEFAULT_TTL`](crate::state::DEFAULT_TTL); see [`window`](Self::window)).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        MemoryOneTimeStore {
            ring: Mutex::new(Ring::default()),
            capacity,
            share: (capacity / DEFAULT_ONE_TIME_SHARE_DIVISOR).max(1),
            width_ms: width_ms(crate::state::DEFAULT_TTL),
        }
    }

    /// A store using at most about `bytes` of memory: `bytes /`
    /// [`ONE_TIME_BYTES_PER_FLOW`] flows.
    pub fn with_memory(bytes: usize) -> Self {
        Self::with_capacity(bytes / ONE_TIME_BYTES_PER_FLOW)
    }

    /// A store that carries `flows_per_second` new flows a second when each is kept for
    /// `token_lifetime` (the sealer's TTL, plus its clock skew in a fleet): capacity
    /// `flows_per_second × token_lifetime`, generations cut for that lifetime. It uses up
    /// to `capacity ×` [`ONE_TIME_BYTES_PER_FLOW`] bytes.
    pub fn for_rate(flows_per_second: u64, token_lifetime: Duration) -> Self {
        let flows = u128::from(flows_per_second) * token_lifetime.as_millis() / 1000;
        Self::with_capacity(usize::try_from(flows).unwrap_or(usize::MAX)).window(token_lifetime)
    }

    /// Sets how many flows one caller may hold (at least one; more than the capacity means
    /// no share).
    pub fn caller_share(mut self, flows: usize) -> Self {
        self.share = flows.max(1);
        self
    }

    /// Cuts the generations for tokens living `token_lifetime` (the sealer's TTL): a flow is
    /// forgotten at most a sixteenth of it after its tokens expire. Longer-lived tokens
    /// still work; a claim then looks in more generations.
    pub fn window(mut self, token_lifetime: Duration) -> Self {
        self.width_ms = width_ms(token_lifetime);
        self
    }

    /// How many flows the store may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many flows one caller may hold.
    pub fn share(&self) -> usize {
        self.share
    }

    /// How many flows the store holds now (claimed, between rounds or completed; expired
    /// ones included until their generation is dropped).
    pub fn len(&self) -> usize {
        self.lock().len
    }

    /// Whether the store holds no flows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many flows count against `caller` now.
    pub fn held_by(&self, caller: &Caller) -> usize {
        self.lock().charges.get(caller).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The end of the generation a flow kept until `expires` belongs to.
    fn end_of(&self, expires: SystemTime) -> u64 {
        (unix_ms(expires) / self.width_ms)
            .saturating_add(1)
            .saturating_mul(self.width_ms)
    }

    fn claim_now(&self, flow: FlowId, expires: SystemTime, caller: &Caller) -> Claim {
        let now = unix_ms(SystemTime::now());
        let end = self.end_of(expires);
        let mut ring = self.lock();
        ring.expire(now);
        match ring.find(&flow) {
            Some((_, State::Busy)) => Claim::Busy,
            Some((_, State::Done)) => Claim::Completed,
            Some((at, State::Open)) => {
                ring.update(flow, at, State::Busy, end, caller);
                Claim::Granted
            }
            None => {
                let refused = if ring.charges.get(caller).copied().unwrap_or(0) >= self.share {
                    Some((Scope::Caller, ring.retry_after(Some(caller), now)))
                } else if ring.len >= self.capacity {
                    Some((Scope::Server, ring.retry_after(None, now)))
                } else {
                    None
                };
                match refused {
                    Some((scope, retry)) => {
                        Claim::OverBudget(OverBudget::new(Budget::OneTimeFlows, scope, retry))
                    }
                    None => {
                        ring.insert(flow, State::Busy, end, caller);
                        Claim::Granted
                    }
                }
            }
        }
    }

    fn finish_now(&self, flow: FlowId, completed: bool, expires: SystemTime, caller: &Caller) {
        let now = unix_ms(SystemTime::now());
        let end = self.end_of(expires);
        let state = if completed { State::Done } else { State::Open };
        let mut ring = self.lock();
        ring.expire(now);
        match ring.find(&flow) {
            Some((at, _)) => ring.update(flow, at, state, end, caller),
            // Its generation ended while the round ran: kept anew, never refused for size
            // (a completion must be remembered).
            None => ring.insert(flow, state, end, caller),
        }
    }
}

fn width_ms(token_lifetime: Duration) -> u64 {
    let ms = u64::try_from(token_lifetime.as_millis()).unwrap_or(u64::MAX);
    (ms / u64::from(GENERATIONS)).max(1)
}

impl OneTimeStore for MemoryOneTimeStore {
    fn claim(&self, flow: FlowId, expires: SystemTime, caller: &Caller) -> StoreFuture<'_, Claim> {
        let claimed = self.claim_now(flow, expires, caller);
        Box::pin(async move { Ok(claimed) })
    }

    fn finish(
        &self,
        flow: FlowId,
        completed: bool,
        expires: SystemTime,
        caller: &Caller,
    ) -> StoreFuture<'_, ()> {
        self.finish_now(flow, completed, expires, caller);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> FlowId {
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&n.to_be_bytes());
        bytes[15] = 1;
        FlowId::from_bytes(bytes)
    }

    fn peer(last: u8) -> Caller {
        Caller::new(None, Some(std::net::Ipv4Addr::new(127, 0, 0, last).into()))
    }

    #[tokio::test]
    async fn a_flow_completes_once() {
        let store = MemoryOneTimeStore::new();
        let me = peer(1);
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(
            store.claim(id(1), later, &me).await.unwrap(),
            Claim::Granted
        );
        assert_eq!(store.claim(id(1), later, &me).await.unwrap(), Claim::Busy);
        // Another flow is independent.
        assert_eq!(
            store.claim(id(2), later, &me).await.unwrap(),
            Claim::Granted
        );
        // A round that asks more releases its claim, and the flow is kept for the next
        // round's token.
        let next = later + Duration::from_secs(120);
        store.finish(id(1), false, next, &me).await.unwrap();
        assert_eq!(
            store.claim(id(1), later, &me).await.unwrap(),
            Claim::Granted
        );
        store.finish(id(1), true, later, &me).await.unwrap();
        assert_eq!(
            store.claim(id(1), later, &me).await.unwrap(),
            Claim::Completed
        );
        // One flow, one count, though it moved to a later generation.
        assert_eq!(store.held_by(&me), 2);
        assert_eq!(store.len(), 2);
    }

    #[tokio::test]
    async fn a_flow_is_kept_for_its_newest_token_not_its_first() {
        let store = MemoryOneTimeStore::new().window(Duration::from_secs(16));
        let me = peer(1);
        let past = SystemTime::now() - Duration::from_secs(5);
        let later = SystemTime::now() + Duration::from_secs(600);
        // A round presented with a token that expired... the next round's token lives on.
        assert_eq!(store.claim(id(7), past, &me).await.unwrap(), Claim::Granted);
        store.finish(id(7), false, later, &me).await.unwrap();
        assert_eq!(store.claim(id(7), past, &me).await.unwrap(), Claim::Granted);
        store.finish(id(7), true, past, &me).await.unwrap();
        assert_eq!(
            store.claim(id(7), past, &me).await.unwrap(),
            Claim::Completed
        );
        // A flow whose tokens have all expired is forgotten.
        store.claim(id(8), past, &me).await.unwrap();
        store.finish(id(8), true, past, &me).await.unwrap();
        assert_eq!(store.claim(id(8), past, &me).await.unwrap(), Claim::Granted);
    }

    #[tokio::test]
    async fn a_caller_over_its_share_is_refused_and_others_are_not() {
        let store = MemoryOneTimeStore::with_capacity(10)
            .caller_share(3)
            .window(Duration::from_secs(16));
        let (flooder, other) = (peer(1), peer(2));
        let later = SystemTime::now() + Duration::from_secs(60);
        for n in 0..3 {
            assert_eq!(
                store.claim(id(n), later, &flooder).await.unwrap(),
                Claim::Granted
            );
            store.finish(id(n), true, later, &flooder).await.unwrap();
        }
        let Claim::OverBudget(refusal) = store.claim(id(3), later, &flooder).await.unwrap() else {
            panic!("the flooder's fourth flow was not refused");
        };
        assert_eq!(refusal.budget(), Budget::OneTimeFlows);
        assert_eq!(refusal.scope(), Scope::Caller);
        assert!(
            refusal.retry_after() <= Duration::from_secs(61),
            "{refusal}"
        );
        // Rounds of flows it holds still run; other callers still start flows.
        assert_eq!(
            store.claim(id(0), later, &flooder).await.unwrap(),
            Claim::Completed
        );
        assert_eq!(
            store.claim(id(100), later, &other).await.unwrap(),
            Claim::Granted
        );
        assert_eq!(store.held_by(&flooder), 3);
        assert_eq!(store.held_by(&other), 1);
    }

    #[tokio::test]
    async fn a_full_store_refuses_new_flows_with_the_server_scope() {
        let store = MemoryOneTimeStore::with_capacity(4).caller_share(4);
        let later = SystemTime::now() + Duration::from_secs(60);
        for n in 0..4 {
            let caller = peer(u8::try_from(n).unwrap() + 1);
            assert_eq!(
                store.claim(id(n), later, &caller).await.unwrap(),
                Claim::Granted
            );
        }
        let Claim::OverBudget(refusal) = store.claim(id(9), later, &peer(9)).await.unwrap() else {
            panic!("a full store granted a new flow");
        };
        assert_eq!(refusal.scope(), Scope::Server);
        // Expired flows make room: their generation is dropped whole.
        let store = MemoryOneTimeStore::with_capacity(2)
            .caller_share(2)
            .window(Duration::from_millis(16));
        let past = SystemTime::now() - Duration::from_secs(1);
        store.claim(id(1), past, &peer(1)).await.unwrap();
        store.claim(id(2), past, &peer(1)).await.unwrap();
        assert_eq!(
            store.claim(id(3), later, &peer(1)).await.unwrap(),
            Claim::Granted
        );
        assert_eq!(store.len(), 1);
        assert_eq!(store.held_by(&peer(1)), 1);
    }
}
