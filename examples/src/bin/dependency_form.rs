//! The dependency form: two independent questions and one that depends on an answer.
//!
//! `plan_trip` needs a destination and dates (independent: asked together in round 1) and a
//! hotel, a choice among the destination's hotels (asked in round 2, once the destination is
//! known). The body runs in round 3, with every answer: the dates checked against their
//! schema (a date, 1 to 30 nights) and the hotel one of those offered.
//!
//! ```sh
//! cargo run -p arctern-examples --bin dependency_form
//! ```

use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
use arctern::server::{McpHandler, McpServer, Server};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "destination", message = "Where are you going?")]
struct Destination {
    /// Where to.
    city: String,
}

#[derive(Deserialize, JsonSchema, Question)]
#[question(key = "dates", message = "When, and for how long?")]
struct Dates {
    /// First night.
    #[schemars(extend("format" = "date"))]
    from: String,
    /// Number of nights.
    #[schemars(range(min = 1, max = 30))]
    nights: u32,
}

/// The hotel: a choice among the destination's hotels, so asked once the destination is known.
struct Hotel;

impl Question for Hotel {
    type Args = NoArgs;
    type Answer = String;
    fn ask(cx: &AskContext<'_, NoArgs>) -> Result<Ask<String>, NotYet> {
        let destination = cx.answer::<Destination>()?;
        Ok(Ask::choice(
            "hotel",
            format!("Which hotel in {}?", destination.city),
            hotels_in(&destination.city),
        ))
    }
}

/// The hotels of a city (a database query in a real service): `(id, name)`.
fn hotels_in(city: &str) -> Vec<(String, String)> {
    ["Central", "Harbour", "Old Town"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            (
                format!("{}-{i}", city.to_lowercase()),
                format!("{name} {city}"),
            )
        })
        .collect()
}

async fn plan_trip(
    Answer(d): Answer<Destination>,
    Answer(when): Answer<Dates>,
    Answer(hotel): Answer<Hotel>,
) -> String {
    // The answer is the id of an offered hotel (checked before the body runs): show its name.
    let name = hotels_in(&d.city)
        .into_iter()
        .find_map(|(id, name)| (id == hotel).then_some(name))
        .unwrap_or(hotel);
    format!(
        "Booked {name} from {} for {} nights.",
        when.from, when.nights
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
