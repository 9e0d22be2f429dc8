//! Where a message came from.

/// The transport a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// Streamable HTTP.
    Http,
    /// Newline-delimited JSON over stdin/stdout.
    Stdio,
    /// In the same process.
    Memory,
    /// A transport outside this crate.
    Other,
}

/// HTTP headers that mirror parts of the body, as decoded by an HTTP transport.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct WireHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`, decoded from its base64 sentinel form when needed; `Err` when the value
    /// is malformed.
    pub name: Option<Result<String, String>>,
    /// Every `Mcp-Param-{Name}` header: `{Name}` (any case), and the value decoded from its
    /// base64 sentinel form when needed, `Err` when malformed. Checked against the arguments
    /// of a `tools/call` whose tool declares them
    /// ([`Handler::mirrored_params`](crate::server::Handler::mirrored_params)).
    pub params: Vec<(String, Result<String, String>)>,
}

impl WireHeaders {
    /// No mirrored headers.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Where a message came from: the transport, the mirrored HTTP headers, and values that
/// middleware attached (such as the authenticated principal).
#[derive(Debug)]
pub struct RequestOrigin {
    pub(crate) transport: TransportKind,
    pub(crate) headers: Option<WireHeaders>,
    pub(crate) extensions: http::Extensions,
    /// The peer's address, when the transport knows it (whose per-caller shares an
    /// anonymous request counts against).
    pub(crate) peer: Option<std::net::IpAddr>,
}

impl RequestOrigin {
    /// A message from a transport without headers (stdio, in-memory, a socket).
    pub fn new(transport: TransportKind) -> Self {
        RequestOrigin {
            transport,
            headers: None,
            extensions: http::Extensions::new(),
            peer: None,
        }
    }

    /// A message from Streamable HTTP with its mirrored headers.
    pub fn http(headers: WireHeaders, extensions: http::Extensions) -> Self {
        RequestOrigin {
            transport: TransportKind::Http,
            headers: Some(headers),
            extensions,
            peer: None,
        }
    }

    /// Records the peer's address (the HTTP server does; a request without one is counted
    /// by the [`PeerAddr`](crate::transport::http::PeerAddr) extension, if any).
    #[cfg(feature = "http")]
    pub(crate) fn with_peer(mut self, peer: Option<std::net::IpAddr>) -> Self {
        self.peer = peer;
        self
    }

    /// Attaches extensions (for example a [`Principal`](crate::server::Principal)).
    pub fn with_extensions(mut self, extensions: http::Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// The transport.
    pub fn transport(&self) -> TransportKind {
        self.transport
    }

    /// The extensions.
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }
}
