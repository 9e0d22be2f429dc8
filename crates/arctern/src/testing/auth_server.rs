//! An in-process OAuth 2.1 authorization server for tests (features `testing`, `auth`,
//! `http`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::jose::{
    Algorithm, Audience, CLIENT_ASSERTION_TYPE, Claims, Confirmation, DpopCheck, Header, JwkSet,
    Jws, SigningKey, Validation, base64url, verify_dpop_proof,
};
use crate::auth::resource::{IntrospectionAuth, IntrospectionVerifierBuilder, JwtVerifierBuilder};
use crate::auth::resource::{IntrospectionVerifier, JwtVerifier};
use crate::state::{Clock, SystemClock};

/// The client id the test server registers for resource servers that introspect.
pub const INTROSPECTION_CLIENT_ID: &str = "resource-server";
/// Its secret.
pub const INTROSPECTION_CLIENT_SECRET: &str = "resource-server-secret";

const MAX_BODY: usize = 64 * 1024;
const CODE_LIFETIME: u64 = 60;

/// An OAuth 2.1 authorization server on `127.0.0.1`, in the test's process, for testing
/// protected MCP servers and OAuth clients without a real one.
///
/// It serves, at its issuer `http://127.0.0.1:<port>`:
///
/// | path | what |
/// | --- | --- |
/// | `/.well-known/oauth-authorization-server` (and `/.well-known/openid-configuration`) | RFC 8414 metadata |
/// | `/register` | dynamic client registration (RFC 7591): `none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt` (with `jwks`) |
/// | `/authorize` | approves at once: `302` to the `redirect_uri` with `code`, `state` and `iss` (RFC 9207), after checking the client, the redirect URI and a PKCE `S256` challenge |
/// | `/token` | `authorization_code` (PKCE `S256` checked), `refresh_token` (rotated), `client_credentials`; DPoP-bound tokens when a `DPoP` proof comes along (RFC 9449) |
/// | `/jwks` | the signing keys |
/// | `/introspect` | RFC 7662, for any registered confidential client and for [`INTROSPECTION_CLIENT_ID`] |
///
/// Access tokens are JWTs (`typ` `at+jwt`) signed with an ES256 key (or the key given),
/// for the `resource` the client named (RFC 8707) or the
/// [`default audience`](TestAuthServerBuilder::audience), with the scopes asked for (or
/// the [default scopes](TestAuthServerBuilder::default_scopes)), living
/// [`token_lifetime`](TestAuthServerBuilder::token_lifetime); or opaque strings, with
/// [`opaque_tokens`](TestAuthServerBuilder::opaque_tokens), for introspection. Tokens can
/// also be minted directly ([`token`](Self::token)), keys rotated
/// ([`rotate_key`](Self::rotate_key)), tokens revoked, and requests counted.
///
/// It stops when dropped.
///
/// ```
/// use arctern::testing::TestAuthServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let auth = TestAuthServer::builder().scopes_supported(["mcp:tools"]).start().await?;
/// let resource = "http://127.0.0.1:8000/mcp";
/// let verifier = auth.jwt_verifier(resource).build()?;
/// let token = auth.token().audience(resource).scopes(["mcp:tools"]).issue();
/// use arctern::auth::resource::TokenVerifier;
/// let verified = verifier.verify(&token).await?;
/// assert_eq!(verified.issuer, auth.issuer());
/// assert!(verified.has_scopes(&["mcp:tools"]));
/// # Ok(()) }
/// ```
pub struct TestAuthServer {
    inner: Arc<Inner>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl fmt::Debug for TestAuthServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestAuthServer")
            .field("issuer", &self.inner.issuer)
            .finish_non_exhaustive()
    }
}

impl Drop for TestAuthServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// Settings of a [`TestAuthServer`].
pub struct TestAuthServerBuilder {
    key: Option<SigningKey>,
    audience: Option<String>,
    scopes_supported: Vec<String>,
    default_scopes: Vec<String>,
    lifetime: Duration,
    subject: String,
    opaque: bool,
    iss_parameter: bool,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for TestAuthServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestAuthServerBuilder")
            .finish_non_exhaustive()
    }
}

