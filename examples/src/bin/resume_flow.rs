//! The manual loop, suspended in one process and resumed in another.
//!
//! `start` calls the `provision` tool for one round with `call_tool_once`. The server
//! answers `input_required` (it asks for a region), so `start` stores what a retry needs in
//! a state file — the tool call, the pending questions, and the [`Continuation`] holding the
//! server's `requestState` — and exits. Later, `finish` (a new process, a new client)
//! loads the file, answers the questions with the values given as `--answer FIELD=VALUE`,
//! retries, and prints the result. Nobody has to keep a connection or a process alive in
//! between.
//!
//! Start the `provision` example server, then:
//!
//! ```sh
//! cargo run -p arctern-examples --bin provision &
//! cargo run -p arctern-examples --bin resume_flow -- \
//!     start --url http://127.0.0.1:8000/mcp --state-file flow.json --name orders
//! cargo run -p arctern-examples --bin resume_flow -- \
//!     finish --state-file flow.json --answer region=eu-west-1
//! ```
//!
//! If the server asks more questions after the answers, `finish` saves the new round to the
//! same file and can be run again. `provision` seals its state with a key of its own process,
//! so `finish` must reach the same server process (`shared_keys` shows a fleet sharing keys).

use std::path::{Path, PathBuf};
use std::time::Duration;

use arctern::client::{Client, Continuation, InputOrigin, Outcome};
use arctern::types::elicitation::{ElicitRequestParams, ElicitResult, PrimitiveSchemaDefinition};
use arctern::types::mrtr::{InputRequest, InputRequests, InputRequiredResult};
use arctern::types::tools::CallToolResult;
use arctern::{Error, ErrorKind};
use arctern_examples::{flag_value, flag_values};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything a later process needs to finish the call.
#[derive(Serialize, Deserialize)]
struct SavedFlow {
    url: String,
    tool: String,
    arguments: Value,
    /// The questions the server waits for, by key.
    questions: InputRequests,
    /// What the retry carries: the server's `requestState`, echoed as received. The answers
    /// are added by `finish`.
    continuation: Continuation,
}

#[tokio::main]
async fn main() {
    arctern_examples::init_logging();
    let command = std::env::args().nth(1).unwrap_or_default();
    let result = match command.as_str() {
        "start" => start().await,
        "finish" => finish().await,
        _ => Err(usage()),
    };
    if let Err(e) = result {
        eprintln!("resume_flow: {e}");
        std::process::exit(1);
    }
}

fn usage() -> BoxError {
    "usage: resume_flow start --url URL --state-file FILE [--name NAME]\n       \
     resume_flow finish --state-file FILE --answer FIELD=VALUE..."
        .into()
}

fn state_file() -> Result<PathBuf, BoxError> {
    flag_value("--state-file")
        .map(PathBuf::from)
        .ok_or_else(usage)
}

/// Process one: the first round, saved to a file.
async fn start() -> Result<(), BoxError> {
    let url = flag_value("--url").ok_or_else(usage)?;
    let file = state_file()?;
    let name = flag_value("--name").unwrap_or_else(|| "orders".into());
    let tool = "provision".to_owned();
    let arguments = json!({ "name": name });

    let client = connect(&url, Vec::new()).await?;
    let outcome = client
        .call_tool_once(&tool, arguments.clone(), Continuation::new())
        .await?;
    client.close().await?;
    match outcome {
        Outcome::Complete(result) => print_result(&result),
        Outcome::InputRequired(round) => {
            let flow = SavedFlow {
                url,
                tool,
                arguments,
                questions: round.input_requests.clone().unwrap_or_default(),
                continuation: Continuation::after(&round),
            };
            save(&file, &flow)?;
            println!("Saved the flow to {}; it waits for:", file.display());
            print_questions(&flow.questions);
            Ok(())
        }
        // Non-exhaustive: extensions (such as tasks) may add kinds of result.
        _ => Err("the server answered with a kind of result this example does not know".into()),
    }
}

