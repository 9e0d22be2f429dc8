//! `arctern serve --auth`: the demo protected as an OAuth 2.1 resource server, with the
//! test authorization server of `arctern::testing` in the same process (it signs everyone
//! in at once, for trying things out).

use arctern::auth::resource::ProtectedResource;
use arctern::testing::TestAuthServer;
use clap::Args;

use arctern_cli::demo::{ACCESS_SCOPE, PROVISION_SCOPE};

/// The OAuth option of `arctern serve`.
#[derive(Args)]
pub struct AuthArgs {
    /// Protect the demo with OAuth 2.1: every request needs an access token with the scope
    /// mcp:tools, and provision needs db:write too. An authorization server for it runs in
    /// this process on 127.0.0.1; it signs everyone in at once, as test-user, so it is for
    /// trying things out only. `arctern call` signs in through it (with your consent) the
    /// first time and keeps the token.
    #[arg(long, conflicts_with = "stdio")]
    pub auth: bool,
}

/// The demo's protection: its authorization server, which lives as long as it is kept,
/// and the resource the HTTP server checks tokens for.
pub struct SignIn {
    server: TestAuthServer,
    resource: ProtectedResource,
}

impl SignIn {
    /// Starts the authorization server and describes the demo at `url` as a resource it
    /// issues tokens for; `declared` are the scopes the demo's tools declare.
    pub async fn start(
        url: &str,
        declared: Vec<String>,
    ) -> Result<SignIn, Box<dyn std::error::Error>> {
        let mut scopes = vec![ACCESS_SCOPE.to_owned()];
        for scope in declared {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let server = TestAuthServer::builder()
            .scopes_supported(scopes.iter().cloned())
            .start()
            .await
            .map_err(|e| format!("cannot start the authorization server: {e}"))?;
        let resource = ProtectedResource::builder(url)
            .authorization_server(server.issuer())
            .resource_name("arctern demo")
            .scopes_supported(scopes)
            .required_scopes([ACCESS_SCOPE])
            .verifier(server.jwt_verifier(url).build()?)
            .build()?;
        Ok(SignIn { server, resource })
    }

    /// The protected resource, for `HttpServer::protect`.
    pub fn resource(&self) -> ProtectedResource {
        self.resource.clone()
    }

    /// The authorization server's issuer identifier (its URL).
    pub fn issuer(&self) -> &str {
        self.server.issuer()
    }

    /// Tells the person how to sign in (on stderr).
    pub fn print_how_to_sign_in(&self, arctern: &str, url: &str) {
        eprintln!(
            "Protected with OAuth 2.1: every request needs an access token with the scope \
             {ACCESS_SCOPE}; provision needs {PROVISION_SCOPE} too."
        );
        eprintln!(
            "Authorization server: {} (in this process; it signs everyone in at once, as \
             test-user).",
            self.issuer()
        );
        eprintln!(
            "Sign in and call a tool from another terminal: the first call shows the sign-in \
             page and opens it with your consent, and the token is kept for the next ones \
             (provision asks you to sign in again, for {PROVISION_SCOPE}):"
        );
        eprintln!("  {arctern} call {url} provision --arg name=orders");
        eprintln!("Or sign in ahead of time: {arctern} login {url}");
    }
}
