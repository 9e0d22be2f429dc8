//! Algorithms and private signing keys.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self as sig, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::Zeroizing;

use super::der::{Pkcs8Key, parse_pkcs8};
use super::jwk::{Curve, Jwk, KeyType, Material};
use super::jws::Header;
use super::{JoseError, base64url};

/// A JWS signature algorithm (RFC 7518 §3, RFC 8037 §3.1). Only asymmetric algorithms
/// exist here: `none` and `HS*` are not algorithms of this module.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256 and MGF1 with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384 and MGF1 with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512 and MGF1 with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// EdDSA on Ed25519.
    EdDSA,
}

impl Algorithm {
    /// Every algorithm this module implements.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
        Algorithm::PS256,
        Algorithm::PS384,
        Algorithm::PS512,
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::EdDSA,
    ];

    /// The `alg` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::RS256 => "RS256",
            Algorithm::RS384 => "RS384",
            Algorithm::RS512 => "RS512",
            Algorithm::PS256 => "PS256",
            Algorithm::PS384 => "PS384",
            Algorithm::PS512 => "PS512",
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
            Algorithm::EdDSA => "EdDSA",
        }
    }

    /// The key type this algorithm needs.
    pub fn key_type(self) -> KeyType {
        match self {
            Algorithm::ES256 | Algorithm::ES384 => KeyType::Ec,
            Algorithm::EdDSA => KeyType::Okp,
            _ => KeyType::Rsa,
        }
    }

    /// The curve this algorithm needs (`None` for RSA).
    pub fn curve(self) -> Option<Curve> {
        match self {
            Algorithm::ES256 => Some(Curve::P256),
            Algorithm::ES384 => Some(Curve::P384),
            Algorithm::EdDSA => Some(Curve::Ed25519),
            _ => None,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = JoseError;

    /// Parses an `alg` value (case-sensitive, as RFC 7515 says); `none`, `HS256` and every
    /// other algorithm this module does not implement fail.
    fn from_str(s: &str) -> Result<Self, JoseError> {
        Algorithm::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| JoseError::UnsupportedAlgorithm(s.chars().take(32).collect()))
    }
}

impl Serialize for Algorithm {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Algorithm {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

enum Pair {
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

/// A private key that signs JWS (RSA, ECDSA P-256/P-384, Ed25519), with its JWK.
///
/// Make one with [`generate`](Self::generate) (ECDSA and Ed25519; `ring` cannot generate
/// RSA keys), [`from_pkcs8_pem`](Self::from_pkcs8_pem) / [`from_pkcs8_der`](Self::from_pkcs8_der),
/// or [`from_jwk`](Self::from_jwk). It signs with one algorithm: the key type's default
/// (`RS256`, `ES256`, `ES384`, `EdDSA`) unless [`with_algorithm`](Self::with_algorithm)
/// picks another that fits (`PS256` for an RSA key, say). Cheap to clone; `Debug` shows
/// only public facts; private material is zeroed on drop (the copy inside `ring` is not).
///
/// ```
/// use arctern::auth::jose::{Algorithm, SigningKey};
///
/// let key = SigningKey::generate(Algorithm::ES256)?;
/// let public = key.public_jwk();          // {"kty":"EC","crv":"P-256",...,"alg":"ES256","use":"sig"}
/// assert_eq!(public.thumbprint(), key.thumbprint());
/// let saved = key.private_jwk().to_json(); // keep it to reuse the key later
/// assert_eq!(SigningKey::from_jwk(&arctern::auth::jose::Jwk::from_json(&saved)?)?.thumbprint(), key.thumbprint());
/// # Ok::<(), arctern::auth::jose::JoseError>(())
/// ```
#[derive(Clone)]
pub struct SigningKey {
    pair: Arc<Pair>,
    jwk: Arc<Jwk>,
    alg: Algorithm,
    kid: Option<String>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

fn rejected(e: ring::error::KeyRejected) -> JoseError {
    JoseError::InvalidKey(e.to_string())
}

impl SigningKey {
    /// Generates a key for `alg`: `ES256`, `ES384` or `EdDSA` (a DPoP proof key, a test
    /// authorization server's key). RSA algorithms fail with
    /// [`JoseError::UnsupportedKey`].
    pub fn generate(alg: Algorithm) -> Result<Self, JoseError> {
        let rng = SystemRandom::new();
        let document = match alg {
            Algorithm::ES256 => {
                EcdsaKeyPair::generate_pkcs8(&sig::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            }
            Algorithm::ES384 => {
                EcdsaKeyPair::generate_pkcs8(&sig::ECDSA_P384_SHA384_FIXED_SIGNING, &rng)
            }
            Algorithm::EdDSA => Ed25519KeyPair::generate_pkcs8(&rng),
            _ => {
                return Err(JoseError::UnsupportedKey(
                    "RSA keys cannot be generated here; load one from PKCS#8".into(),
                ));
            }
        }
        .map_err(|_| JoseError::Random)?;
        let der = Zeroizing::new(document.as_ref().to_vec());
        Self::from_pkcs8_der(&der)?.with_algorithm(alg)
    }

    /// Loads a PKCS#8 private key from PEM (`-----BEGIN PRIVATE KEY-----`), such as
    /// `openssl genpkey` writes. The first PKCS#8 section is used; PKCS#1 (`BEGIN RSA
    /// PRIVATE KEY`) and SEC1 (`BEGIN EC PRIVATE KEY`) files must be converted first
    /// (`openssl pkcs8 -topk8 -nocrypt`).
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, JoseError> {
        use rustls_pki_types::PrivatePkcs8KeyDer;
        use rustls_pki_types::pem::PemObject as _;
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|_| JoseError::Malformed("PEM (no -----BEGIN PRIVATE KEY----- section)"))?;
        Self::from_pkcs8_der(der.secret_pkcs8_der())
    }

