//! JWS compact serialization (RFC 7515 §7.1): parse, verify, and the header.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::jwk::{Jwk, JwkSet};
use super::key::Algorithm;
use super::{JoseError, base64url};

/// A JWS protected header, apart from `alg` (which the signing key decides, and which a
/// parsed token reports through [`Jws::algorithm`]).
///
/// ```
/// use arctern::auth::jose::Header;
///
/// let header = Header::typed("dpop+jwt");
/// assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Header {
    /// `typ`: the media type of the whole token (`at+jwt`, `dpop+jwt`, `JWT`).
    pub typ: Option<String>,
    /// `kid`: which key signed it.
    pub kid: Option<String>,
    /// `jwk`: the public key that signed it (DPoP proofs carry theirs).
    pub jwk: Option<Jwk>,
    /// `cty`: the content type of the payload.
    pub cty: Option<String>,
    /// Other header parameters, as they are.
    pub extra: Map<String, Value>,
}

impl Header {
    /// An empty header.
    pub fn new() -> Self {
        Header::default()
    }

    /// A header with `typ`.
    pub fn typed(typ: impl Into<String>) -> Self {
        Header {
            typ: Some(typ.into()),
            ..Header::default()
        }
    }

    /// Sets `kid`.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// Sets `jwk` (only the public members are written).
    pub fn with_jwk(mut self, jwk: Jwk) -> Self {
        self.jwk = Some(jwk.to_public());
        self
    }

    pub(crate) fn to_json(&self, alg: Algorithm, default_kid: Option<&str>) -> String {
        let mut obj = Map::new();
        obj.insert("alg".into(), alg.as_str().into());
        if let Some(typ) = &self.typ {
            obj.insert("typ".into(), typ.clone().into());
        }
        if let Some(kid) = self.kid.as_deref().or(default_kid) {
            obj.insert("kid".into(), kid.into());
        }
        if let Some(jwk) = &self.jwk {
            obj.insert("jwk".into(), jwk.to_public().to_value());
        }
        if let Some(cty) = &self.cty {
            obj.insert("cty".into(), cty.clone().into());
        }
        for (k, v) in &self.extra {
            if !matches!(k.as_str(), "alg" | "typ" | "kid" | "jwk" | "cty" | "crit") {
                obj.insert(k.clone(), v.clone());
            }
        }
        Value::Object(obj).to_string()
    }

    fn parse(bytes: &[u8]) -> Result<(Algorithm, Header), JoseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| JoseError::json("JWS header", e))?;
        let Value::Object(mut obj) = value else {
            return Err(JoseError::Malformed("JWS header (not a JSON object)"));
        };
        let alg = match obj.remove("alg") {
            Some(Value::String(alg)) => alg.parse::<Algorithm>()?,
            _ => return Err(JoseError::Malformed("JWS header (no alg)")),
        };
        if obj.contains_key("crit") {
            return Err(JoseError::Critical);
        }
        let mut text = |name: &str| match obj.remove(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(JoseError::Malformed(
                "JWS header (a member must be a string)",
            )),
        };
        let typ = text("typ")?;
        let kid = text("kid")?;
        let cty = text("cty")?;
        let jwk = match obj.remove("jwk") {
            None => None,
            Some(value) => {
                let jwk = Jwk::from_value(&value)?;
                if jwk.is_private() {
                    return Err(JoseError::Malformed("JWS header (jwk has private members)"));
                }
                Some(jwk)
            }
        };
        Ok((
            alg,
            Header {
                typ,
                kid,
                jwk,
                cty,
                extra: obj,
            },
        ))
    }
}

