//! Exit codes, and the failures that lead to them.

use std::process::ExitCode;

use arctern::ErrorKind;
use arctern::client::{InputRequiredError, InputRequiredReason};
use arctern::types::ErrorCode;
use serde_json::{Value, json};

/// What the process tells its caller. The numbers are part of the command's interface
/// (documented in `--help` and the crate docs); keep them stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything worked.
    Ok,
    /// 1: the tool ran and reported an error (`isError: true`).
    ToolError,
    /// 2: the command line was wrong (flags, an argument that does not fit the schema, an
    /// unknown tool or prompt, a malformed `--answer`).
    Usage,
    /// 3: the server could not be reached or started, answered with a JSON-RPC error, or
    /// timed out.
    Connection,
    /// 4: the server needed input that was not given: a question nobody could answer, or
    /// one that was declined or cancelled so that the request did not complete.
    Input,
    /// 5: a local step failed (the sampling command, saving a file).
    Local,
    /// 1 too, for `arctern apps check`: at least one rule failed.
    Findings,
    /// 130: the user pressed Ctrl-C in a form.
    Interrupted,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::ToolError | Exit::Findings => 1,
            Exit::Usage => 2,
            Exit::Connection => 3,
            Exit::Input => 4,
            Exit::Local => 5,
            Exit::Interrupted => 130,
        }
    }

    /// A short machine-readable name, used in `--output json` errors.
    pub fn kind(self) -> &'static str {
        match self {
            Exit::Ok => "ok",
            Exit::ToolError => "tool-error",
            Exit::Findings => "check-failed",
            Exit::Usage => "usage",
            Exit::Connection => "connection",
            Exit::Input => "input-required",
            Exit::Local => "local",
            Exit::Interrupted => "interrupted",
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

/// A command that did not succeed: the exit code, a message for people, and details for
/// `--output json`.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What went wrong, in one or a few lines.
    pub message: String,
    /// Extra members of the JSON error object (such as the question's key and schema).
    pub details: serde_json::Map<String, Value>,
}

impl Failure {
    /// A failure with exit code `exit`.
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Failure {
            exit,
            message: message.into(),
            details: serde_json::Map::new(),
        }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure::new(Exit::Usage, message)
    }

    /// Adds a member to the JSON error object.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.details.insert(key.to_owned(), value);
        self
    }

    /// The JSON document `--output json` prints for this failure.
    pub fn to_json(&self) -> Value {
        let mut error = serde_json::Map::new();
        error.insert("exitCode".into(), json!(self.exit.code()));
        error.insert("kind".into(), json!(self.exit.kind()));
        error.insert("message".into(), json!(self.message));
        for (k, v) in &self.details {
            error.insert(k.clone(), v.clone());
        }
        json!({ "error": error })
    }

    /// Maps an SDK error from a request to a failure. `what` names the request for the
    /// message ("calling tool provision").
    pub fn from_client(e: &arctern::Error, what: &str) -> Failure {
        if let Some(details) = InputRequiredError::of(e) {
            return from_input_required(details, what);
        }
        match e.kind() {
            ErrorKind::Protocol => {
                let Some(obj) = e.protocol_error() else {
                    return Failure::new(Exit::Connection, format!("{what}: {e}"));
                };
                let mut f = if obj.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
                    let needed = obj
                        .data
                        .as_ref()
                        .and_then(|d| d.get("requiredCapabilities"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    Failure::new(
                        Exit::Input,
                        format!(
                            "{what}: the server needs a client capability this command was not \
                             given: {needed}{}",
                            capability_hint(&needed)
                        ),
                    )
                } else {
                    Failure::new(
                        Exit::Connection,
                        format!(
                            "{what}: the server answered with error {}: {}",
                            obj.code.0, obj.message
                        ),
                    )
                };
                f = f.with(
                    "protocolError",
                    serde_json::to_value(obj).unwrap_or(Value::Null),
                );
                f
            }
            ErrorKind::Config => Failure::usage(format!("{what}: {e}")),
            ErrorKind::InputRequired => Failure::new(Exit::Input, format!("{what}: {e}")),
            _ => Failure::new(Exit::Connection, format!("{what}: {e}")),
        }
    }
}

/// The failure of a connection attempt to `endpoint` (its URL, or the stdio command as
/// shown). An HTTP status without an MCP answer says what it likely means: nothing serves MCP
/// at that path (`404`, `405`), with the path to try.
pub fn could_not_connect(e: &arctern::Error, endpoint: &str) -> Failure {
    let Some(status) = http_status(e) else {
        return Failure::new(
            Exit::Connection,
            format!("could not connect to {endpoint}: {e}"),
        );
    };
    let mut message = format!(
        "could not connect to {endpoint}: the server answered HTTP {status} without an MCP \
         response"
    );
    if matches!(status.as_u16(), 404 | 405) {
        message.push_str(&format!(
            ": nothing serves MCP at this path. {}",
            path_hint(endpoint)
        ));
    }
    Failure::new(Exit::Connection, message).with("httpStatus", json!(status.as_u16()))
}

