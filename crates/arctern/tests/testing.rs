//! The test kit (`arctern::testing`): scripted answers, recorded rounds, both eras, and the
//! request-state helpers, against `McpServer` and low-level servers.

#![cfg(feature = "testing")]

use std::time::Duration;

use arctern::Era;
use arctern::client::HandlerCapabilities;
use arctern::server::extract::Args;
use arctern::server::mrtr::{
    Answer, AnswerOutcome, Ask, AskContext, Decision, NoArgs, NotYet, Question, Roots,
};
use arctern::server::{
    Handler, HandlerResult, Listed, McpServer, Outcome, RequestContext, Server, ServerConfig,
};
use arctern::state::{ManualClock, StateSealer};
use arctern::testing::{
    self, TestClient, UnscriptedQuestion, assert_invalid_state, is_invalid_state,
};
use arctern::types::ErrorCode;
use arctern::types::capabilities::ToolsCapability;
use arctern::types::elicitation::{ElicitResult, PrimitiveSchemaDefinition, RequestedSchema};
use arctern::types::mrtr::{InputRequest, InputRequiredResult, InputResponse};
use arctern::types::roots::Root;
use arctern::types::sampling::CreateMessageResult;
use arctern::types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Long enough for anything in process; a hang fails instead of blocking the suite.
const PATIENCE: Duration = Duration::from_secs(10);

async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut)
        .await
        .expect("the call hung")
}

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    amount: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

