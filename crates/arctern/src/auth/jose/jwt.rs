//! JWT claims (RFC 7519, RFC 9068 access tokens, RFC 7800 `cnf`) and their checks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::JoseError;
use super::jws::Header;
use super::key::{SigningKey, random_id};

/// `client_assertion_type` for a JWT client assertion (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The current time as Unix seconds (0 for a clock set before 1970).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `aud`: one audience or several (RFC 7519 §4.1.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// A single string.
    One(String),
    /// An array of strings.
    Many(Vec<String>),
}

impl Audience {
    /// Whether `audience` is one of the values (exact string comparison).
    pub fn contains(&self, audience: &str) -> bool {
        self.iter().any(|a| a == audience)
    }

    /// The values.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match self {
            Audience::One(a) => (Some(a.as_str()), &[][..]),
            Audience::Many(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }
}

impl From<&str> for Audience {
    fn from(a: &str) -> Self {
        Audience::One(a.to_owned())
    }
}

impl From<String> for Audience {
    fn from(a: String) -> Self {
        Audience::One(a)
    }
}

/// `cnf`: the key a token is bound to (RFC 7800; `jkt` from RFC 9449 §6).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Confirmation {
    /// The RFC 7638 thumbprint of the DPoP key the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jkt: Option<String>,
    /// Other confirmation methods, as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Confirmation {
    /// A DPoP binding to the key with this thumbprint.
    pub fn jkt(thumbprint: impl Into<String>) -> Self {
        Confirmation {
            jkt: Some(thumbprint.into()),
            extra: Map::new(),
        }
    }
}

