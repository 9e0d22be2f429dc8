//! Reaching real remote servers: HTTPS with a certificate from a test CA given with
//! `--cacert` (a TLS terminator in front of an MCP server, on loopback), and an
//! OAuth-protected server without a terminal (the browser flow itself is in
//! `interactive.rs`), and `arctern serve` over HTTPS with a certificate from a test CA,
//! reloaded on SIGHUP.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arctern::server::McpServer;
use arctern::server::extract::Args;
use common::{protected_server, runtime, scratch, serve};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::net::{TcpListener, TcpStream};

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// A test CA's PEM, and a TLS acceptor whose certificate it signed for `localhost`.
fn test_ca(name: &str) -> (String, tokio_rustls::TlsAcceptor) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
    .unwrap();
    (ca.pem(), tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// A TLS terminator on 127.0.0.1 in front of the plain HTTP server at `backend`; returns
/// the HTTPS URL of the same path.
fn terminate_tls(acceptor: tokio_rustls::TlsAcceptor, backend: &str) -> String {
    let rest = backend.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let authority = authority.to_owned();
    runtime().block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, authority) = (acceptor.clone(), authority.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(authority).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        format!("https://localhost:{port}/{path}")
    })
}

#[test]
fn calls_an_https_server_whose_certificate_comes_from_cacert() {
    let server = McpServer::new("tls")
        .tool(
            "echo",
            "Echoes.",
            |Args(t): Args<Text>| async move { t.text },
        )
        .build()
        .unwrap();
    let backend = serve(server);
    let (ca, acceptor) = test_ca("cli");
    let url = terminate_tls(acceptor, &backend);
    let dir = scratch("https");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let ca_path = ca_file.to_str().unwrap();
    let creds = dir.join("credentials.json");
    let env = [("ARCTERN_CREDENTIALS", creds.to_str().unwrap())];

    let run = common::run_with(
        &dir,
        &[
            "call",
            &url,
            "echo",
            "--arg",
            "text=over TLS",
            "--cacert",
            ca_path,
            "--output",
            "json",
        ],
        &env,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["result"]["content"][0]["text"],
        "over TLS",
        "{run:?}"
    );

    // The same through SSL_CERT_FILE.
    let run = common::run_with(
        &dir,
        &["tools", &url],
        &[env[0], ("SSL_CERT_FILE", ca_path)],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("echo"), "{run:?}");

    // Without the CA: the certificate does not verify (exit 3, a TLS message).
    let run = common::run_with(&dir, &["call", &url, "echo", "--arg", "text=x"], &env);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("TLS handshake with localhost failed"),
        "{run:?}"
    );
    // A file that is not a certificate is a usage error.
    let run = common::run_with(
        &dir,
        &["tools", &url, "--cacert", creds.to_str().unwrap()],
        &env,
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--cacert"), "{run:?}");
}

#[test]
fn without_a_terminal_a_protected_server_asks_for_login_and_logout_forgets() {
    let server = protected_server();
    let dir = scratch("oauth-scripted");
    let creds = dir.join("credentials.json");
    let env = [("ARCTERN_CREDENTIALS", creds.to_str().unwrap())];
    let run = common::run_with(&dir, &["call", &server.url, "whoami"], &env);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("arctern login {}", server.url)),
        "{run:?}"
    );
    assert_eq!(server.auth.authorization_requests(), 0);
    let run = common::run_with(&dir, &["logout", &server.url], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("No sign-in was kept"), "{run:?}");
}

/// A new test CA, written to `dir/<name>-ca.pem`, and the PEM of a certificate it signed
/// for 127.0.0.1 and of its key.
fn issue_for_loopback(dir: &Path, name: &str) -> (PathBuf, String, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let ca_file = dir.join(format!("{name}-ca.pem"));
    std::fs::write(&ca_file, ca.pem()).unwrap();
    (ca_file, leaf.pem(), key.serialize_pem())
}