impl Question for Confirm {
    type Args = Transfer;
    type Answer = Confirm;
    fn ask(cx: &AskContext<'_, Transfer>) -> Result<Ask<Confirm>, NotYet> {
        let amount = cx.args().amount;
        Ok(Ask::form("confirm", format!("Transfer {amount} EUR?")))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Region {
    region: String,
}

impl Question for Region {
    type Args = NoArgs;
    type Answer = Region;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<Region>, NotYet> {
        Ok(Ask::form("region", "Which region?"))
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

/// Asked once the region is known.
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

struct Summary;

impl Question for Summary {
    type Args = NoArgs;
    type Answer = CreateMessageResult;
    fn ask(_: &AskContext<'_, NoArgs>) -> Result<Ask<CreateMessageResult>, NotYet> {
        Ok(Ask::sample("summary", "Summarize the report.").max_tokens(100))
    }
}

async fn transfer(Args(t): Args<Transfer>, Answer(c): Answer<Confirm>) -> String {
    format!("transferred {} EUR (confirmed: {})", t.amount, c.ok)
}

async fn transfer_outcome(
    Args(t): Args<Transfer>,
    AnswerOutcome(decision): AnswerOutcome<Confirm>,
) -> String {
    match decision {
        Decision::Accepted(c) => format!("transferred {} EUR (confirmed: {})", t.amount, c.ok),
        Decision::Declined => "the user declined".to_owned(),
        Decision::Cancelled => "the user cancelled".to_owned(),
    }
}

async fn provision(
    Answer(r): Answer<Region>,
    Answer(t): Answer<Tier>,
    Answer(s): Answer<Size>,
) -> String {
    format!("{} / {} / {} GB", r.region, t.tier, s.gigabytes)
}

async fn report(Answer(s): Answer<Summary>, Answer(roots): Answer<Roots>) -> String {
    format!("{} root(s), summary by {}", roots.len(), s.model)
}

/// A bank with a shared clock in its state sealer.
fn bank(clock: &ManualClock) -> McpServer {
    let sealer = StateSealer::builder("bank")
        .clock(clock.clone())
        .build()
        .unwrap();
    McpServer::new("bank")
        .state_sealer(sealer)
        .tool("transfer", "Transfers money.", transfer)
        .tool("transfer_outcome", "Transfers money.", transfer_outcome)
        .tool("refund", "Refunds money.", transfer)
}

fn yes() -> Value {
    json!({"ok": true})
}

// ------------------------------------------------------------------ flows

#[tokio::test]
async fn a_two_round_confirm_flow_completes_with_the_scripted_answer() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    assert_eq!(t.era(), Era::Modern);

    let result = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    assert!(!result.is_tool_error());
    assert_eq!(
        testing::text(&result),
        "transferred 5 EUR (confirmed: true)"
    );

    // Exactly what went over the wire.
    let rounds = t.assert_rounds(2);
    let (first, second) = (&rounds[0], &rounds[1]);
    assert_eq!(first.method(), "tools/call");
    assert_eq!(first.target(), "transfer");
    assert_eq!(first.arguments(), Some(&json!({"amount": 5})));
    assert!(first.answers().is_empty());
    assert!(!first.carried_state());
    assert!(first.is_input_required());
    assert_eq!(first.keys(), ["confirm"]);
    match &first.questions()["confirm"] {
        InputRequest::Elicit(e) => assert_eq!(
            serde_json::to_value(&e.params).unwrap()["message"],
            "Transfer 5 EUR?"
        ),
        other => panic!("not an elicitation: {other:?}"),
    }
    let state = first.request_state().expect("the server sealed state");

    assert_eq!(second.arguments(), Some(&json!({"amount": 5})));
    assert_eq!(second.sent_state(), Some(state), "echoed byte for byte");
    assert_eq!(
        second.answers().keys().collect::<Vec<_>>(),
        ["confirm"],
        "answers only the previous round's questions"
    );
    assert_eq!(
        second.answers()["confirm"],
        InputResponse::Elicit(ElicitResult::accept([("ok", true)]))
    );
    assert!(second.is_complete());
    assert!(second.questions().is_empty());
    assert_eq!(second.request_state(), None);
    assert_eq!(
        second.result().unwrap()["content"][0]["text"],
        "transferred 5 EUR (confirmed: true)"
    );

    // One round only, for single-round assertions.
    let first = within(t.call_tool_once("transfer", json!({"amount": 9})))
        .await
        .unwrap();
    let asked = first.into_result().expect_err("input required");
    assert_eq!(
        asked.input_requests.unwrap().keys().collect::<Vec<_>>(),
        ["confirm"]
    );
    assert_eq!(
        t.assert_rounds(1)[0].arguments(),
        Some(&json!({"amount": 9}))
    );

    // A second call starts a fresh record.
    within(t.call_tool("transfer", json!({"amount": 7})))
        .await
        .unwrap();
    assert_eq!(
        t.assert_rounds(2)[0].arguments(),
        Some(&json!({"amount": 7}))
    );
}

#[tokio::test]
async fn batched_and_dependent_questions_are_recorded_round_by_round() {
    let server = McpServer::new("provisioner").tool("provision", "Provision.", provision);
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("region", json!({"region": "eu-west-1"}))
        .answer("tier", json!({"tier": "gold"}))
        .answer("size", json!({"gigabytes": 20}));
    let result = within(t.call_tool("provision", Value::Null)).await.unwrap();
    assert_eq!(testing::text(&result), "eu-west-1 / gold / 20 GB");

    let rounds = t.assert_rounds(3);
    let keys: Vec<Vec<&str>> = rounds.iter().map(|r| r.keys()).collect();
    assert_eq!(keys, [vec!["region", "tier"], vec!["size"], vec![]]);
    let answered: Vec<Vec<&String>> = rounds
        .iter()
        .map(|r| r.answers().keys().collect())
        .collect();
    assert_eq!(
        answered,
        [vec![], vec!["region", "tier"], vec!["size"]],
        "earlier answers travel in the sealed state, not again on the wire"
    );
    let carried: Vec<bool> = rounds.iter().map(|r| r.carried_state()).collect();
    assert_eq!(carried, [false, true, true]);
    assert_eq!(rounds[1].sent_state(), rounds[0].request_state());
    assert_eq!(rounds[2].sent_state(), rounds[1].request_state());
    match &rounds[1].questions()["size"] {
        InputRequest::Elicit(e) => assert_eq!(
            serde_json::to_value(&e.params).unwrap()["message"],
            "How large, in eu-west-1?"
        ),
        other => panic!("not an elicitation: {other:?}"),
    }
}

#[tokio::test]
async fn a_declined_question_reaches_the_handler_as_a_decline() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock))
        .await
        .unwrap()
        .decline("confirm");
    let result = within(t.call_tool("transfer_outcome", json!({"amount": 5})))
        .await
        .unwrap();
    assert_eq!(testing::text(&result), "the user declined");
    let rounds = t.assert_rounds(2);
    assert_eq!(
        rounds[1].answers()["confirm"],
        InputResponse::Elicit(ElicitResult::decline())
    );

