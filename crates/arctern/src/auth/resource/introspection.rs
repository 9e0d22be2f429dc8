//! RFC 7662 token introspection, with a bounded cache.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use serde_json::Value;

use super::fetch::{Fetch, FetchConfig, FetchRequest, HyperFetch};
use super::jwt::{DEFAULT_LEEWAY, DEFAULT_MAX_TOKEN_SIZE};
use super::token::{AuthError, TokenVerifier, VerifiedToken};
use crate::auth::jose::{CLIENT_ASSERTION_TYPE, Claims, SigningKey, client_assertion};
use crate::state::{Clock, SystemClock};
use crate::{Error, ErrorKind};

/// How long an introspection result is reused by default (never past the token's `exp`).
pub const DEFAULT_INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(60);
/// How many introspection results are kept by default.
pub const DEFAULT_INTROSPECTION_CACHE_ENTRIES: usize = 10_000;

/// How the resource server authenticates to the introspection endpoint.
#[derive(Clone)]
#[non_exhaustive]
pub enum IntrospectionAuth {
    /// No client authentication.
    None,
    /// `client_secret_basic` (RFC 6749 §2.3.1: both parts form-encoded, then Basic).
    ClientSecretBasic {
        /// The client id.
        client_id: String,
        /// The secret.
        client_secret: String,
    },
    /// `client_secret_post`: the id and secret in the form.
    ClientSecretPost {
        /// The client id.
        client_id: String,
        /// The secret.
        client_secret: String,
    },
    /// `private_key_jwt` (RFC 7523): a client assertion signed with this key, for this
    /// audience (the authorization server's issuer, or the endpoint, as it asks).
    PrivateKeyJwt {
        /// The client id.
        client_id: String,
        /// The client's key.
        key: SigningKey,
        /// The assertion's `aud`.
        audience: String,
    },
    /// A bearer token of the resource server's own.
    Bearer(String),
}

impl fmt::Debug for IntrospectionAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            IntrospectionAuth::None => "None",
            IntrospectionAuth::ClientSecretBasic { .. } => "ClientSecretBasic",
            IntrospectionAuth::ClientSecretPost { .. } => "ClientSecretPost",
            IntrospectionAuth::PrivateKeyJwt { .. } => "PrivateKeyJwt",
            IntrospectionAuth::Bearer(_) => "Bearer",
        };
        f.write_str(name)
    }
}

/// Verifies opaque (or any) access tokens by asking the authorization server (RFC 7662).
///
/// The answer must say `"active": true`; `aud` must name this resource (RFC 8707; a
/// response without `aud` is refused unless
/// [`require_audience(false)`](IntrospectionVerifierBuilder::require_audience)); `iss`,
/// when present and an issuer is configured, must match; `exp` and `nbf` are checked with
/// leeway.
///
/// Positive answers are cached under the token's SHA-256 (never the token itself) for
/// [`cache_ttl`](IntrospectionVerifierBuilder::cache_ttl), and never past the token's own
/// `exp`; at most [`max_cache_entries`](IntrospectionVerifierBuilder::max_cache_entries)
/// are kept (when full, expired entries are dropped and new answers are not cached until
/// there is room). Refusals are not cached. An endpoint that cannot be reached, or answers
/// with an error status, gives [`AuthError::Unavailable`].
///
/// ```no_run
/// use arctern::auth::resource::IntrospectionVerifier;
///
/// let verifier = IntrospectionVerifier::builder(
///     "https://auth.example.com/introspect",
///     "https://mcp.example.com/mcp",
/// )
/// .issuer("https://auth.example.com")
/// .client_secret_basic("mcp-server", "secret")
/// .build()?;
/// # Ok::<(), arctern::Error>(())
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.inner.endpoint)
            .field("audiences", &self.inner.audiences)
            .field("auth", &self.inner.auth)
            .finish_non_exhaustive()
    }
}

