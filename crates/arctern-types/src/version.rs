//! Protocol revisions and the two eras.
//!
//! **Modern** revisions (2026-07-28 and later) carry the version and client capabilities in
//! every request's `_meta`. **Legacy** revisions (2025-11-25 and earlier) negotiate them once
//! with `initialize`.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A protocol revision string such as `"2026-07-28"`.
///
/// Unknown revisions are kept as they are; ordering is by the date string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProtocolVersion(Cow<'static, str>);

impl ProtocolVersion {
    /// 2026-07-28: stateless, multi round-trip requests.
    pub const V2026_07_28: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2026-07-28"));
    /// 2025-11-25: the last legacy revision (tasks, URL elicitation, icons).
    pub const V2025_11_25: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-11-25"));
    /// 2025-06-18: elicitation, structured tool output.
    pub const V2025_06_18: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-06-18"));
    /// 2025-03-26: the first Streamable HTTP revision.
    pub const V2025_03_26: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-03-26"));
    /// 2024-11-05: the first published revision.
    pub const V2024_11_05: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2024-11-05"));

    /// The newest revision this crate implements.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;

    /// Modern revisions this crate implements, newest first.
    pub const MODERN: &'static [ProtocolVersion] = &[Self::V2026_07_28];

    /// Legacy revisions this crate implements, newest first.
    pub const LEGACY: &'static [ProtocolVersion] = &[Self::V2025_11_25, Self::V2025_06_18];

    /// A version from any string.
    pub fn new(version: impl Into<Cow<'static, str>>) -> Self {
        ProtocolVersion(version.into())
    }

    /// The revision string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this revision uses the per-request envelope (2026-07-28 or later).
    pub fn is_modern(&self) -> bool {
        self.0.as_ref() >= "2026-07-28"
    }

    /// Whether this is a revision this crate implements.
    pub fn is_known(&self) -> bool {
        Self::MODERN.contains(self) || Self::LEGACY.contains(self)
    }
}

impl fmt::Debug for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ProtocolVersion {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ProtocolVersion {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ProtocolVersion {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<&'static str> for ProtocolVersion {
    fn from(s: &'static str) -> Self {
        ProtocolVersion(Cow::Borrowed(s))
    }
}

impl From<String> for ProtocolVersion {
    fn from(s: String) -> Self {
        ProtocolVersion(Cow::Owned(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras() {
        assert!(ProtocolVersion::V2026_07_28.is_modern());
        assert!(!ProtocolVersion::V2025_11_25.is_modern());
        assert!(ProtocolVersion::new("2027-01-01").is_modern());
        assert!(!ProtocolVersion::new("v999.0.0").is_known());
        assert!(ProtocolVersion::V2025_06_18 < ProtocolVersion::V2025_11_25);
        assert_eq!(ProtocolVersion::LATEST, "2026-07-28");
    }
}
