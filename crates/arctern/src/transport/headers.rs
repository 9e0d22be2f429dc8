//! The HTTP header names of Streamable HTTP, defined once for the client, the server and
//! the transports (lower-case, as `http` spells header names; [`arctern_types::headers`]
//! has the spec's spelling).

use http::HeaderName;

/// `MCP-Protocol-Version`.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of mirrored argument headers, `Mcp-Param-`, lower-case.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// `Mcp-Session-Id`, the session of the 2025 era.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
