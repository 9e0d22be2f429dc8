//! `arctern serve --tls-cert FILE --tls-key FILE`: the demo over HTTPS (rustls on the ring
//! provider), the certificate and key re-read on `SIGHUP`.

use std::path::PathBuf;

use arctern::transport::http::{TlsConfig, TlsReloader};
use clap::Args;

/// The TLS options of `arctern serve`.
#[derive(Args)]
pub struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM, leaf first; with --tls-key). Both
    /// files are read again on SIGHUP, so a renewed certificate takes effect without a
    /// restart (open connections keep theirs); files that do not load then keep the
    /// current certificate, and the error is logged.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "stdio"
    )]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_cert",
        conflicts_with = "stdio"
    )]
    tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The server's TLS settings, when HTTPS was asked for. The files are read when the
    /// server starts listening (a bad one stops it there, naming the file).
    pub fn config(&self) -> Option<TlsConfig> {
        let (cert, key) = (self.tls_cert.as_ref()?, self.tls_key.as_ref()?);
        // Reloaded by `watch_sighup`, which says so on stderr.
        Some(TlsConfig::from_pem_files(cert, key))
    }

    /// The line `serve` prints about the certificate.
    pub fn describe(&self) -> Option<String> {
        let cert = self.tls_cert.as_ref()?;
        Some(format!(
            "HTTPS with the certificate in {} (SIGHUP reloads it). A client that does not \
             trust its CA takes it with --cacert CA.pem (or SSL_CERT_FILE).",
            cert.display()
        ))
    }
}

/// Re-reads the certificate and key on each SIGHUP, saying what happened on stderr
/// (operators and the tests read it). The task ends with the process.
pub fn watch_sighup(reloader: TlsReloader) -> Option<tokio::task::JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "arctern: cannot listen for SIGHUP ({e}); the TLS certificate is not reloaded"
                );
                return None;
            }
        };
        Some(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match reloader.reload() {
                    Ok(()) => eprintln!("arctern: reloaded the TLS certificate and key"),
                    Err(e) => eprintln!(
                        "arctern: TLS reload failed, keeping the current certificate: {e}"
                    ),
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = reloader;
        None
    }
}
