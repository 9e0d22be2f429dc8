//! OAuth 2.1 for MCP clients, both eras: an [`Authorizer`] for the Streamable HTTP
//! transport.
//!
//! ```no_run
//! # async fn run() -> arctern::Result<()> {
//! use arctern::auth::client::{FileStore, Headless, OAuth};
//! use arctern::client::{Client, HttpTransport};
//!
//! let oauth = OAuth::builder()
//!     .client_name("my-app")
//!     .step(Headless::new("http://localhost:3000/callback"))
//!     .store(FileStore::new("/home/me/.config/my-app/credentials.json"))
//!     .build();
//! let transport = HttpTransport::builder("https://mcp.example.com/mcp")
//!     .authorizer(oauth)
//!     .build()?;
//! let client = Client::builder().connect_with(transport).await?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! What happens when the server answers `401`:
//!
//! 1. **Protected resource metadata** (RFC 9728): from the challenge's
//!    `resource_metadata` (on the server's origin only, unless
//!    [allowed](OAuthBuilder::cross_origin_resource_metadata)), else
//!    `/.well-known/oauth-protected-resource/<path>`, else the root. Its `resource` must
//!    cover the server's URL (same scheme, host and port; a path prefix), or nothing more
//!    happens. Servers without it (2025-03-26) get their origin as
//!    authorization server, and its default endpoints when it publishes no metadata either.
//! 2. **Authorization server metadata** (RFC 8414, then OpenID Connect, in the order the
//!    specification gives for issuers with and without a path). The document's `issuer` must
//!    be exactly the issuer used to find it, and the issuer and its endpoints must be HTTPS
//!    (plain HTTP only on this machine for a server on this machine, unless
//!    [allowed](OAuthBuilder::allow_http)) and pass the [`HostPolicy`]: a server on the
//!    internet cannot send the client to this machine, a private network or a cloud
//!    metadata service. A new authorization first asks the step whether it can go on
//!    ([`AuthorizationStep::ready`]): if not, nothing is fetched or registered.
//! 3. **Credentials are tied to that issuer**: when a server's metadata names another
//!    authorization server, the client registers anew and never sends the old client id or
//!    tokens to it. A [pre-registered](PreRegistered) identity is pinned to its issuer: a
//!    server that names another one gets an [`ErrorKind::Auth`] error, never the secret,
//!    key assertion or workload token, whatever the grant.
//! 4. **A refresh** when a refresh token is at hand (sending `resource` again), else
//! 5. **the grant** ([`Grant`]): by default the authorization code flow — the client is
//!    identified in the specification's order (a [pre-registered](OAuthBuilder::pre_registered)
//!    id, a [Client ID Metadata Document](OAuthBuilder::client_metadata_document) when the
//!    server supports them, dynamic registration with `application_type`), PKCE S256, a
//!    random `state`, `resource` in both requests; the person's step is an
//!    [`AuthorizationStep`]; the redirect's `iss` is compared byte for byte with the issuer
//!    (RFC 9207) and must be there when the server says it sends it; the token request
//!    authenticates with the method the server supports (`client_secret_basic`,
//!    `client_secret_post`, `none`). `offline_access` is asked for only when the server
//!    lists it. Scopes: the challenge's `scope`, else the metadata's `scopes_supported`,
//!    else none.
//! 6. The request is sent again with `Authorization: Bearer …` — as is every later request:
//!    `POST`s, the legacy `GET` stream and its resumptions, `DELETE`. A token that is about to
//!    expire (the expiry is stored as an absolute time) is refreshed first.
//!
//! A `403` with `error="insufficient_scope"` authorizes again with the union of the scopes
//! asked for before and the challenge's (step-up). One request gets at most
//! [`max_authorizations`](OAuthBuilder::max_authorizations) authorizations (3 by default);
//! then it fails with [`ErrorKind::Auth`]. Bad metadata, a refused grant, a redirect that
//! fails its checks: all fail with [`ErrorKind::Auth`] and a message that says which. Every
//! request to an authorization server is bounded in size and time
//! ([`OAuthBuilder::max_response_size`], [`OAuthBuilder::request_timeout`]).

mod challenge;
mod discovery;
mod policy;
mod step;
mod store;
mod token;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, StatusCode};
use http_body_util::Full;

pub use policy::HostPolicy;
pub use step::{AuthorizationResponse, AuthorizationStep, Headless, LoopbackRedirect};

/// The canonical URI of an MCP server (RFC 8707), the key its credentials are kept under:
/// scheme and host in lower case, no query, no fragment, no trailing slash.
pub fn canonical_resource(url: &str) -> Result<String> {
    discovery::canonical_resource(url)
}
pub use store::{CredentialStore, Credentials, FileStore, MAX_STORE_FILE_SIZE, MemoryStore};

use super::jose::{Algorithm, DpopProof, Jwk, SigningKey, client_assertion};
use challenge::Challenge as Params;
use discovery::ServerMetadata;
use token::{ClientAuth, TokenError, Tokens};

use crate::transport::http::client::{Authorizer, Challenge, Fetcher};
use crate::{Error, ErrorKind, Result};

/// How many authorizations one request may go through (the first, then step-ups) by
/// default.
pub const DEFAULT_MAX_AUTHORIZATIONS: u32 = 3;
/// The largest answer read from an authorization server by default.
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 1024 * 1024;
/// The limit on one request to an authorization server by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long before its expiry a token is refreshed by default.
pub const DEFAULT_EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// How long a `private_key_jwt` client assertion is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// The grant types of RFC 7523 and RFC 8693.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Bounds on the requests to authorization servers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_response_size: usize,
    pub(crate) timeout: Duration,
}

pub(crate) fn auth_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::Auth, message)
}

/// A client identity registered with an authorization server out of band, and used only
/// with that server.
///
/// Its secret, key and grants are an authorization server's credentials: sent to another
/// server, they let that server act as the client at the real one. So the identity carries
/// its issuer, and the MCP server's metadata must name that authorization server (when it
/// names several, the pinned one is picked); otherwise every grant fails with
/// [`ErrorKind::Auth`] before anything reaches the named server — no token request, no
/// client assertion, no workload or identity assertion, no token exchange at the identity
/// provider. A server without protected resource metadata (2025-03-26) is its own
/// authorization server, and gets the identity only when the pin is its origin.
#[derive(Clone)]
pub struct PreRegistered {
    client_id: String,
    client_secret: Option<String>,
    private_key: Option<SigningKey>,
    auth_method: Option<String>,
    /// `None` only for [`PreRegistered::unpinned`].
    issuer: Option<String>,
}

