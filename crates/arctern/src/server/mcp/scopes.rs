//! Scopes declared at registration, enforced before any middleware but this module's
//! guard sees a call: by the guard, installed in front of the others when a server has
//! middleware or filters its lists, otherwise by the handler where it finds the entry.

// Without the features that establish a caller's scopes, declaring any is refused and the
// guard is not installed.
#![cfg_attr(not(all(feature = "auth", feature = "http")), allow(dead_code))]

use std::sync::Arc;

use arctern_types::ErrorObject;
use arctern_types::completion::CompletionReference;

use crate::server::InsufficientScope;
use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;
use crate::server::listed::Listed;
use crate::server::middleware::{BoxFuture, Call, Middleware, Next, Request, Response};

use super::handler::HandlerInner;
use super::registry::Registry;

/// Checks the scopes a registration declares: valid RFC 6749 scope tokens, and a build that
/// can establish a caller's scopes (the `auth` and `http` features).
pub(crate) fn check_declared(scopes: &[String], what: &str) -> Result<(), String> {
    if scopes.is_empty() {
        return Ok(());
    }
    if !cfg!(all(feature = "auth", feature = "http")) {
        return Err(format!(
            "{what}: it declares scopes, which need the `auth` and `http` features (nothing else establishes a caller's scopes)"
        ));
    }
    // scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
    let valid = |s: &String| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
    };
    match scopes.iter().find(|s| !valid(s)) {
        Some(bad) => Err(format!(
            "{what}: {bad:?} is not a scope (visible ASCII without spaces, quotes or backslashes)"
        )),
        None => Ok(()),
    }
}

/// The scopes the caller's verified access token grants; `None` without one.
fn granted(ctx: &RequestContext) -> Option<&[String]> {
    #[cfg(all(feature = "auth", feature = "http"))]
    {
        ctx.extensions()
            .get::<crate::auth::resource::VerifiedToken>()
            .map(|t| t.scopes.as_slice())
    }
    #[cfg(not(all(feature = "auth", feature = "http")))]
    {
        let _ = ctx;
        None
    }
}

/// Whether a caller granted `granted` may use something that needs `needs`.
fn allowed(needs: &[String], granted: Option<&[String]>) -> bool {
    needs.is_empty() || granted.is_some_and(|g| needs.iter().all(|n| g.contains(n)))
}

/// Refuses a call to `target`, which declares `needs`, when the caller's token lacks one
/// of them.
pub(crate) fn admit(
    needs: &[String],
    ctx: &RequestContext,
    target: &str,
) -> Result<(), ErrorObject> {
    if needs.is_empty() || allowed(needs, granted(ctx)) {
        return Ok(());
    }
    tracing::debug!(
        method = ctx.method(),
        target,
        "refused a call: insufficient scope"
    );
    Err(InsufficientScope::new(needs.iter().cloned()).to_error())
}

/// The scopes a call's target needs, as registered (`None`: nothing registered there, or no
/// target).
fn needed<S>(registry: &Registry<S>, request: &Request) -> Option<Arc<[String]>> {
    match request {
        Request::CallTool(p) => registry.tools.get(&p.name).map(|e| e.scopes.clone()),
        Request::GetPrompt(p) => registry.prompts.get(&p.name).map(|e| e.scopes.clone()),
        Request::ReadResource(p) => match registry.resources.get(&p.uri) {
            Some(e) => Some(e.scopes.clone()),
            None => registry
                .templates
                .iter()
                .find(|t| t.def.matcher.matches(&p.uri).is_some())
                .map(|t| t.scopes.clone()),
        },
        Request::Complete(p) => completion_needs(registry, &p.reference),
        _ => None,
    }
}

/// The scopes a completion needs: those of the prompt or resource template whose argument
/// it completes, since the values it suggests may show what the scopes protect.
pub(crate) fn completion_needs<S>(
    registry: &Registry<S>,
    reference: &CompletionReference,
) -> Option<Arc<[String]>> {
    match reference {
        CompletionReference::Prompt(r) => registry.prompts.get(&r.name).map(|e| e.scopes.clone()),
        CompletionReference::Resource(r) => registry
            .templates
            .iter()
            .find(|t| t.def.template.uri_template == r.uri)
            .map(|t| t.scopes.clone())
            .or_else(|| registry.resources.get(&r.uri).map(|e| e.scopes.clone())),
        _ => None,
    }
}

/// What a completion reference names, for messages.
pub(crate) fn completion_target(reference: &CompletionReference) -> &str {
    match reference {
        CompletionReference::Prompt(r) => &r.name,
        CompletionReference::Resource(r) => &r.uri,
        _ => "",
    }
}

