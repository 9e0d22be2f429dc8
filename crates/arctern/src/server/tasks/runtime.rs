//! The tasks of one server: creating them, running their work in the background, and
//! answering `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arctern_types::ErrorObject;
use arctern_types::meta::JsonObject;
use arctern_types::mrtr::{InputRequest, InputResponse, InputResponses};
use arctern_types::tasks::{CreateTaskResult, DetailedTask, TaskStatus};
use futures::FutureExt;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::store::{TaskInbox, TaskRecord, TaskSignal, TaskStore, TaskStoreError};
use super::{TaskConfig, TaskStatusBroadcast};
use crate::Outcome;
use crate::server::budget::{Budget, Caller, OverBudget, Scope};
use crate::server::handler::HandlerResult;
use crate::server::mcp::BoxFuture;

/// The error every unknown, expired or foreign task id gets (never telling them apart, so
/// that ids of other principals cannot be probed).
pub(crate) fn task_not_found() -> ErrorObject {
    ErrorObject::invalid_params("Failed to retrieve task: Task not found")
}

/// The error of a `tasks/update` or `tasks/cancel` that could not reach the process running
/// the task's work.
fn unreachable_work() -> ErrorObject {
    ErrorObject::internal_error(
        "The server could not reach the instance running the task; try again later",
    )
}

/// The tasks of one server.
pub(crate) struct TaskRuntime {
    config: TaskConfig,
    /// Tasks whose work runs in this process.
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    /// What each caller holds of the running and stored tasks.
    shares: Mutex<Shares>,
    shutdown: CancellationToken,
    updates: TaskStatusBroadcast,
}

/// The tasks each caller holds in this process.
#[derive(Default)]
struct Shares {
    /// Tasks running, by caller.
    running: HashMap<Caller, usize>,
    /// When each stored task's TTL ends, oldest first, by caller.
    stored: HashMap<Caller, VecDeque<Instant>>,
}

impl TaskRuntime {
    /// The runtime, attached to its store (which may hand it signals from other processes).
    pub(crate) fn new(config: TaskConfig, shutdown: CancellationToken) -> Arc<Self> {
        let runtime = Arc::new(TaskRuntime {
            config,
            live: Mutex::new(HashMap::new()),
            shares: Mutex::new(Shares::default()),
            shutdown,
            updates: TaskStatusBroadcast::new(),
        });
        runtime
            .config
            .store
            .attach(TaskInbox::new(Arc::downgrade(&runtime)));
        runtime
    }

    /// Every change of a task from now on, for `notifications/tasks`.
    pub(crate) fn watch(&self) -> tokio::sync::broadcast::Receiver<Arc<TaskRecord>> {
        self.updates.subscribe()
    }

    /// A signal another process sent for a task: `true` when its work runs here.
    pub(crate) async fn receive(&self, id: &str, signal: TaskSignal) -> bool {
        let Some(live) = self.live_task(id) else {
            return false;
        };
        match signal {
            TaskSignal::Update { input_responses } => live.deliver(input_responses).await,
            TaskSignal::Cancel => {
                live.set_terminal(TaskStatus::Cancelled, "Cancelled by the client")
                    .await;
                live.cancel.cancel();
            }
        }
        true
    }

