//! The registries of an [`McpServer`](super::McpServer): what is registered, and the list
//! pages, each serialized once per snapshot.

use std::sync::{Arc, OnceLock};

use arctern_types::ErrorObject;
use arctern_types::prompts::ListPromptsResult;
use arctern_types::resources::{ListResourceTemplatesResult, ListResourcesResult};
use arctern_types::tools::ListToolsResult;
use base64::Engine as _;
use indexmap::IndexMap;

use super::entry::{Entry, Kind};
use super::prompt::Prompts;
use super::resource::{Resources, Templates};
use super::tool::Tools;
use crate::server::handler::HandlerResult;
use crate::server::listed::{ListResult, Listed};
use crate::server::subscriptions::ChangeNotifier;

/// A snapshot of everything registered: read without locks on every call, and replaced
/// whole when something is added or removed.
pub(crate) struct Registry<S> {
    pub(crate) tools: IndexMap<String, Entry<Tools, S>>,
    pub(crate) prompts: IndexMap<String, Entry<Prompts, S>>,
    pub(crate) resources: IndexMap<String, Entry<Resources, S>>,
    pub(crate) templates: Vec<Entry<Templates, S>>,
    /// The list pages of this snapshot, serialized on first use.
    lists: ListCache,
}

impl<S> Default for Registry<S> {
    fn default() -> Self {
        Registry {
            tools: IndexMap::new(),
            prompts: IndexMap::new(),
            resources: IndexMap::new(),
            templates: Vec::new(),
            lists: ListCache::default(),
        }
    }
}

impl<S> Clone for Registry<S> {
    /// A copy to change and publish as the next snapshot, so with no cached pages.
    fn clone(&self) -> Self {
        Registry {
            tools: self.tools.clone(),
            prompts: self.prompts.clone(),
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            lists: ListCache::default(),
        }
    }
}

/// The pages of every list of one registry snapshot, each serialized when first asked for
/// and then shared by every response that sends it. A snapshot never changes once
/// published, and every change publishes a new one (with an empty cache), so a cached page
/// is never stale.
#[derive(Default)]
struct ListCache {
    tools: PageCache<ListToolsResult>,
    prompts: PageCache<ListPromptsResult>,
    resources: PageCache<ListResourcesResult>,
    templates: PageCache<ListResourceTemplatesResult>,
}

/// The pages of one list, by index (the page starting at `index × page size`).
struct PageCache<R> {
    /// One slot per page, made on first use: the number of pages is fixed by then.
    pages: OnceLock<Box<[OnceLock<Listed<R>>]>>,
}

impl<R> Default for PageCache<R> {
    fn default() -> Self {
        PageCache {
            pages: OnceLock::new(),
        }
    }
}

/// Why a name or URI could not be added.
fn taken(what: &str, key: &str, by: &str) -> String {
    format!("{what} {key:?}: a {what} with this {by} is already registered")
}

