//! Scripted answers: the [`ClientHandler`] a [`TestClient`](super::TestClient) answers the
//! server's questions with.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use arctern_types::elicitation::{ElicitRequest, ElicitRequestParams, ElicitResult};
use arctern_types::mrtr::{InputRequest, InputRequestKind, InputResponse};
use arctern_types::roots::{ListRootsRequestParams, ListRootsResult};
use arctern_types::sampling::{CreateMessageRequestParams, CreateMessageResult};

use crate::client::{ClientHandler, HandlerCapabilities, Input};
use crate::transport::memory::lock;
use crate::{Error, ErrorKind, Result};

/// Computes the answer to a sampling request (see
/// [`TestClient::on_sample`](super::TestClient::on_sample)).
pub(crate) type SampleFn =
    Arc<dyn Fn(&Input<CreateMessageRequestParams>) -> CreateMessageResult + Send + Sync>;

/// What a test scripted: answers by key, and answers for whole kinds of question.
#[derive(Default)]
pub(crate) struct Script {
    pub(crate) by_key: HashMap<String, InputResponse>,
    pub(crate) sample: Option<SampleFn>,
    pub(crate) roots: Option<ListRootsResult>,
}

/// A question the server asked that the test scripted no answer for.
///
/// The call that asked it fails with an error of kind
/// [`ErrorKind::InputRequired`](crate::ErrorKind::InputRequired) whose message names the key
/// and the question; [`UnscriptedQuestion::of`] reads the details back.
#[derive(Debug, Clone, PartialEq)]
pub struct UnscriptedQuestion {
    key: String,
    question: InputRequest,
}

impl UnscriptedQuestion {
    pub(crate) fn new(key: impl Into<String>, question: InputRequest) -> Self {
        UnscriptedQuestion {
            key: key.into(),
            question,
        }
    }

    /// The details of `error` (anywhere in its chain of sources), if a question without a
    /// scripted answer caused it.
    pub fn of(error: &Error) -> Option<&UnscriptedQuestion> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if let Some(found) = e.downcast_ref::<UnscriptedQuestion>() {
                return Some(found);
            }
            source = e.source();
        }
        None
    }

    /// The question's key in `inputRequests`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The question, as the server asked it.
    pub fn question(&self) -> &InputRequest {
        &self.question
    }

    pub(crate) fn into_error(self) -> Error {
        Error::new(
            ErrorKind::InputRequired,
            "the server asked a question the test scripted no answer for",
        )
        .with_source(self)
    }
}

impl fmt::Display for UnscriptedQuestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        write!(f, "no scripted answer for input request {key:?} (")?;
        describe(f, &self.question)?;
        match self.question.kind() {
            InputRequestKind::Elicitation => write!(
                f,
                "); script one with .answer({key:?}, ..), .decline({key:?}) or .cancel({key:?})"
            ),
            InputRequestKind::Sampling => write!(
                f,
                "); script one with .respond({key:?}, CreateMessageResult), .sample(..) or .on_sample(..)"
            ),
            InputRequestKind::Roots => write!(f, "); script the roots with .roots(..)"),
            _ => f.write_str(")"),
        }
    }
}

impl std::error::Error for UnscriptedQuestion {}

/// A short description of a question: its method and what it asks.
pub(crate) fn describe(f: &mut dyn fmt::Write, question: &InputRequest) -> fmt::Result {
    match question {
        InputRequest::Elicit(e) => match &e.params {
            ElicitRequestParams::Form(form) => {
                write!(f, "elicitation/create, form: {:?}", form.message)
            }
            ElicitRequestParams::Url(url) => {
                write!(f, "elicitation/create, URL {}: {:?}", url.url, url.message)
            }
            _ => write!(f, "elicitation/create: {:?}", e.params.message()),
        },
        InputRequest::CreateMessage(s) => write!(
            f,
            "sampling/createMessage, {} message(s)",
            s.params.messages.len()
        ),
        InputRequest::ListRoots(_) => f.write_str("roots/list"),
        other => f.write_str(other.method()),
    }
}

/// What kind of answer a response is, for messages.
fn kind_of(response: &InputResponse) -> &'static str {
    match response {
        InputResponse::Elicit(_) => "an elicitation answer",
        InputResponse::CreateMessage(_) => "a sampling result",
        InputResponse::ListRoots(_) => "a roots list",
        InputResponse::Unrecognized(_) => "an unrecognized value",
        _ => "an answer of another kind",
    }
}

