//! Shared by the integration tests: the official examples and the Rust type of each example
//! folder.

#![allow(dead_code)]

use std::fs;
use std::path::PathBuf;

use arctern_types::error::{
    HeaderMismatchError, InternalError, InvalidParamsError, MethodNotFoundError,
    MissingRequiredClientCapabilityError, ParseError, UnsupportedProtocolVersionError,
};
use arctern_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The directory of the official 2026-07-28 wire examples.
pub fn examples_dir() -> PathBuf {
    arctern_fixtures::examples_dir("2026-07-28")
}

/// One example file.
pub struct Example {
    /// The folder: the schema type the example is an instance of.
    pub folder: String,
    /// The file name.
    pub file: String,
    /// The file's text.
    pub text: String,
    /// The file's JSON.
    pub json: Value,
}

/// Every example, sorted by folder and file.
pub fn examples() -> Vec<Example> {
    let mut out = Vec::new();
    let mut folders: Vec<_> = fs::read_dir(examples_dir())
        .expect("examples directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let mut files: Vec<_> = fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            let json =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            out.push(Example {
                folder: folder.file_name().unwrap().to_string_lossy().into_owned(),
                file: file.file_name().unwrap().to_string_lossy().into_owned(),
                text,
                json,
            });
        }
    }
    out
}

