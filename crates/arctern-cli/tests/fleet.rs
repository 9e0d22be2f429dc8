//! The fleet on real infrastructure: `scripts/fleet.sh up 3` (nginx, Redis, three `arctern
//! serve` processes sharing a key file), driven over loopback HTTP.
//!
//! Ignored by `cargo test`: they need nginx and redis-server. `scripts/fleet.sh test` (run
//! by `scripts/test.sh`) installs those when missing and runs them with `--ignored`. Each
//! test starts its own fleet in its own state directory and stops it when it ends, also on
//! failure. Loops are bounded by counts; waits are bounded by deadlines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The `_meta` envelope of every 2026-07-28 request.
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"fleet-test","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
/// How long any one wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);
/// Concurrent clients in the load tests.
const WORKERS: usize = 8;

// --- the fleet -------------------------------------------------------------------------------

struct Fleet {
    dir: PathBuf,
    info: Value,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fleet.sh")
}

impl Fleet {
    /// `fleet.sh up n` in a state directory of its own.
    fn up(n: usize, name: &str) -> Fleet {
        Fleet::up_with(n, name, &[])
    }

    /// `fleet.sh up n FLAGS...` in a state directory of its own.
    fn up_with(n: usize, name: &str, flags: &[&str]) -> Fleet {
        let dir =
            std::env::temp_dir().join(format!("arctern-fleet-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut fleet = Fleet {
            dir,
            info: Value::Null,
        };
        let n = n.to_string();
        let mut args = vec!["up", n.as_str()];
        args.extend_from_slice(flags);
        let out = fleet.run(&args);
        fleet.info = serde_json::from_str(out.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("fleet.sh up printed no JSON ({e}): {out}"));
        fleet
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("bash")
            .arg(script())
            .args(args)
            .env("ARCTERN_FLEET_DIR", &self.dir)
            .env("ARCTERN_BIN", env!("CARGO_BIN_EXE_arctern"))
            .output()
            .expect("bash runs fleet.sh");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "fleet.sh {args:?} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn url(&self) -> &str {
        self.info["url"].as_str().unwrap()
    }

    fn instances(&self) -> &[Value] {
        self.info["instances"].as_array().unwrap()
    }

    /// HAProxy's URL (`up --haproxy`).
    fn haproxy_url(&self) -> &str {
        self.info["haproxy_url"].as_str().expect("up --haproxy")
    }

    fn instance_url(&self, i: usize) -> &str {
        self.instances()[i]["url"].as_str().unwrap()
    }

    fn pid(&self, i: usize) -> i32 {
        self.instances()[i]["pid"].as_i64().unwrap() as i32
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.instances()[i]["log"].as_str().unwrap()).unwrap_or_default()
    }

    fn key_file(&self) -> &str {
        self.info["key_file"].as_str().unwrap()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("down")
            .env("ARCTERN_FLEET_DIR", &self.dir)
            .output();
    }
}

/// A child process of the test, killed when the test ends (also on failure).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: i32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {pid}");
}

