//! JWT access tokens (RFC 9068) checked against the authorization server's JWKS.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};

use super::fetch::{Fetch, FetchConfig, FetchRequest, HyperFetch};
use super::token::{AuthError, TokenVerifier, VerifiedToken};
use crate::auth::jose::{Algorithm, Claims, JoseError, JwkSet, Jws, Validation};
use crate::state::{Clock, SystemClock};
use crate::{Error, ErrorKind};

/// The default bound on an access token's size: 16 KiB.
pub const DEFAULT_MAX_TOKEN_SIZE: usize = 16 * 1024;
/// The default clock skew allowed on `exp`, `nbf` and `iat`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
/// How long a fetched JWKS is used before it is fetched again, by default.
pub const DEFAULT_JWKS_TTL: Duration = Duration::from_secs(600);
/// The least time between two JWKS fetches by default (an unknown `kid` triggers one).
pub const DEFAULT_JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// The most keys a JWKS may hold by default.
pub const DEFAULT_MAX_JWKS_KEYS: usize = 64;
/// The `typ` of a JWT access token (RFC 9068 §2.1), required by default.
pub const ACCESS_TOKEN_TYPE: &str = "at+jwt";

/// Verifies JWT access tokens: signature against the authorization server's JWKS, with an
/// algorithm allow-list, then `iss`, `aud` (RFC 8707: this resource's canonical URI), `exp`
/// (required), `nbf` and `iat` with leeway.
///
/// The JWKS is fetched over HTTP(S) when first needed, reused for
/// [`jwks_cache_ttl`](JwtVerifierBuilder::jwks_cache_ttl), and fetched again when a token
/// names a `kid` the set lacks (key rotation) — but never more often than
/// [`jwks_refetch_interval`](JwtVerifierBuilder::jwks_refetch_interval), so that tokens
/// with made-up key ids cannot make the server hammer the authorization server. Concurrent
/// requests share one fetch. If a refresh fails, the last good set keeps being used; with
/// none, verification answers [`AuthError::Unavailable`] (`503`).
///
/// The header's `typ` must be `at+jwt` (RFC 9068 §4, explicit typing as RFC 8725 §3.11
/// asks), so that no other JWT the authorization server signs (an ID token, a client
/// assertion) passes for an access token;
/// [`accept_any_type`](JwtVerifierBuilder::accept_any_type) is the opt-out for servers that
/// write `JWT` or nothing. A token whose `typ` is `dpop+jwt` (a DPoP proof) is never an
/// access token.
///
/// The `jwks_uri` must be `https`, or `http` on this machine, unless
/// [`FetchConfig::allow_http`] says otherwise.
///
/// ```no_run
/// use arctern::auth::resource::JwtVerifier;
///
/// let verifier = JwtVerifier::builder("https://auth.example.com", "https://mcp.example.com/mcp")
///     .jwks_uri("https://auth.example.com/.well-known/jwks.json")
///     .build()?;
/// # Ok::<(), arctern::Error>(())
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &self.inner.algorithms)
            .finish_non_exhaustive()
    }
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    max_token_size: usize,
    required_type: Option<String>,
    clock: Arc<dyn Clock>,
    keys: Keys,
}

enum Keys {
    Static(Arc<JwkSet>),
    Remote(Box<JwksCache>),
}

/// Settings of a [`JwtVerifier`].
pub struct JwtVerifierBuilder {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    max_token_size: usize,
    required_type: Option<String>,
    clock: Arc<dyn Clock>,
    jwks_uri: Option<String>,
    jwks: Option<JwkSet>,
    ttl: Duration,
    refetch: Duration,
    max_keys: usize,
    fetch: FetchConfig,
}

impl fmt::Debug for JwtVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifierBuilder")
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Settings for tokens issued by `issuer` (compared exactly with `iss`) for `audience`
    /// (this resource's canonical URI, such as `https://mcp.example.com/mcp`).
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            algorithms: Algorithm::ALL.to_vec(),
            leeway: DEFAULT_LEEWAY,
            max_token_size: DEFAULT_MAX_TOKEN_SIZE,
            required_type: Some(ACCESS_TOKEN_TYPE.to_owned()),
            clock: Arc::new(SystemClock),
            jwks_uri: None,
            jwks: None,
            ttl: DEFAULT_JWKS_TTL,
            refetch: DEFAULT_JWKS_REFETCH_INTERVAL,
            max_keys: DEFAULT_MAX_JWKS_KEYS,
            fetch: FetchConfig::default(),
        }
    }
}

impl JwtVerifierBuilder {
    /// Where the authorization server publishes its keys (its metadata's `jwks_uri`).
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// Fixed keys instead of a `jwks_uri` (no fetching, no rotation).
    pub fn jwks(mut self, set: JwkSet) -> Self {
        self.jwks = Some(set);
        self
    }

