//! Protocol version negotiation and era detection, in one place.
//!
//! A modern (2026-07-28+) client has no handshake: every request names its version. The
//! client may probe with `server/discover` first; whenever a server answers `-32022`
//! (unsupported protocol version) the client picks the newest version it shares from
//! `error.data.supported` and retries once.
//!
//! Era detection: [`classify_probe_failure`] tells a modern server's version mismatch (or
//! another recognised 2026 error) from a server that does not look modern at all — any other
//! JSON-RPC error, a 4xx without a modern error body, a result that is not a discover
//! result, or silence — which is where the client falls back to `initialize`.

use std::sync::Arc;
use std::time::Duration;

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::discover::DiscoverResult;
use arctern_types::implementation::Implementation;
use arctern_types::methods;
use arctern_types::version::ProtocolVersion;
use arctern_types::{ErrorCode, ErrorObject};
use http::HeaderValue;

use super::Client;
use super::error::VersionError;
use super::wire;
use crate::{Era, Error, ErrorKind, Result};

/// What the client knows about the server it talks to.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub(crate) version: ProtocolVersion,
    pub(crate) version_header: HeaderValue,
    pub(crate) server_info: Option<Arc<Implementation>>,
    pub(crate) capabilities: Option<ServerCapabilities>,
    pub(crate) instructions: Option<String>,
    pub(crate) discovered: bool,
    pub(crate) era: Era,
}

impl Negotiated {
    pub(crate) fn new(version: ProtocolVersion) -> Self {
        Negotiated {
            version_header: version_header(&version),
            version,
            server_info: None,
            capabilities: None,
            instructions: None,
            discovered: false,
            era: Era::Modern,
        }
    }

    /// The same knowledge at another version.
    pub(crate) fn at(&self, version: ProtocolVersion) -> Self {
        Negotiated {
            version_header: version_header(&version),
            version,
            ..self.clone()
        }
    }

    /// Adopts a discover result: the newest shared version, the server's capabilities,
    /// identity and instructions.
    pub(crate) fn adopt(
        &self,
        result: &DiscoverResult,
        ours: &[ProtocolVersion],
    ) -> Result<Self, Error> {
        let version = pick(ours, &result.supported_versions).ok_or_else(|| {
            mismatch(
                ours,
                &result.supported_versions,
                legacy_note(&result.supported_versions),
            )
        })?;
        let mut next = self.at(version);
        next.capabilities = Some(result.capabilities.clone());
        next.instructions = result.instructions.clone();
        if let Some(info) = result.server_info() {
            next.server_info = Some(Arc::new(info));
        }
        next.discovered = true;
        Ok(next)
    }
}

