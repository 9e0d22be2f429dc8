//! The client against real in-process servers (the in-memory transport passes bytes through
//! `Server::handle_bytes`): envelope, capabilities, the automatic and manual MRTR loops,
//! negotiation, cancellation, subscriptions, callbacks, pagination and the cache.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arctern::ErrorKind;
use arctern::client::{
    CallOptions, Client, Continuation, InputOrigin, InputRequiredError, InputRequiredReason,
    MessageStream, Outcome, OutgoingMessage, ServerNotification, Transport, VersionError,
};
use arctern::server::extract::Args;
use arctern::server::{
    Handler, HandlerResult, Listed, McpServer, RequestContext, Server, ServerConfig, ToolSpec,
};
use arctern::transport::memory::MemoryTransport;
use arctern::types::RequestId;
use arctern::types::capabilities::{PromptsCapability, ResourcesCapability, ToolsCapability};
use arctern::types::elicitation::{ElicitResult, PrimitiveSchemaDefinition, RequestedSchema};
use arctern::types::jsonrpc::JsonRpcMessage;
use arctern::types::logging::LoggingLevel;
use arctern::types::meta::JsonObject;
use arctern::types::mrtr::{InputRequest, InputRequiredResult};
use arctern::types::prompts::{GetPromptRequestParams, GetPromptResult, PromptMessage};
use arctern::types::resources::{ReadResourceRequestParams, ReadResourceResult};
use arctern::types::roots::Root;
use arctern::types::sampling::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage};
use arctern::types::subscriptions::SubscriptionFilter;
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult, Tool,
};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ------------------------------------------------------------------ a scripted low-level server

type CallFn = Arc<
    dyn Fn(
            RequestContext,
            CallToolRequestParams,
        ) -> BoxFuture<'static, HandlerResult<Outcome<CallToolResult>>>
        + Send
        + Sync,
>;

/// A low-level handler whose `tools/call` is a closure; it also records every call.
#[derive(Clone)]
struct Scripted {
    call: CallFn,
    calls: Arc<Mutex<Vec<Seen>>>,
    lists: Arc<AtomicUsize>,
    ttl: Option<u64>,
}

/// What the server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    id: RequestId,
    name: String,
    meta: Value,
    arguments: Option<JsonObject>,
    responses: Option<Value>,
    state: Option<String>,
}

impl Scripted {
    fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(RequestContext, CallToolRequestParams) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = HandlerResult<Outcome<CallToolResult>>> + Send + 'static,
    {
        Scripted {
            call: Arc::new(move |ctx, p| f(ctx, p).boxed()),
            calls: Arc::default(),
            lists: Arc::default(),
            ttl: None,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.calls.lock().unwrap().clone()
    }

    /// A server that passes `requestState` and `inputResponses` through as the client sent
    /// them, so that the tests see exactly what the client put on the wire.
    fn server(self) -> Server<Scripted> {
        let mut config = ServerConfig::new("scripted", "9.9.9").without_state_sealing();
        let caps = &mut config.capabilities;
        caps.tools = Some(ToolsCapability::default().with_list_changed(true));
        caps.prompts = Some(PromptsCapability::default());
        caps.resources = Some(ResourcesCapability::default());
        caps.logging = Some(JsonObject::new());
        caps.completions = Some(JsonObject::new());
        Server::new(self, config)
    }
}

impl Handler for Scripted {
    fn call_tool(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> impl std::future::Future<Output = HandlerResult<Outcome<CallToolResult>>> + Send {
        self.calls.lock().unwrap().push(Seen {
            id: ctx.request_id().clone(),
            name: params.name.clone(),
            meta: serde_json::to_value(ctx.meta()).unwrap(),
            arguments: params.arguments.clone(),
            responses: params
                .input_responses
                .as_ref()
                .map(|r| serde_json::to_value(r).unwrap()),
            state: params.request_state.clone(),
        });
        (self.call)(ctx, params)
    }

    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let mut result = ListToolsResult::new(vec![Tool::new(
            "t",
            "a tool",
            json!({"type": "object"}).as_object().cloned().unwrap(),
        )]);
        result.ttl_ms = self.ttl;
        Ok(result.into())
    }

    async fn read_resource(
        &self,
        _ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        if params.uri == "test://ask" && params.input_responses.is_none() {
            return Ok(ask("ok").with_request_state("r1").into());
        }
        let mut result = ReadResourceResult::text(params.uri, "text/plain", "content");
        result.ttl_ms = self.ttl;
        Ok(result.into())
    }

