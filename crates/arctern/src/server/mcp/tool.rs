//! Tools: registration, return types, and the erased handler the registry stores.

use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use arctern_types::content::ContentBlock;
use arctern_types::meta::JsonObject;
use arctern_types::tools::{CallToolResult, Tool, ToolAnnotations};
use serde::Serialize;

use super::extract::{CallParts, Describe, Form, schema_for};
use super::handler_fn::{BoxFuture, HandlerFn, Run};
use crate::server::handler::HandlerResult;
use crate::server::mirror::MirroredParam;
use crate::server::outcome::Outcome;

/// What a tool handler returns, turned into a `tools/call` result.
///
/// Implemented for [`CallToolResult`], `String`, `&'static str`, `()`, [`ContentBlock`],
/// `Vec<ContentBlock>`, [`Json<T>`] (structured output with an `outputSchema`), `Result<T, E>`
/// (an `Err` becomes an `isError` result with the error's message, so the model can see it
/// and correct itself), and `Outcome<CallToolResult>` (the manual multi round-trip form).
pub trait IntoToolResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>>;

    /// Declares an output schema or a multi round-trip form, at registration.
    fn describe(describe: &mut Describe) {
        let _ = describe;
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::new(Vec::new())))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::new(vec![self])))
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::new(self)))
    }
}

impl IntoToolResult for Outcome<CallToolResult> {
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(self)
    }

    fn describe(describe: &mut Describe) {
        describe.form(Form::Manual, "the Outcome return type");
    }
}

impl<T, E> IntoToolResult for Result<T, E>
where
    T: IntoToolResult,
    E: Display + Send + 'static,
{
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        match self {
            Ok(t) => t.into_tool_result(),
            Err(e) => Ok(Outcome::Complete(CallToolResult::error(e.to_string()))),
        }
    }

    fn describe(describe: &mut Describe) {
        T::describe(describe);
    }
}

/// Structured tool output: `structuredContent` holds `T` as JSON, a text block holds the same
/// JSON serialized (for clients that only read text), and the tool's `outputSchema` is `T`'s
/// JSON Schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T> IntoToolResult for Json<T>
where
    T: Serialize + schemars::JsonSchema + Send + 'static,
{
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>> {
        match serde_json::to_value(&self.0) {
            Ok(value) => Ok(Outcome::Complete(CallToolResult::structured(value))),
            Err(e) => Ok(Outcome::Complete(CallToolResult::error(format!(
                "The tool's output could not be serialized: {e}"
            )))),
        }
    }

    fn describe(describe: &mut Describe) {
        describe.output_schema(schema_for::<T>());
    }
}

/// Describes a tool beyond its name and description: title, annotations, icons, `_meta`, or
/// an explicit input schema.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub(crate) tool: Tool,
    pub(crate) explicit_input_schema: bool,
}

impl ToolSpec {
    /// A tool called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let mut tool = Tool::new(name, "", JsonObject::new());
        tool.description = None;
        ToolSpec {
            tool,
            explicit_input_schema: false,
        }
    }

    /// The description the model reads.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Behaviour hints (read-only, destructive, idempotent, open-world).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Tool `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }

    /// An explicit `inputSchema`, instead of the one derived from the handler's [`Args`]
    /// (useful with [`RawArgs`]).
    ///
    /// [`Args`]: super::Args
    /// [`RawArgs`]: super::RawArgs
    pub fn input_schema(mut self, schema: JsonObject) -> Self {
        self.tool.input_schema = schema;
        self.explicit_input_schema = true;
        self
    }

    /// An explicit `outputSchema`.
    pub fn output_schema(mut self, schema: JsonObject) -> Self {
        self.tool.output_schema = Some(schema);
        self
    }
}

/// A tool as the registry stores it: its definition and its type-erased handler.
impl<S> Clone for ToolEntry<S> {
    fn clone(&self) -> Self {
        ToolEntry {
            tool: self.tool.clone(),
            handler: self.handler.clone(),
            asks: self.asks,
            mirrored: self.mirrored.clone(),
        }
    }
}

