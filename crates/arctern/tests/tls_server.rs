//! TLS on the standalone server: real handshakes on loopback with a test CA, and a
//! certificate reload (programmatic and on SIGHUP) that open connections survive.

#![cfg(all(feature = "server", feature = "tls"))]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arctern::server::McpServer;
use arctern::transport::http::{HttpServer, TlsConfig};
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};

/// A CA and the leaf certificates it signs for `localhost` and `127.0.0.1`.
struct Ca {
    cert: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf's (certificate PEM, key PEM, certificate DER).
    fn leaf(&self, name: &str) -> (String, String, CertificateDer<'static>) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone())
    }

    fn client(&self) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.clone()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

/// A directory of its own under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("arctern-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        // Write then rename, as a deployment should, so a reload never sees half a file.
        let tmp = self.0.join(format!("{name}.tmp"));
        std::fs::write(&tmp, contents).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An HTTP/1.1 connection over TLS; the certificate the server presented.
async fn connect(
    addr: SocketAddr,
    connector: &tokio_rustls::TlsConnector,
) -> Result<(SendRequest<Full<Bytes>>, CertificateDer<'static>), std::io::Error> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await?;
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    Ok((sender, presented))
}

/// `tools/call echo` over `sender`; the text it returns.
async fn echo(sender: &mut SendRequest<Full<Bytes>>, addr: SocketAddr, text: &str) -> String {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "echo", "arguments": {"text": text},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn server() -> arctern::server::Server<impl arctern::server::Handler> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Echo {
        text: String,
    }
    McpServer::new("tls")
        .tool(
            "echo",
            "Echoes.",
            |arctern::server::extract::Args(e): arctern::server::extract::Args<Echo>| async move {
                e.text
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn serves_https_and_reloads_without_dropping_connections() {
    let dir = TempDir::new("reload");
    let (old_ca, new_ca) = (Ca::new("old CA"), Ca::new("new CA"));
    let (cert, key, old_der) = old_ca.leaf("old");
    let cert_path = dir.write("cert.pem", &cert);
    let key_path = dir.write("key.pem", &key);

    let bound = HttpServer::new(server())
        .bind("127.0.0.1:0")
        .tls(TlsConfig::from_pem_files(&cert_path, &key_path))
        .listen()
        .await
        .unwrap();
    let addr = bound.local_addr();
    assert!(bound.url().starts_with("https://127.0.0.1:"));
    let reloader = bound.tls_reloader().unwrap();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }));

    // A client trusting the old CA talks over TLS, and keeps its connection.
    let (mut kept, presented) = connect(addr, &old_ca.client()).await.unwrap();
    assert_eq!(presented, old_der);
    assert_eq!(echo(&mut kept, addr, "one").await, "one");
    // Plain HTTP on the TLS port gets nothing useful.
    let (mut plain, conn) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(
        tokio::net::TcpStream::connect(addr).await.unwrap(),
    ))
    .await
    .unwrap();
    tokio::spawn(conn);
    let request = Request::post("/mcp")
        .header("host", "x")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(plain.send_request(request).await.is_err());

    // A bad reload keeps the old certificate.
    let (_, other_key, _) = old_ca.leaf("mismatch");
    dir.write("key.pem", &other_key);
    assert!(
        reloader.reload().is_err(),
        "a key that does not match is refused"
    );
    let (_, presented) = connect(addr, &old_ca.client()).await.unwrap();
    assert_eq!(presented, old_der);

    // Switch to a certificate from another CA.
    let (cert, key, new_der) = new_ca.leaf("new");
    dir.write("cert.pem", &cert);
    dir.write("key.pem", &key);
    reloader.reload().unwrap();

    // New connections get the new certificate; clients trusting only the old CA fail.
    let (mut fresh, presented) = connect(addr, &new_ca.client()).await.unwrap();
    assert_eq!(presented, new_der);
    assert_eq!(echo(&mut fresh, addr, "two").await, "two");
    assert!(connect(addr, &old_ca.client()).await.is_err());
    // The connection opened before the reload still works.
    assert_eq!(echo(&mut kept, addr, "three").await, "three");

    serving.abort();
}

