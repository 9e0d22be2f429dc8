//! JSON Web Keys (RFC 7517, RFC 7518 §6, RFC 8037) and thumbprints (RFC 7638).

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::der::strip_leading_zeros;
use super::key::Algorithm;
use super::{JoseError, base64url};

/// The smallest RSA modulus accepted, in bytes (2048 bits).
const RSA_MIN_BYTES: usize = 256;
/// The largest RSA modulus accepted, in bytes (8192 bits).
const RSA_MAX_BYTES: usize = 1024;

/// A JWK's key type (`kty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyType {
    /// `RSA`.
    Rsa,
    /// `EC` (elliptic curve, for ECDSA).
    Ec,
    /// `OKP` (octet key pair, for EdDSA).
    Okp,
}

impl KeyType {
    /// The `kty` value.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Rsa => "RSA",
            KeyType::Ec => "EC",
            KeyType::Okp => "OKP",
        }
    }
}

/// A JWK's curve (`crv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Curve {
    /// NIST P-256 (`ES256`).
    P256,
    /// NIST P-384 (`ES384`).
    P384,
    /// Ed25519 (`EdDSA`).
    Ed25519,
}

impl Curve {
    /// The `crv` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Curve::P256 => "P-256",
            Curve::P384 => "P-384",
            Curve::Ed25519 => "Ed25519",
        }
    }

    /// The size of a coordinate (EC) or of the key (Ed25519), in bytes.
    pub(crate) fn size(self) -> usize {
        match self {
            Curve::P256 | Curve::Ed25519 => 32,
            Curve::P384 => 48,
        }
    }
}

/// The key itself, with the private members when the JWK has them.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Material {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
        private: Option<Box<RsaPrivate>>,
    },
    Ec {
        curve: Curve,
        x: Vec<u8>,
        y: Vec<u8>,
        d: Option<Zeroizing<Vec<u8>>>,
    },
    /// Ed25519 only.
    Okp {
        x: Vec<u8>,
        d: Option<Zeroizing<Vec<u8>>>,
    },
}

/// The private members of an RSA JWK (RFC 7518 §6.3.2), two-prime keys only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RsaPrivate {
    pub(crate) d: Zeroizing<Vec<u8>>,
    pub(crate) p: Zeroizing<Vec<u8>>,
    pub(crate) q: Zeroizing<Vec<u8>>,
    pub(crate) dp: Zeroizing<Vec<u8>>,
    pub(crate) dq: Zeroizing<Vec<u8>>,
    pub(crate) qi: Zeroizing<Vec<u8>>,
}

/// A JSON Web Key: an RSA, EC (P-256, P-384) or OKP (Ed25519) key, public or private.
///
/// Parse one with [`Jwk::from_json`] (or serde), write it with [`Jwk::to_json`] (or serde;
/// private members are written only when present, so use [`to_public`](Self::to_public)
/// before publishing a key). The optional `kid`, `alg`, `use` and `key_ops` members are
/// kept; other members (`x5c`, …) are ignored. `Debug` never prints private members, and
/// they are zeroed when the key is dropped.
///
/// A key verifies or signs only with the algorithms of its type and curve, only with its
/// `alg` when it names one, only when its `use` (if any) is `sig`, and only when its
/// `key_ops` (if any) lists the operation.
///
/// ```
/// use arctern::auth::jose::Jwk;
///
/// // RFC 7638 §3.1.
/// let jwk = Jwk::from_json(r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#)?;
/// assert_eq!(jwk.thumbprint(), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
/// assert!(!jwk.is_private());
/// # Ok::<(), arctern::auth::jose::JoseError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Jwk {
    pub(crate) material: Material,
    kid: Option<String>,
    alg: Option<String>,
    key_use: Option<String>,
    key_ops: Option<Vec<String>>,
}

impl fmt::Debug for Jwk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwk")
            .field("kty", &self.key_type().as_str())
            .field("crv", &self.curve().map(Curve::as_str))
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("private", &self.is_private())
            .field("thumbprint", &self.thumbprint())
            .finish()
    }
}