impl Default for TestAuthServerBuilder {
    fn default() -> Self {
        TestAuthServerBuilder {
            key: None,
            audience: None,
            scopes_supported: Vec::new(),
            default_scopes: Vec::new(),
            lifetime: Duration::from_secs(3600),
            subject: "test-user".to_owned(),
            opaque: false,
            iss_parameter: true,
            clock: Arc::new(SystemClock),
        }
    }
}

impl TestAuthServerBuilder {
    /// The signing key (default: a fresh ES256 key with kid `key-1`). Give it a kid.
    pub fn signing_key(mut self, key: SigningKey) -> Self {
        self.key = Some(key);
        self
    }

    /// The audience of tokens whose client named no `resource`.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// The scopes in the metadata.
    pub fn scopes_supported<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        scopes: I,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes granted when a client asks for none.
    pub fn default_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.default_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How long access tokens live (default one hour).
    pub fn token_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The user `/authorize` approves as (default `test-user`).
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = subject.into();
        self
    }

    /// Issue opaque access tokens (checked by introspection) instead of JWTs.
    pub fn opaque_tokens(mut self, opaque: bool) -> Self {
        self.opaque = opaque;
        self
    }

    /// Whether `/authorize` sends `iss` and the metadata says so (default yes).
    pub fn iss_parameter(mut self, on: bool) -> Self {
        self.iss_parameter = on;
        self
    }

    /// The clock for token times (share a [`ManualClock`](crate::state::ManualClock) with
    /// the resource server to test expiry).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn start(self) -> std::io::Result<TestAuthServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let key = match self.key {
            Some(key) => key,
            None => SigningKey::generate(Algorithm::ES256)
                .map_err(std::io::Error::other)?
                .with_kid("key-1"),
        };
        let issuer = format!("http://{addr}");
        let mut clients = HashMap::new();
        clients.insert(
            INTROSPECTION_CLIENT_ID.to_owned(),
            Client {
                secret: Some(INTROSPECTION_CLIENT_SECRET.to_owned()),
                auth_method: "client_secret_basic".to_owned(),
                redirect_uris: Vec::new(),
                jwks: None,
            },
        );
        let inner = Arc::new(Inner {
            issuer,
            addr,
            audience: self.audience,
            scopes_supported: self.scopes_supported,
            default_scopes: self.default_scopes,
            lifetime: self.lifetime.as_secs().max(1),
            subject: self.subject,
            opaque: self.opaque,
            iss_parameter: self.iss_parameter,
            clock: self.clock,
            state: Mutex::new(State {
                keys: vec![key],
                published_from: 0,
                clients,
                codes: HashMap::new(),
                tokens: HashMap::new(),
                refresh: HashMap::new(),
            }),
            counts: Counts::default(),
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(listener, inner.clone(), stop.clone()));
        Ok(TestAuthServer { inner, stop, task })
    }
}

#[derive(Default)]
struct Counts {
    jwks: AtomicUsize,
    introspect: AtomicUsize,
    token: AtomicUsize,
    authorize: AtomicUsize,
    register: AtomicUsize,
}

struct Inner {
    issuer: String,
    addr: SocketAddr,
    audience: Option<String>,
    scopes_supported: Vec<String>,
    default_scopes: Vec<String>,
    lifetime: u64,
    subject: String,
    opaque: bool,
    iss_parameter: bool,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    counts: Counts,
}

struct State {
    /// Every key made; the last one signs.
    keys: Vec<SigningKey>,
    /// Keys before this index are no longer published.
    published_from: usize,
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    /// Issued access tokens: their claims, and whether revoked.
    tokens: HashMap<String, (Claims, bool)>,
    refresh: HashMap<String, Grant>,
}

struct Client {
    secret: Option<String>,
    auth_method: String,
    redirect_uris: Vec<String>,
    jwks: Option<JwkSet>,
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    grant: Grant,
    expires: u64,
}

#[derive(Clone)]
struct Grant {
    client_id: String,
    subject: String,
    scopes: Vec<String>,
    resource: Option<String>,
}

/// A token to mint directly (see [`TestAuthServer::token`]).
#[derive(Debug)]
#[must_use = "call issue() to get the token"]
pub struct TokenRequest<'a> {
    server: &'a TestAuthServer,
    claims: Claims,
    lifetime: Option<i64>,
    key: Option<SigningKey>,
    header: Header,
}