/// Process two: load, answer, retry.
async fn finish() -> Result<(), BoxError> {
    let file = state_file()?;
    let flow: SavedFlow = serde_json::from_slice(&std::fs::read(&file)?)?;
    let answers = flag_values("--answer")
        .into_iter()
        .map(|a| match a.split_once('=') {
            Some((field, value)) => Ok((field.to_owned(), value.to_owned())),
            None => Err(format!("--answer {a:?}: expected FIELD=VALUE")),
        })
        .collect::<Result<Vec<_>, _>>()?;

    let client = connect(&flow.url, answers).await?;
    // The client's handlers answer every pending question at once, as the automatic loop
    // would; here they read the answers from the command line.
    let mut round = InputRequiredResult::new();
    round.input_requests = Some(flow.questions.clone());
    round.request_state = flow.continuation.request_state.clone();
    let responses = client
        .answer(InputOrigin::tool(flow.tool.as_str()), &round)
        .await?;
    let retry = flow.continuation.clone().with_responses(responses);
    let outcome = client
        .call_tool_once(&flow.tool, flow.arguments.clone(), retry)
        .await?;
    client.close().await?;
    match outcome {
        Outcome::Complete(result) => {
            // The flow is done; its state has no further use.
            std::fs::remove_file(&file)?;
            print_result(&result)
        }
        Outcome::InputRequired(next) => {
            let flow = SavedFlow {
                questions: next.input_requests.clone().unwrap_or_default(),
                continuation: Continuation::after(&next),
                ..flow
            };
            save(&file, &flow)?;
            println!("The server asks more; saved to {}:", file.display());
            print_questions(&flow.questions);
            Ok(())
        }
        // Non-exhaustive: extensions (such as tasks) may add kinds of result.
        _ => Err("the server answered with a kind of result this example does not know".into()),
    }
}

/// A client whose elicitation handler fills forms from `answers` (field, value). Both
/// processes register it: the client declares the elicitation capability only with a
/// handler, and a server asks only what the client declares.
async fn connect(url: &str, answers: Vec<(String, String)>) -> arctern::Result<Client> {
    Client::builder()
        .name("resume-flow-example")
        .on_elicit(move |question| {
            let filled = fill_form(question.params(), &answers);
            async move { filled }
        })
        // Generous, so that a stuck server ends the example instead of hanging it.
        .request_timeout(Duration::from_secs(60))
        .connect(url)
        .await
}

/// Accepts a form with the given values, typed as its schema says.
fn fill_form(
    params: &ElicitRequestParams,
    answers: &[(String, String)],
) -> arctern::Result<ElicitResult> {
    let ElicitRequestParams::Form(form) = params else {
        return Err(Error::new(
            ErrorKind::Config,
            "this example answers forms only",
        ));
    };
    let schema = &form.requested_schema;
    let mut content = Map::new();
    for (field, kind) in schema.properties.iter() {
        let Some((_, raw)) = answers.iter().find(|(f, _)| f == field) else {
            if schema.is_required(field) {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("no --answer for the required field `{field}`"),
                ));
            }
            continue;
        };
        let value = match kind {
            PrimitiveSchemaDefinition::Number(_) => serde_json::from_str::<serde_json::Number>(raw)
                .map(Value::Number)
                .ok(),
            PrimitiveSchemaDefinition::Boolean(_) => raw.parse().map(Value::Bool).ok(),
            _ => Some(Value::String(raw.clone())),
        };
        let value = value.ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("`{field}`: {raw:?} does not fit the field"),
            )
        })?;
        content.insert(field.to_owned(), value);
    }
    ElicitResult::accept_json(Value::Object(content))
        .map_err(|e| Error::new(ErrorKind::Codec, "the answer is not a form").with_source(e))
}

fn save(file: &Path, flow: &SavedFlow) -> Result<(), BoxError> {
    std::fs::write(file, serde_json::to_vec_pretty(flow)?)?;
    Ok(())
}

fn print_questions(questions: &InputRequests) {
    for (key, request) in questions {
        match request {
            InputRequest::Elicit(e) => {
                let fields = match &e.params {
                    ElicitRequestParams::Form(form) => form
                        .requested_schema
                        .properties
                        .names()
                        .collect::<Vec<_>>()
                        .join(", "),
                    // A URL to open (or a mode a newer revision adds): no fields.
                    _ => String::new(),
                };
                println!("  [{key}] {} (fields: {fields})", e.params.message());
            }
            other => println!(
                "  [{key}] {} (this example answers forms only)",
                other.method()
            ),
        }
    }
}

fn print_result(result: &CallToolResult) -> Result<(), BoxError> {
    for block in &result.content {
        if let Some(text) = block.as_text() {
            println!("{text}");
        }
    }
    if result.is_error == Some(true) {
        return Err("the tool failed".into());
    }
    Ok(())
}