impl Jwk {
    pub(crate) fn from_material(material: Material) -> Self {
        Jwk {
            material,
            kid: None,
            alg: None,
            key_use: None,
            key_ops: None,
        }
    }

    /// Parses a JWK from JSON text.
    pub fn from_json(json: &str) -> Result<Self, JoseError> {
        let value: Value = serde_json::from_str(json).map_err(|e| JoseError::json("JWK", e))?;
        Self::from_value(&value)
    }

    /// Parses a JWK from a JSON value.
    pub fn from_value(value: &Value) -> Result<Self, JoseError> {
        let obj = value
            .as_object()
            .ok_or(JoseError::Malformed("JWK (not a JSON object)"))?;
        let kty = string(obj, "kty")?.ok_or(JoseError::Malformed("JWK (no kty)"))?;
        let material = match kty {
            "RSA" => parse_rsa(obj)?,
            "EC" => {
                let curve = match string(obj, "crv")? {
                    Some("P-256") => Curve::P256,
                    Some("P-384") => Curve::P384,
                    Some(other) => {
                        return Err(JoseError::UnsupportedKey(format!("EC curve {other:?}")));
                    }
                    None => return Err(JoseError::Malformed("EC JWK (no crv)")),
                };
                let size = curve.size();
                Material::Ec {
                    curve,
                    x: fixed(obj, "x", size)?,
                    y: fixed(obj, "y", size)?,
                    d: optional_fixed(obj, "d", size)?,
                }
            }
            "OKP" => match string(obj, "crv")? {
                Some("Ed25519") => Material::Okp {
                    x: fixed(obj, "x", 32)?,
                    d: optional_fixed(obj, "d", 32)?,
                },
                Some(other) => {
                    return Err(JoseError::UnsupportedKey(format!("OKP curve {other:?}")));
                }
                None => return Err(JoseError::Malformed("OKP JWK (no crv)")),
            },
            other => return Err(JoseError::UnsupportedKey(format!("key type {other:?}"))),
        };
        let key_ops = match obj.get("key_ops") {
            None => None,
            Some(Value::Array(ops)) => Some(
                ops.iter()
                    .map(|op| op.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(JoseError::Malformed("JWK key_ops"))?,
            ),
            Some(_) => return Err(JoseError::Malformed("JWK key_ops")),
        };
        Ok(Jwk {
            material,
            kid: string(obj, "kid")?.map(str::to_owned),
            alg: string(obj, "alg")?.map(str::to_owned),
            key_use: string(obj, "use")?.map(str::to_owned),
            key_ops,
        })
    }

    /// The JWK as a JSON value, with the private members when it has them.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        let b = |bytes: &[u8]| Value::String(base64url::encode(bytes));
        obj.insert("kty".into(), self.key_type().as_str().into());
        if let Some(crv) = self.curve() {
            obj.insert("crv".into(), crv.as_str().into());
        }
        match &self.material {
            Material::Rsa { n, e, private } => {
                obj.insert("n".into(), b(n));
                obj.insert("e".into(), b(e));
                if let Some(p) = private {
                    obj.insert("d".into(), b(&p.d));
                    obj.insert("p".into(), b(&p.p));
                    obj.insert("q".into(), b(&p.q));
                    obj.insert("dp".into(), b(&p.dp));
                    obj.insert("dq".into(), b(&p.dq));
                    obj.insert("qi".into(), b(&p.qi));
                }
            }
            Material::Ec { x, y, d, .. } => {
                obj.insert("x".into(), b(x));
                obj.insert("y".into(), b(y));
                if let Some(d) = d {
                    obj.insert("d".into(), b(d));
                }
            }
            Material::Okp { x, d } => {
                obj.insert("x".into(), b(x));
                if let Some(d) = d {
                    obj.insert("d".into(), b(d));
                }
            }
        }
        if let Some(kid) = &self.kid {
            obj.insert("kid".into(), kid.clone().into());
        }
        if let Some(alg) = &self.alg {
            obj.insert("alg".into(), alg.clone().into());
        }
        if let Some(key_use) = &self.key_use {
            obj.insert("use".into(), key_use.clone().into());
        }
        if let Some(ops) = &self.key_ops {
            obj.insert("key_ops".into(), ops.clone().into());
        }
        Value::Object(obj)
    }

