//! Structured output: a tool that returns `Json<T>`. The tool's `outputSchema` is `T`'s JSON
//! Schema, the result's `structuredContent` is `T` as JSON, and a text block carries the same
//! JSON for clients that read only text.
//!
//! ```sh
//! cargo run -p arctern-examples --bin structured_output    # http://127.0.0.1:8000/mcp
//! arctern call http://127.0.0.1:8000/mcp forecast --arg city=Oslo --arg days=2
//! ```

use arctern::server::extract::Args;
use arctern::server::{Json, McpServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Query {
    /// The city to forecast.
    city: String,
    /// How many days ahead, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

/// The answer: its schema is the tool's `outputSchema`.
#[derive(Serialize, JsonSchema)]
struct Forecast {
    city: String,
    days: Vec<Day>,
}

#[derive(Serialize, JsonSchema)]
struct Day {
    /// Days from today: 1 is tomorrow.
    offset: u8,
    /// The expected high, in degrees Celsius.
    high_celsius: f64,
    /// Whether rain is expected.
    rain: bool,
}

/// A made-up but deterministic forecast: the same city and day always give the same weather.
async fn forecast(Args(q): Args<Query>) -> Json<Forecast> {
    let seed = q
        .city
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    let days = (1..=q.days.clamp(1, 7))
        .map(|offset| {
            let n = seed.wrapping_add(u32::from(offset) * 7919);
            Day {
                offset,
                high_celsius: f64::from(n % 30) - 5.0,
                rain: n % 3 == 0,
            }
        })
        .collect();
    Json(Forecast { city: q.city, days })
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    let server = McpServer::new("weather")
        .tool(
            "forecast",
            "The weather for the next days in a city.",
            forecast,
        )
        .build()?;
    arctern_examples::serve(server).await
}
