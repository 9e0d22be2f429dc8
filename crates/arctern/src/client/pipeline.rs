//! The client's request pipeline, built once by the builder: the user's middleware, then
//! the client's own layers, outermost first —
//!
//! 1. [`MirrorHeaders`] (HTTP only): the `Mcp-Param-*` headers of a `tools/call`; on
//!    `-32020` it re-lists the tools and sends the call once more;
//! 2. [`VersionRetry`]: on `-32022`, the version the server supports, and the request
//!    once more;
//! 3. [`EraLayer`] (when a legacy version is offered): a legacy session the server forgot
//!    (HTTP 404) is opened again, and the request sent once more;
//! 4. the telemetry layer (feature `otel`): one `CLIENT` span per request sent;
//! 5. [`Exchange`]: encoding for the era (the modern `_meta` envelope or a legacy
//!    session's request), the transport, reading the answer's stream.
//!
//! A layer's own requests (the tool list, `initialize`) go to the layers below it, so that
//! nothing re-enters the pipeline from the top.

use std::sync::Arc;

use arctern_types::methods;
use arctern_types::{ErrorCode, ErrorObject};

use super::Client;
use super::middleware::{Answer, BoxFuture, Middleware, Next, Request};
use super::negotiate;
use crate::{Error, ErrorKind};

/// The rest of the pipeline below a layer, and the headers of the request that made the
/// layer send one of its own (they carry what the application's middleware added, such as
/// credentials).
pub(crate) struct Via {
    pub(super) next: Next,
    pub(super) headers: http::HeaderMap,
}

impl Via {
    pub(super) fn new(next: &Next, request: &Request) -> Self {
        let mut headers = request.headers.clone();
        strip_mirrored(&mut headers);
        Via {
            next: next.clone(),
            headers,
        }
    }
}

/// Removes the `Mcp-Param-*` headers one call mirrored.
fn strip_mirrored(headers: &mut http::HeaderMap) {
    if headers.is_empty() {
        return;
    }
    let mirrored: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| {
            name.as_str()
                .starts_with(crate::transport::headers::MCP_PARAM_PREFIX)
        })
        .cloned()
        .collect();
    for name in mirrored {
        headers.remove(name);
    }
}

/// The client's layers below the application's, innermost last: [`MirrorHeaders`] when
/// the transport mirrors headers, [`EraLayer`] when a legacy version is offered.
pub(super) fn own_layers(
    mirrors: bool,
    legacy: bool,
    #[cfg(feature = "otel")] telemetry: Option<crate::otel::ClientTelemetry>,
) -> Vec<Arc<dyn Middleware>> {
    let mut layers: Vec<Arc<dyn Middleware>> = Vec::with_capacity(5);
    if mirrors {
        layers.push(Arc::new(MirrorHeaders));
    }
    layers.push(Arc::new(VersionRetry));
    if legacy {
        layers.push(Arc::new(EraLayer));
    }
    #[cfg(feature = "otel")]
    if let Some(telemetry) = telemetry {
        layers.push(Arc::new(crate::otel::ClientTelemetryLayer::new(telemetry)));
    }
    layers.push(Arc::new(Exchange));
    layers
}

/// The JSON-RPC error code of a failure, if the server answered with one.
fn code_of(error: &Error) -> Option<ErrorCode> {
    error.protocol_error().map(|o| o.code)
}

/// `Mcp-Param-*` headers for `tools/call`, and one re-listing of tools on `-32020`.
struct MirrorHeaders;

impl MirrorHeaders {
    /// `request` with the headers its tool's plan mirrors.
    async fn mirrored(client: &Client, request: &Request, via: &Via) -> crate::Result<Request> {
        let mut request = request.clone();
        strip_mirrored(&mut request.headers);
        let tool = request.name.clone().unwrap_or_default();
        if let Some(plan) = client.header_plan(&tool, Some(via)).await?
            && !plan.is_empty()
        {
            let arguments = super::wire::arguments_of(&request.params);
            plan.apply(arguments.as_ref(), &mut request.headers);
        }
        Ok(request)
    }
}