impl fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl PreRegistered {
    /// The client `client_id`, registered with the authorization server whose issuer
    /// identifier is `issuer` (exactly as in its metadata, e.g. `https://auth.example.com`);
    /// a public client (`token_endpoint_auth_method` `none`) unless given a secret or a key.
    pub fn new(client_id: impl Into<String>, issuer: impl Into<String>) -> Self {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            private_key: None,
            auth_method: None,
            issuer: Some(issuer.into()),
        }
    }

    /// The client `client_id` at whichever authorization server the MCP server's metadata
    /// names first: the MCP server is trusted with the identity's secret or key. Only for
    /// MCP servers that are as trusted as the authorization server (test harnesses whose
    /// authorization server listens on a port chosen at run time); never used with a server
    /// without protected resource metadata. Prefer [`PreRegistered::new`].
    pub fn unpinned(client_id: impl Into<String>) -> Self {
        PreRegistered {
            issuer: None,
            ..PreRegistered::new(client_id, String::new())
        }
    }

    /// A key to authenticate with `private_key_jwt` (RFC 7523 §2.2): every token request
    /// carries a fresh assertion signed with it, its audience the authorization server's
    /// issuer. Load one with [`SigningKey::from_pkcs8_pem`].
    pub fn private_key(mut self, key: SigningKey) -> Self {
        self.private_key = Some(key);
        self
    }

    /// A confidential client's secret (sent with `client_secret_basic`, or
    /// `client_secret_post` when that is all the server supports).
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The token endpoint authentication method, instead of the one inferred from the
    /// server's metadata.
    pub fn auth_method(mut self, method: impl Into<String>) -> Self {
        self.auth_method = Some(method.into());
        self
    }

    /// Whether this identity may be used with the authorization server `issuer`, found
    /// through protected resource metadata (`from_metadata`) or, without it, as the MCP
    /// server's origin; the error says why not.
    fn check_issuer(&self, issuer: &str, from_metadata: bool) -> Result<()> {
        match &self.issuer {
            Some(pin) if pin == issuer => Ok(()),
            Some(pin) => Err(auth_error(format!(
                "the pre-registered client {:?} is registered with {pin}, and the MCP server \
                 names the authorization server {issuer}: its credentials are not sent there",
                self.client_id
            ))),
            None if from_metadata => Ok(()),
            None => Err(auth_error(format!(
                "the MCP server publishes no protected resource metadata, so it would be its own \
                 authorization server ({issuer}); the unpinned pre-registered client {:?} is not \
                 sent there (pin it: PreRegistered::new)",
                self.client_id
            ))),
        }
    }

    /// The credentials this identity stands for at the authorization server `issuer`.
    fn credentials(&self, issuer: &str) -> Credentials {
        Credentials {
            issuer: issuer.to_owned(),
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            token_endpoint_auth_method: self.auth_method.clone(),
            registration: "pre-registered".into(),
            ..Credentials::default()
        }
    }
}

/// Enterprise-managed authorization (SEP-990): an identity provider exchanges the person's
/// ID token for an identity assertion grant (RFC 8693), which the MCP server's
/// authorization server takes as a JWT bearer grant (RFC 7523).
#[derive(Clone)]
pub struct EnterpriseManaged {
    idp_token_endpoint: String,
    idp_client_id: String,
    idp_client_secret: Option<String>,
    id_token: String,
}

impl fmt::Debug for EnterpriseManaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseManaged")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("idp_client_id", &self.idp_client_id)
            .finish_non_exhaustive()
    }
}

impl EnterpriseManaged {
    /// Exchange `id_token` at the identity provider's `token_endpoint`, as its client
    /// `idp_client_id`.
    pub fn new(
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: impl Into<String>,
    ) -> Self {
        EnterpriseManaged {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            idp_client_secret: None,
            id_token: id_token.into(),
        }
    }

    /// The client secret at the identity provider (`client_secret_post`).
    pub fn idp_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.idp_client_secret = Some(secret.into());
        self
    }
}

/// How the client obtains tokens.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Grant {
    /// The authorization code flow with PKCE, through an [`AuthorizationStep`] (the default).
    #[default]
    AuthorizationCode,
    /// The client credentials grant (machine to machine), with a
    /// [pre-registered](OAuthBuilder::pre_registered) identity.
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523) with this assertion: workload identity federation.
    /// Errors are reported as they are, without retrying or trying another grant.
    JwtBearer {
        /// The JWT, as issued by the workload's identity provider.
        assertion: String,
    },
    /// Enterprise-managed authorization (token exchange at the identity provider, then the
    /// JWT bearer grant), with a [pre-registered](OAuthBuilder::pre_registered) identity at
    /// the MCP server's authorization server.
    EnterpriseManaged(EnterpriseManaged),
}

/// Settings of an [`OAuth`] authorizer.
#[must_use = "a builder does nothing until built"]
pub struct OAuthBuilder {
    config: Config,
}

struct Config {
    client_name: String,
    step: Option<Arc<dyn AuthorizationStep>>,
    pre_registered: Option<PreRegistered>,
    metadata_document: Option<String>,
    grant: Grant,
    store: Arc<dyn CredentialStore>,
    max_authorizations: u32,
    expiry_margin: Duration,
    limits: Limits,
    scope: Option<String>,
    dpop: bool,
    allow_http: bool,
    host_policy: HostPolicy,
    cross_origin_metadata: bool,
}

impl fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBuilder")
            .field("client_name", &self.config.client_name)
            .field("grant", &self.config.grant)
            .field("pre_registered", &self.config.pre_registered)
            .finish_non_exhaustive()
    }
}

impl Default for OAuthBuilder {
    fn default() -> Self {
        OAuthBuilder {
            config: Config {
                client_name: "arctern-client".into(),
                step: None,
                pre_registered: None,
                metadata_document: None,
                grant: Grant::AuthorizationCode,
                store: Arc::new(MemoryStore::new()),
                max_authorizations: DEFAULT_MAX_AUTHORIZATIONS,
                expiry_margin: DEFAULT_EXPIRY_MARGIN,
                limits: Limits {
                    max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
                    timeout: DEFAULT_REQUEST_TIMEOUT,
                },
                scope: None,
                dpop: true,
                allow_http: false,
                host_policy: HostPolicy::default(),
                cross_origin_metadata: false,
            },
        }
    }
}

