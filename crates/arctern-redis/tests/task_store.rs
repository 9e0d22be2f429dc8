//! The Redis task store against a real `redis-server`: two `McpServer` instances share one
//! Redis, and a task started through one is polled, answered and cancelled through the
//! other, over real HTTP on 127.0.0.1; an outage degrades as documented.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arctern::client::{Client, ServerNotification, Subscription, ToolStart};
use arctern::server::mrtr::Ask;
use arctern::server::tasks::{
    TaskConfig, TaskError, TaskHandle, TaskRecord, TaskStore, TaskStoreError, TaskSupport,
};
use arctern::server::{McpHandler, McpServer, Server, ToolSpec};
use arctern::transport::http::HttpServer;
use arctern::types::mrtr::InputResponses;
use arctern::types::subscriptions::SubscriptionFilter;
use arctern::types::tasks::{DetailedTask, TaskStatus};
use arctern_redis::{RedisConfig, RedisTaskStore, redis};
use common::{RedisServer, redis_server};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Bound on every wait, so that a broken store fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(15);

fn config(redis: &RedisServer) -> RedisConfig {
    RedisConfig::new(redis.url())
        .key_prefix("arctern-test:")
        .channel("arctern-test:changes")
        .timeout(Duration::from_millis(500))
}

async fn deploy(task: TaskHandle) -> Result<String, TaskError> {
    task.progress(1, Some(2), "built").await;
    let go = task
        .ask(Ask::confirm("go", "Deploy to production?"))
        .await?;
    task.progress(2, Some(2), "deployed").await;
    Ok(format!("deployed: {go}"))
}

/// An instance of the fleet: its task store on `redis`; `heard` is set when a `forever`
/// task's work hears its cancellation.
async fn instance(redis: &RedisServer, heard: Arc<AtomicBool>) -> (Server<McpHandler>, String) {
    let store = RedisTaskStore::connect(config(redis)).await.unwrap();
    let server = McpServer::new("fleet-tasks")
        .tasks(
            TaskConfig::default()
                .store(store)
                .poll_interval(Duration::from_millis(20)),
        )
        .tool_spec(
            ToolSpec::new("deploy")
                .description("Builds, asks, deploys.")
                .task(TaskSupport::Required),
            deploy,
        )
        .tool_spec(
            ToolSpec::new("forever")
                .description("Runs until cancelled.")
                .task(TaskSupport::Required),
            move |task: TaskHandle| {
                let heard = heard.clone();
                async move {
                    task.status("running").await;
                    task.cancelled().await;
                    heard.store(true, Ordering::SeqCst);
                    "stopped"
                }
            },
        )
        .tool("quick", "Answers at once.", || async { "quick" })
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = HttpServer::new(server.clone())
        .listener(listener)
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    tokio::spawn(bound.serve());
    (server, url)
}

async fn started(client: &Client, tool: &str) -> String {
    match client.start_tool(tool, json!({})).await.unwrap() {
        ToolStart::Task(task) => task.task_id,
        other => panic!("{tool} must become a task: {other:?}"),
    }
}

