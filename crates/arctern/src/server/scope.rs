//! Scopes a call needs: the refusal a server answers when the caller's token lacks them.

use arctern_types::{ErrorCode, ErrorObject};
use serde_json::{Value, json};

/// A call was refused because the caller's access token lacks scopes it needs.
///
/// [`McpServer`](super::McpServer) answers it for tools, prompts and resources registered
/// with scopes (`ToolSpec::scopes` and the like); a handler or a
/// [middleware](super::middleware) can answer it too, for a decision only the call's
/// arguments can make: return [`InsufficientScope::to_error`].
///
/// On the wire it is a JSON-RPC error with code [`InsufficientScope::CODE`] whose
/// `data.requiredScopes` lists every scope the operation needs (not only the missing ones,
/// as the MCP authorization specification asks). Over Streamable HTTP it is answered with
/// status `403`, and the response carries this value in its extensions, from which the
/// protected-resource layer (`arctern::auth::resource`) writes the
/// `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` challenge that lets a
/// client step up.
///
/// ```
/// use arctern::server::InsufficientScope;
///
/// let refusal = InsufficientScope::new(["files:read", "files:write"]);
/// let error = refusal.to_error();
/// assert_eq!(error.code.0, InsufficientScope::CODE);
/// assert_eq!(InsufficientScope::from_error(&error), Some(refusal));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InsufficientScope {
    scopes: Vec<String>,
}

impl InsufficientScope {
    /// The JSON-RPC error code: application-defined, outside the range JSON-RPC and MCP
    /// reserve (`-32768` to `-32000`), as the MCP specification asks of new codes.
    pub const CODE: i32 = -31403;

    /// A refusal naming `scopes`: every scope the operation needs.
    pub fn new<I, S>(scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        InsufficientScope {
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    /// The scopes the operation needs.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The JSON-RPC error answering the call.
    pub fn to_error(&self) -> ErrorObject {
        let message = if self.scopes.is_empty() {
            "Insufficient scope: the access token does not allow this operation".to_owned()
        } else {
            format!(
                "Insufficient scope: this operation needs the scopes {}",
                self.scopes.join(" ")
            )
        };
        ErrorObject::new(ErrorCode(Self::CODE), message)
            .with_data(json!({ "requiredScopes": self.scopes }))
    }

    /// The refusal an error answers with, if it is one.
    pub fn from_error(error: &ErrorObject) -> Option<Self> {
        if error.code.0 != Self::CODE {
            return None;
        }
        let scopes = error.data.as_ref()?.get("requiredScopes")?.as_array()?;
        Some(InsufficientScope {
            scopes: scopes
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
    }

    /// The refusal in a serialized JSON-RPC error response, if it is one (what an HTTP
    /// transport reads back from a refused call's answer).
    #[cfg(feature = "http")]
    pub(crate) fn from_response_body(body: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: ErrorObject,
        }
        let envelope: Envelope = serde_json::from_slice(body).ok()?;
        Self::from_error(&envelope.error)
    }
}

impl std::fmt::Display for InsufficientScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "insufficient scope (needs {})", self.scopes.join(" "))
    }
}

impl std::error::Error for InsufficientScope {}
