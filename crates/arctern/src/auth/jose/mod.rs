//! JOSE on `ring`: JSON Web Keys (RFC 7517), JWS compact signatures (RFC 7515), JWT claims
//! (RFC 7519, RFC 9068), JWK thumbprints (RFC 7638) and DPoP proofs (RFC 9449).
//!
//! Only what OAuth for MCP needs, with one crypto stack and no process-wide state:
//!
//! | algorithm | key ([`Jwk`], [`SigningKey`]) |
//! | --- | --- |
//! | `RS256`, `RS384`, `RS512` (RSASSA-PKCS1-v1_5), `PS256`, `PS384`, `PS512` (RSASSA-PSS) | `RSA`, 2048 to 8192 bits |
//! | `ES256` | `EC`, `P-256` |
//! | `ES384` | `EC`, `P-384` |
//! | `EdDSA` | `OKP`, `Ed25519` |
//!
//! There is no `none` and no symmetric (`HS*`) algorithm: a token naming one fails to parse.
//! Verification takes an explicit allow-list of [`Algorithm`]s, and a key verifies only the
//! algorithms of its own type (and only its `alg`, when the JWK names one), so an attacker
//! cannot pick the algorithm, nor make an RSA public key serve as an HMAC secret.
//!
//! # Signing and verifying
//!
//! ```
//! use arctern::auth::jose::{Algorithm, Claims, Header, Jws, SigningKey};
//!
//! // An ES256 key (as a DPoP client or a test authorization server would make one).
//! let key = SigningKey::generate(Algorithm::ES256)?.with_kid("k1");
//! let claims = Claims {
//!     iss: Some("https://as.example".into()),
//!     sub: Some("alice".into()),
//!     ..Claims::default()
//! };
//! let token = key.sign_jwt(&Header::typed("at+jwt"), &claims)?;
//!
//! // The verifying side knows only the public key (from a JWKS, say).
//! let public = key.public_jwk();
//! let verified = Jws::parse(&token)?.verify(&public, &[Algorithm::ES256])?;
//! let back: Claims = verified.claims()?;
//! assert_eq!(back.sub.as_deref(), Some("alice"));
//! # Ok::<(), arctern::auth::jose::JoseError>(())
//! ```
//!
//! # For OAuth clients
//!
//! - [`client_assertion`] signs an RFC 7523 `private_key_jwt` client assertion.
//! - [`DpopProof`] builds a DPoP proof (`htm`, `htu`, `iat`, `jti`, optionally `ath` for
//!   the access token and the server's `nonce`), with the public key in the header.
//! - [`SigningKey::from_pkcs8_pem`] loads a PKCS#8 private key, and
//!   [`SigningKey::generate`] makes an ECDSA or Ed25519 one (DPoP proof keys).
//!
//! # For resource servers and authorization servers
//!
//! - [`JwkSet`] parses a JWKS (keys of unsupported types are skipped, private members are
//!   dropped) and [`Jws::verify_with_set`] picks the key by `kid`.
//! - [`Validation`] checks the registered claims: issuer, audience (a string or an array),
//!   `exp`/`nbf`/`iat` with leeway.
//! - [`verify_dpop_proof`] checks a DPoP proof's signature, `typ`, `htm`, `htu`, `iat`
//!   window and `ath`, and returns its key's thumbprint, `jti` and `nonce` for the caller's
//!   replay cache and nonce policy.
//!
//! Parsing never panics and allocates in proportion to its input; bound the input first
//! (resource servers cap the token size before parsing).

pub mod base64url;
mod der;
mod dpop;
mod jwk;
mod jws;
mod jwt;
mod key;

pub use dpop::{
    DPOP_JWT_TYPE, DpopCheck, DpopProof, VerifiedDpopProof, access_token_hash, verify_dpop_proof,
};
pub use jwk::{Curve, Jwk, JwkSet, KeyType};
pub use jws::{Header, Jws, VerifiedJws};
pub use jwt::{
    Audience, CLIENT_ASSERTION_TYPE, Claims, Confirmation, Validation, client_assertion, unix_now,
};
pub use key::{Algorithm, SigningKey};

/// Why a JOSE operation failed.
///
/// The messages name what is wrong with the input (never key material), so they can go to a
/// log; resource servers answer clients with a fixed `invalid_token` instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JoseError {
    /// A base64url member or segment is not valid unpadded base64url.
    #[error("invalid base64url in {0}")]
    Base64(&'static str),
    /// A JSON document (header, claims, JWK) is not what it must be.
    #[error("invalid JSON in {what}: {detail}")]
    Json {
        /// What was being parsed.
        what: &'static str,
        /// The parser's message.
        detail: String,
    },
    /// The input is not a well-formed compact JWS, JWK, key or proof.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// The algorithm is not one this module implements (`none`, `HS256`, `ES512`, …).
    #[error("unsupported algorithm {0:?}")]
    UnsupportedAlgorithm(String),
    /// The algorithm is supported but not in the caller's allow-list.
    #[error("algorithm {0} is not allowed here")]
    AlgorithmNotAllowed(Algorithm),
    /// The key type (or curve) is not one this module implements.
    #[error("unsupported key: {0}")]
    UnsupportedKey(String),
    /// The key cannot be used with this algorithm (wrong type or curve, another `alg`, a
    /// `use` other than `sig`, or `key_ops` without the operation).
    #[error("the key cannot be used with {0}")]
    KeyMismatch(Algorithm),
    /// The key was rejected by the cryptographic library (inconsistent, too small, …).
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// An operation needed the private key, and the JWK has only the public part.
    #[error("the key has no private part")]
    NotPrivate,
    /// No key of the set matches the token's `kid` (or, without a `kid`, its algorithm).
    #[error("no key matches kid {0:?}")]
    UnknownKey(Option<String>),
    /// The signature does not verify.
    #[error("the signature does not verify")]
    BadSignature,
    /// The header lists a critical extension (`crit`), none of which are implemented.
    #[error("unsupported critical header parameter")]
    Critical,
    /// A claim check failed (see [`Validation`] and [`verify_dpop_proof`]).
    #[error("claim check failed: {0}")]
    Claim(String),
    /// The system's random number generator failed.
    #[error("the random number generator failed")]
    Random,
}

impl JoseError {
    pub(crate) fn json(what: &'static str, e: impl std::fmt::Display) -> Self {
        JoseError::Json {
            what,
            detail: e.to_string(),
        }
    }
}