/// Polls through `client` until the task has `status`.
async fn wait_for(client: &Client, id: &str, status: TaskStatus) -> DetailedTask {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let task = client.get_task(id).await.unwrap();
        if task.task.status == status {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} stayed {:?}, expected {status:?}",
            task.task.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next `notifications/tasks` on `sub`.
async fn next_task(sub: &mut Subscription) -> DetailedTask {
    use futures::StreamExt as _;
    loop {
        let n = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("a notification arrives")
            .expect("the stream is open")
            .unwrap();
        if let ServerNotification::Other(n) = n
            && n.method == "notifications/tasks"
        {
            return serde_json::from_value(n.params.unwrap()).unwrap();
        }
    }
}

fn accept_go() -> InputResponses {
    serde_json::from_value(json!({"go": {"action": "accept", "content": {"go": true}}})).unwrap()
}

async fn raw_redis(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_task_started_on_one_instance_is_polled_answered_and_cancelled_through_another() {
    let Some(binary) = redis_server() else { return };
    let redis = RedisServer::start(&binary);
    let heard_a = Arc::new(AtomicBool::new(false));
    let (a, url_a) = instance(&redis, heard_a.clone()).await;
    let (b, url_b) = instance(&redis, Arc::new(AtomicBool::new(false))).await;
    let at_a = Client::builder().connect(&url_a).await.unwrap();
    let at_b = Client::builder().connect(&url_b).await.unwrap();

    // Started on A; B sees it at once (creation is durable before the answer).
    let id = started(&at_a, "deploy").await;
    let seen = at_b.get_task(&id).await.unwrap();
    assert!(!seen.task.status.is_terminal());
    // A listener on B hears about the task running on A.
    let mut filter = SubscriptionFilter::default();
    filter.extra.insert("taskIds".into(), json!([id]));
    let mut heard_at_b = at_b.subscribe(filter).await.unwrap();
    assert_eq!(heard_at_b.acknowledged().extra["taskIds"], json!([id]));
    // The question reaches B's poll; B's answer reaches A's work.
    let asking = wait_for(&at_b, &id, TaskStatus::InputRequired).await;
    assert!(asking.input_requests.unwrap().contains_key("go"));
    assert_eq!(
        asking.task.status_message.as_deref(),
        Some("[1/2] built"),
        "progress is shared"
    );
    at_b.update_task(&id, &accept_go()).await.unwrap();
    let done = wait_for(&at_b, &id, TaskStatus::Completed).await;
    assert_eq!(
        done.result.unwrap()["content"][0]["text"],
        json!("deployed: true")
    );
    assert_eq!(
        at_a.get_task(&id).await.unwrap().task.status,
        TaskStatus::Completed
    );
    let mut statuses = Vec::new();
    loop {
        let task = next_task(&mut heard_at_b).await;
        assert_eq!(task.task.task_id, id);
        statuses.push(task.task.status);
        if task.task.status == TaskStatus::Completed {
            assert_eq!(
                task.result.unwrap()["content"][0]["text"],
                json!("deployed: true")
            );
            break;
        }
    }
    assert!(statuses.contains(&TaskStatus::Working), "{statuses:?}");
    drop(heard_at_b);
    // Answers to an ended task are ignored.
    at_b.update_task(&id, &accept_go()).await.unwrap();

    // Redis keeps the record for the task's time to live, no longer.
    let mut conn = raw_redis(&redis).await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("arctern-test:task:{id}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 300_000, "PTTL {ttl}");

    // Started on A, cancelled through B: A's work hears it, and both say cancelled.
    let id = started(&at_a, "forever").await;
    wait_for(&at_b, &id, TaskStatus::Working).await;
    at_b.cancel_task(&id).await.unwrap();
    wait_for(&at_b, &id, TaskStatus::Cancelled).await;
    wait_for(&at_a, &id, TaskStatus::Cancelled).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !heard_a.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "A's work heard the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Idempotent on a terminal task, from either side.
    at_b.cancel_task(&id).await.unwrap();
    at_a.cancel_task(&id).await.unwrap();

    // An unknown id is -32602 on every instance.
    let err = at_b
        .get_task("00000000000000000000000000000000")
        .await
        .unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32602);

    // The instance running a task is gone (nobody listens on its channel): an answer sent
    // elsewhere is refused with -32603, and a cancellation is recorded in Redis instead.
    let id = started(&at_a, "forever").await;
    let _: i64 = redis::cmd("HSET")
        .arg(format!("arctern-test:task:{id}"))
        .arg("owner")
        .arg("gone")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = at_b.update_task(&id, &accept_go()).await.unwrap_err();
    let error = err.protocol_error().unwrap();
    assert_eq!(error.code.0, -32603);
    assert!(
        error.message.contains("could not reach"),
        "{}",
        error.message
    );
    at_b.cancel_task(&id).await.unwrap();
    assert_eq!(
        at_b.get_task(&id).await.unwrap().task.status,
        TaskStatus::Cancelled
    );
    // A's work still runs and keeps reporting, but a terminal record is never replaced.
    at_a.cancel_task(&id).await.unwrap();
    assert_eq!(
        at_b.get_task(&id).await.unwrap().task.status,
        TaskStatus::Cancelled
    );
    a.shutdown();
    b.shutdown();
}

fn record(id: &str, principal: &str, ttl_ms: u64) -> TaskRecord {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    serde_json::from_value(json!({
        "taskId": id,
        "principal": principal,
        "tool": "deploy",
        "status": "working",
        "createdAtMs": now,
        "updatedAtMs": now,
        "ttlMs": ttl_ms,
    }))
    .unwrap()
}

#[tokio::test]
async fn records_carry_the_principal_expire_and_are_bounded() {
    let Some(binary) = redis_server() else { return };
    let redis = RedisServer::start(&binary);
    let a = RedisTaskStore::connect(config(&redis))
        .await
        .unwrap()
        .capacity(2);
    let b = RedisTaskStore::connect(config(&redis))
        .await
        .unwrap()
        .capacity(2);
    assert_ne!(a.instance(), b.instance());

    let first = record("t1", "alice", 60_000);
    a.create(first.clone()).await.unwrap();
    let loaded = b.load("t1").await.unwrap().unwrap();
    assert_eq!(loaded, first);
    assert_eq!(loaded.principal.as_deref(), Some("alice"));
    assert_eq!(b.load("t2").await.unwrap(), None);

    // The fleet holds at most `capacity` live tasks; expired ones make room.
    a.create(record("t2", "bob", 200)).await.unwrap();
    assert!(matches!(
        b.create(record("t3", "bob", 60_000)).await,
        Err(TaskStoreError::Full)
    ));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while b.load("t2").await.unwrap().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "t2 expires");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.create(record("t3", "bob", 60_000)).await.unwrap();

    // Saves replace the record, except a terminal one; a forgotten task is not revived.
    let mut done: Value = serde_json::to_value(&first).unwrap();
    done["status"] = json!("cancelled");
    b.save(serde_json::from_value(done).unwrap()).await.unwrap();
    let mut later: Value = serde_json::to_value(&first).unwrap();
    later["statusMessage"] = json!("still working");
    a.save(serde_json::from_value(later).unwrap())
        .await
        .unwrap();
    assert_eq!(
        a.load("t1").await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
    a.save(record("t2", "bob", 60_000)).await.unwrap();
    assert_eq!(a.load("t2").await.unwrap(), None);
}

#[tokio::test]
async fn a_redis_outage_fails_fast_with_clear_errors_and_ordinary_tools_keep_working() {
    let Some(binary) = redis_server() else { return };
    let mut redis = RedisServer::start(&binary);
    let (a, url_a) = instance(&redis, Arc::new(AtomicBool::new(false))).await;
    let (b, url_b) = instance(&redis, Arc::new(AtomicBool::new(false))).await;
    let at_a = Client::builder().connect(&url_a).await.unwrap();
    let at_b = Client::builder().connect(&url_b).await.unwrap();
    let id = started(&at_a, "forever").await;
    wait_for(&at_b, &id, TaskStatus::Working).await;

    redis.kill();
    // The instance running the task answers from memory.
    assert_eq!(
        at_a.get_task(&id).await.unwrap().task.status,
        TaskStatus::Working
    );
    // Any other instance answers -32603 within the timeout.
    let err = tokio::time::timeout(PATIENCE, at_b.get_task(&id))
        .await
        .expect("bounded")
        .unwrap_err();
    let error = err.protocol_error().unwrap();
    assert_eq!(error.code.0, -32603);
    assert!(
        error.message.contains("could not read the task"),
        "{}",
        error.message
    );
    let err = tokio::time::timeout(PATIENCE, at_b.cancel_task(&id))
        .await
        .expect("bounded")
        .unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32603);
    // No new task: the call fails at once, the tool does not run.
    let err = tokio::time::timeout(PATIENCE, at_a.start_tool("forever", json!({})))
        .await
        .expect("bounded")
        .unwrap_err();
    let error = err.protocol_error().unwrap();
    assert_eq!(error.code.0, -32603);
    assert!(
        error.message.contains("could not create the task"),
        "{}",
        error.message
    );
    // Ordinary tools never touch Redis.
    let quick = at_b.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(
        serde_json::to_value(&quick.content).unwrap()[0]["text"],
        json!("quick")
    );

    // Redis is back (empty: it kept nothing on disk): tasks work again, across instances.
    redis.spawn(&binary);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let id = loop {
        match at_a.start_tool("deploy", json!({})).await {
            Ok(ToolStart::Task(task)) => break task.task_id,
            Ok(other) => panic!("deploy must become a task: {other:?}"),
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "Redis came back: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait_for(&at_b, &id, TaskStatus::InputRequired).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    // A's subscription comes back with backoff: until then B's answer is refused, clearly.
    while let Err(e) = at_b.update_task(&id, &accept_go()).await {
        assert_eq!(e.protocol_error().unwrap().code.0, -32603);
        assert!(tokio::time::Instant::now() < deadline, "A subscribed again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(&at_b, &id, TaskStatus::Completed).await;
    a.shutdown();
    b.shutdown();
}
