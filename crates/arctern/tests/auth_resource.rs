//! The protected-resource layer over real HTTP on loopback, with the test authorization
//! server: challenges, metadata, token checks (JWT and introspection), JWKS rotation,
//! DPoP, query tokens and CORS.

#![cfg(all(
    feature = "auth",
    feature = "server",
    feature = "http",
    feature = "testing"
))]

use std::net::SocketAddr;
use std::time::Duration;

use arctern::auth::jose::{Algorithm, DpopProof, Jwk, SigningKey, base64url};
use arctern::auth::resource::{Cors, DpopConfig, ProtectedResource, TokenVerifier, VerifiedToken};
use arctern::server::{McpServer, RequestContext};
use arctern::state::ManualClock;
use arctern::testing::TestAuthServer;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

const VERSION: &str = "2026-07-28";

/// An MCP server behind a protected-resource layer, served by axum on 127.0.0.1.
struct Protected {
    addr: SocketAddr,
    resource: String,
    protected: ProtectedResource,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Protected {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn whoami(ctx: RequestContext) -> String {
    let token = ctx.extensions().get::<VerifiedToken>();
    let principal = ctx.principal().map(|p| p.0.clone()).unwrap_or_default();
    format!(
        "{principal}|{}",
        token.map(|t| t.scopes.join(",")).unwrap_or_default()
    )
}

/// Serves a protected MCP server; `configure` builds the resource from its URI.
async fn serve(configure: impl FnOnce(&str) -> ProtectedResource) -> Protected {
    let server = McpServer::new("protected")
        .tool("whoami", "Who is calling.", whoami)
        .build()
        .unwrap();
    serve_server(server, configure).await
}

/// Serves `server` behind the resource `configure` builds from its URI.
async fn serve_server<H: arctern::server::Handler>(
    server: arctern::server::Server<H>,
    configure: impl FnOnce(&str) -> ProtectedResource,
) -> Protected {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let protected = configure(&resource);
    let [path_based, root] = protected.metadata_paths();
    let app = axum::Router::new()
        .route_service("/mcp", protected.layer().wrap(server.http_service()))
        .route_service(&path_based, protected.metadata_service())
        .route_service(&root, protected.metadata_service());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Protected {
        addr,
        resource,
        protected,
        task,
    }
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn challenges(&self) -> Vec<String> {
        self.headers
            .get_all("www-authenticate")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    /// The text of a `tools/call` result (an SSE or JSON reply).
    fn tool_text(&self) -> String {
        let data = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .next_back()
            .map(str::to_owned)
            .unwrap_or_else(|| self.body.clone());
        let v: Value = serde_json::from_str(&data).unwrap();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, String)],
    body: Bytes,
) -> Reply {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let response = sender
        .send_request(request.body(Full::new(body)).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the body ends")
        .unwrap()
        .to_bytes();
    driver.abort();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn rpc_body(method: &str, params: Value) -> (Bytes, Vec<(&'static str, String)>) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version", VERSION.to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = ["name", "uri"]
        .iter()
        .find_map(|k| params.get(*k).and_then(Value::as_str))
    {
        headers.push(("mcp-name", name.to_owned()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    (Bytes::from(body.to_string()), headers)
}

impl Protected {
    /// `tools/call whoami` with these extra headers.
    async fn call(&self, extra: &[(&'static str, String)]) -> Reply {
        self.call_at("/mcp", extra).await
    }

    async fn call_at(&self, path: &str, extra: &[(&'static str, String)]) -> Reply {
        let (body, mut headers) =
            rpc_body("tools/call", json!({"name": "whoami", "arguments": {}}));
        headers.extend(extra.iter().cloned());
        send(self.addr, Method::POST, path, &headers, body).await
    }

    async fn with_bearer(&self, token: &str) -> Reply {
        self.call(&[("authorization", format!("Bearer {token}"))])
            .await
    }

    async fn get(&self, path: &str) -> Reply {
        send(self.addr, Method::GET, path, &[], Bytes::new()).await
    }

    fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.addr
        )
    }
}

fn assert_invalid_token(reply: &Reply) {
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.body);
    let bearer = &reply.challenges()[0];
    assert!(bearer.starts_with("Bearer "), "{bearer}");
    assert!(bearer.contains(r#"error="invalid_token""#), "{bearer}");
    assert_eq!(reply.json()["error"], "invalid_token");
}

async fn jwt_protected(auth: &TestAuthServer) -> Protected {
    serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .scopes_supported(["mcp:tools", "mcp:admin", "offline_access"])
            .required_scopes(["mcp:tools"])
            .verifier(auth.jwt_verifier(resource).build().unwrap())
            .build()
            .unwrap()
    })
    .await
}

#[tokio::test]
async fn no_token_gets_the_challenge_and_the_metadata_is_public() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;

    let reply = p.call(&[]).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let challenges = reply.challenges();
    assert_eq!(
        challenges[0],
        format!(
            r#"Bearer resource_metadata="{}", scope="mcp:tools""#,
            p.metadata_url()
        )
    );
    assert!(
        challenges[1].starts_with("DPoP algs=\"ES256 ES384 EdDSA PS256 RS256\""),
        "{}",
        challenges[1]
    );
    assert!(
        !challenges.iter().any(|c| c.contains("error=")),
        "no error code without a token"
    );

    // Both well-known URIs serve the same document; offline_access is never advertised.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = p.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.headers["access-control-allow-origin"], "*");
        let m = reply.json();
        assert_eq!(m["resource"], p.resource);
        assert_eq!(m["authorization_servers"], json!([auth.issuer()]));
        assert_eq!(m["scopes_supported"], json!(["mcp:tools", "mcp:admin"]));
        assert_eq!(m["bearer_methods_supported"], json!(["header"]));
        assert_eq!(m["dpop_bound_access_tokens_required"], false);
    }
    assert_eq!(p.metadata_url(), p.protected.metadata_url());
}

#[tokio::test]
async fn a_valid_token_reaches_the_handler_with_its_principal() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let token = auth
        .token()
        .audience(&p.resource)
        .scopes(["mcp:tools", "mcp:admin"])
        .issue();
    let reply = p.with_bearer(&token).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.tool_text(),
        format!("{} test-user|mcp:tools,mcp:admin", auth.issuer())
    );
    // The scheme is case-insensitive.
    let reply = p
        .call(&[("authorization", format!("bearer {token}"))])
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn bad_tokens_get_invalid_token() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let good = || auth.token().audience(&p.resource).scopes(["mcp:tools"]);

    // Wrong audience (another resource, and the resource with a trailing slash).
    assert_invalid_token(
        &p.with_bearer(&good().audience("http://127.0.0.1:1/mcp").issue())
            .await,
    );
    assert_invalid_token(
        &p.with_bearer(&good().audience(format!("{}/", p.resource)).issue())
            .await,
    );
    // Wrong issuer.
    assert_invalid_token(
        &p.with_bearer(&good().issuer("http://evil.example").issue())
            .await,
    );
    // Expired beyond the leeway.
    assert_invalid_token(&p.with_bearer(&good().lifetime_secs(-120).issue()).await);
    // Signed by another key under the server's kid: a bad signature.
    let impostor = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("key-1");
    assert_invalid_token(&p.with_bearer(&good().signed_by(impostor).issue()).await);
    // An unknown kid.
    let stranger = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("stranger");
    let reply = p.with_bearer(&good().signed_by(stranger).issue()).await;
    assert_invalid_token(&reply);
    assert!(
        reply.json()["error_description"]
            .as_str()
            .unwrap()
            .contains("key")
    );
    // alg: none.
    let claims = json!({"iss": auth.issuer(), "sub": "admin", "aud": p.resource, "exp": 4_000_000_000u64, "scope": "mcp:tools"});
    let none = format!(
        "{}.{}.",
        base64url::encode(br#"{"alg":"none","typ":"at+jwt"}"#),
        base64url::encode(claims.to_string())
    );
    assert_invalid_token(&p.with_bearer(&none).await);
    let none_sig = format!("{none}AAAA");
    assert_invalid_token(&p.with_bearer(&none_sig).await);
    // Garbage, and a token that is too large.
    assert_invalid_token(&p.with_bearer("not-a-jwt").await);
    assert_invalid_token(&p.with_bearer(&"a".repeat(20_000)).await);
    // A DPoP proof is not an access token.
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let proof = DpopProof::new("POST", &p.resource).sign(&key).unwrap();
    assert_invalid_token(&p.with_bearer(&proof).await);
}

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    // The authorization server signs with RSA (the RFC 7515 A.2 key).
    let pem = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/jose/rfc7515_a2_rsa.pem"
    ))
    .unwrap();
    let rsa = SigningKey::from_pkcs8_pem(&pem).unwrap().with_kid("rsa-1");
    let public: Jwk = rsa.public_jwk();
    let auth = TestAuthServer::builder()
        .signing_key(rsa)
        .start()
        .await
        .unwrap();
    let p = jwt_protected(&auth).await;
    let real = auth
        .token()
        .audience(&p.resource)
        .scopes(["mcp:tools"])
        .issue();
    assert_eq!(p.with_bearer(&real).await.status, StatusCode::OK);

    let claims = json!({"iss": auth.issuer(), "sub": "admin", "aud": p.resource, "exp": 4_000_000_000u64, "scope": "mcp:tools"});
    let input = format!(
        "{}.{}",
        base64url::encode(br#"{"alg":"HS256","typ":"JWT","kid":"rsa-1"}"#),
        base64url::encode(claims.to_string())
    );
    // Every form of the public key an attacker might use as the HMAC secret.
    for secret in [
        public.to_json().into_bytes(),
        base64url::decode(public.to_value()["n"].as_str().unwrap(), "n").unwrap(),
    ] {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret);
        let tag = ring::hmac::sign(&key, input.as_bytes());
        let forged = format!("{input}.{}", base64url::encode(tag.as_ref()));
        assert_invalid_token(&p.with_bearer(&forged).await);
    }
}

#[tokio::test]
async fn missing_scopes_get_403_naming_them() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let token = auth
        .token()
        .audience(&p.resource)
        .scopes(["mcp:admin"])
        .issue();
    let reply = p.with_bearer(&token).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.challenges()[0],
        format!(
            r#"Bearer resource_metadata="{}", scope="mcp:tools", error="insufficient_scope""#,
            p.metadata_url()
        )
    );
    assert_eq!(reply.json()["error"], "insufficient_scope");
    // The response per-operation middleware uses: every scope needed, never offline_access.
    let response =
        p.protected
            .insufficient_scope_response(&["mcp:tools", "files:write", "offline_access"]);
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(r#"scope="mcp:tools files:write""#),
        "{challenge}"
    );
}

#[tokio::test]
async fn jwks_rotation_is_picked_up_and_refetches_are_rate_limited() {
    let clock = ManualClock::starting_now();
    let auth = TestAuthServer::builder()
        .clock(clock.clone())
        .start()
        .await
        .unwrap();
    let verifier_clock = clock.clone();
    let p = serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(
                auth.jwt_verifier(resource)
                    .jwks_refetch_interval(Duration::from_secs(30))
                    .clock(verifier_clock)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    })
    .await;
    let first = auth.token().audience(&p.resource).issue();
    assert_eq!(p.with_bearer(&first).await.status, StatusCode::OK);
    assert_eq!(p.with_bearer(&first).await.status, StatusCode::OK);
    assert_eq!(auth.jwks_fetches(), 1, "the set is cached");

