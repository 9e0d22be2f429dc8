//! The command without a terminal, as scripts and CI use it: against `arctern serve` (a
//! child process on a free port), against the demo over stdio, and against the
//! conformance fixture server (served from this process). Pre-answers, declines,
//! `--output json`, exit codes, typed arguments, saved media, sampling and roots.

mod common;

use std::sync::OnceLock;

use common::{Demo, run, run_in, scratch};
use serde_json::json;

/// The conformance fixture server, served from this process.
fn fixture() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| common::serve(arctern_conformance::fixture::server().expect("fixture")))
}

#[test]
fn provision_answered_with_the_shorthand() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--answer",
        "region=eu-west-1",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Provisioned database \"orders\" in eu-west-1.\n");
}

#[test]
fn a_task_s_mid_task_question_answered_with_answer() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "deploy",
        "--arg",
        "service=billing",
        "--arg",
        "steps=2",
        "--answer",
        "ship=false",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Built billing; kept it out of production.\n");
    assert!(r.stderr.contains("the call runs as task"), "{r:?}");
    assert!(r.stderr.contains("arctern: task working"), "{r:?}");
}

#[test]
fn provision_answered_with_json_and_json_output() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--answer",
        r#"region={"region":"us-east-2"}"#,
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(
        v["result"]["content"][0]["text"],
        "Provisioned database \"orders\" in us-east-2."
    );
    assert_eq!(v["savedFiles"], json!([]));
}

#[test]
fn an_unanswered_question_fails_at_once_naming_its_key_and_schema() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "provision", "--arg", "name=orders"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    for needle in [
        "question \"region\"",
        "Which region should the database live in?",
        "\"required\":[\"region\"]",
        "--answer region=",
        "--decline region",
    ] {
        assert!(r.stderr.contains(needle), "{needle:?} missing: {r:?}");
    }
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 4, "{r:?}");
    let e = &r.json()["error"];
    assert_eq!(e["exitCode"], 4);
    assert_eq!(e["kind"], "input-required");
    assert_eq!(e["key"], "region");
    assert_eq!(
        e["requestedSchema"]["properties"]["region"]["type"],
        "string"
    );
}

#[test]
fn a_declined_question_ends_with_exit_4() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--decline",
        "region",
    ]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("declined"), "{r:?}");
}

#[test]
fn a_pre_answer_that_does_not_fit_is_a_usage_error() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "invite",
        "--arg",
        "workspace=acme",
        "--answer",
        r#"invitation={"email":"not-an-address","role":"editor","teams":["data"]}"#,
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("field email"), "{r:?}");
    // The shorthand needs a one-field form.
    let r = run(&[
        "call",
        demo.url(),
        "invite",
        "--arg",
        "workspace=acme",
        "--answer",
        "invitation=ada@example.com",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("exactly one field"), "{r:?}");
}

#[test]
fn a_form_answer_takes_defaults_for_fields_left_out() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "invite",
        "--arg",
        "workspace=acme",
        "--answer",
        r#"invitation={"email":"ada@example.com","role":"Admin (can also manage people)","teams":["ops","data"]}"#,
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "Invited ada@example.com to acme as admin (ops, data); the invitation lasts 7 days and \
         was emailed.\n"
    );
}