    // Cancelled, likewise.
    let t = t.cancel("confirm");
    let result = within(t.call_tool("transfer_outcome", json!({"amount": 5})))
        .await
        .unwrap();
    assert_eq!(testing::text(&result), "the user cancelled");

    // `Answer<T>` (not the outcome) turns a decline into a tool error.
    let t = t.decline("confirm");
    let result = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    assert!(result.is_tool_error(), "{result:?}");
    t.assert_rounds(2);
}

#[tokio::test]
async fn a_question_without_a_scripted_answer_fails_the_call_naming_its_key() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock)).await.unwrap();
    let err = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap_err();
    let missing = UnscriptedQuestion::of(&err).expect("the kit's error");
    assert_eq!(missing.key(), "confirm");
    assert!(matches!(missing.question(), InputRequest::Elicit(_)));
    let message = err.to_string();
    assert!(message.contains("\"confirm\""), "{message}");
    assert!(message.contains("Transfer 5 EUR?"), "{message}");
    assert!(message.contains(".answer(\"confirm\""), "{message}");
    // The round that asked was recorded; nothing was answered or retried.
    let rounds = t.assert_rounds(1);
    assert_eq!(rounds[0].keys(), ["confirm"]);

    // Scripting it (later) makes the same call pass; forgetting it fails it again.
    let t = t.answer("confirm", yes());
    within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    let t = t.forget("confirm");
    let err = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap_err();
    assert_eq!(UnscriptedQuestion::of(&err).unwrap().key(), "confirm");
}

#[tokio::test]
async fn sampling_and_roots_are_scripted_by_kind_or_by_key() {
    let server = McpServer::new("reports").tool("report", "Reports.", report);
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .on_sample(|q| {
            assert_eq!(q.key(), "summary");
            assert_eq!(q.max_tokens, 100);
            CreateMessageResult::text("model-a", "A summary.")
        })
        .roots(vec![Root::new("file:///a"), Root::new("file:///b")]);
    let result = within(t.call_tool("report", Value::Null)).await.unwrap();
    assert_eq!(testing::text(&result), "2 root(s), summary by model-a");
    let rounds = t.assert_rounds(2);
    assert_eq!(rounds[0].keys(), ["roots", "summary"]);

    // An answer by key wins over the kind-wide one.
    let t = t.respond("summary", CreateMessageResult::text("model-b", "Another."));
    let result = within(t.call_tool("report", Value::Null)).await.unwrap();
    assert_eq!(testing::text(&result), "2 root(s), summary by model-b");

    // An answer of the wrong kind fails the call and says why.
    let t = t.respond("summary", ElicitResult::decline());
    let err = within(t.call_tool("report", Value::Null))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("\"summary\"") && message.contains("sampling/createMessage"),
        "{message}"
    );

    // A fixed result for every sampling request.
    let t = t
        .forget("summary")
        .sample(CreateMessageResult::text("model-c", "Fixed."));
    let result = within(t.call_tool("report", Value::Null)).await.unwrap();
    assert_eq!(testing::text(&result), "2 root(s), summary by model-c");

    // No sampler at all: the unscripted sampling request is named.
    let bare = TestClient::connect(McpServer::new("reports").tool("report", "Reports.", report))
        .await
        .unwrap()
        .roots(vec![]);
    let err = within(bare.call_tool("report", Value::Null))
        .await
        .unwrap_err();
    assert_eq!(UnscriptedQuestion::of(&err).unwrap().key(), "summary");
    assert!(err.to_string().contains("sampling/createMessage"), "{err}");
}

