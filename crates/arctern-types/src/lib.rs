//! # arctern-types
//!
//! The wire model of the Model Context Protocol for [arctern]: JSON-RPC framing, request ids,
//! error objects and codes, and every type of protocol revision 2026-07-28, with the exact
//! wire names of the official schema.
//!
//! This crate has no runtime: only `serde` types and small helpers. Use it to build or read
//! MCP messages directly; the `arctern` crate builds servers and clients on top of it.
//!
//! Conventions:
//! - Optional members are `Option` and are omitted when `None`.
//! - `_meta` is an open JSON object ([`Meta`]); reserved keys have constants in [`meta`].
//! - Every result carries a [`ResultType`]; a result without one deserializes as
//!   [`ResultType::COMPLETE`].
//! - Open objects (results, capabilities) keep unknown members in an `extra` map, so nothing
//!   a newer peer sends is lost on a round trip.
//! - Free-form JSON (tool schemas, arguments, `structuredContent`) is kept verbatim.
//! - Constant discriminators (`"type": "text"`, `"method": "roots/list"`, …) are zero-sized
//!   fields from [`tags`], filled in by `Default` and every constructor. Unions pick their
//!   variant deterministically from those members; each union documents its rule.
//! - Integral values of `number` members held as `f64` are written as JSON integers.
//!
//! # Names
//!
//! Every `$def` of the 2026-07-28 schema has a Rust item of the same name, with these
//! exceptions:
//!
//! | schema | Rust |
//! | --- | --- |
//! | `JSONRPCRequest`, `JSONRPCNotification`, `JSONRPCErrorResponse`, `JSONRPCMessage` | [`JsonRpcRequest`], [`JsonRpcNotification`], [`JsonRpcErrorResponse`], [`JsonRpcMessage`] |
//! | `JSONRPCResultResponse`, `JSONRPCResponse` | [`JsonRpcResponse`], [`JsonRpcResponseOrError`] |
//! | `JSONValue`, `JSONObject`, `JSONArray` | [`JsonValue`], [`JsonObject`], [`JsonArray`] |
//! | `MetaObject`, `RequestMetaObject`, `NotificationMetaObject`, `ResultMetaObject`, `SubscriptionsListenResultMetaObject` | [`Meta`], [`RequestMeta`], [`NotificationMeta`], [`ResultMeta`], [`SubscriptionsListenResultMeta`] |
//! | `Error` | [`ErrorObject`] |
//! | `Request`, `Notification`, `Result` | [`GenericRequest`], [`GenericNotification`], [`GenericResult`] |
//! | `ElicitRequestURLParams` | [`ElicitRequestUrlParams`] |
//! | `ResourceContents` (the abstract base) | [`ResourceContents`] is the text-or-blob union every use site takes |
//!
//! Whole JSON-RPC messages are aliases of the generic envelopes, for example
//! [`CallToolRequest`] = `JsonRpcRequest<CallToolRequestParams>` and [`CallToolResultResponse`]
//! = `JsonRpcResponse<Outcome<CallToolResult>>`. The typed error objects
//! (`ParseError`, `HeaderMismatchError`, …) are aliases in [`error`]. The union aliases
//! `ClientRequest`, `ServerNotification`, … are in [`methods`], which also links every method to
//! its params and result types.
//!
//! # Legacy revisions
//!
//! The 2025-11-25 and 2025-06-18 revisions share most of these types. What only they have (the
//! `initialize` handshake, session-scoped methods, server→client requests, legacy error codes)
//! is in [`legacy`], with [`legacy::to_legacy_result`] to write a result in the legacy shape.
//!
//! [arctern]: https://docs.rs/arctern

pub mod base;
pub mod capabilities;
pub mod completion;
pub mod content;
pub mod discover;
pub mod elicitation;
pub mod error;
pub mod headers;
pub mod implementation;
pub mod jsonrpc;
pub mod legacy;
pub mod logging;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod notifications;
pub mod progress;
pub mod prompts;
pub mod resources;
pub mod result;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
pub mod tags;
pub mod tasks;
pub mod tools;
pub mod version;

