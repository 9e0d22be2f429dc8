//! Tasks: long-running tools that answer with a handle the client polls (the
//! `io.modelcontextprotocol/tasks` extension).
//!
//! Mark a tool with [`ToolSpec::task`](crate::server::ToolSpec::task) and, when the client
//! declares the extension in its request, the call becomes a task unless the work finishes at
//! once: the server stores the task, answers `tools/call` with `"resultType": "task"`, and runs
//! the handler's body in the background. The client polls `tasks/get`, answers questions with
//! `tasks/update`, and may cancel with `tasks/cancel`.
//!
//! The handler takes a [`TaskHandle`] to report progress, to ask the user mid-task with the
//! same [`Ask`] values as multi round-trip requests (the body awaits the answer; it is not
//! run again), and to hear a cancellation. Questions asked *before* the body runs
//! ([`Answer<Q>`](crate::server::mrtr::Answer) parameters) are multi round-trip rounds of the
//! `tools/call` itself: they resolve before the task is created.
//!
//! Tasks are kept in a [`TaskStore`] ([`MemoryTaskStore`] by default), bound to the principal
//! that created them; ids carry 128 random bits. Limits ([`TaskConfig`]): how many tasks the
//! store holds, how many run at once, how long a task lives, how long cancelled work may take
//! to stop.

mod runtime;
mod store;
mod time;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arctern_types::elicitation::ElicitAction;
use arctern_types::mrtr::InputResponse;
use arctern_types::tasks::TaskStatus;
use tokio::sync::broadcast;

use crate::server::context::RequestContext;
use crate::server::extract::{CallParts, Extracted, FromCall};
use crate::server::mrtr::{Ask, check_answer, question_with_reason};

pub(crate) use runtime::{LiveTask, TaskRuntime};
pub use store::{
    DEFAULT_TASK_CAPACITY, MemoryTaskStore, TaskInbox, TaskRecord, TaskSignal, TaskStore,
    TaskStoreError, TaskStoreFuture,
};

/// How long a task lives unless told otherwise (five minutes).
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(300);
/// The polling interval suggested to clients unless told otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How many tasks may run at once unless told otherwise.
pub const DEFAULT_MAX_RUNNING: usize = 256;
/// How long cancelled work may take to stop before it is dropped, unless told otherwise.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(10);
/// How many task ids one `subscriptions/listen` stream may follow unless told otherwise.
pub const DEFAULT_LISTEN_TASK_IDS: usize = 100;
/// How many tasks of one caller may run at once unless told otherwise (a quarter of
/// [`DEFAULT_MAX_RUNNING`]).
pub const DEFAULT_MAX_RUNNING_PER_CALLER: usize = DEFAULT_MAX_RUNNING / 4;
/// How many tasks of one caller this process keeps stored unless told otherwise (a quarter
/// of [`DEFAULT_TASK_CAPACITY`]).
pub const DEFAULT_MAX_STORED_PER_CALLER: usize = DEFAULT_TASK_CAPACITY / 4;
/// How long a task may wait for an answer to one question unless told otherwise (two
/// minutes); then it is cancelled and frees its slot.
pub const DEFAULT_INPUT_DEADLINE: Duration = Duration::from_secs(120);

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// A task when the client declares the extension, an ordinary call otherwise.
    Optional,
    /// Only as a task: a client that does not declare the extension gets `-32021`.
    Required,
}

/// The tasks of a server: where they are kept and their limits.
///
/// Build it from `TaskConfig::default()` and its setters; the fields are public to read, and
/// the struct is `#[non_exhaustive]` so that a new limit is not a breaking change.
#[derive(Clone)]
#[non_exhaustive]
pub struct TaskConfig {
    /// Where tasks are kept.
    pub store: Arc<dyn TaskStore>,
    /// How long a task lives from its creation (`None`: until the store drops it). Work
    /// still running then is cancelled and the task fails.
    pub ttl: Option<Duration>,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
    /// How many tasks may run at once in this process; more are refused with the
    /// [`OverBudget`](crate::server::budget::OverBudget) error (`runningTasks`, scope
    /// `server`).
    pub max_running: usize,
    /// How many tasks of one [`Caller`](crate::server::budget::Caller) may run at once in
    /// this process; more are refused with the over-budget error (`runningTasks`, scope
    /// `caller`) while other callers' tasks still start.
    pub max_running_per_caller: usize,
    /// How many tasks of one caller this process keeps in the store at once (counted from
    /// creation until the task's TTL ends; not enforced without a TTL); more are refused
    /// with the over-budget error (`storedTasks`, scope `caller`).
    pub max_stored_per_caller: usize,
    /// How long a task may wait for the answer to a question (`None`: until its TTL). Past
    /// it the task is cancelled and its running slot freed, so work parked on a question
    /// costs its owner, not the server.
    pub input_deadline: Option<Duration>,
    /// How long cancelled work may take to stop on its own before it is dropped.
    pub cancel_grace: Duration,
    /// How many task ids one `subscriptions/listen` stream may follow
    /// (`notifications.taskIds`); the acknowledgement lists the ones accepted.
    pub listen_task_ids: usize,
}

