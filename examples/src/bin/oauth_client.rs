//! A client that signs in with OAuth 2.1 and keeps its token: discovery from the server's
//! `401`, dynamic registration, the authorization code flow with PKCE, and a credentials
//! file that the next connection reuses without signing in again.
//!
//! Without arguments it runs against stand-ins started in this process: a test
//! authorization server (which approves at once, so the headless step needs no person) and
//! an MCP server behind the protected-resource layer. No network is needed:
//!
//! ```sh
//! cargo run -p arctern-examples --bin oauth_client
//! ```
//!
//! With `--url`, it signs in to a real server: the sign-in URL is printed, and the
//! authorization code comes back to a listener on 127.0.0.1 (RFC 8252) once you have signed
//! in with your browser. `--cacert FILE` trusts a private CA for HTTPS; `--tool NAME` calls
//! a tool.
//!
//! ```sh
//! cargo run -p arctern-examples --bin oauth_client -- --url https://mcp.example.com/mcp
//! ```

use std::sync::Arc;
use std::time::Duration;

use arctern::auth::client::{
    AuthorizationResponse, AuthorizationStep, CredentialStore, FileStore, Headless,
    LoopbackRedirect, OAuth,
};
use arctern::auth::resource::ProtectedResource;
use arctern::client::{Client, HttpTransport};
use arctern::server::{McpServer, RequestContext};
use arctern::testing::TestAuthServer;
use arctern::transport::http::client::Fetcher;
use arctern_examples::flag_value;
use futures::future::BoxFuture;

/// The person's step for a real server: print the sign-in URL, wait for the redirect.
struct PrintAndWait(LoopbackRedirect);

impl AuthorizationStep for PrintAndWait {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        _fetcher: &'a Fetcher,
        url: &'a str,
    ) -> BoxFuture<'a, arctern::Result<AuthorizationResponse>> {
        Box::pin(async move {
            println!("Sign in at: {url}");
            self.0.wait(Duration::from_secs(300)).await
        })
    }
}

async fn whoami(ctx: RequestContext) -> String {
    let who = ctx.principal().map(|p| p.0.clone()).unwrap_or_default();
    format!("hello {who}")
}

/// An MCP server behind the protected-resource layer on 127.0.0.1, trusting `auth`.
async fn protected(auth: &TestAuthServer) -> Result<String, Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let protected = ProtectedResource::builder(url.clone())
        .authorization_server(auth.issuer())
        .verifier(auth.jwt_verifier(&url).build()?)
        .build()?;
    let server = McpServer::new("protected")
        .tool("whoami", "Who is calling.", whoami)
        .build()?;
    let [path_based, root] = protected.metadata_paths();
    let app = axum::Router::new()
        .route_service("/mcp", protected.layer().wrap(server.http_service()))
        .route_service(&path_based, protected.metadata_service())
        .route_service(&root, protected.metadata_service());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    arctern_examples::init_logging();
    let file =
        std::env::temp_dir().join(format!("arctern-oauth-example-{}.json", std::process::id()));
    let store: Arc<dyn CredentialStore> = Arc::new(FileStore::new(&file));

    // The stand-ins live until the end of `main`.
    let mut stand_in = None;
    let (url, tool, oauth) = match flag_value("--url") {
        Some(url) => {
            let oauth = OAuth::builder()
                .client_name("arctern-oauth-example")
                .step(PrintAndWait(LoopbackRedirect::bind(0).await?))
                .shared_store(store.clone())
                .build();
            (url, flag_value("--tool"), oauth)
        }
        None => {
            let auth = TestAuthServer::start().await?;
            let url = protected(&auth).await?;
            stand_in = Some(auth);
            let oauth = OAuth::builder()
                .client_name("arctern-oauth-example")
                .step(Headless::new("http://127.0.0.1:9/callback"))
                .shared_store(store.clone())
                .build();
            (url, Some("whoami".to_owned()), oauth)
        }
    };

    // Two connections, as two runs of a program would be: the second one signs in no more.
    for run in 1..=2 {
        let mut transport = HttpTransport::builder(&url).authorizer(oauth.clone());
        if let Some(ca) = flag_value("--cacert") {
            transport = transport.add_root_certificates_file(ca)?;
        }
        let client = Client::builder()
            .name("oauth-example")
            .connect_with(transport.build()?)
            .await?;
        let tools = client.list_tools().await?;
        println!("connection {run}: {} tool(s)", tools.len());
        if let Some(tool) = &tool {
            let result = client.call_tool(tool, serde_json::json!({})).await?;
            println!(
                "connection {run}: {}",
                serde_json::to_string(&result.content)?
            );
        }
        client.close().await?;
    }
    if let Some(auth) = &stand_in {
        println!(
            "sign-ins at the authorization server: {}",
            auth.authorization_requests()
        );
    }
    if let Some(kept) = oauth.credentials(&url).await? {
        println!(
            "kept for {url}: a {} token from {}",
            kept.token_type.as_deref().unwrap_or("Bearer"),
            kept.issuer
        );
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}
