//! MCP Apps on an [`McpServer`](super::McpServer): views, the tools that point at them, and
//! the checks hosts apply, run when the server is built so that a misconfigured server
//! fails at start-up rather than inside a host.

use std::path::PathBuf;
use std::sync::Arc;

use arctern_types::ReadResourceResult;
use arctern_types::apps::{
    LEGACY_RESOURCE_URI_KEY, META_KEY, MIME_TYPE, Rule, URI_SCHEME, UiResourceCsp, UiResourceMeta,
    UiResourcePermissions, UiToolMeta, check_csp_source, is_html_document,
};
use arctern_types::content::ResourceContents;
use arctern_types::resources::Resource;
use arctern_types::tools::Tool;
use serde_json::Value;

use super::registry::Registry;
use crate::Outcome;

/// Describes an MCP Apps view: an HTML document at a `ui://` URI that hosts render in a
/// sandboxed iframe, with what it needs from the sandbox. Register it with
/// [`McpServer::view`](super::McpServer::view) (HTML from a string, `include_str!` or a
/// file) or [`McpServer::view_with`](super::McpServer::view_with) (HTML from a handler, per
/// read), and point tools at it with [`ToolSpec::ui`](super::ToolSpec::ui).
///
/// It is served as a resource of MIME type `text/html;profile=mcp-app`, with `_meta.ui` on
/// its listing entry and on the content item `resources/read` returns.
///
/// ```
/// use arctern::apps::{UiResourceCsp, ViewSpec};
///
/// let view = ViewSpec::new("ui://weather/forecast.html", "forecast")
///     .title("Forecast")
///     .html("<!doctype html><html><body><h1>Forecast</h1></body></html>")
///     .csp(UiResourceCsp::new().connect(["https://api.weather.example"]))
///     .prefers_border(true);
/// # let _ = view;
/// ```
#[derive(Debug, Clone)]
pub struct ViewSpec {
    pub(crate) resource: Resource,
    pub(crate) scopes: Vec<String>,
    ui: UiResourceMeta,
    html: Option<ViewHtml>,
    allow_wildcard: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum ViewHtml {
    Text(Arc<str>),
    File(PathBuf),
}

/// A checked view: the resource to register, and its HTML unless a handler serves it.
pub(crate) struct ViewParts {
    pub(crate) spec: super::ResourceSpec,
    pub(crate) html: Option<ViewHtml>,
}

impl ViewHtml {
    /// The document, read again from its file if it has one (an error becomes `-32603`
    /// with a generic message, the real one logged).
    pub(crate) async fn read(self) -> Result<String, std::io::Error> {
        match self {
            ViewHtml::Text(text) => Ok(text.to_string()),
            ViewHtml::File(path) => {
                tokio::task::spawn_blocking(move || std::fs::read_to_string(path))
                    .await
                    .map_err(std::io::Error::other)?
            }
        }
    }
}

impl ViewSpec {
    common_setters!(resource);

    /// A view at `uri` (which must start with `ui://`) called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        let mut resource = Resource::new(uri, name);
        resource.mime_type = Some(MIME_TYPE.to_owned());
        ViewSpec {
            resource,
            scopes: Vec::new(),
            ui: UiResourceMeta::default(),
            html: None,
            allow_wildcard: false,
        }
    }

    /// The view's HTML document, served as it is on every read (`include_str!` works).
    pub fn html(mut self, html: impl Into<String>) -> Self {
        self.html = Some(ViewHtml::Text(html.into().into()));
        self
    }

