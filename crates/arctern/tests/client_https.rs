//! The client over HTTPS: a real TLS server on loopback whose certificate comes from a test
//! CA made here, a client that trusts it (and one that trusts another CA), and a user's
//! tower service in place of the built-in pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arctern::client::{Client, HttpTransport};
use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::transport::http::client::{Pool, PoolBody};
use arctern::transport::http::{HttpConfig, StreamableHttpService};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpListener;

/// A certificate authority made for one test, and a server certificate it signed for
/// `localhost` and `127.0.0.1`.
struct TestCa {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn test_ca(name: &str) -> TestCa {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    TestCa {
        ca_pem: ca.pem(),
        chain: vec![leaf.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    }
}

fn text(result: &arctern::types::tools::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// An MCP server behind TLS on 127.0.0.1; every request's headers are recorded.
async fn serve_tls(ca: &TestCa) -> (String, Arc<Mutex<Vec<http::HeaderMap>>>) {
    let server = McpServer::new("tls-test")
        .tool(
            "echo",
            "Echoes.",
            |Args(t): Args<Text>| async move { t.text },
        )
        .build()
        .unwrap();
    let service = StreamableHttpService::new(server, HttpConfig::default());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(ca.chain.clone(), ca.key.clone_key())
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, service, record) = (acceptor.clone(), service.clone(), record.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to serve.
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let mut service = service.clone();
                    record.lock().unwrap().push(req.headers().clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let bytes = body.collect().await.unwrap().to_bytes();
                        let req = Request::from_parts(parts, Full::new(bytes));
                        tower_service::Service::call(&mut service, req).await
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    (format!("https://localhost:{port}/mcp"), seen)
}

#[tokio::test]
async fn calls_a_tool_over_https_with_a_root_given_through_the_api() {
    let ca = test_ca("good");
    let (url, _) = serve_tls(&ca).await;
    let transport = HttpTransport::builder(&url)
        .add_root_certificates_pem(ca.ca_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let client = Client::builder().connect_with(transport).await.unwrap();
    let result = client
        .call_tool("echo", json!({"text": "over TLS"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "over TLS");
    // The same over 127.0.0.1: the certificate names the address too.
    let url = url.replace("localhost", "127.0.0.1");
    let transport = HttpTransport::builder(&url)
        .add_root_certificates_pem(ca.ca_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let client = Client::builder().connect_with(transport).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap()[0].name, "echo");
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_with_a_tls_error() {
    let ca = test_ca("server");
    let other = test_ca("other");
    let (url, seen) = serve_tls(&ca).await;
    let transport = HttpTransport::builder(&url)
        .add_root_certificates_pem(other.ca_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let err = Client::builder().connect_with(transport).await.unwrap_err();
    assert!(err.is_tls(), "{err:?}");
    assert_eq!(err.kind(), arctern::ErrorKind::Tls);
    let text = format!("{err}");
    assert!(
        text.contains("TLS handshake with localhost failed"),
        "{text}"
    );
    assert!(text.to_ascii_lowercase().contains("issuer"), "{text}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "no request may get through"
    );
    // Without any root of ours, the system's and webpki's do not know the test CA either.
    let transport = HttpTransport::new(&url).unwrap();
    let err = Client::builder().connect_with(transport).await.unwrap_err();
    assert!(err.is_tls(), "{err:?}");
}

#[test]
fn bad_root_certificates_are_configuration_errors() {
    let err = HttpTransport::builder("https://localhost/mcp")
        .add_root_certificates_pem(b"not a certificate")
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");
    let err = HttpTransport::builder("https://localhost/mcp")
        .add_root_certificates_file("/nonexistent/ca.pem")
        .unwrap_err();
    assert!(err.is_config(), "{err:?}");
    assert!(format!("{err}").contains("/nonexistent/ca.pem"));
}

/// A user's tower service: the built-in pool with a header added to every request.
#[derive(Clone)]
struct AddHeader {
    inner: Pool,
    calls: Arc<Mutex<u32>>,
}

impl tower_service::Service<Request<Full<Bytes>>> for AddHeader {
    type Response = Response<PoolBody>;
    type Error = arctern::Error;
    type Future = Pin<Box<dyn Future<Output = arctern::Result<Response<PoolBody>>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<arctern::Result<()>> {
        tower_service::Service::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, mut request: Request<Full<Bytes>>) -> Self::Future {
        *self.calls.lock().unwrap() += 1;
        request
            .headers_mut()
            .insert("x-brought-along", http::HeaderValue::from_static("yes"));
        tower_service::Service::call(&mut self.inner, request)
    }
}

#[tokio::test]
async fn a_users_tower_service_carries_every_request() {
    let ca = test_ca("layered");
    let (url, seen) = serve_tls(&ca).await;
    let pool = Pool::builder()
        .add_root_certificates_pem(ca.ca_pem.as_bytes())
        .unwrap()
        .build();
    let calls = Arc::new(Mutex::new(0));
    let service = AddHeader {
        inner: pool,
        calls: calls.clone(),
    };
    let transport = HttpTransport::builder(&url)
        .service(service)
        .build()
        .unwrap();
    let client = Client::builder().connect_with(transport).await.unwrap();
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "hi");
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "discover and the call");
    assert!(seen.iter().all(|h| h["x-brought-along"] == "yes"));
    assert_eq!(*calls.lock().unwrap() as usize, seen.len());
}

#[tokio::test]
async fn https_needs_a_host_and_refuses_other_schemes() {
    let err = HttpTransport::new("ftp://localhost/mcp").unwrap_err();
    assert!(err.is_config());
    assert!(HttpTransport::new("https://localhost/mcp").is_ok());
}
