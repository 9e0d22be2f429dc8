//! The one dispatch path: every request of either era goes through [`Server::serve_message`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use arctern_types::capabilities::ClientCapabilities;
use arctern_types::discover::DiscoverResult;
use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest};
use arctern_types::legacy::{
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use arctern_types::methods;
use arctern_types::mrtr::InputRequiredResult;
use arctern_types::notifications::CancelledNotificationParams;
use arctern_types::subscriptions::SubscriptionsListenRequestParams;
use arctern_types::{ErrorCode, ErrorObject, RequestId, RequestMeta};
use bytes::Bytes;
use futures::FutureExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::boundary::{Boundary, Carried, NextRound, malformed_state};
use super::encode::{encode_empty, encode_error, encode_legacy_result, encode_legacy_shared};
use super::envelope::envelope_only;
use super::observe::{Observation, target_kind};
use super::{Method, Server};
use crate::Era;
use crate::Outcome;
use crate::server::budget::{Caller, OverBudget};
use crate::server::config::CacheHint;
use crate::server::connection::{BoxedResponse, MessageKind, Reply, RequestOrigin, respond_lazily};
use crate::server::context::{ContextInner, NotificationSink, Principal, RequestContext};
use crate::server::handler::Handler;
use crate::server::legacy::{self, LegacyPeer, LegacySession};
use crate::server::listed::{ListResult, Listed, ListedForm};
use crate::server::middleware::{self, Call, Next, Request, Response};
use crate::server::mrtr::{Claim, OneTimeStore, Round};
use crate::server::note_channel;
use crate::server::tasks::{TaskAccess, TaskFeed, declares_extension, missing_extension};
use crate::server::wire::{WireParams, WireResult};
use crate::state::{FlowId, RejectReason, StateBinding, StateRejection};
use arctern_types::result::EmptyResult;
use arctern_types::tasks::{
    CancelTaskRequestParams, GetTaskRequestParams, GetTaskResult, UpdateTaskRequestParams,
};

/// Buffer of request-scoped messages before a slow client pushes back on the handler.
const NOTIFICATION_BUFFER: usize = 64;

/// The era a message is served on.
#[derive(Clone)]
pub(crate) enum Served {
    /// The 2026-07-28 wire: each request carries its envelope.
    Modern,
    /// A legacy session stands in for the envelope.
    Legacy(Arc<LegacySession>),
}

impl Served {
    pub(crate) fn era(&self) -> Era {
        match self {
            Served::Modern => Era::Modern,
            Served::Legacy(_) => Era::Legacy,
        }
    }
}

/// Where a request's cancellation comes from.
pub(crate) struct Scope<'a> {
    /// The parent of every request's cancellation token (the connection, the session, or
    /// the server's shutdown).
    pub(crate) cancel: &'a CancellationToken,
    /// Ends open `subscriptions/listen` streams with their final result.
    pub(crate) closing: &'a CancellationToken,
}

/// Everything a request context is built from, but its round.
struct Seed {
    id: RequestId,
    method: Method,
    meta: RequestMeta,
    era: Era,
    origin: RequestOrigin,
    sink: Option<NotificationSink>,
    cancel: CancellationToken,
    legacy: Option<LegacyPeer>,
}

impl<H: Handler> Server<H> {
    /// Serves one message on `era`.
    pub(crate) async fn serve_message(
        &self,
        era: &Served,
        message: JsonRpcMessage,
        origin: RequestOrigin,
        scope: Scope<'_>,
    ) -> Reply {
        match message {
            JsonRpcMessage::Request(request) => {
                self.serve_request(era, request, origin, scope).await
            }
            JsonRpcMessage::Notification(note) => {
                self.serve_notification(era, &note);
                Reply::Accepted
            }
            response => self.serve_response(era, response),
        }
    }

    /// Serves a response or an error from the client: on a legacy session it answers one of
    /// the server's own requests; the 2026-07-28 wire has none.
    pub(crate) fn serve_response(&self, era: &Served, response: JsonRpcMessage) -> Reply {
        match era {
            Served::Legacy(session) => {
                session.deliver(response);
                Reply::Accepted
            }
            Served::Modern => Reply::Message {
                body: encode_error(
                    None,
                    &ErrorObject::invalid_request("A 2026-07-28 client never sends responses"),
                ),
                kind: MessageKind::Invalid,
            },
        }
    }

    /// Serves a notification (cancellations are carried out by the connection).
    pub(crate) fn serve_notification(&self, era: &Served, note: &JsonRpcNotification) {
        match (note.method.as_ref(), era) {
            (methods::NOTIFICATIONS_CANCELLED, _) => {
                // Carried out by the connection, which owns in-flight requests.
                if let Some(p) = &note.params
                    && serde_json::from_str::<CancelledNotificationParams>(p.get()).is_err()
                {
                    tracing::debug!("ignored a malformed notifications/cancelled");
                }
            }
            (methods::legacy::NOTIFICATIONS_INITIALIZED, Served::Legacy(session)) => {
                session.mark_initialized();
            }
            (other, _) => tracing::debug!(method = other, "ignored a notification"),
        }
    }

