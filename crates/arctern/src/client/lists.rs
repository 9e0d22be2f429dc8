//! The list methods: pagination, and the tool index that remembers each listed tool's
//! `x-mcp-header` plan.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arctern_types::base::Cacheable;
use arctern_types::methods;
use arctern_types::prompts::{ListPromptsResult, Prompt};
use arctern_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, Resource, ResourceTemplate,
};
use arctern_types::tools::{ListToolsResult, Tool};
use serde::de::DeserializeOwned;

use super::Client;
use super::exchange::ServerMeta;
use super::headers::{self, HeaderPlan};
use super::pipeline::Via;
use super::wire;
use crate::{Error, ErrorKind, Result};

/// The most pages a list helper follows before it gives up on a server that never stops.
const MAX_PAGES: usize = 10_000;

/// What the client knows about the listed tools: which arguments each mirrors into headers,
/// and which were rejected for invalid `x-mcp-header` annotations.
#[derive(Default)]
pub(super) struct ToolIndex {
    /// Bumped by every announced change of the tool list.
    pub(super) generation: u64,
    /// Whether the whole list has been read since the last change.
    pub(super) complete: bool,
    pub(super) plans: HashMap<String, Arc<HeaderPlan>>,
    pub(super) rejected: HashMap<String, String>,
}

impl ToolIndex {
    /// Forgets the listing after a change announcement.
    pub(super) fn bump(&mut self) {
        *self = ToolIndex {
            generation: self.generation.wrapping_add(1),
            ..ToolIndex::default()
        };
    }
}

impl Client {
    // ---------------------------------------------------------------- lists

