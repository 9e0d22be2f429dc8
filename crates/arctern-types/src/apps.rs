//! The MCP Apps extension (`io.modelcontextprotocol/ui`, SEP-1865, stable spec 2026-01-26):
//! interactive views a server ships and a host renders in a sandboxed iframe.
//!
//! A *view* is a resource with a `ui://` URI whose content is an HTML document served with
//! the MIME type [`MIME_TYPE`]. A tool points at it with `_meta.ui.resourceUri`
//! ([`UiToolMeta`]); the view says what it needs from the sandbox in `_meta.ui`
//! ([`UiResourceMeta`]: CSP domains, permissions, a dedicated origin, a border preference),
//! on its listing entry and on the content item `resources/read` returns. A client that
//! renders views declares the extension with [`UiClientCapabilities`] (`mimeTypes`); a
//! server declares it with `{}`.
//!
//! | ext-apps schema | Rust |
//! | --- | --- |
//! | `McpUiToolMeta` | [`UiToolMeta`] |
//! | `McpUiToolVisibility` | [`Visibility`] |
//! | `McpUiResourceMeta` | [`UiResourceMeta`] |
//! | `McpUiResourceCsp` | [`UiResourceCsp`] |
//! | `McpUiResourcePermissions` | [`UiResourcePermissions`] |
//! | `McpUiClientCapabilities` | [`UiClientCapabilities`] |
//!
//! Like every type of this crate these keep the members they do not model (`extra`), though
//! the ext-apps schema closes its objects: a newer host or server may add members. The
//! view↔host messages (`ui/initialize` and the rest) travel between a host and its iframe,
//! never between a client and a server, and have no types here.
//!
//! [`Rule`] names what a host refuses or drops, with stable ids: the server's build-time
//! checks, the test kit and `arctern apps check` report by them.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::content::ResourceContents;
use crate::meta::{JsonObject, Meta};
use crate::resources::Resource;
use crate::tools::Tool;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The MIME type of a view's content: hosts render nothing else.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The URI scheme of views, with its `://`: every view URI starts with it.
pub const URI_SCHEME: &str = "ui://";

/// The `_meta` key of a tool's and a resource's UI metadata.
pub const META_KEY: &str = "ui";

/// The deprecated flat `_meta` key of a tool's view (`_meta["ui/resourceUri"]`), which some
/// hosts still read instead of `_meta.ui.resourceUri`.
pub const LEGACY_RESOURCE_URI_KEY: &str = "ui/resourceUri";

/// The version of the view↔host protocol (`ui/initialize`'s `protocolVersion`) this
/// module's wire types follow.
pub const UI_PROTOCOL_VERSION: &str = "2026-01-26";

/// Who may use a tool (`McpUiToolVisibility`): the model, the view, or both (the default).
///
/// Open: a value this crate does not know is kept, and grants nothing.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Visibility(Cow<'static, str>);

impl Visibility {
    /// `"model"`: listed to the agent and callable by it.
    pub const MODEL: Visibility = Visibility(Cow::Borrowed("model"));
    /// `"app"`: callable by a view of the same server.
    pub const APP: Visibility = Visibility(Cow::Borrowed("app"));

    /// A visibility from any string.
    pub fn new(value: impl Into<Cow<'static, str>>) -> Self {
        Visibility(value.into())
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is one of the values the specification defines.
    pub fn is_known(&self) -> bool {
        matches!(&*self.0, "model" | "app")
    }
}

impl fmt::Debug for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tool's UI metadata (`_meta.ui`, `McpUiToolMeta`): the view it renders in, and who may
/// call it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiToolMeta {
    /// The `ui://` URI of the view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may use the tool; absent means `["model", "app"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<Visibility>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiToolMeta {
    /// Metadata pointing at the view `resource_uri`, visible to both the model and the app.
    pub fn new(resource_uri: impl Into<String>) -> Self {
        UiToolMeta {
            resource_uri: Some(resource_uri.into()),
            ..Default::default()
        }
    }

    /// Sets who may use the tool.
    pub fn with_visibility(mut self, visibility: impl IntoIterator<Item = Visibility>) -> Self {
        self.visibility = Some(visibility.into_iter().collect());
        self
    }