impl Middleware for MirrorHeaders {
    fn call(&self, request: Request, next: Next) -> BoxFuture<Answer> {
        // `x-mcp-header` means nothing on the legacy wire.
        if request.method != methods::TOOLS_CALL
            || request.client().negotiated().era == crate::Era::Legacy
        {
            return next.run(request);
        }
        Box::pin(async move {
            let client = request.client().clone();
            let via = Via::new(&next, &request);
            let first = Self::mirrored(&client, &request, &via).await?;
            match next.clone().run(first).await {
                Err(e) if code_of(&e) == Some(ErrorCode::HEADER_MISMATCH) => {
                    tracing::debug!("header mismatch: re-listing tools and retrying once");
                    client.refresh_tools(Some(&via)).await?;
                    let again = Self::mirrored(&client, &request, &via).await?;
                    next.run(again).await
                }
                answer => answer,
            }
        })
    }
}

/// On `-32022`: the newest version both sides share, and the request once more.
struct VersionRetry;

impl Middleware for VersionRetry {
    fn call(&self, request: Request, next: Next) -> BoxFuture<Answer> {
        Box::pin(async move {
            let first = next.clone().run(request.clone()).await;
            let e = match first {
                Err(e) if code_of(&e) == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) => e,
                answer => return answer,
            };
            let client = request.client();
            let negotiated = client.negotiated();
            if negotiated.era == crate::Era::Legacy {
                return Err(e);
            }
            let obj = e
                .protocol_error()
                .cloned()
                .unwrap_or_else(|| ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, ""));
            let version = negotiate::on_unsupported_version(&obj, &client.inner.versions)?;
            tracing::debug!(%version, "retrying with another protocol version");
            client.set_negotiated(negotiated.at(version));
            next.run(request).await
        })
    }
}

/// A legacy session the server forgot (HTTP 404): `initialize` again (through the layers
/// below), and the request once more.
struct EraLayer;

impl Middleware for EraLayer {
    fn call(&self, request: Request, next: Next) -> BoxFuture<Answer> {
        if !request.parts.renew || request.client().negotiated().era != crate::Era::Legacy {
            return next.run(request);
        }
        Box::pin(async move {
            match next.clone().run(request.clone()).await {
                Err(e) if session_gone(&e) => {
                    tracing::debug!("the legacy session expired; initializing again");
                    let via = Via::new(&next, &request);
                    request.client().initialize(Some(&via)).await?;
                    match next.run(request.clone()).await {
                        Err(e) if session_gone(&e) => Err(Error::new(
                            ErrorKind::Transport,
                            format!(
                                "the server forgot the legacy session again right after it \
                                 was opened anew; {} given up",
                                request.method
                            ),
                        )
                        .with_source(e)),
                        answer => answer,
                    }
                }
                answer => answer,
            }
        })
    }
}

/// Whether `error` says the server no longer knows the legacy session (HTTP 404).
fn session_gone(error: &Error) -> bool {
    error.http_status() == Some(404)
}

/// The transport end: encodes the request for the era it is sent in, sends it, reads the
/// stream of its answer.
struct Exchange;

impl Middleware for Exchange {
    fn call(&self, request: Request, _next: Next) -> BoxFuture<Answer> {
        Box::pin(async move {
            let mut request = request;
            let client = request.client().clone();
            let negotiated = client.negotiated();
            let id = request.id.unwrap_or_else(|| client.next_id());
            let extra = std::mem::take(&mut request.headers);
            let (body, headers) = client.encode(&request, id, &negotiated, extra)?;
            let legacy = negotiated.era == crate::Era::Legacy;
            drop(negotiated);
            client.round_trip(id, body, headers, &request, legacy).await
        })
    }
}