    async fn complete(
        &self,
        _ctx: RequestContext,
        params: arctern::types::completion::CompleteRequestParams,
    ) -> HandlerResult<arctern::types::completion::CompleteResult> {
        let value = params.argument.value;
        let context = params
            .context
            .and_then(|c| c.arguments)
            .map(|a| a.len())
            .unwrap_or(0);
        Ok(arctern::types::completion::CompleteResult::new([
            format!("{value}is"),
            format!("{value}-{context}"),
        ]))
    }

    async fn get_prompt(
        &self,
        _ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> HandlerResult<Outcome<GetPromptResult>> {
        let Some(answers) = params.input_responses else {
            return Ok(ask("audience").into());
        };
        let audience = answers["audience"]
            .as_elicit()
            .and_then(|e| e.content.as_ref())
            .and_then(|c| c.get("audience"))
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_owned();
        let topic = params
            .arguments
            .and_then(|a| a.get("topic").cloned())
            .unwrap_or_default();
        Ok(GetPromptResult::new(vec![PromptMessage::user_text(format!(
            "Brief the {audience} on {topic}."
        ))])
        .into())
    }
}

/// An `input_required` result with one form elicitation under `key` (one string field named
/// like the key).
fn ask(key: &str) -> InputRequiredResult {
    InputRequiredResult::new().with_input_request(
        key,
        InputRequest::elicit_form(
            format!("{key}?"),
            RequestedSchema::new().required(key, PrimitiveSchemaDefinition::string()),
        ),
    )
}

/// Answers every elicitation with `{key: "answer-<key>"}`.
fn answering() -> arctern::client::ClientBuilder {
    Client::builder().on_elicit(|q| async move {
        let key = q.key().to_owned();
        Ok(ElicitResult::accept([(
            key.clone(),
            format!("answer-{key}"),
        )]))
    })
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

// ------------------------------------------------------------------ envelope and capabilities

#[tokio::test]
async fn every_request_carries_the_envelope_and_capabilities_follow_the_handlers() {
    let handler = Scripted::new(|_ctx, _p| async { Ok(CallToolResult::text("ok").into()) });
    let server = handler.clone().server();
    let cases: Vec<(arctern::client::ClientBuilder, Value)> = vec![
        (Client::builder(), json!({})),
        (answering(), json!({"elicitation": {}})),
        (
            answering().elicitation_url(true),
            json!({"elicitation": {"form": {}, "url": {}}}),
        ),
        (
            Client::builder()
                .on_sample(|_q| async { Ok(CreateMessageResult::text("m", "hi")) })
                .sampling_tools(true),
            json!({"sampling": {"tools": {}}}),
        ),
        (
            Client::builder().roots(vec![Root::new("file:///r")]),
            json!({"roots": {}}),
        ),
    ];
    for (builder, caps) in cases {
        // Without the tasks extension, which is declared by default under `extensions`.
        let client = builder
            .tasks(false)
            .name("tester")
            .version("0.0.1")
            .connect_memory(server.clone())
            .await
            .unwrap();
        assert_eq!(client.protocol_version(), "2026-07-28");
        assert_eq!(client.server_info().unwrap().name, "scripted");
        assert!(client.server_capabilities().unwrap().tools.is_some());
        client.call_tool("t", json!({"a": 1})).await.unwrap();
        let seen = handler.seen().pop().unwrap();
        assert_eq!(
            seen.meta,
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": "tester", "version": "0.0.1"}
            }),
            "no logLevel or progressToken without callbacks"
        );
        assert_eq!(serde_json::to_value(client.capabilities()).unwrap(), caps);
    }
}

// ------------------------------------------------------------------ the automatic loop

#[tokio::test]
async fn two_round_elicitation_echoes_state_byte_for_byte_with_new_ids() {
    const STATE_1: &str = "s1 \"ü\" \\ /+= \u{1}";
    let handler = Scripted::new(|_ctx, p| async move {
        Ok(
            match (p.input_responses.as_ref(), p.request_state.as_deref()) {
                (None, None) => ask("region").with_request_state(STATE_1).into(),
                (Some(r), Some(STATE_1)) if r.contains_key("region") => ask("size").into(),
                (Some(r), None) if r.contains_key("size") && !r.contains_key("region") => {
                    CallToolResult::text("provisioned").into()
                }
                other => CallToolResult::error(format!("unexpected round: {other:?}")).into(),
            },
        )
    });
    let client = answering()
        .connect_memory(handler.clone().server())
        .await
        .unwrap();
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "provisioned");

