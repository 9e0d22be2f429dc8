//! The task store of a fleet, on Redis.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::server::tasks::{
    TaskInbox, TaskRecord, TaskSignal, TaskStore, TaskStoreError, TaskStoreFuture,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::pubsub::{Subscription, instance_name};
use crate::{Error, RedisConfig, bounded, connect};

/// The most tasks a [`RedisTaskStore`] holds unless told otherwise (over the whole fleet).
pub const DEFAULT_REDIS_TASK_CAPACITY: usize = 100_000;

/// How long a task without a time to live is kept unless told otherwise: one hour.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);

/// Stores a new task unless the fleet holds `capacity` live ones: `1` stored, `0` full.
/// The index (a sorted set of ids by expiry) forgets expired tasks first.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[7]) then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'status', ARGV[2], 'owner', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[8])
return 1
";

/// Replaces a task's record, never a terminal one (a task cancelled from another instance
/// stays cancelled whatever its work reports later), and announces it to the fleet: `1`
/// saved, `0` not.
const SAVE: &str = r#"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'status', ARGV[2])
redis.call('PUBLISH', ARGV[3], '{"v":1,"from":"' .. ARGV[4] .. '","record":' .. ARGV[1] .. '}')
return 1
"#;

/// Sends a signal to the process that runs the task: how many received it (`0`: none, or
/// no such task).
const SIGNAL: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
return redis.call('PUBLISH', ARGV[1] .. owner, ARGV[2])
";

/// A [`TaskStore`] on Redis, shared by every instance of a fleet: a task created on one
/// instance can be polled (`tasks/get`), answered (`tasks/update`) and cancelled
/// (`tasks/cancel`) through any other.
///
/// What is shared, and how:
///
/// * **the record** — status, status message, outstanding questions, result or error,
///   timestamps, time to live, and the principal it is bound to — is one hash,
///   `{prefix}task:{id}` ([`RedisConfig::key_prefix`]), written by the instance that runs
///   the task at every change, and read by any instance for `tasks/get`. Creation is
///   strongly consistent (the hash exists before the `tools/call` is answered). Redis
///   forgets the task when its time to live ends (`PEXPIRE`), or after
///   [`retention`](Self::retention) for tasks without one. A terminal record is never
///   replaced.
/// * **the work** stays on the instance that started it (a future cannot move). A
///   `tasks/update` or `tasks/cancel` arriving at another instance is checked there
///   (the task exists, the principal matches) and then published on that instance's own
///   channel, `{channel}:task:{instance}` ([`RedisConfig::channel`]; the instance is named
///   in the hash); the owner hands it to the work. `PUBLISH` says whether anyone received
///   it, so a message to an instance that is gone never vanishes silently: the update is
///   answered with `-32603` ("could not reach the instance running the task"), and the
///   cancellation is recorded in the hash instead.
/// * **status changes** are published on `{channel}:tasks`, so `notifications/tasks`
///   listeners on every instance hear about tasks running elsewhere.
/// * **the count**: at most [`capacity`](Self::capacity) live tasks over the fleet (a sorted
///   set, `{prefix}tasks`); more are refused with `-32603`.
///
/// When Redis is unreachable, every call fails within [`RedisConfig::timeout`]: a task
/// cannot be created (`tools/call` of a task tool answers `-32603` "The server could not
/// create the task"; ordinary tools keep working); `tasks/get`, `tasks/update` and
/// `tasks/cancel` of a task running on the instance asked keep working (it answers from
/// memory), while those arriving at another instance answer `-32603`. A change saved while
/// Redis is away is lost, but the next change carries the whole record; a task that ends
/// while Redis is away keeps its last stored state until its time to live ends. See the
/// [crate documentation](crate).
///
/// ```no_run
/// use arctern::server::McpServer;
/// use arctern::server::tasks::TaskConfig;
/// use arctern_redis::{RedisConfig, RedisTaskStore};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisTaskStore::connect(RedisConfig::new("redis://127.0.0.1:6379")).await?;
/// let server = McpServer::new("jobs").tasks(TaskConfig::default().store(store));
/// # let _ = server; Ok(()) }
/// ```
pub struct RedisTaskStore {
    connection: redis::aio::ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// This store's name in the fleet: the owner of the tasks it creates.
    instance: Arc<str>,
    /// `{channel}:task:`, followed by an instance's name: where its signals go.
    signal_prefix: String,
    /// `{channel}:tasks`: where every change of a task is announced.
    status_channel: String,
    capacity: usize,
    retention: Duration,
    inboxes: Arc<Mutex<Vec<TaskInbox>>>,
    _stop: DropGuard,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.prefix)
            .field("instance", &self.instance)
            .field("capacity", &self.capacity)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

