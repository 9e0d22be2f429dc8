//! # arctern-types
//!
//! The wire model of the Model Context Protocol for [arctern]: JSON-RPC framing, request ids,
//! error objects and codes, and every type of protocol revision 2026-07-28, with the exact
//! wire names of the official schema.
//!
//! This crate has no runtime: only `serde` types and small helpers. Use it to build or read
//! MCP messages directly; the `arctern` crate builds servers and clients on top of it.
//!
//! Conventions:
//! - Optional members are `Option` and are omitted when `None`.
//! - `_meta` is an open JSON object ([`Meta`]); reserved keys have constants in [`meta`].
//! - Every result carries a [`ResultType`]; a result without one deserializes as
//!   [`ResultType::COMPLETE`].
//! - Open objects (results, capabilities) keep unknown members in an `extra` map, so nothing
//!   a newer peer sends is lost on a round trip.
//!
//! [arctern]: https://docs.rs/arctern

pub mod capabilities;
pub mod error;
pub mod implementation;
pub mod jsonrpc;
pub mod logging;
pub mod meta;
pub mod progress;
pub mod result;
pub mod version;

pub use capabilities::{ClientCapabilities, ServerCapabilities};
pub use error::{ErrorCode, ErrorObject};
pub use implementation::{Icon, Implementation};
pub use jsonrpc::{
    JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
    RequestId,
};
pub use logging::LoggingLevel;
pub use meta::{JsonObject, Meta, RequestMeta};
pub use progress::ProgressToken;
pub use result::{CacheScope, Cursor, ResultType};
pub use version::ProtocolVersion;