impl TokenRequest<'_> {
    /// `sub` (default: the server's subject).
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.claims.sub = Some(subject.into());
        self
    }

    /// No `sub`: a client acting for itself, named by `client_id` alone.
    pub fn without_subject(mut self) -> Self {
        self.claims.sub = None;
        self
    }

    /// `aud` (default: the server's default audience).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.claims.aud = Some(Audience::One(audience.into()));
        self
    }

    /// `scope`.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        self.claims.scope = Some(scopes.join(" "));
        self
    }

    /// `client_id` (default `test-client`).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.claims.client_id = Some(client_id.into());
        self
    }

    /// `iss`, instead of the server's own (to test issuer checks).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.claims.iss = Some(issuer.into());
        self
    }

    /// The lifetime in seconds from now; negative for a token that has already expired.
    pub fn lifetime_secs(mut self, seconds: i64) -> Self {
        self.lifetime = Some(seconds);
        self
    }

    /// Binds the token to a DPoP key (`cnf.jkt`).
    pub fn dpop_bound(mut self, key: &SigningKey) -> Self {
        self.claims.cnf = Some(Confirmation::jkt(key.thumbprint()));
        self
    }

    /// Signs with another key (not in the JWKS: a bad signature, or an unknown `kid`).
    pub fn signed_by(mut self, key: SigningKey) -> Self {
        self.key = Some(key);
        self
    }

    /// The header's `typ` instead of `at+jwt` (`None`: no `typ`), to test explicit typing.
    pub fn typ(mut self, typ: Option<&str>) -> Self {
        self.header.typ = typ.map(str::to_owned);
        self
    }

    /// Another claim.
    pub fn claim(mut self, name: impl Into<String>, value: Value) -> Self {
        self.claims.extra.insert(name.into(), value);
        self
    }

    /// The token: a JWT signed by the server's current key (or the one given), or an
    /// opaque token when the server issues those. Recorded for introspection.
    pub fn issue(self) -> String {
        let inner = &self.server.inner;
        let now = inner.clock.now_unix();
        let mut claims = self.claims;
        claims.iat = Some(now);
        let lifetime = self.lifetime.unwrap_or(inner.lifetime as i64);
        claims.exp = Some(now.saturating_add_signed(lifetime));
        inner.mint(claims, self.key, self.header)
    }
}

impl TestAuthServer {
    /// A server with the defaults, started.
    pub async fn start() -> std::io::Result<TestAuthServer> {
        TestAuthServer::builder().start().await
    }

    /// Settings.
    pub fn builder() -> TestAuthServerBuilder {
        TestAuthServerBuilder::default()
    }

