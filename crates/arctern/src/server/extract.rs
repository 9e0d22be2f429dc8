//! Extractors: the parameters a tool, prompt or resource handler can take.
//!
//! A handler is a plain async function; each parameter implements [`FromCall`] and is built
//! from the call before the body runs. [`Args`] decodes the arguments (tool arguments, prompt
//! arguments, or the variables a resource template matched), [`State`] clones the server's
//! shared state, and [`RequestContext`] gives the request itself (progress, logging, the
//! client's capabilities, cancellation). The multi round-trip extractors (answers to
//! questions) live in [`mrtr`](super::mrtr).
//!
//! To write an extractor of your own, implement [`FromCall`]: build the value from the
//! [`CallParts`], and declare at registration what it needs in the [`Signature`].

use std::borrow::Cow;
use std::fmt;

use arctern_types::ErrorObject;
use arctern_types::meta::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::server::context::RequestContext;
use crate::server::mrtr::InputState;

/// Which kind of call a handler serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallKind {
    /// `tools/call`.
    Tool,
    /// `prompts/get`.
    Prompt,
    /// `resources/read`.
    Resource,
}

/// Everything extractors read from: the request context, the target, the arguments, and the
/// multi round-trip input of this round.
pub struct CallParts {
    pub(crate) ctx: RequestContext,
    pub(crate) kind: CallKind,
    pub(crate) target: String,
    pub(crate) arguments: Value,
    pub(crate) input: InputState,
    /// The task the call becomes if its work does not finish at once (a task tool, and a
    /// client that declared the extension).
    pub(crate) task: Option<crate::server::tasks::TaskSeat>,
}

impl fmt::Debug for CallParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallParts")
            .field("kind", &self.kind)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl CallParts {
    pub(crate) fn new(
        ctx: RequestContext,
        kind: CallKind,
        target: String,
        arguments: Option<JsonObject>,
        input: InputState,
    ) -> Self {
        // Built before the context moves in: the input reads the opened request state.
        CallParts {
            ctx,
            kind,
            target,
            arguments: Value::Object(arguments.unwrap_or_default()),
            input,
            task: None,
        }
    }

    /// The request context.
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The kind of call.
    pub fn kind(&self) -> CallKind {
        self.kind
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The arguments as a JSON object (tool arguments, prompt arguments, or the variables a
    /// resource template matched).
    pub fn arguments(&self) -> &JsonObject {
        match &self.arguments {
            Value::Object(map) => map,
            _ => unreachable!("arguments are always an object"),
        }
    }

    /// Decodes the arguments into `T`.
    pub fn arguments_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.arguments)
    }
}

/// Why a handler could not run: answered as an `isError` tool result, or a `-32602` error for
/// prompts and resources.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    message: String,
    // Boxed: rejections travel in `Result`s and step enums; keep them small.
    error: Option<Box<ErrorObject>>,
}

impl Rejection {
    /// A rejection with a message for the client (and, for tools, the model).
    pub fn new(message: impl Into<String>) -> Self {
        Rejection {
            message: message.into(),
            error: None,
        }
    }

    /// A rejection answered with this JSON-RPC error, for every kind of call (for example
    /// `-32021` when the client lacks a capability a question needs).
    pub fn protocol(error: ErrorObject) -> Self {
        Rejection {
            message: error.message.to_string(),
            error: Some(Box::new(error)),
        }
    }

    /// The JSON-RPC error this rejection is answered with, if it is not an in-band one.
    pub fn protocol_error(&self) -> Option<&ErrorObject> {
        self.error.as_deref()
    }