    // The server rotates; a token under the new kid makes the verifier fetch again.
    clock.advance(Duration::from_secs(31));
    assert_eq!(auth.rotate_key(), "key-2");
    let second = auth.token().audience(&p.resource).issue();
    assert_eq!(p.with_bearer(&second).await.status, StatusCode::OK);
    assert_eq!(auth.jwks_fetches(), 2);
    assert_eq!(
        p.with_bearer(&first).await.status,
        StatusCode::OK,
        "old keys stay valid while published"
    );

    // Made-up key ids within the interval do not reach the authorization server.
    for i in 0..5 {
        let ghost = SigningKey::generate(Algorithm::ES256)
            .unwrap()
            .with_kid(format!("ghost-{i}"));
        assert_invalid_token(
            &p.with_bearer(&auth.token().audience(&p.resource).signed_by(ghost).issue())
                .await,
        );
    }
    assert_eq!(auth.jwks_fetches(), 2, "rate-limited");

    // A rotation right after a refetch is picked up once the interval has passed.
    auth.rotate_key();
    auth.retire_old_keys();
    let third = auth.token().audience(&p.resource).issue();
    assert_invalid_token(&p.with_bearer(&third).await);
    assert_eq!(auth.jwks_fetches(), 2);
    clock.advance(Duration::from_secs(31));
    assert_eq!(p.with_bearer(&third).await.status, StatusCode::OK);
    assert_eq!(auth.jwks_fetches(), 3);
    // Retired keys are gone after the refresh.
    assert_invalid_token(&p.with_bearer(&first).await);
}