/// `arctern call URL echo --arg text=TEXT`, trusting `ca` when given.
fn echo(dir: &Path, url: &str, text: &str, ca: Option<&Path>) -> common::Run {
    let creds = dir.join("credentials.json");
    let arg = format!("text={text}");
    let mut args = vec!["call", url, "echo", "--arg", &arg, "--output", "json"];
    if let Some(ca) = ca {
        args.extend(["--cacert", ca.to_str().unwrap()]);
    }
    common::run_with(
        dir,
        &args,
        &[("ARCTERN_CREDENTIALS", creds.to_str().unwrap())],
    )
}

#[test]
fn serve_tls_serves_the_demo_over_https() {
    let dir = scratch("serve-tls");
    let (ca, cert_pem, key_pem) = issue_for_loopback(&dir, "first");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());

    let demo = common::Demo::start_with(&["--tls-cert", cert, "--tls-key", key]);
    assert!(
        demo.url().starts_with("https://127.0.0.1:"),
        "{}",
        demo.url()
    );
    let run = echo(&dir, demo.url(), "over TLS", Some(&ca));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["result"]["content"][0]["text"],
        "over TLS",
        "{run:?}"
    );

    // Without the CA the certificate does not verify: exit 3, saying why.
    let run = echo(&dir, demo.url(), "x", None);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("TLS handshake with 127.0.0.1 failed"),
        "{run:?}"
    );

    // Files that do not load stop the server before it listens, naming the file.
    let missing = dir.join("missing.pem");
    let run = common::run_in(
        &dir,
        &[
            "serve",
            "--port",
            "0",
            "--tls-cert",
            missing.to_str().unwrap(),
            "--tls-key",
            key,
        ],
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("cannot read the TLS certificate")
            && run.stderr.contains("missing.pem"),
        "{run:?}"
    );
    let run = common::run_in(
        &dir,
        &["serve", "--port", "0", "--tls-cert", key, "--tls-key", key],
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("no certificate in"), "{run:?}");
    // A certificate without its key is a usage error.
    let run = common::run_in(&dir, &["serve", "--port", "0", "--tls-cert", cert]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--tls-key"), "{run:?}");
}

#[cfg(unix)]
#[test]
fn serve_tls_takes_a_renewed_certificate_on_sighup_and_keeps_it_when_a_file_is_bad() {
    let dir = scratch("serve-tls-reload");
    let (first_ca, cert_pem, key_pem) = issue_for_loopback(&dir, "first");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    let demo = common::Demo::start_with(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let hangup = || {
        let status = std::process::Command::new("kill")
            .args(["-HUP", &demo.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    let run = echo(&dir, demo.url(), "first", Some(&first_ca));
    assert_eq!(run.code, 0, "{run:?}");

    // Renewed (by another CA, to tell them apart), then SIGHUP: new handshakes get it.
    let (second_ca, cert_pem, key_pem) = issue_for_loopback(&dir, "second");
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    hangup();
    demo.wait_for_log("reloaded the TLS certificate", 1);
    let run = echo(&dir, demo.url(), "second", Some(&second_ca));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["result"]["content"][0]["text"],
        "second",
        "{run:?}"
    );
    let run = echo(&dir, demo.url(), "first", Some(&first_ca));
    assert_eq!(run.code, 3, "the old certificate is gone: {run:?}");

    // A bad file on reload: the error is logged and the current certificate stays.
    std::fs::write(&cert, "not a certificate").unwrap();
    hangup();
    demo.wait_for_log("TLS reload failed, keeping the current certificate", 1);
    assert!(demo.log().contains("no certificate in"), "{}", demo.log());
    let run = echo(&dir, demo.url(), "still", Some(&second_ca));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["result"]["content"][0]["text"],
        "still",
        "{run:?}"
    );
    assert_eq!(
        demo.log().matches("reloaded the TLS certificate").count(),
        1
    );
}
