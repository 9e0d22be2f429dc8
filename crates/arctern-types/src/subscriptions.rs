//! `subscriptions/listen`: the long-lived stream that carries change notifications.

use serde::{Deserialize, Serialize};

use crate::base::NotificationMeta;
use crate::capabilities::ServerCapabilities;
use crate::implementation::Implementation;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId};
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::result::ResultType;

/// Which notifications a listen stream carries (`SubscriptionFilter`). Everything is opt-in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these resource URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Unknown members (filters added by extensions), kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionFilter {
    /// A filter asking for nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `notifications/tools/list_changed`.
    pub fn with_tools_list_changed(mut self) -> Self {
        self.tools_list_changed = Some(true);
        self
    }

    /// Asks for `notifications/prompts/list_changed`.
    pub fn with_prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = Some(true);
        self
    }

    /// Asks for `notifications/resources/list_changed`.
    pub fn with_resources_list_changed(mut self) -> Self {
        self.resources_list_changed = Some(true);
        self
    }

    /// Asks for `notifications/resources/updated` of `uri` (added to those already asked
    /// for).
    pub fn with_resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions
            .get_or_insert_with(Vec::new)
            .push(uri.into());
        self
    }

    /// Whether tool-list changes were asked for.
    pub fn wants_tools_list_changed(&self) -> bool {
        self.tools_list_changed == Some(true)
    }

    /// Whether prompt-list changes were asked for.
    pub fn wants_prompts_list_changed(&self) -> bool {
        self.prompts_list_changed == Some(true)
    }

    /// Whether resource-list changes were asked for.
    pub fn wants_resources_list_changed(&self) -> bool {
        self.resources_list_changed == Some(true)
    }

    /// Whether updates of `uri` were asked for (exact match).
    pub fn wants_resource_updates(&self, uri: &str) -> bool {
        self.resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.iter().any(|u| u == uri))
    }

    /// Whether nothing at all is asked for.
    pub fn is_empty(&self) -> bool {
        !self.wants_tools_list_changed()
            && !self.wants_prompts_list_changed()
            && !self.wants_resources_list_changed()
            && self
                .resource_subscriptions
                .as_ref()
                .is_none_or(Vec::is_empty)
            && self.extra.is_empty()
    }

    /// The part of this filter a server with `capabilities` can honour: what its
    /// acknowledgement should list. Unknown (extension) members are dropped.
    pub fn honoured_by(&self, capabilities: &ServerCapabilities) -> SubscriptionFilter {
        let tools = capabilities
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true));
        let prompts = capabilities
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true));
        let resources_list = capabilities
            .resources
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true));
        let resources_subscribe = capabilities
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true));
        SubscriptionFilter {
            tools_list_changed: (tools && self.wants_tools_list_changed()).then_some(true),
            prompts_list_changed: (prompts && self.wants_prompts_list_changed()).then_some(true),
            resources_list_changed: (resources_list && self.wants_resources_list_changed())
                .then_some(true),
            resource_subscriptions: if resources_subscribe {
                self.resource_subscriptions.clone()
            } else {
                None
            },
            extra: JsonObject::new(),
        }
    }
}

/// Params of `subscriptions/listen` (`SubscriptionsListenRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsListenRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The notifications to deliver on this stream.
    pub notifications: SubscriptionFilter,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenRequestParams {
    /// A listen request for the notifications `filter` asks for.
    pub fn new(meta: RequestMeta, filter: SubscriptionFilter) -> Self {
        SubscriptionsListenRequestParams {
            meta,
            notifications: filter,
            extra: JsonObject::new(),
        }
    }
}

/// The `_meta` of a listen stream's final result (`SubscriptionsListenResultMetaObject`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsListenResultMeta {
    /// The JSON-RPC id of the listen request.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: RequestId,
    /// Who the server says it is.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Any other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Meta,
}

impl SubscriptionsListenResultMeta {
    /// The `_meta` naming the listen request `subscription_id`.
    pub fn new(subscription_id: RequestId) -> Self {
        SubscriptionsListenResultMeta {
            subscription_id,
            server_info: None,
            extra: Meta::new(),
        }
    }
}

/// The result that ends a listen stream gracefully (`SubscriptionsListenResult`).
///
/// Unlike other results its `_meta` is required: it names the subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsListenResult {
    /// Always `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// The subscription this result ends.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
    /// Unknown members, kept as received.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenResult {
    /// The result ending the listen request `id`.
    pub fn new(subscription_id: RequestId) -> Self {
        SubscriptionsListenResult {
            result_type: ResultType::COMPLETE,
            meta: SubscriptionsListenResultMeta {
                subscription_id,
                server_info: None,
                extra: Meta::new(),
            },
            extra: JsonObject::new(),
        }
    }
}

/// Params of `notifications/subscriptions/acknowledged`
/// (`SubscriptionsAcknowledgedNotificationParams`): the first message of every listen stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Carries the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The notifications the server will actually deliver (a subset of those requested).
    pub notifications: SubscriptionFilter,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// The acknowledgement of listen request `id`, honouring `notifications`.
    pub fn new(subscription_id: RequestId, notifications: SubscriptionFilter) -> Self {
        SubscriptionsAcknowledgedNotificationParams {
            meta: Some(NotificationMeta::for_subscription(subscription_id)),
            notifications,
            extra: Default::default(),
        }
    }
}

/// A `subscriptions/listen` request.
pub type SubscriptionsListenRequest = JsonRpcRequest<SubscriptionsListenRequestParams>;
/// The final response on a listen stream.
pub type SubscriptionsListenResultResponse = JsonRpcResponse<SubscriptionsListenResult>;
/// A `notifications/subscriptions/acknowledged` notification.
pub type SubscriptionsAcknowledgedNotification =
    JsonRpcNotification<SubscriptionsAcknowledgedNotificationParams>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{ResourcesCapability, ToolsCapability};
    use serde_json::json;

    #[test]
    fn acknowledgement_lists_only_what_the_server_can_deliver() {
        let asked: SubscriptionFilter = serde_json::from_value(json!({
            "toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["file:///a"], "tasks": true
        }))
        .unwrap();
        let caps = ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ack = asked.honoured_by(&caps);
        assert_eq!(
            serde_json::to_value(&ack).unwrap(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
        );
        assert!(ack.wants_resource_updates("file:///a"));
        assert!(!SubscriptionFilter::default().wants_tools_list_changed());
        assert!(SubscriptionFilter::default().is_empty());
    }

    #[test]
    fn listen_result_requires_its_subscription_id() {
        let r = SubscriptionsListenResult::new(RequestId::Number(4));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 4}})
        );
        assert!(
            serde_json::from_value::<SubscriptionsListenResult>(json!({"resultType": "complete"}))
                .is_err()
        );
    }
}
