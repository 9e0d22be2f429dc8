//! What a verified access token says, why a token was refused, and the verifier trait.

use std::fmt;

use futures::future::BoxFuture;

use crate::auth::jose::Claims;

/// `offline_access` is never advertised or asked for by a resource server (MCP
/// authorization, "Refresh Tokens").
pub(crate) const OFFLINE_ACCESS: &str = "offline_access";

/// A verified access token: who it speaks for, for which client, with which scopes, until
/// when, and every claim as the authorization server wrote it.
///
/// The protected-resource layer puts it in the request's extensions (next to a
/// [`Principal`](crate::server::Principal)), where a handler reads it with
/// `ctx.extensions().get::<VerifiedToken>()`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// The authorization server that issued it (`iss`).
    pub issuer: String,
    /// The resource owner (`sub`); for a token without `sub` (a client acting for itself,
    /// as with client credentials), the client id, and then
    /// [`client_only`](Self::client_only) is set.
    pub subject: String,
    /// The token names no resource owner (no `sub`): `subject` is the client id, and the
    /// [principal](Self::principal) is in a namespace of its own, never equal to a user's.
    pub client_only: bool,
    /// The client it was issued to (`client_id`, or `azp`), when the token says.
    pub client_id: Option<String>,
    /// Its scopes.
    pub scopes: Vec<String>,
    /// When it expires (Unix seconds), when the token says.
    pub expires_at: Option<u64>,
    /// The RFC 7638 thumbprint of the DPoP key it is bound to (`cnf.jkt`), if any.
    pub dpop_jkt: Option<String>,
    /// Every claim (for a JWT, its payload; for introspection, the response).
    pub claims: Claims,
}

impl VerifiedToken {
    /// A verified token from checked claims: issuer and subject as [`VerifiedToken`]
    /// documents. Fails when the claims name neither a subject nor a client, or when the
    /// issuer has white space or control characters (an issuer is a URL).
    pub fn from_claims(issuer: String, claims: Claims) -> Result<Self, AuthError> {
        // The principal's form rests on this: the issuer ends at the first white space.
        if issuer.is_empty() || issuer.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AuthError::invalid_token("the token's issuer is not a URL"));
        }
        let client_id = claims.client_id.clone().or_else(|| {
            claims
                .extra
                .get("azp")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        });
        let client_only = claims.sub.is_none();
        let subject = claims
            .sub
            .clone()
            .or_else(|| client_id.clone())
            .ok_or_else(|| AuthError::invalid_token("the token names no subject"))?;
        Ok(VerifiedToken {
            issuer,
            subject,
            client_only,
            client_id,
            scopes: claims.scopes().into_iter().map(str::to_owned).collect(),
            expires_at: claims.exp,
            dpop_jkt: claims.jkt().map(str::to_owned),
            claims,
        })
    }

    /// Whether the token has every one of `scopes`.
    pub fn has_scopes(&self, scopes: &[&str]) -> bool {
        scopes.iter().all(|s| self.scopes.iter().any(|t| t == s))
    }

    /// The scopes of `scopes` the token lacks.
    pub fn missing_scopes<'a>(&self, scopes: &[&'a str]) -> Vec<&'a str> {
        scopes
            .iter()
            .copied()
            .filter(|s| !self.scopes.iter().any(|t| t == s))
            .collect()
    }

    /// The string form put in [`Principal`](crate::server::Principal): for a resource
    /// owner, the issuer, a space, the subject (`https://as.example alice`); for a
    /// [client acting for itself](Self::client_only), the issuer, a tab, `client `, the
    /// client id. An issuer has no white space, so the two forms never meet: a client whose
    /// id is a user's `sub` never gets that user's request state, sessions or tasks.
    pub fn principal(&self) -> String {
        if self.client_only {
            format!("{}\tclient {}", self.issuer, self.subject)
        } else {
            format!("{} {}", self.issuer, self.subject)
        }
    }
}

/// A handler parameter: the caller's verified token. A call without one (no
/// protected-resource layer in front, or another transport) is rejected; take
/// `Option<VerifiedToken>` to serve it anyway.
///
/// ```
/// use arctern::auth::resource::VerifiedToken;
///
/// async fn whoami(token: VerifiedToken) -> String {
///     format!("{} ({}) from {} with {}", token.subject, token.client_id.unwrap_or_default(), token.issuer, token.scopes.join(" "))
/// }
/// let server = arctern::server::McpServer::new("demo").tool("whoami", "Who is calling.", whoami);
/// # let _ = server;
/// ```
impl<S> crate::server::extract::FromCall<S> for VerifiedToken {
    fn from_call(
        parts: &mut crate::server::extract::CallParts,
        _state: &S,
    ) -> crate::server::extract::Extracted<Self> {
        use crate::server::extract::{Extracted, Rejection};
        match parts.context().extensions().get::<VerifiedToken>() {
            Some(token) => Extracted::Ready(token.clone()),
            None => Extracted::Rejected(Rejection::new(
                "This call needs an authenticated caller, and none was established",
            )),
        }
    }
}

