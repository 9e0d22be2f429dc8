//! Change notifications across a fleet on Redis pub/sub.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arctern::server::{Change, ChangeBus, ChangeReceiver, LocalChangeBus};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::pubsub::{Subscription, instance_name};
use crate::{Error, RedisConfig, bounded, connect};

/// The default pub/sub channel.
pub const DEFAULT_CHANNEL: &str = "arctern:changes";

/// How many changes may wait for the publisher before new ones are dropped (and logged).
const PUBLISH_QUEUE: usize = 1024;

/// A [`ChangeBus`] on Redis pub/sub: a change announced on any instance reaches the
/// `subscriptions/listen` streams and legacy sessions of every instance subscribed to the
/// same channel.
///
/// A change published here is delivered to this instance's receivers at once (not through
/// Redis) and sent to Redis in the background; changes from other instances arrive through
/// one subscription per process. See the [crate documentation](crate) for what an outage
/// does.
///
/// ```no_run
/// use std::sync::Arc;
/// use arctern::server::McpServer;
/// use arctern_redis::{RedisChangeBus, RedisConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let bus = RedisChangeBus::connect(RedisConfig::new("redis://127.0.0.1:6379")).await?;
/// let server = McpServer::new("notes").change_bus(bus.clone()).build()?;
/// // Later, on any instance:
/// server.change_notifier().resource_updated("notes://shopping");
/// # Ok(()) }
/// ```
pub struct RedisChangeBus {
    local: LocalChangeBus,
    outbox: mpsc::Sender<Change>,
    origin: Arc<str>,
    channel: Arc<str>,
    counters: Arc<Counters>,
    _stop: DropGuard,
}

/// What a [`RedisChangeBus`] has done so far (for logs, metrics and tests).
#[derive(Debug, Default)]
struct Counters {
    published: AtomicU64,
    publish_failed: AtomicU64,
    received: AtomicU64,
    resubscribed: AtomicU64,
}

/// A snapshot of a [`RedisChangeBus`]'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BusStats {
    /// Changes sent to Redis.
    pub published: u64,
    /// Changes that could not be sent (Redis unreachable, or the queue full).
    pub publish_failed: u64,
    /// Changes received from other instances.
    pub received: u64,
    /// Times the subscription was lost and made again.
    pub resubscribed: u64,
}

impl fmt::Debug for RedisChangeBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisChangeBus")
            .field("channel", &self.channel)
            .field("origin", &self.origin)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A change on the wire: `{"v":1,"from":"<origin>","change":"tools"|"prompts"|"resources"|"resource","uri":…}`.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    v: u8,
    from: &'a str,
    change: &'a str,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<&'a str>,
}

fn encode(origin: &str, change: &Change) -> Option<String> {
    let (kind, uri) = match change {
        Change::ToolsListChanged => ("tools", None),
        Change::PromptsListChanged => ("prompts", None),
        Change::ResourcesListChanged => ("resources", None),
        Change::ResourceUpdated(uri) => ("resource", Some(&**uri)),
        _ => return None,
    };
    serde_json::to_string(&Wire {
        v: 1,
        from: origin,
        change: kind,
        uri,
    })
    .ok()
}

/// The change in a message, unless it came from `origin` itself or is not understood.
fn decode(origin: &str, payload: &[u8]) -> Option<Change> {
    let wire: Wire<'_> = serde_json::from_slice(payload).ok()?;
    if wire.v != 1 || wire.from == origin {
        return None;
    }
    Some(match (wire.change, wire.uri) {
        ("tools", _) => Change::ToolsListChanged,
        ("prompts", _) => Change::PromptsListChanged,
        ("resources", _) => Change::ResourcesListChanged,
        ("resource", Some(uri)) => Change::ResourceUpdated(uri.into()),
        _ => return None,
    })
}

