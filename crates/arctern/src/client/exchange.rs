//! Sending one request: encoding (envelope, mirrored headers), the round trip with the
//! answers a legacy server asks for on the way, and the retries on `-32022`, `-32020` and a
//! forgotten session.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use arctern_types::base::Cacheable;
use arctern_types::implementation::Implementation;
use arctern_types::jsonrpc::{JsonRpcMessage, RequestId};
use arctern_types::meta::{JsonObject, Meta, SERVER_INFO_KEY};
use arctern_types::methods;
use arctern_types::{ErrorCode, ErrorObject};
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
use super::negotiate::{self, Negotiated};
use super::notify::{self, Observer};
use super::transport::OutgoingMessage;
use super::wire::{self, Envelope};
use crate::{Era, Error, ErrorKind, Result};

/// One request to send.
pub(super) struct Req<'a, P> {
    pub(super) method: &'static str,
    pub(super) params: &'a P,
    /// The value `Mcp-Name` mirrors.
    pub(super) name: Option<&'a str>,
    /// The tool call whose arguments `Mcp-Param-*` mirror.
    pub(super) tool: Option<(&'a str, Option<&'a JsonObject>)>,
    pub(super) observer: &'a Observer,
    pub(super) timeout: Option<Duration>,
    /// The round of a multi round-trip request, in the automatic loop (for its span).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
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

    pub(super) fn next_id(&self) -> i64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends one request and returns its raw result. Retries once with another version on
    /// `-32022`, and once after re-listing tools on `-32020` for `tools/call`.
    pub(super) async fn exchange<P: Serialize + Sync>(
        &self,
        req: Req<'_, P>,
    ) -> Result<Box<RawValue>> {
        let mut version_retried = false;
        let mut headers_retried = false;
        let mut session_renewed = false;
        loop {
            let negotiated = self.negotiated();
            let obs = self.observe_request(&req, &negotiated);
            let (id, body, headers) = self.encode(&req, &negotiated, &obs.inject()).await?;
            obs.id(id);
            let answered = self.round_trip(id, req.method, body, headers, &req).await;
            obs.finish(&answered, methods::is_mrtr_method(req.method));
            match answered {
                Err(e) if negotiated.era == Era::Legacy => {
                    if session_renewed && session_gone(&e) {
                        return Err(Error::new(
                            ErrorKind::Transport,
                            format!(
                                "the server forgot the legacy session again right after it was \
                                 opened anew; {} given up",
                                req.method
                            ),
                        )
                        .with_source(e));
                    }
                    if req.renew && !session_renewed && session_gone(&e) {
                        // The server forgot the session: open a new one and retry once.
                        session_renewed = true;
                        tracing::debug!("the legacy session expired; initializing again");
                        self.initialize_boxed().await?;
                        continue;
                    }
                    return Err(e);
                }
                Err(e) => {
                    let code = e.protocol_error().map(|o| o.code);
                    if code == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) && !version_retried {
                        version_retried = true;
                        let obj = e.protocol_error().cloned().unwrap_or_else(|| {
                            ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "")
                        });
                        let version =
                            negotiate::on_unsupported_version(&obj, &self.inner.versions)?;
                        tracing::debug!(%version, "retrying with another protocol version");
                        self.set_negotiated(negotiated.at(version));
                        continue;
                    }
                    if code == Some(ErrorCode::HEADER_MISMATCH)
                        && req.tool.is_some()
                        && self.inner.mirrors
                        && !headers_retried
                    {
                        headers_retried = true;
                        tracing::debug!("header mismatch: re-listing tools and retrying once");
                        self.refresh_tools_boxed().await?;
                        continue;
                    }
                    return Err(e);
                }
                ok => return ok,
            }
        }
    }

    pub(super) async fn encode<P: Serialize + Sync>(
        &self,
        req: &Req<'_, P>,
        negotiated: &Negotiated,
        trace: &wire::TraceFields,
    ) -> Result<(i64, Bytes, http::HeaderMap)> {
        let id = self.next_id();
        if negotiated.era == Era::Legacy {
            let token = req.observer.wants_progress().then_some(id);
            let body = wire::encode_legacy_request(id, req.method, req.params, token, trace)?;
            return Ok((id, body, self.legacy_headers(negotiated)));
        }
        let meta = Envelope {
            version: negotiated.version.as_str(),
            capabilities: &self.inner.capabilities_raw,
            info: self.inner.info_raw.as_deref(),
            log_level: req.observer.log_level(),
            progress_token: req.observer.wants_progress().then_some(id),
            trace,
        };
        let body = wire::encode_request(id, req.method, req.params, meta)?;
        let mut headers = http::HeaderMap::new();
        if self.inner.mirrors {
            headers.insert(
                headers::MCP_PROTOCOL_VERSION,
                negotiated.version_header.clone(),
            );
            headers.insert(
                headers::MCP_METHOD,
                http::HeaderValue::from_static(req.method),
            );
            if let Some(name) = req.name {
                headers.insert(headers::MCP_NAME, headers::name_header_value(name));
            }
            if let Some((tool, arguments)) = req.tool
                && let Some(plan) = self.header_plan_boxed(tool).await?
            {
                plan.apply(arguments, &mut headers);
            }
        }
        Ok((id, body, headers))
    }

    pub(super) async fn round_trip<P>(
        &self,
        id: i64,
        method: &'static str,
        body: Bytes,
        headers: http::HeaderMap,
        req: &Req<'_, P>,
    ) -> Result<Box<RawValue>> {
        let request_id = RequestId::Number(id);
        let mut message = OutgoingMessage::new(Some(request_id.clone()), method, body);
        message.headers = headers;
        let legacy = self.negotiated().era == Era::Legacy;
        let origin = Arc::new(InputOrigin::new(method, req.name.unwrap_or_default()));
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
                            req.observer.dispatch(&note);
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
                            req.observer.dispatch(&note);
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
        let outcome = match req.timeout.or(self.inner.request_timeout) {
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
        self.request_with(method, params, observer, true).await
    }

    /// [`request`](Self::request); `renew` says whether a forgotten legacy session may be
    /// opened again for it.
    pub(super) async fn request_with<P: Serialize + Sync, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        observer: &Observer,
        renew: bool,
    ) -> Result<(T, Box<RawValue>)> {
        let raw = self
            .exchange(Req {
                method,
                params,
                name: None,
                tool: None,
                observer,
                timeout: None,
                round: None,
                renew,
            })
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
        Ok(self.cacheable_sized(method, key, params).await?.0)
    }

    /// [`cacheable`](Self::cacheable), with the size of the result's JSON.
    pub(super) async fn cacheable_sized<P: Serialize + Sync, T: DeserializeOwned + Cacheable>(
        &self,
        method: &'static str,
        key: &str,
        params: &P,
    ) -> Result<(T, usize)> {
        if let Some(cache) = &self.inner.cache
            && let Some(raw) = cache.get(method, key)
            && let Ok(value) = wire::decode::<T>(&raw, method)
        {
            return Ok((value, raw.get().len()));
        }
        let (value, raw): (T, Box<RawValue>) =
            self.request(method, params, &Observer::default()).await?;
        let size = raw.get().len();
        if let Some(cache) = &self.inner.cache {
            cache.put(method, key, Arc::from(raw), value.effective_ttl_ms());
        }
        Ok((value, size))
    }
}