    let seen = handler.seen();
    assert_eq!(seen.len(), 3);
    let ids: std::collections::HashSet<_> = seen.iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids.len(), 3, "a new id per round");
    for s in &seen {
        assert_eq!(s.name, "provision");
        assert_eq!(s.arguments, json!({"name": "orders"}).as_object().cloned());
    }
    assert_eq!(seen[0].responses, None);
    assert_eq!(seen[0].state, None);
    assert_eq!(
        seen[1].responses,
        Some(json!({"region": {"action": "accept", "content": {"region": "answer-region"}}}))
    );
    assert_eq!(seen[1].state.as_deref(), Some(STATE_1));
    // Answers are replaced, not accumulated; no state is invented.
    assert_eq!(
        seen[2].responses,
        Some(json!({"size": {"action": "accept", "content": {"size": "answer-size"}}}))
    );
    assert_eq!(seen[2].state, None);
}

#[tokio::test]
async fn round_state_never_leaks_into_a_parallel_call() {
    let handler = Scripted::new(|_ctx, p| async move {
        Ok(match p.name.as_str() {
            "flow" if p.input_responses.is_none() => {
                ask("confirm").with_request_state("flow-state").into()
            }
            _ => CallToolResult::text(p.name.clone()).into(),
        })
    });
    let slot: Arc<OnceLock<Client>> = Arc::default();
    let inner = slot.clone();
    let client = Client::builder()
        .on_elicit(move |_q| {
            let client = inner.get().cloned().unwrap();
            async move {
                // An unrelated call between the rounds.
                client.call_tool("unrelated", json!({})).await?;
                Ok(ElicitResult::accept([("confirm", true)]))
            }
        })
        .connect_memory(handler.clone().server())
        .await
        .unwrap();
    slot.set(client.clone()).unwrap();
    client.call_tool("flow", Value::Null).await.unwrap();
    let seen = handler.seen();
    let names: Vec<_> = seen.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["flow", "unrelated", "flow"]);
    assert_eq!(seen[1].responses, None);
    assert_eq!(seen[1].state, None);
    assert_eq!(seen[2].state.as_deref(), Some("flow-state"));
}

#[tokio::test(start_paused = true)]
async fn state_only_rounds_back_off_from_50_to_250_ms() {
    let times = Arc::new(Mutex::new(Vec::new()));
    let t = times.clone();
    let handler = Scripted::new(move |_ctx, p| {
        t.lock().unwrap().push(tokio::time::Instant::now());
        async move {
            let n: u32 = p.request_state.as_deref().map_or(0, |s| s.parse().unwrap());
            assert!(p.input_responses.is_none());
            Ok(if n < 5 {
                InputRequiredResult::new()
                    .with_request_state((n + 1).to_string())
                    .into()
            } else {
                CallToolResult::text("done").into()
            })
        }
    });
    let client = Client::builder()
        .connect_memory(handler.server())
        .await
        .unwrap();
    assert_eq!(
        text(&client.call_tool("poll", Value::Null).await.unwrap()),
        "done"
    );
    let times = times.lock().unwrap();
    let gaps: Vec<u128> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(gaps, [50, 100, 200, 250, 250]);
}

#[tokio::test]
async fn the_round_cap_fails_with_the_last_result() {
    let handler = Scripted::new(|_ctx, p| async move {
        let n: u32 = p.request_state.as_deref().map_or(0, |s| s.parse().unwrap());
        Ok(ask("again").with_request_state((n + 1).to_string()).into())
    });
    let client = answering()
        .max_rounds(3)
        .connect_memory(handler.clone().server())
        .await
        .unwrap();
    let err = client.call_tool("loop", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InputRequired);
    let details = InputRequiredError::of(&err).unwrap();
    assert_eq!(
        details.reason(),
        &InputRequiredReason::RoundsExceeded { max_rounds: 3 }
    );
    assert_eq!(
        details.last_result().unwrap().request_state.as_deref(),
        Some("4")
    );
    assert_eq!(handler.seen().len(), 4, "1 call + 3 retries");

    // Per call.
    let err = client
        .call_tool_with("loop", Value::Null, CallOptions::new().max_rounds(1))
        .await
        .unwrap_err();
    assert_eq!(InputRequiredError::of(&err).unwrap().rounds(), 2);
    assert_eq!(handler.seen().len(), 6);

    // Resuming from the last result by hand continues the flow.
    let last = details.last_result().unwrap().clone();
    let next = Continuation::after(&last).with_responses(
        client
            .answer(InputOrigin::tool("loop"), &last)
            .await
            .unwrap(),
    );
    match client
        .call_tool_once("loop", Value::Null, next)
        .await
        .unwrap()
    {
        Outcome::InputRequired(r) => assert_eq!(r.request_state.as_deref(), Some("5")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_missing_handler_fails_before_anything_is_answered() {
    // A server that asks for sampling although the client never declared it (arctern's own
    // server refuses with -32021 before that; a scripted transport plays a careless one).
    let irr = ask("a").with_input_request(
        "b",
        InputRequest::sample(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text("?")],
            10,
        )),
    );
    let (transport, sent) = Canned::new(vec![serde_json::to_value(&irr).unwrap()]);
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let client = Client::builder()
        .on_elicit(move |_q| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(ElicitResult::decline()) }
        })
        .discover(false)
        .build(transport)
        .unwrap();
    let err = client.call_tool("x", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InputRequired);
    let details = InputRequiredError::of(&err).unwrap();
    assert!(matches!(
        details.reason(),
        InputRequiredReason::NoHandler { key, .. } if key == "b"
    ));
    assert_eq!(details.last_result(), Some(&irr));
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_server_refuses_questions_the_client_did_not_declare() {
    let handler = Scripted::new(|_ctx, _p| async move { Ok(ask("a").into()) });
    let client = Client::builder()
        .connect_memory(handler.server())
        .await
        .unwrap();
    let err = client.call_tool("x", Value::Null).await.unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32021);
}

