//! `arctern serve --bind`: the demo in a container binds every interface, and still refuses
//! requests for a host name that is not its own (DNS rebinding).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const ARCTERN: &str = env!("CARGO_BIN_EXE_arctern");

/// Sends one `tools/list` with this `Host` and returns the status line.
fn status(port: u16, host: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn a_demo_on_every_interface_refuses_a_rebound_host() {
    let mut child = Command::new(ARCTERN)
        .args([
            "serve", "--bind", "0.0.0.0", "--port", "0", "--output", "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let read = BufReader::new(child.stdout.take().unwrap()).read_line(&mut first);
    let port = read
        .ok()
        .and_then(|_| serde_json::from_str::<serde_json::Value>(&first).ok())
        .and_then(|v| v["url"].as_str().map(str::to_owned))
        .and_then(|url| {
            url.strip_prefix("http://127.0.0.1:")?
                .split('/')
                .next()?
                .parse::<u16>()
                .ok()
        });
    let outcome = port.map(|port| {
        (
            status(port, &format!("rebind.attacker.test:{port}")),
            status(port, &format!("localhost:{port}")),
        )
    });
    let _ = child.kill();
    let _ = child.wait();
    let (rebound, local) = outcome.unwrap_or_else(|| panic!("no loopback URL: {first:?}"));
    assert!(rebound.contains(" 403 "), "{rebound}");
    assert!(local.contains(" 200 "), "{local}");
}
