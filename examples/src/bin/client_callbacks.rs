//! A client that answers what a server asks for with async closures: elicitation, sampling
//! and roots, and prints progress notifications as they arrive.
//!
//! `call_tool` hides the rounds: whenever the server answers `input_required`, the client
//! runs the matching callbacks (concurrently, one per question) and retries with the answers.
//! Here the user and the model are scripted, so it runs without a terminal or an LLM.
//!
//! Start the `release_notes` example server, then run the client against it:
//!
//! ```sh
//! cargo run -p arctern-examples --bin release_notes &
//! cargo run -p arctern-examples --bin client_callbacks -- \
//!     --url http://127.0.0.1:8000/mcp --audience operators
//! ```

use std::time::Duration;

use arctern::client::Client;
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern::types::roots::{ListRootsResult, Root};
use arctern::types::sampling::CreateMessageResult;
use arctern_examples::flag_value;
use serde_json::json;

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::init_logging();
    let url = flag_value("--url").unwrap_or_else(|| "http://127.0.0.1:8000/mcp".into());
    // The scripted user's answer to the form.
    let audience = flag_value("--audience").unwrap_or_else(|| "operators".into());

    // Each `on_*` callback also declares the matching capability, so the server knows it
    // may ask for it.
    let client = Client::builder()
        .name("client-callbacks-example")
        .on_elicit(move |question| {
            let audience = audience.clone();
            async move {
                println!(
                    "{} asks [{}]: {}",
                    question.origin().target(),
                    question.key(),
                    question.message()
                );
                // A real client shows the form; this one fills the field it knows.
                let asks_audience = match question.params() {
                    ElicitRequestParams::Form(form) => {
                        form.requested_schema.properties.get("audience").is_some()
                    }
                    // A URL to open (or a mode a newer revision adds).
                    _ => false,
                };
                if asks_audience {
                    println!("  answered: {audience}");
                    Ok(ElicitResult::accept([("audience", audience)]))
                } else {
                    println!("  declined: not a question this script knows");
                    Ok(ElicitResult::decline())
                }
            }
        })
        .on_roots(|question| async move {
            let roots = vec![
                Root::new("file:///workspace/api").with_name("api"),
                Root::new("file:///workspace/web").with_name("web"),
            ];
            let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
            println!(
                "{} asks [{}] for roots: {}",
                question.origin().target(),
                question.key(),
                uris.join(", ")
            );
            Ok(ListRootsResult::new(roots))
        })
        .on_sample(|question| async move {
            let prompt = question
                .messages
                .iter()
                .filter_map(|m| m.content.first_text())
                .collect::<Vec<_>>()
                .join(" ");
            println!(
                "{} asks [{}] the model: {prompt}",
                question.origin().target(),
                question.key()
            );
            // A real client calls its LLM here (after the user approves the request).
            Ok(CreateMessageResult::text(
                "scripted-model",
                "Deploys roll back on their own when a health check fails.",
            ))
        })
        .on_progress(|p| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p.message.unwrap_or_default();
            println!("progress {}{total}: {message}", p.progress);
        })
        // Generous, so that a stuck server ends the example instead of hanging it.
        .request_timeout(Duration::from_secs(60))
        .connect(&url)
        .await?;

    let result = client
        .call_tool("release_notes", json!({"version": "2.0"}))
        .await?;
    for block in &result.content {
        if let Some(text) = block.as_text() {
            println!("result: {text}");
        }
    }
    client.close().await?;
    if result.is_error == Some(true) {
        std::process::exit(1);
    }
    Ok(())
}
