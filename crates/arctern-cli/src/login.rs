//! Signing in to servers that want OAuth: the token cache, the browser step (consent, then
//! the browser, then a loopback redirect listener, RFC 8252), `arctern login` and
//! `arctern logout`.
//!
//! Credentials are kept per server in one JSON file, readable by its owner only:
//! `$ARCTERN_CREDENTIALS` when set, else `$XDG_CONFIG_HOME/arctern/credentials.json`, else
//! `~/.config/arctern/credentials.json`. A server that wants authorization gets it once; the
//! next command reuses the token (or refreshes it) without asking.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use arctern::auth::client::{
    AuthorizationResponse, AuthorizationStep, FileStore, LoopbackRedirect, OAuth,
    canonical_resource,
};
use arctern::transport::http::client::{Fetcher, HttpTransport};
use arctern::{Error, ErrorKind};
use futures::future::BoxFuture;
use inquire::Select;

use crate::exit::{Exit, Failure};
use crate::form::{bold, open_in_browser, url_parts};
use crate::session::ConnectArgs;

/// The token cache.
pub fn credentials_path() -> Result<PathBuf, Failure> {
    if let Some(path) = std::env::var_os("ARCTERN_CREDENTIALS").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|p| !p.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })
        .ok_or_else(|| {
            Failure::usage(
                "no place for the token cache: set ARCTERN_CREDENTIALS, XDG_CONFIG_HOME or HOME",
            )
        })?;
    Ok(base.join("arctern").join("credentials.json"))
}

/// The browser step: asks consent on the terminal, opens the browser (or prints the URL),
/// and waits for the authorization server's redirect on 127.0.0.1.
struct BrowserStep {
    listener: LoopbackRedirect,
    server: String,
    interactive: bool,
    timeout: Duration,
}

fn auth_error(message: String) -> Error {
    Error::new(ErrorKind::Auth, message)
}

/// What the person picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Open,
    Show,
    Cancel,
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Choice::Open => "Open it in the browser",
            Choice::Show => "I will open it myself (just print it)",
            Choice::Cancel => "Cancel",
        })
    }
}

impl BrowserStep {
    /// Shows the sign-in page's URL and domain, and asks what to do with it (blocking).
    fn consent(server: &str, url: &str) -> Result<Choice, Error> {
        let parts = url_parts(url);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err);
        let _ = writeln!(err, "{} needs you to sign in.", bold(server));
        let _ = writeln!(err, "  The sign-in page:");
        let _ = writeln!(err, "    URL:    {url}");
        let _ = writeln!(
            err,
            "    Domain: {}",
            bold(
                parts
                    .as_ref()
                    .and_then(|p| p.host.as_deref())
                    .unwrap_or("(none)")
            )
        );
        drop(err);
        Select::new(
            "Open the sign-in page?",
            vec![Choice::Open, Choice::Show, Choice::Cancel],
        )
        .with_help_message("nothing is opened unless you choose to")
        .without_filtering()
        .prompt()
        .map_err(|e| auth_error(format!("sign-in cancelled ({e})")))
    }
}

impl AuthorizationStep for BrowserStep {
    fn redirect_uri(&self) -> String {
        self.listener.redirect_uri()
    }

    /// Without a terminal nobody can consent: the client then stops before discovery and
    /// registration send anything.
    fn ready(&self) -> arctern::Result<()> {
        if self.interactive {
            return Ok(());
        }
        Err(auth_error(format!(
            "{} needs you to sign in, and there is no terminal to ask on: run \
             `arctern login {}` in a terminal first",
            self.server, self.server
        )))
    }

    fn authorize<'a>(
        &'a self,
        _fetcher: &'a Fetcher,
        url: &'a str,
    ) -> BoxFuture<'a, arctern::Result<AuthorizationResponse>> {
        Box::pin(async move {
            self.ready()?;
            let parts = url_parts(url);
            if !parts
                .as_ref()
                .is_some_and(|p| p.scheme == "https" || p.scheme == "http")
            {
                return Err(auth_error(format!(
                    "the sign-in page is not a web address: {url}"
                )));
            }
            let (server, page) = (self.server.clone(), url.to_owned());
            let choice = tokio::task::spawn_blocking(move || Self::consent(&server, &page))
                .await
                .map_err(|e| auth_error(format!("the consent prompt failed: {e}")))??;
            match choice {
                Choice::Open => {
                    if let Err(why) = open_in_browser(url) {
                        eprintln!(
                            "Could not open a browser ({why}); open this URL yourself: {url}"
                        );
                    }
                }
                Choice::Show => eprintln!("Open this URL to sign in: {url}"),
                Choice::Cancel => return Err(auth_error("sign-in cancelled".into())),
            }
            eprintln!(
                "Waiting for the sign-in to finish (at most {} s)...",
                self.timeout.as_secs()
            );
            self.listener.wait(self.timeout).await
        })
    }
}

