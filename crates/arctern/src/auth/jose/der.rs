//! Just enough DER to read the private key formats `ring` loads (PKCS#8 with an RSA, EC or
//! Ed25519 key inside), so that a loaded key can also be written out as a JWK and its
//! algorithm chosen without trial and error.

use zeroize::Zeroizing;

use super::JoseError;
use super::jwk::RsaPrivate;

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const CONTEXT_0: u8 = 0xa0;
const CONTEXT_1: u8 = 0xa1;

/// rsaEncryption, 1.2.840.113549.1.1.1.
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// id-ecPublicKey, 1.2.840.10045.2.1.
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// prime256v1, 1.2.840.10045.3.1.7.
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// secp384r1, 1.3.132.0.34.
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
/// id-Ed25519, 1.3.101.112.
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// A reader over a run of DER elements.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Reader { rest: data }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// One element: its tag and contents (definite lengths only).
    fn next(&mut self) -> Result<(u8, &'a [u8]), JoseError> {
        let bad = || JoseError::Malformed("DER private key");
        let (&tag, rest) = self.rest.split_first().ok_or_else(bad)?;
        let (&first, mut rest) = rest.split_first().ok_or_else(bad)?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return Err(bad());
            }
            let mut len = 0usize;
            for &b in &rest[..n] {
                len = (len << 8) | usize::from(b);
            }
            rest = &rest[n..];
            len
        };
        if rest.len() < len {
            return Err(bad());
        }
        let (contents, after) = rest.split_at(len);
        self.rest = after;
        Ok((tag, contents))
    }

    fn expect(&mut self, tag: u8) -> Result<&'a [u8], JoseError> {
        match self.next()? {
            (t, contents) if t == tag => Ok(contents),
            _ => Err(JoseError::Malformed("DER private key")),
        }
    }

    /// A non-negative INTEGER as a big-endian magnitude without leading zeros.
    fn unsigned(&mut self) -> Result<&'a [u8], JoseError> {
        let bytes = self.expect(INTEGER)?;
        if bytes.first().is_some_and(|b| b & 0x80 != 0) {
            return Err(JoseError::Malformed("DER private key (negative integer)"));
        }
        Ok(strip_leading_zeros(bytes))
    }
}

/// A big-endian unsigned integer without its leading zero bytes (at least one byte).
pub(crate) fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(bytes.len().saturating_sub(1));
    &bytes[start..]
}

/// The private key inside a PKCS#8 document.
pub(crate) enum Pkcs8Key {
    /// RSA: the RSAPrivateKey's integers (RFC 8017 appendix A.1.2), without leading zeros.
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
        private: Box<RsaPrivate>,
    },
    /// ECDSA on P-256 (`true`) or P-384 (`false`): the private scalar, left-padded.
    Ec { p256: bool, d: Zeroizing<Vec<u8>> },
    /// Ed25519: the 32-byte seed.
    Ed25519 { seed: Zeroizing<Vec<u8>> },
}

/// Reads a PKCS#8 `PrivateKeyInfo` / `OneAsymmetricKey` (RFC 5958).
pub(crate) fn parse_pkcs8(der: &[u8]) -> Result<Pkcs8Key, JoseError> {
    let mut outer = Reader::new(der);
    let info = outer.expect(SEQUENCE)?;
    if !outer.is_empty() {
        return Err(JoseError::Malformed("DER private key (trailing data)"));
    }
    let mut info = Reader::new(info);
    let version = info.unsigned()?;
    if version.len() != 1 || version[0] > 1 {
        return Err(JoseError::Malformed("PKCS#8 version"));
    }
    let mut alg = Reader::new(info.expect(SEQUENCE)?);
    let oid = alg.expect(OID)?;
    let private = info.expect(OCTET_STRING)?;
    match oid {
        OID_RSA => parse_rsa(private),
        OID_EC => {
            let curve = alg.expect(OID)?;
            let (p256, size) = match curve {
                OID_P256 => (true, 32),
                OID_P384 => (false, 48),
                _ => {
                    return Err(JoseError::UnsupportedKey(
                        "EC curve other than P-256 or P-384".into(),
                    ));
                }
            };
            let mut ec = Reader::new(private);
            let mut ec = Reader::new(ec.expect(SEQUENCE)?);
            if ec.unsigned()? != [1] {
                return Err(JoseError::Malformed("ECPrivateKey version"));
            }
            let d = strip_leading_zeros(ec.expect(OCTET_STRING)?);
            if d.len() > size {
                return Err(JoseError::Malformed("EC private key length"));
            }
            let mut padded = Zeroizing::new(vec![0; size]);
            padded[size - d.len()..].copy_from_slice(d);
            // [0] parameters and [1] public key may follow; ring checks them.
            while let Some(tag) = ec.peek() {
                if tag != CONTEXT_0 && tag != CONTEXT_1 {
                    return Err(JoseError::Malformed("ECPrivateKey"));
                }
                ec.next()?;
            }
            Ok(Pkcs8Key::Ec { p256, d: padded })
        }
        OID_ED25519 => {
            let seed = Reader::new(private).expect(OCTET_STRING)?;
            if seed.len() != 32 {
                return Err(JoseError::Malformed("Ed25519 private key length"));
            }
            Ok(Pkcs8Key::Ed25519 {
                seed: Zeroizing::new(seed.to_vec()),
            })
        }
        _ => Err(JoseError::UnsupportedKey(
            "PKCS#8 key of a type other than RSA, EC or Ed25519".into(),
        )),
    }
}

fn parse_rsa(der: &[u8]) -> Result<Pkcs8Key, JoseError> {
    let mut outer = Reader::new(der);
    let mut key = Reader::new(outer.expect(SEQUENCE)?);
    if key.unsigned()? != [0] {
        return Err(JoseError::UnsupportedKey("multi-prime RSA".into()));
    }
    let mut secret = || key.unsigned().map(|b| Zeroizing::new(b.to_vec()));
    let n = secret()?.to_vec();
    let e = secret()?.to_vec();
    let private = Box::new(RsaPrivate {
        d: secret()?,
        p: secret()?,
        q: secret()?,
        dp: secret()?,
        dq: secret()?,
        qi: secret()?,
    });
    Ok(Pkcs8Key::Rsa { n, e, private })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_and_garbage_inputs_fail_cleanly() {
        for input in [
            &[][..],
            &[0x30],
            &[0x30, 0x85, 1, 1, 1, 1, 1],
            &[0x30, 0x05, 1],
        ] {
            assert!(parse_pkcs8(input).is_err());
        }
        assert_eq!(strip_leading_zeros(&[0, 0, 1, 0]), [1, 0]);
        assert_eq!(strip_leading_zeros(&[0, 0]), [0]);
    }
}