impl OAuthBuilder {
    /// The `client_name` sent with dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.config.client_name = name.into();
        self
    }

    /// The person's step of the authorization code flow (required for it).
    pub fn step(mut self, step: impl AuthorizationStep) -> Self {
        self.config.step = Some(Arc::new(step));
        self
    }

    /// A client identity registered out of band with one authorization server: the only
    /// identity used then (no metadata document, no dynamic registration), and only with
    /// that server.
    pub fn pre_registered(mut self, client: PreRegistered) -> Self {
        self.config.pre_registered = Some(client);
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as `client_id` with
    /// servers that advertise `client_id_metadata_document_supported`.
    pub fn client_metadata_document(mut self, url: impl Into<String>) -> Self {
        self.config.metadata_document = Some(url.into());
        self
    }

    /// How tokens are obtained (default [`Grant::AuthorizationCode`]).
    pub fn grant(mut self, grant: Grant) -> Self {
        self.config.grant = grant;
        self
    }

    /// Where credentials are kept (default: in memory).
    pub fn store(mut self, store: impl CredentialStore) -> Self {
        self.config.store = Arc::new(store);
        self
    }

    /// Where credentials are kept, shared with others.
    pub fn shared_store(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.config.store = store;
        self
    }

    /// A scope to ask for when neither the challenge nor the metadata names one.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.config.scope = Some(scope.into());
        self
    }

    /// Whether DPoP (RFC 9449) is used when the server challenges with the `DPoP` scheme,
    /// or when both the server (its protected resource metadata) and the authorization
    /// server list `ES256` in `dpop_signing_alg_values_supported` (default on). Tokens are then bound to a key made for them (ES256,
    /// kept with the tokens in the credential store, so that a stored token stays usable),
    /// every request carries a fresh proof with `ath`, and the servers' nonces are honoured.
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.config.dpop = enabled;
        self
    }

    /// Whether authorization servers may be reached over plain HTTP (default off: HTTPS,
    /// or plain HTTP on this machine — `localhost`, `127.0.0.0/8`, `::1` — when the MCP
    /// server is on this machine too). The [host policy](Self::host_policy) still applies.
    pub fn allow_http(mut self, allowed: bool) -> Self {
        self.config.allow_http = allowed;
        self
    }

    /// Which hosts a server may send the client to: the authorization server and its
    /// endpoints, protected resource metadata on another origin (default
    /// [`HostPolicy::new`]: nothing on this machine, in a private network, link-local or a
    /// cloud metadata service, unless the MCP server is there too).
    pub fn host_policy(mut self, policy: HostPolicy) -> Self {
        self.config.host_policy = policy;
        self
    }

    /// Whether the `resource_metadata` URL of a server's challenge may be on another origin
    /// than the MCP endpoint (default off: such a challenge fails with [`ErrorKind::Auth`]
    /// and nothing is fetched). When allowed, the URL must be HTTPS (as for authorization
    /// servers) and pass the [host policy](Self::host_policy).
    pub fn cross_origin_resource_metadata(mut self, allowed: bool) -> Self {
        self.config.cross_origin_metadata = allowed;
        self
    }

    /// How many authorizations one request may go through (default
    /// [`DEFAULT_MAX_AUTHORIZATIONS`], at least 1).
    pub fn max_authorizations(mut self, n: u32) -> Self {
        self.config.max_authorizations = n.max(1);
        self
    }

    /// How long before its expiry a token is refreshed (default [`DEFAULT_EXPIRY_MARGIN`]).
    pub fn expiry_margin(mut self, margin: Duration) -> Self {
        self.config.expiry_margin = margin;
        self
    }

    /// The largest answer read from an authorization server (default
    /// [`DEFAULT_MAX_RESPONSE_SIZE`]).
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.config.limits.max_response_size = bytes.max(1024);
        self
    }

    /// The limit on one request to an authorization server (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.limits.timeout = timeout;
        self
    }

    /// The authorizer.
    pub fn build(self) -> OAuth {
        OAuth {
            shared: Arc::new(Shared {
                config: self.config,
                state: tokio::sync::Mutex::new(State::default()),
            }),
        }
    }
}

/// OAuth 2.1 for one MCP server: give it to
/// [`HttpTransportBuilder::authorizer`](crate::transport::http::client::HttpTransportBuilder::authorizer).
/// See the [module documentation](self). Cheap to clone; clones share their tokens.
#[derive(Clone)]
pub struct OAuth {
    shared: Arc<Shared>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("client_name", &self.shared.config.client_name)
            .finish_non_exhaustive()
    }
}

struct Shared {
    config: Config,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The store key (the MCP endpoint's canonical URI), once known.
    resource: Option<String>,
    loaded: bool,
    credentials: Option<Credentials>,
    /// The scope asked for last (without `offline_access`), for step-up unions.
    requested_scope: Option<String>,
    /// The `Authorization` value requests carry now.
    current: Option<HeaderValue>,
    /// The access token the last refresh produced: if it is refused, refreshing again is
    /// pointless.
    refreshed: Option<String>,
    /// The DPoP proof key, once DPoP is in use.
    dpop_key: Option<SigningKey>,
    /// The last nonces the authorization server and the resource server asked for.
    as_nonce: Option<String>,
    rs_nonce: Option<String>,
}

/// Which authorization a challenge calls for.
enum Need {
    /// A token (refreshed if possible).
    Token,
    /// A new authorization with more scope.
    StepUp(Option<String>),
}

fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

impl OAuth {
    /// Settings for an authorizer.
    pub fn builder() -> OAuthBuilder {
        OAuthBuilder::default()
    }

    /// The credentials kept for the MCP server at `endpoint`, if any.
    pub async fn credentials(&self, endpoint: &str) -> Result<Option<Credentials>> {
        let resource = discovery::canonical_resource(endpoint)?;
        self.shared.config.store.load(&resource).await
    }

    /// Forgets the credentials of the MCP server at `endpoint` (in memory and in the store).
    pub async fn forget(&self, endpoint: &str) -> Result<()> {
        let resource = discovery::canonical_resource(endpoint)?;
        let mut state = self.shared.state.lock().await;
        if state.resource.as_deref() == Some(resource.as_str()) {
            *state = State::default();
        }
        self.shared.config.store.remove(&resource).await
    }

    async fn load(&self, state: &mut State, endpoint: &str) -> Result<()> {
        if state.loaded {
            return Ok(());
        }
        let resource = discovery::canonical_resource(endpoint)?;
        state.credentials = self.shared.config.store.load(&resource).await?;
        // A stored pre-registered identity that is not the configured one (another id, another
        // issuer) is not used: its secret would go where the configuration no longer says.
        if let Some(c) = &state.credentials
            && c.registration == "pre-registered"
            && !self.shared.config.pre_registered.as_ref().is_some_and(|p| {
                p.client_id == c.client_id && p.check_issuer(&c.issuer, true).is_ok()
            })
        {
            tracing::debug!("dropped stored credentials of another pre-registered identity");
            state.credentials = None;
        }
        state.requested_scope = state.credentials.as_ref().and_then(|c| {
            c.scope
                .as_deref()
                .map(without_offline_access)
                .filter(|s| !s.is_empty())
        });
        state.dpop_key = state
            .credentials
            .as_ref()
            .and_then(|c| c.dpop_key.as_ref())
            .and_then(|jwk| {
                let key = Jwk::from_value(jwk).and_then(|jwk| SigningKey::from_jwk(&jwk));
                if let Err(e) = &key {
                    tracing::warn!(error = %e, "ignored a stored DPoP key that does not load");
                }
                key.ok()
            });
        state.resource = Some(resource);
        state.loaded = true;
        Ok(())
    }

