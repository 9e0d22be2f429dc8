//! Tools: registration, return types, and the erased handler the registry stores.

use std::fmt::Display;
use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::check::{CheckError, Checker};
use arctern_types::content::ContentBlock;
use arctern_types::meta::JsonObject;
use arctern_types::tools::{CallToolResult, Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::Value;

use super::entry::{Convert, Entry, HandlerError, Kind, erase};
use super::handler_fn::HandlerFn;
use crate::Outcome;
use crate::server::extract::{MrtrStyle, Rejection, Signature, schema_for};
use crate::server::handler::HandlerResult;
use crate::server::mirror::MirroredParam;
use crate::server::tasks::TaskSupport;

/// What a tool handler returns, turned into a `tools/call` result.
///
/// Implemented for [`CallToolResult`], `String`, `&'static str`, `()`, [`ContentBlock`],
/// `Vec<ContentBlock>`, [`Json<T>`] (structured output with an `outputSchema`), `Result<T, E>`
/// for any `E: Display` (`anyhow::Error` included: an `Err` becomes an `isError` result with
/// the error's message, so the model can see it and correct itself; an
/// [`ErrorObject`](crate::ErrorObject) is sent as the JSON-RPC error it is), and
/// `Outcome<CallToolResult>` (the manual multi round-trip form).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool handler",
    label = "not a tool result",
    note = "a tool handler returns `String`, `&'static str`, `()`, `ContentBlock`, `Vec<ContentBlock>`, `Json<T>`, `CallToolResult`, `Outcome<CallToolResult>`, or a `Result` of one of them with any `E: Display` (such as `anyhow::Error`)",
    note = "`Json<T>` needs `T: JsonSchema` from arctern's `schemars` (`arctern::schemars`, 1.x): a derive from another major version does not count"
)]
pub trait IntoToolResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_tool_result(self) -> HandlerResult<Outcome<CallToolResult>>;

    /// Declares an output schema or a multi round-trip form, at registration.
    fn describe(describe: &mut Signature) {
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

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Manual, "the Outcome return type");
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
            Err(e) => match HandlerError::of(e) {
                HandlerError::Protocol(object) => Err(object),
                HandlerError::Other(message) => {
                    Ok(Outcome::Complete(CallToolResult::error(message)))
                }
            },
        }
    }

    fn describe(describe: &mut Signature) {
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

    fn describe(describe: &mut Signature) {
        describe.output_schema(schema_for::<T>());
    }
}

/// How a tool call's arguments are checked against the tool's `inputSchema` before its
/// handler runs.
///
/// The schema a tool advertises is a promise: `#[schemars(range(min = 1, max = 100))]` on an
/// [`Args`](crate::server::extract::Args) field shows `"minimum": 1, "maximum": 100` to the
/// client, and the check makes the server keep it. The schema is compiled once, when the
/// tool is registered (see [`Checker`] for the keywords it checks; a schema using one it
/// cannot check is a registration error rather than a bound left unchecked), and every
/// call's arguments are checked against it before any extractor runs, on both eras and
/// every transport. The message names the argument and the problem, in the words the
/// answers to questions get: `Invalid arguments for count: steps: must be at most 100`.
///
/// Set it for the whole server with
/// [`McpServer::argument_check`](crate::server::McpServer::argument_check) and for one tool
/// with [`ToolSpec::argument_check`].
///
/// ```no_run
/// use arctern::server::extract::Args;
/// use arctern::server::{ArgumentCheck, McpServer, ToolSpec};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Count {
///     /// How many steps (1 to 100).
///     #[schemars(range(min = 1, max = 100))]
///     steps: u32,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::new("counter")
///     // `steps: 500` gets a tool error naming `steps`; the handler never sees it.
///     .tool("count", "Counts.", |Args(c): Args<Count>| async move { c.steps.to_string() })
///     // This tool checks its arguments itself.
///     .tool_spec(
///         ToolSpec::new("raw").argument_check(ArgumentCheck::Off),
///         |Args(c): Args<Count>| async move { c.steps.to_string() },
///     )
///     .build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArgumentCheck {
    /// Checked; arguments that do not fit get a tool error (`isError: true`) that names
    /// the argument and the problem. This is what the specification asks of input
    /// validation errors (tool execution errors, not protocol errors), so that the model
    /// reads the message and corrects its call. The default.
    #[default]
    ToolError,
    /// Checked; arguments that do not fit get the JSON-RPC error `-32602` (Invalid params),
    /// whose message names the argument and whose `data` is
    /// `{"argument": "steps", "problem": "must be at most 100"}`: for servers whose clients
    /// are programs rather than models.
    InvalidParams,
    /// Not checked: the handler's extractors see the arguments as they came (`Args<T>`
    /// still decodes them with serde, and a value that does not decode is a tool error).
    Off,
}