    /// A task another process runs changed.
    pub(crate) fn changed_elsewhere(&self, record: TaskRecord) {
        if self.live_task(&record.task_id).is_none() {
            self.updates.send(&record);
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LiveTask>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live_task(&self, id: &str) -> Option<Arc<LiveTask>> {
        self.live().get(id).cloned()
    }

    fn shares(&self) -> std::sync::MutexGuard<'_, Shares> {
        self.shares.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When a refused caller may try again: a parked task is cancelled by the input
    /// deadline, any task ends by its TTL.
    fn retry_hint(&self) -> Duration {
        self.config
            .input_deadline
            .into_iter()
            .chain(self.config.ttl)
            .min()
            .unwrap_or(Duration::from_secs(60))
    }

    /// Takes a running slot (and, with a TTL, a stored one) for a task of `caller`, or
    /// the refusal of the budget it is over.
    fn reserve(&self, caller: &Caller) -> Result<(), OverBudget> {
        let running = self.live().len();
        if running >= self.config.max_running {
            return Err(OverBudget::new(
                Budget::RunningTasks,
                Scope::Server,
                self.retry_hint(),
            ));
        }
        let mut shares = self.shares();
        if shares.running.get(caller).copied().unwrap_or(0) >= self.config.max_running_per_caller {
            return Err(OverBudget::new(
                Budget::RunningTasks,
                Scope::Caller,
                self.retry_hint(),
            ));
        }
        if let Some(ttl) = self.config.ttl {
            let now = Instant::now();
            let stored = shares.stored.entry(caller.clone()).or_default();
            while stored.front().is_some_and(|end| *end <= now) {
                stored.pop_front();
            }
            if stored.len() >= self.config.max_stored_per_caller {
                let retry = stored
                    .front()
                    .map_or(ttl, |end| end.saturating_duration_since(now));
                return Err(OverBudget::new(Budget::StoredTasks, Scope::Caller, retry));
            }
            stored.push_back(now + ttl);
        }
        *shares.running.entry(caller.clone()).or_default() += 1;
        Ok(())
    }

    /// Gives back the slots of a task of `caller`: its running one when its work ends,
    /// and its stored one too if it never got stored.
    fn release(&self, caller: &Caller, stored: bool) {
        let mut shares = self.shares();
        if let Some(n) = shares.running.get_mut(caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                shares.running.remove(caller);
            }
        }
        if !stored && let Some(ends) = shares.stored.get_mut(caller) {
            ends.pop_back();
        }
        if shares.stored.get(caller).is_some_and(VecDeque::is_empty) {
            shares.stored.remove(caller);
        }
    }

    /// A task about to run `tool` for `principal`: it has its id, and is stored only if
    /// [`launch`](Self::launch) makes it a task.
    pub(crate) fn prepare(
        &self,
        principal: Option<String>,
        caller: Caller,
        tool: String,
    ) -> Result<Arc<LiveTask>, ErrorObject> {
        let id = crate::server::legacy::random_hex(16)
            .ok_or_else(|| ErrorObject::internal_error("The server could not make a task id"))?;
        let ttl = self
            .config
            .ttl
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        let poll = u64::try_from(self.config.poll_interval.as_millis()).unwrap_or(u64::MAX);
        let record = TaskRecord::new(id.clone(), principal, tool, ttl, Some(poll));
        Ok(Arc::new(LiveTask {
            id,
            store: self.config.store.clone(),
            record: tokio::sync::Mutex::new(record),
            stored: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
            used_keys: Mutex::new(HashSet::new()),
            cancel: self.shutdown.child_token(),
            updates: self.updates.clone(),
            caller,
            input_deadline: self.config.input_deadline,
        }))
    }

    /// Runs `body` as the task `live`: polled once here, and if it finishes at once its
    /// answer is the call's (no task is created); otherwise the task is stored (durably,
    /// before the `CreateTaskResult` is returned) and the body goes on in the background.
    pub(crate) async fn launch<R: Serialize + Send + 'static>(
        self: &Arc<Self>,
        live: Arc<LiveTask>,
        body: BoxFuture<HandlerResult<Outcome<R>>>,
    ) -> HandlerResult<Outcome<R>> {
        let mut body = body;
        if let Some(answer) = (&mut body).now_or_never() {
            return answer;
        }
        if let Err(refusal) = self.reserve(&live.caller) {
            refusal.log(&live.caller);
            return Err(refusal.to_error());
        }
        let created = {
            let record = live.record.lock().await;
            let created = self.config.store.create(record.clone()).await;
            if created.is_ok() {
                live.stored.store(true, Ordering::SeqCst);
            }
            created.map(|()| record.task())
        };
        let task = match created {
            Ok(task) => task,
            Err(TaskStoreError::Full) => {
                self.release(&live.caller, false);
                let refusal = OverBudget::new(
                    Budget::StoredTasks,
                    Scope::Server,
                    self.config.ttl.unwrap_or(Duration::from_secs(60)),
                );
                refusal.log(&live.caller);
                return Err(refusal.to_error());
            }
            Err(e) => {
                self.release(&live.caller, false);
                tracing::error!(error = %e, "the task store failed to create a task");
                return Err(ErrorObject::internal_error(
                    "The server could not create the task",
                ));
            }
        };
        self.live().insert(live.id.clone(), live.clone());
        tracing::debug!(task = %live.id, "created a task");
        let this = self.clone();
        let grace = self.config.cancel_grace;
        let ttl = self.config.ttl;
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let expiry = async {
                match ttl {
                    Some(ttl) => tokio::time::sleep(ttl).await,
                    None => std::future::pending().await,
                }
            };
            let end = tokio::select! {
                biased;
                end = &mut body => Some(end),
                () = live.cancel.cancelled(), if !shutdown.is_cancelled() => {
                    // Cooperative: the work hears the cancellation and may end on its own
                    // (its answer is dropped: the task is already cancelled).
                    let _ = tokio::time::timeout(grace, &mut body).await;
                    None
                }
                () = shutdown.cancelled() => None,
                () = expiry => {
                    live.cancel.cancel();
                    live.finish(Err(ErrorObject::internal_error(
                        "The task's time to live ended before it finished",
                    ))).await;
                    None
                }
            };
            if let Some(end) = end {
                live.finish(end.map(|outcome| outcome_to_end(outcome)))
                    .await;
            }
            this.live().remove(&live.id);
            this.release(&live.caller, true);
        });
        Ok(Outcome::Task(CreateTaskResult::new(task)))
    }

    /// How many task ids one listen stream may follow.
    pub(crate) fn listen_task_ids(&self) -> usize {
        self.config.listen_task_ids
    }

    /// Loads a task the caller may see.
    pub(crate) async fn find(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<TaskRecord, ErrorObject> {
        let record = match self.live_task(id) {
            Some(live) => live.snapshot().await,
            None => match self.config.store.load(id).await {
                Ok(Some(record)) => record,
                Ok(None) => return Err(task_not_found()),
                Err(e) => {
                    tracing::error!(error = %e, "the task store failed to load a task");
                    return Err(ErrorObject::internal_error(
                        "The server could not read the task",
                    ));
                }
            },
        };
        if record.principal.as_deref() != principal {
            tracing::debug!(task = id, "refused a task of another principal");
            return Err(task_not_found());
        }
        Ok(record)
    }

    /// `tasks/get`.
    pub(crate) async fn get(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<DetailedTask, ErrorObject> {
        Ok(self.find(id, principal).await?.detailed())
    }

    /// `tasks/update`: delivers the answers to outstanding questions (others are ignored).
    pub(crate) async fn update(
        &self,
        id: &str,
        principal: Option<&str>,
        responses: InputResponses,
    ) -> Result<(), ErrorObject> {
        let record = self.find(id, principal).await?;
        if let Some(live) = self.live_task(id) {
            live.deliver(responses).await;
            return Ok(());
        }
        if record.status.is_terminal() {
            tracing::debug!(task = id, "ignored answers to a task that has ended");
            return Ok(());
        }
        // Its work runs in another process: the store carries the answers there.
        let signal = TaskSignal::Update {
            input_responses: responses,
        };
        match self.config.store.signal(id, signal).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::warn!(task = id, "no instance is running the task to answer");
                Err(unreachable_work())
            }
            Err(e) => {
                tracing::error!(error = %e, task = id, "the task store failed to pass answers on");
                Err(unreachable_work())
            }
        }
    }

    /// `tasks/cancel`: a terminal task is left as it is.
    pub(crate) async fn cancel(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<(), ErrorObject> {
        let record = self.find(id, principal).await?;
        if record.status.is_terminal() {
            return Ok(());
        }
        match self.live_task(id) {
            Some(live) => {
                live.set_terminal(TaskStatus::Cancelled, "Cancelled by the client")
                    .await;
                live.cancel.cancel();
            }
            None => {
                // Its work runs in another process: the store carries the cancellation
                // there, and that process records it.
                match self.config.store.signal(id, TaskSignal::Cancel).await {
                    Ok(true) => return Ok(()),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::error!(error = %e, task = id, "the task store failed to pass a cancellation on");
                        return Err(unreachable_work());
                    }
                }
                // Its work runs nowhere (a restarted server): only the record is left.
                let mut record = record;
                record.status = TaskStatus::Cancelled;
                record.status_message = Some("Cancelled by the client".into());
                record.input_requests.clear();
                record.touch();
                if let Err(e) = self.config.store.save(record).await {
                    tracing::error!(error = %e, "the task store failed to save a cancellation");
                }
            }
        }
        Ok(())
    }
}

