//! Multi round-trip requests on `McpServer`, driven in process through the engine.

use arctern::server::connection::{MessageKind, Reply, RequestOrigin, TransportKind};
use arctern::server::extract::Args;
use arctern::server::mrtr::{
    Answer, AnswerOutcome, Ask, AskContext, Decision, HandlerState, Interrupt, NoArgs, NotYet,
    Question, Questions, Responses, Roots,
};
use arctern::server::{McpHandler, McpServer, Outcome, Server};
use arctern::types::mrtr::{InputRequest, InputRequiredResult};
use arctern::types::roots::Root;
use arctern::types::tools::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Provision {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Region {
    region: String,
}

impl Question for Region {
    type Args = Provision;
    type Answer = Region;
    fn ask(cx: &AskContext<'_, Provision>) -> Result<Ask<Region>, NotYet> {
        let name = &cx.args().name;
        Ok(Ask::form(
            "region",
            format!("Which region should {name} live in?"),
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Tier {
    tier: String,
}

impl Question for Tier {
    type Args = NoArgs;
    type Answer = Tier;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Tier>, NotYet> {
        Ok(Ask::form("tier", "Which tier?"))
    }
}

/// Depends on the region: asked only once the region is known.
#[derive(Deserialize, JsonSchema)]
struct Size {
    gigabytes: u32,
}

impl Question for Size {
    type Args = NoArgs;
    type Answer = Size;
    fn ask(cx: &AskContext<'_, NoArgs>) -> Result<Ask<Size>, NotYet> {
        let region = cx.answer::<Region>()?;
        Ok(Ask::form(
            "size",
            format!("How large, in {}?", region.region),
        ))
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
                arctern_fixtures::schema_check::validate_for(
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
        .tool("roots", "", |Answer(roots): Answer<Roots>| async move {
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
            let region = q.ask(Ask::<Region>::form("region", "Which region?"));
            let tier = q.ask(Ask::<Tier>::form("tier", "Which tier?"));
            let (r, t) = q.ready((region, tier))?;
            let size: Size = q.answer(Ask::form("size", format!("How large, in {}?", r.region)))?;
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

// Questions as values: run-time choices, checked answers, keys, flows.

#[derive(Deserialize, JsonSchema)]
struct Trip {
    city: String,
}

fn hotels_in(city: &str) -> Vec<(&'static str, &'static str)> {
    match city {
        "Lisbon" => vec![("lx-1", "Avenida Palace"), ("lx-2", "Casa do Rio")],
        "Oslo" => vec![("os-1", "Fjord Hotel")],
        _ => vec![],
    }
}

/// A choice whose options depend on the call's arguments.
struct Hotel;

impl Question for Hotel {
    type Args = Trip;
    type Answer = String;
    fn ask(cx: &AskContext<'_, Trip>) -> Result<Ask<String>, NotYet> {
        let city = &cx.args().city;
        Ok(Ask::choice(
            "hotel",
            format!("Which hotel in {city}?"),
            hotels_in(city),
        ))
    }
}

fn booking_server() -> Server<McpHandler> {
    McpServer::new("s")
        .tool(
            "book",
            "",
            |Args(trip): Args<Trip>, Answer(hotel): Answer<Hotel>| async move {
                format!("{hotel} in {}", trip.city)
            },
        )
        .tool(
            "book_in_body",
            "",
            |Args(trip): Args<Trip>, q: Questions| async move {
                let ask = Ask::choice(
                    "hotel",
                    format!("Which hotel in {}?", trip.city),
                    hotels_in(&trip.city),
                );
                let hotel = q.answer(ask)?;
                Ok::<_, Interrupt>(format!("{hotel} in {}", trip.city))
            },
        )
        .build()
        .unwrap()
}

fn state_of(r: &Value) -> String {
    r["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {r}"))
        .to_owned()
}

#[tokio::test]
async fn run_time_choices_are_offered_and_answers_outside_them_refused() {
    let mut d = Driver::new(booking_server());
    for tool in ["book", "book_in_body"] {
        let lisbon = json!({"city": "Lisbon"});
        let (_, r) = d.call(tool, lisbon.clone(), elicit_caps(), json!({})).await;
        let asked = &r["result"]["inputRequests"]["hotel"]["params"];
        assert_eq!(asked["message"], "Which hotel in Lisbon?", "{tool}");
        assert_eq!(
            asked["requestedSchema"]["properties"]["hotel"]["oneOf"],
            json!([
                {"const": "lx-1", "title": "Avenida Palace"},
                {"const": "lx-2", "title": "Casa do Rio"}
            ])
        );
        assert_eq!(asked["requestedSchema"]["required"], json!(["hotel"]));

        // Another city, other options.
        let (_, oslo) = d
            .call(tool, json!({"city": "Oslo"}), elicit_caps(), json!({}))
            .await;
        assert_eq!(
            oslo["result"]["inputRequests"]["hotel"]["params"]["requestedSchema"]["properties"]["hotel"]
                ["oneOf"],
            json!([{"const": "os-1", "title": "Fjord Hotel"}])
        );

        // An Oslo hotel (or a title, or a number) is not one of Lisbon's options: refused,
        // and asked again with the reason.
        let mut state = state_of(&r);
        for wrong in [json!("os-1"), json!("Casa do Rio"), json!(7)] {
            let (_, r) = d
                .call(
                    tool,
                    lisbon.clone(),
                    elicit_caps(),
                    json!({"inputResponses": {"hotel": accept(json!({"hotel": wrong}))}, "requestState": state}),
                )
                .await;
            assert_eq!(
                r["result"]["resultType"], "input_required",
                "{tool} {wrong}: {r}"
            );
            let message = r["result"]["inputRequests"]["hotel"]["params"]["message"]
                .as_str()
                .unwrap();
            assert!(
                message.starts_with(
                    "Which hotel in Lisbon?\n\nThe previous answer was not accepted: hotel: "
                ),
                "{message}"
            );
            if wrong.is_string() {
                assert!(
                    message.contains(&format!("{wrong} is not one of the options")),
                    "{message}"
                );
            }
            state = state_of(&r);
        }

        // The question asked again (with the reason) takes its answer.
        let (_, r) = d
            .call(
                tool,
                lisbon.clone(),
                elicit_caps(),
                json!({"inputResponses": {"hotel": accept(json!({"hotel": "lx-2"}))}, "requestState": state}),
            )
            .await;
        assert_eq!(r["result"]["resultType"], "complete", "{tool}: {r}");
        assert_eq!(r["result"]["content"][0]["text"], "lx-2 in Lisbon");
    }
}

#[tokio::test]
async fn form_answers_are_checked_against_the_schema_that_was_asked() {
    let mut d = Driver::new(
        McpServer::new("s")
            .tool("size", "", |Answer(s): Answer<Size>| async move {
                s.gigabytes.to_string()
            })
            .build()
            .unwrap(),
    );
    // Size depends on Region: answer the region first.
    let (_, r) = d.call("size", json!({}), elicit_caps(), json!({})).await;
    let (_, r) = d
        .call(
            "size",
            json!({}),
            elicit_caps(),
            json!({"inputResponses": {"region": accept(json!({"region": "eu"}))}, "requestState": state_of(&r)}),
        )
        .await;
    let (_, r) = d
        .call(
            "size",
            json!({}),
            elicit_caps(),
            json!({"inputResponses": {"size": accept(json!({"gigabytes": "five"}))}, "requestState": state_of(&r)}),
        )
        .await;
    let message = r["result"]["inputRequests"]["size"]["params"]["message"]
        .as_str()
        .unwrap();
    assert_eq!(
        message,
        "How large, in eu?\n\nThe previous answer was not accepted: gigabytes: must be a whole number."
    );
    // A declined question is the user's decision, not a wrong answer.
    let (_, r) = d
        .call(
            "size",
            json!({}),
            elicit_caps(),
            json!({"inputResponses": {"size": {"action": "decline"}}, "requestState": state_of(&r)}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[tokio::test]
async fn one_answer_type_under_several_keys() {
    let server = McpServer::new("s")
        .tool("ship", "", |q: Questions| async move {
            let charge = q.ask(Ask::confirm("charge", "Charge the card?"));
            let notify = q.ask(Ask::confirm("notify", "Email the customer?"));
            let (charge, notify) = q.ready((charge, notify))?;
            let before = q.answer(Ask::roots("before"))?;
            let after = q.answer(Ask::roots("after"))?;
            let uris = |roots: Vec<Root>| roots.into_iter().map(|r| r.uri).collect::<Vec<_>>();
            Ok::<_, Interrupt>(format!(
                "{charge} {notify} {:?} {:?}",
                uris(before),
                uris(after)
            ))
        })
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let caps = json!({"elicitation": {}, "roots": {}});
    let (_, r) = d.call("ship", json!({}), caps.clone(), json!({})).await;
    let asked = &r["result"]["inputRequests"];
    assert_eq!(
        asked["charge"]["params"]["requestedSchema"]["properties"]["charge"]["type"],
        "boolean"
    );
    assert_eq!(asked.as_object().unwrap().len(), 2);
    let (_, r) = d
        .call(
            "ship",
            json!({}),
            caps.clone(),
            json!({"inputResponses": {
                "charge": accept(json!({"charge": true})),
                "notify": accept(json!({"notify": false}))
            }, "requestState": state_of(&r)}),
        )
        .await;
    assert_eq!(
        r["result"]["inputRequests"]["before"]["method"],
        "roots/list"
    );
    let (_, r) = d
        .call(
            "ship",
            json!({}),
            caps.clone(),
            json!({"inputResponses": {"before": {"roots": [{"uri": "file:///a"}]}}, "requestState": state_of(&r)}),
        )
        .await;
    assert_eq!(
        r["result"]["inputRequests"]["after"]["method"],
        "roots/list"
    );
    let (_, r) = d
        .call(
            "ship",
            json!({}),
            caps,
            json!({"inputResponses": {"after": {"roots": [{"uri": "file:///b"}]}}, "requestState": state_of(&r)}),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        r#"true false ["file:///a"] ["file:///b"]"#
    );
}

#[tokio::test]
async fn question_arguments_are_decoded_and_errors_reported() {
    let server = McpServer::new("s")
        .tool("hotel", "", |Answer(h): Answer<Hotel>| async move { h })
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let (_, r) = d
        .call("hotel", json!({"city": 7}), elicit_caps(), json!({}))
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Invalid arguments for hotel:"), "{text}");
}

#[tokio::test]
async fn questions_that_cannot_be_asked_fail_the_call() {
    let server = McpServer::new("s")
        .tool("clash", "", |q: Questions| async move {
            let a = q.ask(Ask::confirm("k", "One?"));
            let b = q.ask(Ask::text("k", "Two?"));
            let (a, b) = q.ready((a, b))?;
            Ok::<_, Interrupt>(format!("{a} {b}"))
        })
        .tool("empty", "", |q: Questions| async move {
            let none: [&str; 0] = [];
            let pick = q.answer(Ask::choice("pick", "Pick one", none))?;
            Ok::<_, Interrupt>(pick)
        })
        .build()
        .unwrap();
    let mut d = Driver::new(server);
    let (_, r) = d.call("clash", json!({}), elicit_caps(), json!({})).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["message"],
        "Two different questions use the key \"k\""
    );
    let (_, r) = d.call("empty", json!({}), elicit_caps(), json!({})).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["message"],
        "The question \"pick\" cannot be asked"
    );
}

mod flows {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use arctern::server::RequestContext;
    use arctern::server::mrtr::{FlowId, MemoryOneTimeStore};

    use super::*;

    /// A two-round flow whose completion is counted and whose flow ids are recorded.
    fn transfer_server(
        store: bool,
        completions: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<(u32, FlowId)>>>,
    ) -> Server<McpHandler> {
        let server = McpServer::new("bank").tool(
            "transfer",
            "",
            move |ctx: RequestContext, q: Questions| {
                let completions = completions.clone();
                let seen = seen.clone();
                async move {
                    let flow = ctx.flow_id().expect("a flow id on a sealed round");
                    seen.lock().unwrap().push((ctx.round().number(), flow));
                    let go = q.answer(Ask::confirm("go", "Transfer 10 EUR?"))?;
                    let sure = q.answer(Ask::confirm("sure", "Really?"))?;
                    completions.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Interrupt>(format!("{go} {sure} {flow}"))
                }
            },
        );
        let server = if store {
            server.one_time_store(MemoryOneTimeStore::new())
        } else {
            server
        };
        server.build().unwrap()
    }

    fn answers(key: &str, state: &str) -> Value {
        json!({"inputResponses": {key: accept(json!({key: true}))}, "requestState": state})
    }

    #[tokio::test]
    async fn every_round_of_a_flow_shares_one_flow_id() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut d = Driver::new(transfer_server(false, Default::default(), seen.clone()));
        for _ in 0..2 {
            let (_, r0) = d
                .call("transfer", json!({}), elicit_caps(), json!({}))
                .await;
            let (_, r1) = d
                .call(
                    "transfer",
                    json!({}),
                    elicit_caps(),
                    answers("go", &state_of(&r0)),
                )
                .await;
            let (_, r2) = d
                .call(
                    "transfer",
                    json!({}),
                    elicit_caps(),
                    answers("sure", &state_of(&r1)),
                )
                .await;
            assert_eq!(r2["result"]["resultType"], "complete", "{r2}");
        }
        let seen = seen.lock().unwrap();
        let rounds: Vec<u32> = seen.iter().map(|(n, _)| *n).collect();
        assert_eq!(rounds, [0, 1, 2, 0, 1, 2]);
        assert!(seen[..3].iter().all(|(_, id)| *id == seen[0].1));
        assert!(seen[3..].iter().all(|(_, id)| *id == seen[3].1));
        assert_ne!(seen[0].1, seen[3].1, "each flow has its own id");
    }

    #[tokio::test]
    async fn replaying_the_final_round_reruns_the_body_unless_a_one_time_store_is_on() {
        for store in [false, true] {
            let completions = Arc::new(AtomicUsize::new(0));
            let mut d = Driver::new(transfer_server(
                store,
                completions.clone(),
                Default::default(),
            ));
            let (_, r0) = d
                .call("transfer", json!({}), elicit_caps(), json!({}))
                .await;
            let round1 = answers("go", &state_of(&r0));
            let (_, r1) = d
                .call("transfer", json!({}), elicit_caps(), round1.clone())
                .await;
            // A round that asks more may be presented again: it asks again.
            let (_, again) = d
                .call("transfer", json!({}), elicit_caps(), round1.clone())
                .await;
            assert_eq!(again["result"]["resultType"], "input_required", "{again}");

            let last = answers("sure", &state_of(&r1));
            let (_, done) = d
                .call("transfer", json!({}), elicit_caps(), last.clone())
                .await;
            assert_eq!(done["result"]["resultType"], "complete", "{done}");
            assert_eq!(completions.load(Ordering::SeqCst), 1);

            let (status, replay) = d.call("transfer", json!({}), elicit_caps(), last).await;
            let (_, earlier) = d.call("transfer", json!({}), elicit_caps(), round1).await;
            if store {
                for refused in [&replay, &earlier] {
                    assert_eq!(
                        refused["error"],
                        json!({"code": -32602, "message": "Invalid or expired requestState"})
                    );
                }
                assert_eq!(status, 400);
                assert_eq!(completions.load(Ordering::SeqCst), 1, "the body ran once");
            } else {
                assert_eq!(replay["result"]["resultType"], "complete", "{replay}");
                assert_eq!(
                    replay["result"]["content"], done["result"]["content"],
                    "the same flow, the same answers"
                );
                assert_eq!(earlier["result"]["resultType"], "input_required");
                assert_eq!(
                    completions.load(Ordering::SeqCst),
                    2,
                    "without a store, it ran again"
                );
            }
        }
    }
}