#[tokio::test]
async fn a_decline_is_sent_back_and_every_kind_is_answered_concurrently() {
    let handler = Scripted::new(|_ctx, p| async move {
        let Some(r) = p.input_responses else {
            return Ok(ask("confirm")
                .with_input_request(
                    "q",
                    InputRequest::sample(CreateMessageRequestParams::new(
                        vec![SamplingMessage::user_text("capital?")],
                        10,
                    )),
                )
                .with_input_request("roots", InputRequest::list_roots())
                .into());
        };
        Ok(CallToolResult::text(serde_json::to_string(&r).unwrap()).into())
    });
    // Each handler waits for the others: only concurrent answering completes.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let (b1, b2, b3) = (barrier.clone(), barrier.clone(), barrier.clone());
    let client = Client::builder()
        .on_elicit(move |_q| {
            let b = b1.clone();
            async move {
                b.wait().await;
                Ok(ElicitResult::decline())
            }
        })
        .on_sample(move |q| {
            let b = b2.clone();
            async move {
                assert_eq!(q.origin().target(), "x");
                b.wait().await;
                Ok(CreateMessageResult::text("model", "Paris"))
            }
        })
        .on_roots(move |_q| {
            let b = b3.clone();
            async move {
                b.wait().await;
                Ok(arctern::types::roots::ListRootsResult::new(vec![
                    Root::new("file:///r"),
                ]))
            }
        })
        .connect_memory(handler.clone().server())
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), client.call_tool("x", Value::Null))
        .await
        .expect("answered concurrently")
        .unwrap();
    let answers: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(answers["confirm"], json!({"action": "decline"}));
    assert_eq!(answers["q"]["model"], "model");
    assert_eq!(answers["roots"]["roots"][0]["uri"], "file:///r");
}

#[tokio::test]
async fn prompts_and_resources_run_the_same_loop() {
    let handler = Scripted::new(|_ctx, _p| async { Ok(CallToolResult::text("").into()) });
    let client = answering().connect_memory(handler.server()).await.unwrap();
    let prompt = client
        .get_prompt("briefing", json!({"topic": "MRTR"}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0].content).unwrap()["text"],
        "Brief the answer-audience on MRTR."
    );
    let read = client.read_resource("test://ask").await.unwrap();
    assert_eq!(read.contents.len(), 1);
    assert!(
        client.get_prompt("p", json!({"n": 1})).await.is_err(),
        "prompt args are strings"
    );
}

// ------------------------------------------------------------------ results without or with odd resultType

/// A transport that answers each request with the next canned result (or error).
struct Canned {
    results: Mutex<VecDeque<Value>>,
    sent: Arc<Mutex<Vec<Value>>>,
}

impl Canned {
    fn new(results: Vec<Value>) -> (Self, Arc<Mutex<Vec<Value>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        (
            Canned {
                results: Mutex::new(results.into()),
                sent: sent.clone(),
            },
            sent,
        )
    }
}

impl Transport for Canned {
    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, arctern::Result<MessageStream>> {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let id = body["id"].clone();
        self.sent.lock().unwrap().push(body);
        let next = self.results.lock().unwrap().pop_front().unwrap();
        let message = if next.get("code").is_some() {
            json!({"jsonrpc": "2.0", "id": id, "error": next})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "result": next})
        };
        let bytes = serde_json::to_vec(&message).unwrap();
        let stream: MessageStream =
            futures::stream::once(async move { Ok(JsonRpcMessage::from_slice(&bytes).unwrap()) })
                .boxed();
        async move { Ok(stream) }.boxed()
    }

    fn notify(&self, _n: OutgoingMessage) -> BoxFuture<'static, arctern::Result<()>> {
        async { Ok(()) }.boxed()
    }

    fn close(&self) -> BoxFuture<'static, arctern::Result<()>> {
        async { Ok(()) }.boxed()
    }
}

