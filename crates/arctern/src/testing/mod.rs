//! An in-process test kit for MCP servers built with arctern (feature `testing`).
//!
//! A [`TestClient`] talks to a [`Server`] (or an [`McpServer`], which it builds) in the same
//! process, through the real serialization path — every message is encoded and parsed as
//! over a wire ([`MemoryTransport`]) — and answers the server's questions from a script:
//!
//! - [`answer`](TestClient::answer) accepts a form with some content,
//!   [`decline`](TestClient::decline) and [`cancel`](TestClient::cancel) refuse it,
//!   [`respond`](TestClient::respond) gives any raw answer, all by the question's key;
//! - [`sample`](TestClient::sample) and [`on_sample`](TestClient::on_sample) answer sampling
//!   requests, [`roots`](TestClient::roots) answers `roots/list`.
//!
//! A question without a scripted answer fails the call at once with an error that names its
//! key and the question ([`UnscriptedQuestion`]): the kit never waits and never makes an
//! answer up.
//!
//! Every round is recorded as it went over the wire ([`RecordedRound`]): what the request carried and
//! what the server answered. [`TestClient::rounds`] returns the rounds of the last call and
//! [`TestClient::assert_rounds`] checks how many there were.
//!
//! ```
//! use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
//! use arctern::server::extract::Args;
//! use arctern::server::McpServer;
//! use arctern::testing::{self, TestClient};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Provision { name: String }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Region { region: String }
//!
//! impl Question for Region {
//!     type Args = NoArgs;
//!     type Answer = Region;
//!     fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Region>, NotYet> {
//!         Ok(Ask::form("region", "Which region should the database live in?"))
//!     }
//! }
//!
//! async fn provision(Args(p): Args<Provision>, Answer(r): Answer<Region>) -> String {
//!     format!("Provisioned {} in {}.", p.name, r.region)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> arctern::Result<()> {
//! let server = McpServer::new("provisioner").tool("provision", "Provision a database.", provision);
//! let t = TestClient::connect(server)
//!     .await?
//!     .answer("region", json!({"region": "eu-west-1"}));
//!
//! let result = t.call_tool("provision", json!({"name": "orders"})).await?;
//! assert_eq!(testing::text(&result), "Provisioned orders in eu-west-1.");
//!
//! // Round 1 asked for the region; round 2 answered it, echoing the sealed state.
//! let rounds = t.assert_rounds(2);
//! assert_eq!(rounds[0].keys(), ["region"]);
//! assert!(rounds[1].carried_state() && rounds[1].is_complete());
//! # Ok(()) }
//! ```
//!
//! # Both eras
//!
//! [`TestClientBuilder::era`] runs the same test against the legacy era (2025-11-25): the
//! client opens a session with `initialize`, and the server's legacy shim asks the same
//! questions with server→client requests, which the same script answers by key (the shim
//! names each question's key in `_meta`). On a legacy session a call is one round on the
//! wire; its [`RecordedRound::questions`] are the questions the shim asked.
//!
//! # Request-state security
//!
//! [`TestClient::replay`] sends a recorded round's request again — as it was, with its
//! `requestState` [tampered with](Replay::tamper_state), or against [another
//! target](Replay::target) or [other arguments](Replay::arguments) — and
//! [`TestClient::expire_state`] moves a [`ManualClock`] given to the server's sealer past the
//! state's lifetime. [`assert_invalid_state`] checks that the server answered its single
//! fixed rejection, `{"code":-32602,"message":"Invalid or expired requestState"}`.
//!
//! ```
//! use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
//! use arctern::server::McpServer;
//! use arctern::state::{ManualClock, StateSealer};
//! use arctern::testing::{TestClient, assert_invalid_state};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Confirm { ok: bool }
//!
//! impl Question for Confirm {
//!     type Args = NoArgs;
//!     type Answer = Confirm;
//!     fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Confirm>, NotYet> {
//!         Ok(Ask::form("confirm", "Go ahead?"))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> arctern::Result<()> {
//! let clock = ManualClock::starting_now();
//! let sealer = StateSealer::builder("shop").clock(clock.clone()).build().unwrap();
//! let server = McpServer::new("shop")
//!     .state_sealer(sealer)
//!     .tool("pay", "Pays.", |Answer(c): Answer<Confirm>| async move { format!("paid: {}", c.ok) })
//!     .tool("refund", "Refunds.", |Answer(c): Answer<Confirm>| async move { format!("refunded: {}", c.ok) });
//! let t = TestClient::connect(server).await?.answer("confirm", json!({"ok": true}));
//! t.call_tool("pay", json!({"amount": 5})).await?;
//! let rounds = t.assert_rounds(2);
//! let retry = &rounds[1]; // the round that echoed the state
//!
//! assert_invalid_state(&t.replay(retry).tamper_state().send().await);
//! assert_invalid_state(&t.replay(retry).arguments(json!({"amount": 500})).send().await);
//! assert_invalid_state(&t.replay(retry).target("refund").send().await);
//! t.expire_state(&clock);
//! assert_invalid_state(&t.replay(retry).send().await);
//! # Ok(()) }
//! ```