    /// Whether a host lists the tool to the model (absent visibility: yes).
    pub fn is_visible_to_model(&self) -> bool {
        self.allows(&Visibility::MODEL)
    }

    /// Whether a host lets a view call the tool (absent visibility: yes).
    pub fn is_callable_by_app(&self) -> bool {
        self.allows(&Visibility::APP)
    }

    fn allows(&self, who: &Visibility) -> bool {
        self.visibility.as_ref().is_none_or(|v| v.contains(who))
    }

    /// Reads the UI metadata of a tool's `_meta`: `_meta.ui`, else (a server written for
    /// older hosts) the flat `_meta["ui/resourceUri"]` alone. `Ok(None)` when there is
    /// neither; an error when `_meta.ui` is not such an object or the flat key not a string.
    pub fn from_meta(meta: &Meta) -> Result<Option<Self>, serde_json::Error> {
        let mut ui = match meta.get(META_KEY) {
            Some(value) => Some(UiToolMeta::deserialize(value)?),
            None => None,
        };
        if let Some(flat) = meta.get(LEGACY_RESOURCE_URI_KEY) {
            let flat = String::deserialize(flat)?;
            let ui = ui.get_or_insert_default();
            if ui.resource_uri.is_none() {
                ui.resource_uri = Some(flat);
            }
        }
        Ok(ui)
    }

    /// Reads a tool's UI metadata (see [`from_meta`](Self::from_meta)).
    pub fn from_tool(tool: &Tool) -> Result<Option<Self>, serde_json::Error> {
        match &tool.meta {
            Some(meta) => UiToolMeta::from_meta(meta),
            None => Ok(None),
        }
    }

    /// Writes itself into `meta` as `_meta.ui`, and the view's URI under the flat key too
    /// when `flat_key` is set.
    pub fn write_to(&self, meta: &mut Meta, flat_key: bool) {
        if let Ok(value) = serde_json::to_value(self) {
            meta.insert(META_KEY.to_owned(), value);
        }
        if let (true, Some(uri)) = (flat_key, &self.resource_uri) {
            meta.insert(
                LEGACY_RESOURCE_URI_KEY.to_owned(),
                Value::String(uri.clone()),
            );
        }
    }
}

/// A view's UI metadata (`_meta.ui` of a `ui://` resource, `McpUiResourceMeta`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourceMeta {
    /// The origins the view may reach; absent, a host applies its restrictive default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiResourceCsp>,
    /// Browser permissions the view asks for (hosts may refuse them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiResourcePermissions>,
    /// A dedicated origin for the view's sandbox, in a host-dependent format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the view wants a visible border and background (absent: the host decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiResourceMeta {
    /// Reads `_meta.ui` from a resource's or a content item's `_meta`; `Ok(None)` when
    /// there is none.
    pub fn from_meta(meta: &Meta) -> Result<Option<Self>, serde_json::Error> {
        meta.get(META_KEY)
            .map(UiResourceMeta::deserialize)
            .transpose()
    }

    /// Reads a listing entry's UI metadata.
    pub fn from_resource(resource: &Resource) -> Result<Option<Self>, serde_json::Error> {
        match &resource.meta {
            Some(meta) => UiResourceMeta::from_meta(meta),
            None => Ok(None),
        }
    }

    /// Reads a `resources/read` content item's UI metadata (which hosts prefer to the
    /// listing's).
    pub fn from_contents(contents: &ResourceContents) -> Result<Option<Self>, serde_json::Error> {
        let meta = match contents {
            ResourceContents::Text(t) => t.meta.as_ref(),
            ResourceContents::Blob(b) => b.meta.as_ref(),
        };
        match meta {
            Some(meta) => UiResourceMeta::from_meta(meta),
            None => Ok(None),
        }
    }

    /// Writes itself into `meta` as `_meta.ui`.
    pub fn write_to(&self, meta: &mut Meta) {
        if let Ok(value) = serde_json::to_value(self) {
            meta.insert(META_KEY.to_owned(), value);
        }
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &UiResourceMeta::default()
    }
}