/// Parses `text` as `T` (from the text, as a receiver would) and serializes it back.
pub fn round_trip<T: Serialize + DeserializeOwned>(text: &str) -> Result<Value, String> {
    let typed: T = serde_json::from_str(text).map_err(|e| format!("deserialize: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))
}

macro_rules! example_types {
    ($($folder:ident => $ty:ty $(| $also:ty)*;)*) => {
        /// Every example folder that has a Rust type.
        pub const MAPPED_FOLDERS: &[&str] = &[$(stringify!($folder)),*];

        /// Round trips `text` through the Rust type of `folder` and through every union that
        /// contains it; `None` if the folder has no mapping.
        pub fn round_trips(folder: &str, text: &str) -> Option<Vec<(&'static str, Result<Value, String>)>> {
            match folder {
                $(stringify!($folder) => Some(vec![
                    (stringify!($ty), round_trip::<$ty>(text)),
                    $((stringify!($also), round_trip::<$also>(text)),)*
                ]),)*
                _ => None,
            }
        }
    };
}

example_types! {
    AudioContent => AudioContent | ContentBlock | SamplingMessageContentBlock;
    BlobResourceContents => BlobResourceContents | ResourceContents;
    BooleanSchema => BooleanSchema | PrimitiveSchemaDefinition;
    CallToolRequest => CallToolRequest | JsonRpcRequest<Value>;
    CallToolRequestParams => CallToolRequestParams;
    CallToolResult => CallToolResult | Outcome<CallToolResult> | GenericResult;
    CallToolResultResponse => CallToolResultResponse | JsonRpcResponseOrError;
    CancelledNotification => CancelledNotification | methods::ClientNotification;
    CancelledNotificationParams => CancelledNotificationParams;
    ClientCapabilities => ClientCapabilities;
    CompleteRequest => CompleteRequest;
    CompleteRequestParams => CompleteRequestParams;
    CompleteResult => CompleteResult | GenericResult;
    CompleteResultResponse => CompleteResultResponse | JsonRpcResponseOrError;
    CreateMessageRequest => CreateMessageRequest | InputRequest;
    CreateMessageRequestParams => CreateMessageRequestParams;
    CreateMessageResult => CreateMessageResult | InputResponse;
    DiscoverRequest => DiscoverRequest | JsonRpcRequest<RequestParams>;
    DiscoverResult => DiscoverResult | CacheableResult;
    DiscoverResultResponse => DiscoverResultResponse;
    ElicitRequest => ElicitRequest | InputRequest;
    ElicitRequestFormParams => ElicitRequestFormParams | ElicitRequestParams;
    ElicitRequestURLParams => ElicitRequestUrlParams | ElicitRequestParams;
    ElicitResult => ElicitResult | InputResponse;
    EmbeddedResource => EmbeddedResource | ContentBlock;
    GetPromptRequest => GetPromptRequest;
    GetPromptRequestParams => GetPromptRequestParams;
    GetPromptResult => GetPromptResult | Outcome<GetPromptResult>;
    GetPromptResultResponse => GetPromptResultResponse;
    HeaderMismatchError => HeaderMismatchError | JsonRpcResponseOrError;
    ImageContent => ImageContent | ContentBlock | SamplingMessageContentBlock;
    InputRequests => InputRequests;
    InputRequiredResult => InputRequiredResult | Outcome<CallToolResult> | GenericResult;
    InputResponses => InputResponses;
    InternalError => InternalError;
    InvalidParamsError => InvalidParamsError;
    ListPromptsRequest => ListPromptsRequest | PaginatedRequest;
    ListPromptsResult => ListPromptsResult | PaginatedResult;
    ListPromptsResultResponse => ListPromptsResultResponse;
    ListResourceTemplatesRequest => ListResourceTemplatesRequest;
    ListResourceTemplatesResult => ListResourceTemplatesResult | CacheableResult;
    ListResourceTemplatesResultResponse => ListResourceTemplatesResultResponse;
    ListResourcesRequest => ListResourcesRequest;
    ListResourcesResult => ListResourcesResult;
    ListResourcesResultResponse => ListResourcesResultResponse;
    ListRootsRequest => ListRootsRequest | InputRequest;
    ListRootsResult => ListRootsResult | InputResponse;
    ListToolsRequest => ListToolsRequest;
    ListToolsResult => ListToolsResult;
    ListToolsResultResponse => ListToolsResultResponse | JsonRpcResponse<GenericResult>;
    LoggingMessageNotification => LoggingMessageNotification;
    LoggingMessageNotificationParams => LoggingMessageNotificationParams;
    MethodNotFoundError => MethodNotFoundError;
    MissingRequiredClientCapabilityError => MissingRequiredClientCapabilityError;
    ModelPreferences => ModelPreferences;
    NumberSchema => NumberSchema | PrimitiveSchemaDefinition;
    PaginatedRequestParams => PaginatedRequestParams;
    ParseError => ParseError;
    ProgressNotification => ProgressNotification;
    ProgressNotificationParams => ProgressNotificationParams;
    PromptListChangedNotification => PromptListChangedNotification | JsonRpcNotification<GenericNotificationParams>;
    ReadResourceRequest => ReadResourceRequest;
    ReadResourceResult => ReadResourceResult | Outcome<ReadResourceResult>;
    ReadResourceResultResponse => ReadResourceResultResponse;
    Resource => Resource;
    ResourceLink => ResourceLink | ContentBlock;
    ResourceListChangedNotification => ResourceListChangedNotification;
    ResourceUpdatedNotification => ResourceUpdatedNotification;
    ResourceUpdatedNotificationParams => ResourceUpdatedNotificationParams;
    Root => Root;
    SamplingMessage => SamplingMessage;
    ServerCapabilities => ServerCapabilities;
    StringSchema => StringSchema | PrimitiveSchemaDefinition;
    SubscriptionsAcknowledgedNotification => SubscriptionsAcknowledgedNotification;
    SubscriptionsListenRequest => SubscriptionsListenRequest;
    SubscriptionsListenResult => SubscriptionsListenResult | GenericResult;
    SubscriptionsListenResultResponse => SubscriptionsListenResultResponse;
    TextContent => TextContent | ContentBlock | SamplingMessageContentBlock;
    TextResourceContents => TextResourceContents | ResourceContents;
    TitledMultiSelectEnumSchema => TitledMultiSelectEnumSchema | MultiSelectEnumSchema | EnumSchema | PrimitiveSchemaDefinition;
    TitledSingleSelectEnumSchema => TitledSingleSelectEnumSchema | SingleSelectEnumSchema | EnumSchema | PrimitiveSchemaDefinition;
    Tool => Tool;
    ToolListChangedNotification => ToolListChangedNotification;
    ToolResultContent => ToolResultContent | SamplingMessageContentBlock;
    ToolUseContent => ToolUseContent | SamplingMessageContentBlock;
    UnsupportedProtocolVersionError => UnsupportedProtocolVersionError;
    UntitledMultiSelectEnumSchema => UntitledMultiSelectEnumSchema | MultiSelectEnumSchema | EnumSchema | PrimitiveSchemaDefinition;
    UntitledSingleSelectEnumSchema => UntitledSingleSelectEnumSchema | SingleSelectEnumSchema | EnumSchema | PrimitiveSchemaDefinition;
}

/// Notification params read as an open object.
pub type GenericNotificationParams = JsonObject;
