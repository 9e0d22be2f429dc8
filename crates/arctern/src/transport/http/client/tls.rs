//! HTTPS for the built-in pool: rustls on the ring provider. Roots: the operating system's
//! trust store, the webpki roots, the PEM file named by `SSL_CERT_FILE`, and any given
//! through the API.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::{Error, ErrorKind, Result};

/// Where the roots come from.
#[derive(Clone)]
pub(super) struct TlsSettings {
    pub(super) system: bool,
    pub(super) webpki: bool,
    pub(super) extra: Vec<CertificateDer<'static>>,
    pub(super) custom: Option<Arc<ClientConfig>>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            system: true,
            webpki: true,
            extra: Vec::new(),
            custom: None,
        }
    }
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("system", &self.system)
            .field("webpki", &self.webpki)
            .field("extra", &self.extra.len())
            .field("custom", &self.custom.is_some())
            .finish()
    }
}

fn bad_pem(what: String) -> impl FnOnce(rustls::pki_types::pem::Error) -> Error {
    move |e| Error::new(ErrorKind::Config, what).with_source(e)
}

impl TlsSettings {
    pub(super) fn add_pem(&mut self, pem: &[u8]) -> Result<()> {
        let before = self.extra.len();
        for cert in CertificateDer::pem_slice_iter(pem) {
            self.extra
                .push(cert.map_err(bad_pem("invalid PEM certificate".into()))?);
        }
        if self.extra.len() == before {
            return Err(Error::new(
                ErrorKind::Config,
                "no CERTIFICATE block in the PEM data",
            ));
        }
        Ok(())
    }

    pub(super) fn add_file(&mut self, path: &Path) -> Result<()> {
        let pem = std::fs::read(path).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot read the certificate file {}", path.display()),
            )
            .with_source(e)
        })?;
        self.add_pem(&pem)
            .map_err(|e| Error::new(ErrorKind::Config, format!("{}: {e}", path.display())))
    }

    /// The connector for every HTTPS connection of a pool.
    pub(super) fn connector(&self) -> Result<TlsConnector> {
        let config = match &self.custom {
            Some(config) => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                config
            }
            None => self.config()?,
        };
        Ok(TlsConnector::from(Arc::new(config)))
    }

    fn config(&self) -> Result<ClientConfig> {
        let mut roots = RootCertStore::empty();
        if self.webpki {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        if self.system {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::debug!(error = %e, "could not read some system root certificates");
            }
            let (_, ignored) = roots.add_parsable_certificates(found.certs);
            if ignored > 0 {
                tracing::debug!(ignored, "ignored unparsable system root certificates");
            }
        }
        if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
            let path = Path::new(&path);
            match CertificateDer::pem_file_iter(path) {
                Ok(certs) => {
                    let certs: Vec<_> = certs.filter_map(|c| c.ok()).collect();
                    roots.add_parsable_certificates(certs);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot read SSL_CERT_FILE")
                }
            }
        }
        for cert in &self.extra {
            roots.add(cert.clone()).map_err(|e| {
                Error::new(ErrorKind::Config, "a given root certificate is not usable")
                    .with_source(e)
            })?;
        }
        if roots.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                "no root certificate to verify HTTPS servers with",
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::new(ErrorKind::Config, "TLS configuration").with_source(e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The TLS handshake on a fresh TCP stream, within `limit`.
pub(super) async fn handshake(
    connector: TlsConnector,
    host: &str,
    stream: TcpStream,
    limit: Duration,
) -> Result<TlsStream<TcpStream>> {
    let name = ServerName::try_from(host.to_owned()).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("{host:?} is not a valid TLS server name"),
        )
        .with_source(e)
    })?;
    match tokio::time::timeout(limit, connector.connect(name, stream)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(tls_error(host, e)),
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!("the TLS handshake with {host} timed out"),
        )),
    }
}

/// A failed handshake: [`ErrorKind::Tls`] when TLS itself refused (a certificate that does
/// not verify, no shared version), else the I/O error.
fn tls_error(host: &str, e: std::io::Error) -> Error {
    if e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
        && let Some(inner) = e.into_inner()
    {
        return Error::new(
            ErrorKind::Tls,
            format!("the TLS handshake with {host} failed"),
        )
        .with_source(inner);
    }
    Error::new(
        ErrorKind::Transport,
        format!("the TLS handshake with {host} failed"),
    )
}
