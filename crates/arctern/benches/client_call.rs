//! Benchmark of one `Client::call_tool` of an echo tool, end to end: over the in-memory
//! transport and over Streamable HTTP on loopback (the crate's own server, in the same
//! process, on one thread).
//!
//! Besides criterion's timings, `CLIENT_CALLS=memory:N` (or `http:N`) makes the binary
//! run N calls in `measured_calls` after a warm-up and exit, so that an instruction counter
//! can count them alone: `client_call_instructions.sh` beside this file runs it under
//! callgrind and prints instructions per call (client and server together), a figure that
//! does not depend on the machine's load.

use std::hint::black_box;

use arctern::client::Client;
use arctern::server::extract::Args;
use arctern::server::{McpHandler, McpServer, Server};
use arctern::transport::http::HttpServer;
use criterion::Criterion;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

fn server() -> Server<McpHandler> {
    McpServer::new("arctern-bench")
        .tool(
            "echo",
            "Echoes the text.",
            |Args(e): Args<Echo>| async move { e.text },
        )
        .build()
        .expect("the bench server builds")
}

async fn call(client: &Client) {
    let result = client
        .call_tool("echo", serde_json::json!({"text": "c7-12345"}))
        .await
        .expect("the echo call succeeds");
    black_box(result);
}

/// The calls an instruction counter counts (callgrind's `--toggle-collect` names this
/// function); everything the runtime does meanwhile, the server included, runs inside it.
#[inline(never)]
fn measured_calls(rt: &tokio::runtime::Runtime, client: &Client, calls: u64) {
    let done = rt.block_on(async {
        for _ in 0..calls {
            call(client).await;
        }
        calls
    });
    // Used after the call, so that `block_on` is not a tail call (callgrind would see this
    // function return before the calls ran).
    black_box(done);
}

/// The calls before the measured ones.
#[inline(never)]
fn warm_up(rt: &tokio::runtime::Runtime, client: &Client) {
    rt.block_on(async {
        for _ in 0..20 {
            call(client).await;
        }
    });
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let memory = rt
        .block_on(Client::builder().connect_memory(server()))
        .expect("the memory client connects");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let http = rt.block_on(async {
        let bound = HttpServer::new(server())
            .bind("127.0.0.1:0")
            .listen()
            .await
            .expect("the loopback server binds");
        let url = bound.url();
        tokio::spawn(bound.serve_with_shutdown(async move {
            let _ = stopped.await;
        }));
        Client::builder()
            .connect(&url)
            .await
            .expect("the HTTP client connects")
    });

    if let Ok(spec) = std::env::var("CLIENT_CALLS") {
        let (name, calls) = spec
            .split_once(':')
            .expect("CLIENT_CALLS=memory:N or http:N");
        let calls: u64 = calls.parse().expect("a number of calls");
        let client = if name == "http" { &http } else { &memory };
        // Warm up: connections, the tool index, lazily built state.
        warm_up(&rt, client);
        measured_calls(&rt, client, calls);
        let _ = stop.send(());
        return;
    }

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("client_call");
    g.bench_function("memory", |b| b.iter(|| rt.block_on(call(&memory))));
    g.bench_function("http", |b| b.iter(|| rt.block_on(call(&http))));
    g.finish();
    c.final_summary();
    let _ = stop.send(());
}
