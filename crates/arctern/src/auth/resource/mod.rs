//! The protected-resource side of MCP authorization (features `auth`, `server`, `http`).
//!
//! A [`ProtectedResource`] describes the MCP endpoint as an OAuth 2.1 resource server: its
//! canonical URI, its authorization servers, its scopes, how tokens are checked (a
//! [`TokenVerifier`]: [`JwtVerifier`] or [`IntrospectionVerifier`]) and how DPoP is
//! treated ([`DpopConfig`]). From it come:
//!
//! - [`ProtectedResource::layer`]: a tower layer that wraps the MCP service
//!   ([`StreamableHttpService`](crate::transport::http::StreamableHttpService)), refuses
//!   requests without a valid token with the challenges the MCP specification asks for,
//!   and puts the [`VerifiedToken`] and a [`Principal`](crate::server::Principal) in the
//!   request's extensions;
//! - [`ProtectedResource::metadata_service`]: the RFC 9728 metadata at the well-known
//!   URIs;
//! - [`ProtectedResource::error_response`] and
//!   [`insufficient_scope_response`](ProtectedResource::insufficient_scope_response): the
//!   `401`/`403` answers, for middleware that checks scopes per operation.
//!
//! See the [authorization guide](crate::docs::authorization).

mod challenge;
mod dpop;
mod fetch;
mod introspection;
mod jwt;
mod layer;
mod metadata;
mod token;

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderName, HeaderValue, Response, Uri};
use http_body_util::Full;

pub use challenge::Challenge;
pub use dpop::{
    DEFAULT_DPOP_MAX_AGE, DEFAULT_DPOP_MAX_PROOF_SIZE, DEFAULT_DPOP_NONCE_LIFETIME,
    DEFAULT_DPOP_REPLAY_CAPACITY, DpopConfig,
};
pub use fetch::{DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_RESPONSE_SIZE, FetchConfig};
pub use introspection::{
    DEFAULT_INTROSPECTION_CACHE_ENTRIES, DEFAULT_INTROSPECTION_CACHE_TTL, IntrospectionAuth,
    IntrospectionVerifier, IntrospectionVerifierBuilder,
};
pub use jwt::{
    ACCESS_TOKEN_TYPE, DEFAULT_JWKS_REFETCH_INTERVAL, DEFAULT_JWKS_TTL, DEFAULT_LEEWAY,
    DEFAULT_MAX_JWKS_KEYS, DEFAULT_MAX_TOKEN_SIZE, JwtVerifier, JwtVerifierBuilder,
};
pub use layer::{AuthBody, AuthLayer, AuthService, Cors};
pub use metadata::{MetadataService, ProtectedResourceMetadata, WELL_KNOWN_PREFIX};
pub use token::{AuthError, TokenVerifier, VerifiedToken};

use crate::state::{Clock, SystemClock};
use crate::{Error, ErrorKind};
use token::OFFLINE_ACCESS;

/// The `DPoP-Nonce` response header (RFC 9449 §8).
pub const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// An MCP endpoint protected as an OAuth 2.1 resource server. Cheap to clone.
///
/// ```no_run
/// use arctern::auth::resource::{JwtVerifier, ProtectedResource};
/// use arctern::server::McpServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let resource = "https://mcp.example.com/mcp";
/// let verifier = JwtVerifier::builder("https://auth.example.com", resource)
///     .jwks_uri("https://auth.example.com/.well-known/jwks.json")
///     .build()?;
/// let protected = ProtectedResource::builder(resource)
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["mcp:tools", "mcp:resources"])
///     .required_scopes(["mcp:tools"])
///     .verifier(verifier)
///     .build()?;
///
/// let server = McpServer::new("demo").build()?;
/// let [path_based, root] = protected.metadata_paths();
/// let app: axum::Router = axum::Router::new()
///     .route_service("/mcp", protected.layer().wrap(server.http_service()))
///     .route_service(&path_based, protected.metadata_service())
///     .route_service(&root, protected.metadata_service());
/// # let _ = app; Ok(()) }
/// ```
#[derive(Clone)]
pub struct ProtectedResource {
    inner: Arc<Inner>,
}