/// The middleware an [`McpServer`](super::McpServer) with other middleware, or with
/// [`hide_unauthorized`](super::McpServer::hide_unauthorized), runs first: refuses calls
/// whose token lacks the scopes their tool, prompt or resource declares, and (when asked)
/// leaves out of the lists what the caller may not use. A server with neither has no
/// middleware at all, and its handler checks the scopes where it finds the entry.
pub(crate) struct ScopeGuard<S> {
    pub(crate) inner: Arc<HandlerInner<S>>,
    pub(crate) hide_unauthorized: bool,
}

impl<S: Send + Sync + 'static> Middleware for ScopeGuard<S> {
    fn call(&self, call: Call, next: Next) -> BoxFuture<HandlerResult<Response>> {
        let registry = self.inner.registry.load_full();
        let target = match call.request() {
            Request::Complete(p) => completion_target(&p.reference),
            _ => call.target().unwrap_or_default(),
        };
        if let Some(needs) = needed(&registry, call.request())
            && let Err(refusal) = admit(&needs, call.context(), target)
        {
            return Box::pin(std::future::ready(Err(refusal)));
        }
        let is_list = matches!(
            call.request(),
            Request::ListTools(_)
                | Request::ListPrompts(_)
                | Request::ListResources(_)
                | Request::ListResourceTemplates(_)
        );
        if !self.hide_unauthorized || !is_list || !registry.has_scopes() {
            return next.run(call);
        }
        let ctx = call.context().clone();
        Box::pin(async move {
            let response = next.run(call).await?;
            let granted = granted(&ctx);
            hide(response, &registry, granted)
        })
    }
}

/// Leaves out of a list page what the caller may not use. The page is then built for this
/// caller alone, so its cache scope becomes private.
fn hide<S>(
    response: Response,
    registry: &Registry<S>,
    granted: Option<&[String]>,
) -> HandlerResult<Response> {
    use arctern_types::result::CacheScope;
    let ok = |scopes: Option<&Arc<[String]>>| scopes.is_none_or(|s| allowed(s, granted));
    let decode = |e: serde_json::Error| {
        tracing::error!(error = %e, "could not filter a list page");
        arctern_types::ErrorObject::internal_error("Could not list")
    };
    Ok(match response {
        Response::ListTools(listed) => {
            let mut page = listed.into_result().map_err(decode)?;
            page.tools
                .retain(|t| ok(registry.tools.get(&t.name).map(|e| &e.scopes)));
            page.cache_scope = Some(CacheScope::Private);
            Response::ListTools(Listed::from(page))
        }
        Response::ListPrompts(listed) => {
            let mut page = listed.into_result().map_err(decode)?;
            page.prompts
                .retain(|p| ok(registry.prompts.get(&p.name).map(|e| &e.scopes)));
            page.cache_scope = Some(CacheScope::Private);
            Response::ListPrompts(Listed::from(page))
        }
        Response::ListResources(listed) => {
            let mut page = listed.into_result().map_err(decode)?;
            page.resources
                .retain(|r| ok(registry.resources.get(&r.uri).map(|e| &e.scopes)));
            page.cache_scope = Some(CacheScope::Private);
            Response::ListResources(Listed::from(page))
        }
        Response::ListResourceTemplates(listed) => {
            let mut page = listed.into_result().map_err(decode)?;
            page.resource_templates.retain(|t| {
                ok(registry
                    .templates
                    .iter()
                    .find(|e| e.def.template.uri_template == t.uri_template)
                    .map(|e| &e.scopes))
            });
            page.cache_scope = Some(CacheScope::Private);
            Response::ListResourceTemplates(Listed::from(page))
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_scopes_are_scope_tokens() {
        let ok = |s: &[&str]| {
            check_declared(
                &s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
                "tool \"t\"",
            )
        };
        assert!(ok(&[]).is_ok());
        if cfg!(all(feature = "auth", feature = "http")) {
            assert!(ok(&["files:write", "mcp"]).is_ok());
            for bad in ["two words", "", "quo\"te", "back\\slash", "naïve"] {
                let e = ok(&[bad]).unwrap_err();
                assert!(e.contains("is not a scope"), "{e}");
            }
        } else {
            assert!(ok(&["mcp"]).unwrap_err().contains("`auth`"));
        }
    }

    #[test]
    fn a_caller_needs_every_scope() {
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(allowed(&[], None));
        assert!(!allowed(&s(&["a"]), None));
        assert!(allowed(&s(&["a"]), Some(&s(&["b", "a"]))));
        assert!(!allowed(&s(&["a", "c"]), Some(&s(&["a", "b"]))));
    }
}