#[tokio::test]
async fn a_missing_result_type_means_complete_and_an_unknown_one_is_an_error() {
    let (transport, sent) = Canned::new(vec![
        json!({"content": [{"type": "text", "text": "old server"}]}),
        json!({"resultType": "later"}),
        json!({"resultType": "input_required"}),
    ]);
    let client = answering().discover(false).build(transport).unwrap();
    let result = client.call_tool("a", Value::Null).await.unwrap();
    assert_eq!(text(&result), "old server");

    let err = client.call_tool("b", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InputRequired);
    assert_eq!(
        InputRequiredError::of(&err).unwrap().reason(),
        &InputRequiredReason::UnknownResultType("later".into())
    );

    let err = client.call_tool("c", Value::Null).await.unwrap_err();
    assert_eq!(
        InputRequiredError::of(&err).unwrap().reason(),
        &InputRequiredReason::Malformed
    );
    assert_eq!(sent.lock().unwrap().len(), 3, "no retry after any of them");
}

#[tokio::test]
async fn unsupported_version_errors_retry_with_a_listed_version() {
    let (transport, sent) = Canned::new(vec![
        json!({"code": -32022, "message": "Unsupported protocol version",
               "data": {"supported": ["2026-07-28"], "requested": "2027-01-01"}}),
        json!({"content": []}),
    ]);
    let client = Client::builder()
        .protocol_versions(["2027-01-01", "2026-07-28"])
        .discover(false)
        .build(transport)
        .unwrap();
    client.call_tool("a", Value::Null).await.unwrap();
    let sent = sent.lock().unwrap();
    assert_eq!(
        sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2027-01-01"
    );
    assert_eq!(
        sent[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_ne!(sent[0]["id"], sent[1]["id"]);
    assert_eq!(client.protocol_version(), "2026-07-28");
}

#[tokio::test]
async fn a_refused_version_the_server_still_lists_is_retried_once() {
    let refusal = json!({"code": -32022, "message": "Unsupported protocol version",
                         "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}});
    let (transport, sent) = Canned::new(vec![
        refusal.clone(),
        json!({"content": []}),
        refusal.clone(),
        refusal,
    ]);
    let client = Client::builder().discover(false).build(transport).unwrap();
    client.call_tool("a", Value::Null).await.unwrap();
    {
        let sent = sent.lock().unwrap();
        assert_eq!(sent.len(), 2);
        for request in sent.iter() {
            assert_eq!(
                request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
        }
        assert_ne!(sent[0]["id"], sent[1]["id"]);
    }

    // A second refusal in a row is the caller's error, not a loop.
    let err = client.call_tool("b", Value::Null).await.unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code.0, -32022);
    assert_eq!(sent.lock().unwrap().len(), 4);
}

// ------------------------------------------------------------------ negotiation with a real server

#[tokio::test]
async fn discover_negotiates_down_to_a_shared_version() {
    let server = McpServer::new("negotiator").version("1.0").build().unwrap();
    let client = Client::builder()
        .protocol_versions(["2027-01-01", "2026-07-28"])
        .connect_memory(server.clone())
        .await
        .unwrap();
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.server_info().unwrap().name, "negotiator");

    let err = Client::builder()
        .protocol_versions(["2027-01-01"])
        .connect_memory(server)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Version);
    let details = VersionError::of(&err).unwrap();
    assert_eq!(details.server_versions(), ["2026-07-28"]);
    assert_eq!(details.client_versions(), ["2027-01-01"]);
}

// ------------------------------------------------------------------ the manual loop across "processes"

#[tokio::test]
async fn a_manual_flow_is_persisted_and_resumed_by_another_client() {
    let handler = Scripted::new(|_ctx, p| async move {
        Ok(match p.request_state.as_deref() {
            None => ask("approve").with_request_state("pending-approval").into(),
            Some("pending-approval") => {
                let answer = &p.input_responses.unwrap()["approve"];
                CallToolResult::text(format!(
                    "approved by {}",
                    serde_json::to_string(answer).unwrap()
                ))
                .into()
            }
            Some(other) => CallToolResult::error(format!("bad state {other}")).into(),
        })
    });
    let server = handler.clone().server();
    let file =
        std::env::temp_dir().join(format!("arctern-client-flow-{}.json", std::process::id()));

    // Process one: starts the flow, stores it, and goes away.
    {
        let first = Client::builder()
            .on_elicit(|_q| async { Ok(ElicitResult::cancel()) })
            .connect_memory(server.clone())
            .await
            .unwrap();
        let args = json!({"deploy": "v2"});
        let Outcome::InputRequired(round) = first
            .call_tool_once("deploy", args.clone(), Continuation::new())
            .await
            .unwrap()
        else {
            panic!("expected input_required");
        };
        let saved = json!({"tool": "deploy", "arguments": args, "round": round});
        std::fs::write(&file, serde_json::to_vec(&saved).unwrap()).unwrap();
        first.close().await.unwrap();
    }

    // Process two: reads it, answers with its own handler, and finishes.
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).ok();
    let round: InputRequiredResult = serde_json::from_value(saved["round"].clone()).unwrap();
    let second = Client::builder()
        .on_elicit(|_q| async { Ok(ElicitResult::accept([("approve", "alice")])) })
        .connect_memory(server)
        .await
        .unwrap();
    let tool = saved["tool"].as_str().unwrap();
    let answers = second
        .answer(InputOrigin::tool(tool), &round)
        .await
        .unwrap();
    let next = Continuation::after(&round).with_responses(answers);
    // The continuation itself survives serialization.
    let next: Continuation = serde_json::from_str(&serde_json::to_string(&next).unwrap()).unwrap();
    let done = second
        .call_tool_once(tool, saved["arguments"].clone(), next)
        .await
        .unwrap();
    let Outcome::Complete(result) = done else {
        panic!("expected complete");
    };
    assert_eq!(
        text(&result),
        r#"approved by {"action":"accept","content":{"approve":"alice"}}"#
    );
    let seen = handler.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1].arguments,
        json!({"deploy": "v2"}).as_object().cloned()
    );

    // The automatic loop resumes from a continuation too.
    let resumed = second
        .call_tool_with(
            "deploy",
            json!({"deploy": "v2"}),
            CallOptions::new().resume(
                Continuation::after(&round)
                    .with_response("approve", ElicitResult::accept([("approve", "bob")])),
            ),
        )
        .await
        .unwrap();
    assert!(text(&resumed).contains("bob"));
}

