//! How the engine reads params and writes results of every method, generically.

use arctern_types::RequestMeta;
use arctern_types::meta::{JsonObject, Meta};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;

use super::config::CacheHint;
use super::middleware::Request;
use crate::state::{ArgsDigest, args_digest, args_digest_of_object};

/// Request params the engine can parse: it takes the `_meta` envelope out of them and may
/// compare a mirrored name with the `Mcp-Name` header.
pub(crate) trait WireParams: DeserializeOwned + Send + 'static {
    /// Moves the `_meta` envelope out.
    fn take_meta(&mut self) -> RequestMeta;
    /// The value `Mcp-Name` must mirror (tool or prompt name, resource URI).
    fn mirrored_name(&self) -> Option<&str> {
        None
    }
    /// For `tools/call`: the tool and its arguments, which `Mcp-Param-*` headers mirror.
    fn tool_call(&self) -> Option<(&str, Option<&JsonObject>)> {
        None
    }
    /// For `tools/call`, `prompts/get` and `resources/read`: what the request-state
    /// boundary reads and rewrites.
    fn mrtr(&mut self) -> Option<&mut dyn MrtrParams> {
        None
    }
}

/// Results the engine can encode: it stamps `_meta` and fills in caching hints.
///
/// Public only so that the sealed [`Preparable`](super::Preparable) can build on it; this
/// module is private, so no other crate can name or implement it.
pub trait WireResult: Serialize + Send + 'static {
    /// The result's `_meta`.
    fn meta_mut(&mut self) -> &mut Option<Meta>;
    /// Fills `ttlMs` / `cacheScope` where the handler left them unset.
    fn apply_cache_hint(&mut self, hint: CacheHint) {
        let _ = hint;
    }
    /// Whether `ttlMs` and `cacheScope` are unset (and so take the server's hint); never for
    /// results without caching hints.
    fn unset_cache_hint(&self) -> (bool, bool) {
        (false, false)
    }
}

/// [`WireParams`] for params with a `meta` field: `name` is the field `Mcp-Name` mirrors,
/// `tool_call` the arguments field of a `tools/call` (with its `name`), `mrtr: ()` marks the
/// params of a method with request state.
macro_rules! wire_params {
    ($($t:ty $(, name: $name:ident)? $(, tool_call: $args:ident)? $(, mrtr: $mrtr:tt)?);* $(;)?) => {$(
        impl WireParams for $t {
            fn take_meta(&mut self) -> RequestMeta {
                std::mem::take(&mut self.meta)
            }
            $(fn mirrored_name(&self) -> Option<&str> {
                Some(&self.$name)
            })?
            $(fn tool_call(&self) -> Option<(&str, Option<&JsonObject>)> {
                Some((&self.name, self.$args.as_ref()))
            })?
            $(fn mrtr(&mut self) -> Option<&mut dyn MrtrParams> {
                let _ = $mrtr;
                Some(self)
            })?
        }
    )*};
}

wire_params!(
    arctern_types::base::PaginatedRequestParams;
    arctern_types::tools::CallToolRequestParams, name: name, tool_call: arguments, mrtr: ();
    arctern_types::prompts::GetPromptRequestParams, name: name, mrtr: ();
    arctern_types::resources::ReadResourceRequestParams, name: uri, mrtr: ();
    arctern_types::completion::CompleteRequestParams;
    arctern_types::subscriptions::SubscriptionsListenRequestParams;
    arctern_types::tasks::GetTaskRequestParams, name: task_id;
    arctern_types::tasks::UpdateTaskRequestParams, name: task_id;
    arctern_types::tasks::CancelTaskRequestParams, name: task_id;
);

impl Request {
    /// The multi round-trip part of a `tools/call`, `prompts/get` or `resources/read`.
    pub(crate) fn mrtr(&mut self) -> Option<&mut dyn MrtrParams> {
        match self {
            Request::CallTool(p) => Some(p),
            Request::GetPrompt(p) => Some(p),
            Request::ReadResource(p) => Some(p),
            _ => None,
        }
    }
}

/// What the request state of a `tools/call`, `prompts/get` or `resources/read` is bound to.
pub(crate) trait BindingSource {
    /// The tool or prompt name, or the resource URI.
    fn target(&self) -> &str;
    /// The canonical digest of the arguments.
    fn args_digest(&self) -> ArgsDigest;
}

/// Params of `tools/call`, `prompts/get` and `resources/read`: what request state is bound
/// to, and the state itself.
pub(crate) trait MrtrParams: BindingSource {
    /// The request state.
    fn request_state_mut(&mut self) -> &mut Option<String>;
    /// The answers to the previous round's input requests.
    fn input_responses_mut(&mut self) -> &mut Option<arctern_types::mrtr::InputResponses>;
    /// A copy of what the binding covers, for a request that arrived without a token: its
    /// binding is computed only if the handler asks (most calls never do), after the
    /// handler has taken the params.
    fn binding_parts(&self) -> BindingParts;
}

