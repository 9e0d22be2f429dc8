//! Resources and resource templates: registration, return types, erased handlers.

use std::fmt::Display;

use arctern_types::content::{BlobResourceContents, ResourceContents, TextResourceContents};
use arctern_types::resources::{ReadResourceResult, Resource, ResourceTemplate};
use base64::Engine as _;

use super::entry::{Convert, Entry, HandlerError, Kind, erase};
use super::handler_fn::HandlerFn;
use super::uri_template::UriTemplate;
use crate::Outcome;
use crate::server::extract::{MrtrStyle, Signature};
use crate::server::handler::HandlerResult;

/// Binary resource content, sent base64-encoded as a `blob`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

/// What a resource handler returns, turned into a `resources/read` result.
///
/// Implemented for [`ReadResourceResult`], `String` (text), [`Blob`] and `Vec<u8>` (binary),
/// [`ResourceContents`], `Vec<ResourceContents>`, `Outcome<ReadResourceResult>` (the manual
/// multi round-trip form), and `Result<T, E>` for any `E: Display` (an
/// [`ErrorObject`](crate::ErrorObject) is sent as it is, any other error as `-32603` with a
/// generic message). Text and binary content take the URI that was read and the MIME type the
/// resource declares.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource handler",
    label = "not a resource result",
    note = "a resource handler returns `String`, `Vec<u8>`, `Blob`, `ResourceContents`, `Vec<ResourceContents>`, `ReadResourceResult`, `Outcome<ReadResourceResult>`, or a `Result` of one of them with any `E: Display` (such as `anyhow::Error`)"
)]
pub trait IntoReadResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>>;

    /// Declares a multi round-trip form, at registration.
    fn describe(describe: &mut Signature) {
        let _ = describe;
    }
}

fn complete(contents: Vec<ResourceContents>) -> HandlerResult<Outcome<ReadResourceResult>> {
    Ok(Outcome::Complete(ReadResourceResult::new(contents)))
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoReadResult for String {
    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        let mut text = TextResourceContents::new(uri, self);
        text.mime_type = mime.map(str::to_owned);
        complete(vec![ResourceContents::Text(text)])
    }
}

impl IntoReadResult for Blob {
    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.0);
        let mut blob = BlobResourceContents::new(uri, data);
        blob.mime_type = mime.map(str::to_owned);
        complete(vec![ResourceContents::Blob(blob)])
    }
}

impl IntoReadResult for Vec<u8> {
    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        Blob(self).into_read_result(uri, mime)
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        complete(vec![self])
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        complete(self)
    }
}

impl IntoReadResult for Outcome<ReadResourceResult> {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        Ok(self)
    }

    fn describe(describe: &mut Signature) {
        describe.style(MrtrStyle::Manual, "the Outcome return type");
    }
}

impl<T, E> IntoReadResult for Result<T, E>
where
    T: IntoReadResult,
    E: Display + Send + 'static,
{
    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        match self {
            Ok(t) => t.into_read_result(uri, mime),
            Err(e) => Err(HandlerError::of(e).into_protocol("resource")),
        }
    }

    fn describe(describe: &mut Signature) {
        T::describe(describe);
    }
}

/// Describes a concrete resource.
#[derive(Debug, Clone)]
pub struct ResourceSpec {
    pub(crate) resource: Resource,
    pub(crate) scopes: Vec<String>,
}

impl ResourceSpec {
    common_setters!(resource);

    /// A resource at `uri` called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceSpec {
            resource: Resource::new(uri, name),
            scopes: Vec::new(),
        }
    }

    /// The MIME type of the content.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// The size in bytes, if known.
    pub fn size(mut self, size: u64) -> Self {
        self.resource.size = Some(size);
        self
    }
}

impl From<Resource> for ResourceSpec {
    fn from(resource: Resource) -> Self {
        ResourceSpec {
            resource,
            scopes: Vec::new(),
        }
    }
}

/// Describes a resource template (RFC 6570), such as `config://{env}`.
#[derive(Debug, Clone)]
pub struct ResourceTemplateSpec {
    pub(crate) template: ResourceTemplate,
    pub(crate) scopes: Vec<String>,
}

impl ResourceTemplateSpec {
    common_setters!(template);

    /// A template `uri_template` called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplateSpec {
            template: ResourceTemplate::new(uri_template, name),
            scopes: Vec::new(),
        }
    }

    /// The MIME type of the content.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }
}

impl From<ResourceTemplate> for ResourceTemplateSpec {
    fn from(template: ResourceTemplate) -> Self {
        ResourceTemplateSpec {
            template,
            scopes: Vec::new(),
        }
    }
}

/// Resources at a fixed URI: a kind of registered handler.
pub(crate) struct Resources;

/// Resource templates: a kind of registered handler.
pub(crate) struct Templates;

/// A resource template as the registry keeps it: its definition and its matcher.
#[derive(Clone)]
pub(crate) struct TemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) matcher: UriTemplate,
}

macro_rules! read_kind {
    ($kind:ty, $def:ty) => {
        impl Kind for $kind {
            type Def = $def;
            type Result = ReadResourceResult;
        }

        impl<T: IntoReadResult> Convert<$kind> for T {
            fn convert(
                self,
                target: &str,
                mime: Option<&str>,
            ) -> HandlerResult<Outcome<ReadResourceResult>> {
                self.into_read_result(target, mime)
            }

            fn describe(signature: &mut Signature) {
                <T as IntoReadResult>::describe(signature);
            }
        }
    };
}

read_kind!(Resources, Resource);
read_kind!(Templates, TemplateDef);

pub(crate) fn resource_entry<H, T, S>(
    spec: ResourceSpec,
    handler: H,
) -> Result<Entry<Resources, S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    T: 'static,
    S: Send + 'static,
{
    #[cfg(feature = "apps")]
    super::apps::check_view(&spec.resource, false)?;
    resource_entry_unchecked(spec, handler)
}

/// A resource entry, without the MCP Apps checks (for views, checked with their own
/// settings).
pub(crate) fn resource_entry_unchecked<H, T, S>(
    spec: ResourceSpec,
    handler: H,
) -> Result<Entry<Resources, S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    T: 'static,
    S: Send + 'static,
{
    let uri = &spec.resource.uri;
    if uri.is_empty() {
        return Err("a resource needs a URI".into());
    }
    super::scopes::check_declared(&spec.scopes, &format!("resource {uri:?}"))?;
    let (handler, signature) = erase::<Resources, _, _, _>(&format!("resource {uri:?}"), handler)?;
    Ok(Entry {
        asks: signature.uses_dependency_form(),
        def: spec.resource,
        handler,
        scopes: spec.scopes.into(),
    })
}

pub(crate) fn template_entry<H, T, S>(
    spec: ResourceTemplateSpec,
    handler: H,
) -> Result<Entry<Templates, S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    T: 'static,
    S: Send + 'static,
{
    let text = &spec.template.uri_template;
    let matcher =
        UriTemplate::parse(text).map_err(|e| format!("resource template {text:?}: {e}"))?;
    super::scopes::check_declared(&spec.scopes, &format!("resource template {text:?}"))?;
    let (handler, signature) =
        erase::<Templates, _, _, _>(&format!("resource template {text:?}"), handler)?;
    Ok(Entry {
        asks: signature.uses_dependency_form(),
        def: TemplateDef {
            template: spec.template,
            matcher,
        },
        handler,
        scopes: spec.scopes.into(),
    })
}
