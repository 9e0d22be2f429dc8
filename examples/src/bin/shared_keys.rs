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
use arctern::server::{McpHandler, McpServer, RequestContext, Server};
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
    type Args = Transfer;
    type Answer = Confirm;
    fn ask(cx: &AskContext<'_, Transfer>) -> Result<Ask<Confirm>, NotYet> {
        let Transfer { amount, to } = cx.args();
        Ok(Ask::form(
            "confirm",
            format!("Send {amount} cents to {to}?"),
        ))
    }
}

async fn transfer(
    ctx: RequestContext,
    Args(t): Args<Transfer>,
    Answer(c): Answer<Confirm>,
) -> String {
    let instance = std::process::id();
    if c.ok {
        // The flow id is the same on every instance that serves a round of this flow: a
        // payment provider's idempotency key, so a replayed round cannot pay twice.
        let flow = ctx.flow_id().map(|id| id.to_string()).unwrap_or_default();
        format!(
            "Sent {} cents to {} (finished by process {instance}, idempotency key {flow}).",
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
