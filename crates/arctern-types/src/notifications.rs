//! Notifications: cancellation, progress, log messages and change notifications.
//!
//! Progress and log messages ride on the stream of the request they belong to; list-changed,
//! resource-updated and acknowledgement notifications only travel on `subscriptions/listen`
//! streams, tagged with the subscription id in `_meta` ([`NotificationMeta`]).

use serde::{Deserialize, Serialize};

use crate::base::{NotificationMeta, NotificationParams};
use crate::jsonrpc::{JsonRpcNotification, RequestId};
use crate::logging::LoggingMessageNotificationParams;
use crate::meta::JsonObject;
use crate::progress::ProgressNotificationParams;

/// Params of `notifications/cancelled` (`CancelledNotificationParams`).
///
/// On stdio the client sends it to cancel a request (including a `subscriptions/listen`);
/// the server only sends it to end a listen stream. Over HTTP, closing the stream cancels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelledNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The id of the request to cancel.
    pub request_id: RequestId,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Cancels request `id`.
    pub fn new(request_id: RequestId) -> Self {
        CancelledNotificationParams {
            meta: None,
            request_id,
            reason: None,
            extra: Default::default(),
        }
    }

    /// Sets the reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// Params of `notifications/resources/updated` (`ResourceUpdatedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceUpdatedNotificationParams {
    /// Carries the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The URI that changed (possibly a sub-resource of a subscribed URI).
    pub uri: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceUpdatedNotificationParams {
    /// `uri` changed; on the listen stream `subscription_id`.
    pub fn new(subscription_id: RequestId, uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams {
            meta: Some(NotificationMeta::for_subscription(subscription_id)),
            uri: uri.into(),
            extra: Default::default(),
        }
    }

    /// `uri` changed, outside any listen stream (what a legacy session sends).
    pub fn without_subscription(uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams {
            meta: None,
            uri: uri.into(),
            extra: Default::default(),
        }
    }
}

/// A `notifications/cancelled` notification.
pub type CancelledNotification = JsonRpcNotification<CancelledNotificationParams>;
/// A `notifications/progress` notification.
pub type ProgressNotification = JsonRpcNotification<ProgressNotificationParams>;
/// A `notifications/message` notification (deprecated logging feature).
pub type LoggingMessageNotification = JsonRpcNotification<LoggingMessageNotificationParams>;
/// A `notifications/tools/list_changed` notification.
pub type ToolListChangedNotification = JsonRpcNotification<NotificationParams>;
/// A `notifications/prompts/list_changed` notification.
pub type PromptListChangedNotification = JsonRpcNotification<NotificationParams>;
/// A `notifications/resources/list_changed` notification.
pub type ResourceListChangedNotification = JsonRpcNotification<NotificationParams>;
/// A `notifications/resources/updated` notification.
pub type ResourceUpdatedNotification = JsonRpcNotification<ResourceUpdatedNotificationParams>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cancelled_requires_the_request_id() {
        let p = CancelledNotificationParams::new(RequestId::Number(3)).with_reason("user");
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"requestId": 3, "reason": "user"})
        );
        assert!(
            serde_json::from_value::<CancelledNotificationParams>(json!({"reason": "x"})).is_err()
        );
    }

    #[test]
    fn resource_updated_carries_the_subscription() {
        let p = ResourceUpdatedNotificationParams::new(RequestId::from("l"), "file:///a");
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "l"}, "uri": "file:///a"})
        );
    }
}
