//! Redis for what the instances of an arctern fleet must share.
//!
//! A 2026-07-28 server keeps no memory between requests: multi round-trip state travels
//! sealed in `requestState`, so any instance behind a load balancer can serve any round, and
//! a fleet needs to share only its sealing keys (a file or a Secret, see
//! [`ReloadableKeyRing`](arctern::state::ReloadableKeyRing)). What does need a shared
//! service:
//!
//! * **change notifications**: a `resources/updated` or list change announced on one
//!   instance must reach the `subscriptions/listen` streams and legacy sessions held by every
//!   other — [`RedisChangeBus`], a [`ChangeBus`](arctern::server::ChangeBus) on Redis
//!   pub/sub;
//! * the one-time flow store (the replay guard of flows whose last round has side effects):
//!   a flow completed on one instance must be refused on every other — [`RedisOneTimeStore`],
//!   a [`OneTimeStore`](arctern::server::mrtr::OneTimeStore) on Redis keys;
//! * the task store of the tasks extension: a task created on one instance can be polled,
//!   answered and cancelled through any other — [`RedisTaskStore`], a
//!   [`TaskStore`](arctern::server::tasks::TaskStore) on Redis keys, with the updates and
//!   cancellations for a task's running work carried to the instance that runs it over
//!   pub/sub.
//!
//! # When Redis is down
//!
//! Every call to Redis is bounded ([`RedisConfig::timeout`]), so an outage turns into errors,
//! never into hangs:
//!
//! | what | during an outage |
//! | --- | --- |
//! | tools, prompts, resources, and the first round of every multi round-trip call | keep working: they never touch Redis |
//! | later rounds of multi round-trip flows, with a [`RedisOneTimeStore`] | refused at once (fail closed): the claim fails within the timeout and the client gets `-32603` "The server could not check the request state"; the handler does not run. The flow can be started again once Redis is back; without a one-time store, rounds never touch Redis |
//! | a round that ran while Redis went away | its answer is sent; the claim's end is logged as an error and the flow stays claimed (refused) until its tokens expire |
//! | changes announced on an instance | still reach that instance's streams and sessions at once |
//! | changes crossing instances | lost while Redis is unreachable (each failed publish is logged as a warning); when the subscription comes back, every local stream and session is told that every list it follows changed, so clients refetch |
//! | creating a task, with a [`RedisTaskStore`] | refused within the timeout: `tools/call` of a task tool answers `-32603` "The server could not create the task" and the tool does not run (ordinary tools keep working) |
//! | `tasks/get`, `tasks/update`, `tasks/cancel` | answered as before by the instance running the task (from memory); at any other instance `-32603` ("The server could not read the task") within the timeout. Changes saved meanwhile are lost from Redis; the next change after the outage stores the whole record again, but a task that ended during the outage keeps its last stored state there until its time to live ends |
//! | data an application keeps in Redis (the demo's notes) | calls fail after at most the timeout with the Redis error, which the application reports (the demo answers a tool error) |
//!
//! The connection and the subscription reconnect by themselves, with backoff.

#![forbid(unsafe_code)]

mod changes;
mod one_time;
mod pubsub;
mod tasks;

use std::time::Duration;

pub use changes::{BusStats, DEFAULT_CHANNEL, RedisChangeBus};
pub use one_time::{DEFAULT_REDIS_CALLER_SHARE, RedisOneTimeStore};
/// The Redis client this crate is built on, for an application's own data.
pub use redis;
pub use tasks::{DEFAULT_REDIS_TASK_CAPACITY, DEFAULT_RETENTION, RedisTaskStore};

/// The default prefix of the keys arctern keeps in Redis.
pub const DEFAULT_KEY_PREFIX: &str = "arctern:";

/// Default bound on every Redis call (connecting, a command, subscribing): 2 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// How to reach Redis.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    url: String,
    timeout: Duration,
    channel: String,
    key_prefix: String,
}

impl RedisConfig {
    /// Redis at `url`, such as `redis://127.0.0.1:6379/0` (`rediss://` is not supported:
    /// run Redis on a private network, or behind a TLS tunnel).
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            timeout: DEFAULT_TIMEOUT,
            channel: DEFAULT_CHANNEL.to_owned(),
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
        }
    }

    /// The bound on every call: connecting, one command, subscribing (default
    /// [`DEFAULT_TIMEOUT`]; at least 1 ms).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The pub/sub channel of [`RedisChangeBus`] (default [`DEFAULT_CHANNEL`]; a
    /// [`RedisTaskStore`] uses `{channel}:tasks` and `{channel}:task:{instance}`). Instances
    /// that should see each other's changes use the same one; separate fleets on one Redis
    /// use different ones.
    pub fn channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// The prefix of the keys arctern keeps in Redis (default [`DEFAULT_KEY_PREFIX`]; the
    /// [`RedisOneTimeStore`] uses `{prefix}flow:{flow id}`). Separate fleets on one Redis
    /// use different ones.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound on every call.
    pub fn call_timeout(&self) -> Duration {
        self.timeout
    }

    fn client(&self) -> Result<redis::Client, Error> {
        redis::Client::open(self.url.as_str()).map_err(Error::Redis)
    }
}

/// What went wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Redis answered with an error, or the connection failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis did not answer within the configured timeout.
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
}

/// A connection that reconnects by itself, with the bounds of `config`; clone it freely.
///
/// Every command should still be wrapped in [`bounded`], which turns a slow answer into
/// [`Error::Timeout`].
pub async fn connect(config: &RedisConfig) -> Result<redis::aio::ConnectionManager, Error> {
    let client = config.client()?;
    let manager = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(config.timeout))
        .set_response_timeout(Some(config.timeout))
        // Fail fast while Redis is away; the manager keeps trying on the next command.
        .set_number_of_retries(1)
        .set_max_delay(config.timeout);
    bounded(config.timeout, async {
        client
            .get_connection_manager_with_config(manager)
            .await
            .map_err(Error::Redis)
    })
    .await
}

/// Runs a Redis call with a deadline.
pub async fn bounded<T>(
    timeout: Duration,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(Error::Timeout(timeout)),
    }
}
