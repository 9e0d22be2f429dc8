//! Answering what a server asks for: elicitation, sampling and roots.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;

use arctern_types::capabilities::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
};
use arctern_types::elicitation::{ElicitRequestParams, ElicitResult};
use arctern_types::implementation::Implementation;
use arctern_types::meta::JsonObject;
use arctern_types::mrtr::{InputRequest, InputResponse};
use arctern_types::roots::{ListRootsRequestParams, ListRootsResult};
use arctern_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::{Error, ErrorKind, Result};

/// The request a server's question arrived in: its method and the tool or prompt name, or
/// the resource URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputOrigin {
    method: &'static str,
    target: String,
}

impl InputOrigin {
    pub(crate) fn new(method: &'static str, target: impl Into<String>) -> Self {
        InputOrigin {
            method,
            target: target.into(),
        }
    }

    /// `tools/call`, `prompts/get` or `resources/read`.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &str {
        &self.target
    }
}

/// One question from the server, as a handler receives it: the request's params (also
/// reachable through `Deref`), its key in `inputRequests`, the request it arrived in and the
/// server that asks (show it to the user).
#[derive(Debug, Clone)]
pub struct Input<P> {
    key: String,
    origin: Arc<InputOrigin>,
    server: Option<Arc<Implementation>>,
    samplings: usize,
    params: P,
}

impl<P> Input<P> {
    pub(crate) fn new(
        key: String,
        origin: Arc<InputOrigin>,
        server: Option<Arc<Implementation>>,
        params: P,
    ) -> Self {
        Input {
            key,
            origin,
            server,
            samplings: 0,
            params,
        }
    }

    /// How many sampling requests (LLM completions) the round this question came in asks
    /// for, this one included if it is one: a client can tell its user before running
    /// them. On a legacy session, where a server asks one question at a time, 1 for a
    /// sampling request.
    pub fn samplings_in_round(&self) -> usize {
        self.samplings
    }

    fn with_samplings(mut self, samplings: usize) -> Self {
        self.samplings = samplings;
        self
    }

    /// The key of this question in `inputRequests`; the answer goes under the same key. On a
    /// legacy session: the key the server named (arctern servers do), else the server's
    /// request id.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The request the question arrived in.
    pub fn origin(&self) -> &InputOrigin {
        &self.origin
    }

    /// The server that asks, as it described itself (for display only).
    pub fn server_info(&self) -> Option<&Implementation> {
        self.server.as_deref()
    }

    /// The question's params.
    pub fn params(&self) -> &P {
        &self.params
    }

    /// The question's params, by value.
    pub fn into_params(self) -> P {
        self.params
    }
}

impl<P> Deref for Input<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.params
    }
}

/// Which kinds of question a [`ClientHandler`] answers. The client declares exactly these
/// capabilities on every request, so a server never asks for anything else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandlerCapabilities {
    pub(crate) elicitation_form: bool,
    pub(crate) elicitation_url: bool,
    pub(crate) sampling: bool,
    pub(crate) sampling_tools: bool,
    pub(crate) sampling_context: bool,
    pub(crate) roots: bool,
}

impl HandlerCapabilities {
    /// Answers nothing.
    pub const fn none() -> Self {
        HandlerCapabilities {
            elicitation_form: false,
            elicitation_url: false,
            sampling: false,
            sampling_tools: false,
            sampling_context: false,
            roots: false,
        }
    }

    /// Answers form-mode elicitations.
    pub const fn elicitation(mut self) -> Self {
        self.elicitation_form = true;
        self
    }

    /// Answers URL-mode elicitations (opens the URL after the user consents).
    pub const fn elicitation_url(mut self) -> Self {
        self.elicitation_url = true;
        self
    }

    /// Answers sampling requests.
    pub const fn sampling(mut self) -> Self {
        self.sampling = true;
        self
    }

