//! The arctern server of the benchmark, built with `McpServer` the way a user would: `echo`
//! and `confirm` (the benchmark contract), or with `--many`, `echo` and 99 generated tools.
//!
//! ```text
//! arctern-server [--many] (--port N | --stdio)
//! ```

use std::process::ExitCode;

use arctern::server::{Answer, Args, Ask, AskContext, McpServer, NotYet, Question};
use arctern_bench::many::*;
use clap::Parser;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Parser)]
#[command(about = "arctern benchmark server")]
struct Cli {
    /// Port to listen on (127.0.0.1).
    #[arg(long, required_unless_present = "stdio")]
    port: Option<u16>,
    /// Serve on stdin/stdout instead.
    #[arg(long)]
    stdio: bool,
    /// Register `echo` and 99 generated tools instead of `echo` and `confirm`.
    #[arg(long)]
    many: bool,
}

/// Arguments of `echo` and `confirm`.
#[derive(Deserialize, JsonSchema)]
struct TextArg {
    /// Any text.
    text: String,
}

/// The confirmation `confirm` asks for.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead?
    ok: bool,
}

impl Question for Confirm {
    const KEY: &'static str = "confirm";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Confirm?"))
    }
}

async fn echo(Args(a): Args<TextArg>) -> String {
    a.text
}

async fn confirm(Args(a): Args<TextArg>, Answer(c): Answer<Confirm>) -> String {
    if c.ok {
        a.text
    } else {
        "Not confirmed.".into()
    }
}

include!(concat!(env!("OUT_DIR"), "/many_arctern.rs"));

fn server(many: bool) -> McpServer {
    let server = McpServer::new("arctern-bench")
        .version(env!("CARGO_PKG_VERSION"))
        .tool("echo", "Returns its text.", echo);
    if many {
        register_many(server)
    } else {
        server.tool(
            "confirm",
            "Returns its text after the user confirms.",
            confirm,
        )
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let server = server(cli.many);
    let served = match cli.port {
        Some(port) if !cli.stdio => server.serve_http(("127.0.0.1", port)).await,
        _ => server.serve_stdio().await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arctern-server: {e}");
            ExitCode::FAILURE
        }
    }
}