/// The authorizer for `server`: the token cache, and the browser step when `interactive`.
/// The browser step waits `login_timeout` seconds for the redirect.
pub async fn oauth(
    server: &str,
    interactive: bool,
    login_timeout: u64,
) -> Result<(OAuth, PathBuf), Failure> {
    let path = credentials_path()?;
    let listener = LoopbackRedirect::bind(0).await.map_err(|e| {
        Failure::new(
            Exit::Local,
            format!("cannot listen for the sign-in redirect: {e}"),
        )
    })?;
    let oauth = OAuth::builder()
        .client_name("arctern-cli")
        .step(BrowserStep {
            listener,
            server: server.to_owned(),
            interactive,
            timeout: Duration::from_secs(login_timeout.max(1)),
        })
        .store(FileStore::new(&path))
        .build();
    Ok((oauth, path))
}

/// The HTTP transport of a command: headers, roots from `--cacert`, and `oauth`.
pub fn transport(
    url: &str,
    conn: &ConnectArgs,
    oauth: Option<OAuth>,
) -> Result<HttpTransport, Failure> {
    let mut transport = HttpTransport::builder(url);
    for h in &conn.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Failure::usage(format!(
                "--header expects \"Name: value\", got {h:?}"
            )));
        };
        transport = transport
            .header(name.trim(), value.trim())
            .map_err(|e| Failure::usage(format!("--header {h:?}: {e}")))?;
    }
    for file in &conn.cacert {
        transport = transport
            .add_root_certificates_file(file)
            .map_err(|e| Failure::usage(format!("--cacert: {e}")))?;
    }
    if let Some(oauth) = oauth {
        transport = transport.authorizer(oauth);
    }
    transport
        .build()
        .map_err(|e| Failure::usage(format!("{url:?}: {e}")))
}

/// `arctern login URL`: forgets what was kept for the server, then connects, signing in
/// through the browser.
pub async fn login(url: &str, conn: &ConnectArgs) -> Result<Exit, Failure> {
    let interactive = std::io::stdin().is_terminal();
    let (oauth, path) = oauth(url, interactive, conn.login_timeout).await?;
    oauth
        .forget(url)
        .await
        .map_err(|e| Failure::new(Exit::Local, format!("{e}")))?;
    let transport = transport(url, conn, Some(oauth.clone()))?;
    let mut builder = arctern::client::Client::builder()
        .name("arctern-cli")
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(secs) = conn.timeout {
        builder = builder.request_timeout(Duration::from_secs_f64(secs.max(0.001)));
    }
    let client = builder
        .connect_with(transport)
        .await
        .map_err(|e| Failure::new(Exit::Connection, format!("could not sign in to {url}: {e}")))?;
    let _ = client.close().await;
    match oauth.credentials(url).await {
        Ok(Some(c)) if c.access_token.is_some() => {
            eprintln!(
                "Signed in to {url} (authorization server {}); the token is kept in {}.",
                c.issuer,
                path.display()
            );
        }
        _ => eprintln!("{url} did not ask for authorization; nothing to keep."),
    }
    Ok(Exit::Ok)
}

/// `arctern logout URL`: forgets the tokens and the client registration kept for the
/// server.
pub async fn logout(url: &str) -> Result<Exit, Failure> {
    let path = credentials_path()?;
    let store = FileStore::new(&path);
    let resource = canonical_resource(url).map_err(|e| Failure::usage(format!("{url:?}: {e}")))?;
    let known = store
        .resources()
        .await
        .map_err(|e| Failure::new(Exit::Local, format!("{e}")))?
        .contains(&resource);
    let oauth = OAuth::builder().store(store).build();
    oauth
        .forget(url)
        .await
        .map_err(|e| Failure::usage(format!("{url:?}: {e}")))?;
    if known {
        eprintln!("Signed out of {url}.");
    } else {
        eprintln!("No sign-in was kept for {url}.");
    }
    Ok(Exit::Ok)
}
