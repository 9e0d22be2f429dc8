//! Prompts: registration, return types, and the erased handler the registry stores.

use std::marker::PhantomData;
use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::meta::JsonObject;
use arctern_types::prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
use serde_json::Value;

use super::extract::{CallParts, Describe, Form};
use super::handler_fn::{BoxFuture, HandlerFn, Run};
use crate::server::handler::HandlerResult;
use crate::server::outcome::Outcome;

/// What a prompt handler returns, turned into a `prompts/get` result.
///
/// Implemented for [`GetPromptResult`], `Vec<PromptMessage>`, [`PromptMessage`], `String` (one
/// user message), `Outcome<GetPromptResult>` (the manual multi round-trip form), and
/// `Result<T, E>` where `E` converts into a JSON-RPC error.
pub trait IntoPromptResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>>;

    /// Declares a multi round-trip form, at registration.
    fn describe(describe: &mut Describe) {
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

    fn describe(describe: &mut Describe) {
        describe.form(Form::Manual, "the Outcome return type");
    }
}

impl<T, E> IntoPromptResult for Result<T, E>
where
    T: IntoPromptResult,
    E: Into<ErrorObject> + Send + 'static,
{
    fn into_prompt_result(self) -> HandlerResult<Outcome<GetPromptResult>> {
        match self {
            Ok(t) => t.into_prompt_result(),
            Err(e) => Err(e.into()),
        }
    }

    fn describe(describe: &mut Describe) {
        T::describe(describe);
    }
}

/// Describes a prompt beyond its name and description.
#[derive(Debug, Clone)]
pub struct PromptSpec {
    pub(crate) prompt: Prompt,
    pub(crate) explicit_arguments: bool,
}

impl PromptSpec {
    /// A prompt called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let mut prompt = Prompt::new(name, "");
        prompt.description = None;
        PromptSpec {
            prompt,
            explicit_arguments: false,
        }
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Prompt `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.prompt.meta = Some(meta);
        self
    }

    /// Explicit arguments, instead of those derived from the handler's `Args`.
    pub fn arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.prompt.arguments = Some(arguments);
        self.explicit_arguments = true;
        self
    }
}

impl<S> Clone for PromptEntry<S> {
    fn clone(&self) -> Self {
        PromptEntry {
            prompt: self.prompt.clone(),
            handler: self.handler.clone(),
            asks: self.asks,
        }
    }
}

pub(crate) struct PromptEntry<S> {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<dyn ErasedPrompt<S>>,
    /// Asks typed questions, whose answers are pinned in sealed request state.
    pub(crate) asks: bool,
}

pub(crate) trait ErasedPrompt<S>: Send + Sync {
    fn call(
        &self,
        parts: CallParts,
        state: S,
    ) -> BoxFuture<HandlerResult<Outcome<GetPromptResult>>>;
}

struct PromptFn<H, T> {
    handler: H,
    _marker: PhantomData<fn() -> T>,
}

impl<H, T, S> ErasedPrompt<S> for PromptFn<H, T>
where
    H: HandlerFn<T, S>,
    H::Output: IntoPromptResult,
    S: Send + 'static,
{
    fn call(
        &self,
        parts: CallParts,
        state: S,
    ) -> BoxFuture<HandlerResult<Outcome<GetPromptResult>>> {
        let run = self.handler.clone().run(parts, state);
        Box::pin(async move {
            match run.await.0 {
                Run::Done(out) => out.into_prompt_result(),
                Run::Pending(parts) => {
                    let CallParts { ctx, input, .. } = parts;
                    input.finish_round(&ctx, None, |msg| Err(ErrorObject::invalid_params(msg)))
                }
                Run::Interrupted(parts, interrupt) => {
                    let CallParts { ctx, input, .. } = parts;
                    input.finish_round(&ctx, Some(interrupt), |msg| {
                        Err(ErrorObject::invalid_params(msg))
                    })
                }
                Run::Rejected(r) => Err(r.into_error()),
            }
        })
    }
}

pub(crate) fn prompt_entry<H, T, S>(spec: PromptSpec, handler: H) -> Result<PromptEntry<S>, String>
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
    let mut describe = Describe::default();
    H::describe_params(&mut describe);
    <H::Output as IntoPromptResult>::describe(&mut describe);
    let describe = describe.finish(&format!("prompt {name:?}"))?;
    let asks = describe.uses_dependency_form();
    let mut prompt = spec.prompt;
    if !spec.explicit_arguments
        && let Some(schema) = &describe.input_schema
    {
        let arguments = arguments_from_schema(schema);
        prompt.arguments = (!arguments.is_empty()).then_some(arguments);
    }
    Ok(PromptEntry {
        prompt,
        handler: Arc::new(PromptFn {
            handler,
            _marker: PhantomData,
        }),
        asks,
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
