//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663).
//!
//! A server that the client allowed (by declaring the extension in the request's
//! `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`) may answer a `tools/call`
//! with a [`CreateTaskResult`] (`"resultType": "task"`) instead of its result. The client then
//! polls `tasks/get` ([`GetTaskResult`], a [`DetailedTask`]), answers the task's questions with
//! `tasks/update` ([`UpdateTaskRequestParams`]) and may cancel it with `tasks/cancel`. A server
//! may also push `notifications/tasks` ([`TaskStatusNotificationParams`]) on a
//! `subscriptions/listen` stream that asked for the task's id.
//!
//! Inside a task the server's questions travel in [`DetailedTask::input_requests`] (the same
//! [`InputRequest`](crate::InputRequest) values as multi round-trip requests), and the answers
//! in `tasks/update`; there is no `requestState`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::NotificationMeta;
use crate::error::ErrorObject;
use crate::meta::{JsonObject, Meta, RequestMeta};
use crate::mrtr::{InputRequests, InputResponses};
use crate::result::ResultType;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The status of a task. `completed`, `failed` and `cancelled` are terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server needs answers (see [`DetailedTask::input_requests`]).
    InputRequired,
    /// Finished with a result (a tool result with `isError: true` included).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task's state no longer changes.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every view of a task carries (`Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The task's identifier (server-generated, unguessable).
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// A message about the current status (progress, what is awaited, why it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 timestamp of its creation.
    pub created_at: String,
    /// ISO 8601 timestamp of its last change.
    pub last_updated_at: String,
    /// Time to live from creation in milliseconds, `null` for unlimited (always written).
    #[serde(serialize_with = "always", deserialize_with = "nullable", default)]
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Members this type does not model, kept as received and written back as they came.
    /// The objects that embed a task ([`DetailedTask`], [`CreateTaskResult`],
    /// [`GetTaskResult`], [`TaskStatusNotificationParams`]) keep their own unknown members
    /// here too: one map per object, so that nothing is written twice.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn always<S: Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    value.serialize(s)
}

fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

impl Task {
    /// A task in `status`, created and last updated at `at`.
    pub fn new(task_id: impl Into<String>, status: TaskStatus, at: impl Into<String>) -> Self {
        let at = at.into();
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: at.clone(),
            last_updated_at: at,
            ttl_ms: None,
            poll_interval_ms: None,
            extra: JsonObject::new(),
        }
    }
}

/// A task with what its status carries (`DetailedTask`: `WorkingTask`, `InputRequiredTask`,
/// `CompletedTask`, `FailedTask`, `CancelledTask`), as `tasks/get` and `notifications/tasks`
/// give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// `input_required`: every outstanding question, by key (keys are unique over the task's
    /// lifetime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// `completed`: what the original request would have returned (for `tools/call`, the
    /// `CallToolResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error the request ended with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl DetailedTask {
    /// A task with nothing inlined.
    pub fn new(task: Task) -> Self {
        DetailedTask {
            task,
            input_requests: None,
            result: None,
            error: None,
        }
    }
}

/// The answer to a request that became a task (`CreateTaskResult`, `"resultType": "task"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// `"task"`.
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task's seed state.
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            result_type: ResultType::TASK,
            meta: None,
            task,
        }
    }
}

/// `tasks/get` params (`GetTaskRequest`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetTaskRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The task to read.
    pub task_id: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetTaskRequestParams {
    /// Reads the task `task_id`.
    pub fn new(meta: RequestMeta, task_id: impl Into<String>) -> Self {
        GetTaskRequestParams {
            meta,
            task_id: task_id.into(),
            extra: JsonObject::new(),
        }
    }
}

/// The answer to `tasks/get` (`GetTaskResult`, `"resultType": "complete"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetTaskResult {
    /// `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task's current state.
    #[serde(flatten)]
    pub task: DetailedTask,
}

impl GetTaskResult {
    /// The answer carrying `task`.
    pub fn new(task: DetailedTask) -> Self {
        GetTaskResult {
            result_type: ResultType::COMPLETE,
            meta: None,
            task,
        }
    }
}

/// `tasks/update` params (`UpdateTaskRequest`): answers to some or all of the outstanding
/// questions. The answer is an empty result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateTaskRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The task to update.
    pub task_id: String,
    /// Answers, keyed like the task's `inputRequests`.
    #[serde(default)]
    pub input_responses: InputResponses,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UpdateTaskRequestParams {
    /// Answers some of the questions of the task `task_id`.
    pub fn new(
        meta: RequestMeta,
        task_id: impl Into<String>,
        input_responses: InputResponses,
    ) -> Self {
        UpdateTaskRequestParams {
            meta,
            task_id: task_id.into(),
            input_responses,
            extra: JsonObject::new(),
        }
    }
}

