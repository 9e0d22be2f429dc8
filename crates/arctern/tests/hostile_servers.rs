//! The OAuth client against hostile MCP servers and authorization servers on 127.0.0.1
//! (issue 30, findings 1 and 2): every request each server receives is recorded, and the
//! tests check what never arrives — a pre-registered secret, key assertion or workload token
//! at an authorization server the client was not registered with, a fetch of a URL the
//! server chose on another origin or inside the network, a registration before the person's
//! step said it can go on. Each server stops with its test.

#![cfg(all(feature = "auth", feature = "client", feature = "http"))]

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use arctern::auth::client::{
    AuthorizationResponse, AuthorizationStep, EnterpriseManaged, Grant, Headless, HostPolicy,
    OAuth, OAuthBuilder, PreRegistered,
};
use arctern::auth::jose::{Algorithm, SigningKey};
use arctern::client::{Client, HttpTransport};
use arctern::transport::http::client::{Fetcher, Pool, PoolBody};
use base64::Engine as _;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt as _, Either, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Bound on every connection attempt, so that a broken client fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);

const CLIENT_ID: &str = "prod-client";
const SECRET: &str = "TOP-SECRET-FOR-REAL-AS";
const WORKLOAD_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl";

/// One request as a server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    authorization: Option<String>,
    body: String,
}

impl Seen {
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// Whether it carries anything of the pre-registered identity but its id.
    fn leaks(&self) -> bool {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{SECRET}"));
        self.authorization
            .as_deref()
            .is_some_and(|a| a.contains(&basic))
            || self.body.contains(SECRET)
            || self.body.contains("client_assertion")
            || self.body.contains(WORKLOAD_JWT)
    }
}

type Respond = dyn Fn(&Seen, SocketAddr) -> Response<Full<Bytes>> + Send + Sync;

/// A server on 127.0.0.1 that records every request and answers with `respond`.
struct Server {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(
        respond: impl Fn(&Seen, SocketAddr) -> Response<Full<Bytes>> + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let respond: Arc<Respond> = Arc::new(respond);
        let task = tokio::spawn({
            let log = log.clone();
            async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let (log, respond) = (log.clone(), respond.clone());
                    tokio::spawn(async move {
                        let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let (log, respond) = (log.clone(), respond.clone());
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = Limited::new(body, 1 << 20)
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let seen = Seen {
                                    method: parts.method.to_string(),
                                    target: parts
                                        .uri
                                        .path_and_query()
                                        .map(|p| p.to_string())
                                        .unwrap_or_default(),
                                    authorization: parts
                                        .headers
                                        .get("authorization")
                                        .and_then(|v| v.to_str().ok())
                                        .map(str::to_owned),
                                    body: String::from_utf8_lossy(&body).into_owned(),
                                };
                                let response = respond(&seen, addr);
                                log.lock().unwrap().push(seen);
                                Ok::<_, Infallible>(response)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), handler)
                            .await;
                    });
                }
            }
        });
        Server { addr, log, task }
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

fn json_response(value: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap()
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// An MCP server that wants a token for everything, and whose protected resource metadata
/// names `servers` as its authorization servers. `public` is the origin clients use for it
/// (its own loopback address when `None`).
async fn mcp_naming(servers: Vec<String>, public: Option<String>) -> Server {
    Server::start(move |seen, addr| {
        let origin = public.clone().unwrap_or_else(|| format!("http://{addr}"));
        match seen.path() {
            "/mcp" => Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header(
                    "www-authenticate",
                    format!(
                        r#"Bearer resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp", scope="mcp""#
                    ),
                )
                .body(Full::new(Bytes::new()))
                .unwrap(),
            "/.well-known/oauth-protected-resource/mcp" => json_response(json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": servers,
            })),
            _ => status(StatusCode::NOT_FOUND),
        }
    })
    .await
}

