//! The Redis change bus against a real `redis-server`: changes cross instances, and an
//! outage loses only what crosses while Redis is away.

mod common;

use std::time::Duration;

use arctern::server::{Change, ChangeBus, ChangeReceiver};
use arctern_redis::{RedisChangeBus, RedisConfig};
use common::{RedisServer, redis_server};

const WAIT: Duration = Duration::from_secs(15);

async fn next(rx: &mut ChangeReceiver) -> Change {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a change arrives")
        .expect("the bus is open")
}

#[tokio::test]
async fn changes_cross_instances_and_an_outage_degrades_predictably() {
    let Some(binary) = redis_server() else { return };
    let mut redis = RedisServer::start(&binary);
    let config = RedisConfig::new(redis.url())
        .channel("arctern:test-changes")
        .timeout(Duration::from_millis(500));
    let a = RedisChangeBus::connect(config.clone()).await.unwrap();
    let b = RedisChangeBus::connect(config.clone()).await.unwrap();
    let mut at_a = a.subscribe();
    let mut at_b = b.subscribe();
    assert_eq!(a.local_receivers(), 1);

    // Published on A: A's own receivers at once, B's through Redis; nothing twice.
    a.publish(Change::ResourceUpdated("notes://one".into()));
    assert_eq!(
        next(&mut at_a).await,
        Change::ResourceUpdated("notes://one".into())
    );
    assert_eq!(
        next(&mut at_b).await,
        Change::ResourceUpdated("notes://one".into())
    );
    b.publish(Change::ToolsListChanged);
    assert_eq!(next(&mut at_b).await, Change::ToolsListChanged);
    assert_eq!(next(&mut at_a).await, Change::ToolsListChanged);
    a.publish(Change::PromptsListChanged);
    assert_eq!(next(&mut at_a).await, Change::PromptsListChanged);
    assert_eq!(
        next(&mut at_b).await,
        Change::PromptsListChanged,
        "B saw its own change once"
    );

    // Redis goes away: A's streams still get A's changes at once; the publish fails (bounded).
    redis.kill();
    a.publish(Change::ResourceUpdated("notes://lost".into()));
    assert_eq!(
        next(&mut at_a).await,
        Change::ResourceUpdated("notes://lost".into())
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    while a.stats().publish_failed == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the failed publish is counted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Redis comes back: B subscribes again and tells its receivers that every list changed
    // (the lost update is not replayed), then changes cross again.
    redis.spawn(&binary);
    assert_eq!(next(&mut at_b).await, Change::ToolsListChanged);
    assert_eq!(next(&mut at_b).await, Change::PromptsListChanged);
    assert_eq!(next(&mut at_b).await, Change::ResourcesListChanged);
    assert!(b.stats().resubscribed >= 1);
    // A's publisher reconnects on its next command; the first one after the outage may
    // still fail, so send until one crosses (bounded).
    let mut crossed = false;
    for i in 0..50 {
        a.publish(Change::ResourceUpdated(format!("notes://back-{i}").into()));
        let got = tokio::time::timeout(Duration::from_millis(200), at_b.recv()).await;
        if let Ok(Ok(Change::ResourceUpdated(uri))) = got {
            assert!(uri.starts_with("notes://back-"), "{uri}");
            crossed = true;
            break;
        }
    }
    assert!(crossed, "changes cross instances again after the outage");
    assert!(a.stats().published >= 3);
}
