//! Multi round-trip requests on `McpServer`, driven in process through the engine.

use arctern::server::connection::{MessageKind, Reply, RequestOrigin, TransportKind};
use arctern::server::extract::Args;
use arctern::server::mrtr::{
    Answer, AnswerOutcome, Ask, AskContext, Decision, HandlerState, Interrupt, NotYet, Question,
    Questions, Responses, Roots,
};
use arctern::server::{McpHandler, McpServer, Outcome, Server};
use arctern::types::mrtr::{InputRequest, InputRequiredResult};
use arctern::types::tools::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Provision {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Region {
    region: String,
}

impl Question for Region {
    const KEY: &'static str = "region";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let name = cx
            .arguments::<Provision>()
            .map(|p| p.name)
            .unwrap_or_default();
        Ok(Ask::form(format!("Which region should {name} live in?")))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Tier {
    tier: String,
}

impl Question for Tier {
    const KEY: &'static str = "tier";
    fn ask(_cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        Ok(Ask::form("Which tier?"))
    }
}

/// Depends on the region: asked only once the region is known.
#[derive(Deserialize, JsonSchema)]
struct Size {
    gigabytes: u32,
}

impl Question for Size {
    const KEY: &'static str = "size";
    fn ask(cx: &AskContext<'_>) -> Result<Ask, NotYet> {
        let region = cx.answer::<Region>()?;
        Ok(Ask::form(format!("How large, in {}?", region.region)))
    }
}

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps
    })
}

struct Driver {
    server: Server<McpHandler>,
    next_id: i64,
}

impl Driver {
    fn new(server: Server<McpHandler>) -> Self {
        Driver { server, next_id: 1 }
    }

    async fn send(&mut self, method: &str, params: Value) -> (u16, Value) {
        let params = serde_json::to_string(&params).unwrap();
        self.send_text(method, &params).await
    }

    /// Sends params given as JSON text (which may hold what a `Value` cannot, such as a
    /// member given twice).
    async fn send_text(&mut self, method: &str, params: &str) -> (u16, Value) {
        let id = self.next_id;
        self.next_id += 1;
        let bytes =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
                .into_bytes();
        let reply = self
            .server
            .handle_bytes(&bytes, RequestOrigin::new(TransportKind::Memory))
            .await;
        match reply {
            Reply::Message { kind, body } => {
                let status = match kind {
                    MessageKind::Invalid => 400,
                    MessageKind::UnknownMethod => 404,
                    _ => 200,
                };
                let v: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(v["id"], id);
                arctern::types::schema_check::validate_for(
                    "2026-07-28",
                    if v.get("error").is_some() {
                        "JSONRPCErrorResponse"
                    } else {
                        "JSONRPCResultResponse"
                    },
                    &v,
                )
                .unwrap();
                (status, v)
            }
            other => panic!("unexpected reply {other:?}"),
        }
    }

    async fn call(&mut self, tool: &str, args: Value, caps: Value, extra: Value) -> (u16, Value) {
        let mut params = json!({"name": tool, "arguments": args, "_meta": meta(caps)});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        self.send("tools/call", params).await
    }
}

