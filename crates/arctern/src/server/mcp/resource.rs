//! Resources and resource templates: registration, return types, erased handlers.

use std::marker::PhantomData;
use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::content::{BlobResourceContents, ResourceContents, TextResourceContents};
use arctern_types::meta::JsonObject;
use arctern_types::resources::{ReadResourceResult, Resource, ResourceTemplate};
use base64::Engine as _;

use super::extract::{CallParts, Describe, Form};
use super::handler_fn::{BoxFuture, HandlerFn, Run};
use super::uri_template::UriTemplate;
use crate::server::handler::HandlerResult;
use crate::server::outcome::Outcome;

/// Binary resource content, sent base64-encoded as a `blob`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

/// What a resource handler returns, turned into a `resources/read` result.
///
/// Implemented for [`ReadResourceResult`], `String` (text), [`Blob`] and `Vec<u8>` (binary),
/// [`ResourceContents`], `Vec<ResourceContents>`, `Outcome<ReadResourceResult>` (the manual
/// multi round-trip form), and `Result<T, E>` where `E` converts into a JSON-RPC error. Text
/// and binary content take the URI that was read and the MIME type the resource declares.
pub trait IntoReadResult: Send + 'static {
    /// Converts into the protocol result.
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>>;

    /// Declares a multi round-trip form, at registration.
    fn describe(describe: &mut Describe) {
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

    fn describe(describe: &mut Describe) {
        describe.form(Form::Manual, "the Outcome return type");
    }
}

impl<T, E> IntoReadResult for Result<T, E>
where
    T: IntoReadResult,
    E: Into<ErrorObject> + Send + 'static,
{
    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        match self {
            Ok(t) => t.into_read_result(uri, mime),
            Err(e) => Err(e.into()),
        }
    }

    fn describe(describe: &mut Describe) {
        T::describe(describe);
    }
}

/// Describes a concrete resource.
#[derive(Debug, Clone)]
pub struct ResourceSpec {
    pub(crate) resource: Resource,
}

impl ResourceSpec {
    /// A resource at `uri` called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceSpec {
            resource: Resource::new(uri, name),
        }
    }

    /// What the resource holds.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
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

    /// Resource `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.resource.meta = Some(meta);
        self
    }
}

impl From<Resource> for ResourceSpec {
    fn from(resource: Resource) -> Self {
        ResourceSpec { resource }
    }
}

/// Describes a resource template (RFC 6570), such as `config://{env}`.
#[derive(Debug, Clone)]
pub struct ResourceTemplateSpec {
    pub(crate) template: ResourceTemplate,
}

impl ResourceTemplateSpec {
    /// A template `uri_template` called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplateSpec {
            template: ResourceTemplate::new(uri_template, name),
        }
    }

    /// What the resources hold.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.template.title = Some(title.into());
        self
    }

    /// The MIME type of the content.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// Template `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.template.meta = Some(meta);
        self
    }
}

impl From<ResourceTemplate> for ResourceTemplateSpec {
    fn from(template: ResourceTemplate) -> Self {
        ResourceTemplateSpec { template }
    }
}

pub(crate) trait ErasedResource<S>: Send + Sync {
    fn call(
        &self,
        parts: CallParts,
        state: S,
        mime: Option<String>,
    ) -> BoxFuture<HandlerResult<Outcome<ReadResourceResult>>>;
}

struct ResourceFn<H, T> {
    handler: H,
    _marker: PhantomData<fn() -> T>,
}

impl<H, T, S> ErasedResource<S> for ResourceFn<H, T>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    S: Send + 'static,
{
    fn call(
        &self,
        parts: CallParts,
        state: S,
        mime: Option<String>,
    ) -> BoxFuture<HandlerResult<Outcome<ReadResourceResult>>> {
        let uri = parts.target.clone();
        let run = self.handler.clone().run(parts, state);
        Box::pin(async move {
            match run.await.0 {
                Run::Done(out) => out.into_read_result(&uri, mime.as_deref()),
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

impl<S> Clone for ResourceEntry<S> {
    fn clone(&self) -> Self {
        ResourceEntry {
            resource: self.resource.clone(),
            handler: self.handler.clone(),
            asks: self.asks,
        }
    }
}

impl<S> Clone for TemplateEntry<S> {
    fn clone(&self) -> Self {
        TemplateEntry {
            template: self.template.clone(),
            matcher: self.matcher.clone(),
            handler: self.handler.clone(),
            asks: self.asks,
        }
    }
}

pub(crate) struct ResourceEntry<S> {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn ErasedResource<S>>,
    /// Asks typed questions, whose answers are pinned in sealed request state.
    pub(crate) asks: bool,
}

pub(crate) struct TemplateEntry<S> {
    pub(crate) template: ResourceTemplate,
    pub(crate) matcher: UriTemplate,
    pub(crate) handler: Arc<dyn ErasedResource<S>>,
    /// Asks typed questions, whose answers are pinned in sealed request state.
    pub(crate) asks: bool,
}

fn erase<H, T, S>(what: &str, handler: H) -> Result<(Arc<dyn ErasedResource<S>>, bool), String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    T: 'static,
    S: Send + 'static,
{
    let mut describe = Describe::default();
    H::describe_params(&mut describe);
    <H::Output as IntoReadResult>::describe(&mut describe);
    let describe = describe.finish(what)?;
    let handler: Arc<dyn ErasedResource<S>> = Arc::new(ResourceFn {
        handler,
        _marker: PhantomData,
    });
    Ok((handler, describe.uses_dependency_form()))
}

pub(crate) fn resource_entry<H, T, S>(
    spec: ResourceSpec,
    handler: H,
) -> Result<ResourceEntry<S>, String>
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
    let (handler, asks) = erase(&format!("resource {uri:?}"), handler)?;
    Ok(ResourceEntry {
        resource: spec.resource,
        handler,
        asks,
    })
}

pub(crate) fn template_entry<H, T, S>(
    spec: ResourceTemplateSpec,
    handler: H,
) -> Result<TemplateEntry<S>, String>
where
    H: HandlerFn<T, S>,
    H::Output: IntoReadResult,
    T: 'static,
    S: Send + 'static,
{
    let text = &spec.template.uri_template;
    let matcher =
        UriTemplate::parse(text).map_err(|e| format!("resource template {text:?}: {e}"))?;
    let (handler, asks) = erase(&format!("resource template {text:?}"), handler)?;
    Ok(TemplateEntry {
        template: spec.template,
        matcher,
        handler,
        asks,
    })
}
