//! Client middleware: code that runs around every request the client sends, on both eras
//! and every transport — the mirror of the server's
//! [`middleware`](crate::server::middleware).
//!
//! A middleware sees each request as a [`Request`]: the method, the target (tool or prompt
//! name, resource URI), the serialized params and the extra HTTP headers it will carry. It
//! can add headers, answer early, send the request again, or look at the raw result or the
//! error on the way back. Authorization headers, retry policies, logging and metrics belong
//! here. Register middleware with [`ClientBuilder::layer`](super::ClientBuilder::layer);
//! most is written with [`from_fn`].
//!
//! Every request goes through the chain: each round of a multi round-trip call (a call
//! with two rounds passes twice), each page of a list, `server/discover`. The client's own
//! machinery sits inside the chain, so a middleware sees each request once however the
//! client retries it underneath: the era (a legacy session renewed when the server forgot
//! it), the retry with another protocol version on `-32022`, the `Mcp-Param-*` headers with
//! the re-listing of tools on `-32020`, telemetry, then the transport. The requests that
//! machinery sends on its own behalf (the tool list, `initialize`) go to the layers below
//! it, with the headers of the request that caused them; they do not pass through
//! middleware a second time. `initialize` when a client connects, the requests of
//! `subscriptions/listen` and the answers to a legacy server's questions do not pass
//! through middleware.
//!
//! **Order**: as with tower's `ServiceBuilder` and axum's `Router::layer`, the layer added
//! **last** is the outermost: it sees the request first and the result last.
//!
//! ```
//! use arctern::client::Client;
//! use arctern::client::middleware::{Next, Request, from_fn};
//! use http::HeaderValue;
//!
//! let builder = Client::builder()
//!     // Runs second: logs what the request carried.
//!     .layer(from_fn(|request: Request, next: Next| async move {
//!         let method = request.method();
//!         let answer = next.run(request).await;
//!         tracing::info!(method, ok = answer.is_ok(), "sent");
//!         answer
//!     }))
//!     // Runs first (added last): a header on every request.
//!     .layer(from_fn(|mut request: Request, next: Next| async move {
//!         request
//!             .headers_mut()
//!             .insert("x-tenant", HeaderValue::from_static("acme"));
//!         next.run(request).await
//!     }));
//! # let _ = builder;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use super::Client;
use super::notify::Observer;
use super::wire::TraceFields;
use crate::Result;

/// A boxed, sendable future, as middleware returns it.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a request answers: its raw JSON-RPC result (an `input_required` round, a task or
/// a complete result alike), or the error that kept it from one (a JSON-RPC error object is
/// an [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) error).
pub type Answer = Result<Box<RawValue>>;

/// One request on its way to the server. Cheap to clone (to send it again).
#[derive(Clone)]
pub struct Request {
    pub(super) method: &'static str,
    pub(super) name: Option<Arc<str>>,
    pub(super) params: Arc<RawValue>,
    pub(super) headers: http::HeaderMap,
    pub(super) parts: Arc<Parts>,
    /// The trace context the request carries in `_meta` (set by the telemetry layer).
    pub(crate) trace: TraceFields,
    /// The JSON-RPC id, when a layer assigned it already (else the transport end does).
    pub(crate) id: Option<i64>,
}

/// What the client's own layers need of a request, shared by its clones.
pub(super) struct Parts {
    pub(super) client: Client,
    pub(super) observer: Observer,
    pub(super) timeout: Option<Duration>,
    /// The round of a multi round-trip request, in the automatic loop.
    pub(super) round: Option<u32>,
    /// Whether a legacy session the server forgot may be opened again for this request.
    pub(super) renew: bool,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("target", &self.name)
            .field("headers", &self.headers)
            .field("round", &self.parts.round)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// The method, such as `tools/call`.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The tool or prompt name, or the resource URI; `None` for the other methods.
    pub fn target(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The params as they will be sent, without the `_meta` envelope the client adds.
    pub fn params(&self) -> &RawValue {
        &self.params
    }

    /// The multi round-trip round in the automatic loop (0 for the first request of a
    /// call), `None` outside it.
    pub fn round(&self) -> Option<u32> {
        self.parts.round
    }

    /// The HTTP headers added to the request (transports that do not speak HTTP ignore
    /// them). The client adds the headers that mirror the body (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) itself; a header of those names set here is
    /// replaced.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The HTTP headers, to add some.
    pub fn headers_mut(&mut self) -> &mut http::HeaderMap {
        &mut self.headers
    }

    pub(crate) fn client(&self) -> &Client {
        &self.parts.client
    }
}

/// Code that runs around the requests of a client. Most middleware is written with
/// [`from_fn`].
pub trait Middleware: Send + Sync + 'static {
    /// Handles one request; `next.run(request)` passes it on to the next layer (and finally
    /// the transport). A middleware may call `next.clone().run(..)` more than once (a
    /// retry), or not at all (an early answer).
    fn call(&self, request: Request, next: Next) -> BoxFuture<Answer>;
}

/// The rest of the chain after a middleware: the next layers, then the transport.
#[derive(Clone)]
pub struct Next {
    layers: Arc<[Arc<dyn Middleware>]>,
    index: usize,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("remaining_layers", &(self.layers.len() - self.index))
            .finish_non_exhaustive()
    }
}

impl Next {
    /// The chain from its outermost layer.
    pub(super) fn new(layers: Arc<[Arc<dyn Middleware>]>) -> Self {
        Next { layers, index: 0 }
    }

    /// Runs the rest of the chain.
    pub fn run(self, request: Request) -> BoxFuture<Answer> {
        let Some(layer) = self.layers.get(self.index).cloned() else {
            // The last layer is the transport end, which never calls on.
            return Box::pin(std::future::ready(Err(crate::Error::new(
                crate::ErrorKind::Config,
                "the client's request chain ended without a transport",
            ))));
        };
        let next = Next {
            layers: self.layers,
            index: self.index + 1,
        };
        layer.call(request, next)
    }
}

/// A middleware from an async function of the request and the rest of the chain.
///
/// ```
/// use arctern::client::middleware::{Next, Request, from_fn};
///
/// // Sends a request that failed on the way (not one the server refused) once more.
/// let retry = from_fn(|request: Request, next: Next| async move {
///     match next.clone().run(request.clone()).await {
///         Err(e) if e.is_transport() || e.is_timeout() => next.run(request).await,
///         answer => answer,
///     }
/// });
/// # let _ = retry;
/// ```
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(Request, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
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
    F: Fn(Request, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    fn call(&self, request: Request, next: Next) -> BoxFuture<Answer> {
        Box::pin((self.0)(request, next))
    }
}
