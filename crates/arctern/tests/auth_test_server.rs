//! The test authorization server's OAuth flows over real HTTP: metadata, registration,
//! the at-once `/authorize`, the token endpoint's grants (PKCE, refresh, client
//! credentials, private_key_jwt, DPoP) and introspection.

#![cfg(all(feature = "auth", feature = "http", feature = "testing"))]

use std::time::Duration;

use arctern::auth::jose::{
    Algorithm, CLIENT_ASSERTION_TYPE, Claims, DpopProof, JwkSet, Jws, SigningKey, base64url,
    client_assertion,
};
use arctern::auth::resource::TokenVerifier;
use arctern::testing::TestAuthServer;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

async fn send(
    url: &str,
    method: Method,
    headers: &[(&str, String)],
    body: String,
) -> (StatusCode, http::HeaderMap, Value) {
    let uri: http::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().clone();
    let stream = tokio::net::TcpStream::connect(authority.as_str())
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut request = Request::builder()
        .method(method)
        .uri(uri.path_and_query().unwrap().as_str())
        .header("host", authority.as_str());
    for (k, v) in headers {
        request = request.header(*k, v.as_str());
    }
    let response = sender
        .send_request(request.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

async fn token(
    auth: &TestAuthServer,
    headers: &[(&str, String)],
    pairs: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut all = vec![(FORM.0, FORM.1.to_owned())];
    all.extend(headers.iter().cloned());
    let (status, _, body) = send(&auth.token_endpoint(), Method::POST, &all, form(pairs)).await;
    (status, body)
}

#[tokio::test]
async fn authorization_code_with_pkce_then_refresh() {
    let auth = TestAuthServer::builder()
        .scopes_supported(["mcp:tools"])
        .start()
        .await
        .unwrap();
    let (status, _, metadata) = send(&auth.metadata_url(), Method::GET, &[], String::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(metadata["issuer"], auth.issuer());
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        metadata["authorization_response_iss_parameter_supported"],
        true
    );

    // Dynamic registration of a public client.
    let redirect = "http://localhost:3000/callback";
    let (status, _, client) = send(
        &auth.registration_endpoint(),
        Method::POST,
        &[("content-type", "application/json".to_owned())],
        json!({"redirect_uris": [redirect], "token_endpoint_auth_method": "none", "application_type": "native"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let client_id = client["client_id"].as_str().unwrap().to_owned();
    assert!(client.get("client_secret").is_none());

    // /authorize answers at once with a 302 carrying code, state and iss.
    let verifier = "a-long-enough-code-verifier-with-43-characters-or-more";
    let challenge = base64url::encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ));
    let resource = "http://127.0.0.1:9/mcp";
    let query = form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", redirect),
        ("state", "xyz"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("scope", "mcp:tools"),
        ("resource", resource),
    ]);
    let (status, headers, _) = send(
        &format!("{}?{query}", auth.authorization_endpoint()),
        Method::GET,
        &[],
        String::new(),
    )
    .await;
    assert_eq!(status, StatusCode::FOUND);
    let location: http::Uri = headers["location"].to_str().unwrap().parse().unwrap();
    assert_eq!(location.path(), "/callback");
    let params: std::collections::HashMap<String, String> =
        form_urlencoded::parse(location.query().unwrap().as_bytes())
            .into_owned()
            .collect();
    assert_eq!(params["state"], "xyz");
    assert_eq!(params["iss"], auth.issuer());
    let code = params["code"].clone();

    // A wrong verifier fails (and uses the code up).
    let base = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect),
        ("client_id", client_id.as_str()),
        ("resource", resource),
    ];
    let mut wrong = base.to_vec();
    wrong.push((
        "code_verifier",
        "wrong-verifier-wrong-verifier-wrong-verifier",
    ));
    let (status, body) = token(&auth, &[], &wrong).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_grant");

    // Again, properly.
    let (_, headers, _) = send(
        &format!("{}?{query}", auth.authorization_endpoint()),
        Method::GET,
        &[],
        String::new(),
    )
    .await;
    let location: http::Uri = headers["location"].to_str().unwrap().parse().unwrap();
    let code: String = form_urlencoded::parse(location.query().unwrap().as_bytes())
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let mut good = base.to_vec();
    good[1] = ("code", code.as_str());
    good.push(("code_verifier", verifier));
    let (status, body) = token(&auth, &[], &good).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    let access = body["access_token"].as_str().unwrap();
    let verified = auth
        .jwt_verifier(resource)
        .build()
        .unwrap()
        .verify(access)
        .await
        .unwrap();
    assert_eq!(verified.subject, "test-user");
    assert_eq!(verified.client_id.as_deref(), Some(client_id.as_str()));
    assert_eq!(verified.scopes, ["mcp:tools"]);
    assert_eq!(
        Jws::parse(access).unwrap().header().typ.as_deref(),
        Some("at+jwt")
    );

    // Refresh (rotated: the old refresh token is spent).
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", client_id.as_str()),
        ("resource", resource),
    ];
    let (status, body) = token(&auth, &[], &pairs).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_ne!(body["refresh_token"].as_str().unwrap(), refresh);
    let (status, _) = token(&auth, &[], &pairs).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn client_credentials_with_secrets_and_private_key_jwt() {
    let auth = TestAuthServer::start().await.unwrap();
    let resource = "http://127.0.0.1:9/mcp";
    let secret = auth
        .register_client("svc", "client_secret_basic", &[])
        .unwrap();
    let basic = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("svc:{secret}"),
    );
    let pairs = [
        ("grant_type", "client_credentials"),
        ("scope", "mcp:tools"),
        ("resource", resource),
    ];
    let (status, body) = token(
        &auth,
        &[("authorization", format!("Basic {basic}"))],
        &pairs,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.get("refresh_token").is_none());
    let verified = auth
        .jwt_verifier(resource)
        .build()
        .unwrap()
        .verify(body["access_token"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(verified.subject, "svc");
    let (status, body) = token(
        &auth,
        &[("authorization", "Basic c3ZjOndyb25n".to_owned())],
        &pairs,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );

    // private_key_jwt: register the public key, then assert with the private one.
    let key = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("c1");
    let (_, _, client) = send(
        &auth.registration_endpoint(),
        Method::POST,
        &[("content-type", "application/json".to_owned())],
        json!({"token_endpoint_auth_method": "private_key_jwt", "grant_types": ["client_credentials"], "jwks": JwkSet::new([key.public_jwk()])}).to_string(),
    )
    .await;
    let id = client["client_id"].as_str().unwrap();
    let assertion = client_assertion(&key, id, auth.issuer(), Duration::from_secs(60)).unwrap();
    let mut with_jwt = pairs.to_vec();
    with_jwt.extend([
        ("client_assertion_type", CLIENT_ASSERTION_TYPE),
        ("client_assertion", assertion.as_str()),
    ]);
    let (status, body) = token(&auth, &[], &with_jwt).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Signed by another key: refused.
    let other = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("c1");
    let forged = client_assertion(&other, id, auth.issuer(), Duration::from_secs(60)).unwrap();
    let mut with_forged = pairs.to_vec();
    with_forged.extend([
        ("client_assertion_type", CLIENT_ASSERTION_TYPE),
        ("client_assertion", forged.as_str()),
    ]);
    assert_eq!(
        token(&auth, &[], &with_forged).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn dpop_at_the_token_endpoint_binds_the_token() {
    let auth = TestAuthServer::start().await.unwrap();
    let secret = auth
        .register_client("svc", "client_secret_post", &[])
        .unwrap();
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let proof = DpopProof::new("POST", &auth.token_endpoint())
        .sign(&key)
        .unwrap();
    let pairs = [
        ("grant_type", "client_credentials"),
        ("client_id", "svc"),
        ("client_secret", secret.as_str()),
    ];
    let (status, body) = token(&auth, &[("dpop", proof)], &pairs).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["token_type"], "DPoP");
    let claims: Claims = serde_json::from_slice(
        Jws::parse(body["access_token"].as_str().unwrap())
            .unwrap()
            .unverified_payload(),
    )
    .unwrap();
    assert_eq!(claims.jkt(), Some(key.thumbprint().as_str()));
    // A proof for another URL is refused.
    let wrong = DpopProof::new("POST", "http://127.0.0.1:1/token")
        .sign(&key)
        .unwrap();
    let (status, body) = token(&auth, &[("dpop", wrong)], &pairs).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_dpop_proof"))
    );
}

#[tokio::test]
async fn introspection_needs_client_authentication() {
    let auth = TestAuthServer::start().await.unwrap();
    let token = auth.token().audience("x").issue();
    let (status, _, _) = send(
        &auth.introspection_endpoint(),
        Method::POST,
        &[(FORM.0, FORM.1.to_owned())],
        form(&[("token", &token)]),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let basic = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        "resource-server:resource-server-secret",
    );
    let headers = [
        (FORM.0, FORM.1.to_owned()),
        ("authorization", format!("Basic {basic}")),
    ];
    let (_, _, body) = send(
        &auth.introspection_endpoint(),
        Method::POST,
        &headers,
        form(&[("token", &token)]),
    )
    .await;
    assert_eq!(body["active"], true);
    assert_eq!(body["aud"], "x");
    auth.revoke(&token);
    let (_, _, body) = send(
        &auth.introspection_endpoint(),
        Method::POST,
        &headers,
        form(&[("token", &token)]),
    )
    .await;
    assert_eq!(body, json!({"active": false}));
}
