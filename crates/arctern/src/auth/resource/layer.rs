//! The tower layer: authenticate, then call the MCP service with the verified token in
//! the request's extensions.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, AUTHORIZATION, ORIGIN, VARY, WWW_AUTHENTICATE,
};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;

use super::dpop::Proof;
use super::token::{AuthError, VerifiedToken};
use super::{DPOP_NONCE, ProtectedResource};
use crate::server::{InsufficientScope, Principal};

const EXPOSED: HeaderValue =
    HeaderValue::from_static("WWW-Authenticate, DPoP-Nonce, Mcp-Session-Id, Mcp-Protocol-Version");
const METHODS: HeaderValue = HeaderValue::from_static("GET, POST, DELETE, OPTIONS");
const DEFAULT_HEADERS: HeaderValue = HeaderValue::from_static(
    "authorization, content-type, accept, dpop, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id",
);

/// Which browser origins may read the protected resource's answers (CORS).
///
/// The default, [`Cors::any`], lets every origin read them, challenges included: tokens
/// travel in the `Authorization` header, never in cookies, so this gives a page nothing
/// it could not get by asking itself. Preflights (`OPTIONS`) are answered by the layer;
/// the MCP service behind it still checks `Origin` against DNS rebinding, so allow your
/// web client's origin there too
/// ([`HttpConfig::allow_origin`](crate::transport::http::HttpConfig::allow_origin)).
#[derive(Debug, Clone)]
pub struct Cors {
    origins: Option<Vec<String>>,
    enabled: bool,
    max_age: Duration,
}

impl Default for Cors {
    fn default() -> Self {
        Cors::any()
    }
}

impl Cors {
    /// Every origin (`Access-Control-Allow-Origin: *`).
    pub fn any() -> Self {
        Cors {
            origins: None,
            enabled: true,
            max_age: Duration::from_secs(600),
        }
    }

    /// Only these origins (`https://app.example.com`; compared case-insensitively).
    pub fn allow_origins<I, S>(origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Cors {
            origins: Some(
                origins
                    .into_iter()
                    .map(|o| o.as_ref().trim_end_matches('/').to_ascii_lowercase())
                    .collect(),
            ),
            ..Cors::any()
        }
    }

    /// No CORS headers at all (and preflights go to the service behind).
    pub fn disabled() -> Self {
        Cors {
            enabled: false,
            ..Cors::any()
        }
    }

    /// How long a browser may cache a preflight answer (default 10 minutes).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if allowed.
    fn allow(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        if !self.enabled {
            return None;
        }
        match &self.origins {
            None => Some(HeaderValue::from_static("*")),
            Some(list) => {
                let o = origin
                    .to_str()
                    .ok()?
                    .trim_end_matches('/')
                    .to_ascii_lowercase();
                list.contains(&o).then(|| origin.clone())
            }
        }
    }

    fn decorate(&self, origin: Option<&HeaderValue>, headers: &mut HeaderMap) {
        if let Some(allow) = self.allow(origin) {
            if self.origins.is_some() {
                headers.append(VARY, HeaderValue::from_static("Origin"));
            }
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, allow);
            headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
        }
    }

    fn preflight(&self, headers: &HeaderMap) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NO_CONTENT;
        let out = response.headers_mut();
        if let Some(allow) = self.allow(headers.get(ORIGIN)) {
            if self.origins.is_some() {
                out.append(VARY, HeaderValue::from_static("Origin"));
            }
            out.insert(ACCESS_CONTROL_ALLOW_ORIGIN, allow);
            out.insert(ACCESS_CONTROL_ALLOW_METHODS, METHODS);
            // Echo what the page asks to send when it is a list of header names (the MCP
            // headers grow with the protocol); otherwise the known set.
            let asked = headers
                .get(ACCESS_CONTROL_REQUEST_HEADERS)
                .filter(|v| {
                    v.to_str().is_ok_and(|s| {
                        s.split(',')
                            .all(|h| http::HeaderName::from_bytes(h.trim().as_bytes()).is_ok())
                    })
                })
                .cloned();
            out.insert(
                ACCESS_CONTROL_ALLOW_HEADERS,
                asked.unwrap_or(DEFAULT_HEADERS),
            );
            out.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
            if let Ok(age) = HeaderValue::try_from(self.max_age.as_secs().to_string()) {
                out.insert(ACCESS_CONTROL_MAX_AGE, age);
            }
        }
        response
    }

    fn is_preflight<B>(&self, request: &Request<B>) -> bool {
        self.enabled
            && request.method() == Method::OPTIONS
            && request.headers().contains_key(ORIGIN)
            && request
                .headers()
                .contains_key(ACCESS_CONTROL_REQUEST_METHOD)
    }
}

