//! Progress tokens and progress notifications.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::meta::Meta;

/// A progress token (`ProgressToken`): a string or an integer chosen by the client.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl fmt::Debug for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::Number(n) => write!(f, "{n}"),
            ProgressToken::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Number(n)
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

/// Params of `notifications/progress` (`ProgressNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification. Integral values are written as
    /// JSON integers.
    #[serde(serialize_with = "crate::util::compact_f64_required")]
    pub progress: f64,
    /// Total, when known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::util::compact_f64"
    )]
    pub total: Option<f64>,
    /// A human-readable description of the current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
