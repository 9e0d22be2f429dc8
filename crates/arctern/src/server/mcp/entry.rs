//! What the registry stores for each tool, prompt, resource and resource template: its
//! definition and its type-erased handler. The four kinds differ only in their definition,
//! their result, and how a refusal or a rejection is answered.

use std::any::Any;
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use arctern_types::ErrorObject;

use super::handler_fn::{BoxFuture, HandlerFn, Run};
use crate::Outcome;
use crate::server::extract::{CallParts, Rejection, Signature};
use crate::server::handler::HandlerResult;

/// One kind of registered handler. By default a refusal or a rejection is answered with a
/// JSON-RPC error (as prompts and resources are); tools answer with a tool error instead.
pub(crate) trait Kind: Send + Sync + 'static {
    /// What the registry lists for it.
    type Def: Clone + Send + Sync + 'static;
    /// The result of a call.
    type Result: Send + serde::Serialize + 'static;

    /// The answer when the user refused a required answer (`message` says which).
    fn refusal(message: String) -> HandlerResult<Outcome<Self::Result>> {
        Err(ErrorObject::invalid_params(message))
    }

    /// The answer when an extractor rejected the call.
    fn rejection(rejection: Rejection) -> HandlerResult<Outcome<Self::Result>> {
        Err(rejection.into_error())
    }

    /// Whether a body's answer is an error (then a question that stopped the body decides
    /// the call instead).
    fn failed(result: &HandlerResult<Outcome<Self::Result>>) -> bool {
        result.is_err()
    }
}

/// Turns what a handler returns into the result of its kind.
pub(crate) trait Convert<K: Kind>: Send + 'static {
    /// Converts; `target` is the name or URI called, `mime` a resource's declared MIME type.
    fn convert(self, target: &str, mime: Option<&str>) -> HandlerResult<Outcome<K::Result>>;

    /// What the return type declares at registration.
    fn describe(signature: &mut Signature);
}

/// A handler with its types erased.
pub(crate) trait Erased<K: Kind, S>: Send + Sync {
    fn call(
        &self,
        parts: CallParts,
        state: S,
        mime: Option<String>,
    ) -> BoxFuture<HandlerResult<Outcome<K::Result>>>;
}

struct KindFn<H, T> {
    handler: H,
    _marker: PhantomData<fn() -> T>,
}

impl<K, H, T, S> Erased<K, S> for KindFn<H, T>
where
    K: Kind,
    H: HandlerFn<T, S>,
    H::Output: Convert<K>,
    S: Send + 'static,
{
    fn call(
        &self,
        parts: CallParts,
        state: S,
        mime: Option<String>,
    ) -> BoxFuture<HandlerResult<Outcome<K::Result>>> {
        let target = parts.target.clone();
        let seat = parts.task.clone();
        let run = self.handler.clone().run(parts, state).0;
        Box::pin(async move {
            match run {
                Run::Body(body, input) => {
                    let finish = async move {
                        let result = body.await.convert(&target, mime.as_deref());
                        // What the body returned decides: an error after a run-time question
                        // stopped it is that question's round; a result is sent as it is.
                        if K::failed(&result) && input.interrupt().is_some() {
                            input.finish_round(K::refusal)
                        } else {
                            result
                        }
                    };
                    match seat {
                        // The body becomes a task unless it finishes at once.
                        Some(seat) => seat.runtime.launch(seat.live, Box::pin(finish)).await,
                        None => finish.await,
                    }
                }
                Run::Pending(input) => input.finish_round(K::refusal),
                Run::Rejected(rejection) => K::rejection(rejection),
            }
        })
    }
}

/// A registered handler and its definition.
pub(crate) struct Entry<K: Kind, S> {
    pub(crate) def: K::Def,
    pub(crate) handler: Arc<dyn Erased<K, S>>,
    /// Asks typed questions, whose answers are pinned in sealed request state.
    pub(crate) asks: bool,
    /// The scopes a caller's token needs to call it (empty: none).
    pub(crate) scopes: Arc<[String]>,
}

impl<K: Kind, S> Clone for Entry<K, S> {
    fn clone(&self) -> Self {
        Entry {
            def: self.def.clone(),
            handler: self.handler.clone(),
            asks: self.asks,
            scopes: self.scopes.clone(),
        }
    }
}

/// An erased handler and what its signature declares.
pub(crate) type Erasure<K, S> = (Arc<dyn Erased<K, S>>, Signature);

/// Erases a handler after checking its signature: what its parameters and return type
/// declare, with every problem `what` (such as `tool "x"`) has.
pub(crate) fn erase<K, H, T, S>(what: &str, handler: H) -> Result<Erasure<K, S>, String>
where
    K: Kind,
    H: HandlerFn<T, S>,
    H::Output: Convert<K>,
    T: 'static,
    S: Send + 'static,
{
    let mut signature = Signature::default();
    H::describe_params(&mut signature);
    <H::Output as Convert<K>>::describe(&mut signature);
    let signature = signature.finish(what)?;
    let handler: Arc<dyn Erased<K, S>> = Arc::new(KindFn {
        handler,
        _marker: PhantomData,
    });
    Ok((handler, signature))
}

/// A handler's error: the JSON-RPC error object it is, or (for any other error) its message.
pub(crate) enum HandlerError {
    /// The handler returned an [`ErrorObject`]: sent as it is.
    Protocol(ErrorObject),
    /// Any other error, by its message.
    Other(String),
}

impl HandlerError {
    /// Tells an [`ErrorObject`] from any other error type.
    pub(crate) fn of<E: Display + 'static>(error: E) -> Self {
        let mut slot = Some(error);
        if let Some(object) = (&mut slot as &mut dyn Any).downcast_mut::<Option<ErrorObject>>() {
            return HandlerError::Protocol(object.take().expect("just set"));
        }
        HandlerError::Other(slot.expect("just set").to_string())
    }

    /// The error for a prompt or resource: an [`ErrorObject`] as it is; any other error as
    /// `-32603` with a generic message (the real one goes to the log, not to the client).
    pub(crate) fn into_protocol(self, what: &str) -> ErrorObject {
        match self {
            HandlerError::Protocol(object) => object,
            HandlerError::Other(message) => {
                tracing::error!(error = %message, "a {what} handler failed");
                ErrorObject::internal_error(format!("The {what} could not be produced"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_objects_are_told_from_other_errors() {
        let object = ErrorObject::invalid_params("no such city");
        match HandlerError::of(object.clone()) {
            HandlerError::Protocol(o) => assert_eq!(o, object),
            HandlerError::Other(m) => panic!("{m}"),
        }
        match HandlerError::of(std::io::Error::other("disk full")) {
            HandlerError::Other(m) => assert_eq!(m, "disk full"),
            HandlerError::Protocol(o) => panic!("{o:?}"),
        }
        let generic = HandlerError::of("oops".to_owned()).into_protocol("prompt");
        assert_eq!(generic.code, arctern_types::ErrorCode::INTERNAL_ERROR);
        assert!(!generic.message.contains("oops"));
    }
}
