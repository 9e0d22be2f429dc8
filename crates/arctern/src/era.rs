//! The two generations of the protocol.

/// Which generation of the protocol a message belongs to, on either side.
///
/// The revision itself (2026-07-28, 2025-11-25, 2025-06-18) is a separate value: a request
/// context has [`protocol_version`](crate::server::RequestContext::protocol_version), a
/// client its negotiated version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28 or later: every request carries its own `_meta` envelope; no sessions.
    Modern,
    /// A revision negotiated with `initialize` (2025-11-25 or earlier): a session holds the
    /// version, the client's capabilities and its log level.
    Legacy,
}
