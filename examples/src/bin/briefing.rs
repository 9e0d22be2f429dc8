//! A prompt that asks who it is for before it is rendered.
//!
//! `prompts/get briefing {topic}` answers `input_required` with one question (the audience);
//! the retry with the answer gets the rendered prompt.
//!
//! ```sh
//! cargo run -p arctern-examples --bin briefing
//! ```

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use arctern::server::{McpHandler, McpServer, Server};
use arctern::types::prompts::PromptMessage;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Briefing {
    /// What the briefing covers.
    topic: String,
}

#[derive(Deserialize, JsonSchema)]
struct Audience {
    /// Who will read it (engineers, executives, customers...).
    audience: String,
}

impl Question for Audience {
    type Args = Briefing;
    type Answer = Audience;
    fn ask(cx: &AskContext<'_, Briefing>) -> Result<Ask<Audience>, NotYet> {
        let topic = &cx.args().topic;
        Ok(Ask::form(
            "audience",
            format!("Who is the briefing on {topic} for?"),
        ))
    }
}

async fn briefing(Args(b): Args<Briefing>, Answer(a): Answer<Audience>) -> Vec<PromptMessage> {
    vec![PromptMessage::user_text(format!(
        "Write a one-page briefing on {} for {}. Start with the decision they need to make.",
        b.topic, a.audience
    ))]
}

fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("briefings")
        .prompt(
            "briefing",
            "A briefing on a topic. Asks who it is for.",
            briefing,
        )
        .build()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()?).await
}