struct Inner {
    endpoint: Uri,
    audiences: Vec<String>,
    issuer: Option<String>,
    require_audience: bool,
    auth: IntrospectionAuth,
    leeway: u64,
    max_token_size: usize,
    cache_ttl: u64,
    max_entries: usize,
    clock: Arc<dyn Clock>,
    fetch: Arc<dyn Fetch>,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

struct Cached {
    token: VerifiedToken,
    until: u64,
}

/// Settings of an [`IntrospectionVerifier`].
pub struct IntrospectionVerifierBuilder {
    endpoint: String,
    audiences: Vec<String>,
    issuer: Option<String>,
    require_audience: bool,
    auth: IntrospectionAuth,
    leeway: Duration,
    max_token_size: usize,
    cache_ttl: Duration,
    max_entries: usize,
    clock: Arc<dyn Clock>,
    fetch: FetchConfig,
}

impl fmt::Debug for IntrospectionVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifierBuilder")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Settings for the introspection endpoint at `endpoint`, accepting tokens for
    /// `audience` (this resource's canonical URI).
    pub fn builder(
        endpoint: impl Into<String>,
        audience: impl Into<String>,
    ) -> IntrospectionVerifierBuilder {
        IntrospectionVerifierBuilder {
            endpoint: endpoint.into(),
            audiences: vec![audience.into()],
            issuer: None,
            require_audience: true,
            auth: IntrospectionAuth::None,
            leeway: DEFAULT_LEEWAY,
            max_token_size: DEFAULT_MAX_TOKEN_SIZE,
            cache_ttl: DEFAULT_INTROSPECTION_CACHE_TTL,
            max_entries: DEFAULT_INTROSPECTION_CACHE_ENTRIES,
            clock: Arc::new(SystemClock),
            fetch: FetchConfig::default(),
        }
    }
}

impl IntrospectionVerifierBuilder {
    /// The authorization server's issuer: a response's `iss`, when present, must equal it,
    /// and it is the [`VerifiedToken::issuer`] of responses without one. Without it, `iss`
    /// is taken as it comes, and responses without `iss` get the endpoint's origin.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Accepts `audience` too.
    pub fn also_accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Whether a response must carry `aud` (default yes). The layer refuses tokens without
    /// one as well, unless
    /// [`ProtectedResourceBuilder::accept_tokens_without_audience`](super::ProtectedResourceBuilder::accept_tokens_without_audience).
    pub fn require_audience(mut self, required: bool) -> Self {
        self.require_audience = required;
        self
    }

    /// How the resource server authenticates to the endpoint.
    pub fn auth(mut self, auth: IntrospectionAuth) -> Self {
        self.auth = auth;
        self
    }

    /// `client_secret_basic`.
    pub fn client_secret_basic(
        self,
        client_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        self.auth(IntrospectionAuth::ClientSecretBasic {
            client_id: client_id.into(),
            client_secret: secret.into(),
        })
    }

    /// The clock skew allowed on `exp` and `nbf` (default 60 seconds).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The largest token accepted, in bytes (default 16 KiB); larger ones are refused
    /// without a request.
    pub fn max_token_size(mut self, bytes: usize) -> Self {
        self.max_token_size = bytes;
        self
    }

