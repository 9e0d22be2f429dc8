//! The person's step of the authorization code flow: the authorization URL goes to a user
//! agent, and the redirect brings back `code`, `state` and `iss`.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Uri};
use http_body_util::Full;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::auth_error;
use crate::Result;
use crate::transport::http::client::Fetcher;

/// The parameters of the redirect that ends the person's step (RFC 6749 §4.1.2, RFC 9207).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` sent with the request, echoed.
    pub state: Option<String>,
    /// The issuer of the authorization server that answered (RFC 9207).
    pub iss: Option<String>,
    /// An error code (`access_denied`, ...), instead of a code.
    pub error: Option<String>,
    /// The error's description.
    pub error_description: Option<String>,
}

impl fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code.as_ref().map(|_| "<redacted>"))
            .field("state", &self.state)
            .field("iss", &self.iss)
            .field("error", &self.error)
            .field("error_description", &self.error_description)
            .finish()
    }
}

impl AuthorizationResponse {
    /// The parameters in the query of a redirect URL.
    pub fn from_redirect(url: &str) -> Result<Self> {
        let uri: Uri = url.parse().map_err(|e| {
            auth_error("the authorization server redirected to an invalid URL").with_source(e)
        })?;
        Ok(Self::from_query(uri.query().unwrap_or("")))
    }

    /// The parameters of a query string.
    pub fn from_query(query: &str) -> Self {
        let mut out = AuthorizationResponse::default();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match name.as_ref() {
                "code" => &mut out.code,
                "state" => &mut out.state,
                "iss" => &mut out.iss,
                "error" => &mut out.error,
                "error_description" => &mut out.error_description,
                _ => continue,
            };
            // A repeated parameter is not trusted: the first one stays.
            if slot.is_none() {
                *slot = Some(value.into_owned());
            }
        }
        out
    }
}

/// Takes the authorization URL to the person (or to whatever stands in for them) and
/// returns the parameters of the redirect.
pub trait AuthorizationStep: Send + Sync + 'static {
    /// The redirect URI to register and to send in the authorization request.
    fn redirect_uri(&self) -> String;

    /// Whether the step can take the person through an authorization now (a terminal or a
    /// window to ask in, a browser to open); the error says why not. Asked before a new
    /// authorization begins — before discovery, registration or anything else is sent — so
    /// that a step that could not finish causes no requests. By default it can.
    fn ready(&self) -> Result<()> {
        Ok(())
    }

    /// Has `url` visited, and returns what the authorization server redirected back with.
    /// `fetcher` reaches the network the way the transport does.
    fn authorize<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse>>;
}

/// The step without a person, for tests and automation: fetches the authorization URL
/// without following redirects and reads the parameters from `Location`. Works with
/// authorization servers that redirect at once (conformance mocks, test servers, servers
/// that remember consent).
#[derive(Debug, Clone)]
pub struct Headless {
    redirect_uri: String,
    max_response_size: usize,
    timeout: Duration,
}

impl Headless {
    /// A headless step whose redirect URI is `redirect_uri` (nothing needs to listen there).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Headless {
            redirect_uri: redirect_uri.into(),
            max_response_size: 64 * 1024,
            timeout: Duration::from_secs(30),
        }
    }

    /// The limit on the authorization endpoint's answer (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl Default for Headless {
    fn default() -> Self {
        Headless::new("http://localhost:3000/callback")
    }
}

impl AuthorizationStep for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse>> {
        Box::pin(async move {
            let request = Request::builder()
                .method(Method::GET)
                .uri(url)
                .body(Full::new(Bytes::new()))
                .map_err(|e| auth_error("invalid authorization URL").with_source(e))?;
            let answer = fetcher
                .fetch(request, self.max_response_size, self.timeout)
                .await?;
            if !answer.status.is_redirection() {
                return Err(auth_error(format!(
                    "the authorization endpoint answered HTTP {} instead of redirecting (it \
                     may want a person: use a browser step)",
                    answer.status
                )));
            }
            let location = answer
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    auth_error("the authorization endpoint redirected without Location")
                })?;
            AuthorizationResponse::from_redirect(location)
        })
    }
}