#[tokio::test]
async fn jwks_outage_answers_503_not_401() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(
                arctern::auth::resource::JwtVerifier::builder(auth.issuer(), resource)
                    .jwks_uri("http://127.0.0.1:9/jwks")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    })
    .await;
    let token = auth.token().audience(&p.resource).issue();
    let reply = p.with_bearer(&token).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reply.headers["retry-after"], "5");
}

async fn introspection_protected(
    auth: &TestAuthServer,
    clock: &ManualClock,
    ttl: Duration,
) -> Protected {
    let clock = clock.clone();
    serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(
                auth.introspection_verifier(resource)
                    .cache_ttl(ttl)
                    .clock(clock)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    })
    .await
}

#[tokio::test]
async fn introspection_refuses_inactive_tokens_and_caches_within_the_token_lifetime() {
    let clock = ManualClock::starting_now();
    let auth = TestAuthServer::builder()
        .opaque_tokens(true)
        .clock(clock.clone())
        .start()
        .await
        .unwrap();
    let p = introspection_protected(&auth, &clock, Duration::from_secs(300)).await;

    // Unknown (inactive) tokens: 401, never cached.
    assert_invalid_token(&p.with_bearer("opaque-made-up").await);
    assert_invalid_token(&p.with_bearer("opaque-made-up").await);
    assert_eq!(auth.introspections(), 2);

    // A token living 30 s: one introspection, reused, and asked again once it has expired.
    let token = auth.token().audience(&p.resource).lifetime_secs(30).issue();
    assert!(token.starts_with("opaque-"));
    let reply = p.with_bearer(&token).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(auth.introspections(), 3);
    clock.advance(Duration::from_secs(10));
    assert_eq!(p.with_bearer(&token).await.status, StatusCode::OK);
    assert_eq!(auth.introspections(), 3, "cached");
    clock.advance(Duration::from_secs(25));
    assert_invalid_token(&p.with_bearer(&token).await);
    assert_eq!(
        auth.introspections(),
        4,
        "not served from the cache past its exp"
    );

    // Wrong audience.
    let other = auth.token().audience("http://127.0.0.1:1/mcp").issue();
    assert_invalid_token(&p.with_bearer(&other).await);
}

#[tokio::test]
async fn introspection_cache_never_outlives_its_maximum() {
    let clock = ManualClock::starting_now();
    let auth = TestAuthServer::builder()
        .opaque_tokens(true)
        .clock(clock.clone())
        .start()
        .await
        .unwrap();
    let p = introspection_protected(&auth, &clock, Duration::from_secs(60)).await;
    let token = auth.token().audience(&p.resource).issue();
    assert_eq!(p.with_bearer(&token).await.status, StatusCode::OK);
    auth.revoke(&token);
    assert_eq!(
        p.with_bearer(&token).await.status,
        StatusCode::OK,
        "still cached"
    );
    assert_eq!(auth.introspections(), 1);
    clock.advance(Duration::from_secs(61));
    assert_invalid_token(&p.with_bearer(&token).await);
    assert_eq!(auth.introspections(), 2);
}

async fn dpop_protected(auth: &TestAuthServer, config: DpopConfig) -> Protected {
    serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(auth.jwt_verifier(resource).build().unwrap())
            .dpop(config)
            .build()
            .unwrap()
    })
    .await
}

