//! The OAuth client end to end over real HTTP on loopback: an MCP server behind the
//! protected-resource layer, the test authorization server, and servers that misbehave
//! (metadata that is too large, an authorization server that never answers, metadata for
//! another resource).

#![cfg(all(
    feature = "auth",
    feature = "server",
    feature = "http",
    feature = "testing"
))]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arctern::Era;
use arctern::auth::client::{CredentialStore, FileStore, Headless, MemoryStore, OAuth};
use arctern::auth::resource::{ProtectedResource, VerifiedToken};
use arctern::client::{Client, HttpTransport};
use arctern::server::{McpServer, RequestContext};
use arctern::testing::TestAuthServer;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

struct Protected {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Protected {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn whoami(ctx: RequestContext) -> String {
    let token = ctx.extensions().get::<VerifiedToken>();
    format!(
        "{}|{}",
        ctx.principal().map(|p| p.0.clone()).unwrap_or_default(),
        token.map(|t| t.scopes.join(",")).unwrap_or_default()
    )
}

/// An MCP server (both eras) behind the protected-resource layer; `named` is the path of
/// the resource its metadata names (its own, `/mcp`, when `None`).
async fn protected(auth: &TestAuthServer, named: Option<&str>, scopes: &[&str]) -> Protected {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{origin}/mcp");
    let resource = format!("{origin}{}", named.unwrap_or("/mcp"));
    let protected = ProtectedResource::builder(resource.clone())
        .authorization_server(auth.issuer())
        .scopes_supported(scopes.iter().copied())
        .verifier(auth.jwt_verifier(&resource).build().unwrap())
        .build()
        .unwrap();
    let server = McpServer::new("protected")
        .tool("whoami", "Who is calling.", whoami)
        .build()
        .unwrap();
    let [path_based, root] = protected.metadata_paths();
    let app = axum::Router::new()
        .route_service("/mcp", protected.layer().wrap(server.http_service()))
        .route_service(&path_based, protected.metadata_service())
        .route_service(&root, protected.metadata_service());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Protected { url, task }
}

fn text(result: &arctern::types::tools::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn oauth(store: Arc<dyn CredentialStore>) -> OAuth {
    OAuth::builder()
        .client_name("oauth-test")
        .step(Headless::new("http://127.0.0.1:9/callback"))
        .shared_store(store)
        .build()
}

async fn connect(url: &str, oauth: OAuth, era: Option<Era>) -> arctern::Result<Client> {
    let transport = HttpTransport::builder(url).authorizer(oauth).build()?;
    let mut builder = Client::builder();
    if let Some(era) = era {
        builder = builder.era(era);
    }
    builder.connect_with(transport).await
}

#[tokio::test]
async fn authorizes_once_then_reuses_the_stored_token_in_another_client() {
    let auth = TestAuthServer::builder()
        .scopes_supported(["mcp:tools", "offline_access"])
        .start()
        .await
        .unwrap();
    let server = protected(&auth, None, &["mcp:tools"]).await;
    let dir = std::env::temp_dir().join(format!("arctern-oauth-{}", std::process::id()));
    let path = dir.join("credentials.json");
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));

    let client = connect(&server.url, oauth(store.clone()), None)
        .await
        .unwrap();
    let result = client.call_tool("whoami", json!({})).await.unwrap();
    assert!(
        text(&result).starts_with(auth.issuer()),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("|mcp:tools"), "{}", text(&result));
    assert_eq!(auth.authorization_requests(), 1);
    client.close().await.unwrap();