#[tokio::test]
async fn prompts_and_resources_go_through_the_same_script() {
    let server = McpServer::new("docs")
        .prompt("greet", "Greets.", |Answer(r): Answer<Region>| async move {
            format!("Hello from {}!", r.region)
        })
        .resource(
            arctern::server::ResourceSpec::new("memo://today", "today"),
            |Answer(r): Answer<Region>| async move { format!("Today in {}.", r.region) },
        );
    let t = TestClient::connect(server)
        .await
        .unwrap()
        .answer("region", json!({"region": "eu"}));

    let prompt = within(t.get_prompt("greet", json!({}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&prompt).unwrap()["messages"][0]["content"]["text"],
        "Hello from eu!"
    );
    let rounds = t.assert_rounds(2);
    assert_eq!(rounds[0].method(), "prompts/get");
    assert_eq!(rounds[0].target(), "greet");

    let read = within(t.read_resource("memo://today")).await.unwrap();
    assert_eq!(read.contents[0].as_text(), Some("Today in eu."));
    let rounds = t.assert_rounds(2);
    assert_eq!(rounds[1].method(), "resources/read");
    assert_eq!(rounds[1].target(), "memo://today");
    assert_eq!(rounds[1].arguments(), None);
}

#[tokio::test]
async fn a_client_without_the_capability_gets_the_servers_refusal() {
    let clock = ManualClock::starting_now();
    let t = TestClient::builder()
        .capabilities(HandlerCapabilities::none())
        .connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    let err = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap_err();
    assert_eq!(
        err.protocol_error().map(|e| e.code),
        Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY),
        "{err}"
    );
}

#[tokio::test]
async fn the_underlying_client_builder_can_be_adjusted() {
    let clock = ManualClock::starting_now();
    let t = TestClient::builder()
        .configure(|c| c.max_rounds(0))
        .connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    let err = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap_err();
    let details = arctern::client::InputRequiredError::of(&err).expect("round cap");
    assert!(matches!(
        details.reason(),
        arctern::client::InputRequiredReason::RoundsExceeded { max_rounds: 0 }
    ));
    t.assert_rounds(1);
}

#[tokio::test]
async fn mirrored_http_headers_are_validated_in_process() {
    let clock = ManualClock::starting_now();
    let t = TestClient::builder()
        .http_headers(true)
        .connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    let result = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    assert_eq!(
        testing::text(&result),
        "transferred 5 EUR (confirmed: true)"
    );
    t.assert_rounds(2);
}

#[tokio::test]
#[should_panic(
    expected = "expected 3 round(s), the last call took 2:\n  round 1: tools/call transfer"
)]
async fn assert_rounds_lists_what_happened() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    t.assert_rounds(3);
}

#[test]
#[should_panic(expected = "the answer scripted for \"confirm\" is no form content")]
fn an_answer_that_is_no_form_content_is_refused_at_once() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = ManualClock::starting_now();
    let t = runtime.block_on(TestClient::connect(bank(&clock))).unwrap();
    let _ = t.answer(
        "confirm",
        json!({"nested": {"no": "forms hold no objects"}}),
    );
}

// ------------------------------------------------------------------ request state