fn version_header(version: &ProtocolVersion) -> HeaderValue {
    HeaderValue::from_str(version.as_str()).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

/// The first of `ours` (in preference order) that the server supports; only modern
/// versions qualify, since a legacy one cannot ride the per-request envelope.
pub(crate) fn pick(ours: &[ProtocolVersion], theirs: &[String]) -> Option<ProtocolVersion> {
    ours.iter()
        .filter(|v| v.is_modern())
        .find(|v| theirs.iter().any(|t| t == v.as_str()))
        .cloned()
}

/// The error for "nothing in common".
pub(crate) fn mismatch(ours: &[ProtocolVersion], theirs: &[String], note: Option<String>) -> Error {
    VersionError {
        server: theirs.to_vec(),
        client: ours.iter().map(|v| v.as_str().to_owned()).collect(),
        note,
    }
    .into_error()
}

fn legacy_note(theirs: &[String]) -> Option<String> {
    theirs
        .iter()
        .any(|v| !ProtocolVersion::new(v.clone()).is_modern())
        .then(|| "the server also speaks legacy (initialize) versions".to_owned())
}

/// What a `-32022` answer tells: the version to retry with, or the error to give up with.
///
/// The retry may use the very version that was refused when the server lists it as
/// supported: the refusal then came from something transient (another node behind a load
/// balancer, a proxy, a deployment in progress), and the caller retries only once, so this
/// cannot loop.
pub(crate) fn on_unsupported_version(
    error: &ErrorObject,
    ours: &[ProtocolVersion],
) -> Result<ProtocolVersion, Error> {
    let theirs = error.supported_versions().unwrap_or_default();
    pick(ours, &theirs).ok_or_else(|| mismatch(ours, &theirs, legacy_note(&theirs)))
}

/// How a server looked when a probe (`server/discover`) failed.
#[derive(Debug)]
pub(crate) enum ProbeFailure {
    /// A modern server that rejected something about the request (a recognised 2026
    /// error code): keep the modern era and surface the error.
    Modern,
    /// Not recognisably modern (method not found, another error, a 4xx without a modern
    /// error body, a result that is not a discover result, silence): fall back to
    /// `initialize`.
    NotModern,
    /// The transport failed; nothing can be concluded.
    Unreachable,
}

/// Classifies a failed probe per the era-detection rules: only the modern error codes
/// (`-32020`, `-32021`, `-32022`) prove a modern server; the fallback must not key on any
/// one other code.
pub(crate) fn classify_probe_failure(error: &Error) -> ProbeFailure {
    match error.protocol_error() {
        Some(obj) if obj.code.is_modern_envelope_error() => ProbeFailure::Modern,
        Some(_) => ProbeFailure::NotModern,
        // Authorization and TLS failures say nothing about the era; retrying would repeat
        // them (and, for authorization, ask the person or the server a second time).
        None if error.is_auth() || error.is_tls() => ProbeFailure::Unreachable,
        None if error.is_timeout() || error.kind() == crate::ErrorKind::Codec => {
            ProbeFailure::NotModern
        }
        None if http_client_error(error) => ProbeFailure::NotModern,
        None => ProbeFailure::Unreachable,
    }
}

/// Whether `error` came from an HTTP 4xx answer that carried no JSON-RPC message.
fn http_client_error(error: &Error) -> bool {
    error
        .http_status()
        .is_some_and(|status| (400..500).contains(&status))
}

impl Client {
    // ---------------------------------------------------------------- discovery

    /// Sends `server/discover` and adopts what it says: the newest shared protocol version,
    /// the server's capabilities, identity and instructions.
    pub async fn discover(&self) -> Result<DiscoverResult> {
        let result: DiscoverResult = self
            .cacheable(methods::SERVER_DISCOVER, "", &wire::NoParams {})
            .await?;
        let next = self.negotiated().adopt(&result, &self.inner.versions)?;
        self.set_negotiated(next);
        Ok(result)
    }

    /// Era detection, run when a client connects: `initialize` when pinned to the legacy
    /// era; else `server/discover` (unless discovery is off), falling back to `initialize`
    /// when the server does not look modern (and a legacy version is offered).
    pub(crate) async fn probe(&self, discover: bool) -> Result<()> {
        match self.inner.era {
            Some(Era::Legacy) => return self.initialize(None).await.map(drop),
            Some(Era::Modern) if discover => return self.discover().await.map(drop),
            _ if !discover => return Ok(()),
            _ => {}
        }
        let failure = match self.discover_within(self.inner.probe_timeout).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let fall_back = match failure.kind() {
            // A modern server that shares no modern version with us: only a legacy version
            // it also lists can help.
            ErrorKind::Version => VersionError::of(&failure).is_none_or(|v| {
                v.server.is_empty()
                    || v.server
                        .iter()
                        .any(|s| self.inner.legacy_versions.iter().any(|l| l == s.as_str()))
            }),
            _ => matches!(classify_probe_failure(&failure), ProbeFailure::NotModern),
        };
        if !fall_back || self.inner.legacy_versions.is_empty() {
            return Err(failure);
        }
        tracing::debug!(error = %failure, "server/discover failed; trying initialize");
        match self.initialize(None).await {
            Ok(_) => Ok(()),
            // `-32022` to `initialize` is modern evidence after all: probe once more.
            Err(e)
                if e.protocol_error().map(|o| o.code)
                    == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) =>
            {
                self.discover().await.map(drop)
            }
            Err(e) => Err(e),
        }
    }

    pub(super) async fn discover_within(&self, limit: Duration) -> Result<DiscoverResult> {
        match tokio::time::timeout(limit, self.discover()).await {
            Ok(result) => result,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("server/discover got no answer within {limit:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_preferred_shared_modern_version() {
        let ours = [
            ProtocolVersion::new("2027-01-01"),
            ProtocolVersion::V2026_07_28,
        ];
        assert_eq!(
            pick(&ours, &["2026-07-28".into(), "2025-11-25".into()]),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(pick(&ours, &["2025-11-25".into()]), None);
        let err = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "2027-01-01");
        assert_eq!(
            on_unsupported_version(&err, &ours).unwrap(),
            ProtocolVersion::V2026_07_28
        );
        // A refused version the server still lists is retried (once, by the caller).
        let err = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "2026-07-28");
        assert_eq!(
            on_unsupported_version(&err, &ours).unwrap(),
            ProtocolVersion::V2026_07_28
        );
        let err = ErrorObject::unsupported_protocol_version(&["2025-11-25"], "2026-07-28");
        assert!(on_unsupported_version(&err, &ours).is_err());
    }
}
