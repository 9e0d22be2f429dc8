//! Three middleware, each a few lines on [`from_fn`]: who may call which tool, how long a
//! call may take, and what each tool costs. They run around every handler call, on both
//! eras and every transport (see [`arctern::server::middleware`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arctern::ErrorObject;
use arctern::server::Listed;
use arctern::server::middleware::{Call, Middleware, Next, Response, from_fn};

/// A per-tool allow-list by principal: a caller sees and calls only the tools listed for
/// it (a caller without a principal is `""`). Everything else passes through.
pub fn allow_list<'a>(
    rules: impl IntoIterator<Item = (&'a str, &'a [&'a str])>,
) -> impl Middleware {
    let rules: Arc<HashMap<String, HashSet<String>>> = Arc::new(
        rules
            .into_iter()
            .map(|(who, tools)| {
                (
                    who.to_owned(),
                    tools.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect(),
    );
    from_fn(move |call: Call, next: Next| {
        let rules = rules.clone();
        async move {
            let who = call.principal().map(|p| p.0.clone()).unwrap_or_default();
            let allowed = |tool: &str| rules.get(&who).is_some_and(|tools| tools.contains(tool));
            if call.method() == "tools/call" {
                let tool = call.target().unwrap_or_default().to_owned();
                if !allowed(&tool) {
                    tracing::info!(%who, %tool, "refused a tool call");
                    return Err(ErrorObject::invalid_params(format!("Unknown tool: {tool}")));
                }
            }
            match next.run(call).await? {
                // Hide what the caller may not use.
                Response::ListTools(page) => {
                    let mut page = page
                        .into_result()
                        .map_err(|e| ErrorObject::internal_error(e.to_string()))?;
                    page.tools.retain(|t| allowed(&t.name));
                    Ok(Response::ListTools(Listed::value(page)))
                }
                other => Ok(other),
            }
        }
    })
}

/// A per-call timeout. On a multi round-trip call it bounds each round's handler run, not
/// the time the user takes to answer.
pub fn timeout(limit: Duration) -> impl Middleware {
    from_fn(move |call: Call, next: Next| async move {
        let what = call.target().unwrap_or(call.method()).to_owned();
        match tokio::time::timeout(limit, next.run(call)).await {
            Ok(response) => response,
            Err(_) => {
                tracing::warn!(%what, ?limit, "a call ran out of time");
                Err(ErrorObject::internal_error(format!(
                    "{what} took longer than {} ms",
                    limit.as_millis()
                )))
            }
        }
    })
}

/// What one tool cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolStats {
    /// Calls answered (every round of a multi round-trip call counts).
    pub calls: u64,
    /// Calls answered with an error or an `isError` result.
    pub errors: u64,
    /// Rounds that asked the user something.
    pub input_required: u64,
    /// Time spent in the handler, in total.
    pub total: Duration,
    /// The slowest call.
    pub slowest: Duration,
}

/// Per-tool call counts and latencies, shared between the middleware and whoever reads
/// them (a metrics endpoint, a log line at shutdown).
#[derive(Debug, Clone, Default)]
pub struct ToolMetrics {
    stats: Arc<Mutex<HashMap<String, ToolStats>>>,
}

impl ToolMetrics {
    /// New, empty metrics.
    pub fn new() -> Self {
        Self::default()
    }

    /// The middleware that records into these metrics.
    pub fn layer(&self) -> impl Middleware {
        let stats = self.stats.clone();
        from_fn(move |call: Call, next: Next| {
            let stats = stats.clone();
            async move {
                let tool = (call.method() == "tools/call")
                    .then(|| call.target().unwrap_or_default().to_owned());
                let started = Instant::now();
                let response = next.run(call).await;
                if let Some(tool) = tool {
                    let took = started.elapsed();
                    let mut stats = stats.lock().unwrap_or_else(|e| e.into_inner());
                    let entry = stats.entry(tool).or_default();
                    entry.calls += 1;
                    entry.total += took;
                    entry.slowest = entry.slowest.max(took);
                    match &response {
                        Err(_) => entry.errors += 1,
                        Ok(r) if r.is_tool_error() => entry.errors += 1,
                        Ok(r) if r.is_input_required() => entry.input_required += 1,
                        Ok(_) => {}
                    }
                }
                response
            }
        })
    }

    /// A copy of the figures, by tool.
    pub fn snapshot(&self) -> HashMap<String, ToolStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