impl fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskConfig")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("max_running", &self.max_running)
            .field("max_running_per_caller", &self.max_running_per_caller)
            .field("max_stored_per_caller", &self.max_stored_per_caller)
            .field("input_deadline", &self.input_deadline)
            .field("cancel_grace", &self.cancel_grace)
            .field("listen_task_ids", &self.listen_task_ids)
            .finish_non_exhaustive()
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            store: Arc::new(MemoryTaskStore::default()),
            ttl: Some(DEFAULT_TASK_TTL),
            poll_interval: DEFAULT_POLL_INTERVAL,
            max_running: DEFAULT_MAX_RUNNING,
            max_running_per_caller: DEFAULT_MAX_RUNNING_PER_CALLER,
            max_stored_per_caller: DEFAULT_MAX_STORED_PER_CALLER,
            input_deadline: Some(DEFAULT_INPUT_DEADLINE),
            cancel_grace: DEFAULT_CANCEL_GRACE,
            listen_task_ids: DEFAULT_LISTEN_TASK_IDS,
        }
    }
}

impl TaskConfig {
    /// Keeps tasks in `store`.
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Sets how long a task lives.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the polling interval suggested to clients.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets how many tasks may run at once.
    pub fn max_running(mut self, max: usize) -> Self {
        self.max_running = max;
        self
    }

    /// Sets how many tasks of one caller may run at once.
    pub fn max_running_per_caller(mut self, max: usize) -> Self {
        self.max_running_per_caller = max;
        self
    }

    /// Sets how many tasks of one caller this process keeps stored at once.
    pub fn max_stored_per_caller(mut self, max: usize) -> Self {
        self.max_stored_per_caller = max;
        self
    }

    /// Sets how long a task may wait for an answer before it is cancelled.
    pub fn input_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.input_deadline = deadline;
        self
    }

    /// Sets how long cancelled work may take to stop.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Sets how many task ids one `subscriptions/listen` stream may follow.
    pub fn listen_task_ids(mut self, max: usize) -> Self {
        self.listen_task_ids = max;
        self
    }
}

/// The `notifications/tasks` of one `subscriptions/listen` stream: the state of each task it
/// named, first as it is now and then at every change, as the principal that named them may
/// see them (tasks of other principals, and unknown ids, send nothing).
pub(crate) struct TaskFeed {
    runtime: Arc<TaskRuntime>,
    rx: broadcast::Receiver<Arc<TaskRecord>>,
    ids: Vec<String>,
    principal: Option<String>,
    /// Ids whose current state is still to be sent (at the start, and after falling behind).
    snapshot: Vec<String>,
}