/// The origins a view may reach (`McpUiResourceCsp`). Each list becomes CSP directives in
/// the host; an absent or empty list allows nothing beyond the host's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourceCsp {
    /// `connect-src`: fetch, XHR, WebSocket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_domains: Option<Vec<String>>,
    /// `script-src`, `style-src`, `img-src`, `font-src`, `media-src`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_domains: Option<Vec<String>>,
    /// `frame-src` (absent: `'none'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_domains: Option<Vec<String>>,
    /// `base-uri` (absent: `'self'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_uri_domains: Option<Vec<String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn extend(list: &mut Option<Vec<String>>, sources: impl IntoIterator<Item = impl Into<String>>) {
    list.get_or_insert_default()
        .extend(sources.into_iter().map(Into::into));
}

impl UiResourceCsp {
    /// An empty policy: the host's default.
    pub fn new() -> Self {
        UiResourceCsp::default()
    }

    /// Adds origins to `connectDomains`.
    pub fn connect(mut self, sources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        extend(&mut self.connect_domains, sources);
        self
    }

    /// Adds origins to `resourceDomains`.
    pub fn resources(mut self, sources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        extend(&mut self.resource_domains, sources);
        self
    }

    /// Adds origins to `frameDomains`.
    pub fn frames(mut self, sources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        extend(&mut self.frame_domains, sources);
        self
    }

    /// Adds origins to `baseUriDomains`.
    pub fn base_uris(mut self, sources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        extend(&mut self.base_uri_domains, sources);
        self
    }

    /// Every source with the wire name of its list, in order.
    pub fn sources(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("connectDomains", &self.connect_domains),
            ("resourceDomains", &self.resource_domains),
            ("frameDomains", &self.frame_domains),
            ("baseUriDomains", &self.base_uri_domains),
        ]
        .into_iter()
        .flat_map(|(name, list)| {
            list.iter()
                .flatten()
                .map(move |source| (name, source.as_str()))
        })
    }
}

/// Browser permissions a view asks for (`McpUiResourcePermissions`): each present member
/// (an empty object) asks for one. Hosts may honour them; views must feature-detect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourcePermissions {
    /// The camera.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<JsonObject>,
    /// The microphone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<JsonObject>,
    /// The location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<JsonObject>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<JsonObject>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiResourcePermissions {
    /// Asks for nothing.
    pub fn new() -> Self {
        UiResourcePermissions::default()
    }

    /// Asks for the camera.
    pub fn camera(mut self) -> Self {
        self.camera = Some(JsonObject::new());
        self
    }

    /// Asks for the microphone.
    pub fn microphone(mut self) -> Self {
        self.microphone = Some(JsonObject::new());
        self
    }

    /// Asks for the location.
    pub fn geolocation(mut self) -> Self {
        self.geolocation = Some(JsonObject::new());
        self
    }

    /// Asks to write to the clipboard.
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = Some(JsonObject::new());
        self
    }
}

/// What a client that renders views declares under
/// `capabilities.extensions["io.modelcontextprotocol/ui"]` (`McpUiClientCapabilities`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiClientCapabilities {
    /// The view MIME types the client renders; [`MIME_TYPE`] for MCP Apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_types: Option<Vec<String>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiClientCapabilities {
    /// The settings of a client that renders MCP Apps views (`mimeTypes: [MIME_TYPE]`).
    pub fn apps() -> Self {
        UiClientCapabilities {
            mime_types: Some(vec![MIME_TYPE.to_owned()]),
            extra: JsonObject::new(),
        }
    }

    /// The client's settings, when it declared the extension (and they are an object).
    pub fn from_capabilities(capabilities: &ClientCapabilities) -> Option<Self> {
        let settings = capabilities.extensions.as_ref()?.get(EXTENSION_ID)?;
        UiClientCapabilities::deserialize(settings).ok()
    }

    /// Whether the settings list [`MIME_TYPE`].
    pub fn renders_apps(&self) -> bool {
        self.mime_types
            .as_ref()
            .is_some_and(|m| m.iter().any(|t| t == MIME_TYPE))
    }
}

impl Tool {
    /// The tool's MCP Apps metadata (see [`UiToolMeta::from_meta`]).
    pub fn ui_meta(&self) -> Result<Option<UiToolMeta>, serde_json::Error> {
        UiToolMeta::from_tool(self)
    }
}

impl Resource {
    /// The listing entry's MCP Apps metadata.
    pub fn ui_meta(&self) -> Result<Option<UiResourceMeta>, serde_json::Error> {
        UiResourceMeta::from_resource(self)
    }
}

