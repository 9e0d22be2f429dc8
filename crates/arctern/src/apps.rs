//! MCP Apps (`io.modelcontextprotocol/ui`): interactive views that a server ships and a
//! host renders inline, in a sandboxed iframe.
//!
//! - Server: register a view with [`McpServer::view`](crate::server::McpServer::view) and a
//!   [`ViewSpec`], point tools at it with [`ToolSpec::ui`](crate::server::ToolSpec::ui) and
//!   [`ToolSpec::visibility`](crate::server::ToolSpec::visibility); the server declares the
//!   extension on both eras and checks, when it is built, what hosts would refuse
//!   ([`Rule`]). [`RequestContext::client_supports_apps`](crate::server::RequestContext::client_supports_apps)
//!   tells whether this request's client renders views.
//! - Client: [`ClientBuilder::apps`](crate::client::ClientBuilder::apps) declares the
//!   extension (off by default); [`Tool::ui_meta`](crate::types::Tool::ui_meta),
//!   [`Resource::ui_meta`](crate::types::Resource::ui_meta) and
//!   [`ResourceContents::ui_meta`](crate::types::ResourceContents::ui_meta) read what
//!   servers send.
//!
//! The wire types are those of [`arctern_types::apps`], re-exported here. See the
//! [guide](crate::docs::apps).

pub use arctern_types::apps::*;

#[cfg(feature = "server")]
pub use crate::server::ViewSpec;