#[cfg(feature = "apps")]
pub mod apps;
#[cfg(all(feature = "auth", feature = "http"))]
mod auth_server;
mod record;
mod replay;
mod script;

use std::sync::Arc;
use std::time::Duration;

use arctern_types::content::ContentBlock;
use arctern_types::elicitation::ElicitResult;
use arctern_types::mrtr::InputResponse;
use arctern_types::prompts::GetPromptResult;
use arctern_types::resources::ReadResourceResult;
use arctern_types::roots::{ListRootsResult, Root};
use arctern_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use arctern_types::tools::CallToolResult;
use serde::Serialize;
use serde_json::Value;

#[cfg(all(feature = "auth", feature = "http"))]
pub use auth_server::{
    INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET, TestAuthServer, TestAuthServerBuilder,
    TokenRequest,
};
pub use record::RecordedRound;
pub use replay::{Replay, assert_invalid_state, is_invalid_state};
pub use script::UnscriptedQuestion;

use record::Recorder;
use script::{ScriptHandler, Shared};

use crate::client::{Client, ClientBuilder, Continuation, HandlerCapabilities, Input, Outcome};
use crate::server::{Handler, McpHandler, McpServer, Principal, Server};
use crate::state::ManualClock;
use crate::transport::memory::{MemoryTransport, lock};
use crate::{Era, Result};

/// What a [`TestClient`] can talk to: a [`Server`], or an [`McpServer`] that it builds.
pub trait IntoServer {
    /// The server's handler.
    type Handler: Handler;

    /// The server, built if need be (a registration error becomes an error of kind
    /// [`ErrorKind::Config`](crate::ErrorKind::Config)).
    fn into_server(self) -> Result<Server<Self::Handler>>;
}

impl<H: Handler> IntoServer for Server<H> {
    type Handler = H;

    fn into_server(self) -> Result<Server<H>> {
        Ok(self)
    }
}

impl<S: Clone + Send + Sync + 'static> IntoServer for McpServer<S> {
    type Handler = McpHandler<S>;

    fn into_server(self) -> Result<Server<McpHandler<S>>> {
        Ok(self.build()?)
    }
}

type Configure = Box<dyn FnOnce(ClientBuilder) -> ClientBuilder + Send>;

/// Settings of a [`TestClient`] that must be known before it connects: the era, the
/// capabilities it declares, the principal it acts as, mirrored HTTP headers, and anything
/// else of the underlying [`ClientBuilder`].
#[must_use = "a builder does nothing until connected"]
pub struct TestClientBuilder {
    era: Era,
    capabilities: HandlerCapabilities,
    principal: Option<String>,
    http_headers: bool,
    configure: Option<Configure>,
}

impl std::fmt::Debug for TestClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClientBuilder")
            .field("era", &self.era)
            .field("capabilities", &self.capabilities)
            .field("principal", &self.principal)
            .field("http_headers", &self.http_headers)
            .finish_non_exhaustive()
    }
}

impl Default for TestClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl TestClientBuilder {
    /// The modern era (2026-07-28), every client capability declared (form and URL
    /// elicitation, sampling with tools and context, roots), no principal, no mirrored
    /// headers.
    pub fn new() -> Self {
        TestClientBuilder {
            era: Era::Modern,
            capabilities: HandlerCapabilities::none()
                .elicitation()
                .elicitation_url()
                .sampling_tools()
                .sampling_context()
                .roots(),
            principal: None,
            http_headers: false,
            configure: None,
        }
    }

    /// The era to speak: [`Era::Modern`] (the default), or [`Era::Legacy`] to open a
    /// 2025-11-25 session with `initialize` and go through the server's legacy shim.
    pub fn era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// Shorthand for [`era(Era::Legacy)`](Self::era).
    pub fn legacy(self) -> Self {
        self.era(Era::Legacy)
    }

