//! Requests to the authorization server: dynamic registration (RFC 7591), token requests
//! with client authentication (RFC 6749 §2.3, RFC 7523), and their answers.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method, Request};
use http_body_util::Full;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Limits, auth_error};
use crate::Result;
use crate::transport::http::client::{Fetched, Fetcher};

/// Random bytes from the system, base64url: PKCE verifiers, `state`, `jti`.
pub(crate) fn random_token(bytes: usize) -> Result<String> {
    use ring::rand::SecureRandom as _;
    let mut buf = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| auth_error("the system has no randomness to offer"))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

/// The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How the client proves who it is at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientAuth {
    /// `client_id` in the form only (public client).
    None { client_id: String },
    /// HTTP Basic with the form-urlencoded id and secret (RFC 6749 §2.3.1).
    Basic { client_id: String, secret: String },
    /// `client_id` and `client_secret` in the form.
    Post { client_id: String, secret: String },
    /// A signed JWT assertion (RFC 7523 §2.2), made by the caller.
    Assertion {
        client_id: String,
        assertion: String,
    },
}

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl ClientAuth {
    fn apply(&self, form: &mut Vec<(String, String)>, request: &mut http::request::Builder) {
        match self {
            ClientAuth::None { client_id } => form.push(("client_id".into(), client_id.clone())),
            ClientAuth::Basic { client_id, secret } => {
                let pair = format!("{}:{}", form_encode(client_id), form_encode(secret));
                let value = format!("Basic {}", STANDARD.encode(pair));
                if let Some(headers) = request.headers_mut()
                    && let Ok(value) = HeaderValue::from_str(&value)
                {
                    headers.insert(AUTHORIZATION, value);
                }
            }
            ClientAuth::Post { client_id, secret } => {
                form.push(("client_id".into(), client_id.clone()));
                form.push(("client_secret".into(), secret.clone()));
            }
            ClientAuth::Assertion {
                client_id,
                assertion,
            } => {
                form.push(("client_id".into(), client_id.clone()));
                form.push((
                    "client_assertion_type".into(),
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push(("client_assertion".into(), assertion.clone()));
            }
        }
    }
}

/// A successful token response (RFC 6749 §5.1), with the expiry made absolute.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) token_type: String,
    pub(crate) refresh_token: Option<String>,
    pub(crate) expires_at: Option<u64>,
    pub(crate) scope: Option<String>,
}

#[derive(Deserialize)]
struct TokenBody {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    scope: Option<String>,
}

/// An error answer of the token endpoint (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenError {
    pub(crate) status: http::StatusCode,
    pub(crate) error: String,
    pub(crate) description: Option<String>,
    /// A `DPoP-Nonce` header that came with it.
    pub(crate) dpop_nonce: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (HTTP {})", self.error, self.status)?;
        if let Some(d) = &self.description {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TokenError {}

/// A form POST to `endpoint`, with `extra` headers (a DPoP proof).
pub(crate) async fn post_form(
    fetcher: &Fetcher,
    endpoint: &str,
    mut form: Vec<(String, String)>,
    auth: Option<&ClientAuth>,
    extra: &[(&'static str, String)],
    limits: &Limits,
) -> Result<Fetched> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(endpoint)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ACCEPT, "application/json");
    if let Some(auth) = auth {
        auth.apply(&mut form, &mut request);
    }
    for (name, value) in extra {
        request = request.header(*name, value);
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter())
        .finish();
    let request = request.body(Full::new(Bytes::from(body))).map_err(|e| {
        auth_error(format!("cannot build a request to {endpoint:?}")).with_source(e)
    })?;
    fetcher
        .fetch(request, limits.max_response_size, limits.timeout)
        .await
}

/// Reads a token endpoint's answer: the tokens, or the error it gave.
pub(crate) fn read_tokens(answer: &Fetched) -> std::result::Result<Tokens, TokenError> {
    let dpop_nonce = answer
        .headers
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if !answer.status.is_success() {
        let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        return Err(TokenError {
            status: answer.status,
            error: body["error"]
                .as_str()
                .unwrap_or("invalid_response")
                .to_owned(),
            description: body["error_description"].as_str().map(str::to_owned),
            dpop_nonce,
        });
    }
    let invalid = |why: String| TokenError {
        status: answer.status,
        error: "invalid_response".into(),
        description: Some(why),
        dpop_nonce: None,
    };
    let body: TokenBody = serde_json::from_slice(&answer.body)
        .map_err(|e| invalid(format!("the token response is not valid: {e}")))?;
    if body.access_token.is_empty() {
        return Err(invalid(
            "the token response has an empty access_token".into(),
        ));
    }
    let token_type = body.token_type.unwrap_or_else(|| "Bearer".into());
    let token_type = if token_type.eq_ignore_ascii_case("bearer") {
        "Bearer".to_owned()
    } else if token_type.eq_ignore_ascii_case("dpop") {
        "DPoP".to_owned()
    } else {
        return Err(invalid(format!("unsupported token_type {token_type:?}")));
    };
    let expires_in = match body.expires_in {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    Ok(Tokens {
        access_token: body.access_token,
        token_type,
        refresh_token: body.refresh_token.filter(|t| !t.is_empty()),
        expires_at: expires_in.map(|s| now().saturating_add(s)),
        scope: body.scope,
    })
}

/// A dynamic client registration (RFC 7591) answer.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) token_endpoint_auth_method: Option<String>,
}

/// Registers a native client with `redirect_uri` at `endpoint`.
pub(crate) async fn register(
    fetcher: &Fetcher,
    endpoint: &str,
    client_name: &str,
    redirect_uri: &str,
    scope: Option<&str>,
    auth_method: Option<&str>,
    limits: &Limits,
) -> Result<Registered> {
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": "native",
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    if let Some(method) = auth_method {
        body["token_endpoint_auth_method"] = json!(method);
    }
    let request = Request::builder()
        .method(Method::POST)
        .uri(endpoint)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| {
            auth_error(format!("cannot build a request to {endpoint:?}")).with_source(e)
        })?;
    let answer = fetcher
        .fetch(request, limits.max_response_size, limits.timeout)
        .await?;
    let json: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if !answer.status.is_success() {
        return Err(auth_error(format!(
            "dynamic client registration at {endpoint} failed with HTTP {}: {}",
            answer.status,
            json["error_description"]
                .as_str()
                .or(json["error"].as_str())
                .unwrap_or("no reason given")
        )));
    }
    let client_id = json["client_id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            auth_error(format!(
                "the registration answer of {endpoint} has no client_id"
            ))
        })?;
    Ok(Registered {
        client_id: client_id.to_owned(),
        client_secret: json["client_secret"].as_str().map(str::to_owned),
        token_endpoint_auth_method: json["token_endpoint_auth_method"]
            .as_str()
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let v = random_token(32).unwrap();
        assert_eq!(v.len(), 43);
        assert_ne!(v, random_token(32).unwrap());
    }

    #[test]
    fn basic_auth_encodes_id_and_secret_first() {
        let mut form = Vec::new();
        let mut request = Request::builder();
        ClientAuth::Basic {
            client_id: "a b:c".into(),
            secret: "s/é".into(),
        }
        .apply(&mut form, &mut request);
        let value = request.headers_ref().unwrap()[AUTHORIZATION]
            .to_str()
            .unwrap()
            .to_owned();
        let decoded = STANDARD
            .decode(value.strip_prefix("Basic ").unwrap())
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "a+b%3Ac:s%2F%C3%A9");
        assert!(form.is_empty());
    }

    #[test]
    fn token_answers_are_checked() {
        let answer = |status: u16, body: Value| Fetched {
            status: http::StatusCode::from_u16(status).unwrap(),
            headers: http::HeaderMap::new(),
            body: Bytes::from(body.to_string()),
        };
        let t = read_tokens(&answer(
            200,
            json!({"access_token": "t", "token_type": "bearer", "expires_in": 60}),
        ))
        .unwrap();
        assert_eq!(t.token_type, "Bearer");
        assert!(t.expires_at.unwrap() >= now() + 59);
        let e = read_tokens(&answer(400, json!({"error": "invalid_grant"}))).unwrap_err();
        assert_eq!(e.error, "invalid_grant");
        assert!(read_tokens(&answer(200, json!({"token_type": "Bearer"}))).is_err());
        assert!(
            read_tokens(&answer(
                200,
                json!({"access_token": "t", "token_type": "mac"})
            ))
            .is_err()
        );
    }
}