fn dpop_headers(token: &str, proof: String) -> [(&'static str, String); 2] {
    [("authorization", format!("DPoP {token}")), ("dpop", proof)]
}

#[tokio::test]
async fn dpop_bound_tokens() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = dpop_protected(&auth, DpopConfig::new()).await;
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let token = auth.token().audience(&p.resource).dpop_bound(&key).issue();
    let proof = || {
        DpopProof::new("POST", &p.resource)
            .access_token(&token)
            .sign(&key)
            .unwrap()
    };

    let first = proof();
    let reply = p.call(&dpop_headers(&token, first.clone())).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // Replayed.
    let reply = p.call(&dpop_headers(&token, first)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(
        reply
            .challenges()
            .iter()
            .any(|c| c.starts_with("DPoP ") && c.contains(r#"error="invalid_dpop_proof""#)),
        "{:?}",
        reply.challenges()
    );
    // A fresh proof works again.
    assert_eq!(
        p.call(&dpop_headers(&token, proof())).await.status,
        StatusCode::OK
    );
    // Signed by another key than the token is bound to.
    let other = SigningKey::generate(Algorithm::ES256).unwrap();
    let wrong_key = DpopProof::new("POST", &p.resource)
        .access_token(&token)
        .sign(&other)
        .unwrap();
    assert_eq!(
        p.call(&dpop_headers(&token, wrong_key)).await.json()["error"],
        "invalid_dpop_proof"
    );
    // For another method, URL, or token; without ath; none at all.
    let cases = [
        DpopProof::new("GET", &p.resource)
            .access_token(&token)
            .sign(&key)
            .unwrap(),
        DpopProof::new("POST", &format!("http://{}/other", p.addr))
            .access_token(&token)
            .sign(&key)
            .unwrap(),
        DpopProof::new("POST", &p.resource)
            .access_token("another")
            .sign(&key)
            .unwrap(),
        DpopProof::new("POST", &p.resource).sign(&key).unwrap(),
        DpopProof::new("POST", &p.resource)
            .access_token(&token)
            .issued_at(1_000)
            .sign(&key)
            .unwrap(),
    ];
    for proof in cases {
        assert_eq!(
            p.call(&dpop_headers(&token, proof)).await.json()["error"],
            "invalid_dpop_proof"
        );
    }
    let reply = p.call(&[("authorization", format!("DPoP {token}"))]).await;
    assert_eq!(reply.json()["error"], "invalid_dpop_proof");
    // A query string does not change htu.
    let with_query = DpopProof::new("POST", &format!("{}?x=1", p.resource))
        .access_token(&token)
        .sign(&key)
        .unwrap();
    assert_eq!(
        p.call_at("/mcp?x=1", &dpop_headers(&token, with_query))
            .await
            .status,
        StatusCode::OK
    );
    // A bound token sent as a bearer token.
    assert_invalid_token(&p.with_bearer(&token).await);
    // An unbound token sent with the DPoP scheme.
    let bearer = auth.token().audience(&p.resource).issue();
    let proof = DpopProof::new("POST", &p.resource)
        .access_token(&bearer)
        .sign(&key)
        .unwrap();
    assert_eq!(
        p.call(&dpop_headers(&bearer, proof)).await.json()["error"],
        "invalid_token"
    );
    assert_eq!(p.with_bearer(&bearer).await.status, StatusCode::OK);
}

#[tokio::test]
async fn dpop_nonces_and_required_dpop() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = dpop_protected(&auth, DpopConfig::new().nonces(true).required(true)).await;
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let token = auth.token().audience(&p.resource).dpop_bound(&key).issue();

    let bare = DpopProof::new("POST", &p.resource)
        .access_token(&token)
        .sign(&key)
        .unwrap();
    let reply = p.call(&dpop_headers(&token, bare)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.json()["error"], "use_dpop_nonce");
    let challenges = reply.challenges();
    assert_eq!(challenges.len(), 1, "only DPoP is offered: {challenges:?}");
    assert!(challenges[0].contains(r#"error="use_dpop_nonce""#));
    let nonce = reply.headers["dpop-nonce"].to_str().unwrap().to_owned();

    let proof = DpopProof::new("POST", &p.resource)
        .access_token(&token)
        .nonce(&nonce)
        .sign(&key)
        .unwrap();
    let reply = p.call(&dpop_headers(&token, proof)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(reply.headers.contains_key("dpop-nonce"));
    let forged = DpopProof::new("POST", &p.resource)
        .access_token(&token)
        .nonce("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .sign(&key)
        .unwrap();
    assert_eq!(
        p.call(&dpop_headers(&token, forged)).await.json()["error"],
        "use_dpop_nonce"
    );
    // Bearer tokens are refused when DPoP is required.
    let bearer = auth.token().audience(&p.resource).issue();
    let reply = p.with_bearer(&bearer).await;
    assert_invalid_dpop_challenge(&reply);
    let m = p
        .get("/.well-known/oauth-protected-resource/mcp")
        .await
        .json();
    assert_eq!(m["dpop_bound_access_tokens_required"], true);
}

fn assert_invalid_dpop_challenge(reply: &Reply) {
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.json()["error"], "invalid_token");
    assert!(reply.challenges().iter().all(|c| c.starts_with("DPoP ")));
}

#[tokio::test]
async fn tokens_in_the_query_string_are_refused() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let token = auth
        .token()
        .audience(&p.resource)
        .scopes(["mcp:tools"])
        .issue();
    // Even with a valid header: the token in the URL has leaked into logs already.
    let reply = p
        .call_at(
            &format!("/mcp?access_token={token}"),
            &[("authorization", format!("Bearer {token}"))],
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.json()["error"], "invalid_request");
    assert!(reply.challenges()[0].contains(r#"error="invalid_request""#));
    // Two Authorization headers: 400 as well.
    let (body, mut headers) = rpc_body("tools/list", json!({}));
    headers.push(("authorization", format!("Bearer {token}")));
    headers.push(("authorization", format!("Bearer {token}")));
    assert_eq!(
        send(p.addr, Method::POST, "/mcp", &headers, body)
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn browsers_can_preflight_and_read_the_challenge() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let origin = ("origin", "https://app.example".to_owned());
    let reply = send(
        p.addr,
        Method::OPTIONS,
        "/mcp",
        &[
            origin.clone(),
            ("access-control-request-method", "POST".to_owned()),
            (
                "access-control-request-headers",
                "authorization, content-type, mcp-protocol-version".to_owned(),
            ),
        ],
        Bytes::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert_eq!(reply.headers["access-control-allow-origin"], "*");
    assert!(
        reply.headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    assert!(
        reply.headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );

    let reply = p.call(std::slice::from_ref(&origin)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.headers["access-control-allow-origin"], "*");
    assert!(
        reply.headers["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("WWW-Authenticate")
    );

    // With a list of origins, others get no CORS headers.
    let listed = serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(auth.jwt_verifier(resource).build().unwrap())
            .cors(Cors::allow_origins(["https://app.example"]))
            .build()
            .unwrap()
    })
    .await;
    let reply = listed.call(&[origin]).await;
    assert_eq!(
        reply.headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(reply.headers["vary"], "Origin");
    let reply = listed
        .call(&[("origin", "https://evil.example".to_owned())])
        .await;
    assert!(!reply.headers.contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn access_tokens_must_be_typed_at_jwt_unless_opted_out() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = jwt_protected(&auth).await;
    let token = |typ: Option<&str>| {
        auth.token()
            .audience(&p.resource)
            .scopes(["mcp:tools"])
            .typ(typ)
            .issue()
    };
    assert_eq!(
        p.with_bearer(&token(Some("at+jwt"))).await.status,
        StatusCode::OK
    );
    let reply = p.with_bearer(&token(Some("application/at+jwt"))).await;
    assert_eq!(reply.status, StatusCode::OK);
    // An ID token or any other JWT the server signs for this audience is not an access
    // token (RFC 9068 §4).
    for typ in [Some("JWT"), None, Some("id_token+jwt")] {
        let reply = p.with_bearer(&token(typ)).await;
        assert_invalid_token(&reply);
        assert!(
            reply.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("type")
        );
    }

    // The explicit opt-out, for servers that write `JWT` or nothing.
    let lax = serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .verifier(
                auth.jwt_verifier(resource)
                    .accept_any_type()
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    })
    .await;
    for typ in [Some("JWT"), None, Some("at+jwt")] {
        let token = auth.token().audience(&lax.resource).typ(typ).issue();
        assert_eq!(lax.with_bearer(&token).await.status, StatusCode::OK);
    }
    // A DPoP proof is never an access token, opt-out or not.
    let token = auth
        .token()
        .audience(&lax.resource)
        .typ(Some("dpop+jwt"))
        .issue();
    assert_invalid_token(&lax.with_bearer(&token).await);
}

#[test]
fn plain_http_key_and_introspection_endpoints_need_loopback_or_an_explicit_allowance() {
    use arctern::ErrorKind;
    use arctern::auth::resource::{FetchConfig, IntrospectionVerifier, JwtVerifier};
    let resource = "https://mcp.example.com/mcp";
    let jwt = |uri: &str, fetch: FetchConfig| {
        JwtVerifier::builder("https://auth.example.com", resource)
            .jwks_uri(uri)
            .fetch_config(fetch)
            .build()
            .map(drop)
    };
    let introspection = |uri: &str, fetch: FetchConfig| {
        IntrospectionVerifier::builder(uri, resource)
            .fetch_config(fetch)
            .build()
            .map(drop)
    };
    for refused in [
        "http://auth.example.com/jwks",
        "http://10.0.0.5/jwks",
        "http://localhost.example.com/jwks",
    ] {
        let error = jwt(refused, FetchConfig::new()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.to_string().contains("https"), "{error}");
        let error = introspection(refused, FetchConfig::new()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(jwt(refused, FetchConfig::new().allow_http(true)).is_ok());
        assert!(introspection(refused, FetchConfig::new().allow_http(true)).is_ok());
    }
    for allowed in [
        "https://auth.example.com/jwks",
        "http://127.0.0.1:8080/jwks",
        "http://localhost/jwks",
        "http://[::1]:9000/jwks",
    ] {
        assert!(jwt(allowed, FetchConfig::new()).is_ok(), "{allowed}");
        assert!(
            introspection(allowed, FetchConfig::new()).is_ok(),
            "{allowed}"
        );
    }
    assert!(
        jwt(
            "ftp://auth.example.com/jwks",
            FetchConfig::new().allow_http(true)
        )
        .is_err()
    );
}

/// A verifier that accepts one token and says what it was told to, audience included:
/// the layer must not trust it on the audience.
struct Careless {
    token: &'static str,
    aud: Option<arctern::auth::jose::Audience>,
}

impl TokenVerifier for Careless {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<VerifiedToken, arctern::auth::resource::AuthError>>
    {
        Box::pin(async move {
            if token != self.token {
                return Err(arctern::auth::resource::AuthError::invalid_token("unknown"));
            }
            let claims = arctern::auth::jose::Claims {
                sub: Some("alice".into()),
                aud: self.aud.clone(),
                ..Default::default()
            };
            VerifiedToken::from_claims("https://as.example".into(), claims)
        })
    }
}

#[tokio::test]
async fn the_layer_refuses_another_resources_token_whatever_the_verifier() {
    use arctern::auth::jose::Audience;
    let careless = |aud: Option<Audience>, without: bool| {
        move |resource: &str| {
            ProtectedResource::builder(resource)
                .authorization_server("https://as.example")
                .also_accept_audience(format!("{resource}/"))
                .accept_tokens_without_audience(without)
                .verifier(Careless { token: "t", aud })
                .build()
                .unwrap()
        }
    };
    for aud in [
        Audience::from("https://other.example/mcp"),
        Audience::Many(vec!["https://other.example/mcp".into(), "mcp".into()]),
    ] {
        for without in [false, true] {
            let p = serve(careless(Some(aud.clone()), without)).await;
            let reply = p.with_bearer("t").await;
            assert_invalid_token(&reply);
            assert!(
                reply.json()["error_description"]
                    .as_str()
                    .unwrap()
                    .contains("aud")
            );
        }
    }
    // No audience at all: refused unless the resource says such tokens are fine.
    let p = serve(careless(None, false)).await;
    assert_invalid_token(&p.with_bearer("t").await);
    let p = serve(careless(None, true)).await;
    assert_eq!(p.with_bearer("t").await.status, StatusCode::OK);
    // The resource itself, or an audience it also accepts, in any position.
    let p = serve(|resource| {
        let aud = Audience::Many(vec!["https://other.example".into(), resource.to_owned()]);
        careless(Some(aud), false)(resource)
    })
    .await;
    assert_eq!(p.with_bearer("t").await.status, StatusCode::OK);
    let p =
        serve(|resource| careless(Some(Audience::from(format!("{resource}/"))), false)(resource))
            .await;
    assert_eq!(p.with_bearer("t").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_custom_verifier_plugs_in() {
    struct OnlyAlice(String);
    impl TokenVerifier for OnlyAlice {
        fn verify<'a>(
            &'a self,
            token: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<VerifiedToken, arctern::auth::resource::AuthError>>
        {
            Box::pin(async move {
                if token != "alice" {
                    return Err(arctern::auth::resource::AuthError::invalid_token("unknown"));
                }
                let claims = arctern::auth::jose::Claims {
                    sub: Some("alice".into()),
                    aud: Some(self.0.as_str().into()),
                    ..Default::default()
                };
                VerifiedToken::from_claims("https://as.example".into(), claims)
            })
        }
    }
    let p = serve(|resource| {
        ProtectedResource::builder(resource)
            .authorization_server("https://as.example")
            .verifier(OnlyAlice(resource.to_owned()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(
        p.with_bearer("alice").await.tool_text(),
        "https://as.example alice|"
    );
    assert_invalid_token(&p.with_bearer("bob").await);
}

/// A server whose tools, prompt and resources declare scopes, behind a resource that needs
/// `mcp:tools` for every request.
async fn scoped(auth: &TestAuthServer, hide: bool) -> Protected {
    use arctern::server::{PromptSpec, ResourceSpec, ToolSpec};
    let server = McpServer::new("scoped")
        .tool("whoami", "Who is calling.", whoami)
        .tool_spec(
            ToolSpec::new("write_file")
                .description("Writes a file.")
                .scopes(["files:write", "offline_access"]),
            || async { "written" },
        )
        .prompt_spec(
            PromptSpec::new("secret")
                .description("A secret prompt.")
                .scopes(["prompts:secret"]),
            || async { "psst".to_owned() },
        )
        .resource(
            ResourceSpec::new("file:///secret.txt", "secret").scopes(["files:read"]),
            || async { "classified".to_owned() },
        )
        .resource(
            ResourceSpec::new("file:///public.txt", "public"),
            || async { "public".to_owned() },
        )
        .resource_template(
            arctern::server::ResourceTemplateSpec::new("file:///vault/{name}", "vault")
                .scopes(["files:read"]),
            || async { "vault".to_owned() },
        )
        .completion(|_ctx, _request| async { vec!["payroll.xlsx".to_owned()] })
        .hide_unauthorized(hide)
        .build()
        .unwrap();
    let declared = server.handler().declared_scopes();
    assert_eq!(
        declared,
        [
            "files:write",
            "offline_access",
            "prompts:secret",
            "files:read"
        ]
    );
    serve_server(server, |resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .scopes_supported(std::iter::once("mcp:tools".to_owned()).chain(declared))
            .required_scopes(["mcp:tools"])
            .verifier(auth.jwt_verifier(resource).build().unwrap())
            .build()
            .unwrap()
    })
    .await
}

impl Protected {
    async fn rpc(&self, token: &str, method: &str, params: Value) -> Reply {
        let (body, mut headers) = rpc_body(method, params);
        headers.push(("authorization", format!("Bearer {token}")));
        send(self.addr, Method::POST, "/mcp", &headers, body).await
    }

    fn token(&self, auth: &TestAuthServer, scopes: &[&str]) -> String {
        auth.token()
            .audience(&self.resource)
            .scopes(scopes.iter().copied())
            .issue()
    }
}

/// The JSON-RPC message of a JSON or SSE reply (the last one).
fn message(reply: &Reply) -> Value {
    let data = reply
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .map(str::to_owned)
        .unwrap_or_else(|| reply.body.clone());
    serde_json::from_str(&data).unwrap_or(Value::Null)
}

fn assert_insufficient_scope(p: &Protected, reply: &Reply, scopes: &str) {
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    assert_eq!(
        reply.challenges()[0],
        format!(
            r#"Bearer resource_metadata="{}", scope="{scopes}", error="insufficient_scope""#,
            p.metadata_url()
        )
    );
    assert!(
        !reply
            .challenges()
            .iter()
            .any(|c| c.contains("offline_access"))
    );
    let error = &message(reply)["error"];
    assert_eq!(error["code"], arctern::server::InsufficientScope::CODE);
    assert!(
        !error["data"]["requiredScopes"].to_string().is_empty(),
        "{error}"
    );
}

#[tokio::test]
async fn scopes_declared_at_registration_are_enforced_with_403() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = scoped(&auth, false).await;
    let basic = p.token(&auth, &["mcp:tools"]);

    // A tool needing files:write: 403 naming every scope the call needs (the resource's
    // own and the tool's), never offline_access.
    let reply = p
        .rpc(
            &basic,
            "tools/call",
            json!({"name": "write_file", "arguments": {}}),
        )
        .await;
    assert_insufficient_scope(&p, &reply, "mcp:tools files:write");
    assert_eq!(
        message(&reply)["error"]["data"]["requiredScopes"],
        json!(["files:write", "offline_access"])
    );
    // The prompt and the resource alike.
    let reply = p
        .rpc(&basic, "prompts/get", json!({"name": "secret"}))
        .await;
    assert_insufficient_scope(&p, &reply, "mcp:tools prompts:secret");
    let reply = p
        .rpc(
            &basic,
            "resources/read",
            json!({"uri": "file:///secret.txt"}),
        )
        .await;
    assert_insufficient_scope(&p, &reply, "mcp:tools files:read");
    // What declares nothing is served; unknown targets answer as usual.
    let reply = p
        .rpc(
            &basic,
            "resources/read",
            json!({"uri": "file:///public.txt"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = p
        .rpc(
            &basic,
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        )
        .await;
    assert_eq!(message(&reply)["error"]["code"], -32602);

    // With the scopes (offline_access is never needed from the token), the call is served.
    let writer = p.token(&auth, &["mcp:tools", "files:write", "offline_access"]);
    let reply = p
        .rpc(
            &writer,
            "tools/call",
            json!({"name": "write_file", "arguments": {}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(message(&reply)["result"]["content"][0]["text"], "written");

    // Lists show everything by default.
    let reply = p.rpc(&basic, "tools/list", json!({})).await;
    let tools: Vec<_> = message(&reply)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["whoami", "write_file"]);
}

#[tokio::test]
async fn completions_need_the_scopes_of_what_they_complete() {
    let auth = TestAuthServer::start().await.unwrap();
    // Checked by the handler, and by the scope guard when lists are filtered.
    for hide in [false, true] {
        let p = scoped(&auth, hide).await;
        let basic = p.token(&auth, &["mcp:tools"]);
        // Completing an argument of the prompt or the template needs their scopes too: the
        // values suggested may show what the scopes protect.
        let complete = |reference: Value| json!({"ref": reference, "argument": {"name": "name", "value": "pay"}});
        let prompt_ref = json!({"type": "ref/prompt", "name": "secret"});
        let template_ref = json!({"type": "ref/resource", "uri": "file:///vault/{name}"});
        let reply = p
            .rpc(&basic, "completion/complete", complete(prompt_ref.clone()))
            .await;
        assert_insufficient_scope(&p, &reply, "mcp:tools prompts:secret");
        let reply = p
            .rpc(
                &basic,
                "completion/complete",
                complete(template_ref.clone()),
            )
            .await;
        assert_insufficient_scope(&p, &reply, "mcp:tools files:read");
        let reader = p.token(&auth, &["mcp:tools", "files:read", "prompts:secret"]);
        for reference in [prompt_ref, template_ref] {
            let reply = p
                .rpc(&reader, "completion/complete", complete(reference))
                .await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            assert_eq!(
                message(&reply)["result"]["completion"]["values"],
                json!(["payroll.xlsx"])
            );
        }
    }
}

#[tokio::test]
async fn lists_can_hide_what_the_caller_may_not_use() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = scoped(&auth, true).await;
    let names = |reply: &Reply, list: &str, key: &str| -> Vec<String> {
        message(reply)["result"][list]
            .as_array()
            .unwrap_or_else(|| panic!("{}", reply.body))
            .iter()
            .map(|t| t[key].as_str().unwrap().to_owned())
            .collect()
    };
    let basic = p.token(&auth, &["mcp:tools"]);
    let all = p.token(
        &auth,
        &[
            "mcp:tools",
            "files:write",
            "files:read",
            "prompts:secret",
            "offline_access",
        ],
    );
    let reply = p.rpc(&basic, "tools/list", json!({})).await;
    assert_eq!(names(&reply, "tools", "name"), ["whoami"]);
    assert_eq!(message(&reply)["result"]["cacheScope"], "private");
    let reply = p.rpc(&all, "tools/list", json!({})).await;
    assert_eq!(names(&reply, "tools", "name"), ["whoami", "write_file"]);
    let reply = p.rpc(&basic, "prompts/list", json!({})).await;
    assert!(names(&reply, "prompts", "name").is_empty());
    let reply = p.rpc(&all, "prompts/list", json!({})).await;
    assert_eq!(names(&reply, "prompts", "name"), ["secret"]);
    let reply = p.rpc(&basic, "resources/list", json!({})).await;
    assert_eq!(names(&reply, "resources", "uri"), ["file:///public.txt"]);
    let reply = p.rpc(&all, "resources/list", json!({})).await;
    assert_eq!(
        names(&reply, "resources", "uri"),
        ["file:///secret.txt", "file:///public.txt"]
    );
}

#[tokio::test]
async fn scopes_are_enforced_on_legacy_sessions_too() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = scoped(&auth, false).await;
    let basic = p.token(&auth, &["mcp:tools"]);
    let headers = |session: Option<&str>| {
        let mut h = vec![
            ("content-type", "application/json".to_owned()),
            ("accept", "application/json, text/event-stream".to_owned()),
            ("authorization", format!("Bearer {basic}")),
        ];
        if let Some(id) = session {
            h.push(("mcp-session-id", id.to_owned()));
            h.push(("mcp-protocol-version", "2025-11-25".to_owned()));
        }
        h
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "0"}}});
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(None),
        Bytes::from(init.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(Some(&session)),
        Bytes::from(initialized.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let call = |name: &str| {
        Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": name, "arguments": {}}})
            .to_string(),
        )
    };
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(Some(&session)),
        call("write_file"),
    )
    .await;
    assert_insufficient_scope(&p, &reply, "mcp:tools files:write");
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(Some(&session)),
        call("whoami"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// With middleware of its own a server checks scopes in a guard in front of it (the
/// middleware never sees a refused call); without, the handler checks where it finds the
/// entry. Either way an entry added while the server runs is checked too.
#[tokio::test]
async fn scopes_are_checked_before_other_middleware_and_for_entries_added_later() {
    use std::sync::{Arc, Mutex};

    use arctern::server::ToolSpec;
    use arctern::server::middleware::{Call, Next, from_fn};

    let auth = TestAuthServer::start().await.unwrap();
    for layered in [false, true] {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut builder = McpServer::new("scoped").tool("whoami", "Who is calling.", whoami);
        if layered {
            let seen = seen.clone();
            builder = builder.layer(from_fn(move |call: Call, next: Next| {
                let seen = seen.clone();
                async move {
                    if let Some(target) = call.target() {
                        seen.lock().unwrap().push(target.to_owned());
                    }
                    next.run(call).await
                }
            }));
        }
        let server = builder.build().unwrap();
        let handler = server.handler().clone();
        let p = serve_server(server, |resource| {
            ProtectedResource::builder(resource)
                .authorization_server(auth.issuer())
                .required_scopes(["mcp:tools"])
                .verifier(auth.jwt_verifier(resource).build().unwrap())
                .build()
                .unwrap()
        })
        .await;
        handler
            .add_tool(
                ToolSpec::new("late")
                    .description("Added while serving.")
                    .scopes(["late:use"]),
                || async { "late" },
            )
            .unwrap();
        let basic = p.token(&auth, &["mcp:tools"]);
        let reply = p
            .rpc(
                &basic,
                "tools/call",
                json!({"name": "late", "arguments": {}}),
            )
            .await;
        assert_insufficient_scope(&p, &reply, "mcp:tools late:use");
        assert_eq!(
            message(&reply)["error"]["data"]["requiredScopes"],
            json!(["late:use"])
        );
        let reply = p
            .rpc(
                &basic,
                "tools/call",
                json!({"name": "whoami", "arguments": {}}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let granted = p.token(&auth, &["mcp:tools", "late:use"]);
        let reply = p
            .rpc(
                &granted,
                "tools/call",
                json!({"name": "late", "arguments": {}}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(message(&reply)["result"]["content"][0]["text"], "late");
        let expected: &[&str] = if layered { &["whoami", "late"] } else { &[] };
        assert_eq!(*seen.lock().unwrap(), expected, "layered: {layered}");
    }
}

#[tokio::test]
async fn a_legacy_session_belongs_to_the_token_that_opened_it() {
    let auth = TestAuthServer::start().await.unwrap();
    let p = scoped(&auth, false).await;
    let token = |subject: &str| {
        auth.token()
            .audience(&p.resource)
            .subject(subject)
            .scopes(["mcp:tools"])
            .issue()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let headers = |token: &str, session: Option<&str>| {
        let mut h = vec![
            ("content-type", "application/json".to_owned()),
            ("accept", "application/json, text/event-stream".to_owned()),
            ("authorization", format!("Bearer {token}")),
        ];
        if let Some(id) = session {
            h.push(("mcp-session-id", id.to_owned()));
            h.push(("mcp-protocol-version", "2025-11-25".to_owned()));
        }
        h
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "0"}}});
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(&alice, None),
        Bytes::from(init.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let call = Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "whoami", "arguments": {}}})
        .to_string(),
    );
    // Bob's valid token on Alice's session id: as if the session did not exist.
    for method in [Method::POST, Method::GET, Method::DELETE] {
        let body = if method == Method::POST {
            call.clone()
        } else {
            Bytes::new()
        };
        let reply = send(
            p.addr,
            method.clone(),
            "/mcp",
            &headers(&bob, Some(&session)),
            body,
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::NOT_FOUND,
            "{method}: {}",
            reply.body
        );
    }
    // Alice's session is still hers, and still open.
    let reply = send(
        p.addr,
        Method::POST,
        "/mcp",
        &headers(&alice, Some(&session)),
        call,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(
        message(&reply)["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("alice")),
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn the_verified_token_reaches_handlers_and_binds_the_flow() {
    use arctern::auth::resource::VerifiedToken;
    use arctern::server::mrtr::{Ask, Interrupt, Questions};

    let auth = TestAuthServer::start().await.unwrap();
    async fn deploy(token: VerifiedToken, q: Questions) -> Result<String, Interrupt> {
        let go = q.ready(q.ask(Ask::confirm("go", "Deploy now?")))?;
        Ok(format!(
            "{} via {} ({}): {go}",
            token.subject,
            token.client_id.unwrap_or_default(),
            token.scopes.join(" ")
        ))
    }
    let server = McpServer::new("flows")
        .tool("deploy", "Deploys after asking.", deploy)
        .build()
        .unwrap();
    let p = serve_server(server, |resource| {
        ProtectedResource::builder(resource)
            .authorization_server(auth.issuer())
            .required_scopes(["mcp:tools"])
            .verifier(auth.jwt_verifier(resource).build().unwrap())
            .build()
            .unwrap()
    })
    .await;
    let alice = auth
        .token()
        .audience(&p.resource)
        .subject("alice")
        .client_id("deploy-bot")
        .scopes(["mcp:tools"])
        .issue();
    let bob = auth
        .token()
        .audience(&p.resource)
        .subject("bob")
        .scopes(["mcp:tools"])
        .issue();

    // Alice starts the flow.
    let reply = p
        .rpc(
            &alice,
            "tools/call",
            json!({"name": "deploy", "arguments": {}}),
        )
        .await;
    let round = message(&reply)["result"].clone();
    assert_eq!(round["resultType"], "input_required", "{}", reply.body);
    let state = round["requestState"].as_str().unwrap().to_owned();
    let answer = json!({
        "name": "deploy", "arguments": {},
        "inputResponses": {"go": {"action": "accept", "content": {"go": true}}},
        "requestState": state,
    });

    // Bob cannot continue it: the one fixed request-state error.
    let reply = p.rpc(&bob, "tools/call", answer.clone()).await;
    let error = &message(&reply)["error"];
    assert_eq!(error["code"], -32602, "{}", reply.body);
    assert_eq!(error["message"], arctern::state::INVALID_STATE_MESSAGE);
    // Nor can a client acting for itself (no `sub`) whose client id is Alice's `sub`.
    let client = auth
        .token()
        .audience(&p.resource)
        .without_subject()
        .client_id("alice")
        .scopes(["mcp:tools"])
        .issue();
    let reply = p.rpc(&client, "tools/call", answer.clone()).await;
    let error = &message(&reply)["error"];
    assert_eq!(error["code"], -32602, "{}", reply.body);

    // Alice can, and her handler sees who she is.
    let reply = p.rpc(&alice, "tools/call", answer).await;
    assert_eq!(
        message(&reply)["result"]["content"][0]["text"],
        "alice via deploy-bot (mcp:tools): true",
        "{}",
        reply.body
    );
}