/// The state a [`TestClient`](super::TestClient) shares with its handler and its
/// recording transport.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) script: Mutex<Script>,
    pub(crate) rounds: Mutex<Vec<super::RecordedRound>>,
    /// Questions the script could not answer since the current call started.
    pub(crate) failures: Mutex<Vec<Failure>>,
    /// Answers a legacy session's server→client requests are waiting for, by request id:
    /// the round they belong to and the question's key and kind.
    pub(crate) legacy_asks: Mutex<HashMap<String, (u64, String, InputRequestKind)>>,
    /// The answers given to a legacy round's server→client requests, by round.
    pub(crate) legacy_answers: Mutex<HashMap<u64, arctern_types::mrtr::InputResponses>>,
}

/// A question the script could not answer.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// No answer for it.
    Unscripted(Box<UnscriptedQuestion>),
    /// An answer of another kind under its key.
    Mismatch(String),
}

impl Failure {
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::Unscripted(missing) => (*missing).into_error(),
            Failure::Mismatch(message) => Error::new(ErrorKind::InputRequired, message),
        }
    }
}

/// What the script says about one question.
enum Lookup {
    /// A fixed answer.
    Fixed(Box<InputResponse>),
    /// The sampling callback answers.
    Sample(SampleFn),
}

impl Shared {
    /// The scripted answer to `question` under `key`; records a question without one.
    fn lookup(&self, key: &str, question: &InputRequest) -> Result<Lookup> {
        let script = lock(&self.script);
        if let Some(response) = script.by_key.get(key) {
            let fits = matches!(
                (question.kind(), response),
                (InputRequestKind::Elicitation, InputResponse::Elicit(_))
                    | (InputRequestKind::Sampling, InputResponse::CreateMessage(_))
                    | (InputRequestKind::Roots, InputResponse::ListRoots(_))
            );
            if !fits {
                let mut asked = String::new();
                let _ = describe(&mut asked, question);
                let failure = Failure::Mismatch(format!(
                    "the answer scripted for input request {key:?} is {}, but the server asked {asked}",
                    kind_of(response)
                ));
                drop(script);
                lock(&self.failures).push(failure.clone());
                return Err(failure.into_error());
            }
            return Ok(Lookup::Fixed(Box::new(response.clone())));
        }
        match question {
            InputRequest::CreateMessage(_) => {
                if let Some(f) = &script.sample {
                    return Ok(Lookup::Sample(f.clone()));
                }
            }
            InputRequest::ListRoots(_) => {
                if let Some(roots) = &script.roots {
                    return Ok(Lookup::Fixed(Box::new(InputResponse::ListRoots(
                        roots.clone(),
                    ))));
                }
            }
            _ => {}
        }
        drop(script);
        let failure = Failure::Unscripted(Box::new(UnscriptedQuestion::new(key, question.clone())));
        lock(&self.failures).push(failure.clone());
        Err(failure.into_error())
    }
}

/// The scripted answer is not of the kind asked (checked by [`Shared::lookup`]).
fn mismatch() -> Error {
    Error::new(
        ErrorKind::InputRequired,
        "the scripted answer is not of the kind asked",
    )
}

/// Answers every question from the script.
pub(crate) struct ScriptHandler {
    pub(crate) shared: Arc<Shared>,
    pub(crate) capabilities: HandlerCapabilities,
}

impl ClientHandler for ScriptHandler {
    fn capabilities(&self) -> HandlerCapabilities {
        self.capabilities
    }

    fn elicit(
        &self,
        input: Input<ElicitRequestParams>,
    ) -> impl Future<Output = Result<ElicitResult>> + Send {
        let question = InputRequest::Elicit(ElicitRequest::new(input.params().clone()));
        let answer = match self.shared.lookup(input.key(), &question) {
            Ok(Lookup::Fixed(answer)) => match *answer {
                InputResponse::Elicit(answer) => Ok(answer),
                _ => Err(mismatch()),
            },
            Ok(_) => Err(mismatch()),
            Err(e) => Err(e),
        };
        std::future::ready(answer)
    }

    fn create_message(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> impl Future<Output = Result<CreateMessageResult>> + Send {
        let question = InputRequest::sample(input.params().clone());
        let answer = match self.shared.lookup(input.key(), &question) {
            Ok(Lookup::Fixed(answer)) => match *answer {
                InputResponse::CreateMessage(answer) => Ok(answer),
                _ => Err(mismatch()),
            },
            Ok(Lookup::Sample(f)) => Ok(f(&input)),
            Err(e) => Err(e),
        };
        std::future::ready(answer)
    }

    fn list_roots(
        &self,
        input: Input<ListRootsRequestParams>,
    ) -> impl Future<Output = Result<ListRootsResult>> + Send {
        let answer = match self.shared.lookup(input.key(), &InputRequest::list_roots()) {
            Ok(Lookup::Fixed(answer)) => match *answer {
                InputResponse::ListRoots(answer) => Ok(answer),
                _ => Err(mismatch()),
            },
            Ok(_) => Err(mismatch()),
            Err(e) => Err(e),
        };
        std::future::ready(answer)
    }
}
