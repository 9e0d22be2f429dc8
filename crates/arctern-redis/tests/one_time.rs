//! The Redis one-time store against a real `redis-server`: a flow completes once across
//! instances, and an outage refuses later rounds at once (closed) while first rounds work.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use arctern::server::budget::{Budget, Caller, Scope};
use arctern::server::connection::{Reply, RequestOrigin, TransportKind};
use arctern::server::mrtr::{Ask, Claim, Interrupt, OneTimeStore, Questions};
use arctern::server::{McpHandler, McpServer, Server};
use arctern::state::{FlowId, KeyRing};
use arctern_redis::{Error, RedisConfig, RedisOneTimeStore};
use common::{RedisServer, redis_server};
use serde_json::{Value, json};

/// Far beyond every configured bound: reaching it means something hung.
const HANG: Duration = Duration::from_secs(30);

fn id(n: u8) -> FlowId {
    FlowId::from_bytes([n; 16])
}

fn me() -> Caller {
    Caller::new(None, Some("127.0.0.1".parse().unwrap()))
}

fn config(redis: &RedisServer) -> RedisConfig {
    RedisConfig::new(redis.url())
        .key_prefix("arctern-test:")
        .timeout(Duration::from_millis(500))
}

#[tokio::test]
async fn claims_are_shared_between_connections_and_expire_with_the_window() {
    let Some(binary) = redis_server() else { return };
    let redis = RedisServer::start(&binary);
    let a = RedisOneTimeStore::connect(config(&redis)).await.unwrap();
    let b = RedisOneTimeStore::connect(config(&redis)).await.unwrap();
    assert_eq!(a.key(id(1)), format!("arctern-test:flow:{}", id(1)));
    let later = SystemTime::now() + Duration::from_secs(60);

    // A round running on A makes the same flow busy on B; other flows are independent.
    assert_eq!(a.claim(id(1), later, &me()).await.unwrap(), Claim::Granted);
    assert_eq!(b.claim(id(1), later, &me()).await.unwrap(), Claim::Busy);
    assert_eq!(b.claim(id(2), later, &me()).await.unwrap(), Claim::Granted);
    // Asking more releases the claim: the next round may run anywhere.
    a.finish(id(1), false, later, &me()).await.unwrap();
    assert_eq!(b.claim(id(1), later, &me()).await.unwrap(), Claim::Granted);
    // Completion on B is seen by A; a late release never undoes it.
    b.finish(id(1), true, later, &me()).await.unwrap();
    assert_eq!(
        a.claim(id(1), later, &me()).await.unwrap(),
        Claim::Completed
    );
    a.finish(id(1), false, later, &me()).await.unwrap();
    assert_eq!(
        a.claim(id(1), later, &me()).await.unwrap(),
        Claim::Completed
    );

    // Redis forgets a flow when its window ends.
    let soon = SystemTime::now() + Duration::from_millis(150);
    assert_eq!(a.claim(id(3), soon, &me()).await.unwrap(), Claim::Granted);
    a.finish(id(3), true, soon, &me()).await.unwrap();
    assert_eq!(
        b.claim(id(3), later, &me()).await.unwrap(),
        Claim::Completed
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match b.claim(id(3), later, &me()).await.unwrap() {
            Claim::Granted => break,
            Claim::Completed => {
                assert!(Instant::now() < deadline, "the key expires");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("a completed flow never turns {other:?}"),
        }
    }
    // A window already over still stores something Redis accepts (at least 1 ms).
    let past = SystemTime::now() - Duration::from_secs(1);
    assert_eq!(a.claim(id(4), past, &me()).await.unwrap(), Claim::Granted);
}

#[tokio::test]
async fn a_callers_share_holds_across_the_fleet_and_frees_as_its_flows_expire() {
    let Some(binary) = redis_server() else { return };
    let redis = RedisServer::start(&binary);
    let a = RedisOneTimeStore::connect(config(&redis))
        .await
        .unwrap()
        .caller_share(3);
    let b = RedisOneTimeStore::connect(config(&redis))
        .await
        .unwrap()
        .caller_share(3);
    let flooder = Caller::new(None, Some("127.0.0.1".parse().unwrap()));
    let other = Caller::new(None, Some("127.0.0.2".parse().unwrap()));
    assert_eq!(
        a.held_key(&flooder),
        "arctern-test:held:peer:127.0.0.1".to_owned()
    );
    let soon = SystemTime::now() + Duration::from_millis(300);
    let later = SystemTime::now() + Duration::from_secs(60);

    // Three flows of one caller, on two instances, fill its share on both.
    for (store, n) in [(&a, 10), (&b, 11), (&a, 12)] {
        assert_eq!(
            store.claim(id(n), soon, &flooder).await.unwrap(),
            Claim::Granted
        );
        store.finish(id(n), true, soon, &flooder).await.unwrap();
    }
    for store in [&a, &b] {
        let Claim::OverBudget(refusal) = store.claim(id(13), later, &flooder).await.unwrap() else {
            panic!("the fourth flow was not refused");
        };
        assert_eq!(refusal.budget(), Budget::OneTimeFlows);
        assert_eq!(refusal.scope(), Scope::Caller);
        assert!(refusal.retry_after() <= Duration::from_secs(1), "{refusal}");
    }
    // Flows it holds still answer; another caller is served.
    assert_eq!(
        b.claim(id(10), later, &flooder).await.unwrap(),
        Claim::Completed
    );
    assert_eq!(
        b.claim(id(20), later, &other).await.unwrap(),
        Claim::Granted
    );

    // Its flows expire, and with them its count.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match a.claim(id(13), later, &flooder).await.unwrap() {
            Claim::Granted => break,
            Claim::OverBudget(_) => {
                assert!(Instant::now() < deadline, "the share frees");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// A two-round transfer whose completions are counted, sealing with `keys`.
fn bank(keys: KeyRing, store: RedisOneTimeStore, done: Arc<AtomicUsize>) -> Server<McpHandler> {
    McpServer::new("bank")
        .state_keys(keys)
        .one_time_store(store)
        .tool("transfer", "", move |q: Questions| {
            let done = done.clone();
            async move {
                let go = q.answer(Ask::confirm("go", "Transfer 10 EUR?"))?;
                let sure = q.answer(Ask::confirm("sure", "Really?"))?;
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Interrupt>(format!("{go} {sure}"))
            }
        })
        .build()
        .unwrap()
}

async fn call(server: &Server<McpHandler>, extra: Value) -> Value {
    let mut params = json!({
        "name": "transfer",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let reply = server
        .handle_bytes(
            &serde_json::to_vec(&body).unwrap(),
            RequestOrigin::new(TransportKind::Memory),
        )
        .await;
    match reply {
        Reply::Message { body, .. } => serde_json::from_slice(&body).unwrap(),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn answer(key: &str, previous: &Value) -> Value {
    let state = previous["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {previous}"));
    json!({
        "inputResponses": {key: {"action": "accept", "content": {key: true}}},
        "requestState": state
    })
}

#[tokio::test]
async fn a_flow_completed_on_one_instance_is_refused_on_another_and_an_outage_fails_closed() {
    let Some(binary) = redis_server() else { return };
    let mut redis = RedisServer::start(&binary);
    let keys = KeyRing::generate();
    let done = Arc::new(AtomicUsize::new(0));
    let a = bank(
        keys.clone(),
        RedisOneTimeStore::connect(config(&redis)).await.unwrap(),
        done.clone(),
    );
    let b = bank(
        keys,
        RedisOneTimeStore::connect(config(&redis)).await.unwrap(),
        done.clone(),
    );

    // Rounds alternate between the instances; the flow completes on A.
    let r0 = call(&a, json!({})).await;
    let r1 = call(&b, answer("go", &r0)).await;
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    let last = answer("sure", &r1);
    let r2 = call(&a, last.clone()).await;
    assert_eq!(r2["result"]["resultType"], "complete", "{r2}");
    assert_eq!(done.load(Ordering::SeqCst), 1);

    // Its final round replayed on B, and an earlier round on either, are refused.
    let refused = json!({"code": -32602, "message": "Invalid or expired requestState"});
    assert_eq!(call(&b, last.clone()).await["error"], refused);
    assert_eq!(call(&a, last).await["error"], refused);
    assert_eq!(call(&b, answer("go", &r0)).await["error"], refused);
    assert_eq!(done.load(Ordering::SeqCst), 1, "the transfer ran once");

    // A second flow reaches its last round, then Redis goes away.
    let s0 = call(&a, json!({})).await;
    let s1 = call(&b, answer("go", &s0)).await;
    redis.kill();
    // First rounds never touch the store: they keep working.
    let t0 = call(&b, json!({})).await;
    assert_eq!(t0["result"]["resultType"], "input_required", "{t0}");
    // Later rounds are refused within the bound, and the handler does not run.
    let down = tokio::time::timeout(HANG, call(&a, answer("sure", &s1)))
        .await
        .expect("bounded, not hung");
    assert_eq!(
        down["error"],
        json!({"code": -32603, "message": "The server could not check the request state"})
    );
    assert_eq!(done.load(Ordering::SeqCst), 1);

    // Redis is back (empty: it kept nothing): the interrupted flow can finish once.
    redis.spawn(&binary);
    let deadline = Instant::now() + Duration::from_secs(15);
    let back = loop {
        let r = call(&b, answer("sure", &s1)).await;
        if r["error"]["code"] != -32603 || Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(back["result"]["resultType"], "complete", "{back}");
    assert_eq!(done.load(Ordering::SeqCst), 2);
    assert_eq!(call(&a, answer("sure", &s1)).await["error"], refused);
}

#[tokio::test]
async fn connecting_to_a_redis_that_is_not_there_fails_within_the_timeout() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config =
        RedisConfig::new(format!("redis://127.0.0.1:{port}/0")).timeout(Duration::from_millis(300));
    let err = tokio::time::timeout(HANG, RedisOneTimeStore::connect(config))
        .await
        .expect("bounded, not hung")
        .unwrap_err();
    assert!(
        matches!(err, Error::Redis(_) | Error::Timeout(_)),
        "{err:?}"
    );
}
