//! The `arctern` command: serve a demo MCP server, and call any MCP server from a terminal.

mod demo;

use std::process::ExitCode;

use arctern::transport::http::HttpServer;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "arctern",
    version,
    about = "Serve and call Model Context Protocol servers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the demo server: tools that ask the user, the client's LLM or its roots before
    /// they finish, a prompt and a resource template that ask too, and the benchmark's echo
    /// and confirm.
    Serve {
        /// Port to listen on (127.0.0.1 only).
        #[arg(long, default_value_t = 8000)]
        port: u16,
        /// Serve over stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve { port, stdio } => serve(port, stdio).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arctern: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(port: u16, stdio: bool) -> Result<(), Box<dyn std::error::Error>> {
    let server = demo::server()?;
    if stdio {
        server.serve_stdio().await?;
        return Ok(());
    }
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", port))
        .listen()
        .await?;
    let url = bound.url();
    eprintln!("arctern demo server listening on {url}");
    eprintln!();
    eprintln!("Try it from another terminal:");
    eprintln!("  arctern call {url} provision --arg name=orders");
    eprintln!("  arctern tools {url}");
    eprintln!("Or point any MCP client (protocol 2026-07-28) at {url}.");
    eprintln!("Press Ctrl-C to stop.");
    bound
        .serve_with_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
