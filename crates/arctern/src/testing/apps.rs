//! Checks of an MCP Apps server from the client's side (features `testing` and `apps`): what
//! a host would refuse or drop, rule by rule ([`Rule`]), over any transport and both eras.
//! `arctern apps check` reports the same findings.
//!
//! ```
//! use arctern::apps::ViewSpec;
//! use arctern::server::{McpServer, ToolSpec};
//! use arctern::testing::TestClient;
//! use arctern::testing::apps::AppsCheck;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> arctern::Result<()> {
//! let server = McpServer::new("clock")
//!     .view(ViewSpec::new("ui://clock/view.html", "clock").html("<!doctype html><html></html>"))
//!     .tool_spec(ToolSpec::new("now").ui("ui://clock/view.html"), || async { "12:00" });
//! let t = TestClient::builder().configure(|b| b.apps()).connect(server).await?;
//! let report = AppsCheck::new().call("now", json!({})).run(t.client()).await?;
//! report.assert_clean();
//! assert_eq!(report.views_checked(), 1);
//! # Ok(()) }
//! ```

use std::collections::BTreeSet;
use std::fmt;

use arctern_types::apps::{
    EXTENSION_ID, LEGACY_RESOURCE_URI_KEY, META_KEY, MIME_TYPE, Rule, URI_SCHEME, UiResourceMeta,
    UiToolMeta, check_csp_source, is_html_document,
};
use arctern_types::content::{ContentBlock, ResourceContents};
use arctern_types::resources::Resource;
use arctern_types::tools::Tool;
use base64::Engine as _;
use serde_json::Value;

use crate::Result;
use crate::client::Client;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// A host refuses it, or drops part of it: the view does not work as written.
    Error,
    /// Works with some hosts and not others.
    Warning,
    /// The rule could not be checked (for example a tool that was not called).
    Skipped,
}

impl Severity {
    /// `error`, `warning` or `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Skipped => "skipped",
        }
    }
}

/// One thing a host would object to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The rule it breaks.
    pub rule: Rule,
    /// How serious it is.
    pub severity: Severity,
    /// What it is about: `tool "name"`, `view "ui://…"`, or `server`.
    pub subject: String,
    /// What is wrong, and what to do.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}: {}",
            self.severity.as_str(),
            self.rule.id(),
            self.subject,
            self.message
        )
    }
}

/// What [`AppsCheck::run`] found.
#[derive(Debug, Clone, Default)]
pub struct AppsReport {
    findings: Vec<Finding>,
    tools: usize,
    views: usize,
    declared: bool,
}

impl AppsReport {
    /// Every finding, in the order found.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The findings of severity [`Severity::Error`].
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    /// Whether nothing is an error.
    pub fn passed(&self) -> bool {
        self.errors().next().is_none()
    }

    /// The findings that break `rule`.
    pub fn of(&self, rule: Rule) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.rule == rule)
    }

    /// How many tools point at a view.
    pub fn tools_checked(&self) -> usize {
        self.tools
    }

    /// How many views were read.
    pub fn views_checked(&self) -> usize {
        self.views
    }

    /// Whether the server declares the extension.
    pub fn extension_declared(&self) -> bool {
        self.declared
    }

    /// Panics, listing them, if there are errors or warnings.
    #[track_caller]
    pub fn assert_clean(&self) {
        let bad: Vec<String> = self
            .findings
            .iter()
            .filter(|f| f.severity != Severity::Skipped)
            .map(ToString::to_string)
            .collect();
        assert!(
            bad.is_empty(),
            "the MCP Apps check found:\n  {}",
            bad.join("\n  ")
        );
    }
}

/// Checks an MCP Apps server through a connected [`Client`]: its declaration, every tool
/// that points at a view, every view (listed or pointed at), and the tools it is told to
/// call. Nothing is called unless named with [`call`](Self::call): tools may have effects.
///
/// A client that declares Apps ([`ClientBuilder::apps`](crate::client::ClientBuilder::apps))
/// sees what a host sees.
#[derive(Debug, Clone, Default)]
pub struct AppsCheck {
    calls: Vec<(String, Value)>,
    allow_wildcard: bool,
}

impl AppsCheck {
    /// The static checks, no tool called.
    pub fn new() -> Self {
        AppsCheck::default()
    }

    /// Also calls `tool` with `arguments` to check its text fallback
    /// ([`Rule::TextFallback`]).
    pub fn call(mut self, tool: impl Into<String>, arguments: Value) -> Self {
        self.calls.push((tool.into(), arguments));
        self
    }

    /// Whether CSP sources allowing every origin pass (default: an error, as hosts that
    /// filter sources drop them).
    pub fn allow_wildcard_csp(mut self, allow: bool) -> Self {
        self.allow_wildcard = allow;
        self
    }