    async fn save(&self, state: &State) -> Result<()> {
        let (Some(resource), Some(credentials)) = (&state.resource, &state.credentials) else {
            return Ok(());
        };
        self.shared.config.store.save(resource, credentials).await
    }

    /// The `Authorization` value of the current token.
    fn header(credentials: &Credentials) -> Option<HeaderValue> {
        let token = credentials.access_token.as_deref()?;
        let scheme = credentials.token_type.as_deref().unwrap_or("Bearer");
        HeaderValue::from_str(&format!("{scheme} {token}"))
            .ok()
            .map(|mut v| {
                v.set_sensitive(true);
                v
            })
    }

    fn expired(&self, credentials: &Credentials) -> bool {
        credentials.expires_at.is_some_and(|at| {
            token::now().saturating_add(self.shared.config.expiry_margin.as_secs()) >= at
        })
    }

    async fn authorize_request(
        &self,
        fetcher: &Fetcher,
        request: &mut Request<Full<Bytes>>,
    ) -> Result<()> {
        let endpoint = request.uri().to_string();
        let mut state = self.shared.state.lock().await;
        self.load(&mut state, &endpoint).await?;
        if let Some(credentials) = &state.credentials
            && credentials.access_token.is_some()
            && self.expired(credentials)
        {
            if credentials.refresh_token.is_some() {
                if let Err(e) = self.refresh(fetcher, &mut state, None).await {
                    tracing::debug!(error = %e, "could not refresh an expired token");
                    if let Some(c) = state.credentials.as_mut() {
                        c.access_token = None;
                    }
                }
            } else if let Some(c) = state.credentials.as_mut() {
                c.access_token = None;
            }
        }
        let bound = state
            .credentials
            .as_ref()
            .is_some_and(|c| c.token_type.as_deref() == Some("DPoP"));
        if bound && state.dpop_key.is_none() {
            // Bound to a key of another process: useless here.
            if let Some(c) = state.credentials.as_mut() {
                c.access_token = None;
            }
        }
        state.current = state.credentials.as_ref().and_then(Self::header);
        if let Some(value) = &state.current {
            request.headers_mut().insert(AUTHORIZATION, value.clone());
            if bound
                && let (Some(key), Some(token)) = (
                    &state.dpop_key,
                    state
                        .credentials
                        .as_ref()
                        .and_then(|c| c.access_token.as_deref()),
                )
            {
                let url = request.uri().to_string();
                let mut proof = DpopProof::new(request.method().as_str(), &url).access_token(token);
                if let Some(nonce) = &state.rs_nonce {
                    proof = proof.nonce(nonce);
                }
                let proof = proof.sign(key).map_err(jose_error)?;
                let value = HeaderValue::from_str(&proof)
                    .map_err(|e| auth_error("a DPoP proof is not a header value").with_source(e))?;
                request.headers_mut().insert("dpop", value);
            }
        }
        Ok(())
    }

    async fn answer(&self, fetcher: &Fetcher, challenge: Challenge<'_>) -> Result<bool> {
        let all = challenge::parse(challenge.headers);
        let sent_scheme = challenge
            .request_headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .map(|(scheme, _)| scheme);
        let params = challenge::pick(&all, sent_scheme)
            .cloned()
            .unwrap_or_default();
        let need = match challenge.status {
            StatusCode::UNAUTHORIZED => Need::Token,
            StatusCode::FORBIDDEN if params.param("error") == Some("insufficient_scope") => {
                Need::StepUp(params.param("scope").map(str::to_owned))
            }
            _ => return Ok(false),
        };
        let max = self.shared.config.max_authorizations;
        if challenge.attempt > max {
            return Err(auth_error(format!(
                "the server still refuses the request (HTTP {}) after {max} authorizations",
                challenge.status
            )));
        }
        let endpoint = challenge.uri.to_string();
        let mut state = self.shared.state.lock().await;
        self.load(&mut state, &endpoint).await?;
        if challenge.status == StatusCode::UNAUTHORIZED
            && params.param("error") == Some("use_dpop_nonce")
            && state.dpop_key.is_some()
            && let Some(nonce) = challenge
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
        {
            // The resource server wants its nonce in the proof: the same token, a new proof.
            state.rs_nonce = Some(nonce.to_owned());
            return Ok(true);
        }
        let sent = challenge.request_headers.get(AUTHORIZATION);
        if matches!(need, Need::Token) && state.current.is_some() && state.current.as_ref() != sent
        {
            // Another request obtained new credentials meanwhile: try with those.
            return Ok(true);
        }
        self.obtain(fetcher, &mut state, &endpoint, &params, need, sent)
            .await?;
        Ok(true)
    }