/// A signal on the wire: `{"v":1,"task":"<id>","signal":"update"|"cancel",…}`.
#[derive(Serialize, Deserialize)]
struct SignalWire {
    v: u8,
    task: String,
    #[serde(flatten)]
    signal: TaskSignal,
}

/// A change on the wire: `{"v":1,"from":"<instance>","record":{…}}`.
#[derive(Deserialize)]
struct ChangeWire {
    v: u8,
    from: String,
    record: TaskRecord,
}

impl RedisTaskStore {
    /// Connects to Redis and subscribes to this instance's channels; fails when Redis cannot
    /// be reached now (later outages are ridden out: the connection and the subscription
    /// come back by themselves). Needs a Tokio runtime: the subscription runs as a task
    /// until the store is dropped.
    pub async fn connect(config: RedisConfig) -> Result<Self, Error> {
        let client = config.client()?;
        let connection = connect(&config).await?;
        let instance: Arc<str> = instance_name().into();
        let signal_prefix = format!("{}:task:", config.channel);
        let status_channel = format!("{}:tasks", config.channel);
        let subscription = Subscription {
            client,
            channels: vec![format!("{signal_prefix}{instance}"), status_channel.clone()],
            timeout: config.timeout,
            owner: "redis task store",
            while_lost: "updates and cancellations sent from other instances fail",
        };
        let first = subscription.subscribe().await?;
        let inboxes = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        tokio::spawn(listen_loop(
            subscription,
            first,
            instance.clone(),
            inboxes.clone(),
            stop.clone(),
        ));
        Ok(RedisTaskStore {
            connection,
            prefix: config.key_prefix.clone(),
            timeout: config.timeout,
            instance,
            signal_prefix,
            status_channel,
            capacity: DEFAULT_REDIS_TASK_CAPACITY,
            retention: DEFAULT_RETENTION,
            inboxes,
            _stop: stop.drop_guard(),
        })
    }

    /// Sets how many live tasks the fleet may hold (default [`DEFAULT_REDIS_TASK_CAPACITY`];
    /// every instance sharing the key prefix should use the same).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Sets how long a task without a time to live is kept (default [`DEFAULT_RETENTION`];
    /// at least 1 ms).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention.max(Duration::from_millis(1));
        self
    }

    /// This instance's name in the fleet (random, made at [`connect`](Self::connect)).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The Redis key of task `task_id`.
    pub fn key(&self, task_id: &str) -> String {
        format!("{}task:{task_id}", self.prefix)
    }

    fn index_key(&self) -> String {
        format!("{}tasks", self.prefix)
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, TaskStoreError> {
        let mut connection = self.connection.clone();
        bounded(self.timeout, async move {
            cmd.query_async(&mut connection).await.map_err(Error::Redis)
        })
        .await
        .map_err(TaskStoreError::backend)
    }

    /// Milliseconds the record of a task is kept from now.
    fn keep_ms(&self, record: &TaskRecord, now: u64) -> u64 {
        match record.expires_at_ms() {
            Some(at) => at.saturating_sub(now),
            None => u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX),
        }
        .max(1)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn encode(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record).map_err(TaskStoreError::backend)
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()> {
        Box::pin(async move {
            let now = now_ms();
            let keep = self.keep_ms(&record, now);
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(CREATE)
                .arg(2)
                .arg(self.key(&record.task_id))
                .arg(self.index_key())
                .arg(encode(&record)?)
                .arg(record.status.as_str())
                .arg(&*self.instance)
                .arg(keep)
                .arg(now)
                .arg(now.saturating_add(keep))
                .arg(self.capacity)
                .arg(&record.task_id);
            match self.run::<i64>(cmd).await? {
                1 => Ok(()),
                _ => Err(TaskStoreError::Full),
            }
        })
    }

    fn load<'a>(&'a self, task_id: &'a str) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(self.key(task_id)).arg("record");
            let Some(text) = self.run::<Option<String>>(cmd).await? else {
                return Ok(None);
            };
            let record: TaskRecord =
                serde_json::from_str(&text).map_err(TaskStoreError::backend)?;
            Ok((record.task_id == task_id && !record.is_expired(now_ms())).then_some(record))
        })
    }

    fn save(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()> {
        Box::pin(async move {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(SAVE)
                .arg(1)
                .arg(self.key(&record.task_id))
                .arg(encode(&record)?)
                .arg(record.status.as_str())
                .arg(&self.status_channel)
                .arg(&*self.instance);
            self.run::<i64>(cmd).await?;
            Ok(())
        })
    }

    fn signal<'a>(&'a self, task_id: &'a str, signal: TaskSignal) -> TaskStoreFuture<'a, bool> {
        Box::pin(async move {
            let message = serde_json::to_string(&SignalWire {
                v: 1,
                task: task_id.to_owned(),
                signal,
            })
            .map_err(TaskStoreError::backend)?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(SIGNAL)
                .arg(1)
                .arg(self.key(task_id))
                .arg(&self.signal_prefix)
                .arg(message);
            Ok(self.run::<i64>(cmd).await? > 0)
        })
    }

    fn attach(&self, inbox: TaskInbox) {
        let mut inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        inboxes.retain(TaskInbox::is_open);
        inboxes.push(inbox);
    }
}