#[tokio::test]
async fn tampered_replayed_and_expired_state_gets_the_fixed_rejection() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    let rounds = t.assert_rounds(2);
    let retry = &rounds[1];

    // Unchanged, the retry is accepted again: tokens are not single-use.
    let again = within(t.replay(retry).send()).await.unwrap();
    let again = again.complete().expect("complete");
    assert_eq!(
        again["content"][0]["text"],
        "transferred 5 EUR (confirmed: true)"
    );
    let replayed = t.assert_rounds(1);
    assert_eq!(replayed[0].sent_state(), retry.sent_state());

    // Tampered with.
    assert_invalid_state(&within(t.replay(retry).tamper_state().send()).await);
    // Replayed against other arguments, another tool, another method's target.
    assert_invalid_state(&within(t.replay(retry).arguments(json!({"amount": 500})).send()).await);
    assert_invalid_state(&within(t.replay(retry).target("refund").send()).await);
    // Any string that is no token.
    assert_invalid_state(&within(t.replay(retry).state("forged").send()).await);
    // The recorded rejection is the round's error.
    let rejected = t.assert_rounds(1);
    assert_eq!(
        rejected[0].error().map(|e| e.code),
        Some(ErrorCode::INVALID_PARAMS)
    );

    // Expired: one TTL later.
    t.expire_state(&clock);
    let err = within(t.replay(retry).send()).await.unwrap_err();
    assert!(is_invalid_state(&err), "{err}");
    assert_eq!(
        serde_json::to_value(err.protocol_error().unwrap()).unwrap(),
        json!({"code": -32602, "message": "Invalid or expired requestState"})
    );

    // Without state, the answer alone is not trusted: the question is asked again.
    let fresh = within(t.replay(retry).without_state().send())
        .await
        .unwrap();
    assert!(fresh.is_input_required(), "{fresh:?}");
}

#[tokio::test]
async fn state_minted_for_one_principal_is_rejected_for_another() {
    let clock = ManualClock::starting_now();
    let server = bank(&clock).build().unwrap();
    let alice = TestClient::builder()
        .principal("alice")
        .connect(server.clone())
        .await
        .unwrap()
        .answer("confirm", yes());
    let bob = TestClient::builder()
        .principal("bob")
        .connect(server)
        .await
        .unwrap();
    within(alice.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    let rounds = alice.assert_rounds(2);
    // Alice may replay her own retry; Bob may not.
    assert!(within(alice.replay(&rounds[1]).send()).await.is_ok());
    assert_invalid_state(&within(bob.replay(&rounds[1]).send()).await);
}

#[tokio::test]
#[should_panic(expected = "expected the fixed requestState rejection")]
async fn assert_invalid_state_says_what_came_instead() {
    let clock = ManualClock::starting_now();
    let t = TestClient::connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    let rounds = t.assert_rounds(2);
    assert_invalid_state(&within(t.replay(&rounds[1]).send()).await);
}

// ------------------------------------------------------------------ the legacy era

#[tokio::test]
async fn the_same_script_serves_the_legacy_era_through_the_shim() {
    let clock = ManualClock::starting_now();
    let t = TestClient::builder()
        .legacy()
        .connect(bank(&clock))
        .await
        .unwrap()
        .answer("confirm", yes());
    assert_eq!(t.era(), Era::Legacy);
    assert_eq!(t.client().protocol_version(), "2025-11-25");

    let result = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap();
    assert_eq!(
        testing::text(&result),
        "transferred 5 EUR (confirmed: true)"
    );

    // One request on the wire; the shim asked the question on its stream.
    let rounds = t.assert_rounds(1);
    let round = &rounds[0];
    assert!(round.is_legacy());
    assert!(round.is_complete());
    assert!(!round.carried_state());
    assert_eq!(round.keys(), ["confirm"]);
    assert_eq!(
        round.answers()["confirm"],
        InputResponse::Elicit(ElicitResult::accept([("ok", true)]))
    );

    // Declines reach the handler.
    let t = t.decline("confirm");
    let result = within(t.call_tool("transfer_outcome", json!({"amount": 5})))
        .await
        .unwrap();
    assert_eq!(testing::text(&result), "the user declined");

    // Dependent questions: the shim runs the handler again for each round.
    let server = McpServer::new("provisioner").tool("provision", "Provision.", provision);
    let t = TestClient::builder()
        .era(Era::Legacy)
        .connect(server)
        .await
        .unwrap()
        .answer("region", json!({"region": "eu-west-1"}))
        .answer("tier", json!({"tier": "gold"}))
        .answer("size", json!({"gigabytes": 20}));
    let result = within(t.call_tool("provision", Value::Null)).await.unwrap();
    assert_eq!(testing::text(&result), "eu-west-1 / gold / 20 GB");
    assert_eq!(t.assert_rounds(1)[0].keys(), ["region", "size", "tier"]);
}

#[tokio::test]
async fn an_unscripted_question_fails_a_legacy_call_too() {
    let clock = ManualClock::starting_now();
    let t = TestClient::builder()
        .legacy()
        .connect(bank(&clock))
        .await
        .unwrap();
    let err = within(t.call_tool("transfer", json!({"amount": 5})))
        .await
        .unwrap_err();
    let missing = UnscriptedQuestion::of(&err).expect("the kit's error");
    assert_eq!(missing.key(), "confirm");
    assert!(err.to_string().contains("Transfer 5 EUR?"), "{err}");
}

// ------------------------------------------------------------------ a low-level server

/// The manual form on the low-level `Handler` trait: asks once, with plain-text state.
struct Manual;

impl Handler for Manual {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        Ok(ListToolsResult::default().into())
    }

    async fn call_tool(
        &self,
        _ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        let answer = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get("name"))
            .and_then(InputResponse::as_elicit)
            .and_then(|e| e.content_as::<Value>())
            .and_then(Result::ok);
        match (answer, params.request_state.as_deref()) {
            (Some(name), Some("asked")) => Ok(Outcome::Complete(CallToolResult::text(format!(
                "hello {}",
                name["name"].as_str().unwrap_or("?")
            )))),
            _ => Ok(InputRequiredResult::new()
                .with_input_request(
                    "name",
                    InputRequest::elicit_form(
                        "Your name?",
                        RequestedSchema::new()
                            .required("name", PrimitiveSchemaDefinition::string()),
                    ),
                )
                .with_request_state("asked")
                .into()),
        }
    }
}