/// How a task's work ended.
pub(crate) type TaskEnd = Result<JsonObject, ErrorObject>;

fn outcome_to_end<R: Serialize>(outcome: Outcome<R>) -> TaskEnd {
    match outcome {
        Outcome::Complete(result) => match serde_json::to_value(result) {
            Ok(serde_json::Value::Object(object)) => Ok(object),
            Ok(_) => Err(ErrorObject::internal_error(
                "The task's result is not an object",
            )),
            Err(e) => Err(ErrorObject::internal_error(format!(
                "The task's result could not be serialized: {e}"
            ))),
        },
        Outcome::InputRequired(_) => Err(ErrorObject::internal_error(
            "The tool asked with `Questions` after it became a task: inside a task, ask with `TaskHandle::ask`",
        )),
        _ => Err(ErrorObject::internal_error(
            "The tool's work returned a task",
        )),
    }
}

/// A task whose work runs in this process: the authoritative record while it runs, its
/// outstanding questions, and its cancellation.
pub(crate) struct LiveTask {
    pub(crate) id: String,
    store: Arc<dyn TaskStore>,
    /// Held across a save, so that saves reach the store in order.
    record: tokio::sync::Mutex<TaskRecord>,
    /// Whether the store has the task (before that, changes stay here).
    stored: AtomicBool,
    /// Where the answer to each outstanding question goes, by its key.
    waiting: Mutex<HashMap<String, oneshot::Sender<InputResponse>>>,
    /// Every key asked so far: keys are unique over the task's lifetime.
    used_keys: Mutex<HashSet<String>>,
    pub(crate) cancel: CancellationToken,
    updates: TaskStatusBroadcast,
    /// Whose shares the task counts against.
    caller: Caller,
    /// How long the task may wait for one answer.
    pub(crate) input_deadline: Option<Duration>,
}