/// The arguments a binding covers, copied out of a request's params.
#[derive(Debug)]
enum PartsArgs {
    /// A `tools/call`'s arguments object.
    Object(Option<JsonObject>),
    /// A `prompts/get`'s string arguments.
    Strings(Option<BTreeMap<String, String>>),
    /// `resources/read` has none.
    None,
}

/// A copy of what a request's state binding covers (see [`MrtrParams::binding_parts`]).
#[derive(Debug)]
pub(crate) struct BindingParts {
    target: String,
    args: PartsArgs,
}

impl BindingSource for BindingParts {
    fn target(&self) -> &str {
        &self.target
    }
    fn args_digest(&self) -> ArgsDigest {
        match &self.args {
            PartsArgs::Object(args) => args_digest_of_object(args.as_ref()),
            PartsArgs::Strings(args) => prompt_args_digest(args.as_ref()),
            PartsArgs::None => args_digest(None),
        }
    }
}

/// The digest of a prompt's string arguments, as the JSON object they are on the wire.
fn prompt_args_digest(args: Option<&BTreeMap<String, String>>) -> ArgsDigest {
    let args = args.map(|a| {
        Value::Object(
            a.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    });
    args_digest(args.as_ref())
}

/// [`BindingSource`] and [`MrtrParams`] for the params of a method with request state:
/// `target` is the field the state is bound to; `digest` and `parts` read the arguments of
/// `p` (the params) by reference for the digest, and as a copy for [`BindingParts`].
macro_rules! mrtr_params {
    ($($t:ty, target: $target:ident, |$p:ident| digest: $digest:expr, parts: $parts:expr;)*) => {$(
        impl BindingSource for $t {
            fn target(&self) -> &str {
                &self.$target
            }
            fn args_digest(&self) -> ArgsDigest {
                let $p = self;
                $digest
            }
        }

        impl MrtrParams for $t {
            fn request_state_mut(&mut self) -> &mut Option<String> {
                &mut self.request_state
            }
            fn input_responses_mut(&mut self) -> &mut Option<arctern_types::mrtr::InputResponses> {
                &mut self.input_responses
            }
            fn binding_parts(&self) -> BindingParts {
                let $p = self;
                BindingParts {
                    target: self.$target.clone(),
                    args: $parts,
                }
            }
        }
    )*};
}

mrtr_params!(
    arctern_types::tools::CallToolRequestParams, target: name,
        |p| digest: args_digest_of_object(p.arguments.as_ref()),
        parts: PartsArgs::Object(p.arguments.clone());
    arctern_types::prompts::GetPromptRequestParams, target: name,
        |p| digest: prompt_args_digest(p.arguments.as_ref()),
        parts: PartsArgs::Strings(p.arguments.clone());
    arctern_types::resources::ReadResourceRequestParams, target: uri,
        |_p| digest: args_digest(None),
        parts: PartsArgs::None;
);

macro_rules! wire_result {
    ($($t:ty),* $(,)?) => {$(
        impl WireResult for $t {
            fn meta_mut(&mut self) -> &mut Option<Meta> {
                &mut self.meta
            }
        }
    )*};
}

macro_rules! cacheable_result {
    ($($t:ty),* $(,)?) => {$(
        impl WireResult for $t {
            fn meta_mut(&mut self) -> &mut Option<Meta> {
                &mut self.meta
            }
            fn apply_cache_hint(&mut self, hint: CacheHint) {
                self.ttl_ms.get_or_insert(hint.ttl_ms);
                self.cache_scope.get_or_insert(hint.scope);
            }
            fn unset_cache_hint(&self) -> (bool, bool) {
                (self.ttl_ms.is_none(), self.cache_scope.is_none())
            }
        }
    )*};
}

wire_result!(
    arctern_types::tools::CallToolResult,
    arctern_types::prompts::GetPromptResult,
    arctern_types::completion::CompleteResult,
    arctern_types::mrtr::InputRequiredResult,
    arctern_types::result::EmptyResult,
    arctern_types::tasks::CreateTaskResult,
    arctern_types::tasks::GetTaskResult,
);

cacheable_result!(
    arctern_types::discover::DiscoverResult,
    arctern_types::tools::ListToolsResult,
    arctern_types::prompts::ListPromptsResult,
    arctern_types::resources::ListResourcesResult,
    arctern_types::resources::ListResourceTemplatesResult,
    arctern_types::resources::ReadResourceResult,
);