    /// Answers sampling requests that offer tools (implies [`sampling`](Self::sampling)).
    pub const fn sampling_tools(mut self) -> Self {
        self.sampling = true;
        self.sampling_tools = true;
        self
    }

    /// Honours the deprecated `includeContext` values of sampling requests (implies
    /// [`sampling`](Self::sampling)).
    pub const fn sampling_context(mut self) -> Self {
        self.sampling = true;
        self.sampling_context = true;
        self
    }

    /// Answers `roots/list`.
    pub const fn roots(mut self) -> Self {
        self.roots = true;
        self
    }

    /// The client capabilities these handlers amount to.
    pub fn to_client_capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.elicitation_form || self.elicitation_url {
            let mut e = ElicitationCapability::default();
            // `{}` alone means form mode; name the modes only when URL mode is in.
            if self.elicitation_url {
                e.url = Some(JsonObject::new());
                if self.elicitation_form {
                    e.form = Some(JsonObject::new());
                }
            }
            caps.elicitation = Some(e);
        }
        if self.sampling {
            let mut s = SamplingCapability::default();
            if self.sampling_tools {
                s.tools = Some(JsonObject::new());
            }
            if self.sampling_context {
                s.context = Some(JsonObject::new());
            }
            caps.sampling = Some(s);
        }
        if self.roots {
            caps.roots = Some(RootsCapability::default());
        }
        caps
    }
}

/// Answers the questions servers ask (multi round-trip input requests).
///
/// Implement the methods for the kinds you support and say which in
/// [`capabilities`](ClientHandler::capabilities); the others answer with an error. The same
/// handler serves every call of a client, concurrently: all questions of one round are
/// answered at the same time, and a question's future is dropped if its call is dropped.
///
/// A decline or cancel by the user is an answer like any other
/// ([`ElicitResult::decline`]): return it, and the server decides what happens. Return an
/// error only when the question cannot be answered at all; the call then fails without
/// retrying.
///
/// For simple cases, [`ClientBuilder::on_elicit`](super::ClientBuilder::on_elicit) and its
/// siblings take async closures instead.
pub trait ClientHandler: Send + Sync + 'static {
    /// Which kinds of question this handler answers.
    fn capabilities(&self) -> HandlerCapabilities;

    /// `elicitation/create`: ask the user.
    fn elicit(
        &self,
        input: Input<ElicitRequestParams>,
    ) -> impl Future<Output = Result<ElicitResult>> + Send {
        let _ = input;
        std::future::ready(Err(unsupported("elicitation/create")))
    }

    /// `sampling/createMessage`: ask the client's language model.
    fn create_message(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> impl Future<Output = Result<CreateMessageResult>> + Send {
        let _ = input;
        std::future::ready(Err(unsupported("sampling/createMessage")))
    }

    /// `roots/list`: the client's roots.
    fn list_roots(
        &self,
        input: Input<ListRootsRequestParams>,
    ) -> impl Future<Output = Result<ListRootsResult>> + Send {
        let _ = input;
        std::future::ready(Err(unsupported("roots/list")))
    }
}

fn unsupported(method: &str) -> Error {
    Error::new(
        ErrorKind::InputRequired,
        format!("this client does not answer {method}"),
    )
}

pub(crate) type ElicitFn = Arc<
    dyn Fn(Input<ElicitRequestParams>) -> BoxFuture<'static, Result<ElicitResult>> + Send + Sync,
>;
pub(crate) type SampleFn = Arc<
    dyn Fn(Input<CreateMessageRequestParams>) -> BoxFuture<'static, Result<CreateMessageResult>>
        + Send
        + Sync,
>;
pub(crate) type RootsFn = Arc<
    dyn Fn(Input<ListRootsRequestParams>) -> BoxFuture<'static, Result<ListRootsResult>>
        + Send
        + Sync,
>;

