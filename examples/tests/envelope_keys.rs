//! The `envelope_keys` example as real processes: a flow started on one finishes on
//! another, with data keys rotating every second and no shared sealing key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const KEK: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

struct Instance {
    child: Child,
    addr: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(kek: &str) -> Instance {
    let mut child = Command::new(env!("CARGO_BIN_EXE_envelope_keys"))
        .args(["--port", "0", "--rotate-secs", "1"])
        .env("ARCTERN_KMS_KEY", kek)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the example prints its URL");
    let addr = line
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    Instance { child, addr }
}

fn call(instance: &Instance, id: i64, params: &Value) -> Value {
    let mut params = params.clone();
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let body =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
    let mut stream = TcpStream::connect(&instance.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: transfer\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        instance.addr,
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let json = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn flows_cross_instances_that_share_only_the_key_service() {
    let (a, b) = (start(KEK), start(KEK));
    let args = json!({"name": "transfer", "arguments": {"amount": 1250, "to": "ACME"}});
    // Several flows, spread over data-key rotations (every second), each crossing.
    for round in 0..3 {
        let r1 = call(&a, 1, &args);
        assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
        let mut retry = args.clone();
        retry["inputResponses"] =
            json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        retry["requestState"] = r1["result"]["requestState"].clone();
        let r2 = call(&b, 2, &retry);
        let text = r2["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains(&format!("process {}", b.child.id())),
            "round {round}: {r2}"
        );
        std::thread::sleep(Duration::from_millis(700));
    }
    // An instance of another key service refuses the tokens.
    let stranger = start("ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=");
    let r1 = call(&a, 3, &args);
    let mut retry = args.clone();
    retry["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    retry["requestState"] = r1["result"]["requestState"].clone();
    let refused = call(&stranger, 4, &retry);
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState"})
    );
}