impl RedisChangeBus {
    /// Connects to Redis and subscribes to the channel; fails when Redis cannot be reached
    /// now (later outages are ridden out). Needs a Tokio runtime: the publisher and the
    /// subscription run as tasks until the bus is dropped.
    pub async fn connect(config: RedisConfig) -> Result<Arc<Self>, Error> {
        let client = config.client()?;
        let publisher = connect(&config).await?;
        let channel: Arc<str> = config.channel.as_str().into();
        let subscription = Subscription {
            client,
            channels: vec![config.channel.clone()],
            timeout: config.timeout,
            owner: "redis change bus",
            while_lost: "changes from other instances are missed",
        };
        let first = subscription.subscribe().await?;
        let origin: Arc<str> = instance_name().into();
        let local = LocalChangeBus::default();
        let counters = Arc::new(Counters::default());
        let stop = CancellationToken::new();
        let (outbox, queue) = mpsc::channel(PUBLISH_QUEUE);
        tokio::spawn(publish_loop(
            publisher,
            queue,
            channel.clone(),
            origin.clone(),
            config.timeout,
            counters.clone(),
            stop.clone(),
        ));
        tokio::spawn(receive_loop(
            subscription,
            first,
            origin.clone(),
            local.clone(),
            counters.clone(),
            stop.clone(),
        ));
        Ok(Arc::new(RedisChangeBus {
            local,
            outbox,
            origin,
            channel,
            counters,
            _stop: stop.drop_guard(),
        }))
    }

    /// What the bus has done so far.
    pub fn stats(&self) -> BusStats {
        let c = &self.counters;
        BusStats {
            published: c.published.load(Ordering::Relaxed),
            publish_failed: c.publish_failed.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            resubscribed: c.resubscribed.load(Ordering::Relaxed),
        }
    }
}

impl ChangeBus for RedisChangeBus {
    fn publish(&self, change: Change) {
        self.local.publish(change.clone());
        if self.outbox.try_send(change).is_err() {
            self.counters.publish_failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "redis change bus: the publish queue is full; a change did not leave this instance"
            );
        }
    }

    fn subscribe(&self) -> ChangeReceiver {
        self.local.subscribe()
    }

    fn local_receivers(&self) -> usize {
        self.local.local_receivers()
    }
}

async fn publish_loop(
    mut connection: redis::aio::ConnectionManager,
    mut queue: mpsc::Receiver<Change>,
    channel: Arc<str>,
    origin: Arc<str>,
    timeout: Duration,
    counters: Arc<Counters>,
    stop: CancellationToken,
) {
    loop {
        let change = tokio::select! {
            () = stop.cancelled() => return,
            change = queue.recv() => match change {
                Some(change) => change,
                None => return,
            },
        };
        let Some(message) = encode(&origin, &change) else {
            continue;
        };
        let sent = bounded(timeout, async {
            redis::cmd("PUBLISH")
                .arg(&*channel)
                .arg(message)
                .query_async::<i64>(&mut connection)
                .await
                .map_err(Error::Redis)
        })
        .await;
        match sent {
            Ok(_) => {
                counters.published.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                counters.publish_failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "redis change bus: a change did not reach the other instances");
            }
        }
    }
}

/// Hands the changes of other instances to this one's receivers; when the subscription
/// comes back after an outage, tells them every list changed (changes may have been missed).
async fn receive_loop(
    subscription: Subscription,
    first: redis::aio::PubSub,
    origin: Arc<str>,
    local: LocalChangeBus,
    counters: Arc<Counters>,
    stop: CancellationToken,
) {
    let on_message = |message: &redis::Msg| {
        if let Some(change) = decode(&origin, message.get_payload_bytes()) {
            counters.received.fetch_add(1, Ordering::Relaxed);
            local.publish(change);
        }
    };
    let on_back = || {
        counters.resubscribed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("redis change bus: subscribed again; announcing every list as changed");
        // Changes may have been missed: tell every stream and session to refetch.
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ] {
            local.publish(change);
        }
    };
    subscription.run(first, stop, on_message, on_back).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip_and_own_messages_skipped() {
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated("notes://a b".into()),
        ] {
            let text = encode("me", &change).unwrap();
            assert_eq!(decode("other", text.as_bytes()), Some(change));
            assert_eq!(decode("me", text.as_bytes()), None);
        }
        assert_eq!(decode("x", b"not json"), None);
        assert_eq!(decode("x", br#"{"v":2,"from":"y","change":"tools"}"#), None);
        assert_eq!(
            decode("x", br#"{"v":1,"from":"y","change":"resource"}"#),
            None
        );
    }
}
