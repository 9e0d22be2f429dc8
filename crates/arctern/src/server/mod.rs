//! MCP servers.
//!
//! Two levels:
//! - [`Handler`]: one async method per protocol method, for full control. Wrap it in a
//!   [`Server`] with a [`ServerConfig`].
//! - [`McpServer`]: register tools, prompts, resources and templates as plain async
//!   functions whose parameters are extractors; it builds the [`Server`] for you.
//!
//! Either way the [`Server`] validates every request's envelope, answers `server/discover`
//! and `subscriptions/listen`, stamps results, and is served by any transport.

mod config;
mod context;
mod engine;
mod handler;
mod legacy;
mod mcp;
mod mirror;
mod mrtr;
mod note_channel;
mod outcome;
mod prepared;
mod reply;
mod subscriptions;
mod wire;

pub use config::{CacheHint, CachePolicy, PrincipalHook, ServerConfig};
pub use context::{Era, Principal, RequestContext, TransportKind};
pub(crate) use engine::encode_error;
pub use engine::{RequestOrigin, Server, WireHeaders};
pub use handler::{Handler, HandlerResult, resource_not_found};
pub use legacy::{DEFAULT_INPUT_TIMEOUT, LegacyConfig, LegacyPeer};
pub(crate) use legacy::{
    Initialized, LegacySession, has_modern_envelope, is_legacy_initialize, random_hex,
};
pub use mcp::*;
pub use mirror::MirroredParam;
pub use mrtr::{
    Answer, AnswerOutcome, Ask, AskContext, Asked, Collect, Decision, Interrupt, MrtrLimits,
    NotYet, Question, Questions, RequestState, Responses, Roots, Sample, SamplingQuestion,
};
pub use outcome::Outcome;
pub use prepared::{Preparable, PreparedResult};
pub use reply::{Reply, ReplyStream};
pub use subscriptions::{Change, ChangeNotifier};
