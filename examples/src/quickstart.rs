use arctern::server::McpServer;
use arctern::server::extract::Args;
use arctern::server::mrtr::{Answer, Ask, AskContext, NotYet, Question};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's arguments: their JSON Schema is the tool's `inputSchema`.
#[derive(Deserialize, JsonSchema)]
struct Provision {
    /// Name of the database.
    name: String,
}

/// Where the database lives: one of the regions offered.
struct Region;

impl Question for Region {
    type Args = Provision;
    type Answer = String;
    fn ask(cx: &AskContext<'_, Provision>) -> Result<Ask<String>, NotYet> {
        let regions = [("eu-west-1", "Ireland"), ("us-east-1", "Virginia")];
        let message = format!("Which region should {} live in?", cx.args().name);
        Ok(Ask::choice("region", message, regions))
    }
}

/// Runs once the region is answered.
async fn provision(Args(p): Args<Provision>, Answer(region): Answer<Region>) -> String {
    format!("Provisioned {} in {region}.", p.name)
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    McpServer::new("provisioner")
        .tool("provision", "Provision a database.", provision)
        .serve_http("127.0.0.1:8000")
        .await
}
