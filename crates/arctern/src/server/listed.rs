//! List results, sent as values or serialized once and shared.

use std::fmt;
use std::sync::Arc;

use arctern_types::meta::Meta;
use serde::de::DeserializeOwned;

use super::wire::WireResult;

/// A result of a list method: `tools/list`, `prompts/list`, `resources/list` and
/// `resources/templates/list`. Sealed.
pub trait ListResult: WireResult + DeserializeOwned + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! list_result {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ListResult for $t {}
    )*};
}

list_result!(
    arctern_types::tools::ListToolsResult,
    arctern_types::prompts::ListPromptsResult,
    arctern_types::resources::ListResourcesResult,
    arctern_types::resources::ListResourceTemplatesResult
);

/// What a [`Handler`](super::Handler)'s list method returns: a page as a value, serialized
/// for each response as usual (`Ok(page.into())`), or a page serialized once and shared by
/// every response that sends it ([`Listed::shared`]).
///
/// A list that stays the same across many requests costs little to send in the shared form:
/// build it once per page and per version of the data with [`Listed::shared`], keep it,
/// and return clones (an `Arc` each). Each response then copies bytes instead of cloning and
/// serializing every entry ([`McpServer`](super::McpServer) does this for you). The
/// server still finishes the result the same way in both forms: it puts
/// `io.modelcontextprotocol/serverInfo` into `_meta` (next to the result's own `_meta`), adds
/// the `ttlMs` and `cacheScope` of its [`CachePolicy`](super::CachePolicy) where the result
/// leaves them unset, and leaves out the 2026-07-28 members for 2025-era clients. So the
/// content on the wire does not depend on the form.
///
/// ```
/// use arctern::server::Listed;
/// use arctern::types::tools::{ListToolsResult, Tool};
///
/// let page = ListToolsResult::new(vec![Tool::new("echo", "Echoes.", Default::default())]);
/// let shared = Listed::shared(page.clone()).unwrap();
/// assert!(shared.is_shared());
/// assert_eq!(shared.clone().into_result().unwrap(), page);
/// assert!(!Listed::from(page).is_shared());
/// ```
pub struct Listed<R> {
    repr: ListedForm<R>,
}

/// The two forms, as the engine sees them.
pub(crate) enum ListedForm<R> {
    Value(R),
    Shared(Arc<Shared>),
}

/// The shared form: what the engine splices into each response.
pub(crate) struct Shared {
    /// The result as a JSON object, without its `_meta` (the engine merges `serverInfo` in).
    pub(crate) json: Box<[u8]>,
    /// The result's own `_meta`.
    pub(crate) meta: Option<Meta>,
    /// Whether `ttlMs` was left unset, so the server's hint applies.
    pub(crate) ttl_unset: bool,
    /// Whether `cacheScope` was left unset, so the server's hint applies.
    pub(crate) scope_unset: bool,
}

impl<R> Listed<R> {
    /// The value form, for results the engine serializes per response.
    pub fn value(result: R) -> Self {
        Listed {
            repr: ListedForm::Value(result),
        }
    }

    /// Whether this is the shared, already serialized form.
    pub fn is_shared(&self) -> bool {
        matches!(self.repr, ListedForm::Shared(_))
    }

    pub(crate) fn into_form(self) -> ListedForm<R> {
        self.repr
    }
}

impl<R: ListResult> Listed<R> {
    /// Serializes `result` once, for any number of responses. Fails only where `serde_json`
    /// itself fails, which these results' JSON members do not make it do.
    pub fn shared(mut result: R) -> Result<Self, serde_json::Error> {
        let meta = result.meta_mut().take();
        let (ttl_unset, scope_unset) = result.unset_cache_hint();
        let json = serde_json::to_vec(&result)?.into_boxed_slice();
        Ok(Listed {
            repr: ListedForm::Shared(Arc::new(Shared {
                json,
                meta,
                ttl_unset,
                scope_unset,
            })),
        })
    }

    /// The result as a value: the value form as it is, the shared form parsed back (which
    /// costs a full parse: meant for tests and for callers outside the request path).
    pub fn into_result(self) -> Result<R, serde_json::Error> {
        match self.repr {
            ListedForm::Value(r) => Ok(r),
            ListedForm::Shared(shared) => {
                let mut result: R = serde_json::from_slice(&shared.json)?;
                *result.meta_mut() = shared.meta.clone();
                Ok(result)
            }
        }
    }
}

impl<R: ListResult> From<R> for Listed<R> {
    /// The value form: serialized for each response, as any result.
    fn from(result: R) -> Self {
        Listed::value(result)
    }
}

impl<R: Clone> Clone for Listed<R> {
    /// Clones the value, or shares the serialized form (an `Arc`).
    fn clone(&self) -> Self {
        Listed {
            repr: match &self.repr {
                ListedForm::Value(r) => ListedForm::Value(r.clone()),
                ListedForm::Shared(s) => ListedForm::Shared(s.clone()),
            },
        }
    }
}

impl<R: fmt::Debug> fmt::Debug for Listed<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            ListedForm::Value(r) => f.debug_tuple("Listed::Value").field(r).finish(),
            ListedForm::Shared(s) => f
                .debug_struct("Listed::Shared")
                .field("json", &String::from_utf8_lossy(&s.json))
                .field("meta", &s.meta)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arctern_types::result::CacheScope;
    use arctern_types::tools::{ListToolsResult, Tool};
    use serde_json::json;

    fn page() -> ListToolsResult {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let mut page = ListToolsResult::new(vec![Tool::new(
            "echo",
            "Echoes.",
            schema.as_object().unwrap().clone(),
        )])
        .with_next_cursor("next");
        page.meta = Some(json!({"example.com/k": 1}).as_object().unwrap().clone());
        page
    }

    #[test]
    fn shared_form_keeps_meta_aside_and_round_trips() {
        let prepared = Listed::shared(page()).unwrap();
        let ListedForm::Shared(shared) = prepared.clone().into_form() else {
            panic!("not shared");
        };
        let body: serde_json::Value = serde_json::from_slice(&shared.json).unwrap();
        assert!(body.get("_meta").is_none(), "{body}");
        assert_eq!(body["tools"][0]["name"], "echo");
        assert!(shared.meta.is_some());
        assert!(shared.ttl_unset && shared.scope_unset);
        assert_eq!(prepared.into_result().unwrap(), page());
    }

    #[test]
    fn hints_the_result_sets_are_kept() {
        let mut p = page();
        p.ttl_ms = Some(5);
        p.cache_scope = Some(CacheScope::Public);
        let ListedForm::Shared(shared) = Listed::shared(p).unwrap().into_form() else {
            panic!("not shared");
        };
        assert!(!shared.ttl_unset && !shared.scope_unset);
        let body: serde_json::Value = serde_json::from_slice(&shared.json).unwrap();
        assert_eq!(
            (body["ttlMs"].clone(), body["cacheScope"].clone()),
            (json!(5), json!("public"))
        );
    }
}
