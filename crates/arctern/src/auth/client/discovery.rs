//! Discovery: protected resource metadata (RFC 9728) and authorization server metadata
//! (RFC 8414, OpenID Connect Discovery), in the order the MCP specification gives, with the
//! checks it asks for.

use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::Full;
use serde::Deserialize;
use serde_json::Value;

use super::{Limits, auth_error};
use crate::Result;
use crate::transport::http::client::{Fetched, Fetcher};

/// Protected resource metadata (RFC 9728), the fields the client uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms the resource accepts (RFC 9728 §2); absent when it takes
    /// bearer tokens only.
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 / OpenID Connect), the fields the client uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: Option<bool>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// The origin (`scheme://authority`) and path of an absolute URL.
pub(crate) fn split(url: &str) -> Result<(String, String)> {
    let uri: Uri = url
        .parse()
        .map_err(|e| auth_error(format!("{url:?} is not a valid URL")).with_source(e))?;
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme @ ("http" | "https")), Some(authority)) => {
            Ok((format!("{scheme}://{authority}"), uri.path().to_owned()))
        }
        _ => Err(auth_error(format!(
            "{url:?} is not an absolute http(s) URL"
        ))),
    }
}

/// The canonical URI of an MCP server (RFC 8707): scheme and host in lower case, no query,
/// no fragment, no trailing slash (unless the path is only `/`).
pub(crate) fn canonical_resource(url: &str) -> Result<String> {
    let (origin, path) = split(url)?;
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        ""
    };
    Ok(format!("{}{path}", origin.to_ascii_lowercase()))
}

/// Whether the resource a server's metadata names covers the MCP endpoint: same scheme,
/// host and port, and the resource's path is a prefix of the endpoint's (by segments).
pub(crate) fn resource_covers(resource: &str, endpoint: &str) -> bool {
    let (Ok(r), Ok(e)) = (canonical_resource(resource), canonical_resource(endpoint)) else {
        return false;
    };
    let (Ok((r_origin, r_path)), Ok((e_origin, e_path))) = (split(&r), split(&e)) else {
        return false;
    };
    if r_origin != e_origin {
        return false;
    }
    let r_path = r_path.trim_end_matches('/');
    r_path.is_empty()
        || e_path == r_path
        || e_path
            .strip_prefix(r_path)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn get(url: &str) -> Result<Request<Full<Bytes>>> {
    Request::builder()
        .method(Method::GET)
        .uri(url)
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|e| auth_error(format!("cannot build a request to {url:?}")).with_source(e))
}

/// Fetches a JSON document: `Ok(None)` for an answer that is not a 2xx (the next
/// candidate is tried), an error when the server cannot be reached or the JSON is bad.
async fn fetch_json(fetcher: &Fetcher, url: &str, limits: &Limits) -> Result<Option<Value>> {
    let Fetched { status, body, .. } = fetcher
        .fetch(get(url)?, limits.max_response_size, limits.timeout)
        .await?;
    if !status.is_success() {
        tracing::debug!(%url, %status, "no metadata here");
        return Ok(None);
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| auth_error(format!("the metadata at {url} is not valid JSON")).with_source(e))
}

/// Protected resource metadata: from the challenge's `resource_metadata` URL, else the
/// path-based well-known URL, else the root one. `None` when none answers.
pub(crate) async fn resource_metadata(
    fetcher: &Fetcher,
    endpoint: &str,
    from_challenge: Option<&str>,
    limits: &Limits,
) -> Result<Option<(String, ResourceMetadata)>> {
    let (origin, path) = split(endpoint)?;
    let mut candidates = Vec::new();
    if let Some(url) = from_challenge {
        split(url)?;
        candidates.push(url.to_owned());
    }
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    for url in candidates {
        if let Some(json) = fetch_json(fetcher, &url, limits).await? {
            let metadata: ResourceMetadata = serde_json::from_value(json).map_err(|e| {
                auth_error(format!(
                    "the protected resource metadata at {url} is malformed"
                ))
                .with_source(e)
            })?;
            return Ok(Some((url, metadata)));
        }
    }
    Ok(None)
}

/// The metadata URLs of an issuer, in the specification's order: with a path, RFC 8414
/// path insertion, OpenID Connect path insertion, OpenID Connect path appending; without,
/// RFC 8414 then OpenID Connect.
pub(crate) fn server_metadata_urls(issuer: &str) -> Result<Vec<String>> {
    let (origin, path) = split(issuer)?;
    let path = path.trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Authorization server metadata for `issuer`. The document's `issuer` must be exactly the
/// issuer the URL was built from; a document that differs is refused, not skipped.
pub(crate) async fn server_metadata(
    fetcher: &Fetcher,
    issuer: &str,
    limits: &Limits,
) -> Result<Option<ServerMetadata>> {
    for url in server_metadata_urls(issuer)? {
        let Some(json) = fetch_json(fetcher, &url, limits).await? else {
            continue;
        };
        let metadata: ServerMetadata = serde_json::from_value(json).map_err(|e| {
            auth_error(format!(
                "the authorization server metadata at {url} is malformed"
            ))
            .with_source(e)
        })?;
        if metadata.issuer != issuer {
            return Err(auth_error(format!(
                "the authorization server metadata at {url} names issuer {:?}, not {issuer:?}; \
                 it is not used",
                metadata.issuer
            )));
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// Metadata for a 2025-03-26 server that publishes none: the default endpoints at the
/// server's origin.
pub(crate) fn fallback_metadata(origin: &str) -> ServerMetadata {
    ServerMetadata {
        issuer: origin.to_owned(),
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: Some(format!("{origin}/token")),
        registration_endpoint: Some(format!("{origin}/register")),
        // PKCE is mandatory for these servers (2025-03-26); nothing says otherwise.
        code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
        ..ServerMetadata::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_the_specification_order() {
        assert_eq!(
            server_metadata_urls("https://as.example.com").unwrap(),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("https://as.example.com/tenant1").unwrap(),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_endpoint_only() {
        assert!(resource_covers(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_covers(
            "http://localhost:3000",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_covers(
            "HTTP://LOCALHOST:3000/",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_covers(
            "http://localhost:3000/mcp/",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "https://evil.example.com/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://127.0.0.1:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://localhost:3000/other",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers("not a url", "http://localhost:3000/mcp"));
    }

    #[test]
    fn canonical_resources_drop_query_fragment_and_trailing_slash() {
        assert_eq!(
            canonical_resource("HTTPS://Example.com/mcp/?x=1").unwrap(),
            "https://example.com/mcp"
        );
        assert_eq!(
            canonical_resource("https://example.com/").unwrap(),
            "https://example.com"
        );
        assert!(canonical_resource("/relative").is_err());
    }
}