fn manual_server(sealed: bool) -> Server<Manual> {
    let mut config = ServerConfig::new("manual", "1.0.0");
    config.capabilities.tools = Some(ToolsCapability::default());
    if !sealed {
        config = config.without_state_sealing();
    }
    Server::new(Manual, config)
}

#[tokio::test]
async fn a_low_level_server_in_both_eras() {
    for (era, sealed) in [
        (Era::Modern, true),
        (Era::Modern, false),
        (Era::Legacy, true),
    ] {
        let t = TestClient::builder()
            .era(era)
            .connect(manual_server(sealed))
            .await
            .unwrap()
            .answer("name", json!({"name": "Ada"}));
        let result = within(t.call_tool("greet", Value::Null)).await.unwrap();
        assert_eq!(testing::text(&result), "hello Ada", "{era:?}");
        let rounds = t.rounds();
        match era {
            Era::Modern => {
                assert_eq!(rounds.len(), 2);
                let state = rounds[0].request_state().unwrap();
                assert_eq!(rounds[1].sent_state(), Some(state));
                if sealed {
                    // A low-level server seals by default: the handler's "asked" never
                    // reaches the wire.
                    assert!(!state.contains("asked") && state.len() > 100, "{state}");
                    assert_invalid_state(&t.replay(&rounds[1]).tamper_state().send().await);
                } else {
                    assert_eq!(state, "asked");
                }
            }
            _ => {
                assert_eq!(rounds.len(), 1);
                assert_eq!(rounds[0].keys(), ["name"]);
            }
        }
    }
    // Nothing to expire on a server that does not seal.
    let t = TestClient::connect(manual_server(false)).await.unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        t.expire_state(&ManualClock::new(0));
    }));
    assert!(caught.is_err());
}