fn inboxes_now(inboxes: &Mutex<Vec<TaskInbox>>) -> Vec<TaskInbox> {
    inboxes.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Hands one message to the servers attached to this store.
fn dispatch(
    instance: &str,
    status_channel: &str,
    inboxes: &Mutex<Vec<TaskInbox>>,
    channel: &str,
    payload: &[u8],
) {
    if channel == status_channel {
        match serde_json::from_slice::<ChangeWire>(payload) {
            Ok(change) if change.v == 1 && change.from != instance => {
                for inbox in inboxes_now(inboxes) {
                    inbox.changed(change.record.clone());
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "redis task store: ignored a change it does not understand")
            }
        }
        return;
    }
    match serde_json::from_slice::<SignalWire>(payload) {
        Ok(wire) if wire.v == 1 => {
            for inbox in inboxes_now(inboxes) {
                let (task, signal) = (wire.task.clone(), wire.signal.clone());
                tokio::spawn(async move {
                    inbox.deliver(&task, signal).await;
                });
            }
        }
        Ok(_) => {}
        Err(e) => {
            tracing::debug!(error = %e, "redis task store: ignored a signal it does not understand")
        }
    }
}

/// Hands the signals for this instance's tasks, and the changes other instances make to
/// any task, to the servers attached to this store.
async fn listen_loop(
    subscription: Subscription,
    first: redis::aio::PubSub,
    instance: Arc<str>,
    inboxes: Arc<Mutex<Vec<TaskInbox>>>,
    stop: CancellationToken,
) {
    let status_channel = subscription.channels[1].clone();
    let on_message = |message: &redis::Msg| {
        dispatch(
            &instance,
            &status_channel,
            &inboxes,
            message.get_channel_name(),
            message.get_payload_bytes(),
        )
    };
    let on_back = || tracing::info!("redis task store: subscribed again");
    subscription.run(first, stop, on_message, on_back).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_round_trip() {
        for signal in [
            TaskSignal::Cancel,
            TaskSignal::Update {
                input_responses: serde_json::from_value(serde_json::json!({
                    "go": {"action": "accept", "content": {"go": true}}
                }))
                .unwrap(),
            },
        ] {
            let text = serde_json::to_string(&SignalWire {
                v: 1,
                task: "t1".into(),
                signal: signal.clone(),
            })
            .unwrap();
            let back: SignalWire = serde_json::from_str(&text).unwrap();
            assert_eq!((back.task.as_str(), back.signal), ("t1", signal));
        }
        assert!(serde_json::from_str::<SignalWire>(r#"{"v":1,"task":"t"}"#).is_err());
    }
}