    /// The kinds of question the client declares it answers (default: all). Declare fewer
    /// to test how the server handles a client without a capability (`-32021` on the
    /// modern era).
    pub fn capabilities(mut self, capabilities: HandlerCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Acts as `principal`, as if an authentication layer had put a
    /// [`Principal`] in every request: the request state the
    /// server mints is bound to it.
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// Builds the HTTP headers that mirror each request and has the server validate them,
    /// as over Streamable HTTP (see [`MemoryTransport::with_http_headers`]).
    pub fn http_headers(mut self, enabled: bool) -> Self {
        self.http_headers = enabled;
        self
    }

    /// Adjusts the underlying [`ClientBuilder`] (round cap, timeouts, callbacks, protocol
    /// versions…) before it connects. The kit sets its own handler first; replacing it
    /// replaces the script.
    pub fn configure(
        mut self,
        configure: impl FnOnce(ClientBuilder) -> ClientBuilder + Send + 'static,
    ) -> Self {
        self.configure = Some(Box::new(configure));
        self
    }

    /// Connects to `server` in process (for the legacy era, opens the session).
    pub async fn connect<S: IntoServer>(self, server: S) -> Result<TestClient> {
        let server = server.into_server()?;
        let state_ttl = server.config().request_state.as_ref().map(|s| s.ttl());
        let mut transport = MemoryTransport::new(server);
        if self.http_headers {
            transport = transport.with_http_headers();
        }
        if let Some(principal) = self.principal {
            let mut extensions = http::Extensions::new();
            extensions.insert(Principal(principal));
            transport = transport.with_extensions(extensions);
        }
        let shared = Arc::new(Shared::default());
        let recorder = Recorder {
            inner: transport,
            shared: shared.clone(),
        };
        let mut builder = Client::builder()
            .name("arctern-test-client")
            .handler(ScriptHandler {
                shared: shared.clone(),
                capabilities: self.capabilities,
            });
        if let Some(configure) = self.configure {
            builder = configure(builder);
        }
        let client = builder.era(self.era).connect_with(recorder).await?;
        Ok(TestClient {
            client,
            shared,
            state_ttl,
        })
    }
}

/// A client for testing a server in process, with scripted answers and recorded rounds. See
/// the [module documentation](self).
///
/// The script can change between calls: the methods that add to it take the client and give
/// it back (`let t = t.decline("confirm");`). Calls are meant to be made one at a time: each
/// convenience call starts a fresh record of rounds.
pub struct TestClient {
    client: Client,
    shared: Arc<Shared>,
    state_ttl: Option<Duration>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("era", &self.client.era())
            .field("rounds", &*lock(&self.shared.rounds))
            .finish_non_exhaustive()
    }
}

impl TestClient {
    /// Starts configuring a test client (era, capabilities, principal…).
    pub fn builder() -> TestClientBuilder {
        TestClientBuilder::new()
    }

    /// A modern-era test client for `server`, declaring every client capability.
    pub async fn connect<S: IntoServer>(server: S) -> Result<TestClient> {
        TestClientBuilder::new().connect(server).await
    }

    // ------------------------------------------------------------------ the script

    /// Accepts the form asked under `key` with `content` (a JSON object of the form's
    /// fields, given as anything serializable: `json!({..})` or a struct), every time it is
    /// asked.
    ///
    /// # Panics
    ///
    /// If `content` is not an object whose values are strings, numbers, booleans or arrays
    /// of strings (what a form can hold); send other shapes with [`respond`](Self::respond).
    #[track_caller]
    pub fn answer(self, key: impl Into<String>, content: impl Serialize) -> Self {
        let key = key.into();
        let answer = serde_json::to_value(content)
            .and_then(ElicitResult::accept_json)
            .unwrap_or_else(|e| {
                panic!(
                    "the answer scripted for {key:?} is no form content (an object of strings, \
                     numbers, booleans or arrays of strings): {e}"
                )
            });
        self.respond(key, answer)
    }

    /// Declines the question asked under `key`, every time it is asked.
    pub fn decline(self, key: impl Into<String>) -> Self {
        self.respond(key, ElicitResult::decline())
    }

    /// Cancels (dismisses) the question asked under `key`, every time it is asked.
    pub fn cancel(self, key: impl Into<String>) -> Self {
        self.respond(key, ElicitResult::cancel())
    }

    /// Answers the question asked under `key` with `answer`, whatever it is: an
    /// [`ElicitResult`], a [`CreateMessageResult`], a [`ListRootsResult`]. A call fails if
    /// the server asks a question of another kind under that key.
    pub fn respond(self, key: impl Into<String>, answer: impl Into<InputResponse>) -> Self {
        lock(&self.shared.script)
            .by_key
            .insert(key.into(), answer.into());
        self
    }

    /// Removes the answer scripted for `key`; the question then fails the call again.
    pub fn forget(self, key: &str) -> Self {
        lock(&self.shared.script).by_key.remove(key);
        self
    }

    /// Answers every sampling request that has no answer scripted by key with `result`.
    pub fn sample(self, result: CreateMessageResult) -> Self {
        self.on_sample(move |_| result.clone())
    }

