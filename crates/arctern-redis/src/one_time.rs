//! The one-time flow store of a fleet, on Redis.

use std::fmt;
use std::time::{Duration, SystemTime};

use arctern::server::mrtr::{Claim, OneTimeStore, OneTimeStoreError, StoreFuture};
use arctern::state::FlowId;

use crate::{Error, RedisConfig, bounded, connect};

/// Claims a flow in one step: `0` granted (the key now holds `busy` until the token window
/// ends), `1` busy, `2` completed.
const CLAIM: &str = r"
local held = redis.call('GET', KEYS[1])
if held == 'done' then return 2 end
if held then return 1 end
redis.call('SET', KEYS[1], 'busy', 'PX', ARGV[1])
return 0
";

/// Ends a claim: `ARGV[1] == '1'` marks the flow completed until the window ends; otherwise
/// the claim is released, unless the flow has completed meanwhile (a completion is never
/// undone).
const FINISH: &str = r"
if ARGV[1] == '1' then
  redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2])
  return 1
end
if redis.call('GET', KEYS[1]) == 'busy' then redis.call('DEL', KEYS[1]) end
return 0
";

/// A [`OneTimeStore`] on Redis, shared by every instance of a fleet: a flow completed on one
/// instance is refused on all of them, and a round running on one makes the same round
/// presented on another `Busy`.
///
/// Each flow is one key, `{prefix}flow:{flow id}` ([`RedisConfig::key_prefix`]), holding
/// `busy` or `done` and expiring when the flow's tokens do (the window the server passes in,
/// its state TTL plus clock skew), so Redis holds only live flows. Claims are atomic (a small
/// Lua script). Expiry is relative (`PX`), so the instances' clocks and Redis's need not
/// agree.
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
}

impl fmt::Debug for RedisOneTimeStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOneTimeStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
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
        })
    }

    /// The Redis key of `flow`.
    pub fn key(&self, flow: FlowId) -> String {
        format!("{}flow:{flow}", self.prefix)
    }

    async fn eval(&self, script: &str, key: String, args: &[String]) -> Result<i64, Error> {
        let mut connection = self.connection.clone();
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(1).arg(key).arg(args);
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
    fn claim(&self, flow: FlowId, expires: SystemTime) -> StoreFuture<'_, Claim> {
        Box::pin(async move {
            let answer = self
                .eval(CLAIM, self.key(flow), &[window_ms(expires)])
                .await
                .map_err(OneTimeStoreError::new)?;
            match answer {
                0 => Ok(Claim::Granted),
                1 => Ok(Claim::Busy),
                2 => Ok(Claim::Completed),
                other => Err(OneTimeStoreError::new(format!(
                    "unexpected claim answer {other}"
                ))),
            }
        })
    }

    fn finish(&self, flow: FlowId, completed: bool, expires: SystemTime) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let completed = if completed { "1" } else { "0" };
            self.eval(
                FINISH,
                self.key(flow),
                &[completed.to_owned(), window_ms(expires)],
            )
            .await
            .map_err(OneTimeStoreError::new)?;
            Ok(())
        })
    }
}