/// A parsed compact JWS whose signature has not been checked yet.
///
/// [`parse`](Self::parse) is strict: three segments of unpadded base64url, a JSON object
/// header with a supported `alg` (so `none` and `HS256` fail here), no `crit`. Then
/// [`verify`](Self::verify) or [`verify_with_set`](Self::verify_with_set) checks the
/// signature against an explicit algorithm allow-list and returns a [`VerifiedJws`].
/// Bound the input's size before parsing.
#[derive(Debug, Clone)]
pub struct Jws {
    alg: Algorithm,
    header: Header,
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`.
    signing_input: String,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

impl Jws {
    /// Parses a compact JWS.
    pub fn parse(compact: &str) -> Result<Jws, JoseError> {
        let mut parts = compact.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JoseError::Malformed("JWS (not three segments)"));
        };
        if s.is_empty() {
            return Err(JoseError::Malformed("JWS (empty signature)"));
        }
        let (alg, header) = Header::parse(&base64url::decode(h, "JWS header")?)?;
        let payload = base64url::decode(p, "JWS payload")?;
        let signature = base64url::decode(s, "JWS signature")?;
        Ok(Jws {
            alg,
            header,
            signing_input: compact[..h.len() + 1 + p.len()].to_owned(),
            payload,
            signature,
        })
    }

    /// The algorithm the header names.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The payload, before verification: for routing only (say, to read `iss` and pick the
    /// issuer's keys), never to trust.
    pub fn unverified_payload(&self) -> &[u8] {
        &self.payload
    }

    fn allowed(&self, allowed: &[Algorithm]) -> Result<(), JoseError> {
        if allowed.contains(&self.alg) {
            Ok(())
        } else {
            Err(JoseError::AlgorithmNotAllowed(self.alg))
        }
    }

    /// Verifies the signature with `key`, if the header's algorithm is in `allowed` and
    /// the key may be used with it.
    pub fn verify(&self, key: &Jwk, allowed: &[Algorithm]) -> Result<VerifiedJws, JoseError> {
        self.allowed(allowed)?;
        key.verify(self.alg, self.signing_input.as_bytes(), &self.signature)?;
        Ok(self.verified(key))
    }

    /// Verifies the signature with the key of `set` named by the header's `kid`; without a
    /// `kid`, with each key that fits the algorithm in turn. Fails with
    /// [`JoseError::UnknownKey`] when no key fits (a resource server then refreshes the
    /// set).
    pub fn verify_with_set(
        &self,
        set: &JwkSet,
        allowed: &[Algorithm],
    ) -> Result<VerifiedJws, JoseError> {
        self.allowed(allowed)?;
        let kid = self.header.kid.as_deref();
        let mut tried = false;
        for key in set.candidates(kid, self.alg) {
            tried = true;
            if key
                .verify(self.alg, self.signing_input.as_bytes(), &self.signature)
                .is_ok()
            {
                return Ok(self.verified(key));
            }
        }
        if tried {
            Err(JoseError::BadSignature)
        } else {
            Err(JoseError::UnknownKey(kid.map(str::to_owned)))
        }
    }

    fn verified(&self, key: &Jwk) -> VerifiedJws {
        VerifiedJws {
            alg: self.alg,
            header: self.header.clone(),
            payload: self.payload.clone(),
            key_thumbprint: key.thumbprint(),
        }
    }
}

/// A JWS whose signature verified.
#[derive(Debug, Clone)]
pub struct VerifiedJws {
    alg: Algorithm,
    header: Header,
    payload: Vec<u8>,
    key_thumbprint: String,
}

impl VerifiedJws {
    /// The algorithm it was signed with.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The RFC 7638 thumbprint of the key that verified it.
    pub fn key_thumbprint(&self) -> &str {
        &self.key_thumbprint
    }

    /// The payload parsed as JSON claims (a [`Claims`](super::Claims), or your own type).
    pub fn claims<T: DeserializeOwned>(&self) -> Result<T, JoseError> {
        let value: Value =
            serde_json::from_slice(&self.payload).map_err(|e| JoseError::json("JWT claims", e))?;
        if !value.is_object() {
            return Err(JoseError::Malformed("JWT claims (not a JSON object)"));
        }
        serde_json::from_value(value).map_err(|e| JoseError::json("JWT claims", e))
    }
}