impl LiveTask {
    pub(crate) async fn snapshot(&self) -> TaskRecord {
        self.record.lock().await.clone()
    }

    /// Changes the record (never once it is terminal) and saves it.
    pub(crate) async fn modify(&self, change: impl FnOnce(&mut TaskRecord)) {
        let mut record = self.record.lock().await;
        if record.status.is_terminal() {
            return;
        }
        change(&mut record);
        record.touch();
        self.publish(&record).await;
    }

    async fn publish(&self, record: &TaskRecord) {
        if !self.stored.load(Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self.store.save(record.clone()).await {
            tracing::error!(error = %e, task = %self.id, "the task store failed to save a task");
        }
        self.updates.send(record);
    }

    /// Ends the task with `status` unless it has ended already.
    pub(crate) async fn set_terminal(&self, status: TaskStatus, message: &str) {
        self.modify(|r| {
            r.status = status;
            r.status_message = Some(message.to_owned());
            r.input_requests.clear();
        })
        .await;
    }

    /// Records how the work ended.
    async fn finish(&self, end: HandlerResult<TaskEnd>) {
        let end = end.and_then(|e| e);
        self.modify(|r| {
            r.input_requests.clear();
            match end {
                Ok(result) => {
                    r.status = TaskStatus::Completed;
                    r.result = Some(result);
                }
                Err(error) => {
                    r.status = TaskStatus::Failed;
                    r.status_message = Some(error.message.to_string());
                    r.error = Some(error);
                }
            }
        })
        .await;
        tracing::debug!(task = %self.id, "a task ended");
    }

    /// A key for `key` never used in this task.
    pub(crate) fn fresh_key(&self, key: &str) -> String {
        let mut used = self.used_keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut candidate = key.to_owned();
        let mut n = 2u32;
        while used.contains(&candidate) {
            candidate = format!("{key}.{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        candidate
    }

    /// Puts a question out; the receiver gets its answer.
    pub(crate) async fn ask(
        &self,
        key: String,
        question: InputRequest,
    ) -> oneshot::Receiver<InputResponse> {
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), tx);
        self.modify(|r| {
            r.input_requests.insert(key, question);
            r.status = TaskStatus::InputRequired;
        })
        .await;
        rx
    }

    /// Withdraws a question nobody waits for any more.
    pub(crate) async fn withdraw(&self, key: &str) {
        let waited = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
            .is_some();
        if waited {
            self.modify(|r| settle(r, std::iter::once(key))).await;
        }
    }

    async fn deliver(&self, responses: InputResponses) {
        let mut delivered = Vec::new();
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            for (key, response) in responses {
                match waiting.remove(&key) {
                    Some(tx) => {
                        if tx.send(response).is_ok() {
                            delivered.push(key);
                        }
                    }
                    None => {
                        tracing::debug!(task = %self.id, key, "ignored an answer to a question that is not outstanding")
                    }
                }
            }
        }
        if !delivered.is_empty() {
            self.modify(|r| settle(r, delivered.iter().map(String::as_str)))
                .await;
        }
    }
}

/// Drops answered questions; a task with none left is working again.
fn settle<'a>(record: &mut TaskRecord, keys: impl Iterator<Item = &'a str>) {
    for key in keys {
        record.input_requests.remove(key);
    }
    if record.input_requests.is_empty() && record.status == TaskStatus::InputRequired {
        record.status = TaskStatus::Working;
    }
}