struct Inner {
    /// `scheme://authority` of the resource, for DPoP `htu`.
    origin: String,
    metadata: ProtectedResourceMetadata,
    metadata_url: String,
    metadata_paths: [String; 2],
    verifier: Arc<dyn TokenVerifier>,
    /// What a token's `aud` must name one of: the resource, and the alternatives given.
    audiences: Vec<String>,
    tokens_without_audience: bool,
    required_scopes: Vec<String>,
    challenge_scopes: Vec<String>,
    dpop: Option<dpop::Dpop>,
    cors: Cors,
    max_token_size: usize,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for ProtectedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedResource")
            .field("resource", &self.inner.metadata.resource)
            .field(
                "authorization_servers",
                &self.inner.metadata.authorization_servers,
            )
            .field("required_scopes", &self.inner.required_scopes)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`ProtectedResource`].
pub struct ProtectedResourceBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    required_scopes: Vec<String>,
    challenge_scopes: Option<Vec<String>>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    verifier: Option<Arc<dyn TokenVerifier>>,
    other_audiences: Vec<String>,
    tokens_without_audience: bool,
    dpop: DpopConfig,
    cors: Cors,
    max_token_size: usize,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for ProtectedResourceBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedResourceBuilder")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ProtectedResource {
    /// Settings for the resource whose canonical URI is `resource`: the MCP endpoint's URL
    /// as clients reach it (`https://mcp.example.com/mcp`), the audience its tokens must
    /// name.
    pub fn builder(resource: impl Into<String>) -> ProtectedResourceBuilder {
        ProtectedResourceBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            required_scopes: Vec::new(),
            challenge_scopes: None,
            resource_name: None,
            resource_documentation: None,
            verifier: None,
            other_audiences: Vec::new(),
            tokens_without_audience: false,
            dpop: DpopConfig::default(),
            cors: Cors::default(),
            max_token_size: DEFAULT_MAX_TOKEN_SIZE,
            clock: Arc::new(SystemClock),
        }
    }

    /// The resource's canonical URI.
    pub fn resource(&self) -> &str {
        &self.inner.metadata.resource
    }

    /// The metadata document.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.inner.metadata
    }

    /// The URL of the metadata at the path-based well-known URI, as named in challenges
    /// (`https://mcp.example.com/.well-known/oauth-protected-resource/mcp`).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The two paths the metadata is served at: the path-based one
    /// (`/.well-known/oauth-protected-resource/mcp`) and the root one
    /// (`/.well-known/oauth-protected-resource`). For a resource at the root they are the
    /// same.
    pub fn metadata_paths(&self) -> [String; 2] {
        self.inner.metadata_paths.clone()
    }

    /// The tower service answering the metadata.
    pub fn metadata_service(&self) -> MetadataService {
        MetadataService::new(self)
    }

    /// The tower layer that protects an MCP service.
    pub fn layer(&self) -> AuthLayer {
        AuthLayer::new(self.clone())
    }

    /// The scopes every request needs (checked by the layer).
    pub fn required_scopes(&self) -> &[String] {
        &self.inner.required_scopes
    }

    /// The challenges for `error`, as `WWW-Authenticate` values: a `Bearer` one (unless
    /// only DPoP is accepted) and a `DPoP` one (when DPoP is accepted), each naming the
    /// metadata and the scopes; the error code goes on the challenge of the scheme the
    /// request used (`dpop` true for the `DPoP` scheme).
    pub fn challenges(&self, error: &AuthError, dpop: bool) -> Vec<HeaderValue> {
        let inner = &*self.inner;
        let scopes: Vec<String> = match error {
            AuthError::InsufficientScope(scopes) => scopes.clone(),
            _ => inner.challenge_scopes.clone(),
        };
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let dpop_error = dpop
            || matches!(
                error,
                AuthError::InvalidDpopProof(_) | AuthError::UseDpopNonce
            );
        let decorate = |challenge: Challenge, carries_error: bool| {
            let mut c = challenge
                .resource_metadata(&inner.metadata_url)
                .scope(&scopes);
            if carries_error && let Some(code) = error.code() {
                c = c.error(code);
                if let Some(d) = error.description() {
                    c = c.error_description(&d);
                }
            }
            c.to_header_value()
        };
        let mut values = Vec::with_capacity(2);
        let dpop_config = inner.dpop.as_ref().map(|d| &d.config);
        if !dpop_config.is_some_and(|d| d.required) {
            values.push(decorate(Challenge::bearer(), !dpop_error));
        }
        if let Some(config) = dpop_config {
            values.push(decorate(
                Challenge::dpop().algs(&config.algorithms),
                dpop_error,
            ));
        }
        values
    }

    /// The whole answer for `error`: its status (`400`, `401`, `403` or `503`), the
    /// challenges, a `DPoP-Nonce` when nonces are on, and a JSON body
    /// `{"error": …, "error_description": …}`. CORS headers are added by the layer.
    pub fn error_response(&self, error: &AuthError, dpop: bool) -> Response<Full<Bytes>> {
        let mut body = serde_json::Map::new();
        if let Some(code) = error.code() {
            body.insert("error".into(), code.into());
        }
        if let Some(d) = error.description() {
            body.insert("error_description".into(), d.into());
        }
        if body.is_empty() {
            body.insert("error".into(), "unauthorized".into());
        }
        let mut response = Response::new(Full::new(Bytes::from(
            serde_json::Value::Object(body).to_string(),
        )));
        *response.status_mut() = error.status();
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if matches!(error, AuthError::Unavailable(_)) {
            headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
        } else {
            for value in self.challenges(error, dpop) {
                headers.append(WWW_AUTHENTICATE, value);
            }
        }
        if let Some(d) = &self.inner.dpop
            && d.config.nonces
            && let Ok(nonce) = HeaderValue::try_from(d.current_nonce(self.inner.clock.now_unix()))
        {
            headers.insert(DPOP_NONCE, nonce);
        }
        response
    }

    /// `403 insufficient_scope` naming `scopes` (every scope the operation needs, not only
    /// the missing ones, as the MCP specification asks), for per-operation scope checks.
    pub fn insufficient_scope_response(&self, scopes: &[&str]) -> Response<Full<Bytes>> {
        let error = AuthError::InsufficientScope(scopes.iter().map(|s| (*s).to_owned()).collect());
        self.error_response(&error, false)
    }

    /// The refusal of an operation that needs `scopes`: those and the scopes every request
    /// needs, each once.
    pub(crate) fn operation_scopes(&self, scopes: &[String]) -> AuthError {
        let mut all = self.inner.required_scopes.clone();
        for scope in scopes {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        AuthError::InsufficientScope(all)
    }

    pub(crate) fn verifier(&self) -> &dyn TokenVerifier {
        &*self.inner.verifier
    }
}

