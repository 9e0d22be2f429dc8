//! MCP servers.
//!
//! Two levels:
//! - [`McpServer`]: register tools, prompts, resources and templates as plain async
//!   functions whose parameters are extractors ([`extract`], and the multi round-trip
//!   answers of [`mrtr`]); it builds the [`Server`] for you.
//! - [`Handler`]: one async method per protocol method, for full control. Wrap it in a
//!   [`Server`] with a [`ServerConfig`].
//!
//! Either way the [`Server`] validates every request's envelope (or, for a 2025-era client,
//! its session), verifies and seals multi round-trip state, runs the [`middleware`], answers
//! `server/discover` and `subscriptions/listen`, stamps results, and is served by any
//! transport. The rooms:
//!
//! | module | for |
//! | --- | --- |
//! | this one | writing a server: [`McpServer`], [`RequestContext`], [`Handler`], configuration |
//! | [`extract`] | handler parameters: [`Args`](extract::Args), [`State`](extract::State), and writing your own extractor |
//! | [`mrtr`] | multi round-trip requests: questions, answers, limits |
//! | [`tasks`] | long-running tools: the tasks extension, task handles, task stores |
//! | [`middleware`] | code around every handler call, on both eras |
//! | [`connection`] | writing a transport: [`Connection`](connection::Connection), [`Reply`](connection::Reply) |

mod config;
mod context;
mod engine;
mod handler;
mod legacy;
mod listed;
mod mcp;
mod mirror;
mod note_channel;
mod scope;
mod subscriptions;
mod wire;

pub mod budget;
pub mod connection;
pub mod extract;
pub mod middleware;
pub mod mrtr;
pub mod tasks;

pub use crate::Outcome;
pub use config::{CacheHint, CachePolicy, DEFAULT_MAX_LISTEN_STREAMS, PrincipalHook, ServerConfig};
pub use context::{Principal, RequestContext};
pub use engine::Server;
pub use handler::{Handler, HandlerResult, resource_not_found};
pub use legacy::{DEFAULT_INPUT_TIMEOUT, LegacyConfig, LegacyPeer};
pub use listed::{ListResult, Listed};
#[cfg(feature = "apps")]
pub use mcp::ViewSpec;
pub use mcp::{
    ArgumentCheck, Blob, BuiltServer, CompletionRequest, DEFAULT_PAGE_SIZE, HandlerFn,
    IntoCompletion, IntoPromptResult, IntoReadResult, IntoToolResult, Json, McpHandler, McpServer,
    PromptSpec, RegistrationError, ResourceSpec, ResourceTemplateSpec, ToolSpec, UriTemplate,
    UriTemplateError,
};
pub use mirror::MirroredParam;
pub use scope::InsufficientScope;
pub use subscriptions::{
    Change, ChangeBus, ChangeNotifier, ChangeReceiver, ChangeRecvError, DEFAULT_CHANGE_BUFFER,
    DEFAULT_MAX_SUBSCRIPTION_URI_LEN, DEFAULT_MAX_SUBSCRIPTIONS, LocalChangeBus, Subscriber,
    SubscriptionPolicy,
};

#[cfg(feature = "http")]
pub(crate) use engine::encode_error;
#[cfg(any(feature = "http", feature = "testing"))]
pub(crate) use legacy::is_legacy_initialize;
#[cfg(feature = "http")]
pub(crate) use legacy::{has_modern_envelope, random_hex};