    /// Runs the checks. Fails only when listing the tools or resources fails; a view that
    /// cannot be read is a finding.
    pub async fn run(&self, client: &Client) -> Result<AppsReport> {
        let mut r = Findings::default();
        let declared = client
            .server_capabilities()
            .and_then(|c| c.extensions)
            .is_some_and(|e| e.contains_key(EXTENSION_ID));
        let tools = client.list_tools().await?;
        let listed = if client
            .server_capabilities()
            .is_none_or(|c| c.resources.is_some())
        {
            client.list_resources().await?
        } else {
            Vec::new()
        };
        let mut views: BTreeSet<String> = listed
            .iter()
            .filter(|r| looks_like_view(r))
            .map(|r| r.uri.clone())
            .collect();
        let mut ui_tools = 0;
        for tool in &tools {
            if let Some(uri) = r.tool(tool) {
                ui_tools += 1;
                if uri.starts_with(URI_SCHEME) {
                    views.insert(uri);
                }
            }
        }
        if (ui_tools > 0 || !views.is_empty()) && !declared {
            r.warn(
                Rule::Extension,
                "server".into(),
                format!("the server does not declare {EXTENSION_ID} in its capabilities; hosts that check it show no views"),
            );
        }
        let pointed: BTreeSet<String> = tools
            .iter()
            .filter_map(|t| UiToolMeta::from_tool(t).ok().flatten()?.resource_uri)
            .collect();
        for uri in &views {
            let entry = listed.iter().find(|r| &r.uri == uri);
            r.view(
                client,
                uri,
                entry,
                self.allow_wildcard,
                &tools,
                pointed.contains(uri),
            )
            .await;
        }
        for (name, arguments) in &self.calls {
            r.call(client, &tools, name, arguments.clone()).await;
        }
        for tool in &tools {
            let has_view = UiToolMeta::from_tool(tool)
                .ok()
                .flatten()
                .is_some_and(|u| u.resource_uri.is_some());
            if has_view && !self.calls.iter().any(|(n, _)| n == &tool.name) {
                r.push(
                    Rule::TextFallback,
                    Severity::Skipped,
                    subject_tool(&tool.name),
                    "not called (name it to call it and check its text result)".into(),
                );
            }
        }
        Ok(AppsReport {
            findings: r.0,
            tools: ui_tools,
            views: views.len(),
            declared,
        })
    }
}

fn subject_tool(name: &str) -> String {
    format!("tool {name:?}")
}

fn subject_view(uri: &str) -> String {
    format!("view {uri:?}")
}