/// The tower layer of a [`ProtectedResource`] (see [`ProtectedResource::layer`]).
#[derive(Debug, Clone)]
pub struct AuthLayer {
    resource: ProtectedResource,
}

impl AuthLayer {
    pub(crate) fn new(resource: ProtectedResource) -> Self {
        AuthLayer { resource }
    }

    /// Wraps `service` (the same as [`Layer::layer`](tower_layer::Layer::layer)).
    pub fn wrap<S>(&self, service: S) -> AuthService<S> {
        AuthService {
            inner: service,
            resource: self.resource.clone(),
        }
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        self.wrap(inner)
    }
}

/// A service behind a [`ProtectedResource`]'s checks.
///
/// For each request: a CORS preflight is answered at once; a token in the query string
/// (`access_token`) gets `400 invalid_request`; then the `Authorization` header (exactly
/// one, `Bearer` or `DPoP`, at most the configured size) is checked — for `DPoP`, with its
/// proof — by the verifier; a DPoP-bound token sent as `Bearer` is refused; the required
/// scopes are checked. On success the request goes on with the [`VerifiedToken`] and a
/// [`Principal`] (`"<issuer> <subject>"`, see [`VerifiedToken::principal`]) in its
/// extensions; otherwise the layer answers with [`ProtectedResource::error_response`].
#[derive(Debug, Clone)]
pub struct AuthService<S> {
    inner: S,
    resource: ProtectedResource,
}

/// What a credential looked like.
struct Credential<'a> {
    dpop: bool,
    token: &'a str,
}

impl ProtectedResource {
    /// Checks a request's credentials (everything but the response): the verified token,
    /// or why not, and whether the request used the `DPoP` scheme.
    pub async fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> (Result<VerifiedToken, AuthError>, bool) {
        let credential = match credential(parts, self.inner.max_token_size) {
            Ok(c) => c,
            Err(e) => return (Err(e), false),
        };
        let dpop = credential.dpop;
        (self.check(parts, credential).await, dpop)
    }

    async fn check(
        &self,
        parts: &http::request::Parts,
        credential: Credential<'_>,
    ) -> Result<VerifiedToken, AuthError> {
        let inner = &*self.inner;
        let now = inner.clock.now_unix();
        let proof: Option<Proof> = match (&inner.dpop, credential.dpop) {
            (None, true) => return Err(AuthError::invalid_token("DPoP is not accepted here")),
            (Some(d), false) if d.config.required => {
                return Err(AuthError::invalid_token(
                    "this resource accepts DPoP-bound tokens only",
                ));
            }
            (Some(d), true) => {
                let mut proofs = parts.headers.get_all("dpop").iter();
                let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                    return Err(AuthError::InvalidDpopProof(
                        "exactly one DPoP header is required".into(),
                    ));
                };
                let proof = proof.to_str().map_err(|_| {
                    AuthError::InvalidDpopProof("the DPoP header is not ASCII".into())
                })?;
                let url = format!("{}{}", inner.origin, parts.uri.path());
                Some(d.check_proof(proof, parts.method.as_str(), &url, credential.token, now)?)
            }
            _ => None,
        };
        let token = self.verifier().verify(credential.token).await?;
        // The verifier should have checked the audience; a custom one may not have.
        match &token.claims.aud {
            Some(aud) if inner.audiences.iter().any(|a| aud.contains(a)) => {}
            None if inner.tokens_without_audience => {}
            Some(_) => {
                return Err(AuthError::invalid_token(
                    "the token is not for this resource (aud)",
                ));
            }
            None => {
                return Err(AuthError::invalid_token(
                    "the token names no audience (aud)",
                ));
            }
        }
        match (proof, &inner.dpop) {
            (Some(proof), Some(d)) => d.bind(proof, &token, now)?,
            _ if token.dpop_jkt.is_some() => {
                return Err(AuthError::invalid_token(
                    "the token is DPoP-bound: send it with the DPoP scheme and a proof",
                ));
            }
            _ => {}
        }
        let required: Vec<&str> = inner.required_scopes.iter().map(String::as_str).collect();
        if !token.has_scopes(&required) {
            return Err(AuthError::InsufficientScope(inner.required_scopes.clone()));
        }
        Ok(token)
    }
}

