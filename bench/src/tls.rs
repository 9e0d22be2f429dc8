//! HTTPS for the benchmark: a test CA that each run makes (rcgen), the server configuration
//! the rmcp server uses (the same as arctern's built-in TLS: rustls on ring, TLS 1.2 and 1.3,
//! ALPN `http/1.1`), and the load generator's client configuration (rustls on ring, trusting
//! only that CA, without session resumption so that every handshake is a full one).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Any error of this module.
pub type TlsError = Box<dyn std::error::Error + Send + Sync>;

/// The file names [`make_test_ca`] writes in its directory.
pub const CA_FILE: &str = "ca.pem";
/// The server's certificate chain (leaf first, then the CA).
pub const CERT_FILE: &str = "cert.pem";
/// The server's private key (PKCS#8).
pub const KEY_FILE: &str = "key.pem";

/// Makes a CA and a server certificate for `127.0.0.1` and `localhost` signed by it (both
/// ECDSA P-256), and writes [`CA_FILE`], [`CERT_FILE`] and [`KEY_FILE`] into `dir`.
pub fn make_test_ca(dir: &Path) -> Result<(), TlsError> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    std::fs::create_dir_all(dir)?;
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "arctern bench test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let leaf_cert = leaf.signed_by(&key, &issuer)?;
    std::fs::write(dir.join(CA_FILE), ca_cert.pem())?;
    std::fs::write(
        dir.join(CERT_FILE),
        format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
    )?;
    std::fs::write(dir.join(KEY_FILE), key.serialize_pem())?;
    Ok(())
}

/// The server side, as arctern's standalone server configures it: ring, the safe default
/// protocol versions, no client authentication, ALPN `http/1.1`, this chain and key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The load generator's side: ring, trusting only the CA in `ca`, ALPN `http/1.1`, and no
/// session resumption (every connection pays a full handshake, which is what the handshake
/// figure measures).
pub fn client_config(ca: &Path) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}
