//! Progress tokens and progress notifications.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::meta::{JsonObject, Meta};

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
#[non_exhaustive]
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
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// Progress `progress` of the request with `progress_token`.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: f64) -> Self {
        ProgressNotificationParams {
            progress_token: progress_token.into(),
            progress,
            total: None,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// Sets the total.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}