/// Authorization server metadata for `issuer`, with a registration endpoint at
/// `registration` (its own when `None`).
fn as_metadata(issuer: &str, registration: Option<&str>) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": registration.map_or_else(|| format!("{issuer}/register"), str::to_owned),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "private_key_jwt"],
        "grant_types_supported": ["authorization_code", "client_credentials", JWT_BEARER],
        "authorization_response_iss_parameter_supported": true,
    })
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// An authorization server that approves everything at once (its `/authorize` redirects
/// with a code and the right `iss`) and issues a token to whoever asks.
async fn eager_authorization_server(registration: Option<String>) -> Server {
    Server::start(move |seen, addr| {
        let issuer = format!("http://{addr}");
        match (seen.method.as_str(), seen.path()) {
            (_, "/.well-known/oauth-authorization-server") => {
                json_response(as_metadata(&issuer, registration.as_deref()))
            }
            (_, "/authorize") => {
                let query: HashMap<String, String> =
                    form_urlencoded::parse(seen.query().as_bytes())
                        .into_owned()
                        .collect();
                let mut location = query.get("redirect_uri").cloned().unwrap_or_default();
                location.push_str(&format!(
                    "?code=code-1&state={}&iss={}",
                    query.get("state").cloned().unwrap_or_default(),
                    form_urlencoded::byte_serialize(issuer.as_bytes()).collect::<String>()
                ));
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header("location", location)
                    .body(Full::new(Bytes::new()))
                    .unwrap()
            }
            ("POST", "/token") => json_response(json!({
                "access_token": "issued-token",
                "token_type": "Bearer",
                "expires_in": 3600,
            })),
            ("POST", "/register") => Response::builder()
                .status(StatusCode::CREATED)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(
                    json!({"client_id": "registered-client"}).to_string(),
                )))
                .unwrap(),
            _ => status(StatusCode::NOT_FOUND),
        }
    })
    .await
}

/// An identity provider for enterprise-managed authorization that exchanges any ID token.
async fn identity_provider() -> Server {
    Server::start(|_, _| {
        json_response(json!({
            "access_token": "id-jag",
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        }))
    })
    .await
}

fn pinned(issuer: &str) -> PreRegistered {
    PreRegistered::new(CLIENT_ID, issuer)
}

fn base(grant: Grant) -> OAuthBuilder {
    OAuth::builder()
        .client_name("hostile-test")
        .step(Headless::new("http://127.0.0.1:9/callback"))
        .grant(grant)
}

async fn connect_with(transport: HttpTransport) -> arctern::Result<Client> {
    let connecting = Client::builder()
        .request_timeout(PATIENCE)
        .connect_with(transport);
    tokio::time::timeout(PATIENCE, connecting)
        .await
        .expect("the client neither connected nor failed in time")
}

async fn connect(url: &str, oauth: OAuth) -> arctern::Result<Client> {
    connect_with(HttpTransport::builder(url).authorizer(oauth).build()?).await
}

/// Every way a pre-registered identity authenticates, each with the grant that uses it.
fn identities(real: &str, idp: &str) -> Vec<(&'static str, OAuthBuilder)> {
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    vec![
        (
            "code flow, client_secret_basic",
            base(Grant::AuthorizationCode).pre_registered(pinned(real).secret(SECRET)),
        ),
        (
            "client credentials, client_secret_basic",
            base(Grant::ClientCredentials).pre_registered(pinned(real).secret(SECRET)),
        ),
        (
            "client credentials, private_key_jwt",
            base(Grant::ClientCredentials).pre_registered(pinned(real).private_key(key)),
        ),
        (
            "JWT bearer (workload identity)",
            base(Grant::JwtBearer {
                assertion: WORKLOAD_JWT.into(),
            })
            .pre_registered(pinned(real)),
        ),
        (
            "enterprise-managed",
            base(Grant::EnterpriseManaged(EnterpriseManaged::new(
                format!("{idp}/token"),
                "idp-client",
                "an-id-token",
            )))
            .pre_registered(pinned(real).secret(SECRET)),
        ),
    ]
}

