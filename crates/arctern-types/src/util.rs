//! Internal serde helpers shared by the wire types.

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serializer};
use serde_json::{Map, Value};

/// Reads any JSON value; used by unions that pick their variant by looking at members.
pub(crate) fn buffer<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    Value::deserialize(d)
}

/// Buffers a JSON object; anything else is an error naming `what`.
pub(crate) fn buffer_object<'de, D: Deserializer<'de>>(
    d: D,
    what: &'static str,
) -> Result<Map<String, Value>, D::Error> {
    match Value::deserialize(d)? {
        Value::Object(map) => Ok(map),
        other => Err(de::Error::invalid_type(unexpected(&other), &what)),
    }
}

/// Decodes a buffered object into `T`, reporting errors through the outer deserializer.
pub(crate) fn from_object<T: DeserializeOwned, E: de::Error>(
    map: Map<String, Value>,
) -> Result<T, E> {
    T::deserialize(Value::Object(map)).map_err(E::custom)
}

/// The string value of member `key`, if it is a string.
pub(crate) fn str_member<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// A serde `Unexpected` describing a JSON value.
pub(crate) fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => de::Unexpected::Unsigned(u),
            (_, Some(i), _) => de::Unexpected::Signed(i),
            (_, _, Some(f)) => de::Unexpected::Float(f),
            _ => de::Unexpected::Other("number"),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

/// For `Option<Value>` members that may legitimately be JSON `null`: a present member,
/// even `null`, becomes `Some`; only an absent member (via `#[serde(default)]`) is `None`.
pub(crate) fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `ttlMs`: an integer ≥ 0. Read leniently, as the specification asks of clients: a negative
/// value counts as 0, a fractional one is truncated, `null` counts as absent.
pub(crate) fn lenient_ttl<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(if let Some(u) = n.as_u64() {
            u
        } else if n.is_i64() {
            0
        } else {
            let f = n.as_f64().unwrap_or(0.0);
            if f.is_nan() || f <= 0.0 {
                0
            } else {
                // `as` saturates at u64::MAX.
                f as u64
            }
        })),
        Some(other) => Err(de::Error::invalid_type(
            unexpected(&other),
            &"a non-negative integer number of milliseconds",
        )),
    }
}

/// Writes a JSON `number` held as `f64`: integral values within ±2^53 as integers (`50`, not
/// `50.0`), so integers a peer sent survive a round trip unchanged.
pub(crate) fn compact_number<S: Serializer>(v: f64, s: S) -> Result<S::Ok, S::Error> {
    const MAX_EXACT: f64 = 9_007_199_254_740_992.0;
    if v.fract() == 0.0 && v.abs() <= MAX_EXACT {
        s.serialize_i64(v as i64)
    } else {
        s.serialize_f64(v)
    }
}

/// [`compact_number`] for required members.
pub(crate) fn compact_f64_required<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    compact_number(*v, s)
}

/// [`compact_number`] for optional members (use with `skip_serializing_if`).
pub(crate) fn compact_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => compact_number(*v, s),
        None => s.serialize_none(),
    }
}

/// Implements `Serialize` for an enum whose every variant wraps a serializable value, by
/// delegating to that value (each wrapped type carries its own discriminator).
macro_rules! serialize_variants {
    ($ty:ident $(<$g:ident>)? { $($variant:ident),+ $(,)? }) => {
        impl$(<$g: serde::Serialize>)? serde::Serialize for $ty$(<$g>)? {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $($ty::$variant(v) => v.serialize(s),)+
                }
            }
        }
    };
}
pub(crate) use serialize_variants;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Ttl {
        #[serde(default, deserialize_with = "lenient_ttl")]
        ttl: Option<u64>,
    }

    fn ttl(json: &str) -> Option<u64> {
        serde_json::from_str::<Ttl>(json).unwrap().ttl
    }

    #[test]
    fn numbers_are_written_compactly() {
        let w = |v: f64| compact_number(v, serde_json::value::Serializer).unwrap();
        assert_eq!(w(50.0), serde_json::json!(50));
        assert_eq!(w(-3.0), serde_json::json!(-3));
        assert_eq!(w(0.5), serde_json::json!(0.5));
        assert_eq!(w(1e300), serde_json::json!(1e300));
        assert!(w(1e300).is_f64());
    }

    #[test]
    fn ttl_is_read_leniently() {
        assert_eq!(ttl(r#"{}"#), None);
        assert_eq!(ttl(r#"{"ttl":null}"#), None);
        assert_eq!(ttl(r#"{"ttl":5000}"#), Some(5000));
        assert_eq!(ttl(r#"{"ttl":-3}"#), Some(0));
        assert_eq!(ttl(r#"{"ttl":1.9}"#), Some(1));
        assert!(serde_json::from_str::<Ttl>(r#"{"ttl":"5"}"#).is_err());
    }
}