    /// The JWK as JSON text, with the private members when it has them.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The same key without its private members (and without `key_ops`, which name private
    /// operations too).
    pub fn to_public(&self) -> Jwk {
        let material = match &self.material {
            Material::Rsa { n, e, .. } => Material::Rsa {
                n: n.clone(),
                e: e.clone(),
                private: None,
            },
            Material::Ec { curve, x, y, .. } => Material::Ec {
                curve: *curve,
                x: x.clone(),
                y: y.clone(),
                d: None,
            },
            Material::Okp { x, .. } => Material::Okp {
                x: x.clone(),
                d: None,
            },
        };
        Jwk {
            material,
            kid: self.kid.clone(),
            alg: self.alg.clone(),
            key_use: self.key_use.clone(),
            key_ops: None,
        }
    }

    /// Whether the JWK carries private key material.
    pub fn is_private(&self) -> bool {
        match &self.material {
            Material::Rsa { private, .. } => private.is_some(),
            Material::Ec { d, .. } | Material::Okp { d, .. } => d.is_some(),
        }
    }

    /// The key type.
    pub fn key_type(&self) -> KeyType {
        match &self.material {
            Material::Rsa { .. } => KeyType::Rsa,
            Material::Ec { .. } => KeyType::Ec,
            Material::Okp { .. } => KeyType::Okp,
        }
    }

    /// The curve (`None` for RSA).
    pub fn curve(&self) -> Option<Curve> {
        match &self.material {
            Material::Rsa { .. } => None,
            Material::Ec { curve, .. } => Some(*curve),
            Material::Okp { .. } => Some(Curve::Ed25519),
        }
    }

    /// The key id (`kid`).
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// The algorithm the key is meant for (`alg`), as written.
    pub fn alg(&self) -> Option<&str> {
        self.alg.as_deref()
    }

    /// The public key use (`use`), as written.
    pub fn key_use(&self) -> Option<&str> {
        self.key_use.as_deref()
    }

    /// Sets the key id.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// Sets `alg` (the key then verifies and signs with that algorithm only).
    pub fn with_alg(mut self, alg: Algorithm) -> Self {
        self.alg = Some(alg.as_str().to_owned());
        self
    }

    /// Sets `use` to `sig`.
    pub fn with_signature_use(mut self) -> Self {
        self.key_use = Some("sig".to_owned());
        self
    }

    /// The RFC 7638 thumbprint: the unpadded base64url SHA-256 of the key's required
    /// public members, in lexicographic order, without whitespace. DPoP's `cnf.jkt` is
    /// this value.
    pub fn thumbprint(&self) -> String {
        let b = base64url::encode;
        // Every value is base64url or a fixed name: no JSON escaping is needed.
        let canonical = match &self.material {
            Material::Rsa { n, e, .. } => {
                format!(r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#, b(e), b(n))
            }
            Material::Ec { curve, x, y, .. } => format!(
                r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
                curve.as_str(),
                b(x),
                b(y)
            ),
            Material::Okp { x, .. } => format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, b(x)),
        };
        base64url::encode(ring::digest::digest(
            &ring::digest::SHA256,
            canonical.as_bytes(),
        ))
    }

    /// Whether this key may be used with `alg` for `op` (`"verify"` or `"sign"`).
    pub(crate) fn check(&self, alg: Algorithm, op: &str) -> Result<(), JoseError> {
        let fits = match (&self.material, alg) {
            (Material::Rsa { .. }, a) => a.key_type() == KeyType::Rsa,
            (Material::Ec { curve, .. }, a) => a.curve() == Some(*curve),
            (Material::Okp { .. }, a) => a == Algorithm::EdDSA,
        };
        let alg_ok = self.alg.as_deref().is_none_or(|a| a == alg.as_str());
        let use_ok = self.key_use.as_deref().is_none_or(|u| u == "sig");
        let ops_ok = self
            .key_ops
            .as_ref()
            .is_none_or(|ops| ops.iter().any(|o| o == op));
        if fits && alg_ok && use_ok && ops_ok {
            Ok(())
        } else {
            Err(JoseError::KeyMismatch(alg))
        }
    }

