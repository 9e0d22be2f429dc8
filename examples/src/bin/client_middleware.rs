//! A client with middleware: a bearer token on every request, retries while the server is
//! unavailable, and a log line per request (see `arctern_examples::client_layers`).
//!
//! ```sh
//! cargo run -p arctern-examples --bin client_middleware -- http://127.0.0.1:8000/mcp secret-token echo '{"text":"hi"}'
//! ```

use std::time::Duration;

use arctern::client::Client;
use arctern_examples::client_layers::{bearer, log_requests, retry_unavailable};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    arctern_examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, token, tool, arguments] = args.as_slice() else {
        return Err("usage: client_middleware URL TOKEN TOOL ARGUMENTS-JSON".into());
    };
    let client = Client::builder()
        .name("client-middleware")
        // The layer added last runs first: the log line covers the retries.
        .layer(bearer(token))
        .layer(retry_unavailable(3, Duration::from_millis(200)))
        .layer(log_requests())
        .connect(url)
        .await?;
    let arguments: Value = serde_json::from_str(arguments)?;
    let result = client.call_tool(tool, arguments).await?;
    for block in &result.content {
        if let Some(text) = block.as_text() {
            println!("{text}");
        }
    }
    Ok(())
}