impl TaskFeed {
    /// Follows up to the configured number of `requested` ids (duplicates dropped).
    pub(crate) fn new(
        runtime: Arc<TaskRuntime>,
        requested: Vec<String>,
        principal: Option<String>,
    ) -> Self {
        let mut ids: Vec<String> = Vec::new();
        for id in requested {
            if ids.len() >= runtime.listen_task_ids() {
                break;
            }
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        TaskFeed {
            rx: runtime.watch(),
            runtime,
            snapshot: ids.iter().rev().cloned().collect(),
            ids,
            principal,
        }
    }

    /// The ids followed, for the acknowledgement.
    pub(crate) fn ids(&self) -> &[String] {
        &self.ids
    }

    /// The next state to send.
    pub(crate) async fn next(&mut self) -> arctern_types::tasks::DetailedTask {
        loop {
            if let Some(id) = self.snapshot.last().cloned() {
                let found = self.runtime.find(&id, self.principal.as_deref()).await;
                self.snapshot.pop();
                match found {
                    Ok(record) => return record.detailed(),
                    Err(_) => continue,
                }
            }
            match self.rx.recv().await {
                Ok(record) => {
                    if record.principal == self.principal && self.ids.contains(&record.task_id) {
                        return record.detailed();
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(
                        missed,
                        "a task listener fell behind; sending the current states"
                    );
                    self.snapshot = self.ids.iter().rev().cloned().collect();
                }
                // The runtime (which this feed keeps alive) holds the sender.
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    }
}

/// Every change of a stored task, for `notifications/tasks`.
#[derive(Clone)]
pub(crate) struct TaskStatusBroadcast {
    tx: broadcast::Sender<Arc<TaskRecord>>,
}

impl TaskStatusBroadcast {
    fn new() -> Self {
        TaskStatusBroadcast {
            tx: broadcast::channel(256).0,
        }
    }

    fn send(&self, record: &TaskRecord) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(Arc::new(record.clone()));
        }
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<TaskRecord>> {
        self.tx.subscribe()
    }
}

/// What a task's handler works with: progress, questions to the user, and cancellation.
///
/// A handler parameter. When the call runs as a task, [`ask`](Self::ask) puts a question
/// out through `tasks/get` (`input_required`) and resolves when the client answers with
/// `tasks/update`; [`progress`](Self::progress) sets the task's `statusMessage`. When the
/// call runs as an ordinary call (a [`TaskSupport::Optional`] tool and a client without the
/// extension), progress goes out as `notifications/progress` if the client asked for it, and
/// `ask` fails with [`TaskError::NotATask`]: ask those questions before the body, as
/// [`Answer<Q>`](crate::server::mrtr::Answer) parameters.
///
/// ```
/// use arctern::server::tasks::{TaskError, TaskHandle};
/// use arctern::server::mrtr::Ask;
///
/// async fn migrate(task: TaskHandle) -> Result<String, TaskError> {
///     for step in 1..=3 {
///         task.progress(step, Some(3), format!("step {step} of 3")).await;
///         if task.is_cancelled() {
///             return Ok("stopped".into());
///         }
///     }
///     let go = task.ask(Ask::confirm("go", "Switch traffic to the new schema?")).await?;
///     Ok(if go { "switched" } else { "kept the old schema" }.into())
/// }
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    live: Option<Arc<LiveTask>>,
    ctx: RequestContext,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task", &self.live.as_ref().map(|l| &l.id))
            .finish_non_exhaustive()
    }
}

impl<S> FromCall<S> for TaskHandle {
    fn from_call(parts: &mut CallParts, _state: &S) -> Extracted<Self> {
        Extracted::Ready(TaskHandle {
            live: parts.task.as_ref().map(|seat| seat.live.clone()),
            ctx: parts.ctx.clone(),
        })
    }
}

/// Why a question asked in a task got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// The call is not running as a task, so it cannot ask mid-way.
    NotATask,
    /// The user declined (or, `declined: false`, dismissed) the question under `key`.
    Refused {
        /// The question's key.
        key: String,
        /// Declined explicitly (`false`: dismissed).
        declined: bool,
    },
    /// The question cannot be asked (a form type that is not a flat struct...).
    Invalid(String),
    /// The task was cancelled (or the server is shutting down).
    Cancelled,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::NotATask => {
                f.write_str("the call is not running as a task, so it cannot ask mid-way")
            }
            TaskError::Refused {
                key,
                declined: true,
            } => write!(f, "the user declined the question {key:?}"),
            TaskError::Refused {
                key,
                declined: false,
            } => write!(f, "the user dismissed the question {key:?}"),
            TaskError::Invalid(why) => write!(f, "the question cannot be asked: {why}"),
            TaskError::Cancelled => f.write_str("the task was cancelled"),
        }
    }
}

impl std::error::Error for TaskError {}

impl TaskHandle {
    /// The task's id, when the call runs as a task.
    pub fn id(&self) -> Option<&str> {
        self.live.as_ref().map(|l| l.id.as_str())
    }

    /// Whether the call runs as a task.
    pub fn is_task(&self) -> bool {
        self.live.is_some()
    }

    /// The context of the `tools/call` that started the work.
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// Whether the client cancelled the task (or the call), or the server is shutting down.
    pub fn is_cancelled(&self) -> bool {
        match &self.live {
            Some(live) => live.cancel.is_cancelled(),
            None => self.ctx.is_cancelled(),
        }
    }

    /// Resolves when the work should stop (see [`is_cancelled`](Self::is_cancelled)).
    pub async fn cancelled(&self) {
        match &self.live {
            Some(live) => live.cancel.cancelled().await,
            None => self.ctx.cancellation().cancelled().await,
        }
    }

    /// Sets the task's `statusMessage`.
    pub async fn status(&self, message: impl Into<String>) {
        let message = message.into();
        if let Some(live) = &self.live {
            live.modify(|r| r.status_message = Some(message)).await;
        }
    }