impl ProtectedResourceBuilder {
    /// Adds an authorization server, by its issuer identifier (at least one is required).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes advertised in the metadata (`offline_access` is left out).
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The scopes every request needs: a token without them gets `403 insufficient_scope`.
    /// They are also the `scope` of the `401` challenge unless
    /// [`challenge_scopes`](Self::challenge_scopes) says otherwise.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The `scope` of the `401` challenge: what a client should ask for first.
    pub fn challenge_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.challenge_scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// `resource_name` in the metadata.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// `resource_documentation` in the metadata.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// How tokens are checked (required).
    pub fn verifier(mut self, verifier: impl TokenVerifier) -> Self {
        self.verifier = Some(Arc::new(verifier));
        self
    }

    /// How tokens are checked, shared.
    pub fn shared_verifier(mut self, verifier: Arc<dyn TokenVerifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Accepts tokens whose `aud` names `audience` instead of the resource (say, the URI
    /// with a trailing slash); the verifier must accept it too. May be repeated.
    ///
    /// Whatever the verifier says, the layer refuses a token whose `aud` names neither
    /// the resource nor one of these (RFC 8707: a token for another resource is never
    /// accepted here).
    pub fn also_accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.other_audiences.push(audience.into());
        self
    }

    /// Accepts verified tokens that carry no `aud` at all (default: refused), for an
    /// introspection endpoint that does not return it
    /// ([`require_audience(false)`](IntrospectionVerifierBuilder::require_audience)).
    /// A token whose `aud` names another resource is refused still.
    pub fn accept_tokens_without_audience(mut self, accept: bool) -> Self {
        self.tokens_without_audience = accept;
        self
    }

    /// How DPoP is treated (default: accepted next to bearer tokens, without nonces).
    pub fn dpop(mut self, config: DpopConfig) -> Self {
        self.dpop = config;
        self
    }

    /// Cross-origin access for browser clients (default: any origin may read the answers,
    /// including challenges).
    pub fn cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// The longest `Authorization` credential read, in bytes (default 16 KiB); a longer
    /// one is refused before the verifier sees it.
    pub fn max_token_size(mut self, bytes: usize) -> Self {
        self.max_token_size = bytes;
        self
    }

    /// The clock for DPoP proof times and nonces.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The protected resource. Fails without a verifier or an authorization server, or
    /// when the resource is not an absolute `http(s)` URI without a query or fragment.
    pub fn build(self) -> crate::Result<ProtectedResource> {
        let config = |m: &str| Error::new(ErrorKind::Config, m.to_owned());
        let verifier = self
            .verifier
            .ok_or_else(|| config("a protected resource needs a token verifier"))?;
        if self.authorization_servers.is_empty() {
            return Err(config(
                "a protected resource needs at least one authorization server",
            ));
        }
        if self.resource.contains(['#', '?']) {
            return Err(config("the resource URI must have no query or fragment"));
        }
        let resource: Uri = self
            .resource
            .parse()
            .map_err(|e| Error::new(ErrorKind::Config, "invalid resource URI").with_source(e))?;
        let (Some(scheme @ ("http" | "https")), Some(authority)) =
            (resource.scheme_str(), resource.authority())
        else {
            return Err(config("the resource URI must be an absolute http(s) URI"));
        };
        let origin = format!("{scheme}://{authority}");
        let path = match resource.path() {
            "/" | "" => "",
            p => p.trim_end_matches('/'),
        };
        let path_based = format!("{WELL_KNOWN_PREFIX}{path}");
        let metadata_url = format!("{origin}{path_based}");
        let keep = |scopes: Vec<String>| -> Vec<String> {
            scopes.into_iter().filter(|s| s != OFFLINE_ACCESS).collect()
        };
        let dpop = self
            .dpop
            .enabled
            .then(|| dpop::Dpop::new(self.dpop.clone()));
        let metadata = ProtectedResourceMetadata {
            resource: self.resource.clone(),
            authorization_servers: self.authorization_servers,
            scopes_supported: self.scopes_supported.map(keep),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: self.resource_name,
            resource_documentation: self.resource_documentation,
            dpop_signing_alg_values_supported: dpop.as_ref().map(|d| {
                d.config
                    .algorithms
                    .iter()
                    .map(|a| a.as_str().to_owned())
                    .collect()
            }),
            dpop_bound_access_tokens_required: dpop.as_ref().map(|d| d.config.required),
            extra: serde_json::Map::new(),
        };
        let mut audiences = vec![self.resource.clone()];
        audiences.extend(self.other_audiences);
        let required_scopes = keep(self.required_scopes);
        let challenge_scopes = keep(
            self.challenge_scopes
                .unwrap_or_else(|| required_scopes.clone()),
        );
        Ok(ProtectedResource {
            inner: Arc::new(Inner {
                origin,
                metadata,
                metadata_url,
                metadata_paths: [path_based, WELL_KNOWN_PREFIX.to_owned()],
                verifier,
                audiences,
                tokens_without_audience: self.tokens_without_audience,
                required_scopes,
                challenge_scopes,
                dpop,
                cors: self.cors,
                max_token_size: self.max_token_size,
                clock: self.clock,
            }),
        })
    }
}
