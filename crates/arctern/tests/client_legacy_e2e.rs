//! The client against this crate's own dual-era server: detected as modern by default,
//! served through the legacy shim when pinned to the legacy era (over HTTP on 127.0.0.1 and
//! over stdio), and refused clearly by a modern-only server.

#![cfg(all(feature = "http", feature = "stdio", feature = "server"))]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::Era;
use arctern::client::{Client, ClientBuilder, StdioTransport};
use arctern::server::{
    Handler, HandlerResult, LegacyConfig, Listed, Outcome, RequestContext, Server, ServerConfig,
};
use arctern::transport::http::HttpServer;
use arctern::transport::stdio::StdioServer;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::elicitation::{ElicitResult, PrimitiveSchemaDefinition, RequestedSchema};
use arctern::types::mrtr::{InputRequest, InputRequiredResult, InputResponse};
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const PATIENCE: Duration = Duration::from_secs(20);

/// A tool written once in the MRTR style: asks the region, then answers.
struct Provisioner;

impl Handler for Provisioner {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        Ok(ListToolsResult::default().into())
    }

    async fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let answer = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get("region"));
        match (answer, params.request_state.as_deref()) {
            (Some(InputResponse::Elicit(e)), Some("asked")) => {
                let region = e
                    .content
                    .as_ref()
                    .and_then(|c| c.get("region"))
                    .map(|v| serde_json::to_value(v).unwrap())
                    .unwrap_or(Value::Null);
                Ok(Outcome::Complete(CallToolResult::text(format!(
                    "{region} at {}",
                    ctx.protocol_version()
                ))))
            }
            _ => Ok(InputRequiredResult::new()
                .with_input_request(
                    "region",
                    InputRequest::elicit_form(
                        "Which region?",
                        RequestedSchema::new()
                            .required("region", PrimitiveSchemaDefinition::string()),
                    ),
                )
                .with_request_state("asked")
                .into()),
        }
    }
}

fn server(legacy: LegacyConfig) -> Server<Provisioner> {
    let mut config = ServerConfig::new("e2e", "1.0.0");
    config.capabilities.tools = Some(ToolsCapability::default());
    config.legacy = legacy;
    Server::new(Provisioner, config)
}

/// Serves on 127.0.0.1 until the returned sender is dropped.
async fn serve(server: Server<Provisioner>) -> (String, oneshot::Sender<()>) {
    let bound = HttpServer::new(server)
        .bind("127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .shutdown_grace(Duration::from_secs(1))
        .listen()
        .await
        .expect("binds");
    let url = format!("http://{}/mcp", bound.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    (url, stop)
}

/// The keys and messages the elicitation handler saw.
type Asked = Arc<Mutex<Vec<(String, String)>>>;

fn builder(asked: &Asked) -> ClientBuilder {
    let asked = asked.clone();
    Client::builder()
        .request_timeout(PATIENCE)
        .on_elicit(move |q| {
            let asked = asked.clone();
            async move {
                let target = q.origin().target().to_owned();
                asked.lock().unwrap().push((q.key().to_owned(), target));
                Ok(ElicitResult::accept([("region", "eu-west-1")]))
            }
        })
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_same_callbacks_serve_both_eras_over_http() {
    let (url, _stop) = serve(server(LegacyConfig::default())).await;

    // Detected: a dual-era server answers server/discover, so the modern loop runs.
    let asked = Asked::default();
    let modern = builder(&asked).connect(&url).await.unwrap();
    assert_eq!(modern.era(), Era::Modern);
    let result = modern.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(text(&result), "\"eu-west-1\" at 2026-07-28");
    // The MRTR key.
    assert_eq!(
        *asked.lock().unwrap(),
        [("region".to_owned(), "provision".to_owned())]
    );
    modern.close().await.unwrap();

    // Pinned: the server's shim turns the same question into elicitation/create.
    let asked = Asked::default();
    let legacy = builder(&asked)
        .era(Era::Legacy)
        .connect(&url)
        .await
        .unwrap();
    assert_eq!(legacy.era(), Era::Legacy);
    assert_eq!(legacy.protocol_version(), "2025-11-25");
    assert_eq!(legacy.server_info().unwrap().name, "e2e");
    legacy.ping().await.unwrap();
    let result = legacy.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(text(&result), "\"eu-west-1\" at 2025-11-25");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    // The shim names the question's key; the call it arrived in is the origin.
    assert_eq!(asked[0].0, "region");
    assert_eq!(asked[0].1, "provision");
    legacy.close().await.unwrap();
}

#[tokio::test]
async fn a_legacy_session_over_stdio() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(
        StdioServer::new(server(LegacyConfig::default())).serve_io(server_read, server_write),
    );
    let (read, write) = tokio::io::split(client_io);
    let asked = Asked::default();
    let client = builder(&asked)
        .era(Era::Legacy)
        .connect_with(StdioTransport::from_io(read, write))
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let result = client.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(text(&result), "\"eu-west-1\" at 2025-11-25");
    assert_eq!(asked.lock().unwrap()[0].1, "provision");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_modern_only_server_is_detected_as_modern_and_refuses_initialize() {
    let (url, _stop) = serve(server(LegacyConfig::disabled())).await;
    let asked = Asked::default();
    let client = builder(&asked).connect(&url).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    client.close().await.unwrap();

    let err = builder(&asked)
        .era(Era::Legacy)
        .connect(&url)
        .await
        .unwrap_err();
    assert!(
        err.protocol_error().is_some() || err.is_transport(),
        "a clear error, not a hang: {err}"
    );
}