    /// Discovery, then a refresh or a grant; the new credentials are saved.
    async fn obtain(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        endpoint: &str,
        params: &Params,
        need: Need,
        sent: Option<&HeaderValue>,
    ) -> Result<()> {
        let limits = &self.shared.config.limits;
        let pre_registered = self.shared.config.pre_registered.as_ref();
        let endpoint_uri: http::Uri = endpoint
            .parse()
            .map_err(|e| auth_error(format!("{endpoint:?} is not a valid URL")).with_source(e))?;
        // A new authorization whose step cannot finish sends nothing at all.
        if matches!(self.shared.config.grant, Grant::AuthorizationCode) {
            let can_refresh = matches!(need, Need::Token)
                && state
                    .credentials
                    .as_ref()
                    .is_some_and(|c| c.refresh_token.is_some());
            if !can_refresh {
                self.step()?.ready()?;
            }
        }
        let from_challenge = params.param("resource_metadata");
        if let Some(url) = from_challenge {
            self.check_metadata_url(url, &endpoint_uri)?;
        }
        let found = discovery::resource_metadata(fetcher, endpoint, from_challenge, limits).await?;
        let (metadata, resource, prm_scopes, resource_takes_dpop) = match found {
            Some((url, prm)) => {
                let resource = prm.resource.clone().ok_or_else(|| {
                    auth_error(format!(
                        "the protected resource metadata at {url} has no resource"
                    ))
                })?;
                if !discovery::resource_covers(&resource, endpoint) {
                    return Err(auth_error(format!(
                        "the protected resource metadata at {url} is for {resource:?}, not for \
                         {endpoint:?}; no authorization is attempted"
                    )));
                }
                // A pinned identity picks its own server among those named.
                let named = &prm.authorization_servers;
                let issuer = pre_registered
                    .and_then(|p| p.issuer.as_ref())
                    .and_then(|pin| named.iter().find(|s| *s == pin))
                    .or(named.first())
                    .ok_or_else(|| {
                        auth_error(format!(
                            "the protected resource metadata at {url} names no authorization \
                             server"
                        ))
                    })?;
                // Before anything reaches the server named: it may be the wrong one.
                if let Some(p) = pre_registered {
                    p.check_issuer(issuer, true)?;
                }
                self.check_url(issuer, &endpoint_uri)?;
                let metadata = discovery::server_metadata(fetcher, issuer, limits)
                    .await?
                    .ok_or_else(|| {
                        auth_error(format!(
                            "the authorization server {issuer} publishes no metadata"
                        ))
                    })?;
                let takes_dpop = prm
                    .dpop_signing_alg_values_supported
                    .as_ref()
                    .is_some_and(|algs| algs.iter().any(|a| a == "ES256"));
                (metadata, resource, prm.scopes_supported, takes_dpop)
            }
            None => {
                // A 2025-03-26 server: its origin is the authorization server.
                let (origin, _) = discovery::split(endpoint)?;
                if let Some(p) = pre_registered {
                    p.check_issuer(&origin, false)?;
                }
                let metadata = discovery::server_metadata(fetcher, &origin, limits)
                    .await?
                    .unwrap_or_else(|| discovery::fallback_metadata(&origin));
                (
                    metadata,
                    discovery::canonical_resource(endpoint)?,
                    None,
                    false,
                )
            }
        };

        for endpoint in [
            &metadata.authorization_endpoint,
            &metadata.token_endpoint,
            &metadata.registration_endpoint,
        ]
        .into_iter()
        .flatten()
        {
            self.check_url(endpoint, &endpoint_uri)?;
        }

        // Credentials of another authorization server are never used with this one.
        if state
            .credentials
            .as_ref()
            .is_some_and(|c| c.issuer != metadata.issuer)
        {
            tracing::debug!(issuer = %metadata.issuer, "the authorization server changed; registering anew");
            state.credentials = None;
            state.requested_scope = None;
            state.refreshed = None;
        }

        // DPoP when the resource asks for it (its challenge), or when both the resource and
        // the authorization server support it: a DPoP-bound token is useless at a resource
        // that takes bearer tokens only.
        let wants_dpop = self.shared.config.dpop
            && (params.scheme == "dpop"
                || (resource_takes_dpop
                    && metadata
                        .dpop_signing_alg_values_supported
                        .as_ref()
                        .is_some_and(|algs| algs.iter().any(|a| a == "ES256"))));
        if !wants_dpop {
            state.dpop_key = None;
        } else if state.dpop_key.is_none() {
            state.dpop_key = Some(SigningKey::generate(Algorithm::ES256).map_err(jose_error)?);
        }

        let scope = match &need {
            Need::StepUp(more) => union(state.requested_scope.as_deref(), more.as_deref()),
            Need::Token => params
                .param("scope")
                .map(str::to_owned)
                .or_else(|| prm_scopes.filter(|s| !s.is_empty()).map(|s| s.join(" ")))
                .or_else(|| self.shared.config.scope.clone()),
        };

        if matches!(need, Need::Token) {
            let rejected = sent
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split_once(' '))
                .map(|(_, token)| token);
            let can_refresh = state
                .credentials
                .as_ref()
                .is_some_and(|c| c.refresh_token.is_some())
                && (rejected.is_none() || rejected != state.refreshed.as_deref());
            if can_refresh {
                match self.refresh(fetcher, state, Some(&metadata)).await {
                    Ok(()) => return Ok(()),
                    Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing again"),
                }
            }
        }

