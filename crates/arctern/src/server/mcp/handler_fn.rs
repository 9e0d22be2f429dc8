//! Turns async functions whose parameters are extractors into tool, prompt and resource
//! handlers.

use std::future::Future;
use std::pin::Pin;

use crate::server::extract::{CallParts, Extracted, FromCall, Rejection, Signature};
use crate::server::mrtr::InputState;

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What running a handler's extractors and body produced, before it is turned into the
/// protocol result of its kind.
pub(crate) enum Run<R> {
    /// Every extractor is ready: the body, not yet polled, and the input state that tells,
    /// once it has run, whether a run-time question stopped it.
    Body(BoxFuture<R>, InputState),
    /// The body did not run: questions are pending (they are queued in the input state).
    Pending(InputState),
    /// An extractor rejected the call.
    Rejected(Rejection),
}

/// An async function usable as a handler: its parameters are extractors and its return type
/// is turned into the result of the call.
///
/// Implemented for `Fn(E1, .., En) -> impl Future<Output = R>` up to 12 parameters, where each
/// `Ei` is a [`FromCall<S>`] extractor. You never implement this yourself.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler: it must be an async function whose parameters are extractors",
    label = "not a handler",
    note = "a handler is `async fn(E1, E2, ..) -> R` (at most 12 parameters), each `E` an extractor such as `Args<T>`, `State<S>`, `RequestContext`, `Answer<Q>`, `Questions`",
    note = "the future must be `Send + 'static`: don't hold a reference to a parameter or a non-`Send` value (an `Rc`, a `MutexGuard`) across an `.await`",
    note = "the return type must turn into the call's result: `IntoToolResult`, `IntoPromptResult` or `IntoReadResult`",
    note = "a `#[derive(JsonSchema)]` from another major version of `schemars` than arctern's (`arctern::schemars`, 1.x) makes `Args<T>` no extractor: use `schemars = \"1\"`"
)]
pub trait HandlerFn<T, S>: Clone + Send + Sync + Sized + 'static {
    /// The function's return type.
    type Output: Send + 'static;

    /// Runs the extractors and, if nothing is pending, gives the body to run.
    #[doc(hidden)]
    fn run(self, parts: CallParts, state: S) -> RunOutput<Self::Output>;

    /// What the parameters declare.
    #[doc(hidden)]
    fn describe_params(describe: &mut Signature);
}

/// Opaque result of [`HandlerFn::run`].
#[doc(hidden)]
pub struct RunOutput<R>(pub(crate) Run<R>);

macro_rules! impl_handler_fn {
    ($($e:ident),*) => {
        #[allow(non_snake_case, unused_variables, unused_mut)]
        impl<F, Fut, R, S, $($e,)*> HandlerFn<($($e,)*), S> for F
        where
            F: Fn($($e),*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: Send + 'static,
            S: Send + Sync + 'static,
            $($e: FromCall<S> + Send + 'static,)*
        {
            type Output = R;

            fn run(self, mut parts: CallParts, state: S) -> RunOutput<R> {
                $(let $e = <$e as FromCall<S>>::from_call(&mut parts, &state);)*
                // A rejection wins over pending questions: never ask the user about a call
                // that cannot succeed.
                $(if let Extracted::Rejected(r) = $e {
                    return RunOutput(Run::Rejected(r));
                })*
                let mut pending = false;
                $(let $e = match $e {
                    Extracted::Ready(v) => Some(v),
                    _ => { pending = true; None }
                };)*
                if pending {
                    return RunOutput(Run::Pending(parts.input));
                }
                let fut = (self)($($e.expect("extracted")),*);
                RunOutput(Run::Body(Box::pin(fut), parts.input))
            }

            fn describe_params(describe: &mut Signature) {
                $(<$e as FromCall<S>>::describe(describe);)*
            }
        }
    };
}

impl_handler_fn!();
impl_handler_fn!(E1);
impl_handler_fn!(E1, E2);
impl_handler_fn!(E1, E2, E3);
impl_handler_fn!(E1, E2, E3, E4);
impl_handler_fn!(E1, E2, E3, E4, E5);
impl_handler_fn!(E1, E2, E3, E4, E5, E6);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7, E8);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7, E8, E9);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7, E8, E9, E10);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11);
impl_handler_fn!(E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11, E12);
