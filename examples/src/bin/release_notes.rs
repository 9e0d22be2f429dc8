//! A tool that needs all three kinds of client input: elicitation, roots and sampling.
//!
//! `release_notes {version}` asks in round 1 who the notes are for (a form) and which roots
//! the client exposes; in round 2 it asks the client's model for a summary written for that
//! audience (the sampling request depends on the answer, so it waits a round). The body then
//! runs, in round 3, reports progress per root, and returns the notes.
//!
//! ```sh
//! cargo run -p arctern-examples --bin release_notes
//! ```
//!
//! The `client_callbacks` example is a client for it.

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question, Roots};
use arctern::server::{McpHandler, McpServer, RequestContext, Server};
use arctern::types::sampling::CreateMessageResult;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Release {
    /// The version being released.
    version: String,
}

#[derive(Deserialize, JsonSchema)]
struct Audience {
    /// Who reads the notes (developers, operators, customers...).
    audience: String,
}

impl Question for Audience {
    type Args = Release;
    type Answer = Audience;
    fn ask(cx: &AskContext<'_, Release>) -> Result<Ask<Audience>, NotYet> {
        let version = &cx.args().version;
        Ok(Ask::form(
            "audience",
            format!("Who are the release notes for {version} for?"),
        ))
    }
}

/// The summary, written by the client's model for the chosen audience.
struct Summary;

impl Question for Summary {
    type Args = Release;
    type Answer = CreateMessageResult;
    fn ask(cx: &AskContext<'_, Release>) -> Result<Ask<CreateMessageResult>, NotYet> {
        // Depends on the audience: asked in the round after it is answered.
        let audience = cx.answer::<Audience>()?;
        let prompt = format!(
            "Summarize release {} in one sentence for {}.",
            cx.args().version,
            audience.audience
        );
        Ok(Ask::sample("summary", prompt)
            .max_tokens(200)
            .system("You write release notes."))
    }
}

async fn release_notes(
    ctx: RequestContext,
    Args(release): Args<Release>,
    Answer(audience): Answer<Audience>,
    Answer(roots): Answer<Roots>,
    Answer(summary): Answer<Summary>,
) -> String {
    // Only the final round gets here, so the progress goes out once.
    let total = roots.len() as f64;
    for (i, root) in roots.iter().enumerate() {
        let step = format!("Read the changelog under {}", root.uri);
        ctx.progress((i + 1) as f64, Some(total), Some(&step)).await;
    }
    let summary = summary.content.first_text().unwrap_or("").to_owned();
    format!(
        "Release notes for {} ({}, {} roots): {summary}",
        release.version,
        audience.audience,
        roots.len()
    )
}

fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("release-notes")
        .tool(
            "release_notes",
            "Drafts release notes. Asks for the audience, the client's roots and a summary \
             from the client's model.",
            release_notes,
        )
        .build()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()?).await
}