    /// The JSON-RPC error to answer a prompt or resource call with.
    pub(crate) fn into_error(self) -> ErrorObject {
        self.error
            .map_or_else(|| ErrorObject::invalid_params(self.message), |e| *e)
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The result of one extractor.
#[derive(Debug)]
pub enum Extracted<T> {
    /// The value is available.
    Ready(T),
    /// The value needs input from the client; the extractor has queued its question for this
    /// round.
    Pending,
    /// The call cannot proceed.
    Rejected(Rejection),
}

/// Which multi round-trip style an extractor or return type belongs to. The two styles
/// cannot be mixed in one handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MrtrStyle {
    /// Questions answered through extractors (`Answer`, `AnswerOutcome`, `Questions`).
    Dependency,
    /// The handler reads `inputResponses` / `requestState` itself and returns an
    /// `Outcome`.
    Manual,
}

/// What a handler's parameters and return type declare, gathered when it is registered.
#[derive(Debug, Default)]
pub struct Signature {
    pub(crate) input_schema: Option<JsonObject>,
    pub(crate) output_schema: Option<JsonObject>,
    pub(crate) styles: Vec<(MrtrStyle, &'static str)>,
    /// The argument types questions decode, when no parameter declares the arguments.
    pub(crate) question_args: Vec<(&'static str, JsonObject)>,
    /// The keys questions declared, with the question type that declared each.
    pub(crate) question_keys: Vec<(Cow<'static, str>, &'static str)>,
    pub(crate) errors: Vec<String>,
}

impl Signature {
    /// Declares the JSON Schema of the arguments (at most one extractor may).
    pub fn arguments_schema(&mut self, schema: JsonObject, by: &'static str) {
        if self.input_schema.is_some() {
            self.errors.push(format!(
                "more than one parameter decodes the arguments ({by})"
            ));
        } else {
            self.input_schema = Some(schema);
        }
    }

    /// Declares the JSON Schema of the arguments a question reads (its `Args`). It becomes
    /// the input schema when no parameter declares one; questions reading the arguments as
    /// different types then need an explicit [`Args`] parameter.
    pub fn question_arguments_schema(&mut self, schema: JsonObject, type_name: &'static str) {
        if !self.question_args.iter().any(|(t, _)| *t == type_name) {
            self.question_args.push((type_name, schema));
        }
    }

    /// Declares the key a question type is always asked under: two different question
    /// types on one key are a registration error (one type asked twice is one question).
    pub fn question_key(&mut self, key: impl Into<Cow<'static, str>>, question: &'static str) {
        let key = key.into();
        match self.question_keys.iter().find(|(k, _)| *k == key) {
            Some((_, other)) if *other != question => self.errors.push(format!(
                "two questions use the key {key:?} ({other} and {question}); give each its own key"
            )),
            Some(_) => {}
            None => self.question_keys.push((key, question)),
        }
    }

    /// Declares the JSON Schema of the structured output.
    pub fn output_schema(&mut self, schema: JsonObject) {
        self.output_schema = Some(schema);
    }

    /// Records a registration error.
    pub fn error(&mut self, message: impl Into<String>) {
        self.errors.push(message.into());
    }

    /// Declares that an extractor or return type belongs to a multi round-trip style.
    pub fn style(&mut self, style: MrtrStyle, by: &'static str) {
        self.styles.push((style, by));
    }

    /// Whether the handler asks typed questions (needs sealed request state).
    pub(crate) fn uses_dependency_form(&self) -> bool {
        self.styles.iter().any(|(f, _)| *f == MrtrStyle::Dependency)
    }

    /// Checks the collected declarations: the two multi round-trip forms cannot be mixed.
    pub(crate) fn finish(mut self, what: &str) -> Result<Self, String> {
        let dependency = self
            .styles
            .iter()
            .find(|(f, _)| *f == MrtrStyle::Dependency);
        let manual = self.styles.iter().find(|(f, _)| *f == MrtrStyle::Manual);
        if let (Some((_, d)), Some((_, m))) = (dependency, manual) {
            self.errors.push(format!(
                "it mixes the two multi round-trip forms: {d} asks through extractors, while {m} handles input by hand; use one form per handler"
            ));
        }
        if self.input_schema.is_none() {
            match self.question_args.as_slice() {
                [] => {}
                [(_, schema)] => self.input_schema = Some(schema.clone()),
                [(a, _), (b, _), ..] => self.errors.push(format!(
                    "its questions read the arguments as different types ({a} and {b}); take an Args<T> parameter to declare the arguments"
                )),
            }
        }
        if self.errors.is_empty() {
            Ok(self)
        } else {
            Err(format!("{what}: {}", self.errors.join("; ")))
        }
    }
}

/// A handler parameter built from the call.
///
/// `S` is the server's shared state type (see [`State`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a tool, prompt or resource handler",
    label = "not an extractor",
    note = "handler parameters are extractors: `Args<T>`, `RawArgs`, `State<S>`, `RequestContext`, or the multi round-trip ones in `arctern::server::mrtr` (`Answer<Q>`, `AnswerOutcome<Q>`, `Questions`...)",
    note = "`State<S>` needs the server's state type: `McpServer::with_state(name, state)`"
)]
pub trait FromCall<S>: Sized {
    /// Builds the value, or queues a question, or rejects the call.
    fn from_call(parts: &mut CallParts, state: &S) -> Extracted<Self>;

