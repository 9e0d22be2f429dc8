//! An MCP server mounted in an existing axum application, beside its other routes. The app
//! and the MCP tools share one state: `GET /` counts visits, the `visits` tool reads the
//! count, and `reset_visits` sets it back to zero.
//!
//! ```sh
//! cargo run -p arctern-examples --bin axum_app    # http://127.0.0.1:8000/mcp
//! curl http://127.0.0.1:8000/
//! arctern call http://127.0.0.1:8000/mcp visits
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arctern::server::McpServer;
use arctern::server::extract::State;
use axum::routing::get;

/// What the web routes and the MCP tools share.
#[derive(Clone, Default)]
struct App {
    visits: Arc<AtomicU64>,
}

/// `GET /`: the application's own page.
async fn home(axum::extract::State(app): axum::extract::State<App>) -> String {
    let n = app.visits.fetch_add(1, Ordering::Relaxed) + 1;
    format!("Hello, visitor number {n}.\n")
}

/// `GET /health`: for the load balancer.
async fn health() -> &'static str {
    "ok\n"
}

/// The `visits` tool: arctern's `State` extractor hands it the same `App`.
async fn visits(State(app): State<App>) -> String {
    format!("{} visits so far.", app.visits.load(Ordering::Relaxed))
}

async fn reset_visits(State(app): State<App>) -> String {
    let before = app.visits.swap(0, Ordering::Relaxed);
    format!("Reset the count of {before} visits.")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    arctern_examples::init_logging();
    let app = App::default();
    let mcp = McpServer::with_state("visits", app.clone())
        .tool(
            "visits",
            "How many times the home page was visited.",
            visits,
        )
        .tool(
            "reset_visits",
            "Set the visit count back to zero.",
            reset_visits,
        )
        .build()?;

    // The MCP endpoint is one route among others; the service checks `Host` and `Origin`
    // itself (DNS rebinding), so nothing else needs to be set up for it.
    let router = axum::Router::new()
        .route("/", get(home))
        .route("/health", get(health))
        .with_state(app)
        .route_service("/mcp", mcp.http_service());

    let listener =
        tokio::net::TcpListener::bind(("127.0.0.1", arctern_examples::port_from_args())).await?;
    println!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
