//! A Model Context Protocol (MCP) SDK for Rust: servers and clients for protocol revision
//! 2026-07-28 — stateless requests, and multi round-trip requests whose state is sealed by
//! default — and the 2025 revisions (`initialize`, sessions), served from the same endpoint.
//! Transports: Streamable HTTP (standalone, or a tower service mounted in axum; HTTPS on
//! rustls), stdio, in-memory. OAuth 2.1 on both sides.
//!
//! # A server
//!
//! Tools are plain async functions whose parameters are [extractors](server::extract):
//! [`Args<T>`](server::extract::Args) for the arguments (its JSON Schema, derived with
//! `schemars`, is the tool's `inputSchema`), [`State<S>`](server::extract::State),
//! [`RequestContext`](server::RequestContext), and the answers of multi round-trip requests,
//! [`Answer<Q>`](server::mrtr::Answer) and [`AnswerOutcome<Q>`](server::mrtr::AnswerOutcome).
//! A tool that needs something only the user has asks for it as a parameter: the server
//! returns `input_required`, the client answers, and the body runs when every answer is there.
//!
//! ```no_run
//! use arctern::server::McpServer;
//! use arctern::server::extract::Args;
//! use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Provision {
//!     /// Name of the database.
//!     name: String,
//! }
//!
//! /// Where the database lives: one of the regions offered.
//! struct Region;
//!
//! impl Question for Region {
//!     type Args = Provision;
//!     type Answer = String;
//!     fn ask(cx: &AskContext<'_, Provision>) -> Result<Ask<String>, NotYet> {
//!         let regions = [("eu-west-1", "Ireland"), ("us-east-1", "Virginia")];
//!         let message = format!("Which region should {} live in?", cx.args().name);
//!         Ok(Ask::choice("region", message, regions))
//!     }
//! }
//!
//! async fn provision(Args(p): Args<Provision>, Answer(region): Answer<Region>) -> String {
//!     format!("Provisioned {} in {region}.", p.name)
//! }
//!
//! #[tokio::main]
//! async fn main() -> arctern::Result<()> {
//!     McpServer::new("provisioner")
//!         .tool("provision", "Provision a database.", provision)
//!         .serve_http("127.0.0.1:8000")
//!         .await
//! }
//! ```
//!
//! The same server answers 2025-era clients: on their sessions the legacy shim sends each
//! question as a real `elicitation/create` request. The low-level [`Handler`](server::Handler)
//! trait (one async method per protocol method) gives full control.
//!
//! # A client
//!
//! [`Client`](client::Client) answers the server's questions with callbacks and hides the
//! rounds:
//!
//! ```no_run
//! use arctern::client::Client;
//! use arctern::types::elicitation::ElicitResult;
//! use serde_json::json;
//!
//! # async fn run() -> arctern::Result<()> {
//! let client = Client::builder()
//!     .name("my-app")
//!     .on_elicit(|_question| async move { Ok(ElicitResult::accept([("region", "eu-west-1")])) })
//!     .connect("http://127.0.0.1:8000/mcp")
//!     .await?;
//! let result = client.call_tool("provision", json!({"name": "orders"})).await?;
//! # let _ = result; Ok(()) }
//! ```
//!
//! # What is where
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`apps`] | MCP Apps: views shipped by servers, their metadata, the rules hosts apply |
//! | [`server`] | [`McpServer`](server::McpServer) (tools, prompts, resources and templates, completions, progress, logging, subscriptions), the [`Handler`](server::Handler) trait, [`extract`](server::extract)ors, multi round-trip requests ([`mrtr`](server::mrtr)), [`tasks`](server::tasks), [`middleware`](server::middleware) |
//! | [`client`] | [`Client`](client::Client), its automatic and manual round-trip loops, version negotiation |
//! | [`auth`] | OAuth 2.1: JOSE on `ring`, the protected-resource layer for servers, the client's authorizer |
//! | [`state`] | sealing of `requestState`: a key ring, request binding, a pluggable codec |
//! | [`transport`] | Streamable HTTP (server and client), stdio (server and child-process client), in-memory |
//! | [`types`] | the wire model (the `arctern-types` crate) |
//! | [`testing`] | an in-process test kit: a test client with scripted answers and recorded rounds |
//! | [`otel`] | OpenTelemetry traces and metrics by the MCP semantic conventions |
//! | [`docs`] | the guides below |
//!
//! Errors are one opaque [`Error`] whose [`ErrorKind`] and predicates tell protocol errors (a
//! JSON-RPC error object from the peer, kept as data) from transport failures.
//!
//! # Guides
//!
//! - [`docs::mrtr`]: multi round-trip requests — questions, answers, rounds, both eras;
//! - [`docs::tasks`]: long-running tools as tasks (the tasks extension);
//! - [`docs::apps`]: MCP Apps — interactive views shipped by servers, checked as hosts check
//!   them, on both eras;
//! - [`docs::request_state`]: what sealed request state protects, and how;
//! - [`docs::budgets`]: every shared budget, the share per caller, the refusal, sizing the
//!   one-time store;
//! - [`docs::authorization`]: OAuth 2.1 for servers and clients;
//! - [`docs::fleet`]: many instances behind a load balancer — keys, rotation, notifications;
//! - [`docs::observability`]: OpenTelemetry traces and metrics;
//! - [`docs::hosts`]: using a server from Claude Desktop, Claude Code, Cursor, VS Code and the
//!   MCP Inspector;
//! - [`docs::migrating_from_rmcp`]: rmcp 3.x, side by side with arctern;
//! - [`docs::migrating_from_python`]: the Python SDK 2.x, side by side with arctern.
//!
//! # Getting started
//!
//! ```sh
//! cargo add arctern
//! cargo add tokio --features macros,rt-multi-thread
//! cargo add serde --features derive
//! cargo add schemars@1
//! ```
//!
//! `#[derive(JsonSchema)]` must come from the same major version of `schemars` as arctern's,
//! re-exported as `arctern::schemars`: with another one, a handler "is not a handler" to
//! the compiler.
//!
//! # Cargo features
//!
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use arctern_types as types;
pub use arctern_types::Outcome;
pub use arctern_types::{ErrorCode, ErrorObject};
pub use era::Era;
pub use error::{Error, ErrorKind, Result};

mod era;
mod error;
#[cfg(feature = "server")]
mod log_limit;

#[cfg(feature = "apps")]
pub mod apps;
#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
#[cfg(all(feature = "server", feature = "client"))]
pub mod docs;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod state;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;

/// The `schemars` crate (1.x) that arctern derives schemas with: tool arguments, questions'
/// forms, structured output. `#[derive(JsonSchema)]` on your types must come from this same
/// major version; name it through this re-export (`use arctern::schemars::JsonSchema;` with
/// `#[schemars(crate = "arctern::schemars")]` on the type) to be sure of it, or depend on
/// `schemars = "1"` directly.
#[cfg(feature = "server")]
pub use schemars;

// Entry points for the fuzz targets (`fuzz/`) into parsers that are not public. Only built
// under `--cfg fuzzing`, which cargo-fuzz sets; never part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
#[path = "fuzz_hooks.rs"]
pub mod __fuzz;