impl ResourceContents {
    /// The content item's MCP Apps metadata (hosts prefer it to the listing's).
    pub fn ui_meta(&self) -> Result<Option<UiResourceMeta>, serde_json::Error> {
        UiResourceMeta::from_contents(self)
    }
}

/// Whether a client renders MCP Apps views: it declared the extension and listed
/// [`MIME_TYPE`] in `mimeTypes`. A server serves such a client its views; every other one
/// gets the tools' text results only.
pub fn client_supports_apps(capabilities: &ClientCapabilities) -> bool {
    UiClientCapabilities::from_capabilities(capabilities).is_some_and(|s| s.renders_apps())
}

/// Whether `text` looks like an HTML document, as hosts expect of a view: after blank space
/// (and a byte-order mark), `<!doctype html` or `<html`, in any case.
pub fn is_html_document(text: &str) -> bool {
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\n', '\r']);
    let head = start.get(..14).unwrap_or(start).to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// A CSP source that hosts drop: it does not fit the source grammar they accept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CspSourceError {
    /// The source as given.
    pub source: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for CspSourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CSP source {:?} {}", self.source, self.reason)
    }
}

impl std::error::Error for CspSourceError {}

/// Checks one source of a [`UiResourceCsp`] against the strict grammar hosts filter
/// sources with (a subset of CSP3's `host-source` and `scheme-source`):
///
/// - `scheme://host[:port][/path]`, `host[:port][/path]`, where the host is a dotted name
///   of letters, digits and `-`, or such a name behind `*.`; the port digits or `*`;
/// - `scheme:` alone (`data:`, `blob:`);
/// - never a quote, `;`, `,`, `<`, `>`, blank space or a control character (which would
///   end the directive or the attribute carrying the policy), so no keyword like `'self'`;
/// - a lone `*`, `scheme://*`, or a bare `http:`, `https:`, `ws:`, `wss:` (which allow
///   every origin) only when `allow_wildcard` is set.
pub fn check_csp_source(source: &str, allow_wildcard: bool) -> Result<(), CspSourceError> {
    let fail = |reason| {
        Err(CspSourceError {
            source: source.to_owned(),
            reason,
        })
    };
    if source.is_empty() {
        return fail("is empty");
    }
    if let Some(c) = source.chars().find(|c| {
        c.is_whitespace()
            || c.is_control()
            || !c.is_ascii()
            || matches!(c, ';' | ',' | '\'' | '"' | '<' | '>' | '\\')
    }) {
        return fail(match c {
            ';' | ',' => "contains `;` or `,`, which would end the directive",
            '\'' | '"' => {
                "contains a quote: keywords such as 'self' are not sources a view may ask for"
            }
            '<' | '>' => "contains `<` or `>`",
            '\\' => "contains a backslash",
            _ if c.is_whitespace() => "contains blank space",
            _ => "contains a character outside printable ASCII",
        });
    }
    let wildcard = |ok: bool| {
        if ok || allow_wildcard {
            Ok(())
        } else {
            fail("allows every origin; name the origins, or allow wildcards explicitly")
        }
    };
    if source == "*" {
        return wildcard(false);
    }
    let (scheme, rest) = match source.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => match source.strip_suffix(':') {
            // A scheme alone.
            Some(scheme) if is_scheme(scheme) => {
                let broad = matches!(
                    scheme.to_ascii_lowercase().as_str(),
                    "http" | "https" | "ws" | "wss"
                );
                return wildcard(!broad);
            }
            _ => (None, source),
        },
    };
    if scheme.is_some_and(|s| !is_scheme(s)) {
        return fail("has an invalid scheme");
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if let Some(port) = port
        && port != "*"
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return fail("has an invalid port");
    }
    if host == "*" {
        return if scheme.is_some() {
            wildcard(false)
        } else {
            fail("has an invalid host")
        };
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    let name = name.strip_suffix('.').unwrap_or(name);
    let label_ok =
        |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if name.is_empty() || !name.split('.').all(label_ok) {
        return fail("has an invalid host (letters, digits, `-` and dots, optionally behind `*.`)");
    }
    if !path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&()*+=:@/".contains(&b))
    {
        return fail("has an invalid path");
    }
    Ok(())
}