#[tokio::test]
async fn a_pinned_identity_never_reaches_an_authorization_server_the_server_names() {
    // The application's real authorization server: nothing may reach it either (the MCP
    // server does not name it).
    let real = Server::start(|_, _| status(StatusCode::NOT_FOUND)).await;
    let idp = identity_provider().await;
    for (what, oauth) in identities(&real.origin(), &idp.origin()) {
        let evil = eager_authorization_server(None).await;
        let mcp = mcp_naming(vec![evil.origin()], None).await;
        let err = connect(&format!("{}/mcp", mcp.origin()), oauth.build())
            .await
            .expect_err(what);
        assert!(err.is_auth(), "{what}: {err:?}");
        let message = err.to_string();
        assert!(
            message.contains(&real.origin()) && message.contains(&evil.origin()),
            "{what}: the error names both issuers: {message}"
        );
        let seen = evil.seen();
        assert!(
            seen.is_empty(),
            "{what}: the named authorization server was contacted: {seen:#?}"
        );
    }
    assert!(real.seen().is_empty(), "{:#?}", real.seen());
    assert!(
        idp.seen().is_empty(),
        "no ID token is exchanged for another authorization server: {:#?}",
        idp.seen()
    );
}

#[tokio::test]
async fn the_pinned_authorization_server_is_picked_and_gets_the_secret() {
    // The control of the test above: with the pin matching one of the servers named (the
    // second), the token request carries the secret there and nowhere else.
    let decoy = eager_authorization_server(None).await;
    let real = eager_authorization_server(None).await;
    let mcp = mcp_naming(vec![decoy.origin(), real.origin()], None).await;
    for grant in [Grant::ClientCredentials, Grant::AuthorizationCode] {
        let oauth = base(grant)
            .pre_registered(pinned(&real.origin()).secret(SECRET))
            .max_authorizations(1)
            .build();
        // The MCP server refuses every token, so connecting fails after the grant.
        let _ = connect(&format!("{}/mcp", mcp.origin()), oauth).await;
    }
    let tokens: Vec<Seen> = real
        .seen()
        .into_iter()
        .filter(|s| s.path() == "/token")
        .collect();
    assert_eq!(tokens.len(), 2, "{tokens:#?}");
    assert!(tokens.iter().all(Seen::leaks), "{tokens:#?}");
    assert!(decoy.seen().is_empty(), "{:#?}", decoy.seen());
}

#[tokio::test]
async fn a_server_without_metadata_is_not_given_a_pre_registered_secret() {
    // A 2025-03-26 server: no protected resource metadata, so its origin would be the
    // authorization server, with the default endpoints (`/token` answers).
    let legacy = Server::start(|seen, _| match seen.path() {
        "/mcp" => Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", "Bearer")
            .body(Full::new(Bytes::new()))
            .unwrap(),
        "/token" => json_response(json!({"access_token": "t", "token_type": "Bearer"})),
        _ => status(StatusCode::NOT_FOUND),
    })
    .await;
    let url = format!("{}/mcp", legacy.origin());
    for (what, client) in [
        ("pinned to another issuer", pinned("https://as.example.com")),
        ("unpinned", PreRegistered::unpinned(CLIENT_ID)),
    ] {
        let oauth = base(Grant::ClientCredentials)
            .pre_registered(client.secret(SECRET))
            .build();
        let err = connect(&url, oauth).await.expect_err(what);
        assert!(err.is_auth(), "{what}: {err:?}");
    }
    let seen = legacy.seen();
    assert!(
        seen.iter().all(|s| s.path() != "/token" && !s.leaks()),
        "{seen:#?}"
    );
    // With the pin on the server's own origin, the secret goes there.
    let oauth = base(Grant::ClientCredentials)
        .pre_registered(pinned(&legacy.origin()).secret(SECRET))
        .max_authorizations(1)
        .build();
    let _ = connect(&url, oauth).await;
    assert!(
        legacy
            .seen()
            .iter()
            .any(|s| s.path() == "/token" && s.leaks()),
        "{:#?}",
        legacy.seen()
    );
}