/// The status of a response that carried no JSON-RPC message, from anywhere in the chain of
/// causes.
fn http_status(e: &arctern::Error) -> Option<http::StatusCode> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(s) = c.downcast_ref::<arctern::transport::http::client::HttpStatusError>() {
            return Some(s.status);
        }
        cause = c.source();
    }
    None
}

/// Where the MCP endpoint may be instead: `/mcp` is the convention (`arctern serve`, the
/// TypeScript and Python SDKs).
fn path_hint(endpoint: &str) -> String {
    let Ok(uri) = iri_string::types::UriStr::new(endpoint) else {
        return "Check the URL's path.".to_owned();
    };
    let path = uri.path_str();
    if path.trim_end_matches('/') == "/mcp" {
        return "Check the URL's path: the server's MCP endpoint is elsewhere (its \
                documentation says where)."
            .to_owned();
    }
    let origin = format!(
        "{}://{}",
        uri.scheme_str(),
        uri.authority_str().unwrap_or_default()
    );
    format!("Is the MCP endpoint at /mcp ({origin}/mcp)?")
}

fn from_input_required(details: &InputRequiredError, what: &str) -> Failure {
    let last = details
        .last_result()
        .and_then(|r| serde_json::to_value(r).ok())
        .unwrap_or(Value::Null);
    let message = match details.reason() {
        InputRequiredReason::NoHandler { key, method } => format!(
            "{what}: the server asked for {method} (key {key:?}), which this command does not \
             answer{}",
            method_hint(method)
        ),
        InputRequiredReason::RoundsExceeded { max_rounds } => format!(
            "{what}: the server still asked for input after {max_rounds} rounds \
             (a pre-answer it does not accept?)"
        ),
        InputRequiredReason::DeadlineExceeded => format!("{what}: the call's deadline passed"),
        InputRequiredReason::HandlerFailed { key } => {
            format!("{what}: the question {key:?} could not be answered")
        }
        other => format!("{what}: the request did not complete ({other:?})"),
    };
    Failure::new(Exit::Input, message).with("lastResult", last)
}

fn method_hint(method: &str) -> &'static str {
    if method.starts_with("sampling/") {
        "; pass --sampling-command PROGRAM to let a program answer it"
    } else if method.starts_with("roots/") {
        "; pass --root PATH to share directories"
    } else {
        ""
    }
}

fn capability_hint(needed: &Value) -> &'static str {
    if needed.get("sampling").is_some() {
        " (pass --sampling-command PROGRAM to answer sampling requests)"
    } else if needed.get("roots").is_some() {
        " (pass --root PATH to share roots)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let codes: Vec<u8> = [
            Exit::Ok,
            Exit::ToolError,
            Exit::Usage,
            Exit::Connection,
            Exit::Input,
            Exit::Local,
            Exit::Findings,
            Exit::Interrupted,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 1, 130]);
    }

    #[test]
    fn missing_capability_is_an_input_failure_with_a_hint() {
        let obj = arctern::types::ErrorObject::missing_client_capability(json!({"sampling": {}}));
        let f = Failure::from_client(&arctern::Error::protocol(obj), "calling tool haiku");
        assert_eq!(f.exit, Exit::Input);
        assert!(f.message.contains("--sampling-command"), "{}", f.message);
        let j = f.to_json();
        assert_eq!(j["error"]["exitCode"], 4);
        assert_eq!(j["error"]["protocolError"]["code"], -32021);
    }

    #[test]
    fn a_404_hints_at_the_endpoint_path() {
        assert_eq!(
            path_hint("http://127.0.0.1:8000/wrong"),
            "Is the MCP endpoint at /mcp (http://127.0.0.1:8000/mcp)?"
        );
        assert_eq!(
            path_hint("https://h.example"),
            "Is the MCP endpoint at /mcp (https://h.example/mcp)?"
        );
        assert!(path_hint("http://h/mcp/").starts_with("Check the URL's path: "));
        assert_eq!(path_hint("not a url"), "Check the URL's path.");
        let plain = arctern::Error::new(ErrorKind::Io, "Connection refused");
        let f = could_not_connect(&plain, "http://h/mcp");
        assert_eq!(
            f.message,
            "could not connect to http://h/mcp: Connection refused"
        );
        assert_eq!(f.exit, Exit::Connection);
    }

    #[test]
    fn other_protocol_errors_are_connection_failures() {
        let obj = arctern::types::ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad");
        let f = Failure::from_client(&arctern::Error::protocol(obj), "x");
        assert_eq!(f.exit, Exit::Connection);
        assert!(f.message.contains("-32602"));
    }
}