/// The claims of a JWT access token, client assertion or DPoP proof: the registered ones
/// typed, everything else in [`extra`](Self::extra).
///
/// Times are Unix seconds (a fractional `NumericDate` is rounded down). A claim of the
/// wrong JSON type fails the whole token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// `iss`: who issued the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// `sub`: whom the token is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// `aud`: whom the token is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
    /// `exp`: when the token expires.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "numeric_date"
    )]
    pub exp: Option<u64>,
    /// `nbf`: when the token becomes valid.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "numeric_date"
    )]
    pub nbf: Option<u64>,
    /// `iat`: when the token was issued.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "numeric_date"
    )]
    pub iat: Option<u64>,
    /// `jti`: the token's unique id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// `scope`: space-separated scopes (RFC 8693 §4.2, RFC 9068).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `client_id`: the client the token was issued to (RFC 9068, RFC 8693 §4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `cnf`: the key the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
    /// Every other claim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Claims {
    /// The scopes: the words of `scope`, or else those of `scp` (an array or a
    /// space-separated string, as some authorization servers write it).
    pub fn scopes(&self) -> Vec<&str> {
        if let Some(scope) = &self.scope {
            return scope.split_ascii_whitespace().collect();
        }
        match self.extra.get("scp") {
            Some(Value::String(s)) => s.split_ascii_whitespace().collect(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The DPoP key thumbprint the token is bound to (`cnf.jkt`).
    pub fn jkt(&self) -> Option<&str> {
        self.cnf.as_ref().and_then(|c| c.jkt.as_deref())
    }
}

fn numeric_date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    let value = Option::<serde_json::Number>::deserialize(deserializer)?;
    let Some(n) = value else { return Ok(None) };
    if let Some(u) = n.as_u64() {
        return Ok(Some(u));
    }
    match n.as_f64() {
        Some(f) if (0.0..1e15).contains(&f) => Ok(Some(f as u64)),
        _ => Err(D::Error::custom(
            "a NumericDate must be a non-negative number of seconds",
        )),
    }
}

/// Checks of a JWT's registered claims: issuer, audience and validity times.
///
/// The defaults require `exp` and allow 60 seconds of clock skew; set the issuer and
/// audience you expect (a check that is not set is not made).
///
/// ```
/// use std::time::Duration;
/// use arctern::auth::jose::{Claims, Validation};
///
/// let v = Validation::new()
///     .issuer("https://as.example")
///     .audience("https://mcp.example/mcp")
///     .leeway(Duration::from_secs(30));
/// let claims = Claims {
///     iss: Some("https://as.example".into()),
///     aud: Some("https://mcp.example/mcp".into()),
///     exp: Some(2_000),
///     ..Claims::default()
/// };
/// assert!(v.check(&claims, 1_000).is_ok());
/// assert!(v.check(&claims, 2_031).is_err()); // expired, past the leeway
/// ```
#[derive(Debug, Clone)]
pub struct Validation {
    issuer: Option<String>,
    audience: Option<String>,
    leeway: u64,
    require_exp: bool,
}

impl Default for Validation {
    fn default() -> Self {
        Validation {
            issuer: None,
            audience: None,
            leeway: 60,
            require_exp: true,
        }
    }
}

impl Validation {
    /// `exp` required, 60 seconds of leeway, no issuer or audience check.
    pub fn new() -> Self {
        Validation::default()
    }

    /// `iss` must be exactly this.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// `aud` must contain exactly this.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// The clock skew allowed on `exp`, `nbf` and `iat`.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway.as_secs();
        self
    }

    /// Whether `exp` must be present (default yes).
    pub fn require_exp(mut self, required: bool) -> Self {
        self.require_exp = required;
        self
    }

    /// Checks `claims` at `now` (Unix seconds). The error names the claim.
    pub fn check(&self, claims: &Claims, now: u64) -> Result<(), JoseError> {
        let fail = |m: &str| Err(JoseError::Claim(m.to_owned()));
        if let Some(issuer) = &self.issuer
            && claims.iss.as_deref() != Some(issuer.as_str())
        {
            return fail("iss is not the expected issuer");
        }
        if let Some(audience) = &self.audience
            && !claims.aud.as_ref().is_some_and(|a| a.contains(audience))
        {
            return fail("aud does not name this audience");
        }
        match claims.exp {
            Some(exp) if now >= exp.saturating_add(self.leeway) => {
                return fail("the token has expired");
            }
            None if self.require_exp => return fail("exp is missing"),
            _ => {}
        }
        if let Some(nbf) = claims.nbf
            && now.saturating_add(self.leeway) < nbf
        {
            return fail("the token is not valid yet (nbf)");
        }
        if let Some(iat) = claims.iat
            && now.saturating_add(self.leeway) < iat
        {
            return fail("the token was issued in the future (iat)");
        }
        Ok(())
    }
}

/// Signs an RFC 7523 client assertion for `private_key_jwt` client authentication:
/// `iss` = `sub` = `client_id`, `aud` = `audience` (the authorization server's issuer or
/// token endpoint, as it asks), a fresh `jti`, `iat` now and `exp` after `lifetime`. Send
/// it as `client_assertion` with `client_assertion_type` = [`CLIENT_ASSERTION_TYPE`].
///
/// ```
/// use std::time::Duration;
/// use arctern::auth::jose::{Algorithm, SigningKey, client_assertion};
///
/// let key = SigningKey::generate(Algorithm::ES256)?.with_kid("client-key-1");
/// let jwt = client_assertion(&key, "my-client", "https://as.example", Duration::from_secs(60))?;
/// assert_eq!(jwt.split('.').count(), 3);
/// # Ok::<(), arctern::auth::jose::JoseError>(())
/// ```
pub fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
    lifetime: Duration,
) -> Result<String, JoseError> {
    let now = unix_now();
    let claims = Claims {
        iss: Some(client_id.to_owned()),
        sub: Some(client_id.to_owned()),
        aud: Some(audience.into()),
        iat: Some(now),
        exp: Some(now.saturating_add(lifetime.as_secs().max(1))),
        jti: Some(random_id()?),
        ..Claims::default()
    };
    key.sign_jwt(&Header::new(), &claims)
}
