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
use super::mirror::MirroredParam;
use super::outcome::Outcome;
use super::prepared::PreparedResult;

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
/// same request with `input_responses` (and `request_state` echoed). With request-state
/// sealing enabled on the server, `request_state` is sealed on the way out and verified and
/// opened on the way in, so the handler only ever sees its own plaintext.
///
/// The server answers the list methods through `list_tools_prepared` and its siblings,
/// which by default send what `list_tools` (and so on) return. A handler whose lists rarely
/// change can override them instead, to send pages serialized once (see
/// [`PreparedResult`]).
///
/// ```
/// use arctern::server::{Handler, HandlerResult, RequestContext};
/// use arctern::types::tools::{ListToolsRequestParams, ListToolsResult};
///
/// struct Empty;
///
/// impl Handler for Empty {
///     async fn list_tools(&self, _ctx: RequestContext, _params: ListToolsRequestParams)
///         -> HandlerResult<ListToolsResult> {
///         Ok(ListToolsResult::default())
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// `tools/list`.
    fn list_tools(
        &self,
        ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> impl Future<Output = HandlerResult<ListToolsResult>> + Send {
        let _ = (ctx, params);
        not_found(methods::TOOLS_LIST)
    }

    /// `tools/list` as the server sends it: the default sends what
    /// [`list_tools`](Self::list_tools) returns. Override it to return a page serialized once
    /// and shared ([`PreparedResult::shared`]); the server then calls only this method for
    /// `tools/list`, on both the modern and the legacy wire, so `list_tools` only serves direct
    /// callers.
    fn list_tools_prepared(
        &self,
        ctx: RequestContext,
        params: ListToolsRequestParams,
    ) -> impl Future<Output = HandlerResult<PreparedResult<ListToolsResult>>> + Send {
        async move { self.list_tools(ctx, params).await.map(PreparedResult::from) }
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
    ) -> impl Future<Output = HandlerResult<ListPromptsResult>> + Send {
        let _ = (ctx, params);
        not_found(methods::PROMPTS_LIST)
    }

    /// `prompts/list` as the server sends it: by default what
    /// [`list_prompts`](Self::list_prompts) returns. See
    /// [`list_tools_prepared`](Self::list_tools_prepared).
    fn list_prompts_prepared(
        &self,
        ctx: RequestContext,
        params: ListPromptsRequestParams,
    ) -> impl Future<Output = HandlerResult<PreparedResult<ListPromptsResult>>> + Send {
        async move {
            self.list_prompts(ctx, params)
                .await
                .map(PreparedResult::from)
        }
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
    ) -> impl Future<Output = HandlerResult<ListResourcesResult>> + Send {
        let _ = (ctx, params);
        not_found(methods::RESOURCES_LIST)
    }

    /// `resources/list` as the server sends it: by default what
    /// [`list_resources`](Self::list_resources) returns. See
    /// [`list_tools_prepared`](Self::list_tools_prepared).
    fn list_resources_prepared(
        &self,
        ctx: RequestContext,
        params: ListResourcesRequestParams,
    ) -> impl Future<Output = HandlerResult<PreparedResult<ListResourcesResult>>> + Send {
        async move {
            self.list_resources(ctx, params)
                .await
                .map(PreparedResult::from)
        }
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> impl Future<Output = HandlerResult<ListResourceTemplatesResult>> + Send {
        let _ = (ctx, params);
        not_found(methods::RESOURCES_TEMPLATES_LIST)
    }

    /// `resources/templates/list` as the server sends it: by default what
    /// [`list_resource_templates`](Self::list_resource_templates) returns. See
    /// [`list_tools_prepared`](Self::list_tools_prepared).
    fn list_resource_templates_prepared(
        &self,
        ctx: RequestContext,
        params: ListResourceTemplatesRequestParams,
    ) -> impl Future<Output = HandlerResult<PreparedResult<ListResourceTemplatesResult>>> + Send
    {
        async move {
            self.list_resource_templates(ctx, params)
                .await
                .map(PreparedResult::from)
        }
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
