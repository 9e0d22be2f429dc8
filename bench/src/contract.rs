//! arctern's handlers for the benchmark contract's `echo` and `confirm`, shared by the
//! benchmark server (`arctern-server`) and the soak (`soak`).

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NoArgs, NotYet, Question};
use schemars::JsonSchema;
use serde::Deserialize;

/// What `echo` says it does.
pub const ECHO: &str = "Returns its text.";
/// What `confirm` says it does.
pub const CONFIRM: &str = "Returns its text after the user confirms.";

/// Arguments of `echo` and `confirm`.
#[derive(Deserialize, JsonSchema)]
pub struct TextArg {
    /// Any text.
    pub text: String,
}

/// The confirmation `confirm` asks for.
#[derive(Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead?
    pub ok: bool,
}

impl Question for Confirm {
    type Args = NoArgs;
    type Answer = Confirm;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Confirm>, NotYet> {
        Ok(Ask::form("confirm", "Confirm?"))
    }
}

/// `echo {text}`: answers `text`.
pub async fn echo(Args(a): Args<TextArg>) -> String {
    a.text
}

/// `confirm {text}`: asks for a confirmation, then answers `text` if given.
pub async fn confirm(Args(a): Args<TextArg>, Answer(c): Answer<Confirm>) -> String {
    if c.ok {
        a.text
    } else {
        "Not confirmed.".into()
    }
}