    /// Whether this key may verify signatures made with `alg`.
    pub fn can_verify(&self, alg: Algorithm) -> bool {
        self.check(alg, "verify").is_ok()
    }

    /// Verifies `signature` over `message` with `alg` (JWS signature encoding: ECDSA
    /// signatures are `r || s`). Fails with [`JoseError::KeyMismatch`] when the key cannot
    /// be used with `alg`.
    pub fn verify(
        &self,
        alg: Algorithm,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), JoseError> {
        use ring::signature as sig;
        self.check(alg, "verify")?;
        let result = match &self.material {
            Material::Rsa { n, e, .. } => {
                let params: &sig::RsaParameters = match alg {
                    Algorithm::RS256 => &sig::RSA_PKCS1_2048_8192_SHA256,
                    Algorithm::RS384 => &sig::RSA_PKCS1_2048_8192_SHA384,
                    Algorithm::RS512 => &sig::RSA_PKCS1_2048_8192_SHA512,
                    Algorithm::PS256 => &sig::RSA_PSS_2048_8192_SHA256,
                    Algorithm::PS384 => &sig::RSA_PSS_2048_8192_SHA384,
                    Algorithm::PS512 => &sig::RSA_PSS_2048_8192_SHA512,
                    _ => return Err(JoseError::KeyMismatch(alg)),
                };
                sig::RsaPublicKeyComponents { n, e }.verify(params, message, signature)
            }
            Material::Ec { curve, x, y, .. } => {
                let params = match curve {
                    Curve::P256 => &sig::ECDSA_P256_SHA256_FIXED,
                    _ => &sig::ECDSA_P384_SHA384_FIXED,
                };
                let mut point = Vec::with_capacity(1 + x.len() + y.len());
                point.push(4);
                point.extend_from_slice(x);
                point.extend_from_slice(y);
                sig::UnparsedPublicKey::new(params, point).verify(message, signature)
            }
            Material::Okp { x, .. } => {
                sig::UnparsedPublicKey::new(&sig::ED25519, x).verify(message, signature)
            }
        };
        result.map_err(|_| JoseError::BadSignature)
    }
}

impl Serialize for Jwk {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Jwk {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Jwk::from_value(&value).map_err(D::Error::custom)
    }
}

fn string<'a>(
    obj: &'a Map<String, Value>,
    name: &'static str,
) -> Result<Option<&'a str>, JoseError> {
    match obj.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(JoseError::Malformed("JWK member that must be a string")),
    }
}

fn bytes(obj: &Map<String, Value>, name: &'static str) -> Result<Option<Vec<u8>>, JoseError> {
    string(obj, name)?
        .map(|s| base64url::decode(s, name))
        .transpose()
}

fn required(obj: &Map<String, Value>, name: &'static str) -> Result<Vec<u8>, JoseError> {
    bytes(obj, name)?.ok_or(JoseError::Malformed("JWK (a required member is missing)"))
}

fn fixed(obj: &Map<String, Value>, name: &'static str, size: usize) -> Result<Vec<u8>, JoseError> {
    let value = required(obj, name)?;
    if value.len() != size {
        return Err(JoseError::Malformed(
            "JWK (a coordinate has the wrong length)",
        ));
    }
    Ok(value)
}

fn optional_fixed(
    obj: &Map<String, Value>,
    name: &'static str,
    size: usize,
) -> Result<Option<Zeroizing<Vec<u8>>>, JoseError> {
    match bytes(obj, name)? {
        None => Ok(None),
        Some(v) if v.len() == size => Ok(Some(Zeroizing::new(v))),
        Some(_) => Err(JoseError::Malformed(
            "JWK (the private key has the wrong length)",
        )),
    }
}

