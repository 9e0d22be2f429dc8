//! Sending one request: the request the pipeline carries (see `pipeline`), its encoding
//! (envelope, mirrored headers) and the round trip, with the answers a legacy server asks
//! for on the way.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use arctern_types::ErrorObject;
use arctern_types::base::Cacheable;
use arctern_types::implementation::Implementation;
use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use arctern_types::meta::{Meta, SERVER_INFO_KEY};
use arctern_types::methods;
use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::Client;
use super::error::{InputRequiredError, InputRequiredReason};
use super::handler::InputOrigin;
use super::headers;
use super::legacy;
use super::middleware::{Next, Parts, Request};
use super::negotiate::Negotiated;
use super::notify::{self, Observer};
use super::pipeline::Via;
use super::wire::{self, Envelope};
use crate::transport::OutgoingMessage;
use crate::{Era, Error, ErrorKind, Result};

/// One request to send.
pub(super) struct Req<'a, P> {
    pub(super) method: &'static str,
    pub(super) params: &'a P,
    /// The value `Mcp-Name` mirrors.
    pub(super) name: Option<&'a str>,
    pub(super) observer: &'a Observer,
    pub(super) timeout: Option<Duration>,
    /// The round of a multi round-trip request, in the automatic loop (for its span).
    pub(super) round: Option<u32>,
    /// Whether a legacy session the server forgot may be opened again for this request
    /// (never for the requests `initialize` itself sends).
    pub(super) renew: bool,
}

/// A result whose `_meta` may carry the server's identity.
pub(super) trait ServerMeta {
    /// The result's `_meta`.
    fn meta(&self) -> Option<&Meta>;
}

macro_rules! server_meta {
    ($($t:ty),* $(,)?) => {$(
        impl ServerMeta for $t {
            fn meta(&self) -> Option<&Meta> {
                self.meta.as_ref()
            }
        }
    )*};
}

server_meta!(
    arctern_types::tools::CallToolResult,
    arctern_types::prompts::GetPromptResult,
    arctern_types::tools::ListToolsResult,
    arctern_types::prompts::ListPromptsResult,
    arctern_types::resources::ListResourcesResult,
    arctern_types::resources::ListResourceTemplatesResult,
);

impl Client {
    // ---------------------------------------------------------------- requests

    pub(crate) fn next_id(&self) -> i64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The request the pipeline carries for `req`, with `headers` added.
    pub(super) fn request_of<P: Serialize>(
        &self,
        req: &Req<'_, P>,
        headers: http::HeaderMap,
    ) -> Result<Request> {
        Ok(Request {
            method: req.method,
            name: req.name.map(Arc::from),
            params: Arc::from(wire::params_raw(req.params)?),
            headers,
            parts: Arc::new(Parts {
                client: self.clone(),
                observer: req.observer.clone(),
                timeout: req.timeout,
                round: req.round,
                renew: req.renew,
            }),
            trace: wire::TraceFields::default(),
            id: None,
        })
    }

    /// Sends one request through the pipeline — from its outermost layer, or `via` the
    /// layers below one that sends a request of its own — and returns its raw result.
    pub(super) async fn exchange<P: Serialize + Sync>(
        &self,
        req: Req<'_, P>,
        via: Option<&Via>,
    ) -> Result<Box<RawValue>> {
        let headers = via.map(|v| v.headers.clone()).unwrap_or_default();
        let request = self.request_of(&req, headers)?;
        let next = match via {
            Some(via) => via.next.clone(),
            None => Next::new(self.inner.layers.clone()),
        };
        next.run(request).await
    }

    /// The body of `request` as sent with `id` in the negotiated era, and its headers: the
    /// ones the layers added, and those that mirror the body.
    pub(super) fn encode(
        &self,
        request: &Request,
        id: i64,
        negotiated: &Negotiated,
        mut headers: http::HeaderMap,
    ) -> Result<(Bytes, http::HeaderMap)> {
        let observer = &request.parts.observer;
        if negotiated.era == Era::Legacy {
            let token = observer.wants_progress().then_some(id);
            let body = wire::encode_legacy_request_raw(
                id,
                request.method,
                &request.params,
                token,
                &request.trace,
            )?;
            if self.inner.mirrors {
                headers.insert(
                    headers::MCP_PROTOCOL_VERSION,
                    negotiated.version_header.clone(),
                );
            }
            return Ok((body, headers));
        }
        let meta = Envelope {
            version: negotiated.version.as_str(),
            capabilities: &self.inner.capabilities_raw,
            info: self.inner.info_raw.as_deref(),
            log_level: observer.log_level(),
            progress_token: observer.wants_progress().then_some(id),
            trace: &request.trace,
        };
        let body = wire::encode_request_raw(id, request.method, &request.params, meta)?;
        if self.inner.mirrors {
            headers.insert(
                headers::MCP_PROTOCOL_VERSION,
                negotiated.version_header.clone(),
            );
            headers.insert(
                headers::MCP_METHOD,
                http::HeaderValue::from_static(request.method),
            );
            if let Some(name) = &request.name {
                headers.insert(headers::MCP_NAME, headers::name_header_value(name));
            }
        }
        Ok((body, headers))
    }