    /// The view's HTML document from a file: checked when the server is built, and read
    /// again on every `resources/read` (so edits show without a restart).
    pub fn html_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.html = Some(ViewHtml::File(path.into()));
        self
    }

    /// The origins the view may reach (`_meta.ui.csp`). Without it, hosts apply their
    /// restrictive default (no network, no external images or scripts).
    pub fn csp(mut self, csp: UiResourceCsp) -> Self {
        self.ui.csp = Some(csp);
        self
    }

    /// The browser permissions the view asks for (`_meta.ui.permissions`).
    pub fn permissions(mut self, permissions: UiResourcePermissions) -> Self {
        self.ui.permissions = Some(permissions);
        self
    }

    /// A dedicated sandbox origin (`_meta.ui.domain`), in the format the host documents.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.ui.domain = Some(domain.into());
        self
    }

    /// Whether the view wants a visible border and background (`_meta.ui.prefersBorder`).
    pub fn prefers_border(mut self, prefers: bool) -> Self {
        self.ui.prefers_border = Some(prefers);
        self
    }

    /// Whether CSP sources that allow every origin (`*`, `https://*`, `https:`) may be
    /// registered (default off: the build fails on them, naming `apps/csp-source`).
    pub fn allow_wildcard_csp(mut self, allow: bool) -> Self {
        self.allow_wildcard = allow;
        self
    }

    /// The resource to register and what serves it, after the checks a view's own
    /// settings allow.
    pub(crate) fn into_parts(self) -> Result<ViewParts, String> {
        let mut resource = self.resource;
        let what = format!("view {:?}", resource.uri);
        if resource
            .meta
            .as_ref()
            .is_some_and(|m| m.contains_key(META_KEY))
        {
            return Err(format!(
                "{what}: {}: its _meta already has a \"ui\" key; set the view's UI metadata with ViewSpec::csp, permissions, domain and prefers_border",
                Rule::ResourceMeta
            ));
        }
        if !self.ui.is_empty() {
            self.ui.write_to(resource.meta.get_or_insert_default());
        }
        check_view(&resource, self.allow_wildcard)?;
        let html = match self.html {
            Some(ViewHtml::Text(text)) => {
                check_html(&what, &text)?;
                Some(ViewHtml::Text(text))
            }
            Some(ViewHtml::File(path)) => {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!("{what}: cannot read its HTML file {}: {e}", path.display())
                })?;
                check_html(&what, &text)?;
                Some(ViewHtml::File(path))
            }
            None => None,
        };
        Ok(ViewParts {
            spec: super::ResourceSpec {
                resource,
                scopes: self.scopes,
            },
            html,
        })
    }
}

/// The registry entry of a view whose HTML its spec holds.
pub(crate) fn view_entry<S: Clone + Send + Sync + 'static>(
    spec: ViewSpec,
) -> Result<super::entry::Entry<super::resource::Resources, S>, String> {
    let uri = spec.resource.uri.clone();
    let parts = spec.into_parts()?;
    match parts.html {
        Some(html) => super::resource::resource_entry_unchecked(parts.spec, move || {
            let html = html.clone();
            async move { html.read().await }
        }),
        None => Err(format!(
            "view {uri:?}: it has no HTML: give it with ViewSpec::html or ViewSpec::html_file, or serve it with McpServer::view_with"
        )),
    }
}

fn check_html(what: &str, text: &str) -> Result<(), String> {
    if is_html_document(text) {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}: its content must be an HTML document (starting with <!doctype html> or <html>)",
            Rule::HtmlDocument
        ))
    }
}

/// Whether a resource is an MCP Apps view (or means to be one): a `ui://` URI, the view
/// MIME type, or UI metadata.
pub(crate) fn is_view(resource: &Resource) -> bool {
    resource.uri.starts_with(URI_SCHEME)
        || resource.mime_type.as_deref() == Some(MIME_TYPE)
        || resource
            .meta
            .as_ref()
            .is_some_and(|m| m.contains_key(META_KEY))
}

/// The checks of a view's listing entry: scheme, exact MIME type, metadata shape, CSP
/// sources. Resources that are not views pass.
pub(crate) fn check_view(resource: &Resource, allow_wildcard: bool) -> Result<(), String> {
    if !is_view(resource) {
        return Ok(());
    }
    let what = format!("view {:?}", resource.uri);
    if !resource.uri.starts_with(URI_SCHEME) {
        return Err(format!(
            "{what}: {}: a view's URI must start with ui://",
            Rule::UiScheme
        ));
    }
    if resource.mime_type.as_deref() != Some(MIME_TYPE) {
        return Err(format!(
            "{what}: {}: a view must be served as exactly {MIME_TYPE:?}, not {:?} (hosts render nothing else)",
            Rule::MimeType,
            resource.mime_type.as_deref().unwrap_or("no MIME type"),
        ));
    }
    let ui = UiResourceMeta::from_resource(resource).map_err(|e| {
        format!(
            "{what}: {}: its _meta.ui is malformed: {e}",
            Rule::ResourceMeta
        )
    })?;
    if let Some(csp) = ui.as_ref().and_then(|u| u.csp.as_ref()) {
        for (list, source) in csp.sources() {
            check_csp_source(source, allow_wildcard).map_err(|e| {
                format!(
                    "{what}: {}: {e} (in csp.{list}); hosts drop such sources",
                    Rule::CspSource
                )
            })?;
        }
    }
    Ok(())
}

/// Writes a tool's UI metadata into its `_meta` (the nested key; the flat one is the
/// server's choice, see [`add_flat_key`]).
pub(crate) fn write_tool_ui(tool: &mut Tool, ui: &UiToolMeta) -> Result<(), String> {
    let meta = tool.meta.get_or_insert_default();
    if meta.contains_key(META_KEY) || meta.contains_key(LEGACY_RESOURCE_URI_KEY) {
        return Err(format!(
            "tool {:?}: {}: its _meta already has UI metadata; set it with ToolSpec::ui and ToolSpec::visibility only",
            tool.name,
            Rule::ToolMeta
        ));
    }
    ui.write_to(meta, false);
    Ok(())
}