#[tokio::test]
async fn metadata_the_challenge_names_on_another_origin_is_not_fetched() {
    let internal = Server::start(|_, _| json_response(json!({}))).await;
    let target = format!("{}/internal/admin?token=1", internal.origin());
    let mcp = Server::start(move |_, _| {
        Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(
                "www-authenticate",
                format!(r#"Bearer resource_metadata="{target}", scope="mcp evil-scope""#),
            )
            .body(Full::new(Bytes::new()))
            .unwrap()
    })
    .await;
    let err = connect(
        &format!("{}/mcp", mcp.origin()),
        base(Grant::AuthorizationCode).build(),
    )
    .await
    .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(err.to_string().contains("origin"), "{err}");
    assert!(internal.seen().is_empty(), "{:#?}", internal.seen());
}

/// A person's step with no one to ask (no terminal): it says so before anything happens.
struct NoTerminal;

impl AuthorizationStep for NoTerminal {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".into()
    }

    fn ready(&self) -> arctern::Result<()> {
        Err(arctern::Error::new(
            arctern::ErrorKind::Auth,
            "no terminal to ask on",
        ))
    }

    fn authorize<'a>(
        &'a self,
        _: &'a Fetcher,
        _: &'a str,
    ) -> BoxFuture<'a, arctern::Result<AuthorizationResponse>> {
        Box::pin(async { Err(self.ready().unwrap_err()) })
    }
}

#[tokio::test]
async fn a_step_that_cannot_go_on_stops_the_client_before_discovery_and_registration() {
    // The review's attack: the registration endpoint is an "internal" admin URL.
    let internal = Server::start(|_, _| json_response(json!({"client_id": "x"}))).await;
    let auth = eager_authorization_server(Some(format!(
        "{}/admin/delete-everything",
        internal.origin()
    )))
    .await;
    let mcp = mcp_naming(vec![auth.origin()], None).await;
    let oauth = OAuth::builder().step(NoTerminal).build();
    let err = connect(&format!("{}/mcp", mcp.origin()), oauth)
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(err.to_string().contains("no terminal"), "{err}");
    assert!(internal.seen().is_empty(), "{:#?}", internal.seen());
    assert!(auth.seen().is_empty(), "{:#?}", auth.seen());
    assert!(
        mcp.seen().iter().all(|s| s.path() == "/mcp"),
        "{:#?}",
        mcp.seen()
    );
}

/// The network of the remote-server tests: requests to the hosts in `routes` go to servers
/// on 127.0.0.1 (HTTPS becoming plain HTTP there); every other request is answered `502`
/// here, without any connection. Every URL asked for is recorded.
#[derive(Clone)]
struct Network {
    routes: Arc<HashMap<String, SocketAddr>>,
    asked: Arc<Mutex<Vec<String>>>,
    pool: Pool,
}