fn is_scheme(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// A requirement hosts place on an Apps server, with a stable id (`apps/…`) that
/// registration errors, the test kit and `arctern apps check` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// `apps/ui-scheme`: a view's URI, and a tool's `resourceUri`, start with `ui://`.
    UiScheme,
    /// `apps/view-exists`: a tool's `resourceUri` names a view the server serves.
    ViewExists,
    /// `apps/mime-type`: a view is served as exactly `text/html;profile=mcp-app`.
    MimeType,
    /// `apps/html-document`: a view's content is an HTML document.
    HtmlDocument,
    /// `apps/csp-source`: every CSP source fits the grammar hosts accept.
    CspSource,
    /// `apps/visibility`: a tool's visibility lists only `model` and `app`, and not none.
    Visibility,
    /// `apps/tool-meta`: a tool's `_meta.ui` has the right shape (no `csp` or
    /// `permissions`, which belong to the view), and the flat key agrees with it.
    ToolMeta,
    /// `apps/resource-meta`: a view's `_meta.ui` has the right shape.
    ResourceMeta,
    /// `apps/content-meta`: the content item `resources/read` returns carries the view's
    /// `_meta.ui` too (hosts prefer it to the listing's; some read only it).
    ContentMeta,
    /// `apps/flat-key`: a tool also carries the deprecated flat `ui/resourceUri` key, which
    /// some hosts still read.
    FlatKey,
    /// `apps/extension`: the server declares the extension in its capabilities.
    Extension,
    /// `apps/text-fallback`: a tool with a view still returns non-empty text content, for
    /// hosts without Apps and for the model.
    TextFallback,
}

impl Rule {
    /// Every rule, in the order reports list them.
    pub const ALL: [Rule; 12] = [
        Rule::Extension,
        Rule::UiScheme,
        Rule::ViewExists,
        Rule::ToolMeta,
        Rule::Visibility,
        Rule::FlatKey,
        Rule::ResourceMeta,
        Rule::MimeType,
        Rule::HtmlDocument,
        Rule::CspSource,
        Rule::ContentMeta,
        Rule::TextFallback,
    ];

