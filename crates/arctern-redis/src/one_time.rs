//! The one-time flow store of a fleet, on Redis.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arctern::server::budget::{Budget, Caller, OverBudget, Scope};
use arctern::server::mrtr::{Claim, OneTimeStore, OneTimeStoreError, StoreFuture};
use arctern::state::FlowId;

use crate::{Error, RedisConfig, bounded, connect};

/// Redis's clock in milliseconds, for the scripts below (the instances' clocks need not
/// agree with it).
const NOW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
";

/// Counts `ARGV[3]` (the flow) against the caller's share until `now + px`: a sorted set of
/// the caller's flows scored by when they go, itself expiring with its last flow.
const CHARGE: &str = r"
local function charge(px)
  local score = redis.call('ZSCORE', KEYS[2], ARGV[3])
  if (not score) or tonumber(score) < now + px then
    redis.call('ZADD', KEYS[2], now + px, ARGV[3])
  end
  local keep = redis.call('PTTL', KEYS[2])
  if keep < px then redis.call('PEXPIRE', KEYS[2], px) end
end
";

/// Claims a flow in one step: `{0}` granted (the key now holds `busy` until the flow's
/// tokens expire), `{1}` busy, `{2}` completed, `{3, ms}` refused: the caller holds its share
/// (`ARGV[2]` flows), the first of them goes in `ms`. A flow between rounds (`open`) keeps the
/// later of its two expiries.
const CLAIM: &str = r"
local px = tonumber(ARGV[1])
local held = redis.call('GET', KEYS[1])
if held == 'done' then return {2} end
if held == 'busy' then return {1} end
if held == 'open' then
  local left = redis.call('PTTL', KEYS[1])
  if left > px then px = left end
  redis.call('SET', KEYS[1], 'busy', 'PX', px)
  charge(px)
  return {0}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {3, math.max(tonumber(first[2]) - now, 1)}
end
redis.call('SET', KEYS[1], 'busy', 'PX', px)
charge(px)
return {0}
";

/// Ends a claim: `ARGV[1] == '1'` marks the flow completed; otherwise the flow is `open`
/// (the next round may run), unless it has completed meanwhile (a completion is never
/// undone). Either way it is kept until the later of its expiries.
const FINISH: &str = r"
local px = tonumber(ARGV[2])
local left = redis.call('PTTL', KEYS[1])
if left > px then px = left end
if ARGV[1] == '1' then
  redis.call('SET', KEYS[1], 'done', 'PX', px)
elseif redis.call('GET', KEYS[1]) == 'done' then
  return 0
else
  redis.call('SET', KEYS[1], 'open', 'PX', px)
end
charge(px)
return 1
";

/// The default share of one caller in a [`RedisOneTimeStore`]: the memory store's default
/// share ([`DEFAULT_ONE_TIME_CAPACITY`](arctern::server::mrtr::DEFAULT_ONE_TIME_CAPACITY) / 4).
pub const DEFAULT_REDIS_CALLER_SHARE: usize = arctern::server::mrtr::DEFAULT_ONE_TIME_CAPACITY
    / arctern::server::mrtr::DEFAULT_ONE_TIME_SHARE_DIVISOR;

/// A [`OneTimeStore`] on Redis, shared by every instance of a fleet: a flow completed on one
/// instance is refused on all of them, and a round running on one makes the same round
/// presented on another `Busy`.
///
/// Each flow is one key, `{prefix}flow:{flow id}` ([`RedisConfig::key_prefix`]), holding
/// `busy`, `open` (between rounds) or `done` and expiring when the flow's newest token does
/// (the remaining token lifetime the server passes in, plus its clock skew), so Redis holds
/// only live flows. Claims are atomic (small Lua scripts). Expiry is relative (`PX`), so the
/// instances' clocks and Redis's need not agree.
///
/// **Shares across the fleet.** Each new flow also counts against its
/// [`Caller`](arctern::server::budget::Caller) in `{prefix}held:{caller}` (a sorted set of
/// the caller's flows by expiry, dropped as they expire), in the same script as the claim,
/// so the share holds on every instance at no extra round trip. A caller holding its share
/// ([`caller_share`](Self::caller_share), default [`DEFAULT_REDIS_CALLER_SHARE`]) is refused
/// new flows with the [`OverBudget`](arctern::server::budget::OverBudget) error
/// (`-31429`, HTTP 429 with `Retry-After`); other callers are not.
///
/// **Memory.** A flow costs Redis about 150 bytes: its key (about 90 bytes with the default
/// prefix and Redis's per-key overhead) and its member in the caller's set (about 60).
/// Size `maxmemory` for the flow rate times the token lifetime (plus the skew).
///
/// **Out of memory.** Run the store's Redis with `maxmemory-policy noeviction`: an evicting
/// policy may drop a completed flow's key, and its tokens would then run again. When Redis
/// reaches `maxmemory` under `noeviction` it refuses writes (`OOM command not allowed`): every
/// later round then fails closed like an outage (`-32603` "The server could not check the
/// request state", logged as the store's error), first rounds keep working, and rounds run
/// again once keys expire or memory is added.
///
/// Every call is bounded by [`RedisConfig::timeout`]. While Redis is unreachable a claim
/// fails, and the server refuses the round (fails closed) with an internal error
/// (`-32603`, "The server could not check the request state"); first rounds, which have no
/// state to replay, keep working. See the [crate documentation](crate).
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern_redis::{RedisConfig, RedisOneTimeStore};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisOneTimeStore::connect(RedisConfig::new("redis://127.0.0.1:6379")).await?;
/// let server = McpServer::new("bookings").one_time_store(store);
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisOneTimeStore {
    connection: redis::aio::ConnectionManager,
    prefix: String,
    timeout: Duration,
    share: usize,
    /// The scripts, assembled once.
    claim: Arc<str>,
    finish: Arc<str>,
}