#[tokio::test]
async fn sighup_reloads_the_certificate() {
    let dir = TempDir::new("sighup");
    let (old_ca, new_ca) = (Ca::new("old CA"), Ca::new("new CA"));
    let (cert, key, _) = old_ca.leaf("old");
    let cert_path = dir.write("cert.pem", &cert);
    let key_path = dir.write("key.pem", &key);
    let bound = HttpServer::new(server())
        .bind("127.0.0.1:0")
        .tls(TlsConfig::from_pem_files(&cert_path, &key_path).reload_on_sighup(true))
        .listen()
        .await
        .unwrap();
    let addr = bound.local_addr();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(bound.serve_with_shutdown(async move { stopped.cancelled().await }));
    let (mut kept, _) = connect(addr, &old_ca.client()).await.unwrap();
    assert_eq!(echo(&mut kept, addr, "before").await, "before");

    let (cert, key, new_der) = new_ca.leaf("new");
    dir.write("cert.pem", &cert);
    dir.write("key.pem", &key);
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The reload runs on the server's task: wait (bounded) until new handshakes see it.
    let mut presented = None;
    for _ in 0..100 {
        if let Ok((_, cert)) = connect(addr, &new_ca.client()).await {
            presented = Some(cert);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(presented, Some(new_der), "SIGHUP switched the certificate");
    assert_eq!(echo(&mut kept, addr, "after").await, "after");
    stop.cancel();
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn bad_files_fail_at_listen() {
    let dir = TempDir::new("bad");
    let cert = dir.write("cert.pem", "not a certificate");
    let key = dir.write("key.pem", "not a key");
    let err = HttpServer::new(server())
        .bind("127.0.0.1:0")
        .tls(TlsConfig::from_pem_files(&cert, dir.0.join("missing.pem")))
        .listen()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");
    let err = HttpServer::new(server())
        .bind("127.0.0.1:0")
        .tls(TlsConfig::from_pem_files(&cert, &key))
        .listen()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
}

/// One request over `sender`: the status, the challenge and the body.
async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> (StatusCode, Option<String>, String) {
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    (
        status,
        challenge,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[cfg(all(feature = "auth", feature = "testing"))]
#[tokio::test]
async fn the_standalone_server_protects_its_endpoint_over_https() {
    use arctern::auth::resource::ProtectedResource;
    use arctern::testing::TestAuthServer;

    let ca = Ca::new("protect-ca");
    let dir = TempDir::new("protect");
    let (cert, key, _) = ca.leaf("server");
    let cert = dir.write("cert.pem", &cert);
    let key = dir.write("key.pem", &key);
    let auth = TestAuthServer::start().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("https://{addr}/mcp");
    let protected = ProtectedResource::builder(&resource)
        .authorization_server(auth.issuer())
        .required_scopes(["mcp:tools"])
        .verifier(auth.jwt_verifier(&resource).build().unwrap())
        .build()
        .unwrap();
    let bound = HttpServer::new(server())
        .listener(listener)
        .tls(TlsConfig::from_pem_files(&cert, &key))
        .protect(protected)
        .listen()
        .await
        .unwrap();
    assert_eq!(bound.url(), resource);
    let serving = tokio::spawn(bound.serve());
    let (mut sender, _) = connect(addr, &ca.client()).await.unwrap();

    // The metadata is public, at both well-known URIs.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let request = Request::get(path)
            .header("host", addr.to_string())
            .body(Full::new(Bytes::new()))
            .unwrap();
        let (status, _, body) = exchange(&mut sender, request).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let metadata: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(metadata["resource"], resource);
        assert_eq!(metadata["authorization_servers"][0], auth.issuer());
    }
    // The endpoint wants a token; other paths are not found.
    let call = |token: Option<&str>| {
        let mut request = Request::post("/mcp")
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    };
    let (status, challenge, _) = exchange(&mut sender, call(None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge.unwrap(),
        format!(
            r#"Bearer resource_metadata="https://{addr}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
        )
    );
    let token = auth
        .token()
        .audience(&resource)
        .scopes(["mcp:tools"])
        .issue();
    let (status, _, body) = exchange(&mut sender, call(Some(&token))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("\"echo\""), "{body}");
    let request = Request::get("/elsewhere")
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(
        exchange(&mut sender, request).await.0,
        StatusCode::NOT_FOUND
    );
    serving.abort();
}
