//! MCP-level middleware: code that runs around every handler call, on both eras and every
//! transport.
//!
//! A middleware sees each call to the [`Handler`] as a [`Call`]: the
//! method, the target (tool or prompt name, resource URI), the principal, the multi
//! round-trip round and the plaintext arguments (the server has verified and opened any
//! `requestState` by then). It can answer early with an error, change the call, or look at
//! and change the [`Response`] on its way back — a complete result or an `input_required`
//! round alike. Authorization, timeouts, metrics and tracing belong here.
//!
//! The server calls middleware for `tools/list`, `tools/call`, `prompts/list`,
//! `prompts/get`, `resources/list`, `resources/templates/list`, `resources/read` and
//! `completion/complete`; protocol plumbing (`server/discover`, `subscriptions/listen`,
//! `initialize`, `ping`...) never reaches a handler, so it never reaches middleware either.
//! On a legacy session a multi round-trip call runs once per round, and so does its
//! middleware.
//!
//! Each [`layer`](super::McpServer::layer) wraps the layers added before it, as axum's
//! `Router::layer` does: the **last added is the outermost**, it sees the call first and the
//! response last. A server that authorizes, then times out, then counts adds them in the
//! reverse order: `.layer(metrics).layer(timeout).layer(authorize)`.
//!
//! ```
//! use std::time::Duration;
//! use arctern::ErrorObject;
//! use arctern::server::McpServer;
//! use arctern::server::middleware::{Call, Next, from_fn};
//!
//! let server = McpServer::new("shop")
//!     .tool("echo", "Echoes.", |arctern::server::extract::RawArgs(a)| async move {
//!         format!("{a:?}")
//!     })
//!     // A per-call timeout.
//!     .layer(from_fn(|call: Call, next: Next| async move {
//!         match tokio::time::timeout(Duration::from_secs(30), next.run(call)).await {
//!             Ok(response) => response,
//!             Err(_) => Err(ErrorObject::internal_error("The call took too long")),
//!         }
//!     }));
//! # let _ = server;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use arctern_types::completion::{CompleteRequestParams, CompleteResult};
use arctern_types::meta::JsonObject;
use arctern_types::prompts::ListPromptsResult;
use arctern_types::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsRequestParams};
use arctern_types::resources::{
    ListResourceTemplatesRequestParams, ListResourceTemplatesResult, ListResourcesRequestParams,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use arctern_types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};

use super::context::{Principal, RequestContext};
use super::handler::{Handler, HandlerResult};
use super::listed::Listed;
use crate::Outcome;

/// A boxed, sendable future, as middleware returns it.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The params of one handler call.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)]
pub enum Request {
    /// `tools/list`.
    ListTools(ListToolsRequestParams),
    /// `tools/call`.
    CallTool(CallToolRequestParams),
    /// `prompts/list`.
    ListPrompts(ListPromptsRequestParams),
    /// `prompts/get`.
    GetPrompt(GetPromptRequestParams),
    /// `resources/list`.
    ListResources(ListResourcesRequestParams),
    /// `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplatesRequestParams),
    /// `resources/read`.
    ReadResource(ReadResourceRequestParams),
    /// `completion/complete`.
    Complete(CompleteRequestParams),
}

/// What a handler call answered.
#[derive(Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)]
pub enum Response {
    /// `tools/list`.
    ListTools(Listed<ListToolsResult>),
    /// `tools/call`.
    CallTool(Outcome<CallToolResult>),
    /// `prompts/list`.
    ListPrompts(Listed<ListPromptsResult>),
    /// `prompts/get`.
    GetPrompt(Outcome<GetPromptResult>),
    /// `resources/list`.
    ListResources(Listed<ListResourcesResult>),
    /// `resources/templates/list`.
    ListResourceTemplates(Listed<ListResourceTemplatesResult>),
    /// `resources/read`.
    ReadResource(Outcome<ReadResourceResult>),
    /// `completion/complete`.
    Complete(CompleteResult),
}

impl Response {
    /// Whether this is an `input_required` round.
    pub fn is_input_required(&self) -> bool {
        match self {
            Response::CallTool(o) => o.is_input_required(),
            Response::GetPrompt(o) => o.is_input_required(),
            Response::ReadResource(o) => o.is_input_required(),
            _ => false,
        }
    }

    /// Whether this is a tool result with `isError` set.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, Response::CallTool(Outcome::Complete(r)) if r.is_error == Some(true))
    }
}

/// One call on its way to the handler.
pub struct Call {
    ctx: RequestContext,
    request: Request,
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("round", &self.round())
            .finish_non_exhaustive()
    }
}

impl Call {
    pub(crate) fn new(ctx: RequestContext, request: Request) -> Self {
        Call { ctx, request }
    }

