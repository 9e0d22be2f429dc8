//! The engine's one path for both eras: the request-state boundary (round cap, freshness of
//! answers, carried answers), panic isolation on every transport and era, middleware, and
//! the registration checks every kind of handler shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use arctern::Era;
use arctern::client::Client;
use arctern::server::extract::{Args, RawArgs};
use arctern::server::middleware::{Call, Next, Response, from_fn};
use arctern::server::mrtr::{
    Answer, Ask, AskContext, HandlerState, MrtrLimits, NoArgs, NotYet, Question, Questions,
    Responses,
};
use arctern::server::{
    Handler, HandlerResult, Listed, McpServer, Outcome, RequestContext, ResourceSpec, Server,
    ServerConfig,
};
use arctern::testing::{self, TestClient};
use arctern::transport::http::HttpServer;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};
use arctern::types::mrtr::{InputRequest, InputRequiredResult, InputResponse};
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};
use arctern::{ErrorCode, ErrorObject};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Bound on every wait, so that a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("finished in time")
}

fn form(message: &str, field: &str) -> InputRequest {
    InputRequest::elicit_form(
        message,
        RequestedSchema::new().required(field, PrimitiveSchemaDefinition::number()),
    )
}

// ------------------------------------------------------------------ the round cap

/// A low-level handler that asks forever.
struct Forever;

impl Handler for Forever {
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
        _params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let key = format!("q{}", ctx.round().number());
        Ok(InputRequiredResult::new()
            .with_input_request(key, form("Again?", "n"))
            .with_request_state("more")
            .into())
    }
}

#[tokio::test]
async fn the_round_cap_holds_for_low_level_and_manual_handlers_on_the_modern_wire() {
    let mut config =
        ServerConfig::new("forever", "1").mrtr_limits(MrtrLimits::default().max_rounds(3));
    config.capabilities.tools = Some(ToolsCapability::default());
    let low_level = Server::new(Forever, config);
    let manual = McpServer::new("manual")
        .mrtr_limits(MrtrLimits::default().max_rounds(3))
        .tool(
            "loop",
            "Asks forever.",
            |_: Responses, HandlerState(state): HandlerState| async move {
                let n: u32 = state.as_deref().map_or(0, |s| s.parse().unwrap_or(0));
                Outcome::<CallToolResult>::InputRequired(
                    InputRequiredResult::new()
                        .with_input_request(format!("q{n}"), form("Again?", "n"))
                        .with_request_state((n + 1).to_string()),
                )
            },
        )
        .build()
        .unwrap();
    for (name, t) in [
        ("low-level", TestClient::connect(low_level).await.unwrap()),
        ("manual", TestClient::connect(manual).await.unwrap()),
    ] {
        let t = (0..8).fold(t, |t, n| t.answer(format!("q{n}"), json!({"n": 1})));
        let err = within(t.call_tool("loop", json!({}))).await.unwrap_err();
        let protocol = err
            .protocol_error()
            .unwrap_or_else(|| panic!("{name}: {err}"));
        assert_eq!(protocol.code, ErrorCode::INVALID_PARAMS, "{name}");
        assert!(
            protocol.message.contains("more than 3 rounds"),
            "{name}: {}",
            protocol.message
        );
        // Round 0 plus three answered rounds; the fourth input_required is refused.
        assert_eq!(t.rounds().len(), 4, "{name}");
    }
}

// ------------------------------------------------------------------ fresh and carried answers

#[derive(Deserialize, JsonSchema)]
struct Amount {
    amount: u32,
}

impl Question for Amount {
    type Args = NoArgs;
    type Answer = Amount;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Amount>, NotYet> {
        Ok(amount())
    }
}