    /// Every tool, following cursors. On HTTP, tools with invalid `x-mcp-header`
    /// annotations are left out (with a warning).
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let _guard = self.inner.tools_refresh.lock().await;
        self.list_all_tools(false, None).await
    }

    /// Every tool (`fresh`: not from the cache), sent `via` the layers below one when given;
    /// remembers each tool's header plan.
    pub(super) async fn list_all_tools(&self, fresh: bool, via: Option<&Via>) -> Result<Vec<Tool>> {
        let mut tools = Vec::new();
        let generation = self.tools_generation();
        let mut index = ToolIndex {
            generation,
            ..ToolIndex::default()
        };
        self.paginate(
            |cursor| async move { self.tools_page_sized(cursor.as_deref(), fresh, via).await },
            |p: &ListToolsResult| (p.next_cursor.clone(), p.tools.len()),
            |page: ListToolsResult| self.index_tools(page.tools, &mut index, &mut tools),
        )
        .await?;
        index.complete = true;
        let mut shared = self.inner.tools.write().unwrap_or_else(|e| e.into_inner());
        // A change announced while we listed makes this listing stale; keep it incomplete.
        if shared.generation == generation {
            *shared = index;
        }
        Ok(tools)
    }

    pub(super) fn tools_generation(&self) -> u64 {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .generation
    }

    /// One page of tools (`cursor` from the previous page's `nextCursor`). On HTTP, tools
    /// with invalid `x-mcp-header` annotations are left out (with a warning).
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult> {
        let mut page = self.tools_page(cursor, false).await?;
        let mut kept = Vec::with_capacity(page.tools.len());
        let mut shared = ToolIndex::default();
        self.index_tools(std::mem::take(&mut page.tools), &mut shared, &mut kept);
        page.tools = kept;
        let mut index = self.inner.tools.write().unwrap_or_else(|e| e.into_inner());
        index.plans.extend(shared.plans);
        index.rejected.extend(shared.rejected);
        Ok(page)
    }

    pub(super) async fn tools_page(
        &self,
        cursor: Option<&str>,
        fresh: bool,
    ) -> Result<ListToolsResult> {
        Ok(self.tools_page_sized(cursor, fresh, None).await?.0)
    }

    /// [`tools_page`](Self::tools_page), with the size of the page's JSON.
    async fn tools_page_sized(
        &self,
        cursor: Option<&str>,
        fresh: bool,
        via: Option<&Via>,
    ) -> Result<(ListToolsResult, usize)> {
        if fresh && let Some(cache) = &self.inner.cache {
            cache.invalidate(methods::TOOLS_LIST, cursor.unwrap_or(""));
        }
        self.list_page_via(methods::TOOLS_LIST, cursor, via).await
    }

    /// One page of the list `method` (from the cache when it is on), with the size of its
    /// JSON; notes the server's identity.
    async fn list_page<T: DeserializeOwned + Cacheable + ServerMeta>(
        &self,
        method: &'static str,
        cursor: Option<&str>,
    ) -> Result<(T, usize)> {
        self.list_page_via(method, cursor, None).await
    }

    /// [`list_page`](Self::list_page), sent `via` the layers below one when given.
    async fn list_page_via<T: DeserializeOwned + Cacheable + ServerMeta>(
        &self,
        method: &'static str,
        cursor: Option<&str>,
        via: Option<&Via>,
    ) -> Result<(T, usize)> {
        let key = cursor.unwrap_or("");
        let (page, size): (T, _) = self
            .cacheable_sized(method, key, &wire::CursorParams { cursor }, via)
            .await?;
        self.note_server_info(page.meta());
        Ok((page, size))
    }

    /// Keeps the tools of a listed page whose `x-mcp-header` annotations are valid (in
    /// `kept`), and records each tool's plan or why it was rejected in `index`.
    fn index_tools(&self, tools: Vec<Tool>, index: &mut ToolIndex, kept: &mut Vec<Tool>) {
        for tool in tools {
            match self.index_tool(&tool) {
                Ok(plan) => {
                    index.plans.insert(tool.name.clone(), plan);
                    kept.push(tool);
                }
                Err(why) => {
                    index.rejected.insert(tool.name.clone(), why);
                }
            }
        }
    }

    /// Validates a listed tool's `x-mcp-header` annotations (HTTP only).
    pub(super) fn index_tool(&self, tool: &Tool) -> std::result::Result<Arc<HeaderPlan>, String> {
        // `x-mcp-header` means nothing on the legacy wire.
        if !self.inner.mirrors || self.is_legacy() {
            return Ok(Arc::new(HeaderPlan::default()));
        }
        headers::validate_tool(tool).map(Arc::new).map_err(|why| {
            tracing::warn!(tool = %tool.name, reason = %why, "dropped a tool with an invalid x-mcp-header annotation");
            why
        })
    }

    /// Re-lists every tool, bypassing the cache (after a header mismatch), `via` the layers
    /// below the one that asks.
    pub(super) async fn refresh_tools(&self, via: Option<&Via>) -> Result<()> {
        let _guard = self.inner.tools_refresh.lock().await;
        self.list_all_tools(true, via).await.map(drop)
    }

    /// The header plan of a tool, listing tools first (`via` the layers below the one that
    /// asks) if they were never listed.
    pub(super) async fn header_plan(
        &self,
        tool: &str,
        via: Option<&Via>,
    ) -> Result<Option<Arc<HeaderPlan>>> {
        let lookup =
            |index: &ToolIndex| -> std::result::Result<Option<Arc<HeaderPlan>>, Option<String>> {
                if let Some(plan) = index.plans.get(tool) {
                    return Ok(Some(plan.clone()));
                }
                if let Some(why) = index.rejected.get(tool) {
                    return Err(Some(why.clone()));
                }
                if index.complete { Ok(None) } else { Err(None) }
            };
        let rejected = |why: String| {
            Error::new(
                ErrorKind::Config,
                format!("tool {tool:?} was rejected: invalid x-mcp-header annotation ({why})"),
            )
        };
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => return Ok(plan),
            Err(Some(why)) => return Err(rejected(why)),
            Err(None) => {}
        }
        let _guard = self.inner.tools_refresh.lock().await;
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => return Ok(plan),
            Err(Some(why)) => return Err(rejected(why)),
            Err(None) => {}
        }
        if let Err(e) = self.list_all_tools(false, via).await {
            // The call itself will tell whether the tool exists; go without mirrored headers.
            tracing::debug!(error = %e, "could not list tools to find x-mcp-header annotations");
            return Ok(None);
        }
        match lookup(&self.inner.tools.read().unwrap_or_else(|e| e.into_inner())) {
            Ok(plan) => Ok(plan),
            Err(Some(why)) => Err(rejected(why)),
            Err(None) => Ok(None),
        }
    }

    /// Follows cursors: `fetch` gets a page and its size in bytes, `next` reads its cursor
    /// and its number of items, `take` consumes it. Stops with an error beyond the list
    /// budget ([`ClientBuilder::list_budget`](super::ClientBuilder::list_budget)).
    pub(super) async fn paginate<T, F, Fut>(
        &self,
        mut fetch: F,
        next: impl Fn(&T) -> (Option<String>, usize),
        mut take: impl FnMut(T),
    ) -> Result<()>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<(T, usize)>>,
    {
        let limits = &self.inner.limits;
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let (mut items, mut bytes) = (0usize, 0usize);
        for _ in 0..MAX_PAGES {
            let (page, size) = fetch(cursor.take()).await?;
            let (next_cursor, count) = next(&page);
            items = items.saturating_add(count);
            bytes = bytes.saturating_add(size);
            if items > limits.max_list_items || bytes > limits.max_list_bytes {
                return Err(Error::new(
                    ErrorKind::Transport,
                    format!(
                        "the server's list exceeds this client's budget ({} items, {} bytes; \
                         see ClientBuilder::list_budget)",
                        limits.max_list_items, limits.max_list_bytes
                    ),
                ));
            }
            take(page);
            match next_cursor {
                None => return Ok(()),
                Some(c) if !seen.insert(c.clone()) => {
                    return Err(Error::new(
                        ErrorKind::Transport,
                        "the server repeated a pagination cursor",
                    ));
                }
                Some(c) => cursor = Some(c),
            }
        }
        Err(Error::new(
            ErrorKind::Transport,
            "the server returned too many pages",
        ))
    }

    /// Every prompt, following cursors.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                self.list_page(methods::PROMPTS_LIST, cursor.as_deref())
                    .await
            },
            |p: &ListPromptsResult| (p.next_cursor.clone(), p.prompts.len()),
            |page| all.extend(page.prompts),
        )
        .await?;
        Ok(all)
    }

    /// One page of prompts.
    pub async fn list_prompts_page(&self, cursor: Option<&str>) -> Result<ListPromptsResult> {
        Ok(self.list_page(methods::PROMPTS_LIST, cursor).await?.0)
    }

    /// Every resource, following cursors.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                self.list_page(methods::RESOURCES_LIST, cursor.as_deref())
                    .await
            },
            |p: &ListResourcesResult| (p.next_cursor.clone(), p.resources.len()),
            |page| all.extend(page.resources),
        )
        .await?;
        Ok(all)
    }

    /// One page of resources.
    pub async fn list_resources_page(&self, cursor: Option<&str>) -> Result<ListResourcesResult> {
        Ok(self.list_page(methods::RESOURCES_LIST, cursor).await?.0)
    }

    /// Every resource template, following cursors.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        let mut all = Vec::new();
        self.paginate(
            |cursor| async move {
                self.list_page(methods::RESOURCES_TEMPLATES_LIST, cursor.as_deref())
                    .await
            },
            |p: &ListResourceTemplatesResult| (p.next_cursor.clone(), p.resource_templates.len()),
            |page| all.extend(page.resource_templates),
        )
        .await?;
        Ok(all)
    }

    /// One page of resource templates.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult> {
        Ok(self
            .list_page(methods::RESOURCES_TEMPLATES_LIST, cursor)
            .await?
            .0)
    }
}
