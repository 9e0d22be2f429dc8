//! Prompts: registration, return types, and the erased handler the registry stores.

use std::fmt::Display;

use arctern_types::meta::JsonObject;
use arctern_types::prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
use serde_json::Value;

use super::entry::{Convert, Entry, HandlerError, Kind, erase};
use super::handler_fn::HandlerFn;
use crate::Outcome;
use crate::server::extract::{MrtrStyle, Signature};
use crate::server::handler::HandlerResult;

/// What a prompt handler returns, turned into a `prompts/get` result.
///
/// Implemented for [`GetPromptResult`], `Vec<PromptMessage>`, [`PromptMessage`], `String` (one
/// user message), `Outcome<GetPromptResult>` (the manual multi round-trip form), and
/// `Result<T, E>` for any `E: Display` (`anyhow::Error` included): an
/// [`ErrorObject`](crate::ErrorObject) is sent as the JSON-RPC error it is, any other error as
/// `-32603` with a generic message (the real one is logged).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt handler",
    label = "not a prompt result",
    note = "a prompt handler returns `String`, `PromptMessage`, `Vec<PromptMessage>`, `GetPromptResult`, `Outcome<GetPromptResult>`, or a `Result` of one of them with any `E: Display` (such as `anyhow::Error`)"
)]
pub trait IntoPromptResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>>;

    /// Declares a multi round-trip form, at registration.
    fn describe(describe: &mut Signature) {
        let _ = describe;
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(Outcome::Complete(GetPromptResult::new(self)))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(Outcome::Complete(GetPromptResult::new(vec![self])))
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(Outcome::Complete(GetPromptResult::new(vec![
            PromptMessage::user_text(self),
        ])))
    }
}

impl IntoPromptResult for Outcome<GetPromptResult> {
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        Ok(self)
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Manual, "the Outcome return type");
    }
}

impl<T, E> IntoPromptResult for Result<T, E>
where
    T: IntoPromptResult,
    E: Display + Send + 'static,
{
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        match self {
            Ok(t) => t.into_prompt_result(),
            Err(e) => Err(HandlerError::of(e).into_protocol("prompt")),
        }
    }

    fn describe(describe: &mut Signature) {
        T::describe(describe);
    }
}

/// Describes a prompt beyond its name and description.
#[derive(Debug, Clone)]
pub struct PromptSpec {
    pub(crate) prompt: Prompt,
    pub(crate) explicit_arguments: bool,
    pub(crate) scopes: Vec<String>,
}

impl PromptSpec {
    common_setters!(prompt);

    /// A prompt called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let mut prompt = Prompt::new(name, "");
        prompt.description = None;
        PromptSpec {
            prompt,
            explicit_arguments: false,
            scopes: Vec::new(),
        }
    }

    /// Explicit arguments, instead of those derived from the handler's `Args`.
    pub fn arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.prompt.arguments = Some(arguments);
        self.explicit_arguments = true;
        self
    }
}

/// Prompts: a kind of registered handler.
pub(crate) struct Prompts;

impl Kind for Prompts {
    type Def = Prompt;
    type Result = GetPromptResult;
}

impl<T: IntoPromptResult> Convert<Prompts> for T {
    fn convert(
        self,
        _target: &str,
        _mime: Option<&str>,
    ) -> HandlerResult<Outcome<GetPromptResult>> {
        self.into_prompt_result()
    }

    fn describe(signature: &mut Signature) {
        <T as IntoPromptResult>::describe(signature);
    }
}

pub(crate) fn prompt_entry<H, T, S>(
    spec: PromptSpec,
    handler: H,
) -> Result<Entry<Prompts, S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoPromptResult,
    T: 'static,
    S: Send + 'static,
{
    let name = spec.prompt.name.clone();
    if let Err(why) = super::validate_name(&name) {
        return Err(format!("prompt {name:?}: {why}"));
    }
    super::scopes::check_declared(&spec.scopes, &format!("prompt {name:?}"))?;
    let (handler, signature) = erase::<Prompts, _, _, _>(&format!("prompt {name:?}"), handler)?;
    let asks = signature.uses_dependency_form();
    let mut prompt = spec.prompt;
    if !spec.explicit_arguments
        && let Some(schema) = &signature.input_schema
    {
        let arguments = arguments_from_schema(schema);
        prompt.arguments = (!arguments.is_empty()).then_some(arguments);
    }
    Ok(Entry {
        def: prompt,
        handler,
        asks,
        scopes: spec.scopes.into(),
    })
}

/// Prompt arguments from the properties of an object schema.
fn arguments_from_schema(schema: &JsonObject) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, prop)| {
            let mut arg = PromptArgument::new(name.clone());
            arg.description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            arg.title = prop.get("title").and_then(Value::as_str).map(str::to_owned);
            arg.required = Some(required.contains(&name.as_str()));
            arg
        })
        .collect()
}