/// `slow_count` says "(1 to 100)", and its schema says so too: 500 steps is refused, naming
/// `steps`, instead of counting to 100 (issue 28). Typed with `--arg`, the command refuses
/// it before sending, from the same schema; sent as `--json`, the server refuses it before
/// the tool runs, as a tool error (exit 1) whose message names the argument, as the
/// specification asks of input validation errors.
#[test]
fn an_out_of_range_argument_is_refused_naming_it() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "slow_count", "--arg", "steps=500"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("--arg steps: 500 is above the maximum 100"),
        "{r:?}"
    );
    let r = run(&[
        "call",
        demo.url(),
        "slow_count",
        "--json",
        r#"{"steps":500}"#,
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("Invalid arguments for slow_count: steps: must be at most 100"),
        "{r:?}"
    );
    assert!(!r.stdout.contains("Counted"), "{r:?}");
    // The same refusal as data, for scripts.
    let r = run(&[
        "call",
        demo.url(),
        "slow_count",
        "--json",
        r#"{"steps":0}"#,
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true, "{r:?}");
    assert_eq!(
        result["content"][0]["text"],
        "Invalid arguments for slow_count: steps: must be at least 1"
    );
}

#[test]
fn arguments_are_typed_from_the_schema() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "slow_count", "--arg", "steps=2"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Counted to 2.\n");
    let r = run(&["call", demo.url(), "slow_count", "--arg", "steps=two"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("--arg steps: \"two\" is not an integer"),
        "{r:?}"
    );
    let r = run(&["call", demo.url(), "slow_count"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("missing required argument: steps"),
        "{r:?}"
    );
    let r = run(&[
        "call",
        demo.url(),
        "echo",
        "--json",
        r#"{"text":"from json"}"#,
    ]);
    assert_eq!(r.stdout, "from json\n", "{r:?}");
}

#[test]
fn usage_and_connection_failures_have_their_codes() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "no_such_tool"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("has no tool \"no_such_tool\""), "{r:?}");
    let r = run(&["call", demo.url()]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = run(&["call", "--bogus-flag", demo.url(), "echo"]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = run(&[
        "call",
        "--bogus-flag",
        demo.url(),
        "echo",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.json()["error"]["kind"], "usage");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--bogus-flag"),
        "{r:?}"
    );
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("http://127.0.0.1:{port}/mcp");
    let r = run(&["tools", &closed, "--output", "json"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert_eq!(r.json()["error"]["kind"], "connection");
}

#[test]
fn sampling_is_refused_without_a_command() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "haiku", "--arg", "topic=rust"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("--sampling-command"), "{r:?}");
}

#[cfg(unix)]
#[test]
fn a_sampling_command_answers_the_llm_question() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "haiku",
        "--arg",
        "topic=rust",
        "--sampling-command",
        "sh -c 'grep -q \"Write a haiku about rust\" && echo \"Borrowed, never lost\"'",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Borrowed, never lost\n");
    let r = run(&[
        "call",
        demo.url(),
        "haiku",
        "--arg",
        "topic=rust",
        "--sampling-command",
        "sh -c 'exit 7'",
    ]);
    assert_eq!(r.code, 5, "{r:?}");
}

#[test]
fn roots_come_from_root_flags() {
    let demo = Demo::start();
    let dir = scratch("roots");
    let r = run(&["call", demo.url(), "list_roots"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("--root"), "{r:?}");
    let r = run(&[
        "call",
        demo.url(),
        "list_roots",
        "--root",
        dir.to_str().unwrap(),
        "--root",
        "file:///srv/shared",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(r.stdout.contains(&format!("{name}: file:///")), "{r:?}");
    assert!(r.stdout.contains("file:///srv/shared"), "{r:?}");
}

#[test]
fn prompts_and_resources_ask_too() {
    let demo = Demo::start();
    let r = run(&[
        "prompt",
        demo.url(),
        "briefing",
        "--arg",
        "topic=MRTR",
        "--answer",
        "audience=engineers",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .starts_with("[user]\nWrite a one-page briefing on MRTR for engineers.")
    );
    let r = run(&[
        "read",
        demo.url(),
        "config://prod",
        "--answer",
        "reveal=true",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let text = r.json()["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["env"],
        "prod"
    );
    let r = run(&["read", demo.url(), "config://prod"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("question \"reveal\""), "{r:?}");
}

#[test]
fn inspecting_the_demo() {
    let demo = Demo::start();
    let r = run(&["tools", demo.url()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("provision"), "{r:?}");
    assert!(r.stdout.contains("--arg name* (string)"), "{r:?}");
    let r = run(&["tools", demo.url(), "--output", "json"]);
    let names: Vec<String> = r.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"invite".to_owned()), "{names:?}");
    let r = run(&["discover", demo.url(), "--output", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["serverInfo"]["name"], "arctern-demo");
    let r = run(&["discover", demo.url()]);
    assert!(r.stdout.contains("arctern-demo"), "{r:?}");
    let r = run(&["prompts", demo.url()]);
    assert!(r.stdout.contains("briefing"), "{r:?}");
    let r = run(&["resources", demo.url(), "--output", "json"]);
    assert_eq!(
        r.json()["resourceTemplates"][0]["uriTemplate"],
        "config://{env}"
    );
}

#[test]
fn serve_tells_scripts_its_url() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(common::ARCTERN)
        .args(["serve", "--port", "0", "--output", "json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let read = std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first);
    let url = read
        .ok()
        .and_then(|_| serde_json::from_str::<serde_json::Value>(&first).ok())
        .and_then(|v| v["url"].as_str().map(str::to_owned));
    let r = url
        .as_deref()
        .map(|url| run(&["call", url, "echo", "--arg", "text=hi"]));
    let _ = child.kill();
    let _ = child.wait();
    let r = r.unwrap_or_else(|| panic!("no URL in the first line: {first:?}"));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "hi\n");
}

#[test]
fn the_demo_over_stdio() {
    let command = format!("'{}' serve --stdio", common::ARCTERN);
    let r = run(&[
        "call",
        "--stdio",
        &command,
        "provision",
        "--arg",
        "name=orders",
        "--answer",
        "region=ap-south-1",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Provisioned database \"orders\" in ap-south-1.\n");
    let r = run(&["tools", "--stdio", &command]);
    assert!(r.stdout.contains("slow_count"), "{r:?}");
}

/// The benchmark's contract, on the wire, through the project's client one round at a time:
/// `echo` answers at once; `confirm` first returns `input_required` with exactly one form
/// question, key `confirm`, schema `{ok: boolean}`, and a sealed `requestState`; the retry
/// with `ok: true` returns one text block equal to the text.
#[test]
fn the_benchmark_contract_of_echo_and_confirm() {
    use arctern::client::{Client, Continuation, Outcome};
    use arctern::types::content::ContentBlock;
    use arctern::types::elicitation::ElicitResult;

    let demo = Demo::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // The elicitation capability is declared; the manual rounds below answer by hand.
        let client = Client::builder()
            .on_elicit(|_| async { Ok(ElicitResult::decline()) })
            .connect(demo.url())
            .await
            .unwrap();
        let text = "contract text 42";

        let echo = client
            .call_tool_once("echo", json!({"text": text}), Continuation::new())
            .await
            .unwrap();
        let Outcome::Complete(echo) = echo else {
            panic!("echo asked for input: {echo:?}")
        };
        assert_eq!(echo.content, vec![ContentBlock::text(text)]);

        let round = client
            .call_tool_once("confirm", json!({"text": text}), Continuation::new())
            .await
            .unwrap();
        let Outcome::InputRequired(round) = round else {
            panic!("confirm did not ask: {round:?}")
        };
        let wire = serde_json::to_value(&round).unwrap();
        assert_eq!(wire["resultType"], "input_required", "{wire}");
        let requests = wire["inputRequests"].as_object().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["confirm"], "{wire}");
        let ask = &requests["confirm"];
        assert_eq!(ask["method"], "elicitation/create", "{wire}");
        assert_ne!(ask["params"]["mode"], "url", "{wire}");
        let schema = &ask["params"]["requestedSchema"];
        let fields = schema["properties"].as_object().unwrap();
        assert_eq!(fields.keys().collect::<Vec<_>>(), ["ok"], "{wire}");
        assert_eq!(fields["ok"]["type"], "boolean", "{wire}");
        let state = round.request_state.clone().expect("a requestState");
        assert!(!state.is_empty());
        // Sealed: neither the arguments nor the question's key can be read from it.
        assert!(
            !state.contains(text) && !state.contains("confirm"),
            "{state}"
        );

        let done = client
            .call_tool_once(
                "confirm",
                json!({"text": text}),
                Continuation::after(&round)
                    .with_response("confirm", ElicitResult::accept([("ok", true)])),
            )
            .await
            .unwrap();
        let Outcome::Complete(done) = done else {
            panic!("confirm asked again: {done:?}")
        };
        assert_eq!(done.is_error, None);
        assert_eq!(done.content, vec![ContentBlock::text(text)]);
        let _ = client.close().await;
    });
}

// ------------------------------------------------------------------ book_hotel: a run-time choice

#[test]
fn book_hotel_offers_the_hotels_of_the_city() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "book_hotel", "--arg", "city=Oslo"]);
    assert_eq!(r.code, 4, "{r:?}");
    for needle in [
        "question \"hotel\"",
        "Which hotel in Oslo?",
        "Fjord Hotel",
        "Aurora Inn",
        "Opera Lodge",
        "--answer hotel=",
    ] {
        assert!(r.stderr.contains(needle), "{needle:?} missing: {r:?}");
    }
    assert!(!r.stderr.contains("Hotel Avenida"), "{r:?}");
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=Kyoto",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 4, "{r:?}");
    let hotel = &r.json()["error"]["requestedSchema"]["properties"]["hotel"];
    assert_eq!(
        hotel["oneOf"],
        json!([
            {"const": "kyo-gion", "title": "Gion Ryokan"},
            {"const": "kyo-kamo", "title": "Kamogawa House"},
            {"const": "kyo-bamboo", "title": "Bamboo Grove Hotel"}
        ]),
        "{r:?}"
    );
}

#[test]
fn book_hotel_takes_an_offered_hotel_by_value_or_title() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=Oslo",
        "--answer",
        "hotel=osl-opera",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Booked Opera Lodge in Oslo.\n");
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=lisbon",
        "--answer",
        "hotel=casa da alfama",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Booked Casa da Alfama in Lisbon.\n");
}

#[test]
fn book_hotel_refuses_a_hotel_that_was_not_offered_before_sending_it() {
    let demo = Demo::start();
    // A Lisbon hotel for Oslo: not one of the options.
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=Oslo",
        "--answer",
        "hotel=lis-avenida",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    assert!(
        r.stderr.contains(
            "--answer hotel does not fit the question \"Which hotel in Oslo?\": field hotel: \
             \"lis-avenida\" is not offered; expected one of: osl-fjord (Fjord Hotel), \
             osl-aurora (Aurora Inn), osl-opera (Opera Lodge)."
        ),
        "{r:?}"
    );
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=Oslo",
        "--answer",
        "hotel=Ritz",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    let e = &r.json()["error"];
    assert_eq!(e["kind"], "usage", "{r:?}");
    assert_eq!(e["key"], "hotel", "{r:?}");
}

#[test]
fn book_hotel_in_another_city_is_a_tool_error_and_asks_nothing() {
    let demo = Demo::start();
    let r = run(&[
        "call",
        demo.url(),
        "book_hotel",
        "--arg",
        "city=Paris",
        "--answer",
        "hotel=osl-fjord",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(
            "No hotels in \"Paris\": this demo books hotels in Lisbon, Oslo, Kyoto only."
        ),
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("question \"hotel\" (--answer/--decline) was never asked"),
        "{r:?}"
    );
}

/// Below the command: a client sending, one round at a time, a hotel that was not offered
/// gets the question again with the reason; the same with the automatic loop on both eras.
#[test]
fn book_hotel_re_asks_with_the_reason_when_a_client_sends_a_bad_answer() {
    use arctern::Era;
    use arctern::client::{Client, Continuation, Outcome};
    use arctern::types::elicitation::{ElicitRequestParams, ElicitResult};
    use arctern::types::mrtr::InputRequest;
    use std::sync::{Arc, Mutex};

    let demo = Demo::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = Client::builder()
            .on_elicit(|_| async { Ok(ElicitResult::decline()) })
            .connect(demo.url())
            .await
            .unwrap();
        let trip = json!({"city": "Oslo"});
        let message_of = |round: &arctern::types::mrtr::InputRequiredResult| {
            let requests = round.input_requests.as_ref().unwrap();
            assert_eq!(requests.keys().collect::<Vec<_>>(), ["hotel"]);
            let InputRequest::Elicit(e) = &requests["hotel"] else {
                panic!("{round:?}")
            };
            e.params.message().to_owned()
        };
        let Outcome::InputRequired(first) = client
            .call_tool_once("book_hotel", &trip, Continuation::new())
            .await
            .unwrap()
        else {
            panic!("book_hotel did not ask")
        };
        assert_eq!(message_of(&first), "Which hotel in Oslo?");
        let Outcome::InputRequired(again) = client
            .call_tool_once(
                "book_hotel",
                &trip,
                Continuation::after(&first)
                    .with_response("hotel", ElicitResult::accept([("hotel", "lis-avenida")])),
            )
            .await
            .unwrap()
        else {
            panic!("a hotel that was not offered was accepted")
        };
        assert_eq!(
            message_of(&again),
            "Which hotel in Oslo?\n\nThe previous answer was not accepted: hotel: \
             \"lis-avenida\" is not one of the options."
        );
        let Outcome::Complete(done) = client
            .call_tool_once(
                "book_hotel",
                &trip,
                Continuation::after(&again)
                    .with_response("hotel", ElicitResult::accept([("hotel", "osl-fjord")])),
            )
            .await
            .unwrap()
        else {
            panic!("an offered hotel was not accepted")
        };
        assert_eq!(
            serde_json::to_value(&done.content).unwrap()[0]["text"],
            "Booked Fjord Hotel in Oslo."
        );
        let _ = client.close().await;

        // The automatic loop, on both eras: a bad answer, then the question again with the
        // reason, then a good one.
        for era in [Era::Modern, Era::Legacy] {
            let asked = Arc::new(Mutex::new(Vec::new()));
            let seen = asked.clone();
            let client = Client::builder()
                .era(era)
                .on_elicit(move |question| {
                    let seen = seen.clone();
                    async move {
                        let ElicitRequestParams::Form(form) = question.params() else {
                            panic!("not a form")
                        };
                        let mut seen = seen.lock().unwrap();
                        seen.push(form.message.clone());
                        let hotel = if seen.len() == 1 {
                            "Ritz"
                        } else {
                            "osl-aurora"
                        };
                        Ok(ElicitResult::accept([("hotel", hotel)]))
                    }
                })
                .connect(demo.url())
                .await
                .unwrap();
            let done = client.call_tool("book_hotel", &trip).await.unwrap();
            assert_eq!(
                serde_json::to_value(&done.content).unwrap()[0]["text"],
                "Booked Aurora Inn in Oslo.",
                "{era:?}"
            );
            assert_eq!(
                *asked.lock().unwrap(),
                [
                    "Which hotel in Oslo?".to_owned(),
                    "Which hotel in Oslo?\n\nThe previous answer was not accepted: hotel: \
                     \"Ritz\" is not one of the options."
                        .to_owned()
                ],
                "{era:?}"
            );
            let _ = client.close().await;
        }
    });
}

// ------------------------------------------------------------------ a server that refuses an answer

#[test]
fn an_answer_the_server_does_not_accept_stops_with_its_reason() {
    let r = run(&["call", common::vault(), "unlock", "--answer", "code=0000"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "the server did not accept --answer code; it asks again:\n  Enter the code.\n\n  \
             The previous answer was not accepted: code: \"0000\" is not the code."
        ),
        "{r:?}"
    );
    let r = run(&[
        "call",
        common::vault(),
        "unlock",
        "--answer",
        "code=0000",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    let e = &r.json()["error"];
    assert_eq!(e["key"], "code");
    assert!(
        e["question"]
            .as_str()
            .unwrap()
            .ends_with("\"0000\" is not the code."),
        "{r:?}"
    );
    let r = run(&["call", common::vault(), "unlock", "--answer", "code=1234"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Unlocked.\n");
}

/// A server whose tool answers with structured content (and its JSON text, as servers do).
fn weather() -> &'static str {
    use arctern::server::McpServer;
    use arctern::types::tools::CallToolResult;
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let server = McpServer::new("weather")
            .tool("forecast", "Tomorrow's forecast.", || async {
                CallToolResult::structured(json!({"city": "Oslo", "high": 21, "rain": false}))
            })
            .build()
            .expect("a valid server");
        common::serve(server)
    })
}

#[test]
fn structured_content_prints_once_as_pretty_json() {
    let r = run(&["call", weather(), "forecast"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "{\n  \"city\": \"Oslo\",\n  \"high\": 21,\n  \"rain\": false\n}\n"
    );
    let r = run(&["call", weather(), "forecast", "--output", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["result"]["structuredContent"],
        json!({"city": "Oslo", "high": 21, "rain": false})
    );
}

// ------------------------------------------------------------------ the conformance fixture

#[test]
fn fixture_images_and_audio_are_saved_to_files() {
    let dir = scratch("media");
    let r = run_in(&dir, &["call", fixture(), "test_image_content"]);
    assert_eq!(r.code, 0, "{r:?}");
    let png = dir.join("test_image_content-0.png");
    assert!(
        r.stdout.contains("saved to ./test_image_content-0.png"),
        "{r:?}"
    );
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    let out = dir.join("out");
    let r = run(&[
        "call",
        fixture(),
        "test_audio_content",
        "--save-dir",
        out.to_str().unwrap(),
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let saved = &r.json()["savedFiles"][0];
    assert_eq!(saved["mimeType"], "audio/wav");
    let wav = std::path::PathBuf::from(saved["path"].as_str().unwrap());
    assert_eq!(wav, out.join("test_audio_content-0.wav"));
    assert_eq!(&std::fs::read(&wav).unwrap()[..4], b"RIFF");
    let r = run_in(&dir, &["call", fixture(), "test_multiple_content_types"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .starts_with("Multiple content types test:\n[image image/png"),
        "{r:?}"
    );
    assert!(
        r.stdout
            .contains("[resource test://mixed-content-resource (application/json)]"),
        "{r:?}"
    );
}

#[test]
fn fixture_tool_errors_exit_1() {
    let r = run(&["call", fixture(), "test_error_handling"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("intentionally returns an error"), "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
}

#[test]
fn fixture_enum_forms_take_values_or_titles() {
    let r = run(&[
        "call",
        fixture(),
        "test_elicitation_sep1330_enums",
        "--answer",
        r#"sep1330={"untitledSingle":"option2","titledSingle":"Third Option","legacyEnum":"Option One","untitledMulti":["option1","option3"],"titledMulti":["value2"]}"#,
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let content = r
        .stdout
        .trim()
        .strip_prefix("Elicitation completed: action=accept, content=")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(content).unwrap(),
        json!({
            "untitledSingle": "option2", "titledSingle": "value3", "legacyEnum": "opt1",
            "untitledMulti": ["option1", "option3"], "titledMulti": ["value2"]
        })
    );
}

#[test]
fn fixture_defaults_fill_an_empty_answer() {
    let r = run(&[
        "call",
        fixture(),
        "test_elicitation_sep1034_defaults",
        "--answer",
        "sep1034={}",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let content = r
        .stdout
        .trim()
        .strip_prefix("Elicitation completed: action=accept, content=")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(content).unwrap(),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
}

#[test]
fn fixture_multi_round_and_mixed_questions() {
    let r = run(&[
        "call",
        fixture(),
        "test_input_required_result_multi_round",
        "--answer",
        "step1=Ada",
        "--answer",
        "step2=teal",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Ada likes teal\n");
    // A name, a sampling request and the roots, in one round.
    if cfg!(unix) {
        let r = run(&[
            "call",
            fixture(),
            "test_input_required_result_multiple_inputs",
            "--answer",
            "user_name=Ada",
            "--sampling-command",
            "sh -c 'cat >/dev/null; echo Hello there'",
            "--root",
            "file:///srv/project",
        ]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            "Name: Ada; greeting: Hello there; roots: file:///srv/project\n"
        );
    }
    let r = run(&[
        "prompt",
        fixture(),
        "test_input_required_result_prompt",
        "--answer",
        "user_context=release notes",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["result"]["messages"][0]["content"]["text"],
        "Write a short note using this context: release notes"
    );
}

#[test]
fn fixture_log_messages_go_to_stderr() {
    let r = run(&["call", fixture(), "test_tool_with_logging"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "Logging test completed\n");
    assert!(
        r.stderr
            .contains("[info] conformance: Tool execution started"),
        "{r:?}"
    );
    let r = run(&[
        "call",
        fixture(),
        "test_tool_with_logging",
        "--log-level",
        "error",
    ]);
    assert!(!r.stderr.contains("Tool execution started"), "{r:?}");
}

#[test]
fn fixture_inspection() {
    let r = run(&["resources", fixture(), "--output", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        !r.json()["resources"].as_array().unwrap().is_empty(),
        "{r:?}"
    );
    let r = run(&["prompt", fixture(), "test_prompt_with_arguments"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("missing required prompt argument"),
        "{r:?}"
    );
}

#[test]
fn completions_for_every_shell() {
    let r = run(&["completions", "bash"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("_arctern() {"), "{r:?}");
    assert!(r.stdout.contains("complete -F _arctern"), "{r:?}");
    for subcommand in ["serve", "call", "tools", "read", "login", "completions"] {
        assert!(r.stdout.contains(subcommand), "{subcommand}: {r:?}");
    }
    #[cfg(unix)]
    if let Some(bash) = bash() {
        // Loaded into bash, it completes a subcommand and a flag.
        let script = scratch("completions").join("arctern.bash");
        std::fs::write(&script, &r.stdout).unwrap();
        let complete = |words: &str, current: usize| {
            let out = std::process::Command::new(&bash)
                .arg("-c")
                .arg(format!(
                    "source '{}'; COMP_WORDS=({words}); COMP_CWORD={current}; \
                     _arctern arctern \"${{COMP_WORDS[{current}]}}\" \
                     \"${{COMP_WORDS[{}]}}\"; echo \"${{COMPREPLY[*]}}\"",
                    script.display(),
                    current - 1
                ))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        assert_eq!(complete("arctern ca", 1), "call");
        assert_eq!(complete("arctern compl", 1), "completions");
        assert_eq!(complete("arctern call --ans", 2), "--answer");
        assert_eq!(
            complete("arctern tools --sampling", 2),
            "--sampling-command"
        );
    }
    for (shell, mark) in [
        ("zsh", "#compdef arctern"),
        ("fish", "complete -c arctern"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[arctern]"),
    ] {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {r:?}");
        assert!(r.stdout.contains(mark), "{shell}: {r:?}");
    }
    let r = run(&["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("possible values: bash"), "{r:?}");
}

/// A `bash` to load the completion script into, when the machine has one.
#[cfg(unix)]
fn bash() -> Option<std::path::PathBuf> {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
}

#[test]
fn a_mistyped_name_gets_a_suggestion() {
    let demo = Demo::start();
    let r = run(&["call", demo.url(), "provison", "--arg", "name=orders"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "arctern: the server has no tool \"provison\" (did you mean \"provision\"?); it has: \
             provision,"
        ),
        "{r:?}"
    );
    // Both deploy and note are listed (they were missing from the README's list).
    assert!(
        r.stderr.contains("deploy") && r.stderr.contains("note"),
        "{r:?}"
    );
    let r = run(&["prompt", demo.url(), "breifing"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("(did you mean \"briefing\"?)"), "{r:?}");
    // An --answer field, and an --answer key that no question had.
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--answer",
        r#"region={"regoin":"eu-west-1"}"#,
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("the form has no field \"regoin\" (did you mean \"region\"?)"),
        "{r:?}"
    );
    let r = run(&[
        "call",
        demo.url(),
        "provision",
        "--arg",
        "name=orders",
        "--answer",
        "regoin=eu-west-1",
    ]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(
        r.stderr.contains(
            "note: question \"regoin\" (--answer/--decline) was never asked (did you mean \
             \"region\"?)"
        ),
        "{r:?}"
    );
}

#[test]
fn an_unknown_or_repeated_arg_is_named() {
    let demo = Demo::start();
    // The unknown key is named, with the parameter it was likely meant for.
    let r = run(&["call", demo.url(), "provision", "--arg", "nme=orders"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "arctern: --arg nme: the tool has no parameter \"nme\" (did you mean \"name\"?); it \
             takes: name"
        ),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("missing required argument: name"),
        "{r:?}"
    );
    // Given twice: refused, not last-wins.
    let r = run(&[
        "call",
        demo.url(),
        "echo",
        "--arg",
        "text=hi",
        "--arg",
        "text=there",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    assert!(r.stderr.contains("--arg text is given twice"), "{r:?}");
    // A prompt's arguments too.
    let r = run(&["prompt", demo.url(), "briefing", "--arg", "tpoic=MRTR"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("(did you mean \"topic\"?)"), "{r:?}");
}

#[test]
fn a_wrong_path_gets_one_message_with_the_endpoint_to_try() {
    let demo = Demo::start();
    let wrong = demo.url().replace("/mcp", "/wrong");
    let root = demo.url().trim_end_matches("/mcp").to_owned();
    let r = run(&["tools", &wrong]);
    assert_eq!(r.code, 3, "{r:?}");
    assert_eq!(
        r.stderr,
        format!(
            "arctern: could not connect to {wrong}: the server answered HTTP 404 Not Found \
             without an MCP response: nothing serves MCP at this path. Is the MCP endpoint at \
             /mcp ({root}/mcp)?\n"
        ),
        "{r:?}"
    );
    let r = run(&["tools", &wrong, "--output", "json"]);
    assert_eq!(r.json()["error"]["httpStatus"], 404, "{r:?}");
}

#[test]
fn logs_carry_no_colour_when_stderr_is_not_a_terminal() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(common::ARCTERN)
        .args(["serve", "--port", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut before = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line.contains("listening on");
        before.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let warn = before
        .iter()
        .find(|l| l.contains("request state is sealed with a key of this process only"))
        .unwrap_or_else(|| panic!("no warning: {before:?}"));
    assert!(warn.contains(" WARN "), "{warn:?}");
    assert!(!before.iter().any(|l| l.contains('\x1b')), "{before:?}");
}