/// Waits until a killed instance is gone: its process, and its listening socket. The
/// process turns zombie when its main thread exits, which can be before its other threads
/// have closed the sockets; until then the kernel still completes connections to the port
/// (and resets them), so a proxy would see a reset instead of a refused connection.
async fn wait_gone(pid: i32, url: &str) {
    let deadline = Instant::now() + DEADLINE;
    while Path::new(&format!("/proc/{pid}/stat")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
    {
        assert!(Instant::now() < deadline, "process {pid} did not go away");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let authority = Conn::new(url).authority;
    while TcpStream::connect(&authority).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "{authority} still accepts connections"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// --- HTTP ------------------------------------------------------------------------------------

/// One keep-alive connection to a URL's host.
struct Conn {
    authority: String,
    path: String,
    send: Option<SendRequest<Full<Bytes>>>,
    /// Responses received on the current connection: more than none means a reused one.
    served: u64,
    /// Requests sent again after a reused connection closed under them.
    resent: u64,
}

struct Reply {
    status: u16,
    instance: Option<String>,
    session: Option<String>,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl Conn {
    fn new(url: &str) -> Conn {
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        Conn {
            authority: authority.to_owned(),
            path: path.to_owned(),
            send: None,
            served: 0,
            resent: 0,
        }
    }

    async fn connect(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, String> {
        if self.send.as_ref().is_none_or(|s| s.is_closed()) {
            let stream = TcpStream::connect(&self.authority)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            stream.set_nodelay(true).ok();
            let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| format!("handshake: {e}"))?;
            tokio::spawn(connection);
            self.send = Some(send);
            self.served = 0;
        }
        Ok(self.send.as_mut().unwrap())
    }

    /// POSTs a JSON-RPC body; `session` for 2025-era requests.
    ///
    /// Like any HTTP/1.1 client, it sends a request again, once, on a new connection when a
    /// reused keep-alive connection closes before any answer: a proxy that reloads closes
    /// its idle connections without reading what arrives on them, so the request was not
    /// served. (Were it served after all, the second round of a flow sent twice would be
    /// refused by the fleet's one-time store, and the flow would fail visibly.)
    async fn post(
        &mut self,
        body: String,
        method: &str,
        session: Option<&str>,
    ) -> Result<Reply, String> {
        let reused = self.send.as_ref().is_some_and(|s| !s.is_closed()) && self.served > 0;
        match self.post_once(body.clone(), method, session).await {
            Err(Unanswered(e)) if reused => {
                self.send = None;
                self.resent += 1;
                match self.post_once(body, method, session).await {
                    Ok(reply) => reply,
                    Err(Unanswered(again)) => Err(format!("{e}; sent again: {again}")),
                }
            }
            Err(Unanswered(e)) => Err(e),
            Ok(reply) => reply,
        }
    }

    /// One attempt: `Err` when the connection failed before a response head arrived.
    async fn post_once(
        &mut self,
        body: String,
        method: &str,
        session: Option<&str>,
    ) -> Result<Result<Reply, String>, Unanswered> {
        let path = self.path.clone();
        let authority = self.authority.clone();
        let send = match self.connect().await {
            Ok(send) => send,
            Err(e) => return Ok(Err(e)),
        };
        let mut request = hyper::Request::post(path)
            .header("host", authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        match session {
            Some(id) => {
                request = request
                    .header("mcp-session-id", id)
                    .header("mcp-protocol-version", "2025-11-25");
            }
            None if method != "initialize" && !method.starts_with("notifications/") => {
                request = request
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", method);
                // The target, mirrored from the body as 2026-07-28 asks.
                let parsed: Value = serde_json::from_str(&body).unwrap_or_default();
                let target = match method {
                    "tools/call" | "prompts/get" => parsed["params"]["name"].as_str(),
                    "resources/read" => parsed["params"]["uri"].as_str(),
                    _ => None,
                };
                if let Some(target) = target {
                    request = request.header("mcp-name", target);
                }
            }
            None => {}
        }
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        if let Err(e) = send.ready().await {
            self.send = None;
            return Err(Unanswered(format!("connection: {e}")));
        }
        let send = self.send.as_mut().expect("connected");
        let response = match tokio::time::timeout(DEADLINE, send.send_request(request)).await {
            Err(_) => return Ok(Err("no answer in time".to_owned())),
            Ok(Err(e)) => {
                self.send = None;
                return Err(Unanswered(format!("request: {e:?}")));
            }
            Ok(Ok(response)) => response,
        };
        self.served += 1;
        Ok(self.read_reply(response).await)
    }

    /// The status, headers of note and body of a response.
    async fn read_reply(
        &mut self,
        response: hyper::Response<hyper::body::Incoming>,
    ) -> Result<Reply, String> {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (instance, session) = (header("arctern-instance"), header("mcp-session-id"));
        let body = tokio::time::timeout(DEADLINE, response.into_body().collect())
            .await
            .map_err(|_| "the body did not end in time".to_owned())?
            .map_err(|e| {
                self.send = None;
                format!("body: {e}")
            })?
            .to_bytes();
        Ok(Reply {
            status,
            instance,
            session,
            body,
        })
    }
}

/// A request whose connection closed before any answer came.
struct Unanswered(String);

fn call_body(id: u64, tool: &str, arguments: Value, retry: Option<(&Value, Value)>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some((state, answers)) = retry {
        params["requestState"] = state.clone();
        params["inputResponses"] = answers;
    }
    let params = params.to_string();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{},{META}}}}}"#,
        &params[..params.len() - 1]
    )
}