mod util;

pub use base::{
    BaseMetadata, Cacheable, CacheableResult, GenericNotification, GenericRequest, GenericResult,
    Icons, NotificationMeta, NotificationParams, PaginatedRequest, PaginatedRequestParams,
    PaginatedResult, RequestParams, ResultMeta,
};
pub use capabilities::{ClientCapabilities, ServerCapabilities};
pub use completion::{
    CompleteArgument, CompleteContext, CompleteRequest, CompleteRequestParams, CompleteResult,
    CompleteResultResponse, Completion, CompletionReference, PromptReference,
    ResourceTemplateReference,
};
pub use content::{
    Annotations, AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, Role, TextContent, TextResourceContents,
};
pub use discover::{
    DiscoverRequest, DiscoverRequestParams, DiscoverResult, DiscoverResultResponse,
};
pub use elicitation::{
    BooleanSchema, ContentError, ElicitAction, ElicitContent, ElicitRequest,
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams, ElicitResult,
    ElicitValue, EnumOption, EnumSchema, LegacyTitledEnumSchema, MultiSelectEnumSchema,
    NumberSchema, NumberType, PrimitiveSchemaDefinition, RequestedSchema, SchemaProperties,
    SingleSelectEnumSchema, StringFormat, StringSchema, TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use error::{ErrorCode, ErrorObject};
pub use implementation::{Icon, Implementation};
pub use jsonrpc::{
    JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
    JsonRpcResponseOrError, RequestId,
};
pub use logging::{LoggingLevel, LoggingMessageNotificationParams};
pub use meta::{JsonArray, JsonObject, JsonValue, Meta, RequestMeta};
pub use mrtr::{
    InputRequest, InputRequestKind, InputRequests, InputRequiredResult, InputResponse,
    InputResponseRequestParams, InputResponses, Outcome,
};
pub use notifications::{
    CancelledNotification, CancelledNotificationParams, LoggingMessageNotification,
    ProgressNotification, PromptListChangedNotification, ResourceListChangedNotification,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParams, ToolListChangedNotification,
};
pub use progress::{ProgressNotificationParams, ProgressToken};
pub use prompts::{
    GetPromptRequest, GetPromptRequestParams, GetPromptResult, GetPromptResultResponse,
    ListPromptsRequest, ListPromptsRequestParams, ListPromptsResult, ListPromptsResultResponse,
    Prompt, PromptArgument, PromptMessage,
};
pub use resources::{
    ListResourceTemplatesRequest, ListResourceTemplatesRequestParams, ListResourceTemplatesResult,
    ListResourceTemplatesResultResponse, ListResourcesRequest, ListResourcesRequestParams,
    ListResourcesResult, ListResourcesResultResponse, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResult, ReadResourceResultResponse, Resource,
    ResourceRequestParams, ResourceTemplate,
};
pub use result::{CacheScope, Cursor, EmptyResult, ResultType};
pub use roots::{ListRootsRequest, ListRootsRequestParams, ListRootsResult, Root};
pub use sampling::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, IncludeContext,
    ModelHint, ModelPreferences, SamplingMessage, SamplingMessageContent,
    SamplingMessageContentBlock, StopReason, ToolChoice, ToolChoiceMode, ToolResultContent,
    ToolUseContent,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequest,
    SubscriptionsListenRequestParams, SubscriptionsListenResult, SubscriptionsListenResultMeta,
    SubscriptionsListenResultResponse,
};
pub use tools::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CallToolResultResponse,
    ListToolsRequest, ListToolsRequestParams, ListToolsResult, ListToolsResultResponse, Tool,
    ToolAnnotations,
};
pub use version::ProtocolVersion;