fn looks_like_view(resource: &Resource) -> bool {
    resource.uri.starts_with(URI_SCHEME)
        || resource.mime_type.as_deref() == Some(MIME_TYPE)
        || resource
            .meta
            .as_ref()
            .is_some_and(|m| m.contains_key(META_KEY))
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn push(&mut self, rule: Rule, severity: Severity, subject: String, message: String) {
        self.0.push(Finding {
            rule,
            severity,
            subject,
            message,
        });
    }

    fn error(&mut self, rule: Rule, subject: String, message: String) {
        self.push(rule, Severity::Error, subject, message);
    }

    fn warn(&mut self, rule: Rule, subject: String, message: String) {
        self.push(rule, Severity::Warning, subject, message);
    }

    /// Checks a tool's UI metadata; returns the view it points at, if any.
    fn tool(&mut self, tool: &Tool) -> Option<String> {
        let subject = subject_tool(&tool.name);
        let ui = match UiToolMeta::from_tool(tool) {
            Ok(Some(ui)) => ui,
            Ok(None) => return None,
            Err(e) => {
                self.error(
                    Rule::ToolMeta,
                    subject,
                    format!("its _meta.ui is malformed: {e}"),
                );
                return None;
            }
        };
        for key in ["csp", "permissions"] {
            if ui.extra.contains_key(key) {
                self.error(
                    Rule::ToolMeta,
                    subject.clone(),
                    format!("_meta.ui.{key} belongs on the view's resource, not on the tool; hosts ignore it here"),
                );
            }
        }
        let meta = tool.meta.as_ref()?;
        let nested = meta
            .get(META_KEY)
            .and_then(|u| u.get("resourceUri"))
            .and_then(Value::as_str);
        let flat = meta.get(LEGACY_RESOURCE_URI_KEY).and_then(Value::as_str);
        match (nested, flat) {
            (Some(n), Some(f)) if n != f => self.error(
                Rule::ToolMeta,
                subject.clone(),
                format!("_meta.ui.resourceUri {n:?} and ui/resourceUri {f:?} disagree"),
            ),
            (Some(_), None) => self.warn(
                Rule::FlatKey,
                subject.clone(),
                "no flat ui/resourceUri key: hosts that read only it show no view".into(),
            ),
            (None, Some(_)) => self.warn(
                Rule::FlatKey,
                subject.clone(),
                "only the deprecated flat ui/resourceUri key: newer hosts read _meta.ui.resourceUri".into(),
            ),
            _ => {}
        }
        if let Some(visibility) = &ui.visibility {
            if visibility.is_empty() {
                self.error(
                    Rule::Visibility,
                    subject.clone(),
                    "an empty visibility lets neither the model nor the app call it".into(),
                );
            }
            for odd in visibility.iter().filter(|v| !v.is_known()) {
                self.error(
                    Rule::Visibility,
                    subject.clone(),
                    format!(
                        "unknown visibility {:?} (\"model\" or \"app\"): it grants nothing",
                        odd.as_str()
                    ),
                );
            }
        }
        let uri = ui.resource_uri?;
        if !uri.starts_with(URI_SCHEME) {
            self.error(
                Rule::UiScheme,
                subject,
                format!("its view {uri:?} is not a ui:// URI: hosts ignore it"),
            );
        }
        Some(uri)
    }

    async fn view(
        &mut self,
        client: &Client,
        uri: &str,
        entry: Option<&Resource>,
        allow_wildcard: bool,
        tools: &[Tool],
        pointed: bool,
    ) {
        let subject = subject_view(uri);
        if !uri.starts_with(URI_SCHEME) {
            self.error(
                Rule::UiScheme,
                subject.clone(),
                "a view's URI must start with ui://".into(),
            );
        }
        let mut listed_ui = None;
        if let Some(entry) = entry {
            if let Some(mime) = entry.mime_type.as_deref()
                && mime != MIME_TYPE
            {
                self.error(
                    Rule::MimeType,
                    subject.clone(),
                    format!("listed as {mime:?}, not {MIME_TYPE:?}"),
                );
            }
            match UiResourceMeta::from_resource(entry) {
                Ok(ui) => listed_ui = ui,
                Err(e) => self.error(
                    Rule::ResourceMeta,
                    subject.clone(),
                    format!("the listing's _meta.ui is malformed: {e}"),
                ),
            }
        }
        let read = match client.read_resource(uri).await {
            Ok(read) => read,
            Err(e) => {
                let users: Vec<&str> = tools
                    .iter()
                    .filter(|t| {
                        UiToolMeta::from_tool(t)
                            .ok()
                            .flatten()
                            .and_then(|u| u.resource_uri)
                            .as_deref()
                            == Some(uri)
                    })
                    .map(|t| t.name.as_str())
                    .collect();
                let by = if pointed {
                    format!(" (pointed at by {})", users.join(", "))
                } else {
                    String::new()
                };
                self.error(
                    Rule::ViewExists,
                    subject,
                    format!("resources/read failed{by}: {e}"),
                );
                return;
            }
        };
        let Some(item) = read
            .contents
            .iter()
            .find(|c| contents_uri(c) == uri)
            .or(read.contents.first())
        else {
            self.error(
                Rule::ViewExists,
                subject,
                "resources/read returned no content".into(),
            );
            return;
        };
        let (mime, text) = match item {
            ResourceContents::Text(t) => (t.mime_type.as_deref(), Some(t.text.clone())),
            ResourceContents::Blob(b) => (
                b.mime_type.as_deref(),
                base64::engine::general_purpose::STANDARD
                    .decode(&b.blob)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok()),
            ),
            _ => (None, None),
        };
        if mime != Some(MIME_TYPE) {
            self.error(
                Rule::MimeType,
                subject.clone(),
                format!(
                    "read as {:?}, not {MIME_TYPE:?}: hosts render nothing else",
                    mime.unwrap_or("no MIME type")
                ),
            );
        }
        if !text.as_deref().is_some_and(is_html_document) {
            self.error(
                Rule::HtmlDocument,
                subject.clone(),
                "its content is not an HTML document (<!doctype html> or <html>)".into(),
            );
        }
        let content_ui = match UiResourceMeta::from_contents(item) {
            Ok(ui) => ui,
            Err(e) => {
                self.error(
                    Rule::ResourceMeta,
                    subject.clone(),
                    format!("the content's _meta.ui is malformed: {e}"),
                );
                None
            }
        };
        if content_ui.is_none() && listed_ui.is_some() {
            self.warn(
                Rule::ContentMeta,
                subject.clone(),
                "_meta.ui is on the listing only: hosts that read the content item's see no CSP or permissions".into(),
            );
        }
        let ui = content_ui.or(listed_ui);
        if let Some(csp) = ui.as_ref().and_then(|u| u.csp.as_ref()) {
            for (list, source) in csp.sources() {
                if let Err(e) = check_csp_source(source, allow_wildcard) {
                    self.error(
                        Rule::CspSource,
                        subject.clone(),
                        format!("{e} (in csp.{list}): hosts drop it"),
                    );
                }
            }
        }
    }

    async fn call(&mut self, client: &Client, tools: &[Tool], name: &str, arguments: Value) {
        let subject = subject_tool(name);
        if !tools.iter().any(|t| t.name == name) {
            self.error(Rule::TextFallback, subject, "no such tool to call".into());
            return;
        }
        match client.call_tool(name, arguments).await {
            Ok(result) => {
                let text = result
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .any(|t| !t.trim().is_empty());
                if !text {
                    self.error(
                        Rule::TextFallback,
                        subject,
                        "its result has no text content: the model and hosts without Apps see nothing".into(),
                    );
                }
            }
            Err(e) => self.error(Rule::TextFallback, subject, format!("the call failed: {e}")),
        }
    }
}

fn contents_uri(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::Text(t) => &t.uri,
        ResourceContents::Blob(b) => &b.uri,
        _ => "",
    }
}