/// Where the two rounds of a flow landed, and the sealing key of its state.
struct Flow {
    round1: String,
    round2: String,
    key_id: String,
}

/// The key id in a token of the default codec (version, id length, id, …).
fn key_id(token: &str) -> String {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .unwrap_or_default();
    let len = usize::from(*raw.get(1).unwrap_or(&0));
    String::from_utf8_lossy(raw.get(2..2 + len).unwrap_or_default()).into_owned()
}

/// One two-round `confirm` flow on `conn`.
async fn confirm_flow(conn: &mut Conn, n: u64) -> Result<Flow, String> {
    let text = format!("flow-{n}");
    let first = conn
        .post(
            call_body(n * 2, "confirm", json!({"text": text}), None),
            "tools/call",
            None,
        )
        .await?;
    let round1 = first.json();
    if first.status != 200 || round1["result"]["resultType"] != "input_required" {
        return Err(format!(
            "round 1: HTTP {}: {}",
            first.status,
            String::from_utf8_lossy(&first.body)
        ));
    }
    let state = round1["result"]["requestState"].clone();
    let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let second = conn
        .post(
            call_body(
                n * 2 + 1,
                "confirm",
                json!({"text": text}),
                Some((&state, answers)),
            ),
            "tools/call",
            None,
        )
        .await?;
    let round2 = second.json();
    if second.status != 200 || round2["result"]["content"][0]["text"] != text.as_str() {
        return Err(format!(
            "round 2: HTTP {}: {}",
            second.status,
            String::from_utf8_lossy(&second.body)
        ));
    }
    Ok(Flow {
        round1: first.instance.unwrap_or_default(),
        round2: second.instance.unwrap_or_default(),
        key_id: key_id(state.as_str().unwrap_or_default()),
    })
}

// --- load ------------------------------------------------------------------------------------