/// The largest request the loopback listener reads.
const MAX_CALLBACK_REQUEST: usize = 16 * 1024;

/// A loopback redirect listener (RFC 8252 §7.3): listens on `127.0.0.1`, and the first
/// request to its path brings the authorization response. Serves the browser a short page
/// saying the window can be closed.
#[derive(Debug)]
pub struct LoopbackRedirect {
    listener: tokio::sync::Mutex<TcpListener>,
    addr: SocketAddr,
    path: String,
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` (`0`: a port the system picks) for `/callback`.
    pub async fn bind(port: u16) -> Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            auth_error("cannot listen for the authorization redirect on 127.0.0.1").with_source(e)
        })?;
        let addr = listener.local_addr()?;
        Ok(LoopbackRedirect {
            listener: tokio::sync::Mutex::new(listener),
            addr,
            path: "/callback".to_owned(),
        })
    }

    /// The redirect URI: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Waits (at most `timeout`) for the browser to arrive with the authorization
    /// response. Requests to other paths get a 404 and do not count.
    pub async fn wait(&self, timeout: Duration) -> Result<AuthorizationResponse> {
        let listener = self.listener.lock().await;
        let work = async {
            loop {
                let (mut stream, _) = listener.accept().await?;
                let mut buf = Vec::with_capacity(1024);
                let mut chunk = [0u8; 1024];
                let head_end = loop {
                    let n = stream.read(&mut chunk).await?;
                    if n == 0 {
                        break None;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(i);
                    }
                    if buf.len() > MAX_CALLBACK_REQUEST {
                        break None;
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let target = head
                    .lines()
                    .next()
                    .and_then(|line| line.split(' ').nth(1))
                    .unwrap_or("");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                if path != self.path {
                    let _ = stream
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                    continue;
                }
                let response = AuthorizationResponse::from_query(query);
                let text = if response.code.is_some() {
                    "Authorization complete. You can close this window."
                } else {
                    "Authorization did not complete. You can close this window."
                };
                let page = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = stream.write_all(page.as_bytes()).await;
                return Ok::<_, std::io::Error>(response);
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => {
                Err(auth_error("the authorization redirect listener failed").with_source(e))
            }
            Err(_) => Err(crate::Error::new(
                crate::ErrorKind::Timeout,
                format!("no authorization redirect arrived within {timeout:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_redirect_and_keeps_the_first_of_repeated_parameters() {
        let r = AuthorizationResponse::from_redirect(
            "http://localhost:3000/callback?code=abc&state=s%201&iss=https%3A%2F%2Fas&code=evil",
        )
        .unwrap();
        assert_eq!(r.code.as_deref(), Some("abc"));
        assert_eq!(r.state.as_deref(), Some("s 1"));
        assert_eq!(r.iss.as_deref(), Some("https://as"));
        assert!(!format!("{r:?}").contains("abc"));
        let r = AuthorizationResponse::from_query("error=access_denied&error_description=no");
        assert_eq!(r.error.as_deref(), Some("access_denied"));
    }

    #[tokio::test]
    async fn the_loopback_listener_takes_the_redirect_and_ignores_other_paths() {
        let listener = LoopbackRedirect::bind(0).await.unwrap();
        let uri = listener.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let addr = listener.addr;
        let browser = tokio::spawn(async move {
            for target in ["/favicon.ico", "/callback?code=c1&state=st"] {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                s.write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut page = String::new();
                s.read_to_string(&mut page).await.unwrap();
                if target.starts_with("/callback") {
                    assert!(page.contains("close this window"), "{page}");
                }
            }
        });
        let response = listener.wait(Duration::from_secs(10)).await.unwrap();
        browser.await.unwrap();
        assert_eq!(response.code.as_deref(), Some("c1"));
        assert_eq!(response.state.as_deref(), Some("st"));
    }
}
