//! Tasks (the `io.modelcontextprotocol/tasks` extension) on the client: following a task a
//! `tools/call` became, and the explicit API to start, poll, answer and cancel one.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use arctern_types::meta::{JsonObject, RequestMeta};
use arctern_types::methods;
use arctern_types::mrtr::{InputRequiredResult, InputResponses};
use arctern_types::result::EmptyResult;
use arctern_types::tasks::{DetailedTask, GetTaskResult, Task, TaskStatus};
use arctern_types::tools::CallToolResult;
use serde::Serialize;
use serde_json::Value;

use super::Client;
use super::exchange::Req;
use super::handler::InputOrigin;
use super::mrtr::{CallOptions, Target, TaskStatusFn};
use super::wire;
use crate::{Error, ErrorKind, Result};

/// The shortest and the longest pause between two polls, whatever the server suggests.
const MIN_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_secs(30);
/// The pause when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// How a tool call started: its result at once, or a task to follow.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolStart {
    /// The server answered with the result.
    Complete(CallToolResult),
    /// The server made the call a task: poll it ([`Client::get_task`]), answer its
    /// questions ([`Client::update_task`]), cancel it ([`Client::cancel_task`]), or follow it
    /// to the end ([`Client::wait_task`]).
    Task(Task),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams<'a> {
    task_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a InputResponses>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a RequestMeta>,
}

impl Client {
    /// Calls a tool, answering its multi round-trip rounds, but stops where the server makes
    /// it a task (the client declares the extension unless
    /// [`ClientBuilder::tasks`](super::ClientBuilder::tasks) turned it off).
    pub async fn start_tool(&self, name: &str, arguments: impl Serialize) -> Result<ToolStart> {
        self.start_tool_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`start_tool`](Self::start_tool) with per-call options.
    pub async fn start_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<ToolStart> {
        let arguments = super::mrtr::tool_arguments(name, arguments)?;
        let target = Target::Tool {
            name,
            arguments: arguments.as_ref(),
        };
        match self
            .drive_until_task::<CallToolResult>(target, options, &mut 0)
            .await?
        {
            super::mrtr::Driven::Complete(result, _) => Ok(ToolStart::Complete(result)),
            super::mrtr::Driven::Task(task) => Ok(ToolStart::Task(task.task)),
        }
    }

    /// `tasks/get`: the task's current state.
    pub async fn get_task(&self, task_id: &str) -> Result<DetailedTask> {
        let raw = self.task_request(methods::TASKS_GET, task_id, None).await?;
        let result: GetTaskResult = wire::decode(&raw, methods::TASKS_GET)?;
        if result.task.task.task_id != task_id {
            return Err(Error::new(
                ErrorKind::Codec,
                "the server answered tasks/get with another task",
            ));
        }
        Ok(result.task)
    }

    /// `tasks/update`: answers some or all of the task's outstanding questions.
    pub async fn update_task(&self, task_id: &str, responses: &InputResponses) -> Result<()> {
        let raw = self
            .task_request(methods::TASKS_UPDATE, task_id, Some(responses))
            .await?;
        let _: EmptyResult = wire::decode(&raw, methods::TASKS_UPDATE)?;
        Ok(())
    }

    /// `tasks/cancel`: asks the server to stop the task (cooperative: it may still finish).
    pub async fn cancel_task(&self, task_id: &str) -> Result<()> {
        let raw = self
            .task_request(methods::TASKS_CANCEL, task_id, None)
            .await?;
        let _: EmptyResult = wire::decode(&raw, methods::TASKS_CANCEL)?;
        Ok(())
    }

    /// Follows a task of a `tools/call` to its end: polls it at the interval the server
    /// suggests, answers its questions with this client's handlers (each key once), and
    /// cancels it if the returned future is dropped before the end.
    ///
    /// A task that fails gives the server's JSON-RPC error ([`ErrorKind::Protocol`]); one
    /// that is cancelled, an [`ErrorKind::Closed`] error.
    pub async fn wait_task(&self, task: &Task, tool: &str) -> Result<CallToolResult> {
        let result = self
            .follow_task(
                task,
                Arc::new(InputOrigin::new(methods::TOOLS_CALL, tool)),
                None,
            )
            .await?;
        let result: CallToolResult =
            serde_json::from_value(Value::Object(result)).map_err(|e| {
                Error::new(ErrorKind::Codec, "the task's result is not a tool result")
                    .with_source(e)
            })?;
        Ok(result)
    }

    async fn task_request(
        &self,
        method: &'static str,
        task_id: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Box<serde_json::value::RawValue>> {
        let params = TaskParams {
            task_id,
            input_responses: responses,
            meta: None,
        };
        let observer = self.inner.observer.clone();
        self.exchange(
            Req {
                method,
                params: &params,
                name: Some(task_id),
                round: None,
                renew: true,
                observer: &observer,
                timeout: self.inner.request_timeout,
            },
            None,
        )
        .await
    }

    /// The loop of [`wait_task`](Self::wait_task): the task's final result as JSON.
    pub(super) async fn follow_task(
        &self,
        task: &Task,
        origin: Arc<InputOrigin>,
        task_status: Option<&TaskStatusFn>,
    ) -> Result<JsonObject> {
        let id = task.task_id.clone();
        let mut guard = CancelOnDrop {
            client: Some(self.clone()),
            id: id.clone(),
        };
        let mut interval = poll_interval(task.poll_interval_ms);
        let mut answered: HashSet<String> = HashSet::new();
        let mut last_message: Option<String> = None;
        loop {
            let detailed = self.get_task(&id).await?;
            if let Some(ms) = detailed.task.poll_interval_ms {
                interval = poll_interval(Some(ms));
            }
            if detailed.task.status_message != last_message {
                last_message.clone_from(&detailed.task.status_message);
                if let Some(report) = task_status {
                    report(&detailed.task);
                }
            }
            match detailed.task.status {
                TaskStatus::Completed => {
                    guard.client = None;
                    return detailed.result.ok_or_else(|| {
                        Error::new(ErrorKind::Codec, "a completed task carried no result")
                    });
                }
                TaskStatus::Failed => {
                    guard.client = None;
                    return Err(match detailed.error {
                        Some(error) => Error::protocol(error),
                        None => Error::new(ErrorKind::Codec, "a failed task carried no error"),
                    });
                }
                TaskStatus::Cancelled => {
                    guard.client = None;
                    return Err(Error::new(ErrorKind::Closed, "the task was cancelled"));
                }
                TaskStatus::InputRequired => {
                    // Each key is answered once, however many polls show it again.
                    let fresh: std::collections::BTreeMap<_, _> = detailed
                        .input_requests
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if !fresh.is_empty() {
                        let mut round = InputRequiredResult::new();
                        round.input_requests = Some(fresh);
                        let responses = self.answer_round(origin.clone(), &round, 0).await?;
                        answered.extend(responses.keys().cloned());
                        self.update_task(&id, &responses).await?;
                        continue;
                    }
                }
                // Working, or a status of a newer revision: not over, poll again.
                _ => {}
            }
            tokio::time::sleep(interval).await;
        }
    }
}

fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// Cancels a task its follower gave up on (its future was dropped).
struct CancelOnDrop {
    client: Option<Client>,
    id: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let id = std::mem::take(&mut self.id);
            rt.spawn(async move {
                if let Err(e) = client.cancel_task(&id).await {
                    tracing::debug!(error = %e, task = %id, "could not cancel an abandoned task");
                }
            });
        }
    }
}