    /// The request context.
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The method, such as `tools/call`.
    pub fn method(&self) -> &'static str {
        self.ctx.method()
    }

    /// The tool or prompt name, or the resource URI; `None` for the list methods and
    /// `completion/complete`.
    pub fn target(&self) -> Option<&str> {
        match &self.request {
            Request::CallTool(p) => Some(&p.name),
            Request::GetPrompt(p) => Some(&p.name),
            Request::ReadResource(p) => Some(&p.uri),
            _ => None,
        }
    }

    /// The arguments of a `tools/call`, in plaintext.
    pub fn arguments(&self) -> Option<&JsonObject> {
        match &self.request {
            Request::CallTool(p) => p.arguments.as_ref(),
            _ => None,
        }
    }

    /// The authenticated principal, when an authentication layer established one.
    pub fn principal(&self) -> Option<&Principal> {
        self.ctx.principal()
    }

    /// The multi round-trip round: how many `input_required` rounds came before this call.
    pub fn round(&self) -> u32 {
        self.ctx.round().number()
    }

    /// The params.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The params, to change them before the handler sees them.
    pub fn request_mut(&mut self) -> &mut Request {
        &mut self.request
    }

    /// The context and the params.
    pub fn into_parts(self) -> (RequestContext, Request) {
        (self.ctx, self.request)
    }
}

/// Code that runs around handler calls. Most middleware is written with [`from_fn`].
pub trait Middleware: Send + Sync + 'static {
    /// Handles one call; `next.run(call)` passes it on to the next layer (and finally the
    /// handler).
    fn call(&self, call: Call, next: Next) -> BoxFuture<HandlerResult<Response>>;
}

/// The rest of the chain after a middleware: the next layers, then the handler.
pub struct Next {
    layers: Arc<[Arc<dyn Middleware>]>,
    index: usize,
    endpoint: Arc<dyn Endpoint>,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("remaining_layers", &(self.layers.len() - self.index))
            .finish_non_exhaustive()
    }
}

impl Next {
    pub(crate) fn new(layers: Arc<[Arc<dyn Middleware>]>, endpoint: Arc<dyn Endpoint>) -> Self {
        Next {
            layers,
            index: 0,
            endpoint,
        }
    }

    /// Runs the rest of the chain.
    pub fn run(self, call: Call) -> BoxFuture<HandlerResult<Response>> {
        match self.layers.get(self.index).cloned() {
            Some(layer) => {
                let next = Next {
                    layers: self.layers,
                    index: self.index + 1,
                    endpoint: self.endpoint,
                };
                layer.call(call, next)
            }
            None => self.endpoint.invoke(call),
        }
    }
}

/// The end of a middleware chain: the handler.
pub(crate) trait Endpoint: Send + Sync + 'static {
    fn invoke(self: Arc<Self>, call: Call) -> BoxFuture<HandlerResult<Response>>;
}

/// A middleware from an async function of the call and the rest of the chain.
///
/// ```
/// use arctern::server::middleware::{Call, Next, from_fn};
///
/// let log = from_fn(|call: Call, next: Next| async move {
///     let method = call.method();
///     let response = next.run(call).await;
///     tracing::info!(method, ok = response.is_ok(), "served");
///     response
/// });
/// # let _ = log;
/// ```
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult<Response>> + Send + 'static,
{
    FromFn(f)
}

/// A middleware made by [`from_fn`].
#[derive(Clone)]
pub struct FromFn<F>(F);

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

impl<F, Fut> Middleware for FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult<Response>> + Send + 'static,
{
    fn call(&self, call: Call, next: Next) -> BoxFuture<HandlerResult<Response>> {
        Box::pin((self.0)(call, next))
    }
}

/// Calls the handler method a request names.
pub(crate) async fn invoke<H: Handler>(handler: &H, call: Call) -> HandlerResult<Response> {
    let Call { ctx, request } = call;
    Ok(match request {
        Request::ListTools(p) => Response::ListTools(handler.list_tools(ctx, p).await?),
        Request::CallTool(p) => Response::CallTool(handler.call_tool(ctx, p).await?),
        Request::ListPrompts(p) => Response::ListPrompts(handler.list_prompts(ctx, p).await?),
        Request::GetPrompt(p) => Response::GetPrompt(handler.get_prompt(ctx, p).await?),
        Request::ListResources(p) => Response::ListResources(handler.list_resources(ctx, p).await?),
        Request::ListResourceTemplates(p) => {
            Response::ListResourceTemplates(handler.list_resource_templates(ctx, p).await?)
        }
        Request::ReadResource(p) => Response::ReadResource(handler.read_resource(ctx, p).await?),
        Request::Complete(p) => Response::Complete(handler.complete(ctx, p).await?),
    })
}