    /// Sends one encoded request and reads its answer's stream. `legacy`: answer the
    /// questions a legacy server asks on the way.
    pub(super) async fn round_trip(
        &self,
        id: i64,
        body: Bytes,
        headers: http::HeaderMap,
        request: &Request,
        legacy: bool,
    ) -> Result<Box<RawValue>> {
        let method = request.method;
        let observer = &request.parts.observer;
        let request_id = RequestId::Number(id);
        let mut message = OutgoingMessage::new(Some(request_id.clone()), method, body);
        message.headers = headers;
        let origin = Arc::new(InputOrigin::new(
            method,
            request.name.as_deref().unwrap_or_default(),
        ));
        let _in_flight = (legacy && methods::is_mrtr_method(method))
            .then(|| self.inner.in_flight.enter(id, origin.clone()));
        let idle = self.inner.limits.idle_response_timeout;
        let silent = move || {
            Error::new(
                ErrorKind::Timeout,
                format!(
                    "{method}: the server sent nothing for {:?}",
                    idle.unwrap_or_default()
                ),
            )
        };
        let work = async {
            let mut stream = match idle {
                None => self.inner.transport.send(message).await?,
                Some(limit) => tokio::time::timeout(limit, self.inner.transport.send(message))
                    .await
                    .map_err(|_| silent())??,
            };
            // A legacy server asks on the call's own stream and waits for the answers before
            // it answers the call: answer them while reading on, a few at a time.
            let mut answering: futures::stream::FuturesUnordered<BoxFuture<'_, ()>> =
                futures::stream::FuturesUnordered::new();
            let slots = Arc::new(tokio::sync::Semaphore::new(
                self.inner.limits.max_concurrent_inputs,
            ));
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    Some(()) = answering.next(), if !answering.is_empty() => continue,
                    // Silence counts only while the client waits on the server.
                    () = tokio::time::sleep(idle.unwrap_or(Duration::from_secs(86_400))),
                        if idle.is_some() && answering.is_empty() => return Err(silent()),
                };
                let Some(item) = item else { break };
                match item? {
                    JsonRpcMessage::Notification(note)
                        if note.method == methods::NOTIFICATIONS_PROGRESS =>
                    {
                        // Only the request's own token: another one is not this call's.
                        if notify::progress_token_is(&note, id) {
                            observer.dispatch(&note);
                        } else {
                            tracing::debug!(
                                "dropped progress for a token that is not this request's"
                            );
                        }
                    }
                    JsonRpcMessage::Notification(note) => {
                        if legacy && !is_request_scoped(&note.method) {
                            self.inner.hub.dispatch(note);
                        } else {
                            observer.dispatch(&note);
                        }
                    }
                    JsonRpcMessage::Response(r) if r.id == request_id => {
                        return Ok(r.result);
                    }
                    JsonRpcMessage::Error(e)
                        if e.id.as_ref().is_none_or(|eid| *eid == request_id) =>
                    {
                        return Err(Error::protocol(e.error));
                    }
                    JsonRpcMessage::Request(r) if legacy => {
                        if answering.len() >= self.inner.limits.max_input_requests {
                            // Refused at once: the server asks faster than anyone answers.
                            let error = ErrorObject::internal_error(format!(
                                "this client answers at most {} questions of a call at a time",
                                self.inner.limits.max_input_requests
                            ));
                            answering.push(Box::pin(self.refuse_server_request(r, error)));
                            continue;
                        }
                        let slots = slots.clone();
                        let origin = origin.clone();
                        answering.push(Box::pin(async move {
                            let _slot = slots.acquire_owned().await;
                            self.answer_server_request(r, origin).await;
                        }));
                    }
                    JsonRpcMessage::Request(r) => {
                        tracing::warn!(method = %r.method, "ignored a request from the server (2026-07-28 servers send none)");
                    }
                    other => {
                        tracing::debug!(id = ?other.id(), "ignored a response to another request");
                    }
                }
            }
            Err(Error::new(
                ErrorKind::Transport,
                "the response stream ended before the server answered",
            ))
        };
        // On legacy HTTP, closing the stream does not cancel the request: say so instead
        // (stdio transports send it themselves).
        let mut cancel = legacy::CancelOnDrop::new(
            (legacy && self.inner.mirrors).then(|| self.clone()),
            request_id.clone(),
        );
        let outcome = match request.parts.timeout.or(self.inner.request_timeout) {
            None => work.await,
            Some(limit) => match tokio::time::timeout(limit, work).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!("{method} got no answer within {limit:?}"),
                    ));
                }
            },
        };
        cancel.disarm();
        outcome
    }

    /// Sends a request whose result is always complete, and decodes it.
    pub(super) async fn request<P: Serialize + Sync, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        observer: &Observer,
    ) -> Result<(T, Box<RawValue>)> {
        self.request_with(method, params, observer, true, None)
            .await
    }

    /// [`request`](Self::request); `renew` says whether a forgotten legacy session may be
    /// opened again for it, `via` sends it through the layers below one.
    pub(super) async fn request_with<P: Serialize + Sync, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        observer: &Observer,
        renew: bool,
        via: Option<&Via>,
    ) -> Result<(T, Box<RawValue>)> {
        let raw = self
            .exchange(
                Req {
                    method,
                    params,
                    name: None,
                    observer,
                    timeout: None,
                    round: None,
                    renew,
                },
                via,
            )
            .await?;
        match wire::result_kind(&raw)? {
            wire::Kind::Complete => {}
            wire::Kind::InputRequired => {
                return Err(InputRequiredError::new(
                    InputRequiredReason::NotAllowed(method.to_owned()),
                    None,
                    0,
                )
                .into_error(ErrorKind::InputRequired));
            }
            wire::Kind::Task => {
                return Err(Error::new(
                    ErrorKind::Codec,
                    format!("the server answered {method} with a task"),
                ));
            }
            wire::Kind::Unknown(t) => {
                return Err(Error::new(
                    ErrorKind::Codec,
                    format!("the server answered {method} with an unknown resultType {t:?}"),
                ));
            }
        }
        let value: T = wire::decode(&raw, method)?;
        Ok((value, raw))
    }

    /// Remembers the server's identity from a result's `_meta`, if not known yet.
    pub(super) fn note_server_info(&self, meta: Option<&Meta>) {
        if self.negotiated().server_info.is_some() {
            return;
        }
        if let Some(info) = meta
            .and_then(|m| m.get(SERVER_INFO_KEY))
            .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok())
        {
            let mut next = (*self.negotiated()).clone();
            next.server_info = Some(Arc::new(info));
            self.set_negotiated(next);
        }
    }

    /// Through the cache when it is on.
    pub(super) async fn cacheable<P: Serialize + Sync, T: DeserializeOwned + Cacheable>(
        &self,
        method: &'static str,
        key: &str,
        params: &P,
    ) -> Result<T> {
        Ok(self.cacheable_sized(method, key, params, None).await?.0)
    }

    /// [`cacheable`](Self::cacheable), with the size of the result's JSON, sent `via` the
    /// layers below one when given.
    pub(super) async fn cacheable_sized<P: Serialize + Sync, T: DeserializeOwned + Cacheable>(
        &self,
        method: &'static str,
        key: &str,
        params: &P,
        via: Option<&Via>,
    ) -> Result<(T, usize)> {
        if let Some(cache) = &self.inner.cache
            && let Some(raw) = cache.get(method, key)
            && let Ok(value) = wire::decode::<T>(&raw, method)
        {
            return Ok((value, raw.get().len()));
        }
        let (value, raw): (T, Box<RawValue>) = self
            .request_with(method, params, &Observer::default(), true, via)
            .await?;
        let size = raw.get().len();
        if let Some(cache) = &self.inner.cache {
            cache.put(method, key, Arc::from(raw), value.effective_ttl_ms());
        }
        Ok((value, size))
    }
}

/// Whether a notification belongs to the request whose stream it arrived on.
fn is_request_scoped(method: &str) -> bool {
    method == methods::NOTIFICATIONS_PROGRESS || method == methods::NOTIFICATIONS_MESSAGE
}
