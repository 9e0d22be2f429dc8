//! A calculator over stdio: four tools, no questions. The smallest server a host (Claude
//! Desktop, Cursor, VS Code, the MCP Inspector) starts as a child process.
//!
//! ```sh
//! cargo run -p arctern-examples --bin calculator_stdio
//! arctern call --stdio "target/debug/calculator_stdio" add --arg a=2 --arg b=40
//! ```
//!
//! stdout carries the protocol, so logs go to stderr.

use arctern::server::McpServer;
use arctern::server::extract::Args;
use schemars::JsonSchema;
use serde::Deserialize;

/// Two operands; their doc comments become the descriptions in the tools' `inputSchema`.
#[derive(Deserialize, JsonSchema)]
struct Operands {
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
}

async fn add(Args(o): Args<Operands>) -> String {
    (o.a + o.b).to_string()
}

async fn subtract(Args(o): Args<Operands>) -> String {
    (o.a - o.b).to_string()
}

async fn multiply(Args(o): Args<Operands>) -> String {
    (o.a * o.b).to_string()
}

/// A tool's own failure is an `Err` with a message: the result says `isError`, and the model
/// reads why.
async fn divide(Args(o): Args<Operands>) -> Result<String, String> {
    if o.b == 0.0 {
        return Err("Cannot divide by zero.".to_owned());
    }
    Ok((o.a / o.b).to_string())
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::init_logging();
    McpServer::new("calculator")
        .version(env!("CARGO_PKG_VERSION"))
        .tool("add", "Add two numbers.", add)
        .tool("subtract", "Subtract b from a.", subtract)
        .tool("multiply", "Multiply two numbers.", multiply)
        .tool("divide", "Divide a by b.", divide)
        .serve_stdio()
        .await
}
