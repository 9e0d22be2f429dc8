//! The low-level server API: one async method per protocol method.

use std::future::Future;
use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::completion::{CompleteRequestParams, CompleteResult};
use arctern_types::methods;
use arctern_types::prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsRequestParams, ListPromptsResult,
};
use arctern_types::resources::{
    ListResourceTemplatesRequestParams, ListResourceTemplatesResult, ListResourcesRequestParams,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use arctern_types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};

use super::context::RequestContext;
use super::listed::Listed;
use super::mirror::MirroredParam;
use crate::Outcome;

/// What a handler method returns: a result, or a protocol error sent back as a JSON-RPC error
/// object.
pub type HandlerResult<T> = Result<T, ErrorObject>;

/// A low-level MCP server: one async method per protocol method.
///
/// Every method has a default that answers `-32601` (method not found), so an implementation
/// overrides only what it serves, and declares the matching capabilities when it builds its
/// [`Server`](super::Server). The server validates each request's envelope before calling a
/// method, and puts the validated `_meta` into the [`RequestContext`] (the `meta` field of the
/// params is left empty). `server/discover`, `subscriptions/listen` and cancellation are
/// handled by the server itself.
///
/// `call_tool`, `get_prompt` and `read_resource` may answer with
/// [`Outcome::InputRequired`] to ask the client for input; the client answers and retries the
/// same request with `input_responses` and `request_state`. The server's request-state
/// boundary sits between the wire and these methods (on both eras):
///
/// - `request_state` is sealed on the way out and verified and opened on the way in, so the
///   handler only ever sees its own plaintext;
/// - `input_responses` holds every answer of the flow so far (the server carries earlier
///   rounds' answers in the sealed state), each pinned to the question it answers
///   ([`RequestContext::round`]);
/// - the round cap, the per-round question cap and the client's capabilities are checked
///   before anything is asked.
///
/// The list methods return a [`Listed`] page: `Ok(page.into())`, or a page serialized once
/// and shared ([`Listed::shared`]) for lists that rarely change.
///
/// ```
/// use arctern::server::{Handler, HandlerResult, Listed, RequestContext};
/// use arctern::types::tools::{ListToolsRequestParams, ListToolsResult};
///
/// struct Empty;
///
/// impl Handler for Empty {
///     async fn list_tools(&self, _ctx: RequestContext, _params: ListToolsRequestParams)
///         -> HandlerResult<Listed<ListToolsResult>> {
///         Ok(ListToolsResult::default().into())
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// `tools/list`.
    fn list_tools(
        &self,
        ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> impl Future<Output = HandlerResult<Listed<ListToolsResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::TOOLS_LIST)
    }

    /// `tools/call`. Argument validation failures belong in an `isError` result; an unknown
    /// tool is `-32602`.
    fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> impl Future<Output = HandlerResult<Outcome<CallToolResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::TOOLS_CALL)
    }

    /// `prompts/list`.
    fn list_prompts(
        &self,
        ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> impl Future<Output = HandlerResult<Listed<ListPromptsResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::PROMPTS_LIST)
    }

    /// `prompts/get`. An unknown prompt or a missing required argument is `-32602`.
    fn get_prompt(
        &self,
        ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> impl Future<Output = HandlerResult<Outcome<GetPromptResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::PROMPTS_GET)
    }

    /// `resources/list`.
    fn list_resources(
        &self,
        ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> impl Future<Output = HandlerResult<Listed<ListResourcesResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::RESOURCES_LIST)
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> impl Future<Output = HandlerResult<Listed<ListResourceTemplatesResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::RESOURCES_TEMPLATES_LIST)
    }

    /// `resources/read`. An unknown resource is `-32602` with `data.uri`, never an empty
    /// `contents` list.
    fn read_resource(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> impl Future<Output = HandlerResult<Outcome<ReadResourceResult>>> + Send {
        let _ = (ctx, params);
        not_found(methods::RESOURCES_READ)
    }

    /// `completion/complete`.
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> impl Future<Output = HandlerResult<CompleteResult>> + Send {
        let _ = (ctx, params);
        not_found(methods::COMPLETION_COMPLETE)
    }

    /// The arguments of tool `tool` that clients mirror into `Mcp-Param-{Name}` HTTP headers
    /// (the `x-mcp-header` annotations of its `inputSchema`; see
    /// [`mirrored_params`](arctern_types::headers::mirrored_params)). Before [`call_tool`](Self::call_tool) runs on an
    /// HTTP request, the server checks each such header against the arguments and answers a
    /// mismatch with HTTP 400 and `-32020`. Called once per `tools/call`, so keep it a cheap
    /// lookup. The default declares none.
    fn mirrored_params(&self, tool: &str) -> Option<Arc<[MirroredParam]>> {
        let _ = tool;
        None
    }
}

fn not_found<T: Send>(method: &'static str) -> impl Future<Output = HandlerResult<T>> + Send {
    std::future::ready(Err(ErrorObject::method_not_found(method)))
}

/// The error for an unknown resource URI: `-32602` with `data.uri` (2026-07-28 replaced the
/// legacy `-32002`).
pub fn resource_not_found(uri: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Resource not found: {uri}"))
        .with_data(serde_json::json!({ "uri": uri }))
}
