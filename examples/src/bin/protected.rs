//! A protected MCP server: OAuth 2.1 bearer tokens checked against an authorization
//! server's JWKS, RFC 9728 metadata, challenges, the caller's identity in the tool, and a
//! tool that needs one more scope (`reset`, `mcp:admin`: `403 insufficient_scope` without
//! it).
//!
//! For a self-contained demo it starts arctern's test authorization server in the same
//! process and prints a token from it; point the verifier at your real authorization
//! server instead (its issuer and `jwks_uri`).
//!
//! ```sh
//! cargo run -p arctern-examples --bin protected
//! # first line: the MCP URL; second: a token for it
//! curl -i http://127.0.0.1:8000/mcp -X POST -H 'content-type: application/json' -d '{}'   # 401 + challenge
//! curl http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp                    # the metadata
//! ```

use arctern::auth::resource::{ProtectedResource, VerifiedToken};
use arctern::server::{McpServer, ToolSpec};
use arctern::testing::TestAuthServer;
use arctern_examples::{init_logging, port_from_args};

/// Says who is calling: the verified token the layer established.
async fn whoami(token: VerifiedToken) -> String {
    format!(
        "{} (client {}, scopes: {})",
        token.subject,
        token.client_id.as_deref().unwrap_or("?"),
        token.scopes.join(" ")
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    init_logging();
    let auth = TestAuthServer::builder()
        .scopes_supported(["mcp:tools", "mcp:admin"])
        .start()
        .await?;
    let server = McpServer::new("protected")
        .tool("whoami", "Says who is calling.", whoami)
        .tool_spec(
            ToolSpec::new("reset")
                .description("Resets the demo (needs mcp:admin).")
                .scopes(["mcp:admin"]),
            || async { "reset" },
        )
        .build()?;

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port_from_args())).await?;
    let resource = format!("http://{}/mcp", listener.local_addr()?);
    let protected = ProtectedResource::builder(&resource)
        .authorization_server(auth.issuer())
        .scopes_supported(
            std::iter::once("mcp:tools".to_owned()).chain(server.handler().declared_scopes()),
        )
        .required_scopes(["mcp:tools"])
        .resource_name("arctern protected demo")
        .verifier(auth.jwt_verifier(&resource).build()?)
        .build()?;

    let [path_based, root] = protected.metadata_paths();
    let app = axum::Router::new()
        .route_service("/mcp", protected.layer().wrap(server.http_service()))
        .route_service(&path_based, protected.metadata_service())
        .route_service(&root, protected.metadata_service());

    println!("{resource}");
    println!(
        "{}",
        auth.token()
            .audience(&resource)
            .scopes(["mcp:tools"])
            .issue()
    );
    eprintln!("authorization server: {}", auth.issuer());
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