    /// Accepts `audience` too (say, the URI with and without a trailing slash).
    pub fn also_accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// The algorithms accepted (default: all of [`Algorithm::ALL`], every one asymmetric;
    /// a key still verifies only its own type's).
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.algorithms = algorithms.to_vec();
        self
    }

    /// The clock skew allowed on `exp`, `nbf` and `iat` (default 60 seconds).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The largest token accepted, in bytes (default 16 KiB).
    pub fn max_token_size(mut self, bytes: usize) -> Self {
        self.max_token_size = bytes;
        self
    }

    /// Requires the header's `typ` to be this instead of `at+jwt` (compared
    /// case-insensitively, with or without `application/`).
    pub fn require_type(mut self, typ: impl Into<String>) -> Self {
        self.required_type = Some(typ.into());
        self
    }

    /// Accepts tokens whatever their `typ` (or without one), for authorization servers
    /// that do not type their access tokens `at+jwt`. Then any JWT they sign for this
    /// audience passes for an access token; prefer asking the server to follow RFC 9068.
    /// `dpop+jwt` is refused still.
    pub fn accept_any_type(mut self) -> Self {
        self.required_type = None;
        self
    }

    /// How long a fetched JWKS is used before it is fetched again (default 10 minutes).
    pub fn jwks_cache_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The least time between two JWKS fetches (default 30 seconds): an unknown `kid`
    /// within it is refused without a fetch.
    pub fn jwks_refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch = interval;
        self
    }

    /// The most keys a fetched JWKS may hold (default 64); a larger set is refused.
    pub fn max_jwks_keys(mut self, keys: usize) -> Self {
        self.max_keys = keys;
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

    /// The verifier. Fails without keys (`jwks_uri` or `jwks`), with an invalid URI, or
    /// with no algorithm.
    pub fn build(self) -> crate::Result<JwtVerifier> {
        let config = |m: &str| Error::new(ErrorKind::Config, m.to_owned());
        if self.algorithms.is_empty() {
            return Err(config("the JWT verifier needs at least one algorithm"));
        }
        if self.issuer.is_empty() {
            return Err(config("the JWT verifier needs an issuer"));
        }
        let keys = match (self.jwks, self.jwks_uri) {
            (Some(set), None) => Keys::Static(Arc::new(set)),
            (None, Some(uri)) => {
                let uri: Uri = uri.parse().map_err(|e| {
                    Error::new(ErrorKind::Config, "invalid jwks_uri").with_source(e)
                })?;
                self.fetch.check_url(&uri, "jwks_uri")?;
                Keys::Remote(Box::new(JwksCache {
                    uri,
                    fetch: HyperFetch::shared(self.fetch),
                    ttl: self.ttl.as_secs(),
                    refetch: self.refetch.as_secs(),
                    max_keys: self.max_keys,
                    state: Mutex::new(CacheState::default()),
                    refresh: tokio::sync::Mutex::new(()),
                }))
            }
            _ => {
                return Err(config(
                    "the JWT verifier needs exactly one of jwks_uri and jwks",
                ));
            }
        };
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audiences: self.audiences,
                algorithms: self.algorithms,
                leeway: self.leeway.as_secs(),
                max_token_size: self.max_token_size,
                required_type: self.required_type,
                clock: self.clock,
                keys,
            }),
        })
    }
}

fn type_matches(typ: &str, expected: &str) -> bool {
    let strip = |t: &str| {
        let t = t.trim();
        t.get(..12)
            .filter(|p| p.eq_ignore_ascii_case("application/"))
            .map_or(t, |_| &t[12..])
            .to_ascii_lowercase()
    };
    strip(typ) == strip(expected)
}