#[cfg(feature = "otel")]
use crate::otel::ClientObservation;

#[cfg(not(feature = "otel"))]
use off::ClientObservation;

#[cfg(not(feature = "otel"))]
mod off {
    use serde_json::value::RawValue;

    use crate::client::wire::TraceFields;

    /// Without the `otel` feature: observes nothing.
    pub(crate) struct ClientObservation;

    #[allow(clippy::unused_self)]
    impl ClientObservation {
        #[inline]
        pub(crate) fn inject(&self) -> TraceFields {
            TraceFields::default()
        }
        #[inline]
        pub(crate) fn id(&self, _: i64) {}
        #[inline]
        pub(crate) fn finish(self, _: &crate::Result<Box<RawValue>>, _: bool) {}
    }
}

impl Client {
    /// Begins observing one request (its `CLIENT` span).
    #[cfg_attr(not(feature = "otel"), allow(unused_variables, clippy::unused_self))]
    fn observe_request<P>(&self, req: &Req<'_, P>, negotiated: &Negotiated) -> ClientObservation {
        #[cfg(feature = "otel")]
        {
            ClientObservation::start(
                self.inner.telemetry.as_ref(),
                req.method,
                req.name,
                req.round,
                negotiated.version.as_str(),
            )
        }
        #[cfg(not(feature = "otel"))]
        {
            ClientObservation
        }
    }
}

/// A raw result's `resultType`, as the span attribute names it.
#[cfg(feature = "otel")]
pub(crate) fn result_type_of(raw: &RawValue) -> &'static str {
    match wire::result_kind(raw) {
        Ok(wire::Kind::InputRequired) => "input_required",
        Ok(wire::Kind::Complete) => "complete",
        Ok(wire::Kind::Task) => "task",
        Ok(wire::Kind::Unknown(_)) | Err(_) => "unknown",
    }
}

/// Whether a raw result is a tool's error (`isError: true`).
#[cfg(feature = "otel")]
pub(crate) fn is_tool_error_result(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Probe>(raw.get()).is_ok_and(|p| p.is_error == Some(true))
}

/// Whether a notification belongs to the request whose stream it arrived on.
fn is_request_scoped(method: &str) -> bool {
    method == methods::NOTIFICATIONS_PROGRESS || method == methods::NOTIFICATIONS_MESSAGE
}

/// Whether `error` says the server no longer knows the legacy session (HTTP 404).
fn session_gone(error: &Error) -> bool {
    http_status(error) == Some(404)
}

/// The status of the HTTP answer `error` came from, when it was an error status that
/// carried no JSON-RPC message.
pub(super) fn http_status(error: &Error) -> Option<u16> {
    #[cfg(feature = "http")]
    {
        let mut source = std::error::Error::source(error);
        while let Some(s) = source {
            if let Some(status) =
                s.downcast_ref::<crate::transport::http::client::HttpStatusError>()
            {
                return Some(status.status.as_u16());
            }
            source = s.source();
        }
    }
    let _ = error;
    None
}
