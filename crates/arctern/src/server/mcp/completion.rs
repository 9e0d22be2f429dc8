//! `completion/complete`: argument suggestions for prompts and resource templates.

use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::completion::{CompleteRequestParams, CompleteResult, CompletionReference};

use super::handler_fn::BoxFuture;
use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;

/// The most values one completion result may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// A `completion/complete` request, with accessors for what a completer needs.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    /// The request params as received.
    pub params: CompleteRequestParams,
}

impl CompletionRequest {
    /// The prompt name, when completing a prompt argument.
    pub fn prompt(&self) -> Option<&str> {
        match &self.params.reference {
            CompletionReference::Prompt(p) => Some(&p.name),
            _ => None,
        }
    }

    /// The resource URI or template, when completing a template variable.
    pub fn resource(&self) -> Option<&str> {
        match &self.params.reference {
            CompletionReference::Resource(r) => Some(&r.uri),
            _ => None,
        }
    }

    /// The argument (or template variable) being completed.
    pub fn argument(&self) -> &str {
        &self.params.argument.name
    }

    /// What the user typed so far.
    pub fn value(&self) -> &str {
        &self.params.argument.value
    }

    /// Values of other arguments already filled in.
    pub fn context_argument(&self, name: &str) -> Option<&str> {
        self.params
            .context
            .as_ref()?
            .arguments
            .as_ref()?
            .get(name)
            .map(String::as_str)
    }
}

/// What a completer returns: `Vec<String>` (values; more than 100 are cut and flagged with
/// `hasMore`), a [`CompleteResult`], or either inside a `Result` whose error converts into a
/// JSON-RPC error.
pub trait IntoCompletion: Send + 'static {
    /// Converts into the protocol result.
    fn into_completion(self) -> HandlerResult<CompleteResult>;
}

impl IntoCompletion for CompleteResult {
    fn into_completion(self) -> HandlerResult<CompleteResult> {
        Ok(self)
    }
}

impl IntoCompletion for Vec<String> {
    fn into_completion(mut self) -> HandlerResult<CompleteResult> {
        let total = self.len();
        let more = total > MAX_COMPLETION_VALUES;
        self.truncate(MAX_COMPLETION_VALUES);
        let mut result = CompleteResult::new(self);
        result.completion.total = Some(total as u64);
        result.completion.has_more = Some(more);
        Ok(result)
    }
}

impl<T, E> IntoCompletion for Result<T, E>
where
    T: IntoCompletion,
    E: Into<ErrorObject> + Send + 'static,
{
    fn into_completion(self) -> HandlerResult<CompleteResult> {
        self.map_err(Into::into)?.into_completion()
    }
}

type CompleteFn = dyn Fn(RequestContext, CompletionRequest) -> BoxFuture<HandlerResult<CompleteResult>>
    + Send
    + Sync;

#[derive(Clone)]
pub(crate) struct Completer(Arc<CompleteFn>);

impl Completer {
    pub(crate) fn new<F, Fut, R>(f: F) -> Self
    where
        F: Fn(RequestContext, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoCompletion,
    {
        Completer(Arc::new(move |ctx, req| {
            let fut = f(ctx, req);
            Box::pin(async move { fut.await.into_completion() })
        }))
    }

    pub(crate) async fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> HandlerResult<CompleteResult> {
        (self.0)(ctx, CompletionRequest { params }).await
    }
}
