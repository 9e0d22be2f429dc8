//! The command against a server nobody on this project wrote: the official MCP "everything"
//! test server (npm `@modelcontextprotocol/server-everything` 2026.8.31, on the TypeScript SDK
//! 1.x, protocol 2025-11-25), installed and pinned by `scripts/everything-env.sh`, run over
//! stdio. It asks with real `elicitation/create` and `sampling/createMessage` requests, keyed
//! by its own request ids, turns a question the client could not answer into an `isError`
//! result that quotes the client's error, answers `-32042` with pages to open, and lists some
//! tools only to clients with sampling or roots.
//!
//! Without Node.js or the installed server these tests are skipped with a notice;
//! `ARCTERN_REQUIRE_NODE=1` (set by `scripts/test.sh`) makes that a failure.

mod common;

use common::{Everything, Run, everything, run, run_in, scratch};

/// `arctern call --stdio <the everything server> TOOL ARGS...`.
fn call(peers: &Everything, tool: &str, args: &[&str]) -> Run {
    let stdio = peers.stdio();
    let mut all = vec!["call", "--stdio", stdio.as_str(), tool];
    all.extend_from_slice(args);
    run(&all)
}

#[test]
fn a_question_left_unanswered_exits_4_though_the_server_makes_it_a_tool_error() {
    let Some(peers) = everything() else { return };
    let r = call(&peers, "trigger-elicitation-request", &[]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(
        r.stderr
            .contains("asks \"Please provide inputs for the following fields:\""),
        "{r:?}"
    );
    assert!(r.stderr.contains("no answer was given"), "{r:?}");
    // The server's tool error (it quotes the refusal) is not shown as the outcome.
    assert!(!r.stderr.contains("reported an error"), "{r:?}");
    assert!(!r.stdout.contains("MCP error"), "{r:?}");

    let r = call(&peers, "trigger-elicitation-request", &["--output", "json"]);
    assert_eq!(r.code, 4, "{r:?}");
    let error = &r.json()["error"];
    assert_eq!(error["kind"], "input-required", "{r:?}");
    assert_eq!(error["key"], "0", "{r:?}");
    assert_eq!(error["place"], 1, "{r:?}");
    assert_eq!(error["requestedSchema"]["required"][0], "name", "{r:?}");
}

#[test]
fn an_answer_that_does_not_fit_exits_2_though_the_server_makes_it_a_tool_error() {
    let Some(peers) = everything() else { return };
    // By the server's own key ("0": its first request of the session).
    let r = call(
        &peers,
        "trigger-elicitation-request",
        &["--answer", r#"0={"name":"Ada","integer":500}"#],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("--answer 0 does not fit the question \"Please provide inputs for the following fields:\": field integer: At most 100, please."),
        "{r:?}"
    );
    assert!(!r.stderr.contains("reported an error"), "{r:?}");

    // One that fits goes through, and the server's result is printed.
    let r = call(
        &peers,
        "trigger-elicitation-request",
        &["--answer", r#"0={"name":"Ada","integer":7}"#],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("- Name: Ada"), "{r:?}");
    assert!(r.stdout.contains("- Favorite Integer: 7"), "{r:?}");
}

/// The server as a child of `sh`, with a copy of everything the client sends it kept in
/// `log`; the command line carries a credential, as `docker run -e API_KEY=…` would.
#[cfg(unix)]
fn recorded_stdio(peers: &Everything, log: &std::path::Path) -> String {
    format!(
        "sh -c 'tee -a \"$1\" | exec node \"$2\" stdio' API_KEY=sk-test-4242 {} {}",
        common::quote(log),
        common::quote(&peers.entry())
    )
}

#[cfg(unix)]
#[test]
fn nothing_local_reaches_the_server_in_an_error() {
    let Some(peers) = everything() else { return };
    let dir = scratch("everything-private");
    let log = dir.join("sent-to-the-server.jsonl");
    let _ = std::fs::remove_file(&log);
    let stdio = recorded_stdio(&peers, &log);
    let with = |tool: &str, more: &[&str]| {
        let mut args = vec!["call", "--stdio", stdio.as_str(), tool];
        args.extend_from_slice(more);
        run_in(&dir, &args)
    };

    // No answer, an answer that does not fit, a sampling command that cannot start.
    let unanswered = with("trigger-elicitation-request", &[]);
    let unfit = with(
        "trigger-elicitation-request",
        &["--answer", r#"0={"name":"Ada","integer":500}"#],
    );
    let sampler = dir.join("no-such-dir").join("private-sampler-77");
    let sampling = with(
        "trigger-sampling-request",
        &[
            "--arg",
            "prompt=hi",
            "--sampling-command",
            sampler.to_str().unwrap(),
        ],
    );

    let sent = std::fs::read_to_string(&log).unwrap();
    for local in [
        "sk-test-4242",
        "API_KEY",
        "--answer",
        "--decline",
        "stdin is not a terminal",
        "At most 100",
        "private-sampler-77",
        dir.to_str().unwrap(),
    ] {
        assert!(
            !sent.contains(local),
            "{local:?} reached the server:\n{sent}"
        );
    }
    // What it got instead: which request went unanswered, nothing more.
    let answers: Vec<serde_json::Value> = sent
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|m: &serde_json::Value| m.get("error").is_some())
        .collect();
    let errors: Vec<&serde_json::Value> = answers.iter().map(|m| &m["error"]).collect();
    assert_eq!(
        errors,
        [
            &serde_json::json!({"code": -32603,
                "message": "the client did not answer elicitation/create"}),
            &serde_json::json!({"code": -32603,
                "message": "the client did not answer elicitation/create"}),
            &serde_json::json!({"code": -32603,
                "message": "the client did not answer sampling/createMessage"}),
        ],
        "{sent}"
    );

    // The details are shown here, on stderr, and decide the exit codes.
    assert_eq!(unanswered.code, 4, "{unanswered:?}");
    assert!(
        unanswered.stderr.contains("API_KEY=sk-test-4242"),
        "{unanswered:?}"
    );
    assert!(unanswered.stderr.contains("--answer @1="), "{unanswered:?}");
    assert_eq!(unfit.code, 2, "{unfit:?}");
    assert!(unfit.stderr.contains("At most 100"), "{unfit:?}");
    assert_eq!(sampling.code, 5, "{sampling:?}");
    assert!(
        sampling.stderr.contains("private-sampler-77"),
        "{sampling:?}"
    );
}

#[test]
fn url_elicitation_required_shows_each_page_with_its_domain_and_exits_4() {
    let Some(peers) = everything() else { return };
    let args = [
        "--arg",
        "url=https://example.com/start",
        "--arg",
        "errorPath=true",
    ];
    let r = call(&peers, "trigger-url-elicitation", &args);
    assert_eq!(r.code, 4, "{r:?}");
    let said = &r.stderr;
    assert!(
        said.contains("needs you to open a page first (error -32042: "),
        "{r:?}"
    );
    assert!(
        said.contains("1. Open this link to satisfy the prerequisite, then retry the request."),
        "{r:?}"
    );
    assert!(
        said.contains("URL:    https://modelcontextprotocol.io"),
        "{r:?}"
    );
    assert!(said.contains("Domain: modelcontextprotocol.io"), "{r:?}");
    assert!(
        said.contains(
            "Nothing was opened: open it yourself, finish there, then run the command again."
        ),
        "{r:?}"
    );

    let mut json_args = args.to_vec();
    json_args.extend(["--output", "json"]);
    let r = call(&peers, "trigger-url-elicitation", &json_args);
    assert_eq!(r.code, 4, "{r:?}");
    let error = &r.json()["error"];
    assert_eq!(error["kind"], "input-required");
    assert_eq!(
        error["elicitations"][0]["url"],
        "https://modelcontextprotocol.io"
    );
    assert_eq!(
        error["elicitations"][0]["domain"],
        "modelcontextprotocol.io"
    );
    assert!(
        error["elicitations"][0]["elicitationId"].is_string(),
        "{error}"
    );
    assert_eq!(error["protocolError"]["code"], -32042);
}

#[test]
fn discover_shows_what_a_2025_server_said_in_initialize() {
    let Some(peers) = everything() else { return };
    let stdio = peers.stdio();
    let r = run(&["discover", "--stdio", stdio.as_str(), "--output", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let out = r.json();
    assert_eq!(out["source"], "initialize", "{out}");
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    assert_eq!(out["result"]["supportedVersions"][0], "2025-11-25", "{out}");
    assert!(out["result"]["capabilities"]["tools"].is_object(), "{out}");
    assert!(out["serverInfo"]["name"].is_string(), "{out}");

    let r = run(&["discover", "--stdio", stdio.as_str()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("no server/discover"), "{}", r.stdout);
    assert!(r.stdout.contains("tools"), "{}", r.stdout);
}

#[test]
fn the_listing_commands_offer_sampling_and_roots() {
    let Some(peers) = everything() else { return };
    let stdio = peers.stdio();
    let names = |extra: &[&str]| {
        let mut args = vec!["tools", "--stdio", stdio.as_str(), "--output", "json"];
        args.extend_from_slice(extra);
        let r = run(&args);
        assert_eq!(r.code, 0, "{r:?}");
        r.json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let plain = names(&[]);
    assert!(plain.contains(&"echo".to_owned()), "{plain:?}");
    // The server lists these only to clients with sampling, and with roots.
    assert!(
        !plain.contains(&"trigger-sampling-request".to_owned()),
        "{plain:?}"
    );
    assert!(!plain.contains(&"get-roots-list".to_owned()), "{plain:?}");
    let root = scratch("everything-root");
    let offered = names(&[
        "--sampling-command",
        "cat",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(
        offered.contains(&"trigger-sampling-request".to_owned()),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"get-roots-list".to_owned()),
        "{offered:?}"
    );

    // prompts and resources take them too.
    for list in ["prompts", "resources"] {
        let r = run(&[list, "--stdio", &stdio, "--root", root.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{list}: {r:?}");
    }
}

/// `arctern call --stdio <two-questions.mjs> plan_trip ARGS...`.
fn plan_trip(peers: &Everything, args: &[&str]) -> Run {
    let stdio = peers.two_questions();
    let mut all = vec!["call", "--stdio", stdio.as_str(), "plan_trip"];
    all.extend_from_slice(args);
    run(&all)
}

#[test]
fn questions_are_answered_by_place_whatever_ids_the_server_gives_them() {
    let Some(peers) = everything() else { return };
    let root = scratch("everything-place");
    let root = root.to_str().unwrap();
    // Its questions are the server's requests 0 and 1; with roots it asks roots/list first,
    // and they become 1 and 2. By place, the same answers fit both.
    let by_place = ["--answer", "@1=Oslo", "--answer", r#"@2={"nights":3}"#];
    for extra in [&[][..], &["--root", root][..]] {
        let mut args = by_place.to_vec();
        args.extend_from_slice(extra);
        let r = plan_trip(&peers, &args);
        assert_eq!(r.code, 0, "{extra:?}: {r:?}");
        assert_eq!(r.stdout, "3 nights in Oslo.\n", "{r:?}");
        assert!(!r.stderr.contains("never asked"), "{r:?}");
    }
    // The keys a script saw once are not the keys next time.
    let by_key = ["--answer", "0=Oslo", "--answer", "1=3"];
    let r = plan_trip(&peers, &by_key);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "3 nights in Oslo.\n", "{r:?}");
    let mut shifted = by_key.to_vec();
    shifted.extend(["--root", root]);
    // With roots, "1" is the first question now: it takes the nights as its city, and the
    // second question (2) has no answer.
    let r = plan_trip(&peers, &shifted);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(
        r.stderr
            .contains("note: question \"0\" (--answer/--decline) was never asked"),
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("asks \"How many nights?\" (question \"2\""),
        "{r:?}"
    );
    // A question left without an answer is named by its place, with the reason.
    let r = plan_trip(&peers, &["--root", root, "--answer", "@1=Oslo"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(
        r.stderr.contains(
            "asks \"How many nights?\" (question \"2\", the 2nd question of this command, \
             tool plan_trip)"
        ),
        "{r:?}"
    );
    assert!(
        r.stderr.contains(
            "answer with --answer @2='{\"nights\":1}' or --answer @2=VALUE (one field), or \
             pass --decline @2\n  (@2: the question's place; its key \"2\" is the server's \
             request id"
        ),
        "{r:?}"
    );
    // Declining by place; a key matches before a place.
    let r = plan_trip(&peers, &["--answer", "@1=Oslo", "--decline", "@2"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "No trip to Oslo (decline).\n", "{r:?}");
    assert!(
        r.stderr.contains("Declined question \"@2\" (--decline)."),
        "{r:?}"
    );
    let r = plan_trip(
        &peers,
        &["--answer", "@1=Oslo", "--answer", "1=2", "--answer", "@2=9"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "2 nights in Oslo.\n", "{r:?}");
    assert!(
        r.stderr
            .contains("note: question \"@2\" (--answer/--decline) was not used: that question was answered by its key, \"1\""),
        "{r:?}"
    );
    // The everything server's one question, by place; a place nobody reached is named so.
    let r = call(
        &peers,
        "trigger-elicitation-request",
        &["--answer", r#"@1={"name":"Ada"}"#, "--decline", "@2"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("- Name: Ada"), "{r:?}");
    assert!(
        r.stderr.contains(
            "note: question \"@2\" (--answer/--decline) was never asked (1 question was asked)"
        ),
        "{r:?}"
    );
}