    /// The stable id.
    pub fn id(self) -> &'static str {
        match self {
            Rule::UiScheme => "apps/ui-scheme",
            Rule::ViewExists => "apps/view-exists",
            Rule::MimeType => "apps/mime-type",
            Rule::HtmlDocument => "apps/html-document",
            Rule::CspSource => "apps/csp-source",
            Rule::Visibility => "apps/visibility",
            Rule::ToolMeta => "apps/tool-meta",
            Rule::ResourceMeta => "apps/resource-meta",
            Rule::ContentMeta => "apps/content-meta",
            Rule::FlatKey => "apps/flat-key",
            Rule::Extension => "apps/extension",
            Rule::TextFallback => "apps/text-fallback",
        }
    }

    /// What the rule asks, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::UiScheme => "view URIs and tools' resourceUri use the ui:// scheme",
            Rule::ViewExists => "a tool's resourceUri names a view the server serves",
            Rule::MimeType => "views are served as text/html;profile=mcp-app",
            Rule::HtmlDocument => "a view's content is an HTML document",
            Rule::CspSource => "CSP sources fit the grammar hosts accept",
            Rule::Visibility => "a tool's visibility lists only model and app, and not none",
            Rule::ToolMeta => {
                "a tool's _meta.ui has no csp or permissions, and agrees with ui/resourceUri"
            }
            Rule::ResourceMeta => "a view's _meta.ui has the shape of McpUiResourceMeta",
            Rule::ContentMeta => "the content resources/read returns carries the view's _meta.ui",
            Rule::FlatKey => "tools also carry the flat ui/resourceUri key older hosts read",
            Rule::Extension => "the server declares io.modelcontextprotocol/ui",
            Rule::TextFallback => "a tool with a view returns non-empty text content",
        }
    }

    /// The rule with this id.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_meta_reads_both_keys_and_writes_both() {
        let meta: Meta =
            serde_json::from_value(json!({"ui/resourceUri": "ui://a/b.html"})).unwrap();
        let ui = UiToolMeta::from_meta(&meta).unwrap().unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/b.html"));
        assert!(ui.is_visible_to_model() && ui.is_callable_by_app());
        // The nested key wins.
        let meta: Meta = serde_json::from_value(json!({
            "ui": {"resourceUri": "ui://nested", "visibility": ["app"]},
            "ui/resourceUri": "ui://flat"
        }))
        .unwrap();
        let ui = UiToolMeta::from_meta(&meta).unwrap().unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://nested"));
        assert!(!ui.is_visible_to_model() && ui.is_callable_by_app());
        assert!(UiToolMeta::from_meta(&Meta::new()).unwrap().is_none());
        assert!(UiToolMeta::from_meta(&serde_json::from_value(json!({"ui": 3})).unwrap()).is_err());

        let mut out = Meta::new();
        UiToolMeta::new("ui://x")
            .with_visibility([Visibility::MODEL])
            .write_to(&mut out, true);
        assert_eq!(
            Value::Object(out),
            json!({"ui": {"resourceUri": "ui://x", "visibility": ["model"]}, "ui/resourceUri": "ui://x"})
        );
        let v: Vec<Visibility> = serde_json::from_value(json!(["model", "robot"])).unwrap();
        assert!(v[0].is_known() && !v[1].is_known());
        assert_eq!(serde_json::to_value(&v).unwrap(), json!(["model", "robot"]));
    }

    #[test]
    fn client_support_needs_the_mime_type() {
        let caps = |ext: Value| -> ClientCapabilities {
            serde_json::from_value(json!({"extensions": ext})).unwrap()
        };
        assert!(client_supports_apps(&caps(
            json!({EXTENSION_ID: {"mimeTypes": [MIME_TYPE]}})
        )));
        assert!(!client_supports_apps(&caps(json!({EXTENSION_ID: {}}))));
        assert!(!client_supports_apps(&caps(
            json!({EXTENSION_ID: {"mimeTypes": ["text/html"]}})
        )));
        assert!(!client_supports_apps(&caps(
            json!({EXTENSION_ID: {"mimeTypes": "x"}})
        )));
        assert!(!client_supports_apps(&ClientCapabilities::default()));
        assert_eq!(
            serde_json::to_value(UiClientCapabilities::apps()).unwrap(),
            json!({"mimeTypes": [MIME_TYPE]})
        );
    }

    #[test]
    fn csp_sources() {
        for ok in [
            "https://api.example.com",
            "https://api.example.com:8443",
            "https://api.example.com/path/seg",
            "wss://realtime.example.com",
            "*.example.com",
            "https://*.example.com",
            "http://localhost:*",
            "data:",
            "blob:",
            "example.com",
            "HTTPS://API.example.com",
            "http://127.0.0.1:3000",
        ] {
            check_csp_source(ok, false).unwrap_or_else(|e| panic!("{e}"));
        }
        for (bad, why) in [
            ("", "empty"),
            ("https://a.com; script-src *", "`;`"),
            ("https://a.com\" onload=", "quote"),
            ("'self'", "quote"),
            ("https://a.com>", "`<`"),
            (" https://a.com", "blank"),
            ("https://a.com/x y", "blank"),
            ("https://a.com,https://b.com", "`;`"),
            ("*", "every origin"),
            ("https://*", "every origin"),
            ("https:", "every origin"),
            ("1http://a.com", "scheme"),
            ("https://a..com", "host"),
            ("https://a.com:80x", "port"),
            ("https://a_b.com", "host"),
            ("https://exämple.com", "ASCII"),
            ("https://a.com/\\", "backslash"),
        ] {
            let e = check_csp_source(bad, false).unwrap_err();
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
        check_csp_source("*", true).unwrap();
        check_csp_source("https:", true).unwrap();
    }

    #[test]
    fn html_documents() {
        assert!(is_html_document("<!DOCTYPE html><html></html>"));
        assert!(is_html_document("\u{feff}\n  <html lang=en>"));
        assert!(!is_html_document("<div>hi</div>"));
        assert!(!is_html_document(""));
    }

    #[test]
    fn rule_ids_are_unique_and_found_again() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_id(rule.id()), Some(rule));
            assert!(rule.id().starts_with("apps/"));
        }
        let mut ids: Vec<_> = Rule::ALL.iter().map(|r| r.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
    }
}