    /// Declares what this extractor needs, when the handler is registered.
    fn describe(describe: &mut Signature) {
        let _ = describe;
    }
}

/// The arguments, decoded into `T`.
///
/// For tools, `T`'s JSON Schema (from `schemars`) becomes the tool's `inputSchema`; for
/// prompts, its properties become the prompt's arguments; for resource templates, `T` holds
/// the matched template variables. Arguments that do not decode reject the call (an `isError`
/// result for tools, `-32602` otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Args<T>(pub T);

impl<T, S> FromCall<S> for Args<T>
where
    T: DeserializeOwned + schemars::JsonSchema,
{
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        match T::deserialize(&parts.arguments) {
            Ok(t) => Extracted::Ready(Args(t)),
            Err(e) => Extracted::Rejected(Rejection::new(format!(
                "Invalid arguments for {}: {e}",
                parts.target
            ))),
        }
    }

    fn describe(describe: &mut Signature) {
        describe.arguments_schema(schema_for::<T>(), "Args");
    }
}

/// The server's shared state, cloned for the call. Give it with
/// [`McpServer::with_state`](super::McpServer::with_state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<S>(pub S);

impl<S: Clone> FromCall<S> for State<S> {
    fn from_call(_parts: &mut CallParts, state: &S) -> Extracted<Self> {
        Extracted::Ready(State(state.clone()))
    }
}

impl<S> FromCall<S> for RequestContext {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        Extracted::Ready(parts.ctx.clone())
    }
}

/// The raw arguments object, undecoded (no `inputSchema` is derived from it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawArgs(pub JsonObject);

impl<S> FromCall<S> for RawArgs {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        Extracted::Ready(RawArgs(parts.arguments().clone()))
    }
}

/// The JSON Schema of `T` as an inline object: 2020-12, no `$schema`. Subschemas are
/// inlined; a recursive type keeps its `$defs`, which its `$ref`s point into.
pub fn schema_for<T: schemars::JsonSchema>() -> JsonObject {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    match serde_json::to_value(&schema) {
        Ok(Value::Object(mut map)) => {
            if !refers(&Value::Object(map.clone())) {
                map.remove("$defs");
            }
            map
        }
        Ok(Value::Bool(true)) | Ok(_) | Err(_) => JsonObject::new(),
    }
}

/// Whether a schema holds a `$ref` anywhere.
fn refers(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "$ref" || (k != "$defs" && refers(v))),
        Value::Array(items) => items.iter().any(refers),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        name: String,
        children: Vec<Tree>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Flat {
        inner: Inner,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    /// Every `$ref` of `schema` resolves against its root.
    fn refs_resolve(root: &Value, node: &Value) -> bool {
        match node {
            Value::Object(map) => map.iter().all(|(k, v)| {
                if k == "$ref" {
                    let pointer = v.as_str().and_then(|r| r.strip_prefix('#')).unwrap_or("?");
                    root.pointer(pointer).is_some()
                } else {
                    refs_resolve(root, v)
                }
            }),
            Value::Array(items) => items.iter().all(|v| refs_resolve(root, v)),
            _ => true,
        }
    }

    #[test]
    fn a_recursive_type_keeps_the_definitions_its_refs_point_to() {
        let schema = Value::Object(schema_for::<Tree>());
        assert!(refers(&schema), "{schema}");
        assert!(refs_resolve(&schema, &schema), "dangling $ref in {schema}");
    }

    #[test]
    fn a_plain_type_is_inlined_without_definitions() {
        let schema = schema_for::<Flat>();
        assert!(!schema.contains_key("$defs"));
        assert!(!refers(&Value::Object(schema.clone())));
        assert_eq!(
            schema["properties"]["inner"]["properties"]["n"]["type"],
            "integer"
        );
    }
}