    /// The issuer (`http://127.0.0.1:<port>`).
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The RFC 8414 metadata URL.
    pub fn metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-authorization-server",
            self.inner.issuer
        )
    }

    /// The JWKS URL.
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks", self.inner.issuer)
    }

    /// The token endpoint.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.inner.issuer)
    }

    /// The authorization endpoint.
    pub fn authorization_endpoint(&self) -> String {
        format!("{}/authorize", self.inner.issuer)
    }

    /// The registration endpoint.
    pub fn registration_endpoint(&self) -> String {
        format!("{}/register", self.inner.issuer)
    }

    /// The introspection endpoint.
    pub fn introspection_endpoint(&self) -> String {
        format!("{}/introspect", self.inner.issuer)
    }

    /// A [`JwtVerifier`] builder for tokens from this server for `resource`.
    pub fn jwt_verifier(&self, resource: &str) -> JwtVerifierBuilder {
        JwtVerifier::builder(self.issuer(), resource).jwks_uri(self.jwks_uri())
    }

    /// An [`IntrospectionVerifier`] builder for tokens from this server for `resource`,
    /// authenticating as [`INTROSPECTION_CLIENT_ID`].
    pub fn introspection_verifier(&self, resource: &str) -> IntrospectionVerifierBuilder {
        IntrospectionVerifier::builder(self.introspection_endpoint(), resource)
            .issuer(self.issuer())
            .auth(IntrospectionAuth::ClientSecretBasic {
                client_id: INTROSPECTION_CLIENT_ID.to_owned(),
                client_secret: INTROSPECTION_CLIENT_SECRET.to_owned(),
            })
    }

    /// A token to mint directly, without an OAuth flow.
    pub fn token(&self) -> TokenRequest<'_> {
        let inner = &self.inner;
        TokenRequest {
            server: self,
            claims: Claims {
                iss: Some(inner.issuer.clone()),
                sub: Some(inner.subject.clone()),
                aud: inner.audience.clone().map(Audience::One),
                client_id: Some("test-client".to_owned()),
                scope: (!inner.default_scopes.is_empty()).then(|| inner.default_scopes.join(" ")),
                ..Claims::default()
            },
            lifetime: None,
            key: None,
            header: Header::typed("at+jwt"),
        }
    }

    /// Makes a new signing key (kid `key-N`), publishes it next to the old ones and signs
    /// with it from now on. Returns its kid.
    pub fn rotate_key(&self) -> String {
        let mut state = self.inner.lock();
        let kid = format!("key-{}", state.keys.len() + 1);
        let key = SigningKey::generate(Algorithm::ES256)
            .expect("ES256 key generation")
            .with_kid(kid.clone());
        state.keys.push(key);
        kid
    }

    /// Stops publishing every key but the current one.
    pub fn retire_old_keys(&self) {
        let mut state = self.inner.lock();
        state.published_from = state.keys.len() - 1;
    }

    /// The key that signs tokens now.
    pub fn signing_key(&self) -> SigningKey {
        self.inner.lock().keys.last().cloned().expect("a key")
    }

    /// Marks a token as revoked: introspection says it is inactive.
    pub fn revoke(&self, token: &str) {
        if let Some(entry) = self.inner.lock().tokens.get_mut(token) {
            entry.1 = true;
        }
    }

    /// Registers a client directly: `auth_method` is `none`, `client_secret_basic` or
    /// `client_secret_post` (a secret is made for the last two). Returns the secret.
    pub fn register_client(
        &self,
        client_id: &str,
        auth_method: &str,
        redirect_uris: &[&str],
    ) -> Option<String> {
        let secret = (auth_method != "none").then(random);
        self.inner.lock().clients.insert(
            client_id.to_owned(),
            Client {
                secret: secret.clone(),
                auth_method: auth_method.to_owned(),
                redirect_uris: redirect_uris.iter().map(|u| (*u).to_owned()).collect(),
                jwks: None,
            },
        );
        secret
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.inner.counts.jwks.load(Ordering::SeqCst)
    }

    /// How many introspection requests came.
    pub fn introspections(&self) -> usize {
        self.inner.counts.introspect.load(Ordering::SeqCst)
    }

    /// How many token requests came.
    pub fn token_requests(&self) -> usize {
        self.inner.counts.token.load(Ordering::SeqCst)
    }

    /// How many authorization requests came.
    pub fn authorization_requests(&self) -> usize {
        self.inner.counts.authorize.load(Ordering::SeqCst)
    }

    /// How many registrations came.
    pub fn registrations(&self) -> usize {
        self.inner.counts.register.load(Ordering::SeqCst)
    }
}

fn random() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 18];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    base64url::encode(bytes)
}