impl<S> crate::server::extract::FromCall<S> for Option<VerifiedToken> {
    fn from_call(
        parts: &mut crate::server::extract::CallParts,
        _state: &S,
    ) -> crate::server::extract::Extracted<Self> {
        crate::server::extract::Extracted::Ready(
            parts.context().extensions().get::<VerifiedToken>().cloned(),
        )
    }
}

/// Why a request was refused: what the protected-resource layer answers, as RFC 6750 §3.1
/// and RFC 9449 §7.1 say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No token (`401`, a challenge without an error code).
    #[error("no access token")]
    Missing,
    /// The request is malformed: two `Authorization` headers, a token in the query string
    /// (`400 invalid_request`).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// The token is expired, revoked, malformed, for another audience, or otherwise not
    /// acceptable (`401 invalid_token`). The description is one of the layer's own fixed
    /// texts, never the token's content.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// The DPoP proof is missing or wrong (`401 invalid_dpop_proof`).
    #[error("invalid DPoP proof: {0}")]
    InvalidDpopProof(String),
    /// The server wants a DPoP proof with a fresh nonce (`401 use_dpop_nonce`, with a
    /// `DPoP-Nonce` header).
    #[error("a DPoP nonce is required")]
    UseDpopNonce,
    /// The token lacks scopes the request needs (`403 insufficient_scope`), listed here.
    #[error("insufficient scope: {}", .0.join(" "))]
    InsufficientScope(Vec<String>),
    /// The token cannot be checked right now (the authorization server's keys or
    /// introspection endpoint cannot be reached): `503`, so that clients retry rather than
    /// ask the user to sign in again.
    #[error("token verification is unavailable: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// An `invalid_token` error with this description.
    pub fn invalid_token(description: impl Into<String>) -> Self {
        AuthError::InvalidToken(description.into())
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> http::StatusCode {
        use http::StatusCode;
        match self {
            AuthError::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            AuthError::InsufficientScope(_) => StatusCode::FORBIDDEN,
            AuthError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The RFC 6750 / RFC 9449 `error` code, if any.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing | AuthError::Unavailable(_) => None,
            AuthError::InvalidRequest(_) => Some("invalid_request"),
            AuthError::InvalidToken(_) => Some("invalid_token"),
            AuthError::InvalidDpopProof(_) => Some("invalid_dpop_proof"),
            AuthError::UseDpopNonce => Some("use_dpop_nonce"),
            AuthError::InsufficientScope(_) => Some("insufficient_scope"),
        }
    }

    pub(crate) fn description(&self) -> Option<String> {
        match self {
            AuthError::Missing | AuthError::InsufficientScope(_) => None,
            AuthError::InvalidRequest(d) => Some((*d).to_owned()),
            AuthError::InvalidToken(d)
            | AuthError::InvalidDpopProof(d)
            | AuthError::Unavailable(d) => Some(d.clone()),
            AuthError::UseDpopNonce => Some("a fresh DPoP nonce is required".to_owned()),
        }
    }
}

/// Checks an access token and says what it grants.
///
/// Two implementations come with arctern: [`JwtVerifier`](super::JwtVerifier) (JWT access
/// tokens against the authorization server's JWKS) and
/// [`IntrospectionVerifier`](super::IntrospectionVerifier) (RFC 7662). Implement it for
/// anything else (a database of opaque tokens, a test double): return
/// [`AuthError::InvalidToken`] for a token that must be refused and
/// [`AuthError::Unavailable`] when it cannot be checked now. Accept only tokens issued for
/// this resource (RFC 8707); the layer checks again that the verified token's `aud` names
/// the resource, and refuses it otherwise.
///
/// ```
/// use arctern::auth::jose::Claims;
/// use arctern::auth::resource::{AuthError, TokenVerifier, VerifiedToken};
/// use futures::future::BoxFuture;
///
/// /// Accepts one fixed token (for a demo).
/// struct Fixed;
///
/// impl TokenVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, AuthError>> {
///         Box::pin(async move {
///             if token != "let-me-in" {
///                 return Err(AuthError::invalid_token("unknown token"));
///             }
///             let claims = Claims {
///                 sub: Some("demo".into()),
///                 aud: Some("https://mcp.example.com/mcp".into()),
///                 scope: Some("mcp".into()),
///                 ..Claims::default()
///             };
///             VerifiedToken::from_claims("https://as.example".into(), claims)
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the credential of an `Authorization: Bearer` or `DPoP` header).
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, AuthError>>;
}

impl fmt::Debug for dyn TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenVerifier")
    }
}
