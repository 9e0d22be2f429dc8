//! Opening a legacy session: `initialize`, and the legacy shape of errors.

use std::sync::Arc;

use arctern_types::jsonrpc::JsonRpcRequest;
use arctern_types::legacy::{
    InitializeRequestParams, InitializeResult, client_capabilities_for, negotiate_version,
    server_capabilities_for,
};
use arctern_types::methods;
use arctern_types::{ErrorCode, ErrorObject, RequestId};
use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::session::{LegacySession, Outbound, forward_changes};
use super::shim;
use crate::server::Server;
use crate::server::engine::{Method, encode_error, encode_legacy_result};
use crate::server::handler::Handler;

/// Whether a request is a legacy `initialize`: the method, without the modern `_meta`
/// envelope (a modern client sending `initialize` gets the modern `-32601`).
pub(crate) fn is_legacy_initialize(method: &str, params: Option<&RawValue>) -> bool {
    method == methods::legacy::INITIALIZE && !has_modern_envelope(params)
}

/// Whether params carry the 2026-07-28 envelope (`_meta` with a protocol version).
pub(crate) fn has_modern_envelope(params: Option<&RawValue>) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "_meta", default)]
        meta: Option<ProbeMeta>,
    }
    #[derive(serde::Deserialize)]
    struct ProbeMeta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
        version: Option<serde::de::IgnoredAny>,
    }
    params
        .and_then(|p| serde_json::from_str::<Probe>(p.get()).ok())
        .and_then(|p| p.meta)
        .is_some_and(|m| m.version.is_some())
}

/// The outcome of a legacy `initialize`.
pub(crate) enum Initialized {
    /// A new session and the response to send.
    Session(Arc<LegacySession>, Bytes),
    /// The request was refused (the error response to send).
    Refused(Bytes),
}

impl<H: Handler> Server<H> {
    /// Answers a legacy `initialize`: negotiates the version, opens a session whose
    /// unsolicited messages go to `outbound`, and starts forwarding list changes to it.
    pub(crate) fn legacy_initialize(
        &self,
        request: &JsonRpcRequest,
        extensions: &http::Extensions,
        outbound: Outbound,
        parent: &CancellationToken,
    ) -> Initialized {
        let id = &request.id;
        let params: InitializeRequestParams = match request
            .params
            .as_deref()
            .map(|p| serde_json::from_str(p.get()))
        {
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                return Initialized::Refused(encode_error(
                    Some(id),
                    &ErrorObject::invalid_params(format!("Invalid initialize params: {e}")),
                ));
            }
            None => {
                return Initialized::Refused(encode_error(
                    Some(id),
                    &ErrorObject::invalid_params("Missing initialize params"),
                ));
            }
        };
        let config = self.config();
        let Some(version) = negotiate_version(&params.protocol_version, &config.legacy.versions)
        else {
            return Initialized::Refused(encode_error(
                Some(id),
                &ErrorObject::method_not_found(methods::legacy::INITIALIZE),
            ));
        };
        let capabilities = client_capabilities_for(&version, params.capabilities);
        let session = LegacySession::new(
            version,
            capabilities,
            params.client_info,
            parent.child_token(),
            outbound,
            extensions.clone(),
        );
        #[cfg(feature = "otel")]
        let session = session.timed(config.telemetry.as_ref());
        let session = Arc::new(session);
        tokio::spawn(forward_changes(
            Arc::downgrade(&session),
            self.subscribe_changes(),
            config.capabilities.clone(),
            config.subscriptions.clone(),
            session.cancel.clone(),
        ));
        tracing::debug!(version = %session.version, client = %session.client_info.name, "opened a legacy session");
        let body = self.initialize_result(id, &session);
        Initialized::Session(session, body)
    }

    pub(crate) fn initialize_result(&self, id: &RequestId, session: &LegacySession) -> Bytes {
        let config = self.config();
        let mut result = InitializeResult::new(
            session.version.as_str(),
            server_capabilities_for(&config.capabilities),
            config.info.clone(),
        );
        result.instructions = config.instructions.clone();
        encode_legacy_result(id, &result)
    }
}

/// Maps what a handler (or the multi round-trip layer) answered to the codes of the legacy
/// revisions: a missing client capability (`-32021` does not exist there) becomes
/// `-32600` naming what the client did not declare at `initialize`; an unknown resource
/// becomes `-32002`.
pub(crate) fn legacy_error(method: Method, mut error: ErrorObject) -> ErrorObject {
    if error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
        let required = error
            .data
            .as_ref()
            .and_then(|d| d.get("requiredCapabilities"))
            .cloned()
            .unwrap_or(Value::Null);
        return shim::missing_capability(required);
    }
    if method == Method::ResourcesRead
        && error.code == ErrorCode::INVALID_PARAMS
        && error.data.as_ref().is_some_and(|d| d.get("uri").is_some())
    {
        error.code = ErrorCode::LEGACY_RESOURCE_NOT_FOUND;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ServerConfig;

    #[test]
    fn tells_legacy_initialize_from_modern() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        let legacy = raw(
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#,
        );
        assert!(is_legacy_initialize("initialize", Some(&legacy)));
        let modern = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        assert!(!is_legacy_initialize("initialize", Some(&modern)));
        assert!(!is_legacy_initialize("tools/list", Some(&legacy)));
        assert!(ServerConfig::new("a", "1").legacy.is_enabled());
    }
}