/// A tool's compiled `inputSchema`, or why it could not be compiled.
#[derive(Debug, Clone)]
pub(crate) enum ArgumentsChecker {
    /// The schema, compiled at registration.
    Compiled(Arc<Checker>),
    /// The tool checks nothing (its own setting is [`ArgumentCheck::Off`]).
    Off,
    /// The schema uses what the checker cannot check: registering the tool fails unless the
    /// check is off for it.
    Uncompiled(String),
}

impl ToolDef {
    /// The check that applies to this tool on a server whose setting is `server`.
    fn argument_check(&self, server: ArgumentCheck) -> ArgumentCheck {
        self.argument_check.unwrap_or(server)
    }

    /// Why the tool cannot be registered on a server whose setting is `server`, if it
    /// cannot: its schema cannot be checked and the check is on for it.
    pub(crate) fn unchecked(&self, server: ArgumentCheck) -> Option<String> {
        match (&self.checker, self.argument_check(server)) {
            (_, ArgumentCheck::Off) => None,
            (ArgumentsChecker::Uncompiled(why), _) => Some(format!(
                "tool {:?}: its inputSchema cannot be checked: {why}; turn the argument check off for it with ToolSpec::argument_check(ArgumentCheck::Off)",
                self.tool.name
            )),
            _ => None,
        }
    }

    /// Checks a call's arguments (absent arguments are `{}`); `Some` is the answer to give
    /// instead of running the handler.
    pub(crate) fn refuse_arguments(
        &self,
        server: ArgumentCheck,
        arguments: &mut Option<JsonObject>,
    ) -> Option<HandlerResult<Outcome<CallToolResult>>> {
        let mode = self.argument_check(server);
        let ArgumentsChecker::Compiled(checker) = &self.checker else {
            return None;
        };
        if mode == ArgumentCheck::Off {
            return None;
        }
        // Checked in place: the map goes into a `Value` for the checker and back out.
        let value = Value::Object(arguments.take().unwrap_or_default());
        let verdict = checker.check(&value);
        if let Value::Object(map) = value {
            *arguments = Some(map);
        }
        verdict.err().map(|e| self.refuse(mode, &e))
    }

    fn refuse(
        &self,
        mode: ArgumentCheck,
        e: &CheckError,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let message = format!("Invalid arguments for {}: {e}", self.tool.name);
        match mode {
            ArgumentCheck::InvalidParams => Err(ErrorObject::invalid_params(message)
                .with_data(serde_json::json!({"argument": e.field(), "problem": e.problem()}))),
            _ => Ok(Outcome::Complete(CallToolResult::error(message))),
        }
    }
}

/// Describes a tool beyond its name and description: title, annotations, icons, `_meta`, or
/// an explicit input schema.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub(crate) tool: Tool,
    pub(crate) explicit_input_schema: bool,
    pub(crate) task: Option<TaskSupport>,
    pub(crate) scopes: Vec<String>,
    pub(crate) argument_check: Option<ArgumentCheck>,
    /// Its MCP Apps view and visibility, written into `_meta.ui` at registration.
    #[cfg(feature = "apps")]
    pub(crate) ui: Option<arctern_types::apps::UiToolMeta>,
}

impl ToolSpec {
    common_setters!(tool);

    /// A tool called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let mut tool = Tool::new(name, "", JsonObject::new());
        tool.description = None;
        ToolSpec {
            tool,
            explicit_input_schema: false,
            task: None,
            scopes: Vec::new(),
            argument_check: None,
            #[cfg(feature = "apps")]
            ui: None,
        }
    }

    /// Renders the tool's result in the MCP Apps view at `resource_uri` (a `ui://` URI
    /// registered with [`McpServer::view`](crate::server::McpServer::view)): written as
    /// `_meta.ui.resourceUri`, and by default under the flat `ui/resourceUri` key too (see
    /// [`McpServer::apps_flat_key`](crate::server::McpServer::apps_flat_key)). The server
    /// checks when it is built that the view exists. The tool's text result is still what
    /// the model, and every host without Apps, sees.
    #[cfg(feature = "apps")]
    pub fn ui(mut self, resource_uri: impl Into<String>) -> Self {
        self.ui.get_or_insert_default().resource_uri = Some(resource_uri.into());
        self
    }

    /// Who may use the tool (`_meta.ui.visibility`): [`Visibility::MODEL`] (the agent),
    /// [`Visibility::APP`] (a view of this server), or both, the default.
    /// `[Visibility::APP]` makes an app-only tool, which hosts keep from the model.
    ///
    /// [`Visibility::MODEL`]: arctern_types::apps::Visibility::MODEL
    /// [`Visibility::APP`]: arctern_types::apps::Visibility::APP
    #[cfg(feature = "apps")]
    pub fn visibility(
        mut self,
        visibility: impl IntoIterator<Item = arctern_types::apps::Visibility>,
    ) -> Self {
        self.ui.get_or_insert_default().visibility = Some(visibility.into_iter().collect());
        self
    }

    /// How this tool's arguments are checked against its `inputSchema`, whatever the
    /// server's setting ([`McpServer::argument_check`](crate::server::McpServer::argument_check)).
    /// [`ArgumentCheck::Off`] also lets a tool whose schema the checker cannot compile be
    /// registered.
    pub fn argument_check(mut self, check: ArgumentCheck) -> Self {
        self.argument_check = Some(check);
        self
    }

    /// Runs the tool as a task (the tasks extension): a client that declares the extension
    /// gets a task to poll unless the work finishes at once; with
    /// [`TaskSupport::Required`], a client that does not gets `-32021`. The handler may take
    /// a [`TaskHandle`](crate::server::tasks::TaskHandle). Registering a task tool turns the
    /// server's tasks on (see [`McpServer::tasks`](crate::server::McpServer::tasks)).
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.task = Some(support);
        self
    }

    /// Behaviour hints (read-only, destructive, idempotent, open-world).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// An explicit `inputSchema`, instead of the one derived from the handler's [`Args`]
    /// (useful with [`RawArgs`]).
    ///
    /// [`Args`]: crate::server::extract::Args
    /// [`RawArgs`]: crate::server::extract::RawArgs
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

