//! Request state sealed under data keys that a key-management service wraps (envelope
//! encryption): no instance holds a shared sealing secret, each makes and rotates its own
//! data keys, and any instance opens any token by asking the service to unwrap the data key
//! the token carries (once; then it is cached).
//!
//! Here the key service is [`LocalKeyService`], with its key-encryption key from
//! `ARCTERN_KMS_KEY` (32 bytes, base64); AWS KMS, GCP KMS or Vault transit implement the
//! same two-method [`KeyService`](arctern::state::KeyService) trait (see the fleet guide,
//! `arctern::docs::fleet`).
//!
//! ```sh
//! export ARCTERN_KMS_KEY="$(head -c 32 /dev/urandom | base64)"
//! cargo run -p arctern-examples --bin envelope_keys -- --port 8001 --rotate-secs 60 &
//! cargo run -p arctern-examples --bin envelope_keys -- --port 8002 --rotate-secs 60 &
//! ```
//!
//! Call `transfer` on 8001, answer the confirmation on 8002.

use std::sync::Arc;
use std::time::Duration;

use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use arctern::state::{EnvelopeCodec, EnvelopeConfig, LocalKeyService, StateSealer};
use arctern_examples::flag_value;
use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    /// Amount in cents.
    amount: u64,
    /// Recipient account.
    to: String,
}

/// The confirmation, asked with the amount and the recipient from the call's arguments.
struct Confirm;

impl Question for Confirm {
    type Args = Transfer;
    type Answer = bool;
    fn ask(cx: &AskContext<'_, Transfer>) -> Result<Ask<bool>, NotYet> {
        let t = cx.args();
        Ok(Ask::confirm(
            "confirm",
            format!("Send {} cents to {}?", t.amount, t.to),
        ))
    }
}

async fn transfer(Args(t): Args<Transfer>, Answer(ok): Answer<Confirm>) -> String {
    if ok {
        format!(
            "Sent {} cents to {} (finished by process {}).",
            t.amount,
            t.to,
            std::process::id()
        )
    } else {
        "Transfer cancelled.".into()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kek = std::env::var("ARCTERN_KMS_KEY")
        .map_err(|_| "set ARCTERN_KMS_KEY to 32 random bytes in base64")?;
    let kek: [u8; 32] = base64::engine::general_purpose::STANDARD
        .decode(kek.trim())?
        .try_into()
        .map_err(|_| "ARCTERN_KMS_KEY must be 32 bytes")?;
    let service = Arc::new(LocalKeyService::new("payments", &kek));
    let codec = EnvelopeCodec::start(service, EnvelopeConfig::default()).await?;
    let rotate = flag_value("--rotate-secs")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let _rotating = codec.rotate_every(Duration::from_secs(rotate));
    let server = McpServer::new("payments")
        .state_sealer(StateSealer::builder("payments").codec(codec).build()?)
        .tool(
            "transfer",
            "Transfers money. Asks for confirmation.",
            transfer,
        )
        .build()?;
    arctern_examples::serve(server).await?;
    Ok(())
}
