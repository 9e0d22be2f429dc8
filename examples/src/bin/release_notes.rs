//! A tool that needs all three kinds of client input: elicitation, roots and sampling.
//!
//! `release_notes {version}` asks in round 1 who the notes are for (a form) and which roots
//! the client exposes; in round 2 it asks the client's model for a summary written for that
//! audience (the sampling request depends on the answer, so it waits a round). The body then
//! runs once, reports progress per root, and returns the notes.
//!
//! ```sh
//! cargo run -p arctern-examples --bin release_notes
//! ```
//!
//! The `client_callbacks` example is a client for it.

use arctern::server::extract::Args;
use arctern::server::mrtr::{
    Answer, Ask, AskContext, NotYet, Question, Roots, Sample, SamplingQuestion,
};
use arctern::server::{McpHandler, McpServer, RequestContext, Server};
use arctern::types::sampling::{CreateMessageRequestParams, SamplingMessage};
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
    const KEY: &'static str = "audience";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let version = cx
            .arguments::<Release>()
            .map(|r| r.version)
            .unwrap_or_default();
        Ok(Ask::form(format!(
            "Who are the release notes for {version} for?"
        )))
    }
}

/// The summary, written by the client's model for the chosen audience.
struct Summary;

impl SamplingQuestion for Summary {
    const KEY: &'static str = "summary";
    fn ask(cx: &AskContext<'_>) -> Result<CreateMessageRequestParams, NotYet> {
        // Depends on the audience: asked in the round after it is answered.
        let audience = cx.answer::<Audience>()?;
        let version = cx
            .arguments::<Release>()
            .map(|r| r.version)
            .unwrap_or_default();
        Ok(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text(format!(
                "Summarize release {version} in one sentence for {}.",
                audience.audience
            ))],
            200,
        )
        .with_system_prompt("You write release notes."))
    }
}

async fn release_notes(
    ctx: RequestContext,
    Args(release): Args<Release>,
    Answer(audience): Answer<Audience>,
    Roots(roots): Roots,
    summary: Sample<Summary>,
) -> String {
    // Only the final round gets here, so the progress goes out once.
    let total = roots.len() as f64;
    for (i, root) in roots.iter().enumerate() {
        let step = format!("Read the changelog under {}", root.uri);
        ctx.progress((i + 1) as f64, Some(total), Some(&step)).await;
    }
    let summary = summary.0.content.first_text().unwrap_or("").to_owned();
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