// ------------------------------------------------------------------ cancellation

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_server() {
    let (started_tx, started_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (dropped_tx, mut dropped_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    struct Guard(tokio::sync::mpsc::UnboundedSender<()>);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let started = Arc::new(Mutex::new(Some(started_tx)));
    let handler = Scripted::new(move |_ctx, _p| {
        let guard = Guard(dropped_tx.clone());
        let started = started.lock().unwrap().take();
        async move {
            let _guard = guard;
            if let Some(s) = started {
                let _ = s.send(());
            }
            std::future::pending::<()>().await;
            unreachable!()
        }
    });
    let client = Client::builder()
        .connect_memory(handler.server())
        .await
        .unwrap();
    let mut started_rx = started_rx;
    let call = client.call_tool("hang", Value::Null);
    tokio::select! {
        _ = call => panic!("the call cannot finish"),
        _ = started_rx.recv() => {}
    }
    // The call future is dropped here; the handler must see it.
    tokio::time::timeout(Duration::from_secs(5), dropped_rx.recv())
        .await
        .expect("the server observed the cancellation")
        .unwrap();
}

// ------------------------------------------------------------------ subscriptions, callbacks, lists, cache

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn mcp_server(page_size: usize) -> Server<arctern::server::McpHandler> {
    let mut server = McpServer::new("everything")
        .version("2.0")
        .page_size(page_size);
    for i in 0..5 {
        server = server.tool(
            format!("echo{i}"),
            "Echoes.",
            |Args(e): Args<Echo>| async move { e.text },
        );
    }
    server
        .tool(
            "work",
            "Reports progress and logs.",
            |ctx: RequestContext| async move {
                ctx.progress(1.0, Some(2.0), Some("half")).await;
                ctx.progress(2.0, Some(2.0), None).await;
                ctx.log(LoggingLevel::Info, None, json!("info line")).await;
                ctx.log(LoggingLevel::Debug, None, json!("debug line"))
                    .await;
                "worked"
            },
        )
        .logging(true)
        .build()
        .unwrap()
}

#[tokio::test]
async fn subscribe_streams_list_changes_after_the_acknowledgement() {
    let server = mcp_server(100);
    let client = Client::builder()
        .connect_memory(server.clone())
        .await
        .unwrap();
    let mut sub = client
        .subscribe(
            SubscriptionFilter::new()
                .with_tools_list_changed()
                .with_prompts_list_changed(),
        )
        .await
        .unwrap();
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    assert_eq!(
        sub.acknowledged().prompts_list_changed,
        None,
        "no prompts on this server"
    );
    server
        .handler()
        .add_tool(
            ToolSpec::new("late").description("Added later."),
            |Args(e): Args<Echo>| async move { e.text },
        )
        .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(next, ServerNotification::ToolsListChanged));
    assert!(
        client
            .list_tools()
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "late")
    );
    drop(sub);
}