/// Flows run by WORKERS clients through one URL until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    /// Flows each worker has started so far.
    started: Arc<Vec<AtomicU64>>,
    last_key: Arc<std::sync::Mutex<String>>,
    failures: Arc<std::sync::Mutex<Vec<String>>>,
    instances: Arc<std::sync::Mutex<BTreeMap<String, u64>>>,
    /// Requests the workers sent again on a new connection (see [`Conn::post`]), counted
    /// when they stop.
    resent: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(url: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let started: Arc<Vec<AtomicU64>> =
            Arc::new((0..WORKERS).map(|_| AtomicU64::new(0)).collect());
        let last_key = Arc::new(std::sync::Mutex::new(String::new()));
        let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
        let instances = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let resent = Arc::new(AtomicU64::new(0));
        let tasks = (0..WORKERS)
            .map(|w| {
                let (stop, done, failed, started) =
                    (stop.clone(), done.clone(), failed.clone(), started.clone());
                let (last_key, failures, instances, resent) = (
                    last_key.clone(),
                    failures.clone(),
                    instances.clone(),
                    resent.clone(),
                );
                let mut conn = Conn::new(url);
                tokio::spawn(async move {
                    let mut n = (w as u64) << 32;
                    // Bounded: a stuck test ends at its deadline anyway.
                    for _ in 0..1_000_000 {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        started[w].fetch_add(1, Ordering::SeqCst);
                        n += 1;
                        match confirm_flow(&mut conn, n).await {
                            Ok(flow) => {
                                done.fetch_add(1, Ordering::SeqCst);
                                *last_key.lock().unwrap() = flow.key_id;
                                *instances.lock().unwrap().entry(flow.round2).or_default() += 1;
                            }
                            Err(e) => {
                                failed.fetch_add(1, Ordering::SeqCst);
                                failures.lock().unwrap().push(e);
                                conn.send = None;
                            }
                        }
                    }
                    resent.fetch_add(conn.resent, Ordering::SeqCst);
                })
            })
            .collect();
        Load {
            stop,
            done,
            failed,
            started,
            last_key,
            failures,
            instances,
            resent,
            tasks,
        }
    }

    fn done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    fn failed(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    /// Waits until `more` further flows completed.
    async fn progress(&self, more: u64) {
        let target = self.done() + more;
        let deadline = Instant::now() + DEADLINE;
        while self.done() < target {
            assert!(
                Instant::now() < deadline,
                "the load made no progress ({} done, {} failed: {:?})",
                self.done(),
                self.failed(),
                self.failures.lock().unwrap().last()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until every worker has started a flow after now (so that every flow in flight
    /// now has ended).
    async fn flows_in_flight_ended(&self) {
        let marks: Vec<u64> = self
            .started
            .iter()
            .map(|s| s.load(Ordering::SeqCst))
            .collect();
        let deadline = Instant::now() + DEADLINE;
        while self
            .started
            .iter()
            .zip(&marks)
            .any(|(s, m)| s.load(Ordering::SeqCst) <= *m + 1)
        {
            assert!(Instant::now() < deadline, "flows in flight did not end");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn stop(self) -> (u64, u64, Vec<String>, BTreeMap<String, u64>) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            task.await.unwrap();
        }
        let failures = self.failures.lock().unwrap().clone();
        let instances = self.instances.lock().unwrap().clone();
        (
            self.done.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
            failures,
            instances,
        )
    }
}

/// Waits until every instance's log says its keys were reloaded to `ids`.
async fn wait_reloaded(fleet: &Fleet, ids: &str) {
    let line = format!("reloaded the request-state keys: {ids}\n");
    let deadline = Instant::now() + DEADLINE;
    for i in 0..fleet.instances().len() {
        while !fleet.log(i).contains(&line) {
            assert!(
                Instant::now() < deadline,
                "instance {i} did not reload to {ids}: {}",
                fleet.log(i)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn new_key() -> String {
    use base64::Engine as _;
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("random bytes");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// --- the tests -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn a_thousand_flows_cross_instances_through_nginx() {
    let fleet = Fleet::up(3, "flows");
    let total: u64 = 1_000;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..WORKERS {
        let next = next.clone();
        let mut conn = Conn::new(fleet.url());
        tasks.push(tokio::spawn(async move {
            let mut flows = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= total {
                    return flows;
                }
                flows.push(confirm_flow(&mut conn, n + 1).await);
            }
        }));
    }
    let mut crossed = 0;
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for task in tasks {
        for flow in task.await.unwrap() {
            match flow {
                Ok(f) => {
                    crossed += u64::from(f.round1 != f.round2);
                    seen.insert(f.round1);
                    seen.insert(f.round2);
                }
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} flows failed: {:?}",
        failures.len(),
        failures.first()
    );
    let expected: BTreeSet<String> = ["i1", "i2", "i3"].map(String::from).into();
    assert_eq!(
        seen, expected,
        "every instance served rounds (Arctern-Instance)"
    );
    // Round robin sends most second rounds to another instance than the first.
    assert!(
        crossed >= total / 3,
        "only {crossed} of {total} flows crossed instances"
    );
    eprintln!("{total} flows complete, {crossed} with their rounds on different instances");

    // One flow completes once on the whole fleet (the one-time store in Redis): its final
    // round, presented again, is refused by every instance, through nginx and directly.
    let mut front = Conn::new(fleet.url());
    let first = front
        .post(
            call_body(1, "confirm", json!({"text": "once"}), None),
            "tools/call",
            None,
        )
        .await
        .unwrap();
    let state = first.json()["result"]["requestState"].clone();
    let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let last = call_body(
        2,
        "confirm",
        json!({"text": "once"}),
        Some((&state, answers.clone())),
    );
    let done = front.post(last.clone(), "tools/call", None).await.unwrap();
    assert_eq!(done.json()["result"]["content"][0]["text"], "once");
    let completed_on = done.instance.clone().unwrap();
    let mut refused_by = BTreeSet::new();
    let mut replays: Vec<Conn> = (0..3).map(|i| Conn::new(fleet.instance_url(i))).collect();
    replays.push(Conn::new(fleet.url()));
    for conn in &mut replays {
        for _ in 0..3 {
            let replay = conn.post(last.clone(), "tools/call", None).await.unwrap();
            assert_eq!(replay.status, 400, "{:?}", replay.json());
            assert_eq!(
                replay.json()["error"],
                json!({"code": -32602, "message": "Invalid or expired requestState"})
            );
            refused_by.insert(replay.instance.unwrap());
        }
    }
    assert_eq!(refused_by, expected, "every instance refused the replay");
    assert!(refused_by.iter().any(|i| *i != completed_on));

    // A state minted by one instance opens on every other (each flow completes once, so one
    // flow per instance); a tampered one on none.
    let mut direct: Vec<Conn> = (0..3).map(|i| Conn::new(fleet.instance_url(i))).collect();
    let mut states = Vec::new();
    for n in 0..3 {
        let first = direct[0]
            .post(
                call_body(n, "confirm", json!({"text": "t"}), None),
                "tools/call",
                None,
            )
            .await
            .unwrap();
        let state = first.json()["result"]["requestState"]
            .as_str()
            .unwrap()
            .to_owned();
        states.push(state);
    }
    let mut tampered = states[0].clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = Value::String(String::from_utf8(tampered).unwrap());
    let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    for (conn, state) in direct.iter_mut().zip(states) {
        let ok = conn
            .post(
                call_body(
                    2,
                    "confirm",
                    json!({"text": "t"}),
                    Some((&Value::String(state), answers.clone())),
                ),
                "tools/call",
                None,
            )
            .await
            .unwrap();
        assert_eq!(ok.json()["result"]["content"][0]["text"], "t");
        let bad = conn
            .post(
                call_body(
                    3,
                    "confirm",
                    json!({"text": "t"}),
                    Some((&tampered, answers.clone())),
                ),
                "tools/call",
                None,
            )
            .await
            .unwrap();
        assert_eq!(bad.status, 400);
        assert_eq!(
            bad.json()["error"],
            json!({"code": -32602, "message": "Invalid or expired requestState"})
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn key_rotation_under_load_fails_no_flow() {
    let fleet = Fleet::up(3, "rotation");
    let old = std::fs::read_to_string(fleet.key_file())
        .unwrap()
        .trim()
        .to_owned();
    assert!(old.starts_with("k1:"));
    let new = format!("k2:{}", new_key());
    let load = Load::start(fleet.url());
    load.progress(50).await;
    assert_eq!(*load.last_key.lock().unwrap(), "k1");

    // 1. [k1, k2]: everyone learns k2; k1 still seals.
    std::fs::write(fleet.key_file(), format!("{old}\n{new}\n")).unwrap();
    fleet.run(&["reload-keys"]);
    wait_reloaded(&fleet, "k1, k2").await;
    load.progress(50).await;
    // 2. [k2, k1]: k2 seals; flows started under k1 still finish.
    std::fs::write(fleet.key_file(), format!("{new}\n{old}\n")).unwrap();
    fleet.run(&["reload-keys"]);
    wait_reloaded(&fleet, "k2, k1").await;
    load.flows_in_flight_ended().await;
    load.progress(50).await;
    assert_eq!(
        *load.last_key.lock().unwrap(),
        "k2",
        "k2 seals after step 2"
    );
    // 3. [k2]: no flow sealed under k1 is in flight any more (they end within one round
    // trip here; a real fleet waits one TTL).
    std::fs::write(fleet.key_file(), format!("{new}\n")).unwrap();
    fleet.run(&["reload-keys"]);
    wait_reloaded(&fleet, "k2").await;
    load.progress(50).await;
    let (done, failed, failures, _) = load.stop().await;
    assert_eq!(failed, 0, "failed flows during rotation: {failures:?}");
    eprintln!("{done} flows through three rotation steps, 0 failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn sigkill_of_one_instance_fails_only_what_was_in_flight_on_it() {
    let fleet = Fleet::up(3, "sigkill");
    let load = Load::start(fleet.url());
    load.progress(100).await;
    signal(fleet.pid(1), "KILL");
    let at_kill = load.failed();
    load.progress(200).await;
    let (done, failed, failures, _) = load.stop().await;
    // Each worker has one request in flight: at most WORKERS requests were on i2.
    assert!(
        failed - at_kill <= WORKERS as u64,
        "{failed} flows failed, more than were in flight: {failures:?}"
    );
    for failure in &failures {
        assert!(
            failure.contains("HTTP 502"),
            "an unexpected failure: {failure}"
        );
    }
    // After the kill settled, new flows all complete, on the two survivors.
    let fresh = Load::start(fleet.url());
    fresh.progress(200).await;
    let (after, failed_after, failures_after, instances) = fresh.stop().await;
    assert_eq!(failed_after, 0, "new flows failed: {failures_after:?}");
    assert!(
        !instances.contains_key("i2"),
        "the killed instance still answered: {instances:?}"
    );
    eprintln!(
        "SIGKILL under load: {} of {done} flows failed (in flight on i2); {after} new flows complete",
        failed - at_kill
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn a_graceful_restart_fails_no_flow() {
    let fleet = Fleet::up(3, "restart");
    let load = Load::start(fleet.url());
    load.progress(100).await;
    let dir = fleet.dir.clone();
    let restarted = tokio::task::spawn_blocking(move || {
        let out = Command::new("bash")
            .arg(script())
            .args(["restart", "i2"])
            .env("ARCTERN_FLEET_DIR", &dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    })
    .await
    .unwrap();
    assert_ne!(
        restarted["instances"][1]["pid"],
        fleet.info["instances"][1]["pid"]
    );
    load.progress(300).await;
    let resent = load.resent.clone();
    let (done, failed, failures, instances) = load.stop().await;
    assert_eq!(failed, 0, "flows failed during the restart: {failures:?}");
    assert!(
        instances.contains_key("i2"),
        "i2 serves again: {instances:?}"
    );
    eprintln!(
        "graceful restart of i2 under load: {done} flows, 0 failed ({} requests sent again \
         after nginx's reload closed their keep-alive connection)",
        resent.load(Ordering::SeqCst)
    );
}

/// Reads SSE `data:` lines from a streaming response until one satisfies `want`.
async fn sse_until(
    body: &mut hyper::body::Incoming,
    buffer: &mut String,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data:")
                    && let Ok(value) = serde_json::from_str::<Value>(data.trim())
                    && want(&value)
                {
                    return value;
                }
            }
        }
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("an event in time")
            .expect("the stream stays open")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            buffer.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn a_note_written_on_one_instance_reaches_a_listener_on_another_and_redis_outages_degrade() {
    let fleet = Fleet::up(3, "notes");
    // A subscriptions/listen stream on i3.
    let i3 = Conn::new(fleet.instance_url(2));
    let stream = TcpStream::connect(&i3.authority).await.unwrap();
    let (mut send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let listen = format!(
        r#"{{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{{"notifications":{{"resourceSubscriptions":["notes://shopping"]}},{META}}}}}"#
    );
    let request = hyper::Request::post(&i3.path)
        .header("host", &i3.authority)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(listen)))
        .unwrap();
    send.ready().await.unwrap();
    let response = send.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["arctern-instance"], "i3");
    let mut body = response.into_body();
    let mut buffer = String::new();
    sse_until(&mut body, &mut buffer, |v| {
        v["method"] == "notifications/subscriptions/acknowledged"
    })
    .await;

    // The note, written on i1.
    let mut i1 = Conn::new(fleet.instance_url(0));
    let wrote = i1
        .post(
            call_body(1, "note", json!({"name": "shopping", "text": "eggs"}), None),
            "tools/call",
            None,
        )
        .await
        .unwrap();
    assert_eq!(wrote.instance.as_deref(), Some("i1"));
    assert_eq!(
        wrote.json()["result"]["isError"],
        Value::Null,
        "{:?}",
        wrote.json()
    );
    let updated = sse_until(&mut body, &mut buffer, |v| {
        v["method"] == "notifications/resources/updated"
    })
    .await;
    assert_eq!(updated["params"]["uri"], "notes://shopping");

    // Stored in Redis: any instance reads it.
    let mut front = Conn::new(fleet.url());
    let read = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{{"uri":"notes://shopping",{META}}}}}"#
    );
    for _ in 0..3 {
        let got = front
            .post(read.clone(), "resources/read", None)
            .await
            .unwrap();
        assert_eq!(
            got.json()["result"]["contents"][0]["text"],
            "eggs",
            "{:?}",
            got.json()
        );
    }

    // Redis goes away: writing a note fails with a clear tool error at once (bounded), flows
    // keep working, the listen stream stays open.
    let redis_pid: i32 = std::fs::read_to_string(fleet.dir.join("redis.pid"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    signal(redis_pid, "KILL");
    let failed = i1
        .post(
            call_body(2, "note", json!({"name": "shopping", "text": "milk"}), None),
            "tools/call",
            None,
        )
        .await
        .unwrap();
    let result = &failed.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the notes store is unavailable"),
        "{result}"
    );
    let unreadable = front
        .post(read.clone(), "resources/read", None)
        .await
        .unwrap();
    assert_eq!(
        unreadable.json()["error"]["code"],
        -32603,
        "{:?}",
        unreadable.json()
    );
    // The one-time store is in Redis: first rounds work on every instance; later rounds are
    // refused at once (closed), with an internal error, on every instance.
    let mut conn = Conn::new(fleet.url());
    let mut refused_by = BTreeSet::new();
    for n in 0..6 {
        let first = conn
            .post(
                call_body(n, "confirm", json!({"text": "t"}), None),
                "tools/call",
                None,
            )
            .await
            .unwrap();
        assert_eq!(first.json()["result"]["resultType"], "input_required");
        let state = first.json()["result"]["requestState"].clone();
        let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
        let second = conn
            .post(
                call_body(n, "confirm", json!({"text": "t"}), Some((&state, answers))),
                "tools/call",
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            second.json()["error"],
            json!({"code": -32603, "message": "The server could not check the request state"})
        );
        refused_by.insert(second.instance.unwrap());
    }
    assert_eq!(refused_by.len(), 3, "{refused_by:?}");

    // Redis is back (empty): flows complete again once the connections are back (bounded).
    let redis_url = fleet.info["redis"].as_str().unwrap().to_owned();
    let port = redis_url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let redis_server = std::env::var("ARCTERN_REDIS_SERVER").unwrap_or("redis-server".into());
    let mut redis = Command::new(redis_server);
    if let Ok(libs) = std::env::var("ARCTERN_TOOL_LIBS") {
        redis.env("LD_LIBRARY_PATH", libs);
    }
    let _restarted = KillOnDrop(
        redis
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                port,
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&fleet.dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server starts again"),
    );
    let deadline = Instant::now() + DEADLINE;
    let mut completed = 0;
    for n in 100..10_000 {
        if completed == 10 {
            break;
        }
        assert!(Instant::now() < deadline, "flows did not complete again");
        match confirm_flow(&mut conn, n).await {
            Ok(_) => completed += 1,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert_eq!(completed, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and redis-server: scripts/fleet.sh test"]
async fn a_2025_client_completes_a_flow_through_the_shim_behind_nginx_and_haproxy() {
    use arctern::Era;
    use arctern::client::Client;
    use arctern::types::elicitation::ElicitResult;

    let fleet = Fleet::up_with(3, "legacy", &["--haproxy"]);
    // Sessions open round robin, so these land on every instance; nginx routes the session
    // by its id's instance prefix, HAProxy by its stick table (balance hdr(Mcp-Session-Id)).
    for (round, front) in [fleet.url(), fleet.haproxy_url()]
        .into_iter()
        .cycle()
        .take(12)
        .enumerate()
    {
        let client = Client::builder()
            .name("fleet-legacy")
            .era(Era::Legacy)
            .on_elicit(|_question| async move { Ok(ElicitResult::accept([("ok", true)])) })
            .connect(front)
            .await
            .unwrap_or_else(|e| panic!("a legacy session opens through {front}: {e}"));
        let text = format!("legacy-{round}");
        let result =
            tokio::time::timeout(DEADLINE, client.call_tool("confirm", json!({"text": text})))
                .await
                .expect("the flow ends in time")
                .expect("the flow completes");
        assert_eq!(result.content[0].as_text(), Some(text.as_str()));
        client.close().await.unwrap();
    }

    // A session id that no instance holds: 404 at once, not a hang, through either front.
    let mut front = Conn::new(fleet.url());
    let mut haproxy = Conn::new(fleet.haproxy_url());
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned();
    for session in ["i2.00000000000000000000000000000000", "nobody"] {
        for conn in [&mut front, &mut haproxy] {
            let reply = conn
                .post(body.clone(), "tools/list", Some(session))
                .await
                .unwrap();
            assert_eq!(reply.status, 404, "{session}");
            assert_eq!(reply.json()["error"]["code"], -32001);
        }
    }
    // A live session presented to an instance that does not hold it (what a plain hash of
    // the header does to most sessions): 404 at once; its own instance serves it.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut at_i1 = Conn::new(fleet.instance_url(0));
    let session = at_i1
        .post(init.to_owned(), "initialize", None)
        .await
        .unwrap()
        .session
        .expect("a session id");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    at_i1
        .post(
            initialized.to_owned(),
            "notifications/initialized",
            Some(&session),
        )
        .await
        .unwrap();
    for i in [1, 2] {
        let reply = Conn::new(fleet.instance_url(i))
            .post(body.clone(), "tools/list", Some(&session))
            .await
            .unwrap();
        assert_eq!(reply.status, 404);
        assert_eq!(reply.json()["error"]["code"], -32001);
    }
    let served = at_i1
        .post(body.clone(), "tools/list", Some(&session))
        .await
        .unwrap();
    assert_eq!(served.status, 200, "{:?}", served.json());
    // The session of a dead instance: its backup answers 404 at once.
    let mut i1 = Conn::new(fleet.url());
    let opened = i1.post(init.to_owned(), "initialize", None).await.unwrap();
    let session = opened.session.expect("a session id");
    let owner = session.split('.').next().unwrap().to_owned();
    let index = ["i1", "i2", "i3"]
        .iter()
        .position(|i| *i == owner)
        .expect("the id names its instance");
    signal(fleet.pid(index), "KILL");
    wait_gone(fleet.pid(index), fleet.instance_url(index)).await;
    let reply = front
        .post(body, "tools/list", Some(&session))
        .await
        .unwrap();
    assert_eq!(
        reply.status,
        404,
        "{}: {}",
        String::from_utf8_lossy(&reply.body),
        std::fs::read_to_string(fleet.dir.join("nginx-error.log")).unwrap_or_default()
    );
}