fn amount() -> Ask<Amount> {
    Ask::form("amount", "How much?")
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

impl Question for Confirm {
    type Args = NoArgs;
    type Answer = Confirm;
    fn ask(cx: &AskContext<'_, NoArgs>) -> Result<Ask<Confirm>, NotYet> {
        let Amount { amount } = cx.answer::<Amount>()?;
        Ok(Ask::form("confirm", format!("Transfer {amount}?")))
    }
}

async fn transfer(Answer(a): Answer<Amount>, Answer(c): Answer<Confirm>) -> String {
    format!("transferred {} ({})", a.amount, c.ok)
}

#[tokio::test]
async fn an_answer_pinned_in_an_earlier_round_cannot_be_replaced_later() {
    let server = McpServer::new("bank")
        .tool("transfer", "Transfers.", transfer)
        .build()
        .unwrap();
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("amount", json!({"amount": 10}))
        .answer("confirm", json!({"ok": true}));
    let result = within(t.call_tool("transfer", json!({}))).await.unwrap();
    assert_eq!(testing::text(&result), "transferred 10 (true)");
    let rounds = t.assert_rounds(3);
    // The last round again, with a new amount slipped in beside the confirmation: the
    // amount was pinned in the round before, so the carried 10 stands.
    let forged = InputResponse::decode_for(
        arctern::types::mrtr::InputRequestKind::Elicitation,
        json!({"action": "accept", "content": {"amount": 1_000_000}}),
    )
    .unwrap();
    let replayed = within(t.replay(&rounds[2]).response("amount", forged).send())
        .await
        .unwrap();
    let replayed = replayed.complete().unwrap();
    assert_eq!(replayed["content"][0]["text"], "transferred 10 (true)");
}

// ------------------------------------------------------------------ what the body returns decides

#[tokio::test]
async fn a_body_that_catches_a_missing_answer_keeps_its_result() {
    let server = McpServer::new("careful")
        .tool(
            "delete",
            "Deletes, if confirmed.",
            |q: Questions| async move {
                match q.answer(Ask::<Confirm>::form("confirm", "Delete?")) {
                    Ok(c) if c.ok => "deleted".to_owned(),
                    _ => "kept".to_owned(),
                }
            },
        )
        .tool(
            "peek",
            "Reads an answer without asking.",
            |q: Questions| async move {
                match q.try_answer(amount()) {
                    Some(a) => format!("amount {}", a.amount),
                    None => "no amount".to_owned(),
                }
            },
        )
        .tool(
            "strict",
            "Waits for the amount.",
            |q: Questions| async move {
                let a = q.answer(amount())?;
                Ok::<_, anyhow_like::Error>(format!("amount {}", a.amount))
            },
        )
        .build()
        .unwrap();
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("amount", json!({"amount": 7}));
    let kept = within(t.call_tool("delete", json!({}))).await.unwrap();
    assert_eq!(testing::text(&kept), "kept");
    let peek = within(t.call_tool("peek", json!({}))).await.unwrap();
    assert_eq!(testing::text(&peek), "no amount");
    // An error after the interruption: the question is asked, and the body runs again.
    let strict = within(t.call_tool("strict", json!({}))).await.unwrap();
    assert_eq!(testing::text(&strict), "amount 7");
}

/// A stand-in for `anyhow`: any error type that an `Interrupt` converts into.
mod anyhow_like {
    #[derive(Debug)]
    pub struct Error(pub String);

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl From<arctern::server::mrtr::Interrupt> for Error {
        fn from(i: arctern::server::mrtr::Interrupt) -> Self {
            Error(i.to_string())
        }
    }
}

// ------------------------------------------------------------------ one error rule

#[tokio::test]
async fn any_display_error_works_for_tools_prompts_and_resources() {
    let server = McpServer::new("errors")
        .tool("fails", "Fails.", || async {
            Err::<String, _>(std::io::Error::other("disk full"))
        })
        .tool("refuses", "Refuses with a protocol error.", || async {
            Err::<String, _>(ErrorObject::invalid_params("no such city"))
        })
        .prompt("fails", "Fails.", || async {
            Err::<String, _>(std::io::Error::other("template missing"))
        })
        .resource(ResourceSpec::new("test://fails", "fails"), || async {
            Err::<String, _>(std::io::Error::other("gone"))
        })
        .build()
        .unwrap();
    let t = TestClient::connect(server).await.unwrap();
    let tool = within(t.call_tool("fails", json!({}))).await.unwrap();
    assert!(tool.is_tool_error());
    assert_eq!(testing::text(&tool), "disk full");
    let refused = within(t.call_tool("refuses", json!({}))).await.unwrap_err();
    assert_eq!(
        refused.protocol_error().unwrap().code,
        ErrorCode::INVALID_PARAMS
    );
    let prompt = within(t.get_prompt("fails", json!({}))).await.unwrap_err();
    let prompt = prompt.protocol_error().unwrap();
    assert_eq!(prompt.code, ErrorCode::INTERNAL_ERROR);
    assert!(
        !prompt.message.contains("template missing"),
        "{}",
        prompt.message
    );
    let resource = within(t.read_resource("test://fails")).await.unwrap_err();
    assert_eq!(
        resource.protocol_error().unwrap().code,
        ErrorCode::INTERNAL_ERROR
    );
}

// ------------------------------------------------------------------ registration

#[tokio::test]
async fn every_kind_added_at_run_time_needs_sealing_to_ask_typed_questions() {
    let server = McpServer::new("unsealed")
        .without_state_sealing()
        .tool("echo", "Echoes.", |RawArgs(a): RawArgs| async move {
            format!("{a:?}")
        })
        .build()
        .unwrap();
    let handler = server.handler();
    let asks = |Answer(a): Answer<Amount>| async move { a.amount.to_string() };
    let tool = handler.add_tool(arctern::server::ToolSpec::new("t"), asks);
    let prompt = handler.add_prompt(arctern::server::PromptSpec::new("p"), asks);
    let resource = handler.add_resource(ResourceSpec::new("test://r", "r"), asks);
    let template = handler.add_resource_template(
        arctern::server::ResourceTemplateSpec::new("test://t/{id}", "t"),
        asks,
    );
    for (what, result) in [
        ("tool", tool),
        ("prompt", prompt),
        ("resource", resource),
        ("template", template),
    ] {
        let err = result.expect_err(what);
        assert!(
            err.to_string().contains("need request-state sealing"),
            "{what}: {err}"
        );
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Tree {
    name: String,
    children: Vec<Tree>,
}

#[tokio::test]
async fn a_recursive_argument_type_has_a_schema_whose_refs_resolve() {
    let server = McpServer::new("trees")
        .tool(
            "count",
            "Counts the nodes.",
            |Args(t): Args<Tree>| async move {
                fn count(t: &Tree) -> usize {
                    1 + t.children.iter().map(count).sum::<usize>()
                }
                count(&t).to_string()
            },
        )
        .build()
        .unwrap();
    let t = TestClient::connect(server).await.unwrap();
    let tools = within(t.client().list_tools()).await.unwrap();
    let schema = serde_json::to_value(&tools[0].input_schema).unwrap();
    fn check(root: &Value, node: &Value) {
        match node {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "$ref" {
                        let pointer = v.as_str().unwrap().trim_start_matches('#');
                        assert!(root.pointer(pointer).is_some(), "dangling {v} in {root}");
                    } else {
                        check(root, v);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| check(root, v)),
            _ => {}
        }
    }
    check(&schema, &schema);
    let tree = json!({"name": "a", "children": [{"name": "b", "children": []}]});
    let counted = within(t.call_tool("count", tree)).await.unwrap();
    assert_eq!(testing::text(&counted), "2");
}

// ------------------------------------------------------------------ panics

fn panicky() -> McpServer {
    McpServer::new("panicky")
        .tool("boom", "Panics.", || async {
            if true {
                panic!("the handler fell over");
            }
            "never"
        })
        .tool("echo", "Echoes.", |RawArgs(a): RawArgs| async move {
            a.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
}

async fn panics_then_serves(client: &Client, what: &str) {
    let err = within(client.call_tool("boom", json!({})))
        .await
        .unwrap_err();
    let protocol = err
        .protocol_error()
        .unwrap_or_else(|| panic!("{what}: {err}"));
    assert_eq!(protocol.code, ErrorCode::INTERNAL_ERROR, "{what}");
    let echo = within(client.call_tool("echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(testing::text(&echo), "still here", "{what}");
}

#[tokio::test]
async fn a_panicking_handler_answers_32603_on_every_transport_and_era() {
    // In process, both eras.
    for era in [Era::Modern, Era::Legacy] {
        let client = Client::builder()
            .era(era)
            .connect_memory(panicky().build().unwrap())
            .await
            .unwrap();
        panics_then_serves(&client, &format!("memory {era:?}")).await;
    }
    // Over HTTP, both eras.
    let bound = HttpServer::new(panicky().build().unwrap())
        .bind("127.0.0.1:0")
        .listen()
        .await
        .unwrap();
    let url = bound.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    for era in [Era::Modern, Era::Legacy] {
        let client = Client::builder().era(era).connect(&url).await.unwrap();
        panics_then_serves(&client, &format!("http {era:?}")).await;
        client.close().await.unwrap();
    }
    let _ = stop.send(());
    within(served).await.unwrap().unwrap();
    // Over stdio, both eras (a pipe pair in process).
    for era in [Era::Modern, Era::Legacy] {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let (server_in, server_out) = tokio::io::split(server_io);
        let serving = tokio::spawn(
            arctern::transport::stdio::StdioServer::new(panicky().build().unwrap())
                .serve_io(server_in, server_out),
        );
        let (client_in, client_out) = tokio::io::split(client_io);
        let transport =
            arctern::transport::stdio::client::StdioTransport::from_io(client_in, client_out);
        let client = Client::builder()
            .era(era)
            .connect_with(transport)
            .await
            .unwrap();
        panics_then_serves(&client, &format!("stdio {era:?}")).await;
        client.close().await.unwrap();
        within(serving).await.unwrap().unwrap();
    }
}

// ------------------------------------------------------------------ middleware

#[tokio::test]
async fn middleware_sees_the_plaintext_call_and_the_round_on_both_eras() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let server = McpServer::new("watched")
        .tool("transfer", "Transfers.", transfer)
        .tool("secret", "Not for everyone.", || async { "the secret" })
        .layer(from_fn(move |call: Call, next: Next| {
            let record = record.clone();
            async move {
                let entry = (
                    call.method(),
                    call.target().map(str::to_owned),
                    call.round(),
                    call.principal().map(|p| p.0.clone()),
                    call.arguments().cloned(),
                );
                if call.target() == Some("secret") && call.principal().is_none() {
                    return Err(ErrorObject::invalid_request("Not allowed"));
                }
                let response = next.run(call).await?;
                let input_required = response.is_input_required();
                record.lock().unwrap().push((entry, input_required));
                Ok(response)
            }
        }))
        .build()
        .unwrap();
    for legacy in [false, true] {
        seen.lock().unwrap().clear();
        let builder = TestClient::builder().principal("alice");
        let builder = if legacy { builder.legacy() } else { builder };
        let t = builder
            .connect(server.clone())
            .await
            .unwrap()
            .answer("amount", json!({"amount": 3}))
            .answer("confirm", json!({"ok": true}));
        let result = within(t.call_tool("transfer", json!({"memo": "rent"})))
            .await
            .unwrap();
        assert_eq!(testing::text(&result), "transferred 3 (true)");
        let secret = within(t.call_tool("secret", json!({}))).await.unwrap();
        assert_eq!(testing::text(&secret), "the secret");
        let seen = seen.lock().unwrap().clone();
        let calls: Vec<_> = seen
            .iter()
            .filter(|((method, target, ..), _)| {
                *method == "tools/call" && target.as_deref() == Some("transfer")
            })
            .collect();
        assert_eq!(calls.len(), 3, "legacy={legacy}: one per round");
        for (round, ((_, _, n, principal, args), input_required)) in calls.iter().enumerate() {
            assert_eq!(*n as usize, round, "legacy={legacy}");
            assert_eq!(principal.as_deref(), Some("alice"));
            assert_eq!(args.as_ref().unwrap()["memo"], "rent");
            assert_eq!(*input_required, round < 2, "legacy={legacy}");
        }
    }
    // Without a principal, the middleware's early answer is the call's answer.
    let t = TestClient::connect(server).await.unwrap();
    let refused = within(t.call_tool("secret", json!({}))).await.unwrap_err();
    assert_eq!(refused.protocol_error().unwrap().message, "Not allowed");
}

#[tokio::test]
async fn middleware_runs_in_order_and_can_change_the_response() {
    let order = Arc::new(AtomicU32::new(0));
    let (first, second) = (order.clone(), order.clone());
    let server = McpServer::new("layered")
        .tool("echo", "Echoes.", |RawArgs(a): RawArgs| async move {
            a.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .layer(from_fn(move |call: Call, next: Next| {
            let second = second.clone();
            async move {
                assert_eq!(second.fetch_add(1, Ordering::SeqCst), 1);
                let response = next.run(call).await;
                assert_eq!(second.fetch_add(1, Ordering::SeqCst), 2);
                response
            }
        }))
        .layer(from_fn(move |call: Call, next: Next| {
            let first = first.clone();
            async move {
                // Added last, so outermost: sees the call first and the response last.
                assert_eq!(first.fetch_add(1, Ordering::SeqCst), 0);
                let response = next.run(call).await?;
                assert_eq!(first.fetch_add(1, Ordering::SeqCst), 3);
                Ok(match response {
                    Response::CallTool(Outcome::Complete(mut r)) => {
                        r.content
                            .push(arctern::types::content::ContentBlock::text("(checked)"));
                        Response::CallTool(Outcome::Complete(r))
                    }
                    other => other,
                })
            }
        }))
        .build()
        .unwrap();
    let t = TestClient::connect(server).await.unwrap();
    let result = within(t.call_tool("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    let texts: Vec<_> = result.content.iter().filter_map(|c| c.as_text()).collect();
    assert_eq!(texts, ["hi", "(checked)"]);
    assert_eq!(order.load(Ordering::SeqCst), 4);
}