#[tokio::test]
async fn progress_and_log_callbacks_per_call_and_global() {
    let server = mcp_server(100);
    let global_logs = Arc::new(Mutex::new(Vec::new()));
    let g = global_logs.clone();
    let client = Client::builder()
        .on_log(LoggingLevel::Debug, move |m| g.lock().unwrap().push(m.data))
        .connect_memory(server)
        .await
        .unwrap();
    let progress = Arc::new(Mutex::new(Vec::new()));
    let p = progress.clone();
    let result = client
        .call_tool_with(
            "work",
            Value::Null,
            CallOptions::new()
                .on_progress(move |n| p.lock().unwrap().push((n.progress, n.message))),
        )
        .await
        .unwrap();
    assert_eq!(text(&result), "worked");
    assert_eq!(
        *progress.lock().unwrap(),
        [(1.0, Some("half".to_owned())), (2.0, None)]
    );
    assert_eq!(
        *global_logs.lock().unwrap(),
        [json!("info line"), json!("debug line")]
    );

    // A per-call log level overrides the global one.
    let call_logs = Arc::new(Mutex::new(Vec::new()));
    let c = call_logs.clone();
    client
        .call_tool_with(
            "work",
            Value::Null,
            CallOptions::new().on_log(LoggingLevel::Info, move |m| c.lock().unwrap().push(m.data)),
        )
        .await
        .unwrap();
    assert_eq!(*call_logs.lock().unwrap(), [json!("info line")]);
}

