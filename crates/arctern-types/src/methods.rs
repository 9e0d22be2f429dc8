//! Method names, and typed links from each method to its params and result.
//!
//! The constants name every request, notification and input request of 2026-07-28; the
//! [`legacy`] module names the methods that exist only in the 2025 revisions. The marker types
//! ([`CallTool`], [`ListTools`], …) implement [`RequestMethod`] or [`NotificationMethod`] so
//! that generic code can go from a method to its types:
//!
//! ```
//! use arctern_types::methods::{self, RequestMethod};
//! use arctern_types::{CallToolRequestParams, RequestMeta};
//!
//! let params = CallToolRequestParams::new(RequestMeta::default(), "get_weather");
//! let request = methods::request::<methods::CallTool>(1, params);
//! assert_eq!(request.method, "tools/call");
//! # let _: Option<<methods::CallTool as RequestMethod>::Result> = None;
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::base::{GenericResult, NotificationParams, PaginatedRequestParams, RequestParams};
use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::discover::DiscoverResult;
use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, RequestId};
use crate::logging::LoggingMessageNotificationParams;
use crate::mrtr::Outcome;
use crate::notifications::{CancelledNotificationParams, ResourceUpdatedNotificationParams};
use crate::progress::ProgressNotificationParams;
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use crate::roots::{ListRootsRequestParams, ListRootsResult};
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};

/// `server/discover`.
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `subscriptions/listen`.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `tasks/get` (tasks extension).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update` (tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel` (tasks extension).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `notifications/tasks` (tasks extension).
pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";

