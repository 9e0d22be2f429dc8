//! Several server processes sharing request-state keys: a flow started on one finishes on
//! another, as behind a load balancer.
//!
//! Every instance reads the same key ring from `ARCTERN_STATE_KEYS` (`id:base64key`, comma
//! separated; the first key seals, all verify):
//!
//! ```sh
//! export ARCTERN_STATE_KEYS="k1:$(head -c 32 /dev/urandom | base64)"
//! cargo run -p arctern-examples --bin shared_keys -- --port 8001 &
//! cargo run -p arctern-examples --bin shared_keys -- --port 8002 &
//! ```
//!
//! Call `transfer` on 8001, answer the confirmation on 8002.

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use arctern::server::{McpHandler, McpServer, Server};
use arctern::state::KeyRing;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    /// Amount in cents.
    amount: u64,
    /// Recipient account.
    to: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Send it?
    ok: bool,
}

impl Question for Confirm {
    const KEY: &'static str = "confirm";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let t = cx.arguments::<Transfer>();
        let what = t
            .map(|t| format!("{} cents to {}", t.amount, t.to))
            .unwrap_or_default();
        Ok(Ask::form(format!("Send {what}?")))
    }
}

async fn transfer(Args(t): Args<Transfer>, Answer(c): Answer<Confirm>) -> String {
    let instance = std::process::id();
    if c.ok {
        format!(
            "Sent {} cents to {} (finished by process {instance}).",
            t.amount, t.to
        )
    } else {
        "Transfer cancelled.".into()
    }
}

fn server(keys: KeyRing) -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    // Every instance must have the same name: it is the audience tokens are bound to.
    McpServer::new("payments")
        .state_keys(keys)
        .tool(
            "transfer",
            "Transfers money. Asks for confirmation.",
            transfer,
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let keys = KeyRing::from_env("ARCTERN_STATE_KEYS")?;
    arctern_examples::serve(server(keys)?).await?;
    Ok(())
}
