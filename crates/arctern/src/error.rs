//! Infrastructure errors.
//!
//! Two families of failure exist, as in tonic and hyper: a *protocol* outcome is data (a
//! JSON-RPC [`ErrorObject`](crate::ErrorObject) the peer sent, or a tool's `isError` result),
//! while everything that keeps a message from being exchanged at all (a socket error, a
//! timeout, a peer that went away, bad configuration) is an [`Error`]: opaque, with a
//! [`ErrorKind`] and predicates to branch on.

use std::borrow::Cow;
use std::fmt;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An I/O error (binding, reading, writing, spawning).
    Io,
    /// The transport failed: the connection broke, or the peer sent something that is not
    /// MCP (bad HTTP status, malformed frame, non-JSON body).
    Transport,
    /// The peer answered with a JSON-RPC error object; see [`Error::protocol_error`].
    Protocol,
    /// A deadline passed.
    Timeout,
    /// The connection or the server is closed.
    Closed,
    /// The configuration is invalid (for example a handler could not be registered, or a key
    /// is too short).
    Config,
    /// A message could not be encoded or decoded.
    Codec,
    /// The peer speaks no protocol version this side supports.
    Version,
    /// TLS refused the connection: the server's certificate does not verify against the
    /// trusted roots (unknown issuer, wrong name, expired), or no protocol version is shared.
    Tls,
    /// Authorization failed: the server wants a token and none could be obtained (bad or
    /// missing metadata, a refused grant, an authorization response that fails its checks,
    /// no way to reach the person who must consent).
    Auth,
    /// A multi round-trip request could not be completed (round cap reached, no handler for
    /// an input request, an unknown `resultType`).
    InputRequired,
    /// The tool ran and reported an error (`isError`) where its output was asked for
    /// ([`Client::call_tool_json`](crate::client::Client::call_tool_json),
    /// [`CallToolResult::json`](crate::types::tools::CallToolResult::json) with `?`); the
    /// [`source`](std::error::Error::source) is a
    /// [`StructuredError`](crate::types::tools::StructuredError) holding the result.
    Tool,
}

/// An infrastructure error: something kept a message from being exchanged at all (a socket
/// error, a timeout, a peer that went away, bad configuration), or, for
/// [`ErrorKind::Protocol`], the JSON-RPC error object the peer answered with. Protocol
/// outcomes inside a result (a tool's `isError`) are data, not errors.
///
/// One pointer wide, so `Result<T, Error>` stays small on the happy path.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    message: Cow<'static, str>,
    protocol: Option<crate::ErrorObject>,
    /// The status of the HTTP answer that carried no JSON-RPC message, if that is what
    /// failed.
    http_status: Option<u16>,
    source: Option<BoxError>,
}

impl Error {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                message: message.into(),
                protocol: None,
                http_status: None,
                source: None,
            }),
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// Records the status of an HTTP answer that carried no JSON-RPC message (what a
    /// transport over HTTP sets on the error it returns for such an answer).
    pub fn with_http_status(mut self, status: u16) -> Self {
        self.inner.http_status = Some(status);
        self
    }

    /// The status of the HTTP answer this error came from, when that answer was an error
    /// status without a JSON-RPC message (on this error or on an [`Error`] it wraps); `None`
    /// on other transports and for other failures. A client tells a server that does not
    /// speak the modern protocol (a `4xx` without a modern error body), or a legacy session
    /// the server forgot (`404`), by it.
    pub fn http_status(&self) -> Option<u16> {
        let mut error = self;
        loop {
            if let Some(status) = error.inner.http_status {
                return Some(status);
            }
            error = error.inner.source.as_deref()?.downcast_ref::<Error>()?;
        }
    }

    /// An error carrying the JSON-RPC error object the peer answered with.
    pub fn protocol(error: crate::ErrorObject) -> Self {
        let mut e = Error::new(ErrorKind::Protocol, error.to_string());
        e.inner.protocol = Some(error);
        e
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The JSON-RPC error object the peer sent, for [`ErrorKind::Protocol`].
    pub fn protocol_error(&self) -> Option<&crate::ErrorObject> {
        self.inner.protocol.as_ref()
    }

    /// Whether this is an I/O error.
    pub fn is_io(&self) -> bool {
        self.inner.kind == ErrorKind::Io
    }

    /// Whether the transport failed.
    pub fn is_transport(&self) -> bool {
        self.inner.kind == ErrorKind::Transport
    }

    /// Whether the peer answered with a JSON-RPC error.
    pub fn is_protocol(&self) -> bool {
        self.inner.kind == ErrorKind::Protocol
    }

    /// Whether a deadline passed.
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == ErrorKind::Timeout
    }

    /// Whether the connection or server is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.kind == ErrorKind::Closed
    }

    /// Whether TLS refused the connection (see [`ErrorKind::Tls`]).
    pub fn is_tls(&self) -> bool {
        self.inner.kind == ErrorKind::Tls
    }

    /// Whether authorization failed (see [`ErrorKind::Auth`]).
    pub fn is_auth(&self) -> bool {
        self.inner.kind == ErrorKind::Auth
    }

    /// Whether the configuration is invalid.
    pub fn is_config(&self) -> bool {
        self.inner.kind == ErrorKind::Config
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind)
            .field("message", &self.inner.message);
        if let Some(p) = &self.inner.protocol {
            d.field("protocol", p);
        }
        if let Some(status) = self.inner.http_status {
            d.field("http_status", &status);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.message)?;
        if let Some(source) = &self.inner.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref().map(|e| e as _)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::TimedOut {
            ErrorKind::Timeout
        } else {
            ErrorKind::Io
        };
        Error::new(kind, "I/O error").with_source(e)
    }
}

/// A tool's error result becomes [`ErrorKind::Tool`]; structured content that is missing or
/// of another shape, [`ErrorKind::Codec`]. The [`StructuredError`] is the source.
///
/// [`StructuredError`]: arctern_types::tools::StructuredError
impl From<arctern_types::tools::StructuredError> for Error {
    fn from(e: arctern_types::tools::StructuredError) -> Self {
        Error::structured(e, "tool result")
    }
}

impl Error {
    /// The error for a tool result without usable structured output; `what` names it.
    pub(crate) fn structured(
        e: arctern_types::tools::StructuredError,
        what: impl Into<Cow<'static, str>>,
    ) -> Self {
        let kind = match e {
            arctern_types::tools::StructuredError::ToolError(_) => ErrorKind::Tool,
            _ => ErrorKind::Codec,
        };
        Error::new(kind, what).with_source(e)
    }
}

#[cfg(feature = "server")]
impl From<crate::server::RegistrationError> for Error {
    fn from(e: crate::server::RegistrationError) -> Self {
        Error::new(ErrorKind::Config, "invalid server").with_source(e)
    }
}

/// A `Result` with an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
