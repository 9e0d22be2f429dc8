//! A long-running tool as a task (the tasks extension): it reports progress, asks for a
//! confirmation half-way, and stops when the client cancels it.
//!
//! A client that declares `io.modelcontextprotocol/tasks` gets `"resultType": "task"` from
//! `tools/call migrate {tables}` and polls `tasks/get`; the task turns `input_required` with
//! the question, which the client answers with `tasks/update`.
//!
//! ```sh
//! cargo run -p arctern-examples --bin migration_task
//! ```

use std::time::Duration;

use arctern::server::extract::Args;
use arctern::server::mrtr::Ask;
use arctern::server::tasks::{TaskError, TaskHandle, TaskSupport};
use arctern::server::{McpHandler, McpServer, Server, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Migration {
    /// How many tables to copy.
    tables: u64,
}

async fn migrate(Args(m): Args<Migration>, task: TaskHandle) -> Result<String, TaskError> {
    let tables = m.tables.clamp(1, 100);
    for table in 1..=tables {
        task.progress(table - 1, Some(tables), format!("copying table {table}"))
            .await;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
            () = task.cancelled() => return Ok(format!("stopped after {} tables", table - 1)),
        }
    }
    task.progress(tables, Some(tables), "copied").await;
    let switch = task
        .ask(Ask::confirm("switch", "Switch traffic to the new schema?"))
        .await?;
    Ok(if switch {
        format!("Migrated {tables} tables and switched traffic.")
    } else {
        format!("Migrated {tables} tables; traffic stays on the old schema.")
    })
}

fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("migrations")
        .tool_spec(
            ToolSpec::new("migrate")
                .description("Copies the tables to the new schema, then asks to switch traffic.")
                .task(TaskSupport::Required),
            migrate,
        )
        .build()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()?).await
}
