//! Where tasks live: the [`TaskStore`] trait and the in-memory [`MemoryTaskStore`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use arctern_types::ErrorObject;
use arctern_types::meta::JsonObject;
use arctern_types::mrtr::{InputRequests, InputResponses};
use arctern_types::tasks::{DetailedTask, Task, TaskStatus};
use serde::{Deserialize, Serialize};

use super::runtime::TaskRuntime;
use super::time::rfc3339;

/// What [`TaskStore`] methods return.
pub type TaskStoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

/// The most tasks a [`MemoryTaskStore`] holds unless told otherwise (running, and finished
/// ones kept until their time to live ends).
pub const DEFAULT_TASK_CAPACITY: usize = 4096;

/// Everything the server keeps about one task: serializable, so that a store shared by a
/// fleet (Redis, a database) can hold it as one value under its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id: 128 random bits, hex.
    pub task_id: String,
    /// Who created it (the request's principal); only the same principal may read, update
    /// or cancel it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The tool it runs.
    pub tool: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last change, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// Time to live from creation; the store may forget the task afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// The polling interval suggested to clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Outstanding questions, by key.
    #[serde(default, skip_serializing_if = "InputRequests::is_empty")]
    pub input_requests: InputRequests,
    /// `completed`: the tool's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl TaskRecord {
    pub(crate) fn new(
        task_id: String,
        principal: Option<String>,
        tool: String,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
    ) -> Self {
        let now = now_ms();
        TaskRecord {
            task_id,
            principal,
            tool,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms,
            poll_interval_ms,
            input_requests: InputRequests::new(),
            result: None,
            error: None,
        }
    }

    /// When the store may forget the task (`None`: never).
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms
            .map(|ttl| self.created_at_ms.saturating_add(ttl))
    }

    /// Whether its time to live has ended at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| at <= now_ms)
    }

    /// The task as `tools/call` announces it.
    pub fn task(&self) -> Task {
        let mut task = Task::new(
            self.task_id.clone(),
            self.status,
            rfc3339(self.created_at_ms),
        );
        task.status_message = self.status_message.clone();
        task.last_updated_at = rfc3339(self.updated_at_ms);
        task.ttl_ms = self.ttl_ms;
        task.poll_interval_ms = self.poll_interval_ms;
        task
    }

    /// The task as `tasks/get` gives it: what its status carries inlined.
    pub fn detailed(&self) -> DetailedTask {
        let mut detailed = DetailedTask::new(self.task());
        match self.status {
            TaskStatus::InputRequired => {
                detailed.input_requests = Some(self.input_requests.clone())
            }
            TaskStatus::Completed => detailed.result = self.result.clone(),
            TaskStatus::Failed => detailed.error = self.error.clone(),
            _ => {}
        }
        detailed
    }

    /// Marks a change now.
    pub(crate) fn touch(&mut self) {
        self.updated_at_ms = now_ms().max(self.updated_at_ms);
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Keeps [`TaskRecord`]s by id.
///
/// The server calls [`create`](Self::create) before it answers a `tools/call` with the task,
/// so a store must make a created task visible to every later [`load`](Self::load) (on any
/// instance of a fleet) before that future resolves: task creation is strongly consistent.
/// [`save`](Self::save) replaces a record with a newer state of the same task; the server
/// saves each task from one place at a time, in order. A store may forget a record once its
/// time to live has ended ([`TaskRecord::is_expired`]), and must not return an expired one.
///
/// [`MemoryTaskStore`] serves one process. A store shared by a fleet lets every instance
/// answer `tasks/get`; the work of a task runs on the instance that created it, so a store
/// that carries a `tasks/update` or `tasks/cancel` arriving elsewhere to that instance
/// implements [`signal`](Self::signal) and [`attach`](Self::attach) too (without them,
/// route `tasks/*` by their `Mcp-Name` header, the task id, to the instance that runs it).
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task. Fails with [`TaskStoreError::Full`] when the store holds as many
    /// tasks as it may.
    fn create(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()>;

    /// The task with this id, if the store has it and it has not expired.
    fn load<'a>(&'a self, task_id: &'a str) -> TaskStoreFuture<'a, Option<TaskRecord>>;

    /// Replaces the record of a task the store has (a record it no longer has is dropped).
    fn save(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()>;

    /// Carries `signal` to the process whose work runs the task `task_id`, which this
    /// process does not run; that process's server gets it through its [`TaskInbox`].
    /// `Ok(true)`: it was handed to that process; `Ok(false)`: no process is listening for
    /// the task (its work runs nowhere any more). The default, for stores that serve one
    /// process, is `Ok(false)`.
    fn signal<'a>(&'a self, task_id: &'a str, signal: TaskSignal) -> TaskStoreFuture<'a, bool> {
        let _ = (task_id, signal);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Called once by each server that keeps its tasks here: the store passes the signals
    /// meant for the tasks this process runs, and the changes of tasks other processes run
    /// (for `notifications/tasks`), to `inbox`. The default ignores it.
    fn attach(&self, inbox: TaskInbox) {
        let _ = inbox;
    }
}

/// What an instance that does not run a task asks of the one that does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "camelCase")]
#[non_exhaustive]
pub enum TaskSignal {
    /// Answers to the task's questions (`tasks/update`).
    #[serde(rename_all = "camelCase")]
    Update {
        /// The answers, by question key.
        input_responses: InputResponses,
    },
    /// Stop the work (`tasks/cancel`).
    Cancel,
}

/// Where a [`TaskStore`] shared by several processes hands a server what other processes
/// send it ([`TaskStore::attach`]). Cheap to clone; it does not keep the server alive.
#[derive(Clone)]
pub struct TaskInbox {
    runtime: std::sync::Weak<TaskRuntime>,
}

impl fmt::Debug for TaskInbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskInbox")
            .field("open", &(self.runtime.strong_count() > 0))
            .finish()
    }
}

impl TaskInbox {
    pub(crate) fn new(runtime: std::sync::Weak<TaskRuntime>) -> Self {
        TaskInbox { runtime }
    }

    /// Hands `signal` to the work of task `task_id`: `true` when it runs in this server.
    pub async fn deliver(&self, task_id: &str, signal: TaskSignal) -> bool {
        match self.runtime.upgrade() {
            Some(runtime) => runtime.receive(task_id, signal).await,
            None => false,
        }
    }

    /// Tells this server's `notifications/tasks` listeners that a task another process runs
    /// changed (the record as that process saved it).
    pub fn changed(&self, record: TaskRecord) {
        if let Some(runtime) = self.runtime.upgrade() {
            runtime.changed_elsewhere(record);
        }
    }

    /// Whether the server is still there.
    pub fn is_open(&self) -> bool {
        self.runtime.strong_count() > 0
    }
}

/// A [`TaskStore`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may.
    Full,
    /// The store failed (unreachable, a record that does not decode...).
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl TaskStoreError {
    /// A backend failure with this cause.
    pub fn backend(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        TaskStoreError::Backend(cause.into())
    }
}

impl fmt::Display for TaskStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskStoreError::Full => f.write_str("the task store is full"),
            TaskStoreError::Backend(e) => write!(f, "the task store failed: {e}"),
        }
    }
}