/// Adds the deprecated flat `ui/resourceUri` key to a tool that names a view in
/// `_meta.ui.resourceUri` only.
pub(crate) fn add_flat_key(tool: &mut Tool) {
    let Some(meta) = tool.meta.as_mut() else {
        return;
    };
    let uri = meta
        .get(META_KEY)
        .and_then(|ui| ui.get("resourceUri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(uri) = uri
        && !meta.contains_key(LEGACY_RESOURCE_URI_KEY)
    {
        meta.insert(LEGACY_RESOURCE_URI_KEY.to_owned(), Value::String(uri));
    }
}

/// Whether the tool carries UI metadata.
pub(crate) fn has_tool_ui(tool: &Tool) -> bool {
    tool.meta
        .as_ref()
        .is_some_and(|m| m.contains_key(META_KEY) || m.contains_key(LEGACY_RESOURCE_URI_KEY))
}

/// The checks of a tool's UI metadata against what `registry` serves: shape, visibility,
/// scheme, and that the view exists.
pub(crate) fn check_tool<S>(tool: &Tool, registry: &Registry<S>) -> Result<(), String> {
    let what = format!("tool {:?}", tool.name);
    let ui = match UiToolMeta::from_tool(tool) {
        Ok(Some(ui)) => ui,
        Ok(None) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "{what}: {}: its _meta.ui is malformed: {e}",
                Rule::ToolMeta
            ));
        }
    };
    if let Some(key) = ["csp", "permissions"]
        .into_iter()
        .find(|k| ui.extra.contains_key(*k))
    {
        return Err(format!(
            "{what}: {}: _meta.ui.{key} belongs to the view, not to the tool (set it with ViewSpec::{key})",
            Rule::ToolMeta
        ));
    }
    let meta = tool.meta.as_ref().expect("read from it");
    let nested = meta
        .get(META_KEY)
        .and_then(|u| u.get("resourceUri"))
        .and_then(Value::as_str);
    let flat = meta.get(LEGACY_RESOURCE_URI_KEY).and_then(Value::as_str);
    if let (Some(nested), Some(flat)) = (nested, flat)
        && nested != flat
    {
        return Err(format!(
            "{what}: {}: _meta.ui.resourceUri {nested:?} and ui/resourceUri {flat:?} disagree",
            Rule::ToolMeta
        ));
    }
    if let Some(visibility) = &ui.visibility {
        if visibility.is_empty() {
            return Err(format!(
                "{what}: {}: an empty visibility lets neither the model nor the app call it",
                Rule::Visibility
            ));
        }
        if let Some(odd) = visibility.iter().find(|v| !v.is_known()) {
            return Err(format!(
                "{what}: {}: unknown visibility {:?} (\"model\" or \"app\")",
                Rule::Visibility,
                odd.as_str()
            ));
        }
    }
    let Some(uri) = &ui.resource_uri else {
        return Ok(());
    };
    if !uri.starts_with(URI_SCHEME) {
        return Err(format!(
            "{what}: {}: its view {uri:?} must be a ui:// URI",
            Rule::UiScheme
        ));
    }
    let served = registry.resources.contains_key(uri)
        || registry
            .templates
            .iter()
            .any(|t| t.def.matcher.matches(uri).is_some());
    if !served {
        return Err(format!(
            "{what}: {}: its view {uri:?} is not registered (register it with McpServer::view)",
            Rule::ViewExists
        ));
    }
    Ok(())
}

/// Puts a view's `_meta.ui` on the content items of a read that lack it (hosts prefer the
/// content item's; some read nothing else).
pub(crate) fn stamp_contents(outcome: &mut Outcome<ReadResourceResult>, uri: &str, ui: &Value) {
    let Outcome::Complete(result) = outcome else {
        return;
    };
    for contents in &mut result.contents {
        let (item_uri, meta) = match contents {
            ResourceContents::Text(t) => (&t.uri, &mut t.meta),
            ResourceContents::Blob(b) => (&b.uri, &mut b.meta),
            _ => continue,
        };
        if item_uri == uri {
            meta.get_or_insert_default()
                .entry(META_KEY)
                .or_insert_with(|| ui.clone());
        }
    }
}

/// The `_meta.ui` a read of this view stamps on its content, if it is a view that has one.
pub(crate) fn view_ui(resource: &Resource) -> Option<Value> {
    if resource.mime_type.as_deref() != Some(MIME_TYPE) {
        return None;
    }
    resource.meta.as_ref()?.get(META_KEY).cloned()
}