fn elicit_caps() -> Value {
    json!({"elicitation": {}})
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn independent_questions_are_batched_and_dependent_ones_wait() {
    let server = McpServer::new("provisioner")
        .tool(
            "provision",
            "Provision a database.",
            |Args(p): Args<Provision>,
             Answer(r): Answer<Region>,
             Answer(t): Answer<Tier>,
             Answer(s): Answer<Size>| async move {
                format!(
                    "{} in {} ({}, {} GB)",
                    p.name, r.region, t.tier, s.gigabytes
                )
            },
        )
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let args = json!({"name": "orders"});

    // Round 1: region and tier together; size waits for the region.
    let (_, r1) = d
        .call("provision", args.clone(), elicit_caps(), json!({}))
        .await;
    let result = &r1["result"];
    assert_eq!(result["resultType"], "input_required");
    let asks = result["inputRequests"].as_object().unwrap();
    assert_eq!(asks.keys().collect::<Vec<_>>(), vec!["region", "tier"]);
    assert_eq!(
        asks["region"]["params"]["message"],
        "Which region should orders live in?"
    );
    assert_eq!(
        asks["region"]["params"]["requestedSchema"]["properties"]["region"]["type"],
        "string"
    );
    let state1 = result["requestState"].as_str().unwrap().to_owned();

    // Round 2: both answered; now the dependent question comes.
    let (_, r2) = d
        .call("provision", args.clone(), elicit_caps(), json!({
            "inputResponses": {"region": accept(json!({"region": "eu-west-1"})), "tier": accept(json!({"tier": "gold"}))},
            "requestState": state1,
        }))
        .await;
    let result = &r2["result"];
    assert_eq!(result["resultType"], "input_required", "{r2}");
    let asks = result["inputRequests"].as_object().unwrap();
    assert_eq!(asks.keys().collect::<Vec<_>>(), vec!["size"]);
    assert_eq!(
        asks["size"]["params"]["message"],
        "How large, in eu-west-1?"
    );
    let state2 = result["requestState"].as_str().unwrap().to_owned();

    // Round 3: the earlier answers travel in the sealed state; only size is sent now.
    let (_, r3) = d
        .call(
            "provision",
            args.clone(),
            elicit_caps(),
            json!({
                "inputResponses": {"size": accept(json!({"gigabytes": 20}))},
                "requestState": state2,
            }),
        )
        .await;
    assert_eq!(r3["result"]["resultType"], "complete", "{r3}");
    assert_eq!(
        r3["result"]["content"][0]["text"],
        "orders in eu-west-1 (gold, 20 GB)"
    );
}

#[tokio::test]
async fn unsolicited_and_forged_answers_are_ignored() {
    let server = McpServer::new("provisioner")
        .tool(
            "provision",
            "Provision.",
            |Answer(r): Answer<Region>| async move { r.region },
        )
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    // An answer with no prior round (nothing was asked) is not trusted: asked again.
    let (_, r) = d
        .call(
            "provision",
            json!({"name": "x"}),
            elicit_caps(),
            json!({
                "inputResponses": {"region": accept(json!({"region": "forged"}))}
            }),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();

    // The question depends on the arguments; replaying the state with other arguments fails.
    let (status, r) = d
        .call("provision", json!({"name": "y"}), elicit_caps(), json!({
            "inputResponses": {"region": accept(json!({"region": "eu"}))}, "requestState": state.clone()
        }))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        r["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState"})
    );

    // An answer of the wrong shape is not accepted: asked again.
    let (_, r) = d
        .call("provision", json!({"name": "x"}), elicit_caps(), json!({
            "inputResponses": {"region": accept(json!({"wrong": 1}))}, "requestState": state.clone()
        }))
        .await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");

    // Tampered state: the fixed error.
    let (status, r) = d
        .call("provision", json!({"name": "x"}), elicit_caps(), json!({
            "inputResponses": {"region": accept(json!({"region": "eu"}))}, "requestState": format!("{state}-TAMPERED")
        }))
        .await;
    assert_eq!(status, 400);
    assert_eq!(r["error"]["message"], "Invalid or expired requestState");

    // The real flow completes.
    let (_, r) = d
        .call(
            "provision",
            json!({"name": "x"}),
            elicit_caps(),
            json!({
                "inputResponses": {"region": accept(json!({"region": "eu"}))}, "requestState": state
            }),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "eu");
}

#[tokio::test]
async fn declines_become_is_error_unless_the_body_asks_for_the_decision() {
    let server = McpServer::new("s")
        .tool(
            "strict",
            "",
            |Answer(r): Answer<Region>| async move { r.region },
        )
        .tool(
            "lenient",
            "",
            |AnswerOutcome(d): AnswerOutcome<Region>| async move {
                match d {
                    Decision::Accepted(r) => r.region,
                    Decision::Declined => "declined".into(),
                    Decision::Cancelled => "cancelled".into(),
                }
            },
        )
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    for (tool, expect_error, text) in [("strict", true, None), ("lenient", false, Some("declined"))]
    {
        let (_, r) = d.call(tool, json!({}), elicit_caps(), json!({})).await;
        let state = r["result"]["requestState"].as_str().unwrap().to_owned();
        let (_, r) = d
            .call(
                tool,
                json!({}),
                elicit_caps(),
                json!({
                    "inputResponses": {"region": {"action": "decline"}}, "requestState": state
                }),
            )
            .await;
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(
            r["result"]["isError"].as_bool().unwrap_or(false),
            expect_error,
            "{r}"
        );
        if let Some(text) = text {
            assert_eq!(r["result"]["content"][0]["text"], text);
        }
    }
}

