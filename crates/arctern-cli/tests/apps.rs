//! `arctern apps check` against the demo (clean) and a broken Apps server (one finding per
//! rule it breaks, exit 1), and `arctern call --app-info`.

mod common;

use arctern::Outcome;
use arctern::apps::MIME_TYPE;
use arctern::server::{
    Handler, HandlerResult, Listed, RequestContext, Server, ServerConfig, resource_not_found,
};
use arctern::types::{
    CallToolRequestParams, CallToolResult, ListResourcesRequestParams, ListResourcesResult,
    ListToolsRequestParams, ListToolsResult, ReadResourceRequestParams, ReadResourceResult,
};
use arctern_cli::demo;
use common::{ARCTERN, quote, run, serve};
use serde_json::json;

#[test]
fn the_demo_passes_and_its_view_is_a_small_app() {
    let url = serve(demo::server().unwrap());
    let check = run(&[
        "apps",
        "check",
        &url,
        "--call",
        "show_echo={\"text\":\"hi\"}",
        "--output",
        "json",
    ]);
    assert_eq!(check.code, 0, "{check:?}");
    let report = &check.json()["result"];
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["extensionDeclared"], true);
    assert_eq!(
        (report["tools"].as_u64(), report["views"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(report["errors"], 0);
    assert_eq!(report["warnings"], 0, "{report}");

    // The view is ours: a document that speaks the view's side of the protocol itself.
    let html = demo::ECHO_VIEW_HTML;
    assert!(arctern::apps::is_html_document(html));
    for method in [
        "ui/initialize",
        "ui/notifications/initialized",
        "ui/notifications/tool-result",
        "ui/resource-teardown",
        "tools/call",
    ] {
        assert!(html.contains(method), "{method}");
    }
    assert!(html.contains("\"2026-01-26\""));
    assert!(!html.contains("<script src"), "no libraries");

    let info = run(&["call", &url, "show_echo", "--app-info", "--output", "json"]);
    assert_eq!(info.code, 0, "{info:?}");
    let info = &info.json()["result"];
    assert_eq!(info["hasApp"], true);
    assert_eq!(info["resourceUri"], demo::ECHO_VIEW);
    assert_eq!(info["resourceMimeType"], MIME_TYPE);
    assert_eq!(info["prefersBorder"], true);
    let plain = run(&["call", &url, "echo", "--app-info"]);
    assert_eq!(plain.code, 0, "{plain:?}");
    assert!(plain.stdout.contains("hasApp: false"), "{plain:?}");
}

/// An Apps server that breaks the rules hosts apply, as a server built without arctern's
/// checks could: a low-level handler serving these lists as they are.
struct Broken;

fn value<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

impl Handler for Broken {
    async fn list_tools(
        &self,
        _ctx: RequestContext,
        _params: ListToolsRequestParams,
    ) -> HandlerResult<Listed<ListToolsResult>> {
        let tool = |name: &str, meta: serde_json::Value| json!({"name": name, "inputSchema": {"type": "object"}, "_meta": meta});
        Ok(value::<ListToolsResult>(json!({"tools": [
            tool("empty", json!({"ui": {"resourceUri": "ui://broken/view.html"}})),
            tool("nowhere", json!({"ui": {"resourceUri": "ui://broken/missing.html", "csp": {}},
                                   "ui/resourceUri": "ui://broken/missing.html"})),
            tool("web", json!({"ui": {"resourceUri": "https://example.com/v.html", "visibility": ["robot"]},
                               "ui/resourceUri": "https://example.com/v.html"})),
            tool("split", json!({"ui": {"resourceUri": "ui://broken/view.html"},
                                 "ui/resourceUri": "ui://broken/other.html"})),
        ]}))
        .into())
    }

    async fn call_tool(
        &self,
        _ctx: RequestContext,
        _params: CallToolRequestParams,
    ) -> HandlerResult<Outcome<CallToolResult>> {
        Ok(Outcome::Complete(CallToolResult::new(Vec::new())))
    }

    async fn list_resources(
        &self,
        _ctx: RequestContext,
        _params: ListResourcesRequestParams,
    ) -> HandlerResult<Listed<ListResourcesResult>> {
        Ok(value::<ListResourcesResult>(json!({"resources": [{
            "uri": "ui://broken/view.html", "name": "view", "mimeType": MIME_TYPE,
            "_meta": {"ui": {"csp": {"connectDomains": ["https://ok.example.com", "https://a.com; script-src *"],
                                     "frameDomains": ["*"]}}}
        }]}))
        .into())
    }

    async fn read_resource(
        &self,
        _ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> HandlerResult<Outcome<ReadResourceResult>> {
        if params.uri != "ui://broken/view.html" {
            return Err(resource_not_found(&params.uri));
        }
        // Plain HTML, not a document, and without the content's `_meta.ui`.
        Ok(Outcome::Complete(value(json!({"contents": [
            {"uri": "ui://broken/view.html", "mimeType": "text/html", "text": "<div>hi</div>"}
        ]}))))
    }
}

#[test]
fn a_broken_server_is_flagged_rule_by_rule() {
    let mut config = ServerConfig::new("broken", "1");
    config.capabilities = value(json!({"tools": {}, "resources": {}}));
    let url = serve(Server::new(Broken, config));
    let check = run(&["apps", "check", &url, "--call", "empty", "--output", "json"]);
    assert_eq!(check.code, 1, "{check:?}");
    let report = &check.json()["result"];
    assert_eq!(report["passed"], false);
    let findings: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_owned();
            (s("rule"), s("severity"), s("subject"))
        })
        .collect();
    let has = |rule: &str, severity: &str, subject: &str| {
        findings
            .iter()
            .any(|(r, s, w)| r == rule && s == severity && w.contains(subject))
    };
    for (rule, severity, subject) in [
        ("apps/extension", "warning", "server"),
        ("apps/flat-key", "warning", "empty"),
        ("apps/tool-meta", "error", "nowhere"),
        ("apps/view-exists", "error", "missing.html"),
        ("apps/ui-scheme", "error", "web"),
        ("apps/visibility", "error", "web"),
        ("apps/tool-meta", "error", "split"),
        ("apps/mime-type", "error", "view.html"),
        ("apps/html-document", "error", "view.html"),
        ("apps/content-meta", "warning", "view.html"),
        ("apps/csp-source", "error", "view.html"),
        ("apps/text-fallback", "error", "empty"),
        ("apps/text-fallback", "skipped", "split"),
    ] {
        assert!(
            has(rule, severity, subject),
            "{rule} {severity} {subject} in {findings:#?}"
        );
    }
    // Two CSP sources dropped (the `;` and the lone `*`); with wildcards allowed, one.
    let csp = |r: &serde_json::Value| {
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "apps/csp-source")
            .count()
    };
    assert_eq!(csp(report), 2);
    let lenient = run(&[
        "apps",
        "check",
        &url,
        "--allow-wildcard-csp",
        "--output",
        "json",
    ]);
    assert_eq!(csp(&lenient.json()["result"]), 1);

    // Text output: one line per finding, and a summary naming the failed rules.
    let text = run(&["apps", "check", &url]);
    assert_eq!(text.code, 1, "{text:?}");
    assert!(text.stdout.contains("error    apps/mime-type"), "{text:?}");
    assert!(
        text.stdout.contains("skipped  apps/text-fallback"),
        "{text:?}"
    );
    assert!(text.stdout.contains("error(s)"), "{text:?}");

    // Bad command lines are usage errors.
    assert_eq!(run(&["apps", "check", &url, "--call", "x=[1]"]).code, 2);
}

#[test]
fn the_demo_passes_over_stdio() {
    let command = format!("{} serve --stdio", quote(std::path::Path::new(ARCTERN)));
    let check = run(&["apps", "check", "--stdio", &command, "--output", "json"]);
    assert_eq!(check.code, 0, "{check:?}");
    let report = &check.json()["result"];
    assert_eq!(report["errors"], 0, "{report}");
    // Only the text fallback is left unchecked, since no tool was named to call.
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["severity"] == "skipped"),
        "{report}"
    );
}
