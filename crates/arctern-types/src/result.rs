//! What every result shares: `resultType`, caching hints and cursors.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::meta::JsonObject;

/// `resultType`: how to read a result. Open for extensions (the tasks extension adds
/// `"task"`).
///
/// Deserializing a result that lacks `resultType` gives [`ResultType::COMPLETE`], as the
/// specification requires for results from older servers.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResultType(Cow<'static, str>);

impl ResultType {
    /// `"complete"`: an ordinary, final result.
    pub const COMPLETE: ResultType = ResultType(Cow::Borrowed("complete"));
    /// `"input_required"`: a multi round-trip interim result.
    pub const INPUT_REQUIRED: ResultType = ResultType(Cow::Borrowed("input_required"));
    /// `"task"`: a task handle (tasks extension).
    pub const TASK: ResultType = ResultType(Cow::Borrowed("task"));

    /// A result type from any string.
    pub fn new(value: impl Into<Cow<'static, str>>) -> Self {
        ResultType(value.into())
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `"complete"`.
    pub fn is_complete(&self) -> bool {
        self.0 == "complete"
    }

    /// Whether this is `"input_required"`.
    pub fn is_input_required(&self) -> bool {
        self.0 == "input_required"
    }
}

impl Default for ResultType {
    fn default() -> Self {
        ResultType::COMPLETE
    }
}

impl fmt::Debug for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `cacheScope`: who may reuse a cached result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheScope {
    /// Holds no user-specific data; any cache may share it.
    #[default]
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// An opaque pagination cursor (`Cursor`).
pub type Cursor = String;

/// An empty result (`EmptyResult`): only `resultType` and `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmptyResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<crate::meta::Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_result_type_means_complete() {
        let r: EmptyResult = serde_json::from_str("{}").unwrap();
        assert!(r.result_type.is_complete());
        let r: EmptyResult = serde_json::from_str(r#"{"resultType":"task"}"#).unwrap();
        assert_eq!(r.result_type, ResultType::TASK);
    }
}