impl std::error::Error for TaskStoreError {}

/// A [`TaskStore`] in this process's memory, holding at most `capacity` tasks (expired ones
/// are dropped to make room).
pub struct MemoryTaskStore {
    capacity: usize,
    records: Mutex<HashMap<String, TaskRecord>>,
}

impl fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .finish()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::new(DEFAULT_TASK_CAPACITY)
    }
}

impl MemoryTaskStore {
    /// A store holding at most `capacity` tasks.
    pub fn new(capacity: usize) -> Self {
        MemoryTaskStore {
            capacity,
            records: Mutex::new(HashMap::new()),
        }
    }

    /// How many tasks it holds (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()> {
        let mut records = self.lock();
        if records.len() >= self.capacity {
            let now = now_ms();
            records.retain(|_, r| !r.is_expired(now));
        }
        let created = if records.len() >= self.capacity {
            Err(TaskStoreError::Full)
        } else {
            records.insert(record.task_id.clone(), record);
            Ok(())
        };
        Box::pin(std::future::ready(created))
    }

    fn load<'a>(&'a self, task_id: &'a str) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        let mut records = self.lock();
        let found = match records.get(task_id) {
            Some(r) if r.is_expired(now_ms()) => {
                records.remove(task_id);
                None
            }
            found => found.cloned(),
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save(&self, record: TaskRecord) -> TaskStoreFuture<'_, ()> {
        let mut records = self.lock();
        if let Some(slot) = records.get_mut(&record.task_id) {
            *slot = record;
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
