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
//! - Every object type keeps the members it does not model in an `extra` map, written back
//!   in place, so nothing a newer (or older) peer sends is lost on a round trip.
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
//! # Stability
//!
//! The protocol grows: every revision so far added members to existing objects, kinds of
//! content and values to enumerations. This crate is built so that such growth is neither a
//! breaking release of the crate nor a failure on the wire. Until 1.0, a release that breaks
//! the API bumps the minor version (0.1 → 0.2); the rules below make most protocol growth a
//! patch or minor change that no caller notices.
//!
//! **Structs** that mirror a schema object are `#[non_exhaustive]`: read and change their
//! public fields freely, but build them with their constructors (`Tool::new`,
//! `CallToolResult::text`, …), their `with_*` builders, or `Default::default()` followed by
//! field assignments, not with a struct expression, so that a field added by a future
//! revision is not a breaking change. Each keeps what it does not model in `extra`.
//! The JSON-RPC 2.0 framing ([`JsonRpcRequest`], [`JsonRpcNotification`],
//! [`JsonRpcResponse`], [`JsonRpcErrorResponse`], [`ErrorObject`]) is frozen by JSON-RPC 2.0
//! and stays exhaustive; members outside JSON-RPC 2.0 in an envelope are ignored.
//!
//! **Unions and enumerations** are `#[non_exhaustive]` where a revision may add a variant, so
//! a `match` needs a wildcard arm. What an unknown value does on the wire depends on who
//! must act on it:
//!
//! | type | an unknown value | why |
//! | --- | --- | --- |
//! | [`ContentBlock`], [`SamplingMessageContentBlock`] (`type`) | kept as [`UnknownContent`] and written back as it came | content is passed on or shown; revisions add kinds (`audio`, `resource_link`, `tool_use`) |
//! | [`ResultType`], [`StopReason`] | kept (open string types with constants) | the schema leaves them open |
//! | [`Outcome`] (`resultType` of a result) | refused, naming it | the specification makes an unrecognized `resultType` an invalid result |
//! | [`InputRequest`] (`method`), [`ElicitRequestParams`] (`mode`), [`legacy::ServerRequest`] | refused, naming it | the receiver must answer it, and capabilities close the set: a server may only ask what the client declared |
//! | [`PrimitiveSchemaDefinition`], [`EnumSchema`] (`type`), [`elicitation::StringFormat`] | refused, naming it | a client must render every field of a form, and the specification restricts forms to these kinds to keep clients simple |
//! | [`CompletionReference`] (`type`) | refused, naming it | the server must resolve it |
//! | [`ResourceContents`] (`text` or `blob`) | refused | told apart by members, not a tag; there is no third |
//! | [`InputResponse`] | kept as [`InputResponse::Unrecognized`] | one bad answer must not make a whole request unreadable; the server refuses it as an answer |
//! | [`LoggingLevel`], [`Role`], [`tasks::TaskStatus`], [`CacheScope`], [`implementation::IconTheme`], [`ElicitAction`], [`sampling::IncludeContext`], [`ToolChoiceMode`], [`elicitation::NumberType`] | refused, naming it | closed by the schema; the receiver acts on the value (severity order, terminal states, cache sharing) |
//!
//! Some enumerations stay exhaustive on purpose, so that a `match` on them needs no wildcard
//! and a new variant is a breaking release that every `match` must answer:
//! [`LoggingLevel`] (the eight RFC 5424 severities, ordered), [`ElicitAction`] (accept,
//! decline, cancel), [`elicitation::NumberType`] (JSON Schema's two numeric types), the form
//! field schemas ([`PrimitiveSchemaDefinition`], [`EnumSchema`] and its two selects,
//! [`elicitation::StringFormat`]: a form renderer must handle every kind of field, and no
//! capability keeps a new kind from an old client), and the JSON shapes [`RequestId`],
//! [`ProgressToken`], [`SamplingMessageContent`] and [`JsonRpcMessage`].
//!
//! **Other crates in the public API**: `serde` 1 and `serde_json` 1 (`Value` and `Map` appear
//! throughout). A major release of either would be a breaking release of this crate.
//!
//! [arctern]: https://docs.rs/arctern

pub mod apps;
pub mod base;
pub mod capabilities;
pub mod check;
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
pub use check::{CheckError, Checker};
pub use completion::{
    CompleteArgument, CompleteContext, CompleteRequest, CompleteRequestParams, CompleteResult,
    CompleteResultResponse, Completion, CompletionReference, PromptReference,
    ResourceTemplateReference,
};
pub use content::{
    Annotations, AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, Role, TextContent, TextResourceContents, UnknownContent,
};
pub use discover::{
    DiscoverRequest, DiscoverRequestParams, DiscoverResult, DiscoverResultResponse,
};
pub use elicitation::{
    BooleanSchema, ElicitAction, ElicitContent, ElicitRequest, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestUrlParams, ElicitResult, ElicitValue, EnumOption, EnumSchema,
    LegacyTitledEnumSchema, MultiSelectEnumSchema, NumberSchema, NumberType,
    PrimitiveSchemaDefinition, RequestedSchema, SchemaProperties, SingleSelectEnumSchema,
    StringFormat, StringSchema, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
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