/// Tools: a kind of registered handler.
pub(crate) struct Tools;

/// A tool as the registry lists it.
#[derive(Clone)]
pub(crate) struct ToolDef {
    pub(crate) tool: Tool,
    /// The arguments mirrored into `Mcp-Param-*` headers, if any.
    pub(crate) mirrored: Option<Arc<[MirroredParam]>>,
    /// Whether it runs as a task.
    pub(crate) task: Option<TaskSupport>,
    /// Its own argument check setting (`None`: the server's).
    pub(crate) argument_check: Option<ArgumentCheck>,
    /// Its `inputSchema`, compiled for the argument check.
    pub(crate) checker: ArgumentsChecker,
}

impl Kind for Tools {
    type Def = ToolDef;
    type Result = CallToolResult;

    fn refusal(message: String) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::error(message)))
    }

    fn rejection(rejection: Rejection) -> HandlerResult<Outcome<CallToolResult>> {
        match rejection.protocol_error() {
            Some(e) => Err(e.clone()),
            None => Ok(Outcome::Complete(CallToolResult::error(
                rejection.message().to_owned(),
            ))),
        }
    }

    fn failed(result: &HandlerResult<Outcome<CallToolResult>>) -> bool {
        match result {
            Err(_) => true,
            Ok(Outcome::Complete(r)) => r.is_error == Some(true),
            Ok(_) => false,
        }
    }
}

impl<T: IntoToolResult> Convert<Tools> for T {
    fn convert(self, _target: &str, _mime: Option<&str>) -> HandlerResult<Outcome<CallToolResult>> {
        self.into_tool_result()
    }

    fn describe(signature: &mut Signature) {
        <T as IntoToolResult>::describe(signature);
    }
}

/// Builds the registry entry for a handler, deriving schemas from its extractors and return
/// type, and checking that it does not mix the two multi round-trip styles.
pub(crate) fn tool_entry<H, T, S>(spec: ToolSpec, handler: H) -> Result<Entry<Tools, S>, String>
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
    super::scopes::check_declared(&spec.scopes, &format!("tool {name:?}"))?;
    let (handler, signature) = erase::<Tools, _, _, _>(&format!("tool {name:?}"), handler)?;
    let asks = signature.uses_dependency_form();
    let mut tool = spec.tool;
    #[cfg(feature = "apps")]
    if let Some(ui) = spec.ui {
        super::apps::write_tool_ui(&mut tool, &ui)?;
    }
    if !spec.explicit_input_schema {
        let mut schema = signature.input_schema.unwrap_or_default();
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
        tool.output_schema = signature.output_schema;
    }
    // Clients drop a tool whose x-mcp-header annotations are invalid; refuse to offer one.
    let mirrored = arctern_types::headers::mirrored_params(&tool.input_schema)
        .map_err(|why| format!("tool {name:?}: {why}"))?;
    // Compiled once here; every call is checked against it.
    let checker = match spec.argument_check {
        Some(ArgumentCheck::Off) => ArgumentsChecker::Off,
        _ => match Checker::compile(&tool.input_schema) {
            Ok(checker) => ArgumentsChecker::Compiled(Arc::new(checker)),
            Err(why) => ArgumentsChecker::Uncompiled(why.to_string()),
        },
    };
    Ok(Entry {
        def: ToolDef {
            tool,
            mirrored: (!mirrored.is_empty()).then(|| mirrored.into()),
            task: spec.task,
            argument_check: spec.argument_check,
            checker,
        },
        handler,
        asks,
        scopes: spec.scopes.into(),
    })
}
