//! The HTTP client the verifiers use for JWKS and introspection: one request per
//! connection over hyper, HTTPS with rustls (ring) when the `tls` feature is on, no
//! redirects, a deadline and a response size limit.
//!
//! Behind a small trait so that it can move to the client's pluggable HTTP stack.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The default deadline of one fetch (connect, TLS, request and response).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The default bound on a fetched document (JWKS, introspection response): 256 KiB.
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 256 * 1024;

/// One request.
pub(crate) struct FetchRequest {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// One response, its body read to the end within the limit.
pub(crate) struct FetchResponse {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

/// Sends a request and reads the response.
pub(crate) trait Fetch: Send + Sync + 'static {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, String>>;
}

/// Settings of the verifiers' HTTP client.
#[derive(Clone)]
pub struct FetchConfig {
    pub(crate) timeout: Duration,
    pub(crate) max_response_size: usize,
    pub(crate) allow_http: bool,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
}

impl fmt::Debug for FetchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchConfig")
            .field("timeout", &self.timeout)
            .field("max_response_size", &self.max_response_size)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
            allow_http: false,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl FetchConfig {
    /// The defaults: a 10-second deadline, 256 KiB responses, the OS trust store and the
    /// webpki roots for `https`, plain `http` only to this machine.
    pub fn new() -> Self {
        FetchConfig::default()
    }

    /// The deadline of one fetch.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest response body read, in bytes; a larger one fails the fetch.
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.max_response_size = bytes;
        self
    }

    /// Allows plain-`http` JWKS and introspection endpoints on other hosts than this
    /// machine (default: refused when the verifier is built, since an on-path attacker
    /// could then swap the keys, or read each token and the resource server's secret).
    /// `http` to `localhost`, `127.0.0.0/8` or `[::1]` is always allowed.
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Whether the verifiers may fetch `uri` (named `what` in the error): `https`, or
    /// `http` to this machine, or any `http` with [`allow_http`](Self::allow_http).
    pub(crate) fn check_url(&self, uri: &Uri, what: &str) -> crate::Result<()> {
        let host = uri.host().unwrap_or("");
        let ok = match uri.scheme_str() {
            Some("https") => !host.is_empty(),
            Some("http") => {
                !host.is_empty()
                    && (self.allow_http || crate::transport::http::server::guard::is_loopback(host))
            }
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let message = if uri.scheme_str() == Some("http") && !host.is_empty() {
            format!(
                "the {what} must use https unless it is on this machine \
                 (FetchConfig::allow_http allows plain http)"
            )
        } else {
            format!("the {what} must be an http(s) URL")
        };
        Err(crate::Error::new(crate::ErrorKind::Config, message))
    }

    /// The rustls client configuration for `https` (say, to trust a private CA). It must
    /// use the ring provider, as the default does.
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }
}

/// The hyper-based [`Fetch`].
pub(crate) struct HyperFetch {
    config: FetchConfig,
    #[cfg(feature = "tls")]
    tls: std::sync::OnceLock<Result<tokio_rustls::TlsConnector, String>>,
}

impl HyperFetch {
    pub(crate) fn shared(config: FetchConfig) -> Arc<dyn Fetch> {
        Arc::new(HyperFetch {
            config,
            #[cfg(feature = "tls")]
            tls: std::sync::OnceLock::new(),
        })
    }

    #[cfg(feature = "tls")]
    fn connector(&self) -> Result<tokio_rustls::TlsConnector, String> {
        self.tls
            .get_or_init(|| {
                let config = match &self.config.tls {
                    Some(config) => config.clone(),
                    None => Arc::new(default_tls_config()?),
                };
                Ok(tokio_rustls::TlsConnector::from(config))
            })
            .clone()
    }

    async fn send(&self, request: FetchRequest) -> Result<FetchResponse, String> {
        let uri = &request.uri;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("unsupported URL {uri}")),
        };
        let authority = uri.authority().ok_or("a URL without a host")?.clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tcp = TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("connecting to {authority}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut builder = Request::builder()
            .method(request.method)
            .uri(path)
            .header(http::header::HOST, authority.as_str());
        if let Some(headers) = builder.headers_mut() {
            headers.extend(request.headers);
        }
        let http_request = builder
            .body(Full::new(request.body))
            .map_err(|e| e.to_string())?;
        if https {
            #[cfg(feature = "tls")]
            {
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| format!("invalid TLS server name {host:?}: {e}"))?;
                let tls = self
                    .connector()?
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("TLS with {authority}: {e}"))?;
                return self.exchange(TokioIo::new(tls), http_request).await;
            }
            #[cfg(not(feature = "tls"))]
            return Err("https needs arctern's `tls` feature".to_owned());
        }
        self.exchange(TokioIo::new(tcp), http_request).await
    }

    async fn exchange<T>(
        &self,
        io: T,
        request: Request<Full<Bytes>>,
    ) -> Result<FetchResponse, String>
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        let result = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let body = Limited::new(response.into_body(), self.config.max_response_size)
                .collect()
                .await
                .map_err(|e| format!("reading the response: {e}"))?
                .to_bytes();
            Ok(FetchResponse { status, body })
        }
        .await;
        driver.abort();
        result
    }
}

impl Fetch for HyperFetch {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, String>> {
        Box::pin(async move {
            let uri = request.uri.clone();
            match tokio::time::timeout(self.config.timeout, self.send(request)).await {
                Ok(result) => result,
                Err(_) => Err(format!("fetching {uri} timed out")),
            }
        })
    }
}

/// rustls with the ring provider, trusting the OS store and the webpki roots.
#[cfg(feature = "tls")]
fn default_tls_config() -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}