    /// Serves a request.
    pub(crate) async fn serve_request(
        &self,
        era: &Served,
        request: JsonRpcRequest,
        origin: RequestOrigin,
        scope: Scope<'_>,
    ) -> Reply {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let raw = params.as_deref();
        let mut obs = self.observe(era, origin.transport, &method, &id);
        let reply = self
            .route(era, id, &method, raw, origin, scope, &mut obs)
            .await;
        // A call that reached the handler path took the observation along with its answer.
        obs.finish_reply(&reply, raw);
        reply
    }

    /// Routes a request to its method.
    #[allow(clippy::too_many_arguments)]
    async fn route(
        &self,
        era: &Served,
        id: RequestId,
        method: &str,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        scope: Scope<'_>,
        obs: &mut Observation,
    ) -> Reply {
        // An HTTP request must name its protocol version in a header.
        if let (Served::Modern, Some(h)) = (era, origin.headers.as_ref())
            && h.protocol_version.is_none()
        {
            return invalid(
                Some(&id),
                &ErrorObject::header_mismatch("Missing MCP-Protocol-Version header"),
            );
        }
        let resolved =
            Method::parse(method, era.era()).filter(|m| m.allowed(&self.inner.config.capabilities));
        let Some(resolved) = resolved else {
            return self.unknown_method(era, id, method, raw, &origin);
        };
        // A method the handler serves: its params, wrapped for the middleware and handler.
        macro_rules! call {
            ($request:path) => {
                self.serve_call(era, id, resolved, raw, origin, &scope, obs, $request)
                    .await
            };
        }
        match resolved {
            Method::Discover => self.discover(id, raw, origin),
            Method::Listen => self.listen(id, raw, origin, &scope),
            Method::Initialize
            | Method::Ping
            | Method::SetLevel
            | Method::Subscribe
            | Method::Unsubscribe => match era {
                Served::Legacy(session) => session_method(self, session, id, resolved, raw),
                // The table gives these methods to legacy sessions only.
                Served::Modern => self.unknown_method(era, id, method, raw, &origin),
            },
            Method::ToolsList => call!(Request::ListTools),
            Method::ToolsCall => call!(Request::CallTool),
            Method::PromptsList => call!(Request::ListPrompts),
            Method::PromptsGet => call!(Request::GetPrompt),
            Method::ResourcesList => call!(Request::ListResources),
            Method::ResourceTemplatesList => call!(Request::ListResourceTemplates),
            Method::ResourcesRead => call!(Request::ReadResource),
            Method::Complete => call!(Request::Complete),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
                self.serve_task(id, resolved, raw, origin).await
            }
        }
    }

    /// A method this era does not have, or the server does not offer: on the modern wire
    /// the envelope is validated first (its errors win), then `-32601`.
    fn unknown_method(
        &self,
        era: &Served,
        id: RequestId,
        method: &str,
        raw: Option<&RawValue>,
        origin: &RequestOrigin,
    ) -> Reply {
        let error = ErrorObject::method_not_found(method);
        match era {
            Served::Legacy(_) => Reply::response(encode_error(Some(&id), &error)),
            Served::Modern => {
                let checked = envelope_only(raw).and_then(|meta| {
                    self.check_envelope(&meta, origin.headers.as_ref(), method, None)
                });
                match checked {
                    Err(e) => invalid(Some(&id), &e),
                    Ok(()) => Reply::Message {
                        body: encode_error(Some(&id), &error),
                        kind: MessageKind::UnknownMethod,
                    },
                }
            }
        }
    }

    /// Serves a method that reaches the handler (or, for `server/discover`, that the server
    /// answers itself): reads the params and the envelope, then runs the call with the
    /// request-state boundary, the middleware and the handler, and encodes the answer.
    #[allow(clippy::too_many_arguments)]
    async fn serve_call<P: WireParams>(
        &self,
        era: &Served,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        scope: &Scope<'_>,
        obs: &mut Observation,
        wrap: fn(P) -> Request,
    ) -> Reply {
        let (params, meta) = match self.read_params::<P>(era, method, raw, &origin) {
            Ok(read) => read,
            Err(reply) => return reply(id),
        };
        // From here the answer comes from the future below, which ends the observation.
        let mut obs = std::mem::take(obs);
        if let (Some(kind), Some(target)) = (target_kind(method), params.mirrored_name()) {
            obs.target(kind, target);
        }
        obs.envelope(&meta);
        let (sink, rx) = if method.may_notify() {
            let (tx, rx) = note_channel::channel(NOTIFICATION_BUFFER);
            (Some(NotificationSink::new(tx)), Some(rx))
        } else {
            (None, None)
        };
        let cancel = scope.cancel.child_token();
        let legacy = match era {
            Served::Legacy(session) => Some(LegacyPeer {
                session: session.clone(),
                sink: sink.clone(),
                transport: origin.transport,
                timeout: self.inner.config.legacy.input_timeout,
            }),
            Served::Modern => None,
        };
        let seed = Seed {
            id,
            method,
            meta,
            era: era.era(),
            origin,
            sink,
            cancel,
            legacy,
        };
        let this = self.clone();
        let era = era.clone();
        // On the heap at once: this future then holds a pointer, not the handler's future.
        let response: BoxedResponse = Box::pin(async move {
            // Cancels the request's token if the reply is dropped before it is done (the
            // client went away or cancelled), so work the handler spawned hears about it.
            let cancel_on_drop = seed.cancel.clone().drop_guard();
            let id = seed.id.clone();
            let answered = this.call(&era, seed, params, wrap, &mut obs).await;
            cancel_on_drop.disarm();
            match &answered {
                Ok(response) => {
                    obs.answered(response.is_input_required(), response.is_tool_error())
                }
                Err(Refused::Invalid(e) | Refused::Error(e)) => obs.failed(e),
            }
            obs.finish();
            match answered {
                Ok(response) => (this.encode(&era, &id, response), MessageKind::Response),
                Err(Refused::Invalid(e)) => (encode_error(Some(&id), &e), MessageKind::Invalid),
                Err(Refused::Error(e)) => this.encode_failure(&era, &id, method, e),
            }
        });
        match rx {
            None => {
                let (body, kind) = response.await;
                Reply::Message { body, kind }
            }
            Some(rx) => respond_lazily(response, rx).await,
        }
    }

    /// Reads the params of a known method and its envelope: the request's own `_meta` on the
    /// modern wire (validated with the mirrored headers), the session's on a legacy one.
    #[allow(clippy::type_complexity)]
    fn read_params<P: WireParams>(
        &self,
        era: &Served,
        method: Method,
        raw: Option<&RawValue>,
        origin: &RequestOrigin,
    ) -> Result<(P, RequestMeta), Box<dyn FnOnce(RequestId) -> Reply + Send>> {
        let parsed: Result<P, serde_json::Error> = match raw {
            Some(raw) => serde_json::from_str(raw.get()),
            None => serde_json::from_str("{}"),
        };
        let headers = origin.headers.as_ref();
        let mut params = match (parsed, era) {
            (Ok(params), _) => params,
            (Err(e), Served::Legacy(_)) => {
                let error = ErrorObject::invalid_params(format!("Invalid params: {e}"));
                return Err(Box::new(move |id| {
                    Reply::response(encode_error(Some(&id), &error))
                }));
            }
            (Err(e), Served::Modern) => {
                // Tell a malformed envelope (and a malformed requestState) from malformed
                // params.
                let refused = envelope_only(raw)
                    .and_then(|meta| self.check_envelope(&meta, headers, method.name(), None));
                if let Err(error) = refused {
                    return Err(Box::new(move |id| invalid(Some(&id), &error)));
                }
                // A requestState that is not one string gets exactly what a token that fails
                // to open gets (HTTP 400 too, as the Python reference answers).
                if mrtr_method(method) && bad_request_state(raw) {
                    let error = malformed_state();
                    return Err(Box::new(move |id| invalid(Some(&id), &error)));
                }
                let error = ErrorObject::invalid_params(format!("Invalid params: {e}"));
                return Err(Box::new(move |id| {
                    Reply::response(encode_error(Some(&id), &error))
                }));
            }
        };
        let meta = params.take_meta();
        let meta = match era {
            Served::Legacy(session) => session.envelope(meta),
            Served::Modern => {
                let checked = self
                    .check_envelope(&meta, headers, method.name(), params.mirrored_name())
                    .and_then(|()| self.check_mirrored_params(&params, headers));
                if let Err(error) = checked {
                    return Err(Box::new(move |id| invalid(Some(&id), &error)));
                }
                meta
            }
        };
        Ok((params, meta))
    }

    /// The `Mcp-Param-*` headers of a `tools/call` against its arguments.
    fn check_mirrored_params<P: WireParams>(
        &self,
        params: &P,
        headers: Option<&crate::server::connection::WireHeaders>,
    ) -> Result<(), ErrorObject> {
        if let (Some(headers), Some((tool, arguments))) = (headers, params.tool_call())
            && let Some(mirrored) = self.inner.handler.mirrored_params(tool)
        {
            crate::server::mirror::check_headers(&mirrored, arguments, &headers.params)
                .map_err(ErrorObject::header_mismatch)?;
        }
        Ok(())
    }

    /// Runs one call to its answer: the request-state boundary, then the middleware and the
    /// handler; on a legacy session, round after round until the handler completes.
    async fn call<P: WireParams>(
        &self,
        era: &Served,
        seed: Seed,
        mut params: P,
        wrap: fn(P) -> Request,
        obs: &mut Observation,
    ) -> Result<Response, Refused> {
        // The binding is computed when it is first needed: now for a request that carries a
        // token (to open it), after the handler for one that asks (to seal); a copy of what
        // it covers is kept for that, since the handler takes the params.
        let mut late = None;
        let mut boundary = match (era, params.mrtr(), &self.inner.config.request_state) {
            (Served::Legacy(_), _, _) => Boundary::Legacy,
            (Served::Modern, Some(mrtr), Some(sealer)) => {
                if mrtr.request_state_mut().is_some() {
                    let binding = self.binding(seed.method, mrtr, &seed.origin.extensions);
                    Boundary::Sealed(sealer, Some(binding))
                } else {
                    late = Some(mrtr.binding_parts());
                    Boundary::Sealed(sealer, None)
                }
            }
            _ => Boundary::Open,
        };
        let (round, mut carried) = match params.mrtr() {
            Some(mrtr) => match boundary.open(mrtr, None) {
                Ok((round, carried)) => {
                    // A first round's flow is minted only if it asks for input.
                    let started = (round.number() > 0).then(|| round.flow_started()).flatten();
                    obs.round(round.number(), started, carried.trace);
                    (round, carried)
                }
                Err(rejection) => {
                    obs.rejected(rejection.reason());
                    return Err(Refused::Invalid(rejection.to_error_object()));
                }
            },
            None => (Round::default(), Carried::default()),
        };
        let request = wrap(params);
        match era {
            Served::Legacy(session) if request_is_mrtr(&request) => {
                // Boxed: the shim's rounds are a large future, and inline they would make
                // every call's future as large, and its move to the heap as costly.
                let rounds = Box::pin(self.legacy_rounds(session, seed, request, round, carried));
                obs.instrument(rounds).await
            }
            _ => {
                let client = client_capabilities(&seed.meta);
                let claimed = self
                    .claim_flow(&boundary, &round, &carried, &seed.origin)
                    .await;
                let claim = match claimed {
                    Ok(claim) => claim,
                    Err(refused) => {
                        if let Refused::Invalid(_) = refused {
                            obs.rejected(RejectReason::Replayed);
                        }
                        return Err(refused);
                    }
                };
                let method = seed.method;
                let ctx = self.context(seed, round);
                let mut answered = obs.instrument(self.invoke(ctx.clone(), request)).await;
                if carried.trace.is_none() && matches!(&answered, Ok(r) if r.is_input_required()) {
                    // Later rounds link to this first one.
                    carried.trace = obs.first_round_trace();
                }
                if let Ok(response) = &mut answered
                    && let Some(ask) = response.input_required_mut()
                {
                    if boundary.needs_binding()
                        && let Some(parts) = &late
                    {
                        boundary.bind(self.binding(method, parts, ctx.extensions()));
                    }
                    if let Err(e) =
                        boundary.close(carried, ctx.round(), ask, &client, &self.inner.config.mrtr)
                    {
                        answered = Err(Refused::Error(e));
                    }
                }
                if let Some(claim) = claim {
                    let asks_more = matches!(&answered, Ok(r) if r.is_input_required());
                    claim.finish(!asks_more).await;
                }
                answered
            }
        }
    }

    /// Claims the flow of a later round with the one-time store, when the server has one:
    /// a flow that completed, or has a round running, is refused with the fixed
    /// request-state error; a caller over its share of the store gets the over-budget
    /// error; a store that fails refuses the round (closed).
    async fn claim_flow(
        &self,
        boundary: &Boundary<'_>,
        round: &Round,
        carried: &Carried,
        origin: &RequestOrigin,
    ) -> Result<Option<FlowClaim>, Refused> {
        let (Boundary::Sealed(sealer, _), Some(store)) = (boundary, &self.inner.config.one_time)
        else {
            return Ok(None);
        };
        let Some(flow) = round.flow().filter(|_| round.number() > 0) else {
            return Ok(None);
        };
        // The store keeps the flow while any of its tokens opens on any instance: the
        // presented token's remaining life, plus the skew other instances' clocks may have.
        let now = SystemTime::now();
        let left = carried.token_left.unwrap_or_else(|| sealer.ttl());
        let expires = now + left + sealer.clock_skew();
        let caller = Caller::of(self.principal_of(&origin.extensions).as_deref(), origin);
        match store.claim(flow.id, expires, &caller).await {
            Ok(Claim::Granted) => Ok(Some(FlowClaim {
                store: store.clone(),
                flow: flow.id,
                expires,
                // A next round's token, if this round asks more: sealed after now, so it
                // lives at most this long from now (the sealer counts whole seconds).
                next_left: sealer.ttl() + sealer.clock_skew() + Duration::from_secs(1),
                caller,
            })),
            Ok(Claim::OverBudget(refusal)) => {
                refusal.log(&caller);
                Err(Refused::Error(refusal.to_error()))
            }
            Ok(refused) => {
                tracing::debug!(flow = %flow.id, ?refused, "refused a round of a flow that completed or is running");
                Err(Refused::Invalid(
                    StateRejection::new(RejectReason::Replayed).to_error_object(),
                ))
            }
            Err(e) => {
                tracing::error!(error = %e, "the one-time store failed; refusing the round");
                Err(Refused::Error(ErrorObject::internal_error(
                    "The server could not check the request state",
                )))
            }
        }
    }

    /// The legacy shim: while the handler answers `input_required`, each question goes to
    /// the client as a real server→client request on this request's stream, and the handler
    /// runs again with the answers (its state and every earlier answer kept in memory by the
    /// boundary), under the same limits as the modern wire.
    async fn legacy_rounds(
        &self,
        session: &Arc<LegacySession>,
        seed: Seed,
        mut request: Request,
        mut round: Round,
        mut carried: Carried,
    ) -> Result<Response, Refused> {
        let limits = self.inner.config.mrtr;
        let timeout = self.inner.config.legacy.input_timeout;
        loop {
            let ctx = self.context_for_round(&seed, round);
            let mut response = self.invoke(ctx.clone(), request.clone()).await?;
            let Some(ask) = response.input_required_mut() else {
                return Ok(response);
            };
            let next: NextRound = Boundary::Legacy
                .close(carried, ctx.round(), ask, &session.capabilities, &limits)
                .map_err(Refused::Error)?
                .unwrap_or_default();
            let Some(sink) = seed.sink.as_ref() else {
                return Err(Refused::Error(ErrorObject::internal_error(
                    "This request has no stream to ask the client on",
                )));
            };
            let requests = ask.input_requests.take().unwrap_or_default();
            let responses = legacy::shim::ask_client(session, sink, requests, timeout)
                .await
                .map_err(Refused::Error)?;
            let mrtr = request.mrtr().expect("a multi round-trip request");
            *mrtr.input_responses_mut() = Some(responses);
            (round, carried) = Boundary::Legacy
                .open(mrtr, Some(next))
                .map_err(|rejection| Refused::Error(rejection.to_error_object()))?;
            // The shim's own state goes back in through `open`; answers are now merged.
        }
    }

    /// Runs the middleware and the handler for one call. A panicking handler answers
    /// `-32603`; the server keeps serving.
    async fn invoke(&self, ctx: RequestContext, request: Request) -> Result<Response, Refused> {
        let call = Call::new(ctx, request);
        let run = async {
            if self.inner.layers.is_empty() {
                middleware::invoke(&self.inner.handler, call).await
            } else {
                let endpoint: Arc<dyn middleware::Endpoint> = self.inner.clone();
                Next::new(self.inner.layers.clone(), endpoint)
                    .run(call)
                    .await
            }
        };
        match AssertUnwindSafe(run).catch_unwind().await {
            Ok(answered) => answered.map_err(Refused::Error),
            Err(_) => {
                tracing::error!("a request handler panicked");
                Err(Refused::Error(ErrorObject::internal_error(
                    "Internal error: the request handler panicked",
                )))
            }
        }
    }

    /// What the request state of a multi round-trip call is bound to.
    fn binding(
        &self,
        method: Method,
        mrtr: &dyn crate::server::wire::BindingSource,
        extensions: &http::Extensions,
    ) -> StateBinding {
        let principal = self.principal_of(extensions);
        StateBinding::new(method.name(), mrtr.target(), mrtr.args_digest())
            .with_principal_opt(principal.as_deref())
    }

    /// The context of a request (the one request context builder, for both eras).
    fn context(&self, seed: Seed, round: Round) -> RequestContext {
        let tasks = match (&self.inner.tasks, seed.method, seed.era) {
            (Some(runtime), Method::ToolsCall, Era::Modern) => {
                let principal = self.principal_of(&seed.origin.extensions);
                Some(TaskAccess {
                    runtime: runtime.clone(),
                    caller: Caller::of(principal.as_deref(), &seed.origin),
                    principal,
                    declared: declares_extension(&seed.meta),
                })
            }
            _ => None,
        };
        let Seed {
            id,
            method,
            meta,
            era,
            origin,
            sink,
            cancel,
            legacy,
        } = seed;
        RequestContext {
            inner: Arc::new(ContextInner {
                id,
                method: method.name(),
                meta,
                era,
                transport: origin.transport,
                sink,
                logging_enabled: self.inner.config.capabilities.logging.is_some(),
                cancel,
                extensions: origin.extensions,
                last_progress: AtomicU64::new(u64::MAX),
                round,
                legacy,
                tasks,
            }),
        }
    }

    /// [`context`](Self::context) for one round of a legacy call, which keeps its seed.
    fn context_for_round(&self, seed: &Seed, round: Round) -> RequestContext {
        let origin = RequestOrigin {
            transport: seed.origin.transport,
            headers: None,
            extensions: seed.origin.extensions.clone(),
            peer: seed.origin.peer,
        };
        self.context(
            Seed {
                id: seed.id.clone(),
                method: seed.method,
                meta: seed.meta.clone(),
                era: seed.era,
                origin,
                sink: seed.sink.clone(),
                cancel: seed.cancel.clone(),
                legacy: seed.legacy.clone(),
            },
            round,
        )
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel`, which the server answers itself
    /// (the method table offers them only when the server runs tasks).
    async fn serve_task(
        &self,
        id: RequestId,
        method: Method,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
    ) -> Reply {
        let Some(runtime) = self.inner.tasks.clone() else {
            return Reply::response(encode_error(
                Some(&id),
                &ErrorObject::method_not_found(method.name()),
            ));
        };
        macro_rules! read {
            ($p:ty) => {
                match self.read_params::<$p>(&Served::Modern, method, raw, &origin) {
                    Ok(read) => read,
                    Err(reply) => return reply(id),
                }
            };
        }
        let principal = self.principal_of(&origin.extensions);
        let principal = principal.as_deref();
        let answered = match method {
            Method::TasksGet => {
                let (params, meta) = read!(GetTaskRequestParams);
                match declared(&meta) {
                    Err(e) => Err(e),
                    Ok(()) => runtime
                        .get(&params.task_id, principal)
                        .await
                        .map(|task| self.encode_result(&id, GetTaskResult::new(task))),
                }
            }
            Method::TasksUpdate => {
                let (params, meta) = read!(UpdateTaskRequestParams);
                match declared(&meta) {
                    Err(e) => Err(e),
                    Ok(()) => runtime
                        .update(&params.task_id, principal, params.input_responses)
                        .await
                        .map(|()| self.encode_result(&id, EmptyResult::default())),
                }
            }
            _ => {
                let (params, meta) = read!(CancelTaskRequestParams);
                match declared(&meta) {
                    Err(e) => Err(e),
                    Ok(()) => runtime
                        .cancel(&params.task_id, principal)
                        .await
                        .map(|()| self.encode_result(&id, EmptyResult::default())),
                }
            }
        };
        match answered {
            Ok(body) => Reply::response(body),
            // A missing extension is an envelope error, as on `tools/call`.
            Err(e) if e.code.is_modern_envelope_error() => invalid(Some(&id), &e),
            Err(e) => Reply::response(encode_error(Some(&id), &e)),
        }
    }

    /// The principal a request is made by: the one an authentication layer placed in its
    /// extensions, or the server's principal hook's.
    pub(crate) fn principal_of(&self, extensions: &http::Extensions) -> Option<String> {
        match extensions.get::<Principal>() {
            Some(p) => Some(p.0.clone()),
            None => self
                .inner
                .config
                .principal
                .as_ref()
                .and_then(|hook| (hook.0)(extensions)),
        }
    }

    /// `server/discover`, which the server answers itself.
    fn discover(&self, id: RequestId, raw: Option<&RawValue>, origin: RequestOrigin) -> Reply {
        if let Err(reply) =
            self.read_params::<Discover>(&Served::Modern, Method::Discover, raw, &origin)
        {
            return reply(id);
        }
        let config = &self.inner.config;
        let mut result = DiscoverResult::new(
            config.versions.iter().map(|v| v.as_str().to_owned()),
            config.capabilities.clone(),
        );
        result.instructions = config.instructions.clone();
        Reply::response(self.encode_value(&id, result, Some(config.cache.discover)))
    }

    fn listen(
        &self,
        id: RequestId,
        raw: Option<&RawValue>,
        origin: RequestOrigin,
        scope: &Scope<'_>,
    ) -> Reply {
        let (params, meta) = match self.read_params::<SubscriptionsListenRequestParams>(
            &Served::Modern,
            Method::Listen,
            raw,
            &origin,
        ) {
            Ok(read) => read,
            Err(reply) => return reply(id),
        };
        let policy = &self.inner.config.subscriptions;
        let asked = params.notifications.resource_subscriptions.iter().flatten();
        if let Err(error) = policy.check(asked, 0) {
            return Reply::response(encode_error(Some(&id), &error));
        }
        let tasks = match self.task_feed(&params, &meta, &origin) {
            Ok(feed) => feed,
            Err(e) if e.code.is_modern_envelope_error() => return invalid(Some(&id), &e),
            Err(e) => return Reply::response(encode_error(Some(&id), &e)),
        };
        let slot = match self
            .inner
            .changes
            .reserve(self.inner.config.max_listen_streams)
        {
            Ok(slot) => slot,
            Err(over) => {
                tracing::warn!(
                    limit = over.limit,
                    "refused a subscriptions/listen stream over the limit"
                );
                let error = ErrorObject::internal_error(format!(
                    "Too many open subscriptions/listen streams: this server allows {}",
                    over.limit
                ))
                .with_data(serde_json::json!({ "maxListenStreams": over.limit }));
                return Reply::response(encode_error(Some(&id), &error));
            }
        };
        let this = self.clone();
        let encoder = Arc::new(move |id: &RequestId| {
            let mut result =
                arctern_types::subscriptions::SubscriptionsListenResult::new(id.clone());
            if this.inner.config.stamp_server_info {
                result.meta.server_info = Some(this.inner.config.info.clone());
            }
            let response = arctern_types::JsonRpcResponse::new(id.clone(), result);
            Bytes::from(serde_json::to_vec(&response).unwrap_or_default())
        });
        Reply::Stream(self.inner.changes.listen(
            slot,
            id,
            params.notifications,
            &self.inner.config.capabilities,
            policy,
            origin.extensions,
            scope.closing.clone(),
            encoder,
            tasks,
        ))
    }

    /// The `notifications/tasks` a listen request asks for (`notifications.taskIds`), if
    /// the server runs tasks; only for a request that declares the extension.
    fn task_feed(
        &self,
        params: &SubscriptionsListenRequestParams,
        meta: &RequestMeta,
        origin: &RequestOrigin,
    ) -> Result<Option<TaskFeed>, ErrorObject> {
        let Some(asked) = params.notifications.extra.get("taskIds") else {
            return Ok(None);
        };
        let ids: Vec<String> = serde_json::from_value(asked.clone()).map_err(|_| {
            ErrorObject::invalid_params("notifications.taskIds must be an array of task ids")
        })?;
        let Some(runtime) = &self.inner.tasks else {
            return Ok(None);
        };
        declared(meta)?;
        let principal = self.principal_of(&origin.extensions);
        Ok(Some(TaskFeed::new(runtime.clone(), ids, principal)))
    }

    /// Encodes a handler's answer in the era's shape.
    fn encode(&self, era: &Served, id: &RequestId, response: Response) -> Bytes {
        match era {
            Served::Modern => self.encode_modern(id, response),
            Served::Legacy(_) => encode_legacy(id, response),
        }
    }

    fn encode_modern(&self, id: &RequestId, response: Response) -> Bytes {
        let policy = &self.inner.config.cache;
        match response {
            Response::ListTools(l) => self.encode_listed(id, l, policy.tools_list),
            Response::ListPrompts(l) => self.encode_listed(id, l, policy.prompts_list),
            Response::ListResources(l) => self.encode_listed(id, l, policy.resources_list),
            Response::ListResourceTemplates(l) => {
                self.encode_listed(id, l, policy.resource_templates_list)
            }
            Response::CallTool(o) => self.encode_outcome(id, o, None),
            Response::GetPrompt(o) => self.encode_outcome(id, o, None),
            Response::ReadResource(o) => self.encode_outcome(id, o, Some(policy.resources_read)),
            Response::Complete(r) => self.encode_value(id, r, None),
        }
    }

    pub(super) fn encode_value<R: WireResult>(
        &self,
        id: &RequestId,
        mut result: R,
        hint: Option<CacheHint>,
    ) -> Bytes {
        if let Some(hint) = hint {
            result.apply_cache_hint(hint);
        }
        self.encode_result(id, result)
    }

    fn encode_listed<R: ListResult>(
        &self,
        id: &RequestId,
        listed: Listed<R>,
        hint: CacheHint,
    ) -> Bytes {
        match listed.into_form() {
            ListedForm::Value(result) => self.encode_value(id, result, Some(hint)),
            ListedForm::Shared(shared) => self.encode_shared(id, &shared, Some(hint)),
        }
    }

    fn encode_outcome<R: WireResult>(
        &self,
        id: &RequestId,
        outcome: Outcome<R>,
        hint: Option<CacheHint>,
    ) -> Bytes {
        match outcome {
            Outcome::Complete(result) => self.encode_value(id, result, hint),
            Outcome::InputRequired(ask) => self.encode_input_required(id, ask),
            Outcome::Task(task) => self.encode_result(id, task),
            _ => encode_error(
                Some(id),
                &ErrorObject::internal_error("The handler returned a result of an unknown type"),
            ),
        }
    }

    /// Encodes an error a call ended with, in the era's way.
    fn encode_failure(
        &self,
        era: &Served,
        id: &RequestId,
        method: Method,
        error: ErrorObject,
    ) -> (Bytes, MessageKind) {
        // A scope refusal is told apart on both eras: HTTP answers it with 403.
        if crate::server::InsufficientScope::from_error(&error).is_some() {
            return (
                encode_error(Some(id), &error),
                MessageKind::InsufficientScope,
            );
        }
        // So is a budget refusal: HTTP answers it with 429 and `Retry-After`.
        if OverBudget::from_error(&error).is_some() {
            return (encode_error(Some(id), &error), MessageKind::OverBudget);
        }
        match era {
            Served::Modern => {
                let kind = if error.code.is_modern_envelope_error() {
                    MessageKind::Invalid
                } else if error.code == ErrorCode::METHOD_NOT_FOUND {
                    MessageKind::UnknownMethod
                } else {
                    MessageKind::Response
                };
                (encode_error(Some(id), &error), kind)
            }
            Served::Legacy(_) => (
                encode_error(Some(id), &legacy::legacy_error(method, error)),
                MessageKind::Response,
            ),
        }
    }
}

/// Why a call ended without a response.
pub(crate) enum Refused {
    /// Refused before the handler ran (a rejected `requestState`).
    Invalid(ErrorObject),
    /// The handler, the middleware or the boundary answered with an error.
    Error(ErrorObject),
}

/// `server/discover` params: only the envelope.
#[derive(serde::Deserialize)]
struct Discover {
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
}

impl WireParams for Discover {
    fn take_meta(&mut self) -> RequestMeta {
        std::mem::take(&mut self.meta)
    }
}

/// Answers a legacy session's own methods.
fn session_method<H: Handler>(
    server: &Server<H>,
    session: &Arc<LegacySession>,
    id: RequestId,
    method: Method,
    raw: Option<&RawValue>,
) -> Reply {
    fn parse<P: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Result<P, ErrorObject> {
        serde_json::from_str(raw.map_or("{}", RawValue::get))
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
    }
    let answered = match method {
        // A repeated `initialize` is answered again with what the session negotiated.
        Method::Initialize => return Reply::response(server.initialize_result(&id, session)),
        Method::Ping => Ok(()),
        Method::SetLevel => {
            parse::<SetLevelRequestParams>(raw).map(|p| session.set_log_level(p.level))
        }
        Method::Subscribe => parse::<SubscribeRequestParams>(raw)
            .and_then(|p| session.subscribe(p.uri, &server.config().subscriptions)),
        Method::Unsubscribe => {
            parse::<UnsubscribeRequestParams>(raw).map(|p| session.unsubscribe(&p.uri))
        }
        _ => Err(ErrorObject::internal_error("Not a session method")),
    };
    Reply::response(match answered {
        Ok(()) => encode_empty(&id),
        Err(e) => encode_error(Some(&id), &e),
    })
}

/// `-32021` unless the request declared the tasks extension.
fn declared(meta: &RequestMeta) -> Result<(), ErrorObject> {
    if declares_extension(meta) {
        Ok(())
    } else {
        Err(missing_extension())
    }
}

fn invalid(id: Option<&RequestId>, error: &ErrorObject) -> Reply {
    tracing::debug!(code = error.code.0, message = %error.message, "refused a request");
    Reply::Message {
        body: encode_error(id, error),
        kind: MessageKind::Invalid,
    }
}

fn mrtr_method(method: Method) -> bool {
    matches!(
        method,
        Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
    )
}

fn request_is_mrtr(request: &Request) -> bool {
    matches!(
        request,
        Request::CallTool(_) | Request::GetPrompt(_) | Request::ReadResource(_)
    )
}

/// Whether params that did not parse hold a `requestState` that is not one string (another
/// type, `null`, or twice): it gets the same fixed rejection as a token that fails to open.
fn bad_request_state(raw: Option<&RawValue>) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "requestState", default, deserialize_with = "present")]
        state: Option<serde_json::Value>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<serde_json::Value>, D::Error> {
        serde_json::Value::deserialize(d).map(Some)
    }
    let Some(raw) = raw else {
        return false;
    };
    match serde_json::from_str::<Probe>(raw.get()) {
        Ok(probe) => probe.state.is_some_and(|v| !v.is_string()),
        // Only a repeated member fails here (other members are ignored).
        Err(e) => e.to_string().contains("requestState"),
    }
}

fn client_capabilities(meta: &RequestMeta) -> Arc<ClientCapabilities> {
    meta.client_capabilities.clone().unwrap_or_default()
}

/// Encodes a handler's answer in the legacy shape.
fn encode_legacy(id: &RequestId, response: Response) -> Bytes {
    fn listed<R: ListResult>(id: &RequestId, listed: Listed<R>) -> Bytes {
        match listed.into_form() {
            ListedForm::Value(result) => encode_legacy_result(id, &result),
            ListedForm::Shared(shared) => encode_legacy_shared(id, &shared),
        }
    }
    fn outcome<R: serde::Serialize>(id: &RequestId, outcome: Outcome<R>) -> Bytes {
        match outcome {
            Outcome::Complete(result) => encode_legacy_result(id, &result),
            // The shim resolves every round before a response is written.
            _ => encode_error(
                Some(id),
                &ErrorObject::internal_error("A legacy request ended with input still required"),
            ),
        }
    }
    match response {
        Response::ListTools(l) => listed(id, l),
        Response::ListPrompts(l) => listed(id, l),
        Response::ListResources(l) => listed(id, l),
        Response::ListResourceTemplates(l) => listed(id, l),
        Response::CallTool(o) => outcome(id, o),
        Response::GetPrompt(o) => outcome(id, o),
        Response::ReadResource(o) => outcome(id, o),
        Response::Complete(r) => encode_legacy_result(id, &r),
    }
}

/// A round's claim on its flow in the one-time store.
struct FlowClaim {
    store: Arc<dyn OneTimeStore>,
    flow: FlowId,
    /// When the presented token stops opening (skew included).
    expires: SystemTime,
    /// How long a next round's token may open from when it is sealed (skew included).
    next_left: Duration,
    caller: Caller,
}

impl FlowClaim {
    /// Ends the claim: the flow completed, or asks more. A store failure here cannot undo
    /// the round (its answer is ready); it is logged.
    async fn finish(self, completed: bool) {
        let expires = if completed {
            self.expires
        } else {
            SystemTime::now() + self.next_left
        };
        let finished = self
            .store
            .finish(self.flow, completed, expires, &self.caller)
            .await;
        if let Err(e) = finished {
            tracing::error!(error = %e, flow = %self.flow, completed, "the one-time store failed to end a claim");
        }
    }
}

impl Response {
    /// The `input_required` round of a multi round-trip answer.
    pub(crate) fn input_required_mut(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            Response::CallTool(Outcome::InputRequired(ask))
            | Response::GetPrompt(Outcome::InputRequired(ask))
            | Response::ReadResource(Outcome::InputRequired(ask)) => Some(ask),
            _ => None,
        }
    }
}