#[tokio::test]
async fn list_helpers_follow_cursors() {
    let client = Client::builder()
        .connect_memory(mcp_server(2))
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    let page = client.list_tools_page(None).await.unwrap();
    assert_eq!(page.tools.len(), 2);
    let next = client
        .list_tools_page(page.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(next.tools[0].name, "echo2");
    assert!(
        client.list_prompts().await.is_err(),
        "no prompts capability: -32601"
    );
}

#[tokio::test]
async fn the_cache_keeps_lists_for_their_ttl_but_never_retries() {
    let mut handler = Scripted::new(|_ctx, _p| async { Ok(CallToolResult::text("").into()) });
    handler.ttl = Some(60_000);
    let server = handler.clone().server();

    let uncached = Client::builder()
        .connect_memory(server.clone())
        .await
        .unwrap();
    uncached.list_tools().await.unwrap();
    uncached.list_tools().await.unwrap();
    assert_eq!(handler.lists.swap(0, Ordering::SeqCst), 2, "off by default");

    let cached = answering()
        .cache(true)
        .connect_memory(server.clone())
        .await
        .unwrap();
    cached.list_tools().await.unwrap();
    cached.list_tools().await.unwrap();
    assert_eq!(handler.lists.swap(0, Ordering::SeqCst), 1);

    cached.read_resource("test://plain").await.unwrap();
    cached.read_resource("test://plain").await.unwrap();
    assert_eq!(
        handler.lists.swap(0, Ordering::SeqCst),
        1,
        "a first-round read is kept"
    );

    cached.read_resource("test://ask").await.unwrap();
    cached.read_resource("test://ask").await.unwrap();
    assert_eq!(
        handler.lists.swap(0, Ordering::SeqCst),
        4,
        "a read that needed input is not"
    );

    // A list change announced on a subscription invalidates the list.
    let mut sub = cached
        .subscribe(SubscriptionFilter::new().with_tools_list_changed())
        .await
        .unwrap();
    server.change_notifier().tools_changed();
    assert!(matches!(
        sub.next().await.unwrap().unwrap(),
        ServerNotification::ToolsListChanged
    ));
    cached.list_tools().await.unwrap();
    assert_eq!(handler.lists.swap(0, Ordering::SeqCst), 1);
}

#[tokio::test]
async fn closing_fails_later_calls() {
    let client = Client::builder()
        .connect_memory(mcp_server(100))
        .await
        .unwrap();
    client.close().await.unwrap();
    let err = client
        .call_tool("echo0", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
}

#[tokio::test]
async fn the_memory_transport_can_check_http_headers() {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let s = sent.clone();
    let transport = MemoryTransport::new(mcp_server(100))
        .with_http_headers()
        .observe(move |m| s.lock().unwrap().push(m.headers.clone()));
    let client = Client::builder().connect_with(transport).await.unwrap();
    // The first call lists tools to learn their x-mcp-header annotations.
    client
        .call_tool("echo1", json!({"text": "hi"}))
        .await
        .unwrap();
    let sent = sent.lock().unwrap();
    let methods: Vec<_> = sent
        .iter()
        .map(|h| h["mcp-method"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(methods, ["server/discover", "tools/list", "tools/call"]);
    for h in sent.iter() {
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
    }
    assert_eq!(sent[2]["mcp-name"], "echo1");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_stops_a_flow_and_keeps_the_last_result() {
    let handler = Scripted::new(|_ctx, p| async move {
        let n: u32 = p.request_state.as_deref().map_or(0, |s| s.parse().unwrap());
        Ok(InputRequiredResult::new()
            .with_request_state((n + 1).to_string())
            .into())
    });
    let client = Client::builder()
        .max_rounds(1000)
        .deadline(Duration::from_millis(1000))
        .connect_memory(handler.clone().server())
        .await
        .unwrap();
    let err = client.call_tool("poll", Value::Null).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let details = InputRequiredError::of(&err).unwrap();
    assert_eq!(details.reason(), &InputRequiredReason::DeadlineExceeded);
    // 50 + 100 + 200 + 250 + 250 = 850 ms: five retries fit, the sixth pause does not.
    assert_eq!(handler.seen().len(), 6);
    assert_eq!(
        details.last_result().unwrap().request_state.as_deref(),
        Some("6")
    );
}

#[tokio::test]
async fn completion_requests_carry_reference_argument_and_context() {
    let handler = Scripted::new(|_ctx, _p| async { Ok(CallToolResult::text("").into()) });
    let client = Client::builder()
        .connect_memory(handler.server())
        .await
        .unwrap();
    let result = client
        .complete(
            arctern::types::completion::PromptReference::new("p"),
            "city",
            "Par",
            Some([("country".to_owned(), "FR".to_owned())].into()),
        )
        .await
        .unwrap();
    assert_eq!(result.completion.values, ["Paris", "Par-1"]);
}

#[tokio::test]
async fn calls_are_send_and_run_on_spawned_tasks() {
    fn assert_send_sync<T: Send + Sync + 'static>(_: &T) {}
    let client = answering().connect_memory(mcp_server(100)).await.unwrap();
    assert_send_sync(&client);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let r = client
                    .call_tool(&format!("echo{}", i % 5), json!({"text": i.to_string()}))
                    .await
                    .unwrap();
                assert_eq!(text(&r), i.to_string());
                client.list_tools().await.unwrap().len()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 6);
    }
    let mut sub = client
        .subscribe(SubscriptionFilter::new().with_tools_list_changed())
        .await
        .unwrap();
    let next = tokio::spawn(async move { sub.next().await.map(|r| r.is_ok()) });
    drop(next);
}

// ------------------------------------------------------------------ a legacy session in process

#[tokio::test]
async fn a_legacy_session_in_process_goes_through_the_shim() {
    use arctern::server::mrtr::{Ask, Interrupt, Questions};
    let server = McpServer::new("legacy-memory")
        .tool(
            "greet",
            "Greets.",
            |q: Questions, ctx: RequestContext| async move {
                let name = q.answer(Ask::text("name", "Your name?"))?;
                Ok::<_, Interrupt>(format!("hello {name} ({})", ctx.protocol_version()))
            },
        )
        .build()
        .unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let client = Client::builder()
        .era(arctern::Era::Legacy)
        .on_elicit(move |q| {
            seen.lock().unwrap().push(q.key().to_owned());
            async move { Ok(ElicitResult::accept([("name", "Ada")])) }
        })
        .connect_memory(server.clone())
        .await
        .unwrap();
    assert!(client.is_legacy());
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(client.server_info().unwrap().name, "legacy-memory");
    client.ping().await.unwrap();
    let result = client.call_tool("greet", Value::Null).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "hello Ada (2025-11-25)"
    );
    // The shim named the question's key.
    assert_eq!(*asked.lock().unwrap(), ["name"]);

    // Session notifications reach subscriptions.
    let mut sub = client
        .subscribe(SubscriptionFilter::new().with_tools_list_changed())
        .await
        .unwrap();
    server.change_notifier().tools_changed();
    let n = tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(n, ServerNotification::ToolsListChanged));

    // A modern client of the same server is unaffected.
    let modern = Client::builder().connect_memory(server).await.unwrap();
    assert!(!modern.is_legacy());
    client.close().await.unwrap();
    assert!(
        client
            .call_tool("greet", Value::Null)
            .await
            .unwrap_err()
            .is_closed()
    );
}