/// `notifications/cancelled`.
pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed`.
pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated`.
pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/subscriptions/acknowledged`.
pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// `elicitation/create`: an input request in 2026-07-28 (a server→client request in the 2025
/// revisions).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage`: an input request in 2026-07-28 (a server→client request in the
/// 2025 revisions).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list`: an input request in 2026-07-28 (a server→client request in the 2025
/// revisions).
pub const ROOTS_LIST: &str = "roots/list";

/// Every request a 2026-07-28 client sends (`ClientRequest`).
pub const CLIENT_REQUESTS: [&str; 10] = [
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    PROMPTS_LIST,
    PROMPTS_GET,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    COMPLETION_COMPLETE,
    SUBSCRIPTIONS_LISTEN,
];

/// Every notification a 2026-07-28 client sends (`ClientNotification`).
pub const CLIENT_NOTIFICATIONS: [&str; 1] = [NOTIFICATIONS_CANCELLED];

/// Every notification a 2026-07-28 server sends (`ServerNotification`).
pub const SERVER_NOTIFICATIONS: [&str; 8] = [
    NOTIFICATIONS_CANCELLED,
    NOTIFICATIONS_PROGRESS,
    NOTIFICATIONS_MESSAGE,
    NOTIFICATIONS_TOOLS_LIST_CHANGED,
    NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    NOTIFICATIONS_RESOURCES_UPDATED,
    NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
];

/// The methods of input requests (`InputRequest`).
pub const INPUT_REQUESTS: [&str; 3] = [ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, ROOTS_LIST];

/// The methods that may answer `input_required` (multi round-trip requests).
pub const MRTR_METHODS: [&str; 3] = [TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];

/// The methods whose complete results carry `ttlMs` and `cacheScope`.
pub const CACHEABLE_METHODS: [&str; 6] = [
    SERVER_DISCOVER,
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
];

/// Whether `method` may answer `input_required`.
pub fn is_mrtr_method(method: &str) -> bool {
    MRTR_METHODS.contains(&method)
}

/// Method names that exist only in the legacy (2025-11-25 and 2025-06-18) revisions.
///
/// A 2026-07-28 server answers these with `-32601` (HTTP 404) on the modern wire.
pub mod legacy {
    /// `initialize` (legacy only).
    pub const INITIALIZE: &str = "initialize";
    /// `notifications/initialized` (legacy only).
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// `ping` (legacy only).
    pub const PING: &str = "ping";
    /// `logging/setLevel` (legacy only; replaced by the per-request `logLevel` in `_meta`).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// `resources/subscribe` (legacy only; replaced by `subscriptions/listen`).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe` (legacy only; replaced by `subscriptions/listen`).
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// `notifications/roots/list_changed` (legacy only).
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/elicitation/complete` (2025-11-25 only).
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

    /// Every legacy-only method name.
    pub const ALL: [&str; 8] = [
        INITIALIZE,
        NOTIFICATIONS_INITIALIZED,
        PING,
        LOGGING_SET_LEVEL,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        NOTIFICATIONS_ROOTS_LIST_CHANGED,
        NOTIFICATIONS_ELICITATION_COMPLETE,
    ];

    /// Whether `method` exists only in the legacy revisions.
    pub fn is_legacy_only(method: &str) -> bool {
        ALL.contains(&method)
    }
}

/// A request method and its types.
pub trait RequestMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned;
    /// The result type (for multi round-trip methods, a [`Outcome`]).
    type Result: Serialize + DeserializeOwned;
}

/// A notification method and its params type.
pub trait NotificationMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned;
}

/// A JSON-RPC request for method `M`.
pub fn request<M: RequestMethod>(
    id: impl Into<RequestId>,
    params: M::Params,
) -> JsonRpcRequest<M::Params> {
    JsonRpcRequest::new(id, M::METHOD, params)
}

/// A JSON-RPC notification for method `M`.
pub fn notification<M: NotificationMethod>(params: M::Params) -> JsonRpcNotification<M::Params> {
    JsonRpcNotification::new(M::METHOD, params)
}

macro_rules! request_methods {
    ($($(#[$doc:meta])* $name:ident = $method:ident, $params:ty => $result:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {}

        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    )*};
}

macro_rules! notification_methods {
    ($($(#[$doc:meta])* $name:ident = $method:ident, $params:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {}

        impl NotificationMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    )*};
}

request_methods! {
    /// `server/discover`.
    Discover = SERVER_DISCOVER, RequestParams => DiscoverResult;
    /// `tools/list`.
    ListTools = TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
    /// `tools/call` (multi round-trip).
    CallTool = TOOLS_CALL, CallToolRequestParams => Outcome<CallToolResult>;
    /// `prompts/list`.
    ListPrompts = PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get` (multi round-trip).
    GetPrompt = PROMPTS_GET, GetPromptRequestParams => Outcome<GetPromptResult>;
    /// `resources/list`.
    ListResources = RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = RESOURCES_TEMPLATES_LIST, PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read` (multi round-trip).
    ReadResource = RESOURCES_READ, ReadResourceRequestParams => Outcome<ReadResourceResult>;
    /// `completion/complete`.
    Complete = COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
    /// `subscriptions/listen`.
    SubscriptionsListen = SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `elicitation/create` (an input request; answered inside `inputResponses`).
    Elicit = ELICITATION_CREATE, ElicitRequestParams => ElicitResult;
    /// `sampling/createMessage` (an input request; answered inside `inputResponses`).
    CreateMessage = SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams => CreateMessageResult;
    /// `roots/list` (an input request; answered inside `inputResponses`).
    ListRoots = ROOTS_LIST, ListRootsRequestParams => ListRootsResult;
}

notification_methods! {
    /// `notifications/cancelled`.
    Cancelled = NOTIFICATIONS_CANCELLED, CancelledNotificationParams;
    /// `notifications/progress`.
    Progress = NOTIFICATIONS_PROGRESS, ProgressNotificationParams;
    /// `notifications/message`.
    LoggingMessage = NOTIFICATIONS_MESSAGE, LoggingMessageNotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged = NOTIFICATIONS_TOOLS_LIST_CHANGED, NotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged = NOTIFICATIONS_PROMPTS_LIST_CHANGED, NotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged = NOTIFICATIONS_RESOURCES_LIST_CHANGED, NotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdated = NOTIFICATIONS_RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
    /// `notifications/subscriptions/acknowledged`.
    SubscriptionsAcknowledged = NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedNotificationParams;
}

/// Any client request (`ClientRequest`): one of [`CLIENT_REQUESTS`], params kept raw. Decode
/// the params with the method's [`RequestMethod::Params`].
pub type ClientRequest = JsonRpcRequest;
/// Any client notification (`ClientNotification`): in 2026-07-28 only `notifications/cancelled`.
pub type ClientNotification = JsonRpcNotification<CancelledNotificationParams>;
/// A result sent by a client (`ClientResult`). Clients send no responses in 2026-07-28; the
/// schema keeps the alias as the bare `Result`.
pub type ClientResult = GenericResult;
/// Any server notification (`ServerNotification`): one of [`SERVER_NOTIFICATIONS`], params
/// kept raw. Decode the params with the method's [`NotificationMethod::Params`].
pub type ServerNotification = JsonRpcNotification;
/// Any server result (`ServerResult`), read generically.
pub type ServerResult = GenericResult;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::RequestMeta;
    use serde_json::json;

    #[test]
    fn typed_requests_and_notifications() {
        let r = request::<ListTools>(
            "a",
            PaginatedRequestParams::new(RequestMeta::default()).with_cursor("c"),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {"_meta": {}, "cursor": "c"}})
        );
        let n = notification::<ToolListChanged>(NotificationParams::for_subscription(
            RequestId::Number(1),
        ));
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                   "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}})
        );
    }

    #[test]
    fn method_sets() {
        assert!(is_mrtr_method(TOOLS_CALL));
        assert!(!is_mrtr_method(TOOLS_LIST));
        assert!(legacy::is_legacy_only("ping"));
        assert!(!legacy::is_legacy_only(SERVER_DISCOVER));
        for m in CLIENT_REQUESTS
            .iter()
            .chain(&SERVER_NOTIFICATIONS)
            .chain(&INPUT_REQUESTS)
        {
            assert!(!legacy::is_legacy_only(m), "{m}");
        }
        assert_eq!(<Elicit as RequestMethod>::METHOD, ELICITATION_CREATE);
        assert_eq!(
            <SubscriptionsAcknowledged as NotificationMethod>::METHOD,
            NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED
        );
    }
}