async fn serve(listener: TcpListener, inner: Arc<Inner>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let inner = inner.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let inner = inner.clone();
                async move { Ok::<_, Infallible>(inner.handle(request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

fn json_response(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn oauth_error(status: StatusCode, code: &str, description: &str) -> Response<Full<Bytes>> {
    json_response(
        status,
        json!({"error": code, "error_description": description}),
    )
}

/// A client that failed to authenticate.
struct ClientRejected;

fn client_rejected() -> Response<Full<Bytes>> {
    oauth_error(
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        "client authentication failed",
    )
}

fn form(bytes: &[u8]) -> HashMap<String, String> {
    form_urlencoded::parse(bytes).into_owned().collect()
}

fn s256(verifier: &str) -> String {
    base64url::encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mint(&self, claims: Claims, key: Option<SigningKey>, header: Header) -> String {
        let token = if self.opaque && key.is_none() {
            format!("opaque-{}", random())
        } else {
            let key = key.unwrap_or_else(|| self.lock().keys.last().cloned().expect("a key"));
            key.sign_jwt(&header, &claims)
                .expect("signing a test token")
        };
        self.lock().tokens.insert(token.clone(), (claims, false));
        token
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return oauth_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request",
                    "body too large",
                );
            }
        };
        let path = parts.uri.path();
        match (&parts.method, path) {
            (
                &Method::GET,
                "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
            ) => json_response(StatusCode::OK, self.metadata()),
            (&Method::GET, "/jwks") => {
                self.counts.jwks.fetch_add(1, Ordering::SeqCst);
                let state = self.lock();
                let set = JwkSet::new(
                    state.keys[state.published_from..]
                        .iter()
                        .map(SigningKey::public_jwk),
                );
                json_response(
                    StatusCode::OK,
                    serde_json::to_value(&set).unwrap_or_default(),
                )
            }
            (&Method::POST, "/register") => {
                self.counts.register.fetch_add(1, Ordering::SeqCst);
                self.register(&body)
            }
            (&Method::GET, "/authorize") => {
                self.counts.authorize.fetch_add(1, Ordering::SeqCst);
                self.authorize(parts.uri.query().unwrap_or(""))
            }
            (&Method::POST, "/token") => {
                self.counts.token.fetch_add(1, Ordering::SeqCst);
                self.token(&parts.headers, &body)
            }
            (&Method::POST, "/introspect") => {
                self.counts.introspect.fetch_add(1, Ordering::SeqCst);
                self.introspect(&parts.headers, &body)
            }
            _ => oauth_error(StatusCode::NOT_FOUND, "not_found", "no such endpoint"),
        }
    }

    fn metadata(&self) -> Value {
        let i = &self.issuer;
        let mut m = json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "jwks_uri": format!("{i}/jwks"),
            "introspection_endpoint": format!("{i}/introspect"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "dpop_signing_alg_values_supported": ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
            "authorization_response_iss_parameter_supported": self.iss_parameter,
        });
        if !self.scopes_supported.is_empty() {
            m["scopes_supported"] = json!(self.scopes_supported);
        }
        m
    }

    fn register(&self, body: &[u8]) -> Response<Full<Bytes>> {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(body) else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "the body must be a JSON object",
            );
        };
        let redirect_uris: Vec<String> = request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let method = request
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or("client_secret_basic")
            .to_owned();
        let jwks = match method.as_str() {
            "none" | "client_secret_basic" | "client_secret_post" => None,
            "private_key_jwt" => match request
                .get("jwks")
                .map(|j| JwkSet::from_json(&j.to_string()))
            {
                Some(Ok(set)) if !set.keys().is_empty() => Some(set),
                _ => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_client_metadata",
                        "private_key_jwt needs jwks",
                    );
                }
            },
            _ => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_client_metadata",
                    "unsupported token_endpoint_auth_method",
                );
            }
        };
        let client_id = format!("client-{}", random());
        let secret = matches!(
            method.as_str(),
            "client_secret_basic" | "client_secret_post"
        )
        .then(random);
        let mut reply: Map<String, Value> = request.clone();
        reply.insert("client_id".into(), client_id.clone().into());
        reply.insert("client_id_issued_at".into(), self.clock.now_unix().into());
        reply.insert("token_endpoint_auth_method".into(), method.clone().into());
        if let Some(secret) = &secret {
            reply.insert("client_secret".into(), secret.clone().into());
            reply.insert("client_secret_expires_at".into(), 0.into());
        }
        self.lock().clients.insert(
            client_id,
            Client {
                secret,
                auth_method: method,
                redirect_uris,
                jwks,
            },
        );
        json_response(StatusCode::CREATED, Value::Object(reply))
    }

    fn authorize(&self, query: &str) -> Response<Full<Bytes>> {
        let q = form(query.as_bytes());
        let get = |k: &str| q.get(k).map(String::as_str);
        let (Some(client_id), Some(redirect_uri)) = (get("client_id"), get("redirect_uri")) else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "client_id and redirect_uri are required",
            );
        };
        {
            let state = self.lock();
            match state.clients.get(client_id) {
                Some(c) if c.redirect_uris.iter().any(|u| u == redirect_uri) => {}
                Some(_) => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_request",
                        "unregistered redirect_uri",
                    );
                }
                None => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_client",
                        "unknown client",
                    );
                }
            }
        }
        let mut location = redirect_uri.to_owned();
        location.push(if location.contains('?') { '&' } else { '?' });
        let mut params = form_urlencoded::Serializer::new(String::new());
        let error = if get("response_type") != Some("code") {
            Some("unsupported_response_type")
        } else if get("code_challenge").is_none() || get("code_challenge_method") != Some("S256") {
            Some("invalid_request")
        } else {
            None
        };
        match error {
            Some(error) => {
                params.append_pair("error", error);
            }
            None => {
                let code = random();
                let grant = Grant {
                    client_id: client_id.to_owned(),
                    subject: self.subject.clone(),
                    scopes: self.scopes(get("scope")),
                    resource: get("resource").map(str::to_owned),
                };
                self.lock().codes.insert(
                    code.clone(),
                    Code {
                        client_id: client_id.to_owned(),
                        redirect_uri: redirect_uri.to_owned(),
                        challenge: get("code_challenge").unwrap_or_default().to_owned(),
                        grant,
                        expires: self.clock.now_unix() + CODE_LIFETIME,
                    },
                );
                params.append_pair("code", &code);
            }
        }
        if let Some(state) = get("state") {
            params.append_pair("state", state);
        }
        if self.iss_parameter {
            params.append_pair("iss", &self.issuer);
        }
        location.push_str(&params.finish());
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::FOUND;
        if let Ok(value) = HeaderValue::try_from(location) {
            response.headers_mut().insert(LOCATION, value);
        }
        response
    }

    fn scopes(&self, asked: Option<&str>) -> Vec<String> {
        match asked {
            Some(s) if !s.trim().is_empty() => {
                s.split_ascii_whitespace().map(str::to_owned).collect()
            }
            _ => self.default_scopes.clone(),
        }
    }

    /// Authenticates the client of a token or introspection request; its id.
    fn client(
        &self,
        headers: &HeaderMap,
        f: &HashMap<String, String>,
        endpoint: &str,
    ) -> Result<String, ClientRejected> {
        let unauthorized = || Err(ClientRejected);
        let basic = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| {
                base64::engine::general_purpose::STANDARD
                    .decode(b.trim())
                    .ok()
            })
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|pair| {
                let (id, secret) = pair.split_once(':')?;
                let decode = |s: &str| {
                    form_urlencoded::parse(format!("x={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let state = self.lock();
        if let Some((id, secret)) = basic {
            return match state.clients.get(&id) {
                Some(c) if c.secret.as_deref() == Some(secret.as_str()) => Ok(id),
                _ => unauthorized(),
            };
        }
        if f.get("client_assertion_type").map(String::as_str) == Some(CLIENT_ASSERTION_TYPE) {
            let Some(assertion) = f.get("client_assertion") else {
                return unauthorized();
            };
            let Ok(jws) = Jws::parse(assertion) else {
                return unauthorized();
            };
            let Ok(claims) = serde_json::from_slice::<Claims>(jws.unverified_payload()) else {
                return unauthorized();
            };
            let Some(id) = claims.iss.clone() else {
                return unauthorized();
            };
            let Some(jwks) = state.clients.get(&id).and_then(|c| c.jwks.as_ref()) else {
                return unauthorized();
            };
            let Ok(verified) = jws.verify_with_set(jwks, Algorithm::ALL) else {
                return unauthorized();
            };
            let Ok(claims) = verified.claims::<Claims>() else {
                return unauthorized();
            };
            let audience_ok = claims.aud.as_ref().is_some_and(|a| {
                a.contains(&self.issuer)
                    || a.contains(&format!("{}/", self.issuer))
                    || a.contains(endpoint)
            });
            let fresh = Validation::new()
                .check(&claims, self.clock.now_unix())
                .is_ok();
            if claims.sub.as_deref() != Some(id.as_str()) || !audience_ok || !fresh {
                return unauthorized();
            }
            return Ok(id);
        }
        let Some(id) = f.get("client_id") else {
            return unauthorized();
        };
        match state.clients.get(id) {
            Some(c) if c.auth_method == "none" => Ok(id.clone()),
            Some(c) if c.secret.is_some() && c.secret.as_ref() == f.get("client_secret") => {
                Ok(id.clone())
            }
            _ => unauthorized(),
        }
    }

    fn token(&self, headers: &HeaderMap, body: &[u8]) -> Response<Full<Bytes>> {
        let f = form(body);
        let endpoint = format!("{}/token", self.issuer);
        let Ok(client_id) = self.client(headers, &f, &endpoint) else {
            return client_rejected();
        };
        let now = self.clock.now_unix();
        let jkt = match headers.get("dpop").map(|v| v.to_str()) {
            None => None,
            Some(Ok(proof)) => {
                match verify_dpop_proof(proof, &DpopCheck::new("POST", &endpoint).at(now)) {
                    Ok(proof) => Some(proof.jkt),
                    Err(_) => {
                        return oauth_error(
                            StatusCode::BAD_REQUEST,
                            "invalid_dpop_proof",
                            "the DPoP proof is not valid",
                        );
                    }
                }
            }
            Some(Err(_)) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_dpop_proof",
                    "the DPoP proof is not valid",
                );
            }
        };
        let get = |k: &str| f.get(k).map(String::as_str);
        let resource = get("resource").map(str::to_owned);
        let (grant, refresh) = match get("grant_type") {
            Some("authorization_code") => {
                let Some(code) = get("code").and_then(|c| self.lock().codes.remove(c)) else {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "unknown or used code",
                    );
                };
                if code.client_id != client_id
                    || code.expires <= now
                    || get("redirect_uri") != Some(code.redirect_uri.as_str())
                {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "the code was not issued for this request",
                    );
                }
                if get("code_verifier").map(s256).as_deref() != Some(code.challenge.as_str()) {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "PKCE verification failed",
                    );
                }
                let mut grant = code.grant;
                if grant.resource.is_some() && resource.is_some() && grant.resource != resource {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_target",
                        "the resource differs from the authorization request's",
                    );
                }
                grant.resource = grant.resource.or(resource);
                (grant, true)
            }
            Some("refresh_token") => {
                let Some(mut grant) =
                    get("refresh_token").and_then(|r| self.lock().refresh.remove(r))
                else {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "unknown refresh token",
                    );
                };
                if grant.client_id != client_id {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "the refresh token belongs to another client",
                    );
                }
                if let Some(asked) = get("scope") {
                    let asked = self.scopes(Some(asked));
                    if asked.iter().any(|s| !grant.scopes.contains(s)) {
                        return oauth_error(
                            StatusCode::BAD_REQUEST,
                            "invalid_scope",
                            "more scope than granted",
                        );
                    }
                    grant.scopes = asked;
                }
                if resource.is_some() {
                    grant.resource = resource;
                }
                (grant, true)
            }
            Some("client_credentials") => (
                Grant {
                    client_id: client_id.clone(),
                    subject: client_id.clone(),
                    scopes: self.scopes(get("scope")),
                    resource,
                },
                false,
            ),
            _ => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unsupported_grant_type",
                    "unsupported grant_type",
                );
            }
        };
        let claims = Claims {
            iss: Some(self.issuer.clone()),
            sub: Some(grant.subject.clone()),
            aud: grant
                .resource
                .clone()
                .or_else(|| self.audience.clone())
                .map(Audience::One),
            exp: Some(now + self.lifetime),
            iat: Some(now),
            jti: Some(random()),
            scope: (!grant.scopes.is_empty()).then(|| grant.scopes.join(" ")),
            client_id: Some(client_id),
            nbf: None,
            cnf: jkt.clone().map(Confirmation::jkt),
            extra: Map::new(),
        };
        let access_token = self.mint(claims, None, Header::typed("at+jwt"));
        let mut reply = json!({
            "access_token": access_token,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": self.lifetime,
        });
        if !grant.scopes.is_empty() {
            reply["scope"] = grant.scopes.join(" ").into();
        }
        if refresh {
            let refresh_token = random();
            self.lock().refresh.insert(refresh_token.clone(), grant);
            reply["refresh_token"] = refresh_token.into();
        }
        json_response(StatusCode::OK, reply)
    }

    fn introspect(&self, headers: &HeaderMap, body: &[u8]) -> Response<Full<Bytes>> {
        let f = form(body);
        let endpoint = format!("{}/introspect", self.issuer);
        if self.client(headers, &f, &endpoint).is_err() {
            return client_rejected();
        }
        let now = self.clock.now_unix();
        let state = self.lock();
        let found = f.get("token").and_then(|t| state.tokens.get(t));
        match found {
            Some((claims, false)) if claims.exp.is_none_or(|exp| now < exp) => {
                let mut value = serde_json::to_value(claims).unwrap_or_default();
                value["active"] = true.into();
                value["token_type"] = if claims.cnf.is_some() {
                    "DPoP"
                } else {
                    "Bearer"
                }
                .into();
                json_response(StatusCode::OK, value)
            }
            _ => json_response(StatusCode::OK, json!({"active": false})),
        }
    }
}