impl JwtVerifier {
    async fn check(&self, token: &str) -> Result<VerifiedToken, AuthError> {
        let inner = &*self.inner;
        if token.len() > inner.max_token_size {
            return Err(AuthError::invalid_token("the token is too large"));
        }
        let jws = Jws::parse(token).map_err(|e| match e {
            JoseError::UnsupportedAlgorithm(_) => {
                AuthError::invalid_token("the token's algorithm is not accepted")
            }
            _ => AuthError::invalid_token("the token is not a well-formed JWT"),
        })?;
        if !inner.algorithms.contains(&jws.algorithm()) {
            return Err(AuthError::invalid_token(
                "the token's algorithm is not accepted",
            ));
        }
        let typ = jws.header().typ.as_deref();
        if typ.is_some_and(|t| type_matches(t, "dpop+jwt")) {
            return Err(AuthError::invalid_token(
                "a DPoP proof is not an access token",
            ));
        }
        if let Some(expected) = &inner.required_type
            && !typ.is_some_and(|t| type_matches(t, expected))
        {
            return Err(AuthError::invalid_token("the token's type is not accepted"));
        }
        let verified = match &inner.keys {
            Keys::Static(set) => jws.verify_with_set(set, &inner.algorithms),
            Keys::Remote(cache) => {
                let now = inner.clock.now_unix();
                let (set, generation) = cache.current(now).await?;
                match jws.verify_with_set(&set, &inner.algorithms) {
                    Err(JoseError::UnknownKey(kid)) => {
                        match cache.refresh_for_unknown_key(generation, now).await {
                            Some(set) => jws.verify_with_set(&set, &inner.algorithms),
                            None => Err(JoseError::UnknownKey(kid)),
                        }
                    }
                    other => other,
                }
            }
        };
        let verified = verified.map_err(|e| match e {
            JoseError::UnknownKey(_) => AuthError::invalid_token("the token's key is not known"),
            _ => AuthError::invalid_token("the token's signature does not verify"),
        })?;
        let claims: Claims = verified
            .claims()
            .map_err(|_| AuthError::invalid_token("the token's claims are malformed"))?;
        let validation = Validation::new()
            .issuer(inner.issuer.clone())
            .leeway(Duration::from_secs(inner.leeway));
        validation
            .check(&claims, inner.clock.now_unix())
            .map_err(|e| match e {
                JoseError::Claim(m) => AuthError::InvalidToken(m),
                other => AuthError::InvalidToken(other.to_string()),
            })?;
        let audience_ok = claims
            .aud
            .as_ref()
            .is_some_and(|aud| inner.audiences.iter().any(|a| aud.contains(a)));
        if !audience_ok {
            return Err(AuthError::invalid_token(
                "the token is not for this resource (aud)",
            ));
        }
        VerifiedToken::from_claims(inner.issuer.clone(), claims)
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, AuthError>> {
        Box::pin(self.check(token))
    }
}

/// A JWKS fetched over HTTP, refreshed on expiry and on unknown key ids, rate-limited.
struct JwksCache {
    uri: Uri,
    fetch: Arc<dyn Fetch>,
    ttl: u64,
    refetch: u64,
    max_keys: usize,
    state: Mutex<CacheState>,
    /// Held while fetching, so that concurrent requests share one fetch.
    refresh: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct CacheState {
    set: Option<Arc<JwkSet>>,
    fetched_at: u64,
    last_attempt: Option<u64>,
    /// Bumped on every successful fetch.
    generation: u64,
}

impl JwksCache {
    fn snapshot(&self) -> (Option<Arc<JwkSet>>, u64, u64) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.set.clone(), state.fetched_at, state.generation)
    }

    /// The set to verify with now: the cached one while fresh, else a refreshed one (or the
    /// stale one when the refresh fails or is rate-limited).
    async fn current(&self, now: u64) -> Result<(Arc<JwkSet>, u64), AuthError> {
        let (set, fetched_at, generation) = self.snapshot();
        if let Some(set) = &set
            && now < fetched_at.saturating_add(self.ttl)
        {
            return Ok((set.clone(), generation));
        }
        self.refresh(generation, now).await;
        match self.snapshot() {
            (Some(set), _, generation) => Ok((set, generation)),
            (None, _, _) => Err(AuthError::Unavailable(
                "the authorization server's keys could not be fetched".into(),
            )),
        }
    }

    /// Fetches again for a key id the set lacks, unless the last attempt was too recent;
    /// `None` when nothing new was fetched.
    async fn refresh_for_unknown_key(&self, seen: u64, now: u64) -> Option<Arc<JwkSet>> {
        self.refresh(seen, now).await;
        match self.snapshot() {
            (Some(set), _, generation) if generation != seen => Some(set),
            _ => None,
        }
    }

    /// Fetches the set unless another task did since generation `seen`, or the last
    /// attempt is younger than the refetch interval.
    async fn refresh(&self, seen: u64, now: u64) {
        let _single = self.refresh.lock().await;
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.generation != seen {
                return;
            }
            if state
                .last_attempt
                .is_some_and(|last| now < last.saturating_add(self.refetch))
            {
                tracing::debug!(uri = %self.uri, "JWKS refetch skipped: the last attempt was too recent");
                return;
            }
            state.last_attempt = Some(now);
        }
        match self.fetch_set().await {
            Ok(set) => {
                tracing::debug!(uri = %self.uri, keys = set.keys().len(), skipped = set.skipped(), "fetched the JWKS");
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.set = Some(Arc::new(set));
                state.fetched_at = now;
                state.generation += 1;
            }
            Err(e) => tracing::warn!(uri = %self.uri, error = %e, "could not fetch the JWKS"),
        }
    }

    async fn fetch_set(&self) -> Result<JwkSet, String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/jwk-set+json, application/json"),
        );
        let response = self
            .fetch
            .fetch(FetchRequest {
                method: Method::GET,
                uri: self.uri.clone(),
                headers,
                body: bytes::Bytes::new(),
            })
            .await?;
        if response.status != StatusCode::OK {
            return Err(format!("status {}", response.status));
        }
        let text = std::str::from_utf8(&response.body).map_err(|_| "not UTF-8".to_owned())?;
        let set = JwkSet::from_json(text).map_err(|e| e.to_string())?;
        if set.keys().len() + set.skipped() > self.max_keys {
            return Err(format!("more than {} keys", self.max_keys));
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::type_matches;

    #[test]
    fn media_types_compare_loosely() {
        assert!(type_matches("at+jwt", "at+jwt"));
        assert!(type_matches("application/AT+JWT", "at+jwt"));
        assert!(!type_matches("JWT", "at+jwt"));
        assert!(type_matches("dpop+jwt", "dpop+jwt"));
    }
}
