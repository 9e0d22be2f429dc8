//! A client that connects to a server, lists its tools and calls one.
//!
//! The server is a URL (Streamable HTTP) or a program to start as a child process (stdio);
//! the tool's arguments are a JSON object.
//!
//! ```sh
//! cargo run -p arctern-examples --bin list_and_call -- http://127.0.0.1:8000/mcp forecast '{"city":"Oslo","days":2}'
//! cargo run -p arctern-examples --bin list_and_call -- target/debug/calculator_stdio add '{"a":2,"b":40}'
//! ```

use arctern::client::Client;
use arctern::transport::stdio::client::StdioCommand;
use arctern::types::content::ContentBlock;
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    arctern_examples::init_logging();
    let mut args = std::env::args().skip(1);
    let Some(server) = args.next() else {
        return Err("usage: list_and_call URL|PROGRAM [TOOL [ARGUMENTS-JSON]]".into());
    };
    let builder = Client::builder().name("list-and-call");
    let client = if server.starts_with("http://") || server.starts_with("https://") {
        builder.connect(&server).await?
    } else {
        builder.connect_stdio(StdioCommand::new(&server)).await?
    };

    let info = client.server_info();
    let name = info.as_ref().map_or("the server", |i| i.name.as_str());
    println!("{name} ({}) has these tools:", client.protocol_version());
    for tool in client.list_tools().await? {
        println!("- {}: {}", tool.name, tool.description.unwrap_or_default());
    }

    let Some(tool) = args.next() else {
        return Ok(());
    };
    let arguments: Value = match args.next() {
        Some(json) => serde_json::from_str(&json)?,
        None => Value::Object(Default::default()),
    };
    let result = client.call_tool(&tool, arguments).await?;
    if result.is_tool_error() {
        println!("{tool} failed:");
    } else {
        println!("{tool} answered:");
    }
    for block in &result.content {
        if let ContentBlock::Text(text) = block {
            println!("{}", text.text);
        }
    }
    if let Some(structured) = &result.structured_content {
        println!("structured: {structured}");
    }
    client.close().await?;
    Ok(())
}