impl fmt::Debug for RedisOneTimeStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOneTimeStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("share", &self.share)
            .finish_non_exhaustive()
    }
}

impl RedisOneTimeStore {
    /// Connects to Redis (bounded by the configured timeout; the connection reconnects by
    /// itself afterwards).
    pub async fn connect(config: RedisConfig) -> Result<Self, Error> {
        Ok(RedisOneTimeStore {
            connection: connect(&config).await?,
            prefix: config.key_prefix.clone(),
            timeout: config.timeout,
            share: DEFAULT_REDIS_CALLER_SHARE,
            claim: format!("{NOW}{CHARGE}{CLAIM}").into(),
            finish: format!("{NOW}{CHARGE}{FINISH}").into(),
        })
    }

    /// Sets how many flows one caller may hold across the fleet (at least one). Every
    /// instance should set the same.
    pub fn caller_share(mut self, flows: usize) -> Self {
        self.share = flows.max(1);
        self
    }

    /// The Redis key of `flow`.
    pub fn key(&self, flow: FlowId) -> String {
        format!("{}flow:{flow}", self.prefix)
    }

    /// The Redis key of the flows counted against `caller`.
    pub fn held_key(&self, caller: &Caller) -> String {
        format!("{}held:{caller}", self.prefix)
    }

    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &str,
        flow: FlowId,
        caller: &Caller,
        args: &[String],
    ) -> Result<T, Error> {
        let mut connection = self.connection.clone();
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script)
            .arg(2)
            .arg(self.key(flow))
            .arg(self.held_key(caller))
            .arg(args);
        bounded(self.timeout, async move {
            cmd.query_async(&mut connection).await.map_err(Error::Redis)
        })
        .await
    }
}

/// Milliseconds from now until `expires`, at least 1 (Redis refuses `PX 0`).
fn window_ms(expires: SystemTime) -> String {
    let left = expires
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    u64::try_from(left.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
}

impl OneTimeStore for RedisOneTimeStore {
    fn claim(&self, flow: FlowId, expires: SystemTime, caller: &Caller) -> StoreFuture<'_, Claim> {
        let caller = caller.clone();
        Box::pin(async move {
            let args = [window_ms(expires), self.share.to_string(), flow.to_string()];
            let answer: Vec<i64> = self
                .eval(&self.claim, flow, &caller, &args)
                .await
                .map_err(OneTimeStoreError::new)?;
            match answer.as_slice() {
                [0] => Ok(Claim::Granted),
                [1] => Ok(Claim::Busy),
                [2] => Ok(Claim::Completed),
                [3, ms] => Ok(Claim::OverBudget(OverBudget::new(
                    Budget::OneTimeFlows,
                    Scope::Caller,
                    Duration::from_millis(u64::try_from(*ms).unwrap_or(1)),
                ))),
                other => Err(OneTimeStoreError::new(format!(
                    "unexpected claim answer {other:?}"
                ))),
            }
        })
    }

    fn finish(
        &self,
        flow: FlowId,
        completed: bool,
        expires: SystemTime,
        caller: &Caller,
    ) -> StoreFuture<'_, ()> {
        let caller = caller.clone();
        Box::pin(async move {
            let completed = if completed { "1" } else { "0" };
            let args = [completed.to_owned(), window_ms(expires), flow.to_string()];
            self.eval::<i64>(&self.finish, flow, &caller, &args)
                .await
                .map_err(OneTimeStoreError::new)?;
            Ok(())
        })
    }
}
