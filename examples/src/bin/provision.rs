//! The provision tool on the low-level server: a `Handler` that drives the rounds itself.
//!
//! Round 1 answers `input_required` asking for a region, with a request state saying what it
//! was doing. The server seals that state (one line: `seal_request_state`), so the handler
//! reads back exactly what it wrote, and nothing a client forged.
//!
//! ```sh
//! cargo run -p arctern-examples --bin provision
//! ```

use arctern::server::{
    Handler, HandlerResult, Listed, Outcome, RequestContext, Server, ServerConfig,
};
use arctern::state::StateSealer;
use arctern::types::ErrorObject;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::elicitation::{RequestedSchema, StringSchema};
use arctern::types::mrtr::{InputRequest, InputRequiredResult, InputResponse};
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult, Tool,
};
use serde_json::json;

struct Provisioner;

impl Handler for Provisioner {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _p: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Name of the database."}},
            "required": ["name"]
        });
        let schema = schema.as_object().cloned().unwrap_or_default();
        Ok(Listed::from(ListToolsResult::new(vec![Tool::new(
            "provision",
            "Provision a database. Asks which region to put it in.",
            schema,
        )])))
    }

    async fn call_tool(
        &self,
        _ctx: RequestContext,
        p: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        if p.name != "provision" {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown tool: {}",
                p.name
            )));
        }
        let Some(name) = p
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(|n| n.as_str())
        else {
            return Ok(CallToolResult::error("The argument `name` is required.").into());
        };
        // The region, if this is the retry and the state is the one we wrote.
        let region = match (
            p.request_state.as_deref(),
            p.input_responses.as_ref().and_then(|r| r.get("region")),
        ) {
            (Some("provision-v1"), Some(InputResponse::Elicit(answer))) => answer
                .content
                .as_ref()
                .and_then(|c| c.get("region"))
                .and_then(|v| serde_json::to_value(v).ok())
                .and_then(|v| v.as_str().map(str::to_owned)),
            _ => None,
        };
        match region {
            Some(region) => Ok(CallToolResult::text(format!(
                "Provisioned database {name:?} in {region}."
            ))
            .into()),
            None => {
                let schema = RequestedSchema::new().required("region", StringSchema::default());
                Ok(InputRequiredResult::new()
                    .with_input_request(
                        "region",
                        InputRequest::elicit_form(
                            "Which region should the database live in?",
                            schema,
                        ),
                    )
                    .with_request_state("provision-v1")
                    .into())
            }
        }
    }
}

/// The server: the handler, its capabilities, and sealed request state.
fn server() -> Server<Provisioner> {
    let mut config = ServerConfig::new("provisioner", "1.0.0");
    config.capabilities.tools = Some(ToolsCapability::default());
    let sealer = StateSealer::ephemeral("provisioner").expect("a named audience");
    Server::new(Provisioner, config.seal_request_state(sealer))
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    arctern_examples::serve(server()).await
}