    /// How long a positive answer is reused (default 60 seconds; never past the token's
    /// `exp`; zero turns caching off).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// How many answers are cached at most (default 10 000).
    pub fn max_cache_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }

    /// The HTTP client's settings (deadline, response size, TLS roots).
    pub fn fetch_config(mut self, config: FetchConfig) -> Self {
        self.fetch = config;
        self
    }

    /// The clock (tests use a [`ManualClock`](crate::state::ManualClock)).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The verifier. Fails with an endpoint that is not an http(s) URL, or a plain-`http`
    /// one off this machine without [`FetchConfig::allow_http`].
    pub fn build(self) -> crate::Result<IntrospectionVerifier> {
        let endpoint: Uri = self.endpoint.parse().map_err(|e| {
            Error::new(ErrorKind::Config, "invalid introspection endpoint").with_source(e)
        })?;
        self.fetch.check_url(&endpoint, "introspection endpoint")?;
        Ok(IntrospectionVerifier {
            inner: Arc::new(Inner {
                endpoint,
                audiences: self.audiences,
                issuer: self.issuer,
                require_audience: self.require_audience,
                auth: self.auth,
                leeway: self.leeway.as_secs(),
                max_token_size: self.max_token_size,
                cache_ttl: self.cache_ttl.as_secs(),
                max_entries: self.max_entries,
                clock: self.clock,
                fetch: HyperFetch::shared(self.fetch),
                cache: Mutex::new(HashMap::new()),
            }),
        })
    }
}

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Inner {
    fn cached(&self, key: &[u8; 32], now: u64) -> Option<VerifiedToken> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(key)
            .filter(|c| now < c.until)
            .map(|c| c.token.clone())
    }

    fn remember(&self, key: [u8; 32], token: &VerifiedToken, now: u64) {
        let mut until = now.saturating_add(self.cache_ttl);
        if let Some(exp) = token.expires_at {
            until = until.min(exp);
        }
        if until <= now || self.max_entries == 0 {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= self.max_entries {
            cache.retain(|_, c| now < c.until);
        }
        if cache.len() < self.max_entries {
            cache.insert(
                key,
                Cached {
                    token: token.clone(),
                    until,
                },
            );
        }
    }

    fn request(&self, token: &str) -> Result<FetchRequest, AuthError> {
        let mut form = format!("token={}&token_type_hint=access_token", form_encode(token));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let header = |value: String| {
            HeaderValue::try_from(value)
                .map_err(|_| AuthError::Unavailable("invalid introspection credentials".into()))
        };
        match &self.auth {
            IntrospectionAuth::None => {}
            IntrospectionAuth::ClientSecretBasic {
                client_id,
                client_secret,
            } => {
                let pair = format!("{}:{}", form_encode(client_id), form_encode(client_secret));
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                headers.insert(
                    http::header::AUTHORIZATION,
                    header(format!("Basic {encoded}"))?,
                );
            }
            IntrospectionAuth::ClientSecretPost {
                client_id,
                client_secret,
            } => {
                form.push_str(&format!(
                    "&client_id={}&client_secret={}",
                    form_encode(client_id),
                    form_encode(client_secret)
                ));
            }
            IntrospectionAuth::PrivateKeyJwt {
                client_id,
                key,
                audience,
            } => {
                let assertion = client_assertion(key, client_id, audience, Duration::from_secs(60))
                    .map_err(|e| {
                        AuthError::Unavailable(format!("signing a client assertion: {e}"))
                    })?;
                form.push_str(&format!(
                    "&client_id={}&client_assertion_type={}&client_assertion={}",
                    form_encode(client_id),
                    form_encode(CLIENT_ASSERTION_TYPE),
                    form_encode(&assertion)
                ));
            }
            IntrospectionAuth::Bearer(token) => {
                headers.insert(
                    http::header::AUTHORIZATION,
                    header(format!("Bearer {token}"))?,
                );
            }
        }
        Ok(FetchRequest {
            method: Method::POST,
            uri: self.endpoint.clone(),
            headers,
            body: Bytes::from(form),
        })
    }

    fn judge(
        &self,
        mut answer: serde_json::Map<String, Value>,
        now: u64,
    ) -> Result<VerifiedToken, AuthError> {
        if answer.remove("active") != Some(Value::Bool(true)) {
            return Err(AuthError::invalid_token("the token is not active"));
        }
        let claims: Claims = serde_json::from_value(Value::Object(answer)).map_err(|_| {
            AuthError::Unavailable("the introspection response is malformed".into())
        })?;
        if let Some(exp) = claims.exp
            && now >= exp.saturating_add(self.leeway)
        {
            return Err(AuthError::invalid_token("the token has expired"));
        }
        if let Some(nbf) = claims.nbf
            && now.saturating_add(self.leeway) < nbf
        {
            return Err(AuthError::invalid_token("the token is not valid yet (nbf)"));
        }
        match &claims.aud {
            Some(aud) if !self.audiences.iter().any(|a| aud.contains(a)) => {
                return Err(AuthError::invalid_token(
                    "the token is not for this resource (aud)",
                ));
            }
            None if self.require_audience => {
                return Err(AuthError::invalid_token(
                    "the token names no audience (aud)",
                ));
            }
            _ => {}
        }
        let issuer = match (&self.issuer, &claims.iss) {
            (Some(expected), Some(iss)) if iss != expected => {
                return Err(AuthError::invalid_token("the token is from another issuer"));
            }
            (Some(expected), _) => expected.clone(),
            (None, Some(iss)) => iss.clone(),
            (None, None) => format!(
                "{}://{}",
                self.endpoint.scheme_str().unwrap_or("https"),
                self.endpoint.authority().map_or("", |a| a.as_str())
            ),
        };
        VerifiedToken::from_claims(issuer, claims)
    }

    async fn check(&self, token: &str) -> Result<VerifiedToken, AuthError> {
        if token.len() > self.max_token_size {
            return Err(AuthError::invalid_token("the token is too large"));
        }
        let now = self.clock.now_unix();
        let key: [u8; 32] = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .unwrap_or([0; 32]);
        if let Some(hit) = self.cached(&key, now) {
            return Ok(hit);
        }
        let response = self.fetch.fetch(self.request(token)?).await.map_err(|e| {
            tracing::warn!(endpoint = %self.endpoint, error = %e, "token introspection failed");
            AuthError::Unavailable("the introspection endpoint cannot be reached".into())
        })?;
        if response.status != StatusCode::OK {
            tracing::warn!(endpoint = %self.endpoint, status = %response.status, "the introspection endpoint answered with an error");
            return Err(AuthError::Unavailable(
                "the introspection endpoint answered with an error".into(),
            ));
        }
        let answer: serde_json::Map<String, Value> = serde_json::from_slice(&response.body)
            .map_err(|_| {
                AuthError::Unavailable("the introspection response is malformed".into())
            })?;
        let verified = self.judge(answer, now)?;
        self.remember(key, &verified, now);
        Ok(verified)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, AuthError>> {
        Box::pin(self.inner.check(token))
    }
}