#[tokio::test]
async fn missing_capabilities_answer_32021() {
    let server = McpServer::new("s")
        .tool(
            "ask",
            "",
            |Answer(r): Answer<Region>| async move { r.region },
        )
        .tool("roots", "", |Roots(roots): Roots| async move {
            roots.len().to_string()
        })
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let (status, r) = d
        .call("ask", json!({}), json!({"sampling": {}}), json!({}))
        .await;
    assert_eq!(status, 400, "the specification ties -32021 to HTTP 400");
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    let (_, r) = d.call("roots", json!({}), json!({}), json!({})).await;
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
    let (_, r) = d
        .call("roots", json!({}), json!({"roots": {}}), json!({}))
        .await;
    assert_eq!(
        r["result"]["inputRequests"]["roots"]["method"],
        "roots/list"
    );
}

#[tokio::test]
async fn questions_asked_from_the_body_batch_then_depend() {
    let server = McpServer::new("s")
        .tool("flow", "", |q: Questions| async move {
            let (r, t) = q.ready((q.ask::<Region>(), q.ask::<Tier>()))?;
            let size = q.answer::<Size>()?;
            Ok::<_, Interrupt>(format!("{} {} {}", r.region, t.tier, size.gigabytes))
        })
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let (_, r) = d.call("flow", json!({}), elicit_caps(), json!({})).await;
    let asks: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(asks, vec!["region", "tier"]);
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let (_, r) = d
        .call("flow", json!({}), elicit_caps(), json!({
            "inputResponses": {"region": accept(json!({"region": "us"})), "tier": accept(json!({"tier": "t1"}))},
            "requestState": state
        }))
        .await;
    let asks: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(asks, vec!["size"]);
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let (_, r) = d
        .call(
            "flow",
            json!({}),
            elicit_caps(),
            json!({
                "inputResponses": {"size": accept(json!({"gigabytes": 5}))}, "requestState": state
            }),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "us t1 5");
}

#[tokio::test]
async fn manual_form_reads_responses_and_plaintext_state() {
    let server = McpServer::new("s")
        .tool(
            "confirm",
            "",
            |Responses(r): Responses, HandlerState(state): HandlerState| async move {
                match (r.get("confirm"), state.as_deref()) {
                    (Some(_), Some("step-1")) => {
                        Outcome::Complete(CallToolResult::text("state-ok"))
                    }
                    _ => Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_input_request(
                                "confirm",
                                InputRequest::elicit_form("Sure?", Default::default()),
                            )
                            .with_request_state("step-1"),
                    ),
                }
            },
        )
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let (_, r) = d.call("confirm", json!({}), elicit_caps(), json!({})).await;
    let token = r["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(token, "step-1", "the plaintext never reaches the wire");
    let (_, r) = d
        .call("confirm", json!({}), elicit_caps(), json!({
            "inputResponses": {"confirm": {"action": "accept", "content": {}}}, "requestState": token
        }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "state-ok");
}

#[test]
fn mixing_the_two_forms_is_rejected_at_registration() {
    let err = McpServer::new("s")
        .tool(
            "mixed",
            "",
            |Answer(r): Answer<Region>, Responses(_): Responses| async move { r.region },
        )
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("mixed") && text.contains("mixes the two multi round-trip forms"),
        "{text}"
    );

    let err = McpServer::new("s")
        .without_state_sealing()
        .tool(
            "ask",
            "",
            |Answer(r): Answer<Region>| async move { r.region },
        )
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("need request-state sealing"),
        "{err}"
    );
}

#[tokio::test]
async fn every_malformed_request_state_gets_the_one_rejection() {
    let server = McpServer::new("provisioner")
        .tool(
            "provision",
            "Provision.",
            |Answer(r): Answer<Region>| async move { r.region },
        )
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let meta = serde_json::to_string(&meta(elicit_caps())).unwrap();
    let call = |state: &str| {
        format!(
            r#"{{"name":"provision","arguments":{{"name":"x"}},"_meta":{meta},"requestState":{state}}}"#
        )
    };
    let (status, tampered) = d.send_text("tools/call", &call(r#""not-a-token""#)).await;
    assert_eq!(status, 400);
    assert_eq!(
        tampered["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState"})
    );
    for bad in [
        "5",
        "{}",
        "true",
        "null",
        r#"["a"]"#,
        r#""a","requestState":"b""#,
    ] {
        let (s, r) = d.send_text("tools/call", &call(bad)).await;
        assert_eq!(
            (s, &r["error"]),
            (status, &tampered["error"]),
            "requestState: {bad}"
        );
    }
}