    /// Loads a PKCS#8 (RFC 5958) DER private key: RSA (2048 to 8192 bits), ECDSA P-256 or
    /// P-384, or Ed25519.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, JoseError> {
        let rng = SystemRandom::new();
        match parse_pkcs8(der)? {
            Pkcs8Key::Rsa { n, e, private } => {
                let pair = RsaKeyPair::from_pkcs8(der).map_err(rejected)?;
                let material = Material::Rsa {
                    n,
                    e,
                    private: Some(private),
                };
                Ok(Self::assemble(Pair::Rsa(pair), material, Algorithm::RS256))
            }
            Pkcs8Key::Ec { p256, d } => {
                let (signing, curve, alg) = if p256 {
                    (
                        &sig::ECDSA_P256_SHA256_FIXED_SIGNING,
                        Curve::P256,
                        Algorithm::ES256,
                    )
                } else {
                    (
                        &sig::ECDSA_P384_SHA384_FIXED_SIGNING,
                        Curve::P384,
                        Algorithm::ES384,
                    )
                };
                let pair = EcdsaKeyPair::from_pkcs8(signing, der, &rng).map_err(rejected)?;
                let (x, y) = split_point(pair.public_key().as_ref(), curve)?;
                let material = Material::Ec {
                    curve,
                    x,
                    y,
                    d: Some(d),
                };
                Ok(Self::assemble(Pair::Ecdsa(pair), material, alg))
            }
            Pkcs8Key::Ed25519 { seed } => {
                let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(rejected)?;
                let material = Material::Okp {
                    x: pair.public_key().as_ref().to_vec(),
                    d: Some(seed),
                };
                Ok(Self::assemble(
                    Pair::Ed25519(pair),
                    material,
                    Algorithm::EdDSA,
                ))
            }
        }
    }

    /// A signing key from a private JWK. Its `kid` and `alg` are kept (the key then signs
    /// with that `alg`).
    pub fn from_jwk(jwk: &Jwk) -> Result<Self, JoseError> {
        let rng = SystemRandom::new();
        let (pair, default_alg) = match &jwk.material {
            Material::Rsa { n, e, private } => {
                let p = private.as_ref().ok_or(JoseError::NotPrivate)?;
                let components = ring::rsa::KeyPairComponents {
                    public_key: ring::rsa::PublicKeyComponents {
                        n: n.as_slice(),
                        e: e.as_slice(),
                    },
                    d: p.d.as_slice(),
                    p: p.p.as_slice(),
                    q: p.q.as_slice(),
                    dP: p.dp.as_slice(),
                    dQ: p.dq.as_slice(),
                    qInv: p.qi.as_slice(),
                };
                let pair = RsaKeyPair::from_components(&components).map_err(rejected)?;
                (Pair::Rsa(pair), Algorithm::RS256)
            }
            Material::Ec { curve, x, y, d } => {
                let d = d.as_ref().ok_or(JoseError::NotPrivate)?;
                let (signing, alg) = match curve {
                    Curve::P256 => (&sig::ECDSA_P256_SHA256_FIXED_SIGNING, Algorithm::ES256),
                    _ => (&sig::ECDSA_P384_SHA384_FIXED_SIGNING, Algorithm::ES384),
                };
                let mut point = Vec::with_capacity(1 + x.len() + y.len());
                point.push(4);
                point.extend_from_slice(x);
                point.extend_from_slice(y);
                let pair = EcdsaKeyPair::from_private_key_and_public_key(signing, d, &point, &rng)
                    .map_err(rejected)?;
                (Pair::Ecdsa(pair), alg)
            }
            Material::Okp { x, d } => {
                let d = d.as_ref().ok_or(JoseError::NotPrivate)?;
                let pair = Ed25519KeyPair::from_seed_and_public_key(d, x).map_err(rejected)?;
                (Pair::Ed25519(pair), Algorithm::EdDSA)
            }
        };
        let alg = match jwk.alg() {
            Some(a) => a.parse()?,
            None => default_alg,
        };
        jwk.check(alg, "sign")?;
        Ok(SigningKey {
            pair: Arc::new(pair),
            jwk: Arc::new(jwk.clone()),
            alg,
            kid: jwk.kid().map(str::to_owned),
        })
    }

