//! A resource template, `config://{env}`, that asks before it reveals anything.
//!
//! `resources/read config://prod` answers `input_required` asking for a confirmation; the
//! retry with `{"reveal": true}` reads the configuration. The template variables arrive in
//! `Args`, and the question reads them too.
//!
//! ```sh
//! cargo run -p arctern-examples --bin config_template
//! ```

use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use arctern::server::{McpHandler, McpServer, ResourceTemplateSpec, Server};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Env {
    env: String,
}

#[derive(Deserialize, JsonSchema)]
struct Reveal {
    /// Show the configuration?
    reveal: bool,
}

impl Question for Reveal {
    type Args = Env;
    type Answer = Reveal;
    fn ask(cx: &AskContext<'_, Env>) -> Result<Ask<Reveal>, NotYet> {
        let env = &cx.args().env;
        Ok(Ask::form(
            "reveal",
            format!("The {env} configuration holds connection strings. Reveal it?"),
        ))
    }
}

async fn config(Args(e): Args<Env>, Answer(r): Answer<Reveal>) -> String {
    if r.reveal {
        serde_json::json!({"env": e.env, "replicas": 3, "database": format!("postgres://db.{}.internal/app", e.env)})
            .to_string()
    } else {
        format!("The {} configuration was not revealed.", e.env)
    }
}

fn server() -> Result<Server<McpHandler>, arctern::server::RegistrationError> {
    McpServer::new("configs")
        .resource_template(
            ResourceTemplateSpec::new("config://{env}", "config")
                .description("The configuration of an environment. Asks before revealing it.")
                .mime_type("application/json"),
            config,
        )
        .build()
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()?).await
}