impl Network {
    fn new(routes: impl IntoIterator<Item = (String, SocketAddr)>) -> Self {
        Network {
            routes: Arc::new(routes.into_iter().collect()),
            asked: Arc::default(),
            pool: Pool::new(),
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl tower_service::Service<Request<Full<Bytes>>> for Network {
    type Response = Response<Either<PoolBody, Full<Bytes>>>;
    type Error = arctern::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Full<Bytes>>) -> Self::Future {
        let uri = request.uri().clone();
        self.asked.lock().unwrap().push(uri.to_string());
        let authority = uri
            .authority()
            .map(|a| {
                let port = a.port_u16().unwrap_or(match uri.scheme_str() {
                    Some("https") => 443,
                    _ => 80,
                });
                format!("{}:{port}", a.host())
            })
            .unwrap_or_default();
        let route = self.routes.get(&authority).copied();
        let pool = self.pool.clone();
        Box::pin(async move {
            let Some(addr) = route else {
                return Ok(Response::builder()
                    .status(StatusCode::BAD_GATEWAY)
                    .body(Either::Right(Full::new(Bytes::new())))
                    .unwrap());
            };
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            *request.uri_mut() = format!("http://{addr}{path}").parse::<Uri>().unwrap();
            let response = pool.send(request).await?;
            Ok(response.map(Either::Left))
        })
    }
}

#[tokio::test]
async fn a_remote_server_cannot_send_the_client_inside_the_network() {
    let internal =
        Server::start(|_, addr| json_response(as_metadata(&format!("http://{addr}"), None))).await;
    let loopback_http = internal.origin();
    let loopback_https = format!("https://{}", internal.addr);
    for named in [
        loopback_http.as_str(),
        loopback_https.as_str(),
        "https://localhost",
        "https://10.0.0.7",
        "https://192.168.1.1",
        "https://169.254.169.254",
        "https://[fd00:ec2::254]",
        "https://[::ffff:127.0.0.1]",
        "https://2130706433",
        "https://0x7f.1",
        "https://metadata.google.internal",
    ] {
        let mcp = mcp_naming(
            vec![named.to_owned()],
            Some("https://mcp.example.com".into()),
        )
        .await;
        let network = Network::new([("mcp.example.com:443".to_owned(), mcp.addr)]);
        let transport = HttpTransport::builder("https://mcp.example.com/mcp")
            .service(network.clone())
            .authorizer(base(Grant::AuthorizationCode).build())
            .build()
            .unwrap();
        let err = connect_with(transport).await.expect_err(named);
        assert!(err.is_auth(), "{named}: {err:?}");
        let inside: Vec<String> = network
            .asked()
            .into_iter()
            .filter(|u| !u.starts_with("https://mcp.example.com/"))
            .collect();
        assert!(inside.is_empty(), "{named}: {inside:?}");
    }
    assert!(internal.seen().is_empty(), "{:#?}", internal.seen());

    // The policy is the application's to change: with every host allowed (and plain HTTP),
    // the same server reaches the loopback authorization server.
    let mcp = mcp_naming(
        vec![loopback_http.clone()],
        Some("https://mcp.example.com".into()),
    )
    .await;
    let network = Network::new([
        ("mcp.example.com:443".to_owned(), mcp.addr),
        (internal.addr.to_string(), internal.addr),
    ]);
    let oauth = base(Grant::AuthorizationCode)
        .host_policy(HostPolicy::allow_all())
        .allow_http(true)
        .max_authorizations(1)
        .build();
    let transport = HttpTransport::builder("https://mcp.example.com/mcp")
        .service(network.clone())
        .authorizer(oauth)
        .build()
        .unwrap();
    let _ = connect_with(transport).await;
    assert!(
        internal
            .seen()
            .iter()
            .any(|s| s.path() == "/.well-known/oauth-authorization-server"),
        "{:?}",
        network.asked()
    );
}

#[tokio::test]
async fn a_public_authorization_server_cannot_point_its_endpoints_inside() {
    // The authorization server is public (HTTPS, a public name); its metadata's
    // registration endpoint is a private address.
    let auth = Server::start(|seen, _| match seen.path() {
        "/.well-known/oauth-authorization-server" => json_response(as_metadata(
            "https://as.example.com",
            Some("https://10.0.0.7/admin/delete-everything"),
        )),
        _ => status(StatusCode::NOT_FOUND),
    })
    .await;
    let mcp = mcp_naming(
        vec!["https://as.example.com".into()],
        Some("https://mcp.example.com".into()),
    )
    .await;
    let network = Network::new([
        ("mcp.example.com:443".to_owned(), mcp.addr),
        ("as.example.com:443".to_owned(), auth.addr),
    ]);
    let transport = HttpTransport::builder("https://mcp.example.com/mcp")
        .service(network.clone())
        .authorizer(base(Grant::AuthorizationCode).build())
        .build()
        .unwrap();
    let err = connect_with(transport).await.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(err.to_string().contains("10.0.0.7"), "{err}");
    assert!(
        network.asked().iter().all(|u| !u.contains("10.0.0.7")),
        "{:?}",
        network.asked()
    );
    // Discovery did reach the public authorization server: the refusal is the policy's.
    assert!(!auth.seen().is_empty());
}