    // What was kept: the issuer, a DPoP-bound token (the server supports DPoP), its key,
    // an absolute expiry, and a refresh token (offline_access was offered and asked for).
    let kept = FileStore::new(&path)
        .load(&server.url)
        .await
        .unwrap()
        .expect("credentials were saved under the server's URL");
    assert_eq!(kept.issuer, auth.issuer());
    assert_eq!(kept.token_type.as_deref(), Some("DPoP"));
    assert!(kept.dpop_key.is_some() && kept.refresh_token.is_some());
    assert!(kept.expires_at.unwrap() > 1_700_000_000);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Another client (another OAuth instance, as in another process) with the same file:
    // no new authorization, no token request.
    let tokens_before = auth.token_requests();
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&path));
    let again = connect(&server.url, oauth(store), None).await.unwrap();
    again.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(auth.authorization_requests(), 1);
    assert_eq!(auth.token_requests(), tokens_before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn refreshes_a_token_that_is_about_to_expire() {
    let auth = TestAuthServer::builder()
        .scopes_supported(["mcp:tools", "offline_access"])
        .token_lifetime(Duration::from_secs(20))
        .start()
        .await
        .unwrap();
    let server = protected(&auth, None, &["mcp:tools"]).await;
    // A margin longer than the lifetime: every token is "about to expire".
    let oauth = OAuth::builder()
        .step(Headless::new("http://127.0.0.1:9/callback"))
        .expiry_margin(Duration::from_secs(60))
        .build();
    let client = connect(&server.url, oauth, None).await.unwrap();
    let after_connect = auth.token_requests();
    client.call_tool("whoami", json!({})).await.unwrap();
    client.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(
        auth.authorization_requests(),
        1,
        "refreshed, never authorized again"
    );
    assert!(auth.token_requests() >= after_connect + 2);
}

#[tokio::test]
async fn a_legacy_session_is_authorized_too() {
    let auth = TestAuthServer::start().await.unwrap();
    let server = protected(&auth, None, &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(MemoryStore::new());
    let client = connect(&server.url, oauth(store), Some(Era::Legacy))
        .await
        .unwrap();
    assert!(client.is_legacy());
    let result = client.call_tool("whoami", json!({})).await.unwrap();
    assert!(text(&result).starts_with(auth.issuer()));
    // DELETE at the end of the session carries the token as well (else this would 401).
    client.close().await.unwrap();
}

#[tokio::test]
async fn metadata_for_another_resource_stops_before_any_authorization() {
    let auth = TestAuthServer::start().await.unwrap();
    let server = protected(&auth, Some("/elsewhere"), &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(MemoryStore::new());
    let err = connect(&server.url, oauth(store), None).await.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(format!("{err}").contains("/elsewhere"), "{err}");
    assert_eq!(auth.authorization_requests(), 0);
    assert_eq!(auth.token_requests(), 0);
}

#[tokio::test]
async fn without_a_step_the_error_says_what_is_missing() {
    let auth = TestAuthServer::start().await.unwrap();
    let server = protected(&auth, None, &[]).await;
    let err = connect(&server.url, OAuth::builder().build(), None)
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(format!("{err}").contains("authorization step"), "{err}");
}

/// A server whose every answer is `respond(path)`.
async fn raw<F>(respond: F) -> SocketAddr
where
    F: Fn(&str, SocketAddr) -> Option<Response<Full<Bytes>>> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let respond = respond.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let respond = respond.clone();
                    async move {
                        match respond(req.uri().path(), addr) {
                            Some(r) => Ok::<_, Infallible>(r),
                            // Never answers (the test's timeout must end the wait).
                            None => {
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                                Ok(Response::new(Full::new(Bytes::new())))
                            }
                        }
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    addr
}

fn challenge(addr: SocketAddr) -> Response<Full<Bytes>> {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header(
            "www-authenticate",
            format!(r#"Bearer resource_metadata="http://{addr}/prm""#),
        )
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn json_response(value: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap()
}

#[tokio::test]
async fn oversized_metadata_and_silent_servers_fail_with_clear_errors() {
    // Protected resource metadata of 2 MiB: over the 1 MiB default.
    let addr = raw(|path, addr| match path {
        "/mcp" => Some(challenge(addr)),
        _ => Some(json_response(json!({"resource": "x".repeat(2 << 20)}))),
    })
    .await;
    let store: Arc<dyn CredentialStore> = Arc::new(MemoryStore::new());
    let err = connect(&format!("http://{addr}/mcp"), oauth(store.clone()), None)
        .await
        .unwrap_err();
    assert!(format!("{err}").contains("exceeds"), "{err}");

    // An authorization server that never answers its metadata request.
    let addr = raw(|path, addr| match path {
        "/mcp" => Some(challenge(addr)),
        "/prm" => Some(json_response(json!({
            "resource": format!("http://{addr}/mcp"),
            "authorization_servers": [format!("http://{addr}")],
        }))),
        _ => None,
    })
    .await;
    let slow = OAuth::builder()
        .step(Headless::new("http://127.0.0.1:9/callback"))
        .request_timeout(Duration::from_millis(300))
        .build();
    let err = connect(&format!("http://{addr}/mcp"), slow, None)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");

    // Metadata whose issuer is not the one asked for is refused.
    let addr = raw(|path, addr| match path {
        "/mcp" => Some(challenge(addr)),
        "/prm" => Some(json_response(json!({
            "resource": format!("http://{addr}/mcp"),
            "authorization_servers": [format!("http://{addr}")],
        }))),
        _ => Some(json_response(json!({
            "issuer": "https://attacker.example",
            "authorization_endpoint": "https://attacker.example/authorize",
            "token_endpoint": "https://attacker.example/token",
        }))),
    })
    .await;
    let err = connect(&format!("http://{addr}/mcp"), oauth(store), None)
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(format!("{err}").contains("attacker.example"), "{err}");
}