/// `tasks/cancel` params (`CancelTaskRequest`). The answer is an empty result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelTaskRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The task to cancel.
    pub task_id: String,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CancelTaskRequestParams {
    /// Cancels the task `task_id`.
    pub fn new(meta: RequestMeta, task_id: impl Into<String>) -> Self {
        CancelTaskRequestParams {
            meta,
            task_id: task_id.into(),
            extra: JsonObject::new(),
        }
    }
}

/// `notifications/tasks` params (`TaskStatusNotificationParams`): the full state of a task,
/// as `tasks/get` would give it at that moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskStatusNotificationParams {
    /// Notification metadata (the listen stream's subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The task.
    #[serde(flatten)]
    pub task: DetailedTask,
}

impl TaskStatusNotificationParams {
    /// The state of `task`, outside any listen stream (set `meta` for one).
    pub fn new(task: DetailedTask) -> Self {
        TaskStatusNotificationParams { meta: None, task }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrtr::{InputRequest, InputResponse, Outcome};
    use crate::tools::CallToolResult;
    use serde_json::{Value, json};

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
        json: Value,
    ) -> T {
        let parsed: T = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), json);
        parsed
    }

    #[test]
    fn create_task_result_matches_the_spec_example() {
        let json = json!({
            "resultType": "task",
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": 60000,
            "pollIntervalMs": 5000
        });
        let r: CreateTaskResult = round_trip(json.clone());
        assert_eq!(r.result_type, ResultType::TASK);
        assert_eq!(r.task.status, TaskStatus::Working);
        assert_eq!(r.task.ttl_ms, Some(60000));
        // Through the polymorphic result of tools/call.
        let o: Outcome<CallToolResult> = serde_json::from_value(json.clone()).unwrap();
        assert!(matches!(&o, Outcome::Task(t) if t.task.task_id.starts_with("786512e2")));
        assert_eq!(serde_json::to_value(&o).unwrap(), json);
    }

    #[test]
    fn unlimited_ttl_is_written_as_null() {
        let task = Task::new("t", TaskStatus::Working, "2025-11-25T10:30:00Z");
        let v = serde_json::to_value(CreateTaskResult::new(task)).unwrap();
        assert_eq!(v["ttlMs"], Value::Null);
        assert!(v.get("pollIntervalMs").is_none());
        assert!(v.get("requestState").is_none());
    }

    #[test]
    fn input_required_task_matches_the_spec_example() {
        let json = json!({
            "resultType": "complete",
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "input_required",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": 3600000,
            "pollIntervalMs": 5000,
            "inputRequests": {
                "name": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Please enter your name.",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"]
                        }
                    }
                }
            }
        });
        let r: GetTaskResult = round_trip(json);
        assert_eq!(r.task.task.status, TaskStatus::InputRequired);
        let requests = r.task.input_requests.unwrap();
        assert!(matches!(requests["name"], InputRequest::Elicit(_)));
    }

    #[test]
    fn completed_and_failed_tasks_match_the_spec_examples() {
        let completed: GetTaskResult = round_trip(json!({
            "resultType": "complete",
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "completed",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": 3600000,
            "pollIntervalMs": 5000,
            "result": {"content": [{"type": "text", "text": "Hello, Luca!"}], "isError": false}
        }));
        let result: CallToolResult =
            serde_json::from_value(Value::Object(completed.task.result.unwrap())).unwrap();
        assert_eq!(result.is_error, Some(false));
        let failed: GetTaskResult = round_trip(json!({
            "resultType": "complete",
            "taskId": "786512e2-9e0d-44bd-8f29-789f820fe840",
            "status": "failed",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": 3600000,
            "statusMessage": "Tool execution failed: API rate limit exceeded",
            "error": {"code": -32603, "message": "API rate limit exceeded"}
        }));
        assert_eq!(failed.task.error.unwrap().code.0, -32603);
        assert!(TaskStatus::Failed.is_terminal() && !TaskStatus::InputRequired.is_terminal());
    }

    #[test]
    fn requests_and_notifications_match_the_spec_examples() {
        let update: UpdateTaskRequestParams = serde_json::from_value(json!({
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "inputResponses": {"name": {"action": "accept", "content": {"input": "Luca"}}}
        }))
        .unwrap();
        assert!(matches!(
            update.input_responses["name"],
            InputResponse::Elicit(_)
        ));
        let get: GetTaskRequestParams = serde_json::from_value(json!({"taskId": "abc"})).unwrap();
        assert_eq!(get.task_id, "abc");
        let cancel: CancelTaskRequestParams =
            serde_json::from_value(json!({"taskId": "abc"})).unwrap();
        assert_eq!(cancel.task_id, "abc");
        let note: TaskStatusNotificationParams = round_trip(json!({
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "completed",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": 60000,
            "pollIntervalMs": 5000,
            "result": {"content": [{"type": "text", "text": "Operation completed successfully."}], "isError": false}
        }));
        assert_eq!(note.task.task.status, TaskStatus::Completed);
    }
}
