//! What a fleet member needs from one server, over real HTTP on loopback: `Arctern-Instance`
//! on every response, session ids that name their instance, and a configured change bus that
//! carries changes both ways (out from this instance, and in from others to its listeners).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arctern::server::extract::Args;
use arctern::server::{
    Change, ChangeBus, ChangeReceiver, LocalChangeBus, McpServer, ResourceTemplateSpec,
};
use arctern::transport::http::{HttpConfig, HttpServer};
use schemars::JsonSchema;
use serde::Deserialize;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A bus that records what this instance publishes (what a shared bus would send out).
#[derive(Debug, Default)]
struct Recording {
    local: LocalChangeBus,
    sent: Mutex<Vec<Change>>,
    subscribers: AtomicUsize,
}

impl ChangeBus for Recording {
    fn publish(&self, change: Change) {
        self.sent.lock().unwrap().push(change.clone());
        self.local.publish(change);
    }
    fn subscribe(&self) -> ChangeReceiver {
        self.subscribers.fetch_add(1, Ordering::SeqCst);
        self.local.subscribe()
    }
    fn local_receivers(&self) -> usize {
        self.local.local_receivers()
    }
}

#[derive(Deserialize, JsonSchema)]
struct Vars {
    /// The note.
    name: String,
}

async fn note(Args(v): Args<Vars>) -> String {
    v.name
}

fn post(addr: &str, headers: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
}

fn read_all(mut stream: TcpStream) -> String {
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

/// Reads until `needle` appears (bounded by the read timeout).
fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        assert!(Instant::now() < deadline, "no {needle:?} in {seen}");
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_member_names_itself_and_uses_its_change_bus() {
    let bus = Arc::new(Recording::default());
    let server = McpServer::new("fleet")
        .change_bus(bus.clone())
        .resource_template(ResourceTemplateSpec::new("notes://{name}", "note"), note)
        .build()
        .unwrap();
    let notifier = server.change_notifier();
    let bound = HttpServer::new(server)
        .bind("127.0.0.1:0")
        .config(HttpConfig::new().instance_id("i7"))
        .listen()
        .await
        .unwrap();
    let addr = bound.local_addr().to_string();
    let serving = tokio::spawn(bound.serve());

    let addr2 = addr.clone();
    let stream = tokio::task::spawn_blocking(move || {
        let addr = addr2;
        // Every answer names the instance: a result, a refusal, another path.
        let list = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"resources/templates/list","params":{{{META}}}}}"#);
        let ok = read_all(post(
            &addr,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/templates/list\r\nConnection: close\r\n",
            &list,
        ));
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.to_ascii_lowercase().contains("\r\narctern-instance: i7\r\n"), "{ok}");
        let refused = read_all(post(&addr, "Connection: close\r\n", "not json"));
        assert!(refused.to_ascii_lowercase().contains("\r\narctern-instance: i7\r\n"), "{refused}");
        let mut other = TcpStream::connect(&addr).unwrap();
        write!(other, "GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let other = read_all(other);
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        assert!(other.to_ascii_lowercase().contains("\r\narctern-instance: i7\r\n"), "{other}");

        // A 2025-era session id starts with the instance id, for routing by prefix.
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let opened = read_all(post(&addr, "Connection: close\r\n", init)).to_ascii_lowercase();
        assert!(opened.contains("\r\nmcp-session-id: i7."), "{opened}");

        // A listen stream receives what arrives on the bus from elsewhere.
        let listen = format!(
            r#"{{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{{"notifications":{{"resourceSubscriptions":["notes://a"]}},{META}}}}}"#
        );
        let mut stream = post(
            &addr,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n",
            &listen,
        );
        let mut seen = String::new();
        read_until(&mut stream, &mut seen, "notifications/subscriptions/acknowledged");
        stream
    })
    .await
    .unwrap();
    let mut stream = stream;
    // As if another instance announced it: straight onto the bus.
    bus.local
        .publish(Change::ResourceUpdated("notes://a".into()));
    let seen = tokio::task::spawn_blocking(move || {
        let mut seen = String::new();
        read_until(&mut stream, &mut seen, "notifications/resources/updated");
        seen
    })
    .await
    .unwrap();
    assert!(seen.contains("notes://a"), "{seen}");

    // What this instance announces goes out on the bus.
    notifier.resource_updated("notes://b");
    assert_eq!(
        bus.sent.lock().unwrap().as_slice(),
        &[Change::ResourceUpdated("notes://b".into())]
    );
    // The listen stream and the legacy session's forwarder subscribed to the bus.
    assert!(bus.subscribers.load(Ordering::SeqCst) >= 2);
    serving.abort();
}