/// Reads the credential: no token in the query, one `Authorization` header, a known
/// scheme, a `token68` of bounded size.
fn credential(parts: &http::request::Parts, max: usize) -> Result<Credential<'_>, AuthError> {
    if let Some(query) = parts.uri.query()
        && form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
    {
        return Err(AuthError::InvalidRequest(
            "access tokens are accepted in the Authorization header only, never in the URL",
        ));
    }
    let mut values = parts.headers.get_all(AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return Err(AuthError::Missing),
        (Some(_), Some(_)) => {
            return Err(AuthError::InvalidRequest(
                "more than one Authorization header",
            ));
        }
        (Some(v), None) => v,
    };
    if value.len() > max + 16 {
        return Err(AuthError::invalid_token("the token is too large"));
    }
    let value = value
        .to_str()
        .map_err(|_| AuthError::invalid_token("the Authorization header is not ASCII"))?;
    let (scheme, token) = value.trim().split_once(' ').ok_or(AuthError::Missing)?;
    let dpop = if scheme.eq_ignore_ascii_case("bearer") {
        false
    } else if scheme.eq_ignore_ascii_case("dpop") {
        true
    } else {
        return Err(AuthError::Missing);
    };
    let token = token.trim();
    let token68 = !token.is_empty()
        && token.trim_end_matches('=').bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        });
    if !token68 {
        return Err(AuthError::invalid_token("the token is malformed"));
    }
    if token.len() > max {
        return Err(AuthError::invalid_token("the token is too large"));
    }
    Ok(Credential { dpop, token })
}

impl<S, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for AuthService<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<AuthBody<ResBody>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let resource = self.resource.clone();
        let cors = &resource.inner.cors;
        if cors.is_preflight(&request) {
            let response = cors.preflight(request.headers()).map(AuthBody::full);
            return Box::pin(std::future::ready(Ok(response)));
        }
        // The clone that was made ready goes to this request (the tower idiom).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let origin = parts.headers.get(ORIGIN).cloned();
            let (verdict, dpop) = resource.authenticate(&parts).await;
            let mut response = match verdict {
                Ok(token) => {
                    tracing::debug!(issuer = %token.issuer, subject = %token.subject, "authenticated a request");
                    parts.extensions.insert(Principal(token.principal()));
                    parts.extensions.insert(token);
                    let response = inner.call(Request::from_parts(parts, body)).await?;
                    let mut response = response.map(|b| AuthBody {
                        kind: Kind::Inner { body: b },
                    });
                    // A call refused for its scopes (403 from the MCP service): the
                    // challenge names every scope the operation needs, the resource's own
                    // included.
                    if let Some(refusal) = response.extensions_mut().remove::<InsufficientScope>() {
                        let error = resource.operation_scopes(refusal.scopes());
                        for value in resource.challenges(&error, dpop) {
                            response.headers_mut().append(WWW_AUTHENTICATE, value);
                        }
                    }
                    if dpop
                        && let Some(d) = &resource.inner.dpop
                        && d.config.nonces
                        && let Ok(nonce) =
                            HeaderValue::try_from(d.current_nonce(resource.inner.clock.now_unix()))
                    {
                        response.headers_mut().insert(DPOP_NONCE, nonce);
                    }
                    response
                }
                Err(error) => {
                    tracing::debug!(%error, "refused a request");
                    resource.error_response(&error, dpop).map(AuthBody::full)
                }
            };
            resource
                .inner
                .cors
                .decorate(origin.as_ref(), response.headers_mut());
            Ok(response)
        })
    }
}

pin_project_lite::pin_project! {
    /// The body of an [`AuthService`]'s responses: the service's own, or the layer's
    /// (a refusal, a preflight).
    pub struct AuthBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Full { body: Full<Bytes> },
    }
}

impl<B> AuthBody<B> {
    pub(crate) fn full(body: Full<Bytes>) -> Self {
        AuthBody {
            kind: Kind::Full { body },
        }
    }

    pub(crate) fn inner(body: B) -> Self {
        AuthBody {
            kind: Kind::Inner { body },
        }
    }
}

impl<B> std::fmt::Debug for AuthBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthBody")
    }
}

impl<B> Body for AuthBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Full { body } => Pin::new(body)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(|never| match never {}))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Full { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Full { body } => body.size_hint(),
        }
    }
}