    /// Reports progress: `done` of `total` (if known) with a message. In a task it becomes
    /// the `statusMessage` (`"[done/total] message"`); in an ordinary call, a progress
    /// notification.
    pub async fn progress(&self, done: u64, total: Option<u64>, message: impl Into<String>) {
        let message = message.into();
        match &self.live {
            Some(live) => {
                let text = match total {
                    Some(total) => format!("[{done}/{total}] {message}"),
                    None => format!("[{done}] {message}"),
                };
                live.modify(|r| r.status_message = Some(text)).await;
            }
            None => {
                #[allow(clippy::cast_precision_loss)]
                let _ = self
                    .ctx
                    .progress(done as f64, total.map(|t| t as f64), Some(&message))
                    .await;
            }
        }
    }

    /// Asks the user (or the client) `ask` and waits for the answer. The task is
    /// `input_required` until the client answers through `tasks/update`. An answer that
    /// does not fit the question is refused and the question asked again (under a new key)
    /// with the reason; a declined or dismissed question is [`TaskError::Refused`].
    ///
    /// Questions asked at the same time (`tokio::join!`) are outstanding together; the
    /// client may answer them one by one.
    pub async fn ask<A>(&self, ask: Ask<A>) -> Result<A, TaskError> {
        let Some(live) = &self.live else {
            return Err(TaskError::NotATask);
        };
        let (key, question, read) = ask.into_parts();
        let question = question.map_err(|why| TaskError::Invalid(why.to_string()))?;
        let mut asked = question.clone();
        loop {
            let wire_key = live.fresh_key(&key);
            let rx = live.ask(wire_key.clone(), asked.clone()).await;
            let mut pending = Withdraw {
                live: live.clone(),
                key: Some(wire_key),
            };
            let deadline = async {
                match live.input_deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let answer = tokio::select! {
                answer = rx => answer.ok(),
                () = live.cancel.cancelled() => None,
                () = deadline => {
                    // Parked past its deadline: the task ends and its slot frees.
                    tracing::debug!(task = %live.id, "cancelled a task that waited too long for an answer");
                    live.set_terminal(
                        TaskStatus::Cancelled,
                        "Cancelled: no answer came within the input deadline",
                    )
                    .await;
                    live.cancel.cancel();
                    None
                }
            };
            pending.key = None;
            let Some(answer) = answer else {
                return Err(TaskError::Cancelled);
            };
            if let InputResponse::Elicit(e) = &answer
                && e.action != ElicitAction::Accept
            {
                return Err(TaskError::Refused {
                    key: key.into_owned(),
                    declined: e.action == ElicitAction::Decline,
                });
            }
            let why = match check_answer(&question, &answer) {
                Ok(()) => match read(&key, &answer) {
                    Ok(value) => return Ok(value),
                    Err(why) => why,
                },
                Err(why) => why,
            };
            tracing::debug!(key = %key, reason = %why, "refused an answer to a task question");
            asked = question_with_reason(
                &question,
                &format!("The previous answer was not accepted: {why}."),
            );
        }
    }
}

/// Withdraws an outstanding question when the future asking it is dropped.
struct Withdraw {
    live: Arc<LiveTask>,
    key: Option<String>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(key) = self.key.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let live = self.live.clone();
            rt.spawn(async move { live.withdraw(&key).await });
        }
    }
}

/// A `tools/call`'s access to the server's tasks.
#[derive(Clone)]
pub(crate) struct TaskAccess {
    pub(crate) runtime: Arc<TaskRuntime>,
    /// Who makes the request (tasks are bound to it).
    pub(crate) principal: Option<String>,
    /// Whose shares a task of the request counts against.
    pub(crate) caller: crate::server::budget::Caller,
    /// Whether the request declared the extension (only then may it get a task).
    pub(crate) declared: bool,
}

/// `-32021` for a request that needs the tasks extension and did not declare it.
pub(crate) fn missing_extension() -> arctern_types::ErrorObject {
    arctern_types::ErrorObject::missing_client_capability(serde_json::json!({
        "extensions": { arctern_types::tasks::EXTENSION_ID: {} }
    }))
}

/// Whether a request's envelope declares the tasks extension.
pub(crate) fn declares_extension(meta: &arctern_types::RequestMeta) -> bool {
    meta.client_capabilities
        .as_ref()
        .and_then(|c| c.extensions.as_ref())
        .is_some_and(|e| e.contains_key(arctern_types::tasks::EXTENSION_ID))
}

/// What a call that may become a task carries to the handler: the runtime and the task it
/// would be.
#[derive(Clone)]
pub(crate) struct TaskSeat {
    pub(crate) runtime: Arc<TaskRuntime>,
    pub(crate) live: Arc<LiveTask>,
}