    /// Answers every sampling request that has no answer scripted by key with what `f`
    /// returns for it (the request's params are reachable through the [`Input`]).
    pub fn on_sample(
        self,
        f: impl Fn(&Input<CreateMessageRequestParams>) -> CreateMessageResult + Send + Sync + 'static,
    ) -> Self {
        lock(&self.shared.script).sample = Some(Arc::new(f));
        self
    }

    /// Answers every `roots/list` that has no answer scripted by key with `roots`.
    pub fn roots(self, roots: Vec<Root>) -> Self {
        lock(&self.shared.script).roots = Some(ListRootsResult::new(roots));
        self
    }

    // ------------------------------------------------------------------ calls

    /// The underlying client, for anything the kit has no shortcut for. Its multi
    /// round-trip calls are answered from the script and recorded too (appended to the
    /// rounds of the last call); a question the script cannot answer fails them on the
    /// modern era, while on a legacy session the server's shim decides what the refusal
    /// becomes (for a tool, an `isError` result).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The era the client speaks with the server.
    pub fn era(&self) -> Era {
        self.client.era()
    }

    /// Calls a tool, answering every round from the script; returns the complete result
    /// (a tool error is an `Ok` result with `isError`). `arguments` is a JSON object, or
    /// `null` for none.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult> {
        self.begin();
        let result = self.client.call_tool(name, arguments).await;
        self.end(result)
    }

    /// Gets a prompt, answering every round from the script. `arguments` is a JSON object of
    /// strings, or `null` for none.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult> {
        self.begin();
        let result = self.client.get_prompt(name, arguments).await;
        self.end(result)
    }

    /// Reads a resource, answering every round from the script.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.begin();
        let result = self.client.read_resource(uri).await;
        self.end(result)
    }

    /// Sends the first round of a tool call only (no answers, no state) and returns the
    /// server's answer: the complete result, or its `input_required` result with the
    /// questions, for single-round assertions. Recorded as the only round of a new call.
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Outcome<CallToolResult>> {
        self.begin();
        let result = self
            .client
            .call_tool_once(name, arguments, Continuation::new())
            .await;
        self.end(result)
    }

    /// Starts a call: a fresh record of rounds and of unscripted questions.
    fn begin(&self) {
        lock(&self.shared.rounds).clear();
        lock(&self.shared.failures).clear();
    }

    /// Ends a call: a question the script could not answer fails it, whatever the server
    /// made of the client's refusal (on a legacy session the shim turns it into a tool
    /// error).
    fn end<T>(&self, result: Result<T>) -> Result<T> {
        let failure = lock(&self.shared.failures).drain(..).next();
        match failure {
            Some(failure) => Err(failure.into_error()),
            None => result,
        }
    }

    // ------------------------------------------------------------------ rounds

    /// The rounds of the last call, in order (see [`RecordedRound`]).
    pub fn rounds(&self) -> Vec<RecordedRound> {
        lock(&self.shared.rounds).clone()
    }

    /// The last round recorded, if any.
    pub fn last_round(&self) -> Option<RecordedRound> {
        lock(&self.shared.rounds).last().cloned()
    }

    /// Forgets the recorded rounds.
    pub fn clear_rounds(&self) {
        lock(&self.shared.rounds).clear();
    }

    /// Checks that the last call took exactly `expected` rounds, and returns them.
    ///
    /// # Panics
    ///
    /// With the rounds that were recorded, if there were more or fewer.
    #[track_caller]
    pub fn assert_rounds(&self, expected: usize) -> Vec<RecordedRound> {
        let rounds = self.rounds();
        if rounds.len() != expected {
            let mut listing = String::new();
            for (i, round) in rounds.iter().enumerate() {
                listing.push_str(&format!("\n  round {}: {round:?}", i + 1));
            }
            if rounds.is_empty() {
                listing.push_str("\n  (none)");
            }
            panic!(
                "expected {expected} round(s), the last call took {}:{listing}",
                rounds.len()
            );
        }
        rounds
    }

    // ------------------------------------------------------------------ state

    /// Prepares to send `round`'s request again (see [`Replay`]).
    pub fn replay(&self, round: &RecordedRound) -> Replay<'_> {
        Replay::new(self, round)
    }

    /// Moves `clock` — the [`ManualClock`] the server's state sealer was built with — forward
    /// by the sealer's time to live, so that every `requestState` issued so far has expired.
    ///
    /// # Panics
    ///
    /// If the server does not seal request state.
    #[track_caller]
    pub fn expire_state(&self, clock: &ManualClock) {
        let ttl = self
            .state_ttl
            .expect("the server does not seal request state, so nothing can expire");
        clock.advance(ttl);
    }
}

/// The text blocks of a tool result, joined with newlines (a tool error's message, too).
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}