/// A method returning one page of a list, from the snapshot's page cache.
macro_rules! page_method {
    ($(#[$doc:meta])* $name:ident, $cache:ident, $result:ident, |$r:ident| $items:expr) => {
        $(#[$doc])*
        pub(crate) fn $name(&self, size: usize, cursor: Option<&str>) -> HandlerResult<Listed<$result>> {
            let $r = self;
            page(&self.lists.$cache, $items, size, cursor, |entries, next| {
                let mut result = $result::new(entries);
                result.next_cursor = next;
                result
            })
        }
    };
}

impl<S> Registry<S> {
    /// The scopes every entry declares (each entry's, empty for none).
    fn scopes(&self) -> impl Iterator<Item = &Arc<[String]>> {
        fn of<K: Registered, S>(r: &Registry<S>) -> impl Iterator<Item = &Arc<[String]>> {
            K::entries(r).map(|e| &e.scopes)
        }
        of::<Tools, S>(self)
            .chain(of::<Prompts, S>(self))
            .chain(of::<Resources, S>(self))
            .chain(of::<Templates, S>(self))
    }

    /// Whether anything registered declares scopes.
    #[cfg_attr(not(all(feature = "auth", feature = "http")), allow(dead_code))]
    pub(crate) fn has_scopes(&self) -> bool {
        self.scopes().any(|s| !s.is_empty())
    }

    /// Every scope declared, each once, in registration order.
    pub(crate) fn declared_scopes(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for scope in self.scopes().flat_map(|s| s.iter()) {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        all
    }

    /// Handlers that ask typed questions, for a server without sealing.
    pub(crate) fn asking_without_sealing(&self) -> Vec<String> {
        fn of<K: Registered, S>(r: &Registry<S>) -> impl Iterator<Item = String> {
            K::entries(r)
                .filter(|e| e.asks)
                .map(|e| unsealed(&K::label(&e.def)))
        }
        of::<Tools, S>(self)
            .chain(of::<Prompts, S>(self))
            .chain(of::<Resources, S>(self))
            .chain(of::<Templates, S>(self))
            .collect()
    }

    page_method!(
        /// A page of `tools/list`.
        tools_page, tools, ListToolsResult, |r| r.tools.values().map(|e| &e.def.tool)
    );
    page_method!(
        /// A page of `prompts/list`.
        prompts_page, prompts, ListPromptsResult, |r| r.prompts.values().map(|e| &e.def)
    );
    page_method!(
        /// A page of `resources/list`.
        resources_page, resources, ListResourcesResult,
        |r| r.resources.values().map(|e| &e.def)
    );
    page_method!(
        /// A page of `resources/templates/list`.
        templates_page, templates, ListResourceTemplatesResult,
        |r| r.templates.iter().map(|e| &e.def.template)
    );
}

/// A kind of entry the registry keeps: how one is named, where the entries are, and which
/// list change announces a change to them.
pub(crate) trait Registered: Kind + Sized {
    /// The entry in messages, such as `tool "x"`.
    fn label(def: &Self::Def) -> String;
    /// The entries, in listing order.
    fn entries<S>(registry: &Registry<S>) -> impl Iterator<Item = &Entry<Self, S>>;
    /// Adds an entry (or says why not: its key is taken).
    fn insert<S>(registry: &mut Registry<S>, entry: Entry<Self, S>) -> Result<(), String>;
    /// Removes the entry with this key (name, URI or URI template); returns whether it was
    /// there.
    fn remove<S>(registry: &mut Registry<S>, key: &str) -> bool;
    /// Tells open streams and sessions that the list changed.
    fn announce(notifier: &ChangeNotifier);
}

/// Adds `entry` under `key` unless the key is taken (`what` and `by` word the refusal).
fn insert_keyed<K: Kind, S>(
    entries: &mut IndexMap<String, Entry<K, S>>,
    key: String,
    entry: Entry<K, S>,
    what: &str,
    by: &str,
) -> Result<(), String> {
    if entries.contains_key(&key) {
        return Err(taken(what, &key, by));
    }
    entries.insert(key, entry);
    Ok(())
}

impl Registered for Tools {
    fn label(def: &Self::Def) -> String {
        format!("tool {:?}", def.tool.name)
    }
    fn entries<S>(registry: &Registry<S>) -> impl Iterator<Item = &Entry<Self, S>> {
        registry.tools.values()
    }
    fn insert<S>(registry: &mut Registry<S>, entry: Entry<Self, S>) -> Result<(), String> {
        let name = entry.def.tool.name.clone();
        insert_keyed(&mut registry.tools, name, entry, "tool", "name")
    }
    fn remove<S>(registry: &mut Registry<S>, key: &str) -> bool {
        registry.tools.shift_remove(key).is_some()
    }
    fn announce(notifier: &ChangeNotifier) {
        notifier.tools_changed();
    }
}

impl Registered for Prompts {
    fn label(def: &Self::Def) -> String {
        format!("prompt {:?}", def.name)
    }
    fn entries<S>(registry: &Registry<S>) -> impl Iterator<Item = &Entry<Self, S>> {
        registry.prompts.values()
    }
    fn insert<S>(registry: &mut Registry<S>, entry: Entry<Self, S>) -> Result<(), String> {
        let name = entry.def.name.clone();
        insert_keyed(&mut registry.prompts, name, entry, "prompt", "name")
    }
    fn remove<S>(registry: &mut Registry<S>, key: &str) -> bool {
        registry.prompts.shift_remove(key).is_some()
    }
    fn announce(notifier: &ChangeNotifier) {
        notifier.prompts_changed();
    }
}

impl Registered for Resources {
    fn label(def: &Self::Def) -> String {
        format!("resource {:?}", def.uri)
    }
    fn entries<S>(registry: &Registry<S>) -> impl Iterator<Item = &Entry<Self, S>> {
        registry.resources.values()
    }
    fn insert<S>(registry: &mut Registry<S>, entry: Entry<Self, S>) -> Result<(), String> {
        let uri = entry.def.uri.clone();
        insert_keyed(&mut registry.resources, uri, entry, "resource", "URI")
    }
    fn remove<S>(registry: &mut Registry<S>, key: &str) -> bool {
        registry.resources.shift_remove(key).is_some()
    }
    fn announce(notifier: &ChangeNotifier) {
        notifier.resources_changed();
    }
}

impl Registered for Templates {
    fn label(def: &Self::Def) -> String {
        format!("resource template {:?}", def.template.uri_template)
    }
    fn entries<S>(registry: &Registry<S>) -> impl Iterator<Item = &Entry<Self, S>> {
        registry.templates.iter()
    }
    fn insert<S>(registry: &mut Registry<S>, entry: Entry<Self, S>) -> Result<(), String> {
        let text = &entry.def.template.uri_template;
        if registry
            .templates
            .iter()
            .any(|t| t.def.template.uri_template == *text)
        {
            return Err(taken("resource template", text, "URI template"));
        }
        registry.templates.push(entry);
        Ok(())
    }
    fn remove<S>(registry: &mut Registry<S>, key: &str) -> bool {
        let before = registry.templates.len();
        registry
            .templates
            .retain(|t| t.def.template.uri_template != key);
        registry.templates.len() != before
    }
    fn announce(notifier: &ChangeNotifier) {
        notifier.resources_changed();
    }
}

/// The registration error of a handler asking typed questions on a server without sealing.
pub(crate) fn unsealed(what: &str) -> String {
    format!(
        "{what}: it asks typed questions, which need request-state sealing, and this server has it turned off"
    )
}

/// The page at `cursor` of `items`, `size` entries long: from `cache` when it starts where
/// this server's pages start (the cursors it hands out always do), built and cached on first
/// use.
fn page<'a, T, R>(
    cache: &PageCache<R>,
    items: impl ExactSizeIterator<Item = &'a T> + Clone,
    size: usize,
    cursor: Option<&str>,
    make: impl Fn(Vec<T>, Option<String>) -> R,
) -> HandlerResult<Listed<R>>
where
    T: Clone + 'a,
    R: ListResult + Clone,
{
    let total = items.len();
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(c)
            .filter(|s| *s <= total)
            .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
    };
    let end = (start + size).min(total);
    let build = || {
        let page = items
            .clone()
            .skip(start)
            .take(end - start)
            .cloned()
            .collect();
        make(page, (end < total).then(|| encode_cursor(end)))
    };
    let slot = (start % size == 0)
        .then(|| {
            let pages = cache.pages.get_or_init(|| {
                (0..total.div_ceil(size).max(1))
                    .map(|_| OnceLock::new())
                    .collect()
            });
            pages.get(start / size)
        })
        .flatten();
    // A cursor a client made up (any offset up to the end is valid) is served uncached.
    let Some(slot) = slot else {
        return Ok(Listed::from(build()));
    };
    let page = slot.get_or_init(|| {
        Listed::shared(build()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not serialize a list page; sending it uncached");
            Listed::from(build())
        })
    });
    Ok(page.clone())
}

const CURSOR_PREFIX: &str = "arctern.page.";

pub(crate) fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    text.strip_prefix(CURSOR_PREFIX)?.parse().ok()
}
