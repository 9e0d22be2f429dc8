//! The server of the browser tests of `arctern inspect`: `plan_trip` asks two questions one
//! after the other (one flow of three rounds), and `probe` carries markup and `javascript:`
//! URLs in its description, its result and its URL question, which the page must show as
//! text and never run or open. Prints `{"url": …}` as its first line and serves until it is
//! killed.

use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Ask, Questions};
use arctern::transport::http::HttpServer;
use arctern_cli::demo::{HOTELS, hotels_in};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// What a payload sets when it runs: the tests look for it.
const MARK: &str = "window.__pwned";

/// Arguments of `plan_trip`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Trip {
    /// Who travels.
    traveller: String,
}

async fn plan_trip(Args(trip): Args<Trip>, q: Questions) -> Result<String, Failure> {
    let cities = HOTELS.iter().map(|(city, _)| (*city, *city));
    let city = q.answer(Ask::choice("city", "Which city?", cities))?;
    let (city, hotels) = hotels_in(&city).ok_or("not a city of the demo")?;
    let hotel = q.answer(Ask::choice(
        "hotel",
        format!("Which hotel in {city}?"),
        hotels.iter().copied(),
    ))?;
    Ok(format!("{} stays at {hotel} in {city}.", trip.traveller))
}

async fn probe(q: Questions) -> Result<String, Failure> {
    q.answer(Ask::url(
        "page",
        format!("<img src=x onerror=\"{MARK}='question'\">Open this <b>page</b>"),
        format!("javascript:{MARK}='url'"),
    ))?;
    Ok(format!(
        "<script>{MARK}='result'</script><img src=x onerror=\"{MARK}='result-img'\"> \
         <a href=\"javascript:{MARK}='result-link'\">click</a>"
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = McpServer::new("inspect-fixture")
        .title(format!("<script>{MARK}='title'</script>Fixture"))
        .instructions(format!("<img src=x onerror=\"{MARK}='instructions'\">"))
        .tool(
            "plan_trip",
            "Plans a trip: asks the city, then the hotel (two rounds of questions).",
            plan_trip,
        )
        .tool(
            "probe",
            format!(
                "<script>{MARK}='description'</script><img src=x onerror=\"{MARK}='img'\"> \
                 javascript:{MARK}='text'"
            ),
            probe,
        )
        .build()?;
    let bound = HttpServer::new(server)
        .bind(("127.0.0.1", 0))
        .listen()
        .await?;
    println!("{}", serde_json::json!({ "url": bound.url().to_string() }));
    bound.serve_with_shutdown(std::future::pending()).await?;
    Ok(())
}
