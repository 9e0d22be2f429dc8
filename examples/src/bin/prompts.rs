//! Prompts with argument completion: a `code_review` prompt whose `language` argument
//! completes from a list, and whose `framework` argument completes from the frameworks of
//! the language already chosen (the request's context).
//!
//! ```sh
//! cargo run -p arctern-examples --bin prompts    # http://127.0.0.1:8000/mcp
//! arctern prompts http://127.0.0.1:8000/mcp
//! arctern prompt http://127.0.0.1:8000/mcp code_review --arg language=rust --arg framework=axum
//! ```

use arctern::server::extract::Args;
use arctern::server::{CompletionRequest, McpServer, RequestContext};
use arctern::types::prompts::PromptMessage;
use schemars::JsonSchema;
use serde::Deserialize;

/// The languages offered, each with its frameworks.
const LANGUAGES: [(&str, &[&str]); 3] = [
    ("python", &["django", "fastapi", "flask"]),
    ("rust", &["actix-web", "axum", "rocket"]),
    ("typescript", &["express", "nestjs", "next"]),
];

/// The prompt's arguments: its properties become the prompt's `arguments`.
#[derive(Deserialize, JsonSchema)]
struct Review {
    /// The language of the code.
    language: String,
    /// The web framework, if any.
    framework: Option<String>,
}

async fn code_review(Args(r): Args<Review>) -> Vec<PromptMessage> {
    let framework = r
        .framework
        .map(|f| format!(", written with {f}"))
        .unwrap_or_default();
    vec![
        PromptMessage::user_text(format!(
            "Review the following {} code{framework}. Point out bugs first, then style.",
            r.language
        )),
        PromptMessage::assistant_text("Paste the code and I will review it."),
    ]
}

/// `completion/complete`: the values that start with what the user typed so far.
async fn complete(_ctx: RequestContext, request: CompletionRequest) -> Vec<String> {
    if request.prompt() != Some("code_review") {
        return Vec::new();
    }
    let candidates: Vec<&str> = match request.argument() {
        "language" => LANGUAGES.iter().map(|(language, _)| *language).collect(),
        "framework" => LANGUAGES
            .iter()
            .filter(|(language, _)| {
                request
                    .context_argument("language")
                    .is_none_or(|chosen| chosen == *language)
            })
            .flat_map(|(_, frameworks)| frameworks.iter().copied())
            .collect(),
        _ => Vec::new(),
    };
    let typed = request.value().to_lowercase();
    candidates
        .into_iter()
        .filter(|c| c.starts_with(&typed))
        .map(str::to_owned)
        .collect()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    let server = McpServer::new("reviewer")
        .prompt("code_review", "Ask for a code review.", code_review)
        .completion(complete)
        .build()?;
    arctern_examples::serve(server).await
}
