//! The 2026-07-28 envelope: the `_meta` every request carries, the protocol version, and
//! the HTTP headers that mirror the body.

use arctern_types::{ErrorObject, RequestMeta};
use serde_json::value::RawValue;

use super::Server;
use crate::server::connection::WireHeaders;

impl<H> Server<H> {
    /// Steps 2–5 of request validation: the `_meta` envelope, the version header, the
    /// supported versions, and the mirrored method and name headers.
    pub(crate) fn check_envelope(
        &self,
        meta: &RequestMeta,
        headers: Option<&WireHeaders>,
        method: &str,
        name: Option<&str>,
    ) -> Result<(), ErrorObject> {
        let Some(version) = meta.protocol_version.as_deref() else {
            return Err(ErrorObject::invalid_params(
                "Missing _meta[\"io.modelcontextprotocol/protocolVersion\"]",
            ));
        };
        if meta.client_capabilities.is_none() {
            return Err(ErrorObject::invalid_params(
                "Missing _meta[\"io.modelcontextprotocol/clientCapabilities\"]",
            ));
        }
        if let Some(h) = headers
            && h.protocol_version.as_deref() != Some(version)
        {
            return Err(ErrorObject::header_mismatch(
                "MCP-Protocol-Version header does not match _meta protocolVersion",
            ));
        }
        let versions = &self.inner.config.versions;
        if !versions.iter().any(|v| v.as_str() == version) {
            let supported: Vec<&str> = versions.iter().map(|v| v.as_str()).collect();
            return Err(ErrorObject::unsupported_protocol_version(
                &supported, version,
            ));
        }
        if let Some(h) = headers {
            if h.method.as_deref() != Some(method) {
                return Err(ErrorObject::header_mismatch(match h.method {
                    None => "Missing Mcp-Method header",
                    Some(_) => "Mcp-Method header does not match the request method",
                }));
            }
            if let Some(name) = name {
                match &h.name {
                    None => {
                        return Err(ErrorObject::header_mismatch("Missing Mcp-Name header"));
                    }
                    Some(Err(why)) => {
                        return Err(ErrorObject::header_mismatch(format!(
                            "Malformed Mcp-Name header: {why}"
                        )));
                    }
                    Some(Ok(value)) if value != name => {
                        return Err(ErrorObject::header_mismatch(
                            "Mcp-Name header does not match the request",
                        ));
                    }
                    Some(Ok(_)) => {}
                }
            }
        }
        Ok(())
    }
}

/// Only the `_meta` of a request's params, for requests whose params are otherwise unknown
/// or malformed.
#[derive(serde::Deserialize)]
struct EnvelopeOnly {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMeta>,
}

/// The `_meta` envelope of params that did not parse as a whole (or belong to an unknown
/// method).
pub(crate) fn envelope_only(raw: Option<&RawValue>) -> Result<RequestMeta, ErrorObject> {
    let Some(raw) = raw else {
        return Err(ErrorObject::invalid_params("Missing params._meta"));
    };
    match serde_json::from_str::<EnvelopeOnly>(raw.get()) {
        Ok(EnvelopeOnly { meta: Some(meta) }) => Ok(meta),
        Ok(EnvelopeOnly { meta: None }) => Err(ErrorObject::invalid_params("Missing params._meta")),
        Err(e) => Err(ErrorObject::invalid_params(format!(
            "Invalid params._meta: {e}"
        ))),
    }
}