fn unsigned(obj: &Map<String, Value>, name: &'static str) -> Result<Vec<u8>, JoseError> {
    let raw = Zeroizing::new(required(obj, name)?);
    Ok(strip_leading_zeros(&raw).to_vec())
}

fn parse_rsa(obj: &Map<String, Value>) -> Result<Material, JoseError> {
    let n = unsigned(obj, "n")?;
    let e = unsigned(obj, "e")?;
    if n.len() < RSA_MIN_BYTES || n.len() > RSA_MAX_BYTES {
        return Err(JoseError::UnsupportedKey(format!(
            "RSA modulus of {} bits (2048 to 8192 are supported)",
            n.len() * 8
        )));
    }
    if e.len() > 8 {
        return Err(JoseError::Malformed("RSA JWK (public exponent too long)"));
    }
    let private = if obj.contains_key("d") {
        if obj.contains_key("oth") {
            return Err(JoseError::UnsupportedKey("multi-prime RSA".into()));
        }
        let secret = |name| unsigned(obj, name).map(Zeroizing::new);
        let missing_crt = ["p", "q", "dp", "dq", "qi"]
            .iter()
            .any(|m| !obj.contains_key(*m));
        if missing_crt {
            return Err(JoseError::UnsupportedKey(
                "RSA private key without p, q, dp, dq and qi".into(),
            ));
        }
        Some(Box::new(RsaPrivate {
            d: secret("d")?,
            p: secret("p")?,
            q: secret("q")?,
            dp: secret("dp")?,
            dq: secret("dq")?,
            qi: secret("qi")?,
        }))
    } else {
        None
    };
    Ok(Material::Rsa { n, e, private })
}

/// A JWK Set (RFC 7517 §5), holding public keys only.
///
/// [`from_json`](Self::from_json) skips keys it cannot use (other key types or curves,
/// malformed entries) rather than failing the whole set, as RFC 7517 §5 asks, and drops
/// private members a set should never publish. [`skipped`](Self::skipped) counts what was
/// left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JwkSet {
    keys: Vec<Jwk>,
    skipped: usize,
}

impl JwkSet {
    /// A set of the public parts of `keys`.
    pub fn new(keys: impl IntoIterator<Item = Jwk>) -> Self {
        JwkSet {
            keys: keys.into_iter().map(|k| k.to_public()).collect(),
            skipped: 0,
        }
    }

    /// Parses a JWKS document (`{"keys": [...]}`).
    pub fn from_json(json: &str) -> Result<Self, JoseError> {
        let value: Value = serde_json::from_str(json).map_err(|e| JoseError::json("JWKS", e))?;
        let keys = value
            .get("keys")
            .and_then(Value::as_array)
            .ok_or(JoseError::Malformed("JWKS (no keys array)"))?;
        let mut set = JwkSet::default();
        for key in keys {
            match Jwk::from_value(key) {
                Ok(jwk) => set.keys.push(jwk.to_public()),
                Err(_) => set.skipped += 1,
            }
        }
        Ok(set)
    }

    /// The set as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "keys": self.keys }).to_string()
    }

    /// The keys.
    pub fn keys(&self) -> &[Jwk] {
        &self.keys
    }

    /// How many entries [`from_json`](Self::from_json) left out.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Whether some key has this `kid`.
    pub fn contains_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid() == Some(kid))
    }

    /// The keys that may verify `alg` signatures and, when `kid` is given, have that `kid`.
    pub fn candidates<'a>(
        &'a self,
        kid: Option<&'a str>,
        alg: Algorithm,
    ) -> impl Iterator<Item = &'a Jwk> + 'a {
        self.keys
            .iter()
            .filter(move |k| kid.is_none_or(|kid| k.kid() == Some(kid)) && k.can_verify(alg))
    }
}

impl Serialize for JwkSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({ "keys": self.keys }).serialize(serializer)
    }
}
