//! `McpServer`: a high-level server built from plain async functions.
//!
//! [`builder`] collects the registrations, [`registry`] keeps them (and their list pages),
//! [`handler`] serves them as a [`Handler`](crate::server::Handler); each kind of handler
//! (tool, prompt, resource, template) is an [`entry::Entry`] of its kind.

/// The setters every spec shares: the description, title and `_meta` of the definition it
/// holds in `$field`.
macro_rules! common_setters {
    ($field:ident) => {
        /// The description (what the model, or the user, reads about it).
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.$field.description = Some(description.into());
            self
        }

        /// A human-readable title.
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.$field.title = Some(title.into());
            self
        }

        /// Its `_meta`.
        pub fn meta(mut self, meta: arctern_types::meta::JsonObject) -> Self {
            self.$field.meta = Some(meta);
            self
        }

        /// The OAuth scopes a caller's access token needs to use it (all of them). A call
        /// whose token lacks one is refused with an
        /// [`InsufficientScope`](crate::server::InsufficientScope) naming them — over HTTP,
        /// `403` with an `insufficient_scope` challenge — on both eras and every
        /// transport, before the handler runs; lists can hide it from such callers
        /// ([`McpServer::hide_unauthorized`](crate::server::McpServer::hide_unauthorized)).
        /// Needs the `auth` and `http` features, whose protected-resource layer
        /// establishes the caller's scopes. See the
        /// [authorization guide](crate::docs::authorization).
        pub fn scopes<I, T>(mut self, scopes: I) -> Self
        where
            I: IntoIterator<Item = T>,
            T: Into<String>,
        {
            self.scopes = scopes.into_iter().map(Into::into).collect();
            self
        }
    };
}

#[cfg(feature = "apps")]
mod apps;
mod builder;
mod completion;
mod entry;
mod handler;
mod handler_fn;
mod prompt;
mod registry;
mod resource;
mod scopes;
mod tool;
mod uri_template;

use std::fmt;

#[cfg(feature = "apps")]
pub use apps::ViewSpec;
pub use builder::McpServer;
pub use completion::{CompletionRequest, IntoCompletion};
pub use handler::McpHandler;
pub(crate) use handler_fn::BoxFuture;
pub use handler_fn::HandlerFn;
pub use prompt::{IntoPromptResult, PromptSpec};
pub use resource::{Blob, IntoReadResult, ResourceSpec, ResourceTemplateSpec};
pub use tool::{ArgumentCheck, IntoToolResult, Json, ToolSpec};
pub use uri_template::{UriTemplate, UriTemplateError};

/// The server an [`McpServer`] builds.
pub type BuiltServer<S = ()> = crate::server::Server<McpHandler<S>>;

/// Default number of entries per page of `tools/list`, `prompts/list`, `resources/list` and
/// `resources/templates/list`.
pub const DEFAULT_PAGE_SIZE: usize = 500;

/// A handler could not be registered (for example it mixes the two multi round-trip styles,
/// has an invalid name, or a duplicate one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    messages: Vec<String>,
}

impl RegistrationError {
    pub(crate) fn new(message: String) -> Self {
        RegistrationError {
            messages: vec![message],
        }
    }

    /// Each problem found.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.messages.as_slice() {
            [one] => write!(f, "cannot register {one}"),
            many => {
                write!(f, "cannot register {} handlers:", many.len())?;
                for m in many {
                    write!(f, "\n  - {m}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

/// Checks a tool or prompt name: 1 to 128 characters, none of them whitespace or control
/// characters.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err("a name must have 1 to 128 characters".into());
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a name may not contain whitespace or control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arctern_types::tools::ListToolsResult;

    use super::registry::encode_cursor;
    use super::*;
    use crate::server::listed::{Listed, ListedForm, Shared};

    fn handler(tools: usize) -> McpHandler {
        let mut server = McpServer::new("cache").page_size(2);
        for i in 0..tools {
            server = server.tool(format!("t{i}"), "A tool.", || async { "ok" });
        }
        server.build().unwrap().handler().clone()
    }

    fn page(
        h: &McpHandler,
        cursor: Option<&str>,
    ) -> Result<Listed<ListToolsResult>, arctern_types::ErrorObject> {
        h.inner.registry.load().tools_page(2, cursor)
    }

    fn shared(page: Listed<ListToolsResult>) -> Arc<Shared> {
        match page.into_form() {
            ListedForm::Shared(s) => s,
            ListedForm::Value(v) => panic!("not cached: {v:?}"),
        }
    }

    fn names(page: Listed<ListToolsResult>) -> (Vec<String>, Option<String>) {
        let page = page.into_result().unwrap();
        let names = page.tools.into_iter().map(|t| t.name).collect();
        (names, page.next_cursor)
    }

    #[test]
    fn pages_are_cached_per_snapshot() {
        let h = handler(5);
        let first = shared(page(&h, None).unwrap());
        assert!(Arc::ptr_eq(&first, &shared(page(&h, None).unwrap())));
        let (names0, next) = names(page(&h, None).unwrap());
        assert_eq!(
            (names0, next.clone()),
            (vec!["t0".into(), "t1".into()], Some(encode_cursor(2)))
        );
        let second = shared(page(&h, next.as_deref()).unwrap());
        assert!(Arc::ptr_eq(
            &second,
            &shared(page(&h, next.as_deref()).unwrap())
        ));
        let last = names(page(&h, Some(&encode_cursor(4))).unwrap());
        assert_eq!(last, (vec!["t4".to_owned()], None));

        // A change publishes a new snapshot, whose pages are built afresh.
        h.add_tool(ToolSpec::new("late").description("Late."), || async {
            "ok"
        })
        .unwrap();
        assert!(!Arc::ptr_eq(&first, &shared(page(&h, None).unwrap())));
        let last = names(page(&h, Some(&encode_cursor(4))).unwrap());
        assert_eq!(last, (vec!["t4".to_owned(), "late".to_owned()], None));
        assert!(h.remove_tool("t0"));
        assert_eq!(names(page(&h, None).unwrap()).0, ["t1", "t2"]);
    }

    #[test]
    fn odd_cursors_and_empty_lists() {
        let h = handler(5);
        // An offset between pages is valid, and served without touching the cache.
        let odd = page(&h, Some(&encode_cursor(1))).unwrap();
        assert!(!odd.is_shared());
        assert_eq!(
            names(odd),
            (vec!["t1".into(), "t2".into()], Some(encode_cursor(3)))
        );
        let end = page(&h, Some(&encode_cursor(5))).unwrap();
        assert_eq!(names(end), (vec![], None));
        assert!(page(&h, Some(&encode_cursor(6))).is_err());
        assert!(page(&h, Some("garbage")).is_err());

        let empty = handler(0);
        let p = page(&empty, None).unwrap();
        assert!(p.is_shared());
        assert_eq!(names(p), (vec![], None));
    }
}
