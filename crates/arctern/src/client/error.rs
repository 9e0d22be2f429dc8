//! The typed details behind client errors of kind
//! [`ErrorKind::InputRequired`](crate::ErrorKind::InputRequired) and
//! [`ErrorKind::Version`](crate::ErrorKind::Version).
//!
//! [`crate::Error`] stays opaque; these types ride along as its
//! [`source`](std::error::Error::source) and are read back with [`InputRequiredError::of`]
//! and [`VersionError::of`].

use std::fmt;

use arctern_types::mrtr::InputRequiredResult;

/// Why a multi round-trip request did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputRequiredReason {
    /// The server still asked for input after the round cap.
    RoundsExceeded {
        /// The cap that was reached.
        max_rounds: u32,
    },
    /// The overall deadline of the call passed between or during rounds.
    DeadlineExceeded,
    /// The server asked for something this client has no handler (or no declared
    /// capability) for. Nothing was answered.
    NoHandler {
        /// The key of the input request.
        key: String,
        /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`), with
        /// the missing feature when a handler exists but does not support it (URL mode,
        /// sampling with tools).
        method: String,
    },
    /// A handler failed while answering an input request; the handler's error is the
    /// [`source`](std::error::Error::source).
    HandlerFailed {
        /// The key of the input request.
        key: String,
    },
    /// The server answered `input_required` with neither input requests nor state.
    Malformed,
    /// The server answered with a `resultType` this client does not know.
    UnknownResultType(String),
    /// The server answered `input_required` to a method that cannot return it.
    NotAllowed(String),
    /// A round asked more questions than the client answers in one round
    /// ([`ClientBuilder::max_input_requests`](super::ClientBuilder::max_input_requests)).
    /// Nothing was answered.
    TooManyInputRequests {
        /// How many the round asked.
        count: usize,
        /// The cap.
        max: usize,
    },
}

/// The details of an [`ErrorKind::InputRequired`](crate::ErrorKind::InputRequired) error
/// (or of an [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) that hit a call's overall
/// deadline): why the flow stopped, and the last `input_required` result so that the caller
/// can resume it by hand (see [`Continuation`](super::Continuation)).
///
/// ```
/// # async fn run(client: arctern::client::Client) {
/// use arctern::client::InputRequiredError;
/// use serde_json::json;
///
/// match client.call_tool("provision", json!({"name": "orders"})).await {
///     Ok(result) => println!("{result:?}"),
///     Err(e) => match InputRequiredError::of(&e).and_then(|d| d.last_result()) {
///         Some(last) => println!("stopped at {:?}", last.input_requests),
///         None => println!("failed: {e}"),
///     },
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct InputRequiredError {
    reason: InputRequiredReason,
    last: Option<Box<InputRequiredResult>>,
    rounds: u32,
    source: Option<crate::Error>,
}

impl InputRequiredError {
    pub(crate) fn new(
        reason: InputRequiredReason,
        last: Option<InputRequiredResult>,
        rounds: u32,
    ) -> Self {
        InputRequiredError {
            reason,
            last: last.map(Box::new),
            rounds,
            source: None,
        }
    }

    pub(crate) fn with_source(mut self, source: crate::Error) -> Self {
        self.source = Some(source);
        self
    }

    /// The details of `error`, if it carries any.
    pub fn of(error: &crate::Error) -> Option<&InputRequiredError> {
        std::error::Error::source(error)?.downcast_ref()
    }

    /// Why the flow stopped.
    pub fn reason(&self) -> &InputRequiredReason {
        &self.reason
    }

    /// The last `input_required` result the server sent, if the flow got that far.
    pub fn last_result(&self) -> Option<&InputRequiredResult> {
        self.last.as_deref()
    }

    /// How many `input_required` results the server sent in this call.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    pub(crate) fn into_error(self, kind: crate::ErrorKind) -> crate::Error {
        let message = match kind {
            crate::ErrorKind::Timeout => "the call's deadline passed",
            _ => "the multi round-trip request did not complete",
        };
        crate::Error::new(kind, message).with_source(self)
    }
}

impl fmt::Display for InputRequiredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            InputRequiredReason::RoundsExceeded { max_rounds } => write!(
                f,
                "the server still asked for input after {max_rounds} rounds; raise max_rounds \
                 or resume by hand from the last result"
            ),
            InputRequiredReason::DeadlineExceeded => {
                write!(f, "the deadline passed after {} rounds", self.rounds)
            }
            InputRequiredReason::NoHandler { key, method } => write!(
                f,
                "the server asked for {method} (key {key:?}) and this client has no handler for it"
            ),
            InputRequiredReason::HandlerFailed { key } => {
                write!(f, "the handler for input request {key:?} failed")?;
                if let Some(source) = &self.source {
                    write!(f, ": {source}")?;
                }
                Ok(())
            }
            InputRequiredReason::Malformed => write!(
                f,
                "the server returned input_required with neither inputRequests nor requestState"
            ),
            InputRequiredReason::UnknownResultType(t) => {
                write!(f, "the server returned an unknown resultType {t:?}")
            }
            InputRequiredReason::NotAllowed(method) => {
                write!(f, "the server returned input_required to {method}")
            }
            InputRequiredReason::TooManyInputRequests { count, max } => write!(
                f,
                "the server asked {count} questions in one round and this client answers at \
                 most {max}; nothing was answered (raise max_input_requests to allow more)"
            ),
        }
    }
}

impl std::error::Error for InputRequiredError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// The details of an [`ErrorKind::Version`](crate::ErrorKind::Version) error: the client and
/// the server share no protocol version this client can speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionError {
    pub(crate) server: Vec<String>,
    pub(crate) client: Vec<String>,
    pub(crate) note: Option<String>,
}

impl VersionError {
    /// The details of `error`, if it carries any.
    pub fn of(error: &crate::Error) -> Option<&VersionError> {
        std::error::Error::source(error)?.downcast_ref()
    }

    /// The versions the server said it supports (empty when it did not say).
    pub fn server_versions(&self) -> &[String] {
        &self.server
    }

    /// The versions this client offered.
    pub fn client_versions(&self) -> &[String] {
        &self.client
    }

    pub(crate) fn into_error(self) -> crate::Error {
        crate::Error::new(
            crate::ErrorKind::Version,
            "no protocol version in common with the server",
        )
        .with_source(self)
    }
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server supports {:?}, this client {:?}",
            self.server, self.client
        )?;
        if let Some(note) = &self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

impl std::error::Error for VersionError {}
