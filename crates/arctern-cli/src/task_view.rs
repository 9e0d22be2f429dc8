//! `arctern call` while the call runs as a task: the task's status and progress on stderr
//! (a bar when the status message reads `[done/total] text`), its questions answered like
//! any other (a form, or `--answer`), and Ctrl-C cancelling it with `tasks/cancel`.

use std::sync::{Arc, Mutex};

use arctern::client::{CallOptions, Client};
use arctern::types::tasks::{Task, TaskStatus};
use arctern::types::tools::CallToolResult;
use serde_json::{Map, Value};

use crate::exit::{Exit, Failure};
use crate::session::Session;

/// What the task looked like when last reported.
#[derive(Default)]
struct Seen {
    id: Option<String>,
    status: Option<TaskStatus>,
}

/// Calls `tool`, showing the task it may become; `Err` when the user pressed Ctrl-C (the
/// task, if there was one, is cancelled first).
pub async fn call(
    client: &Client,
    session: &Arc<Session>,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Result<arctern::Result<CallToolResult>, Failure> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let report = {
        let (seen, session) = (seen.clone(), session.clone());
        move |task: &Task| {
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.id.is_none() {
                session.progress.println(&format!(
                    "arctern: the call runs as task {} (Ctrl-C cancels it)",
                    task.task_id
                ));
                seen.id = Some(task.task_id.clone());
            }
            if seen.status != Some(task.status) {
                seen.status = Some(task.status);
                session
                    .progress
                    .println(&format!("arctern: task {}", task.status.as_str()));
            }
            session.progress.task(
                &task.task_id,
                task.status.as_str(),
                task.status_message.as_deref(),
            );
        }
    };
    let options = CallOptions::new().on_task_status(report);
    let call = client.call_tool_with(tool, arguments, options);
    tokio::select! {
        result = call => Ok(result),
        _ = tokio::signal::ctrl_c() => {
            session.progress.clear();
            let id = seen.lock().unwrap_or_else(|e| e.into_inner()).id.clone();
            Err(match id {
                Some(id) => match client.cancel_task(&id).await {
                    Ok(()) => Failure::new(Exit::Interrupted, format!("interrupted; cancelled task {id}")),
                    Err(e) => Failure::new(
                        Exit::Interrupted,
                        format!("interrupted; cancelling task {id} failed: {e}"),
                    ),
                },
                None => Failure::new(Exit::Interrupted, "interrupted"),
            })
        }
    }
}