/// The handlers of a client, one per kind of question.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicit: Option<ElicitFn>,
    pub(crate) sample: Option<SampleFn>,
    pub(crate) roots: Option<RootsFn>,
    pub(crate) caps: HandlerCapabilities,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("caps", &self.caps)
            .finish()
    }
}

impl Handlers {
    /// Every kind `handler` declares.
    pub(crate) fn from_handler<H: ClientHandler>(handler: H) -> Self {
        let caps = handler.capabilities();
        let handler = Arc::new(handler);
        let mut out = Handlers {
            caps,
            ..Default::default()
        };
        if caps.elicitation_form || caps.elicitation_url {
            let h = handler.clone();
            out.elicit = Some(Arc::new(move |input| {
                let h = h.clone();
                async move { h.elicit(input).await }.boxed()
            }));
        }
        if caps.sampling {
            let h = handler.clone();
            out.sample = Some(Arc::new(move |input| {
                let h = h.clone();
                async move { h.create_message(input).await }.boxed()
            }));
        }
        if caps.roots {
            let h = handler;
            out.roots = Some(Arc::new(move |input| {
                let h = h.clone();
                async move { h.list_roots(input).await }.boxed()
            }));
        }
        out
    }

    /// Whether a question can be answered; `Err` names what is missing.
    pub(crate) fn check(&self, request: &InputRequest) -> std::result::Result<(), String> {
        let caps = &self.caps;
        match request {
            InputRequest::Elicit(e) => {
                if self.elicit.is_none() {
                    return Err(request.method().to_owned());
                }
                match e.params {
                    ElicitRequestParams::Url(_) if !caps.elicitation_url => {
                        Err(format!("{} (URL mode)", request.method()))
                    }
                    ElicitRequestParams::Form(_) if !caps.elicitation_form => {
                        Err(format!("{} (form mode)", request.method()))
                    }
                    ElicitRequestParams::Form(_) | ElicitRequestParams::Url(_) => Ok(()),
                    _ => Err(request.method().to_owned()),
                }
            }
            InputRequest::CreateMessage(s) => {
                if self.sample.is_none() {
                    Err(request.method().to_owned())
                } else if s.params.uses_tools() && !caps.sampling_tools {
                    // The client must refuse tool use it did not declare.
                    Err(format!("{} (with tools)", request.method()))
                } else {
                    Ok(())
                }
            }
            InputRequest::ListRoots(_) => match self.roots {
                Some(_) => Ok(()),
                None => Err(request.method().to_owned()),
            },
            _ => Err(request.method().to_owned()),
        }
    }

    /// Answers one question (after [`check`](Self::check) passed).
    pub(crate) fn answer(
        &self,
        key: String,
        request: InputRequest,
        origin: Arc<InputOrigin>,
        server: Option<Arc<Implementation>>,
        samplings: usize,
    ) -> BoxFuture<'static, Result<InputResponse>> {
        match request {
            InputRequest::Elicit(e) => match &self.elicit {
                Some(f) => f(Input::new(key, origin, server, e.params))
                    .map(|r| r.map(InputResponse::Elicit))
                    .boxed(),
                None => std::future::ready(Err(unsupported("elicitation/create"))).boxed(),
            },
            InputRequest::CreateMessage(s) => match &self.sample {
                Some(f) => f(Input::new(key, origin, server, s.params).with_samplings(samplings))
                    .map(|r| r.map(InputResponse::CreateMessage))
                    .boxed(),
                None => std::future::ready(Err(unsupported("sampling/createMessage"))).boxed(),
            },
            InputRequest::ListRoots(r) => match &self.roots {
                Some(f) => f(Input::new(
                    key,
                    origin,
                    server,
                    r.params.unwrap_or_default(),
                ))
                .map(|r| r.map(InputResponse::ListRoots))
                .boxed(),
                None => std::future::ready(Err(unsupported("roots/list"))).boxed(),
            },
            other => std::future::ready(Err(unsupported(other.method()))).boxed(),
        }
    }
}
