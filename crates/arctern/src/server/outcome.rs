//! The result of a method that may need input from the user.

use arctern_types::mrtr::InputRequiredResult;

/// What a `tools/call`, `prompts/get` or `resources/read` handler returns: a finished result,
/// or a request for input (a multi round-trip request round).
///
/// `Outcome<T>` converts from both `T` and [`InputRequiredResult`], so a handler can
/// `return Ok(result.into())` either way.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// Returned once per call and never stored, so the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Outcome<T> {
    /// The request is done.
    Complete(T),
    /// The client must answer the input requests (and/or echo the request state) and retry.
    InputRequired(InputRequiredResult),
}

impl<T> Outcome<T> {
    /// Whether this is a finished result.
    pub fn is_complete(&self) -> bool {
        matches!(self, Outcome::Complete(_))
    }

    /// The finished result, if there is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Outcome::Complete(t) => Some(t),
            Outcome::InputRequired(_) => None,
        }
    }

    /// The input request, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Outcome::Complete(_) => None,
            Outcome::InputRequired(r) => Some(r),
        }
    }

    /// Maps the finished result.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Complete(t) => Outcome::Complete(f(t)),
            Outcome::InputRequired(r) => Outcome::InputRequired(r),
        }
    }
}

impl<T> From<InputRequiredResult> for Outcome<T> {
    fn from(r: InputRequiredResult) -> Self {
        Outcome::InputRequired(r)
    }
}

macro_rules! outcome_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Outcome<$t> {
            fn from(t: $t) -> Self {
                Outcome::Complete(t)
            }
        }
    )*};
}

outcome_from!(
    arctern_types::tools::CallToolResult,
    arctern_types::prompts::GetPromptResult,
    arctern_types::resources::ReadResourceResult
);