        let tokens = match &self.shared.config.grant {
            Grant::AuthorizationCode => {
                self.authorization_code(fetcher, state, &metadata, &resource, scope.as_deref())
                    .await?
            }
            Grant::ClientCredentials => {
                let mut form = vec![
                    ("grant_type".to_owned(), "client_credentials".to_owned()),
                    ("resource".to_owned(), resource.clone()),
                ];
                push_scope(&mut form, scope.as_deref());
                self.machine_grant(fetcher, state, &metadata, form).await?
            }
            Grant::JwtBearer { assertion } => {
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), assertion.clone()),
                    ("resource".to_owned(), resource.clone()),
                ];
                push_scope(&mut form, scope.as_deref());
                self.machine_grant(fetcher, state, &metadata, form).await?
            }
            Grant::EnterpriseManaged(ema) => {
                let assertion = self
                    .exchange_id_token(fetcher, ema, &metadata, &resource, scope.as_deref())
                    .await?;
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), assertion),
                ];
                push_scope(&mut form, scope.as_deref());
                self.machine_grant(fetcher, state, &metadata, form).await?
            }
        };
        state.requested_scope = scope.as_deref().map(without_offline_access);
        state.refreshed = None;
        self.keep(state, &metadata, tokens).await
    }

    /// Whether a URL a server named may be reached by a client of `endpoint`: HTTPS, or
    /// plain HTTP on this machine for an MCP server on this machine (or when plain HTTP is
    /// allowed); then the host policy.
    fn check_url(&self, url: &str, endpoint: &http::Uri) -> Result<()> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| auth_error(format!("{url:?} is not a valid URL")).with_source(e))?;
        let local = policy::is_loopback(&uri);
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if self.shared.config.allow_http => {}
            Some("http") if local && policy::is_loopback(endpoint) => {}
            Some("http") if local => {
                return Err(auth_error(format!(
                    "the authorization server endpoint {} is plain HTTP on this machine, and \
                     the MCP server is not on this machine: it is not used",
                    policy::origin(&uri)
                )));
            }
            _ => {
                return Err(auth_error(format!(
                    "the authorization server endpoint {} is not HTTPS; it is not used \
                     (OAuthBuilder::allow_http allows it)",
                    policy::origin(&uri)
                )));
            }
        }
        self.shared.config.host_policy.check(&uri, endpoint)
    }

    /// The `resource_metadata` of a challenge: on the MCP endpoint's origin, or (when
    /// allowed) a URL that passes the rules for authorization servers.
    fn check_metadata_url(&self, url: &str, endpoint: &http::Uri) -> Result<()> {
        let uri: http::Uri = url.parse().map_err(|e| {
            auth_error("the challenge's resource_metadata is not a valid URL").with_source(e)
        })?;
        if policy::same_origin(&uri, endpoint) {
            return Ok(());
        }
        if !self.shared.config.cross_origin_metadata {
            return Err(auth_error(format!(
                "the server's challenge names protected resource metadata on another origin \
                 ({}) than the MCP server's ({}); it is not fetched \
                 (OAuthBuilder::cross_origin_resource_metadata allows it)",
                policy::origin(&uri),
                policy::origin(endpoint)
            )));
        }
        self.check_url(url, endpoint)
    }

    /// The person's step of the authorization code flow.
    fn step(&self) -> Result<Arc<dyn AuthorizationStep>> {
        self.shared.config.step.clone().ok_or_else(|| {
            auth_error(
                "the server wants authorization, and this client has no authorization step \
                 (OAuthBuilder::step)",
            )
        })
    }

    /// Stores new tokens (keeping a refresh token the answer did not replace).
    async fn keep(
        &self,
        state: &mut State,
        metadata: &ServerMetadata,
        tokens: Tokens,
    ) -> Result<()> {
        let credentials = state.credentials.get_or_insert_with(Credentials::default);
        credentials.issuer = metadata.issuer.clone();
        credentials.token_endpoint = metadata.token_endpoint.clone();
        credentials.access_token = Some(tokens.access_token);
        credentials.token_type = Some(tokens.token_type);
        if tokens.refresh_token.is_some() {
            credentials.refresh_token = tokens.refresh_token;
        }
        credentials.expires_at = tokens.expires_at;
        if tokens.scope.is_some() {
            credentials.scope = tokens.scope;
        }
        credentials.dpop_key = state.dpop_key.as_ref().map(|k| k.private_jwk().to_value());
        state.current = Self::header(credentials);
        self.save(state).await
    }

    /// The refresh token grant, sending `resource` (and the scope granted) again.
    async fn refresh(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        metadata: Option<&ServerMetadata>,
    ) -> Result<()> {
        let Some(credentials) = state.credentials.clone() else {
            return Err(auth_error("nothing to refresh"));
        };
        let (Some(refresh_token), Some(resource)) =
            (credentials.refresh_token.clone(), state.resource.clone())
        else {
            return Err(auth_error("no refresh token"));
        };
        let endpoint = metadata
            .and_then(|m| m.token_endpoint.clone())
            .or(credentials.token_endpoint.clone())
            .ok_or_else(|| auth_error("no token endpoint to refresh at"))?;
        let mut form = vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), refresh_token),
            ("resource".to_owned(), resource),
        ];
        push_scope(&mut form, credentials.scope.as_deref());
        let tokens = self
            .token_request(fetcher, state, &endpoint, form, &credentials, metadata)
            .await?
            .map_err(|e| token_error(&endpoint, e))?;
        state.refreshed = Some(tokens.access_token.clone());
        let metadata = metadata.cloned().unwrap_or_else(|| ServerMetadata {
            issuer: credentials.issuer.clone(),
            token_endpoint: Some(endpoint.clone()),
            ..ServerMetadata::default()
        });
        self.keep(state, &metadata, tokens).await
    }

    /// Who the client is at this authorization server, registering if need be.
    async fn identify(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        metadata: &ServerMetadata,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<Credentials> {
        let config = &self.shared.config;
        if let Some(p) = &config.pre_registered {
            // Never another way of identifying the client: a mismatch is an error.
            p.check_issuer(&metadata.issuer, true)?;
            return Ok(p.credentials(&metadata.issuer));
        }
        if let Some(c) = &state.credentials
            && c.issuer == metadata.issuer
            && !c.client_id.is_empty()
            && (c.registration != "dynamic" || c.redirect_uri.as_deref() == Some(redirect_uri))
        {
            return Ok(c.clone());
        }
        if metadata.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &config.metadata_document
        {
            return Ok(Credentials {
                issuer: metadata.issuer.clone(),
                client_id: url.clone(),
                token_endpoint_auth_method: Some("none".into()),
                registration: "metadata-document".into(),
                ..Credentials::default()
            });
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(auth_error(format!(
                "no client identity for {}: nothing pre-registered, no client metadata document \
                 it accepts, and no dynamic registration",
                metadata.issuer
            )));
        };
        let supported = metadata
            .token_endpoint_auth_methods_supported
            .as_deref()
            .unwrap_or(&[]);
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| supported.iter().any(|s| s == m));
        let registered = token::register(
            fetcher,
            endpoint,
            &config.client_name,
            redirect_uri,
            scope,
            method,
            &config.limits,
        )
        .await?;
        Ok(Credentials {
            issuer: metadata.issuer.clone(),
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            token_endpoint_auth_method: registered.token_endpoint_auth_method,
            registration: "dynamic".into(),
            redirect_uri: Some(redirect_uri.to_owned()),
            ..Credentials::default()
        })
    }

    /// The authorization code flow with PKCE; one more registration when the server has
    /// forgotten a dynamically registered client.
    async fn authorization_code(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        metadata: &ServerMetadata,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<Tokens> {
        let step = self.step()?;
        // Before anything is registered (a refresh may have failed since the first check).
        step.ready()?;
        let redirect_uri = step.redirect_uri();
        let scope = match &metadata.scopes_supported {
            Some(s) if s.iter().any(|s| s == "offline_access") => {
                union(scope, Some("offline_access"))
            }
            _ => scope.map(str::to_owned),
        };
        for attempt in 0..2 {
            let client = self
                .identify(fetcher, state, metadata, &redirect_uri, scope.as_deref())
                .await?;
            // Remember the identity now: the token request may fail, the registration holds.
            let keep_tokens = state
                .credentials
                .as_ref()
                .filter(|c| c.client_id == client.client_id)
                .cloned();
            state.credentials = Some(Credentials {
                refresh_token: keep_tokens.as_ref().and_then(|c| c.refresh_token.clone()),
                ..client.clone()
            });
            match self
                .code_flow(
                    fetcher,
                    state,
                    &*step,
                    &client,
                    metadata,
                    resource,
                    scope.as_deref(),
                    &redirect_uri,
                )
                .await
            {
                Err(Failed::Token(e))
                    if e.error == "invalid_client"
                        && client.registration == "dynamic"
                        && attempt == 0 =>
                {
                    tracing::debug!(
                        "the authorization server forgot this client; registering again"
                    );
                    state.credentials = None;
                }
                Err(Failed::Token(e)) => {
                    return Err(token_error(
                        metadata.token_endpoint.as_deref().unwrap_or_default(),
                        e,
                    ));
                }
                Err(Failed::Other(e)) => return Err(e),
                Ok(tokens) => return Ok(tokens),
            }
        }
        Err(auth_error(
            "the authorization server refused the client twice",
        ))
    }

    #[allow(clippy::too_many_arguments)]
    async fn code_flow(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        step: &dyn AuthorizationStep,
        client: &Credentials,
        metadata: &ServerMetadata,
        resource: &str,
        scope: Option<&str>,
        redirect_uri: &str,
    ) -> std::result::Result<Tokens, Failed> {
        let authorization_endpoint =
            metadata.authorization_endpoint.as_deref().ok_or_else(|| {
                auth_error(format!("{} has no authorization endpoint", metadata.issuer))
            })?;
        let token_endpoint = metadata
            .token_endpoint
            .as_deref()
            .ok_or_else(|| auth_error(format!("{} has no token endpoint", metadata.issuer)))?;
        // PKCE is required: a server that does not say it supports S256 is not used.
        if !metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
        {
            return Err(auth_error(format!(
                "{} does not advertise PKCE with S256 (code_challenge_methods_supported); \
                 no authorization is attempted",
                metadata.issuer
            ))
            .into());
        }
        let verifier = token::random_token(32)?;
        let state_value = token::random_token(16)?;
        let url = {
            let mut query = form_urlencoded::Serializer::new(String::new());
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_challenge", &token::s256(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state_value)
                .append_pair("resource", resource);
            if let Some(scope) = scope {
                query.append_pair("scope", scope);
                if scope.split_whitespace().any(|s| s == "offline_access") {
                    query.append_pair("prompt", "consent");
                }
            }
            let separator = if authorization_endpoint.contains('?') {
                '&'
            } else {
                '?'
            };
            format!("{authorization_endpoint}{separator}{}", query.finish())
        };
        let response = step.authorize(fetcher, &url).await?;

        // RFC 9207: the issuer, compared byte for byte, before anything else is believed.
        match (
            &response.iss,
            metadata.authorization_response_iss_parameter_supported,
        ) {
            (Some(iss), _) if *iss != metadata.issuer => {
                return Err(auth_error(format!(
                    "the authorization response names issuer {iss:?}, not {:?}; it is refused",
                    metadata.issuer
                ))
                .into());
            }
            (None, Some(true)) => {
                return Err(auth_error(format!(
                    "the authorization response has no iss, although {} says it sends one",
                    metadata.issuer
                ))
                .into());
            }
            _ => {}
        }
        if response.state.as_deref() != Some(state_value.as_str()) {
            return Err(auth_error("the authorization response's state does not match").into());
        }
        if let Some(error) = &response.error {
            return Err(auth_error(format!(
                "the authorization was refused: {error}{}",
                response
                    .error_description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ))
            .into());
        }
        let code = response
            .code
            .clone()
            .ok_or_else(|| auth_error("the authorization response has no code"))?;
        let form = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code),
            ("redirect_uri".to_owned(), redirect_uri.to_owned()),
            ("code_verifier".to_owned(), verifier),
            ("resource".to_owned(), resource.to_owned()),
        ];
        self.token_request(fetcher, state, token_endpoint, form, client, Some(metadata))
            .await?
            .map_err(Failed::Token)
    }

    /// A grant without a person (client credentials, JWT bearer): one token request with the
    /// pre-registered identity; an error is reported as it is.
    async fn machine_grant(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        metadata: &ServerMetadata,
        form: Vec<(String, String)>,
    ) -> Result<Tokens> {
        let token_endpoint = metadata
            .token_endpoint
            .as_deref()
            .ok_or_else(|| auth_error(format!("{} has no token endpoint", metadata.issuer)))?;
        let p = self.shared.config.pre_registered.as_ref().ok_or_else(|| {
            auth_error("this grant needs a pre-registered client (OAuthBuilder::pre_registered)")
        })?;
        p.check_issuer(&metadata.issuer, true)?;
        let client = p.credentials(&metadata.issuer);
        state.credentials = Some(client.clone());
        self.token_request(
            fetcher,
            state,
            token_endpoint,
            form,
            &client,
            Some(metadata),
        )
        .await?
        .map_err(|e| token_error(token_endpoint, e))
    }

    /// One request to a token endpoint: client authentication (a fresh assertion each
    /// time), a DPoP proof when DPoP is in use, and one more try with the server's nonce
    /// when it asks for one.
    async fn token_request(
        &self,
        fetcher: &Fetcher,
        state: &mut State,
        endpoint: &str,
        form: Vec<(String, String)>,
        client: &Credentials,
        metadata: Option<&ServerMetadata>,
    ) -> Result<std::result::Result<Tokens, TokenError>> {
        let key = self
            .shared
            .config
            .pre_registered
            .as_ref()
            // The key signs for its own registration only, never for a namesake elsewhere.
            .filter(|p| {
                p.client_id == client.client_id
                    && client.registration == "pre-registered"
                    && p.check_issuer(&client.issuer, true).is_ok()
            })
            .and_then(|p| p.private_key.as_ref());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let auth = client_auth(client, metadata, key)?;
            let mut extra = Vec::new();
            if let Some(dpop) = &state.dpop_key {
                let mut proof = DpopProof::new("POST", endpoint);
                if let Some(nonce) = &state.as_nonce {
                    proof = proof.nonce(nonce);
                }
                extra.push(("dpop", proof.sign(dpop).map_err(jose_error)?));
            }
            let answer = token::post_form(
                fetcher,
                endpoint,
                form.clone(),
                Some(&auth),
                &extra,
                &self.shared.config.limits,
            )
            .await?;
            if let Some(nonce) = answer
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
            {
                state.as_nonce = Some(nonce.to_owned());
            }
            match token::read_tokens(&answer) {
                Err(e)
                    if e.error == "use_dpop_nonce"
                        && e.dpop_nonce.is_some()
                        && state.dpop_key.is_some()
                        && attempt == 1 =>
                {
                    continue;
                }
                other => return Ok(other),
            }
        }
    }

    /// RFC 8693 at the identity provider: the ID token for an identity assertion grant.
    async fn exchange_id_token(
        &self,
        fetcher: &Fetcher,
        ema: &EnterpriseManaged,
        metadata: &ServerMetadata,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<String> {
        let mut form = vec![
            ("grant_type".to_owned(), TOKEN_EXCHANGE.to_owned()),
            (
                "requested_token_type".to_owned(),
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("subject_token".to_owned(), ema.id_token.clone()),
            (
                "subject_token_type".to_owned(),
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            ("audience".to_owned(), metadata.issuer.clone()),
            ("resource".to_owned(), resource.to_owned()),
        ];
        push_scope(&mut form, scope);
        let auth = match &ema.idp_client_secret {
            Some(secret) => ClientAuth::Post {
                client_id: ema.idp_client_id.clone(),
                secret: secret.clone(),
            },
            None => ClientAuth::None {
                client_id: ema.idp_client_id.clone(),
            },
        };
        let answer = token::post_form(
            fetcher,
            &ema.idp_token_endpoint,
            form,
            Some(&auth),
            &[],
            &self.shared.config.limits,
        )
        .await?;
        let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if !answer.status.is_success() {
            return Err(auth_error(format!(
                "the identity provider refused the token exchange (HTTP {}): {}",
                answer.status,
                body["error_description"]
                    .as_str()
                    .or(body["error"].as_str())
                    .unwrap_or("no reason given")
            )));
        }
        body["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| auth_error("the identity provider's token exchange answer has no token"))
    }
}

/// Why the code flow failed: the token endpoint's refusal (which may call for registering
/// again), or anything else.
enum Failed {
    Token(TokenError),
    Other(Error),
}

impl From<Error> for Failed {
    fn from(e: Error) -> Self {
        Failed::Other(e)
    }
}

fn jose_error(e: super::jose::JoseError) -> Error {
    auth_error("a JOSE operation failed").with_source(e)
}

fn token_error(endpoint: &str, e: TokenError) -> Error {
    auth_error(format!("the token endpoint {endpoint} refused the request")).with_source(e)
}

fn push_scope(form: &mut Vec<(String, String)>, scope: Option<&str>) {
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        form.push(("scope".to_owned(), scope.to_owned()));
    }
}

fn without_offline_access(scope: &str) -> String {
    scope
        .split_whitespace()
        .filter(|s| *s != "offline_access")
        .collect::<Vec<_>>()
        .join(" ")
}

/// How the client authenticates at the token endpoint: the registered method, else the
/// best the server supports for what the client has.
fn client_auth(
    client: &Credentials,
    metadata: Option<&ServerMetadata>,
    key: Option<&SigningKey>,
) -> Result<ClientAuth> {
    let supported = metadata
        .and_then(|m| m.token_endpoint_auth_methods_supported.as_deref())
        .unwrap_or(&[]);
    let method = match (&client.token_endpoint_auth_method, &client.client_secret) {
        (Some(m), _) => m.as_str(),
        (None, _) if key.is_some() => "private_key_jwt",
        (None, Some(_)) => {
            if supported.is_empty() || supported.iter().any(|m| m == "client_secret_basic") {
                "client_secret_basic"
            } else if supported.iter().any(|m| m == "client_secret_post") {
                "client_secret_post"
            } else {
                "client_secret_basic"
            }
        }
        (None, None) => "none",
    };
    let secret = || {
        client
            .client_secret
            .clone()
            .ok_or_else(|| auth_error(format!("{method} needs a client secret, and there is none")))
    };
    Ok(match method {
        "none" => ClientAuth::None {
            client_id: client.client_id.clone(),
        },
        "client_secret_basic" => ClientAuth::Basic {
            client_id: client.client_id.clone(),
            secret: secret()?,
        },
        "client_secret_post" => ClientAuth::Post {
            client_id: client.client_id.clone(),
            secret: secret()?,
        },
        "private_key_jwt" => {
            let key = key.ok_or_else(|| {
                auth_error("private_key_jwt needs a key (PreRegistered::private_key)")
            })?;
            // The audience is the authorization server's issuer identifier.
            let audience = metadata.map_or(client.issuer.as_str(), |m| m.issuer.as_str());
            let assertion = client_assertion(key, &client.client_id, audience, ASSERTION_LIFETIME)
                .map_err(jose_error)?;
            ClientAuth::Assertion {
                client_id: client.client_id.clone(),
                assertion,
            }
        }
        other => {
            return Err(auth_error(format!(
                "the token endpoint authentication method {other:?} is not supported"
            )));
        }
    })
}

impl Authorizer for OAuth {
    fn authorize<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        request: &'a mut Request<Full<Bytes>>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.authorize_request(fetcher, request))
    }

    fn challenge<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        challenge: Challenge<'a>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.answer(fetcher, challenge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_servers_must_be_https_unless_both_are_on_this_machine() {
        let local: http::Uri = "http://127.0.0.1:3000/mcp".parse().unwrap();
        let remote: http::Uri = "https://mcp.example.com/mcp".parse().unwrap();
        let strict = OAuth::builder().build();
        assert!(
            strict
                .check_url("https://as.example.com/token", &remote)
                .is_ok()
        );
        for url in [
            "http://127.0.0.1:8080/token",
            "http://localhost/token",
            "http://[::1]:9/token",
        ] {
            assert!(strict.check_url(url, &local).is_ok(), "{url}");
            assert!(
                strict.check_url(url, &remote).unwrap_err().is_auth(),
                "{url}"
            );
        }
        assert!(
            strict
                .check_url("http://as.example.com/token", &remote)
                .unwrap_err()
                .is_auth()
        );
        assert!(strict.check_url("ftp://as.example.com/", &remote).is_err());
        let lax = OAuth::builder().allow_http(true).build();
        assert!(
            lax.check_url("http://as.example.com/token", &remote)
                .is_ok()
        );
        // Plain HTTP allowed is not every host allowed.
        assert!(
            lax.check_url("http://127.0.0.1:8080/token", &remote)
                .is_err()
        );
    }

    #[test]
    fn challenge_metadata_stays_on_the_endpoint_origin_unless_allowed() {
        let endpoint: http::Uri = "https://mcp.example.com/mcp".parse().unwrap();
        let strict = OAuth::builder().build();
        assert!(
            strict
                .check_metadata_url("https://MCP.example.com:443/.well-known/x", &endpoint)
                .is_ok()
        );
        let err = strict
            .check_metadata_url("https://meta.example.com/prm", &endpoint)
            .unwrap_err();
        assert!(err.to_string().contains("another origin"), "{err}");
        let lax = OAuth::builder()
            .cross_origin_resource_metadata(true)
            .build();
        assert!(
            lax.check_metadata_url("https://meta.example.com/prm", &endpoint)
                .is_ok()
        );
        assert!(
            lax.check_metadata_url("http://meta.example.com/prm", &endpoint)
                .is_err()
        );
        assert!(
            lax.check_metadata_url("https://169.254.169.254/prm", &endpoint)
                .is_err()
        );
    }

    #[test]
    fn scope_unions_keep_order_and_drop_duplicates() {
        assert_eq!(
            union(Some("mcp:basic"), Some("mcp:write mcp:basic")).as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(union(None, None), None);
        assert_eq!(without_offline_access("a offline_access b"), "a b");
    }

    #[test]
    fn client_authentication_follows_the_registration_then_the_server() {
        let public = Credentials {
            client_id: "p".into(),
            ..Credentials::default()
        };
        assert!(matches!(
            client_auth(&public, None, None).unwrap(),
            ClientAuth::None { .. }
        ));
        let confidential = Credentials {
            client_id: "c".into(),
            client_secret: Some("s".into()),
            ..Credentials::default()
        };
        assert!(matches!(
            client_auth(&confidential, None, None).unwrap(),
            ClientAuth::Basic { .. }
        ));
        let post_only = ServerMetadata {
            token_endpoint_auth_methods_supported: Some(vec!["client_secret_post".into()]),
            ..ServerMetadata::default()
        };
        assert!(matches!(
            client_auth(&confidential, Some(&post_only), None).unwrap(),
            ClientAuth::Post { .. }
        ));
        let odd = Credentials {
            token_endpoint_auth_method: Some("tls_client_auth".into()),
            ..confidential
        };
        assert!(client_auth(&odd, None, None).unwrap_err().is_auth());
    }
}
