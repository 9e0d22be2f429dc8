//! Benchmark of one `tools/call` through the engine, in process: the bytes of a request in,
//! the bytes of its response out (`Server::handle_bytes`), for an echo tool as the load
//! generator of `bench/` calls it, and for a tool whose argument has bounds; each with the
//! argument check on (the default) and off, to show what checking the arguments against
//! the tool's `inputSchema` costs.

use std::hint::black_box;

use arctern::server::connection::{Reply, RequestOrigin, TransportKind};
use arctern::server::extract::Args;
use arctern::server::{ArgumentCheck, McpHandler, McpServer, Server};
use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// How many steps (1 to 100).
    #[schemars(range(min = 1, max = 100))]
    steps: u32,
}

const REQUEST_META: &str = concat!(
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"arctern-bench","version":"0.1.0"},"#,
    r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#
);

fn body(tool: &str, arguments: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},{REQUEST_META}}}}}"#
    )
    .into_bytes()
}

fn server(check: ArgumentCheck) -> Server<McpHandler> {
    McpServer::new("arctern-bench")
        .argument_check(check)
        .tool(
            "echo",
            "Echoes the text.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .tool("count", "Counts.", |Args(c): Args<Count>| async move {
            c.steps.to_string()
        })
        .build()
        .unwrap()
}

fn call(rt: &tokio::runtime::Runtime, server: &Server<McpHandler>, bytes: &[u8]) -> usize {
    let origin = RequestOrigin::new(TransportKind::Memory);
    match rt.block_on(server.handle_bytes(bytes, origin)) {
        Reply::Message { body, .. } => body.len(),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let echo = body("echo", r#"{"text":"c7-12345"}"#);
    let count = body("count", r#"{"steps":42}"#);
    let mut g = c.benchmark_group("tools_call");
    for (name, check) in [
        ("checked", ArgumentCheck::ToolError),
        ("unchecked", ArgumentCheck::Off),
    ] {
        let server = server(check);
        g.bench_function(format!("echo/{name}"), |b| {
            b.iter(|| call(&rt, &server, black_box(&echo)))
        });
        g.bench_function(format!("bounded/{name}"), |b| {
            b.iter(|| call(&rt, &server, black_box(&count)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
