//! What the change bus and the task store share on Redis pub/sub: a subscription that rides
//! out outages, and the random name an instance goes by.

use std::time::Duration;

use futures::StreamExt as _;
use rand::Rng as _;
use tokio_util::sync::CancellationToken;

use crate::{Error, bounded};

/// The first pause before subscribing again.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between attempts to subscribe again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A random name for this instance (16 hex digits), to tell its own messages from others'.
pub(crate) fn instance_name() -> String {
    let mut id = [0u8; 8];
    rand::rng().fill_bytes(&mut id);
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A pub/sub subscription to `channels`, subscribed again whenever it is lost.
pub(crate) struct Subscription {
    pub(crate) client: redis::Client,
    pub(crate) channels: Vec<String>,
    /// The bound on subscribing.
    pub(crate) timeout: Duration,
    /// Who subscribes, for the log ("redis change bus").
    pub(crate) owner: &'static str,
    /// What goes wrong while the subscription is lost, for the log.
    pub(crate) while_lost: &'static str,
}

impl Subscription {
    /// Subscribes on a connection of its own, within the timeout.
    pub(crate) async fn subscribe(&self) -> Result<redis::aio::PubSub, Error> {
        bounded(self.timeout, async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(&self.channels).await?;
            Ok(pubsub)
        })
        .await
    }

    /// Hands every message of `first`, and of every subscription after it, to `on_message`
    /// until `stop`. A lost subscription is logged and made again with backoff (100 ms,
    /// doubling up to 5 s); `on_back` runs each time it is back.
    pub(crate) async fn run(
        self,
        first: redis::aio::PubSub,
        stop: CancellationToken,
        mut on_message: impl FnMut(&redis::Msg),
        mut on_back: impl FnMut(),
    ) {
        let mut pubsub = Some(first);
        let mut backoff = FIRST_BACKOFF;
        loop {
            if let Some(current) = pubsub.take() {
                let mut messages = current.into_on_message();
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        message = messages.next() => match message {
                            Some(message) => on_message(&message),
                            None => break,
                        },
                    }
                }
                tracing::warn!(
                    "{}: the subscription was lost; {} until it is back",
                    self.owner,
                    self.while_lost
                );
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            match self.subscribe().await {
                Ok(again) => {
                    on_back();
                    pubsub = Some(again);
                    backoff = FIRST_BACKOFF;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "{}: subscribing again failed", self.owner);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}
