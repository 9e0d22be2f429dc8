//! The dependency form: two independent questions and one that depends on an answer.
//!
//! `plan_trip` needs a destination and dates (independent: asked together in round 1) and a
//! hotel, whose choices depend on the destination (asked in round 2). The body runs once, in
//! round 3, with every answer.
//!
//! ```sh
//! cargo run -p arctern-examples --bin dependency_form
//! ```

use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use arctern::server::{McpHandler, McpServer, Server};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Destination {
    /// Where to.
    city: String,
}

impl Question for Destination {
    const KEY: &'static str = "destination";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Where are you going?"))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Dates {
    /// First night (YYYY-MM-DD).
    from: String,
    /// Number of nights.
    nights: u32,
}

impl Question for Dates {
    const KEY: &'static str = "dates";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("When, and for how long?"))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Hotel {
    /// The hotel to book.
    hotel: String,
}

impl Question for Hotel {
    const KEY: &'static str = "hotel";
    /// Depends on the destination: asked once it is known.
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let destination = cx.answer::<Destination>()?;
        Ok(Ask::form(format!("Which hotel in {}?", destination.city)))
    }
}

async fn plan_trip(
    Answer(d): Answer<Destination>,
    Answer(when): Answer<Dates>,
    Answer(h): Answer<Hotel>,
) -> String {
    format!(
        "Booked {} in {} from {} for {} nights.",
        h.hotel, d.city, when.from, when.nights
    )
}

fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("trips")
        .tool(
            "plan_trip",
            "Plans a trip. Asks where, when, and which hotel.",
            plan_trip,
        )
        .build()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()?).await
}
