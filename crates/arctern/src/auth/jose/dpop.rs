//! DPoP proofs (RFC 9449): making them (clients) and checking them (servers).

use serde::Serialize;
use serde_json::Value;

use super::jws::{Header, Jws};
use super::jwt::unix_now;
use super::key::{Algorithm, SigningKey, random_id};
use super::{JoseError, base64url};

/// The `typ` of a DPoP proof.
pub const DPOP_JWT_TYPE: &str = "dpop+jwt";

/// The longest `jti` accepted in a proof (they are stored in replay caches).
const MAX_JTI_LEN: usize = 256;
/// The longest `nonce` accepted in a proof.
const MAX_NONCE_LEN: usize = 512;

/// `ath`: the unpadded base64url SHA-256 of an access token (RFC 9449 §4.2).
pub fn access_token_hash(access_token: &str) -> String {
    base64url::encode(ring::digest::digest(
        &ring::digest::SHA256,
        access_token.as_bytes(),
    ))
}

/// A DPoP proof to sign (RFC 9449 §4.2): for one HTTP request, with the key's public JWK
/// in its header.
///
/// ```
/// use arctern::auth::jose::{Algorithm, DpopProof, SigningKey};
///
/// let key = SigningKey::generate(Algorithm::ES256)?; // keep it for the token's lifetime
/// // At the token endpoint:
/// let proof = DpopProof::new("POST", "https://as.example/token").sign(&key)?;
/// // At the resource, with the access token (adds `ath`) and the server's nonce:
/// let proof = DpopProof::new("POST", "https://mcp.example/mcp?x=1")
///     .access_token("eyJ...")
///     .nonce("server-nonce")
///     .sign(&key)?;
/// # let _ = proof;
/// # Ok::<(), arctern::auth::jose::JoseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DpopProof<'a> {
    method: &'a str,
    url: &'a str,
    access_token: Option<&'a str>,
    nonce: Option<&'a str>,
    issued_at: Option<u64>,
    jti: Option<&'a str>,
}

#[derive(Serialize)]
struct ProofClaims<'a> {
    jti: &'a str,
    htm: &'a str,
    htu: &'a str,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<&'a str>,
}

impl<'a> DpopProof<'a> {
    /// A proof for a request with this method and URL (the query and fragment are left out
    /// of `htu`).
    pub fn new(method: &'a str, url: &'a str) -> Self {
        DpopProof {
            method,
            url,
            access_token: None,
            nonce: None,
            issued_at: None,
            jti: None,
        }
    }

    /// Binds the proof to this access token (`ath`), as every request to a resource server
    /// must.
    pub fn access_token(mut self, token: &'a str) -> Self {
        self.access_token = Some(token);
        self
    }

    /// The nonce the server gave in its `DPoP-Nonce` header.
    pub fn nonce(mut self, nonce: &'a str) -> Self {
        self.nonce = Some(nonce);
        self
    }

    /// `iat`, instead of now (Unix seconds).
    pub fn issued_at(mut self, unix_seconds: u64) -> Self {
        self.issued_at = Some(unix_seconds);
        self
    }

    /// `jti`, instead of a fresh random one (a retry must use a new one).
    pub fn jti(mut self, jti: &'a str) -> Self {
        self.jti = Some(jti);
        self
    }

    /// Signs the proof with `key` (its algorithm must be asymmetric, which every
    /// [`SigningKey`]'s is).
    pub fn sign(&self, key: &SigningKey) -> Result<String, JoseError> {
        let random;
        let jti = match self.jti {
            Some(jti) => jti,
            None => {
                random = random_id()?;
                &random
            }
        };
        let claims = ProofClaims {
            jti,
            htm: self.method,
            htu: &strip_query(self.url),
            iat: self.issued_at.unwrap_or_else(unix_now),
            ath: self.access_token.map(access_token_hash),
            nonce: self.nonce,
        };
        let header = Header::typed(DPOP_JWT_TYPE).with_jwk(key.public_jwk());
        key.sign_jwt(&header, &claims)
    }
}

/// A URL without its query and fragment.
fn strip_query(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].to_owned()
}

/// What a server expects of a DPoP proof (RFC 9449 §4.3).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DpopCheck<'a> {
    /// The request's method (`htm` must equal it).
    pub method: &'a str,
    /// The request's URL as the client addressed it, `scheme://host[:port]/path`; `htu`
    /// must name the same scheme, host, port and path (case-insensitive scheme and host,
    /// default ports implied; query and fragment ignored).
    pub url: &'a str,
    /// The access token the proof came with: `ath` must be its hash. `None` at a token
    /// endpoint, where there is none yet.
    pub access_token: Option<&'a str>,
    /// The algorithms accepted.
    pub allowed: &'a [Algorithm],
    /// Now, in Unix seconds.
    pub now: u64,
    /// How old `iat` may be, in seconds.
    pub max_age: u64,
    /// How far in the future `iat` may be (clock skew), in seconds.
    pub leeway: u64,
}