pub(crate) struct ToolEntry<S> {
    pub(crate) tool: Tool,
    pub(crate) handler: Arc<dyn ErasedTool<S>>,
    /// Asks typed questions, whose answers are pinned in sealed request state.
    pub(crate) asks: bool,
    /// The arguments mirrored into `Mcp-Param-*` headers, if any.
    pub(crate) mirrored: Option<Arc<[MirroredParam]>>,
}

pub(crate) trait ErasedTool<S>: Send + Sync {
    fn call(&self, parts: CallParts, state: S)
    -> BoxFuture<HandlerResult<Outcome<CallToolResult>>>;
}

struct ToolFn<H, T> {
    handler: H,
    _marker: PhantomData<fn() -> T>,
}

impl<H, T, S> ErasedTool<S> for ToolFn<H, T>
where
    H: HandlerFn<T, S>,
    H::Output: IntoToolResult,
    S: Send + 'static,
{
    fn call(
        &self,
        parts: CallParts,
        state: S,
    ) -> BoxFuture<HandlerResult<Outcome<CallToolResult>>> {
        let run = self.handler.clone().run(parts, state);
        Box::pin(async move {
            match run.await.0 {
                Run::Done(out) => out.into_tool_result(),
                Run::Pending(parts) => {
                    let CallParts { ctx, input, .. } = parts;
                    input.finish_round(&ctx, None, |msg| {
                        Ok(Outcome::Complete(CallToolResult::error(msg)))
                    })
                }
                Run::Interrupted(parts, interrupt) => {
                    let CallParts { ctx, input, .. } = parts;
                    input.finish_round(&ctx, Some(interrupt), |msg| {
                        Ok(Outcome::Complete(CallToolResult::error(msg)))
                    })
                }
                Run::Rejected(r) => match r.protocol_error() {
                    Some(e) => Err(e.clone()),
                    None => Ok(Outcome::Complete(CallToolResult::error(
                        r.message().to_owned(),
                    ))),
                },
            }
        })
    }
}

/// Builds the registry entry for a handler, deriving schemas from its extractors and return
/// type, and checking that it does not mix the two multi round-trip forms.
pub(crate) fn tool_entry<H, T, S>(spec: ToolSpec, handler: H) -> Result<ToolEntry<S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoToolResult,
    T: 'static,
    S: Send + 'static,
{
    let name = spec.tool.name.clone();
    if let Err(why) = super::validate_name(&name) {
        return Err(format!("tool {name:?}: {why}"));
    }
    let mut describe = Describe::default();
    H::describe_params(&mut describe);
    <H::Output as IntoToolResult>::describe(&mut describe);
    let describe = describe.finish(&format!("tool {name:?}"))?;
    let asks = describe.uses_dependency_form();
    let mut tool = spec.tool;
    if !spec.explicit_input_schema {
        let mut schema = describe.input_schema.unwrap_or_default();
        if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
            if schema.contains_key("type") {
                return Err(format!(
                    "tool {name:?}: the arguments type must be a struct (its JSON Schema must have type \"object\")"
                ));
            }
            schema.insert("type".into(), "object".into());
        }
        tool.input_schema = schema;
    }
    if tool.output_schema.is_none() {
        tool.output_schema = describe.output_schema;
    }
    // Clients drop a tool whose x-mcp-header annotations are invalid; refuse to offer one.
    let mirrored = arctern_types::headers::mirrored_params(&tool.input_schema)
        .map_err(|why| format!("tool {name:?}: {why}"))?;
    Ok(ToolEntry {
        tool,
        handler: Arc::new(ToolFn {
            handler,
            _marker: PhantomData,
        }),
        asks,
        mirrored: (!mirrored.is_empty()).then(|| mirrored.into()),
    })
}