    fn assemble(pair: Pair, material: Material, alg: Algorithm) -> Self {
        SigningKey {
            pair: Arc::new(pair),
            jwk: Arc::new(Jwk::from_material(material)),
            alg,
            kid: None,
        }
    }

    /// Signs with `alg` instead of the key type's default; fails with
    /// [`JoseError::KeyMismatch`] when the key cannot (`PS256` with an EC key, say).
    pub fn with_algorithm(mut self, alg: Algorithm) -> Result<Self, JoseError> {
        self.jwk.check(alg, "sign")?;
        self.alg = alg;
        Ok(self)
    }

    /// Sets the key id written in the `kid` header and the public JWK.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// Uses the key's RFC 7638 thumbprint as its key id.
    pub fn with_thumbprint_kid(self) -> Self {
        let kid = self.thumbprint();
        self.with_kid(kid)
    }

    /// The algorithm this key signs with.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The key id, if set.
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// The public JWK, with `kid` (if set), `alg` and `use: "sig"`: what goes in a JWKS
    /// or a DPoP proof's header.
    pub fn public_jwk(&self) -> Jwk {
        let jwk = self.jwk.to_public().with_alg(self.alg).with_signature_use();
        match &self.kid {
            Some(kid) => jwk.with_kid(kid.clone()),
            None => jwk,
        }
    }

    /// The private JWK, with `kid` (if set) and `alg`, to store the key. Keep it secret.
    pub fn private_jwk(&self) -> Jwk {
        let jwk = (*self.jwk).clone().with_alg(self.alg);
        match &self.kid {
            Some(kid) => jwk.with_kid(kid.clone()),
            None => jwk,
        }
    }

    /// The RFC 7638 thumbprint of the public key.
    pub fn thumbprint(&self) -> String {
        self.jwk.thumbprint()
    }

    /// Signs `message` (JWS encoding: ECDSA signatures are `r || s`).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, JoseError> {
        let rng = SystemRandom::new();
        match &*self.pair {
            Pair::Rsa(pair) => {
                let padding: &dyn sig::RsaEncoding = match self.alg {
                    Algorithm::RS256 => &sig::RSA_PKCS1_SHA256,
                    Algorithm::RS384 => &sig::RSA_PKCS1_SHA384,
                    Algorithm::RS512 => &sig::RSA_PKCS1_SHA512,
                    Algorithm::PS256 => &sig::RSA_PSS_SHA256,
                    Algorithm::PS384 => &sig::RSA_PSS_SHA384,
                    Algorithm::PS512 => &sig::RSA_PSS_SHA512,
                    other => return Err(JoseError::KeyMismatch(other)),
                };
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(padding, &rng, message, &mut signature)
                    .map_err(|_| JoseError::InvalidKey("RSA signing failed".into()))?;
                Ok(signature)
            }
            Pair::Ecdsa(pair) => pair
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| JoseError::Random),
            Pair::Ed25519(pair) => Ok(pair.sign(message).as_ref().to_vec()),
        }
    }

    /// Signs `payload` as a compact JWS. The header's `alg` is this key's; its `kid` is
    /// this key's unless the header sets one (or sets [`Header::jwk`], as DPoP does).
    pub fn sign_jws(&self, header: &Header, payload: &[u8]) -> Result<String, JoseError> {
        let kid = if header.kid.is_none() && header.jwk.is_none() {
            self.kid.as_deref()
        } else {
            None
        };
        let header = header.to_json(self.alg, kid);
        let mut out = base64url::encode(header.as_bytes());
        out.push('.');
        out.push_str(&base64url::encode(payload));
        let signature = self.sign(out.as_bytes())?;
        out.push('.');
        out.push_str(&base64url::encode(signature));
        Ok(out)
    }

    /// Signs `claims` (any serializable JSON object, such as [`Claims`](super::Claims)) as
    /// a JWT.
    pub fn sign_jwt(&self, header: &Header, claims: &impl Serialize) -> Result<String, JoseError> {
        let payload = serde_json::to_vec(claims).map_err(|e| JoseError::json("claims", e))?;
        self.sign_jws(header, &payload)
    }
}

fn split_point(point: &[u8], curve: Curve) -> Result<(Vec<u8>, Vec<u8>), JoseError> {
    let size = curve.size();
    if point.len() != 1 + 2 * size || point[0] != 4 {
        return Err(JoseError::InvalidKey(
            "unexpected EC public key encoding".into(),
        ));
    }
    Ok((point[1..1 + size].to_vec(), point[1 + size..].to_vec()))
}

/// A random identifier (128 bits, base64url): `jti` values.
pub(crate) fn random_id() -> Result<String, JoseError> {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| JoseError::Random)?;
    Ok(base64url::encode(bytes))
}
