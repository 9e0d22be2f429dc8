//! RFC 9728 protected resource metadata, and the service that answers it.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ProtectedResource;

/// The well-known path prefix of protected resource metadata (RFC 9728 §3).
pub const WELL_KNOWN_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// Protected resource metadata (RFC 9728 §2), as served at the well-known URIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource's canonical URI.
    pub resource: String,
    /// The issuers of the authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// The scopes a client may ask for (never `offline_access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How tokens may be sent: `["header"]`.
    pub bearer_methods_supported: Vec<String>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// A page for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// The DPoP proof algorithms accepted (RFC 9449 §5.1), when DPoP is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether only DPoP-bound tokens are accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tower service answering `GET` (and `HEAD`) for the protected resource metadata at
/// its path-based well-known URI (`/.well-known/oauth-protected-resource/<path>`) and at
/// the root one (`/.well-known/oauth-protected-resource`); other paths get `404`, other
/// methods `405`, and CORS preflights `204`. The document is public: any origin may read
/// it.
///
/// Mount it at both paths, before any authentication (see
/// [`ProtectedResource::metadata_paths`]).
#[derive(Debug, Clone)]
pub struct MetadataService {
    body: Bytes,
    paths: [String; 2],
}

impl MetadataService {
    pub(crate) fn new(resource: &ProtectedResource) -> Self {
        let body = serde_json::to_vec(resource.metadata()).unwrap_or_default();
        MetadataService {
            body: Bytes::from(body),
            paths: resource.metadata_paths(),
        }
    }

    /// Answers one request.
    pub fn respond<B>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        let mut response = Response::new(Full::new(Bytes::new()));
        if !self.paths.iter().any(|p| p == path) {
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
        response
            .headers_mut()
            .insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        match *request.method() {
            Method::GET | Method::HEAD => {
                let headers = response.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers.insert(
                    CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=300"),
                );
                if request.method() == Method::GET {
                    *response.body_mut() = Full::new(self.body.clone());
                }
            }
            Method::OPTIONS => {
                *response.status_mut() = StatusCode::NO_CONTENT;
                let headers = response.headers_mut();
                headers.insert(
                    http::header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, HEAD, OPTIONS"),
                );
                headers.insert(
                    http::header::ACCESS_CONTROL_MAX_AGE,
                    HeaderValue::from_static("600"),
                );
            }
            _ => {
                *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            }
        }
        response
    }
}

impl<B> tower_service::Service<Request<B>> for MetadataService {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ready(Ok(self.respond(&request)))
    }
}
