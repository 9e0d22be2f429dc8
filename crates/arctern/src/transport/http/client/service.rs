//! The pluggable byte pipe (the built-in pool or any tower service), the handle that sends
//! side requests through it, and the hook that authorizes requests.

use std::fmt;
use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use tokio_util::sync::CancellationToken;

use super::body::{Body, RawBody};
use super::pool::Pool;
use super::{BoxError, transport_error};
use crate::{Error, ErrorKind, Result};

/// A tower service of HTTP requests, boxed: what
/// [`HttpTransportBuilder::service`](super::HttpTransportBuilder::service) makes of the
/// service it is given.
pub(super) type DynService =
    dyn Fn(Request<Full<Bytes>>) -> BoxFuture<'static, Result<Response<RawBody>>> + Send + Sync;

/// A service's response, its body boxed.
pub(super) fn boxed_response<B>(response: Response<B>) -> Response<RawBody>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    response.map(|body| RawBody::Boxed(body.map_err(Into::into).boxed_unsync()))
}

/// A service's error: arctern's own errors (from a wrapped [`Pool`]) keep their kind.
pub(super) fn service_error(e: impl Into<BoxError>) -> Error {
    match e.into().downcast::<Error>() {
        Ok(e) => *e,
        Err(e) => transport_error("the HTTP request failed").with_source(e),
    }
}

/// Where requests go: the built-in pool (called directly, no boxing) or a user's service.
#[derive(Clone)]
pub(super) enum Pipe {
    Pool(Pool),
    Service(Arc<DynService>),
}

impl Pipe {
    pub(super) async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<RawBody>> {
        match self {
            Pipe::Pool(pool) => Ok(pool.send(request).await?.map(RawBody::Pool)),
            Pipe::Service(service) => service(request).await,
        }
    }
}

/// A response read whole by a [`Fetcher`].
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

/// Sends requests beside MCP's own through a transport's HTTP service (the same pool, TLS
/// roots or custom stack): what an [`Authorizer`] uses to reach authorization servers.
/// Redirects are never followed.
#[derive(Clone)]
pub struct Fetcher {
    pipe: Pipe,
    closed: CancellationToken,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher").finish_non_exhaustive()
    }
}

impl Fetcher {
    pub(super) fn new(pipe: Pipe, closed: CancellationToken) -> Self {
        Fetcher { pipe, closed }
    }

    /// A fetcher over arctern's built-in pool with default settings.
    pub fn pool(pool: Pool) -> Self {
        Fetcher::new(Pipe::Pool(pool), CancellationToken::new())
    }

    /// Sends `request` (an absolute URI) and reads the response whole: at most `max_bytes`
    /// of body, everything within `timeout`. A larger body fails with
    /// [`ErrorKind::Transport`], a slower answer with [`ErrorKind::Timeout`].
    pub async fn fetch(
        &self,
        request: Request<Full<Bytes>>,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched> {
        let uri = request.uri().clone();
        let work = async {
            let response = self.pipe.send(request).await?;
            let (parts, raw) = response.into_parts();
            let mut body = Body::with_token(raw, &self.closed);
            let mut bytes = BytesMut::new();
            while let Some(chunk) = poll_fn(|cx| body.poll_chunk(cx)).await {
                let chunk = chunk?;
                if bytes.len() + chunk.len() > max_bytes {
                    return Err(transport_error(format!(
                        "the answer of {} exceeds {max_bytes} bytes",
                        strip_query(&uri)
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(Fetched {
                status: parts.status,
                headers: parts.headers,
                body: bytes.freeze(),
            })
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("{} did not answer within {timeout:?}", strip_query(&uri)),
            )),
        }
    }
}

/// A URI for messages: the query may hold secrets (codes, states).
fn strip_query(uri: &Uri) -> String {
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}{}", uri.path()),
        _ => uri.path().to_owned(),
    }
}

/// A challenge from the server: a request was answered `401` or `403`.
#[derive(Debug)]
#[non_exhaustive]
pub struct Challenge<'a> {
    /// The method of the request.
    pub method: &'a Method,
    /// The MCP endpoint.
    pub uri: &'a Uri,
    /// The headers the request was sent with (its `Authorization`, to tell whether the
    /// credentials changed since).
    pub request_headers: &'a HeaderMap,
    /// The status of the answer.
    pub status: StatusCode,
    /// The headers of the answer (`WWW-Authenticate`, `DPoP-Nonce`).
    pub headers: &'a HeaderMap,
    /// How many challenges this request has met so far, this one included.
    pub attempt: u32,
}

/// Adds credentials to the requests of an [`HttpTransport`](super::HttpTransport) and
/// answers the server's challenges. OAuth 2.1 (`arctern::auth::client::OAuth`) is one.
pub trait Authorizer: Send + Sync + 'static {
    /// Adds credentials to `request` (an `Authorization` header, a DPoP proof), obtaining or
    /// refreshing them first if need be.
    fn authorize<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        request: &'a mut Request<Full<Bytes>>,
    ) -> BoxFuture<'a, Result<()>>;

    /// The server refused a request: `Ok(true)` to send it again (with the credentials
    /// [`authorize`](Self::authorize) will now add), `Ok(false)` to let the answer through,
    /// an error to fail the request with it.
    fn challenge<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        challenge: Challenge<'a>,
    ) -> BoxFuture<'a, Result<bool>>;
}

impl<A: Authorizer + ?Sized> Authorizer for Arc<A> {
    fn authorize<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        request: &'a mut Request<Full<Bytes>>,
    ) -> BoxFuture<'a, Result<()>> {
        (**self).authorize(fetcher, request)
    }

    fn challenge<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        challenge: Challenge<'a>,
    ) -> BoxFuture<'a, Result<bool>> {
        (**self).challenge(fetcher, challenge)
    }
}