impl<'a> DpopCheck<'a> {
    /// A check for `method` and `url` now, accepting `ES256`, `ES384`, `EdDSA`, `RS256` and
    /// `PS256`, proofs up to 300 seconds old and 5 seconds ahead.
    pub fn new(method: &'a str, url: &'a str) -> Self {
        DpopCheck {
            method,
            url,
            access_token: None,
            allowed: &[
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
                Algorithm::RS256,
                Algorithm::PS256,
            ],
            now: unix_now(),
            max_age: 300,
            leeway: 5,
        }
    }

    /// Requires `ath` to match this access token.
    pub fn access_token(mut self, token: &'a str) -> Self {
        self.access_token = Some(token);
        self
    }

    /// The algorithms accepted.
    pub fn allowed(mut self, allowed: &'a [Algorithm]) -> Self {
        self.allowed = allowed;
        self
    }

    /// Checks at this time (Unix seconds) instead of now.
    pub fn at(mut self, now: u64) -> Self {
        self.now = now;
        self
    }

    /// How old a proof may be and how far ahead of this clock, in seconds.
    pub fn window(mut self, max_age: u64, leeway: u64) -> Self {
        self.max_age = max_age;
        self.leeway = leeway;
        self
    }
}

/// A DPoP proof whose signature and claims checked out. Its `jti` still has to be checked
/// against a replay cache, its `nonce` against the server's, and its `jkt` against the
/// access token's `cnf.jkt`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedDpopProof {
    /// The RFC 7638 thumbprint of the proof's key.
    pub jkt: String,
    /// The proof's unique id.
    pub jti: String,
    /// When it was made (Unix seconds).
    pub iat: u64,
    /// The server nonce it carries, if any.
    pub nonce: Option<String>,
}

/// Checks a DPoP proof (RFC 9449 §4.3, steps 2 to 9, 11 and 12): a well-formed JWS, `typ`
/// `dpop+jwt`, an allowed asymmetric algorithm, a public `jwk` in the header that verifies
/// the signature, `jti`, `htm` and `htu` matching the request, `iat` within the window,
/// and `ath` when an access token is given. Bound the proof's size first.
pub fn verify_dpop_proof(
    proof: &str,
    check: &DpopCheck<'_>,
) -> Result<VerifiedDpopProof, JoseError> {
    let jws = Jws::parse(proof)?;
    if jws.header().typ.as_deref() != Some(DPOP_JWT_TYPE) {
        return Err(JoseError::Claim(
            "the DPoP proof's typ is not dpop+jwt".into(),
        ));
    }
    let jwk = jws
        .header()
        .jwk
        .clone()
        .ok_or(JoseError::Malformed("DPoP proof (no jwk in the header)"))?;
    let verified = jws.verify(&jwk, check.allowed)?;
    let claims: serde_json::Map<String, Value> = verified.claims()?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let fail = |m: &str| Err(JoseError::Claim(m.to_owned()));
    let jti = match text("jti") {
        Some(jti) if !jti.is_empty() && jti.len() <= MAX_JTI_LEN => jti,
        _ => return fail("the DPoP proof has no usable jti"),
    };
    if text("htm") != Some(check.method) {
        return fail("the DPoP proof's htm does not match the request method");
    }
    match text("htu") {
        Some(htu) if same_target(htu, check.url) => {}
        _ => return fail("the DPoP proof's htu does not match the request URL"),
    }
    let Some(iat) = claims.get("iat").and_then(Value::as_u64) else {
        return fail("the DPoP proof has no iat");
    };
    if iat > check.now.saturating_add(check.leeway) {
        return fail("the DPoP proof was issued in the future");
    }
    if check.now > iat.saturating_add(check.max_age) {
        return fail("the DPoP proof is too old");
    }
    if let Some(token) = check.access_token {
        let expected = access_token_hash(token);
        if text("ath") != Some(expected.as_str()) {
            return fail("the DPoP proof's ath does not match the access token");
        }
    }
    let nonce = match claims.get("nonce") {
        None => None,
        Some(Value::String(n)) if n.len() <= MAX_NONCE_LEN => Some(n.clone()),
        Some(_) => return fail("the DPoP proof's nonce is not usable"),
    };
    Ok(VerifiedDpopProof {
        jkt: jwk.thumbprint(),
        jti: jti.to_owned(),
        iat,
        nonce,
    })
}

/// Whether two URLs name the same resource, ignoring query and fragment (RFC 9449 §4.3
/// step 9, with RFC 3986 §6.2.2/§6.2.3 normalisation of scheme, host and port).
pub(crate) fn same_target(a: &str, b: &str) -> bool {
    match (target(a), target(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn target(url: &str) -> Option<(String, String, u16, String)> {
    let uri: http::Uri = strip_query(url).parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let port = match (authority.port_u16(), scheme.as_str()) {
        (Some(p), _) => p,
        (None, "https") => 443,
        (None, "http") => 80,
        _ => return None,
    };
    let path = match uri.path() {
        "" => "/".to_owned(),
        p => p.to_owned(),
    };
    Some((scheme, authority.host().to_ascii_lowercase(), port, path))
}
