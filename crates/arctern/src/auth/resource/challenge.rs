//! `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9449 §7.1, RFC 9728 §5.1).

use http::HeaderValue;

use super::token::OFFLINE_ACCESS;
use crate::auth::jose::Algorithm;

/// One `WWW-Authenticate` challenge: `Bearer` or `DPoP` with its parameters.
///
/// Values are written as quoted strings; characters RFC 6750 does not allow in them
/// (`"`, `\`, controls, non-ASCII) are dropped, and `offline_access` never appears in
/// `scope`.
///
/// ```
/// use arctern::auth::resource::Challenge;
///
/// let c = Challenge::bearer()
///     .resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
///     .scope(&["mcp:tools", "offline_access"])
///     .error("insufficient_scope");
/// assert_eq!(
///     c.to_header_value().to_str().unwrap(),
///     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="insufficient_scope""#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    scheme: &'static str,
    params: Vec<(&'static str, String)>,
}

impl Challenge {
    /// A `Bearer` challenge.
    pub fn bearer() -> Self {
        Challenge {
            scheme: "Bearer",
            params: Vec::new(),
        }
    }

    /// A `DPoP` challenge.
    pub fn dpop() -> Self {
        Challenge {
            scheme: "DPoP",
            params: Vec::new(),
        }
    }

    fn param(mut self, name: &'static str, value: &str) -> Self {
        let clean: String = value
            .chars()
            .filter(|c| matches!(c, ' '..='~') && *c != '"' && *c != '\\')
            .collect();
        self.params.push((name, clean));
        self
    }

    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub fn resource_metadata(self, url: &str) -> Self {
        self.param("resource_metadata", url)
    }

    /// `scope`: the scopes needed (nothing is written when none remain after dropping
    /// `offline_access` and malformed ones).
    pub fn scope(self, scopes: &[&str]) -> Self {
        let scopes: Vec<&str> = scopes
            .iter()
            .copied()
            .filter(|s| {
                *s != OFFLINE_ACCESS
                    && !s.is_empty()
                    && s.bytes().all(|b| {
                        b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)
                    })
            })
            .collect();
        if scopes.is_empty() {
            return self;
        }
        self.param("scope", &scopes.join(" "))
    }

    /// `error`: `invalid_request`, `invalid_token`, `insufficient_scope`,
    /// `invalid_dpop_proof` or `use_dpop_nonce`.
    pub fn error(self, code: &str) -> Self {
        self.param("error", code)
    }

    /// `error_description`: a human-readable explanation.
    pub fn error_description(self, description: &str) -> Self {
        self.param("error_description", description)
    }

    /// `algs`: the DPoP proof algorithms accepted.
    pub fn algs(self, algorithms: &[Algorithm]) -> Self {
        let list: Vec<&str> = algorithms.iter().map(|a| a.as_str()).collect();
        self.param("algs", &list.join(" "))
    }

    /// The header value.
    pub fn to_header_value(&self) -> HeaderValue {
        let mut out = String::from(self.scheme);
        for (i, (name, value)) in self.params.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { ", " });
            out.push_str(name);
            out.push_str("=\"");
            out.push_str(value);
            out.push('"');
        }
        // Every character was filtered to visible ASCII and space above.
        HeaderValue::try_from(out).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }
}
