//! `arctern apps check`: what a host would refuse in an MCP Apps server, rule by rule with
//! stable ids ([`Rule`]), and an exit code for CI; and `arctern call --app-info`, a tool's
//! view and its metadata.

use arctern::apps::{Rule, UiResourceMeta, UiToolMeta};
use arctern::client::Client;
use arctern::testing::apps::{AppsCheck, AppsReport, Severity};
use arctern::types::Tool;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{Exit, Failure};
use crate::output::{self, Format};
use crate::session::{AnswerArgs, ConnectArgs, Endpoint, Session};

/// How `arctern apps check` reports, as `--help` shows it.
pub const CHECK_HELP: &str = "\
Rules (an error is what hosts refuse or drop; a warning works with some hosts only):
  apps/extension       the server declares io.modelcontextprotocol/ui
  apps/ui-scheme       view URIs and tools' resourceUri use ui://
  apps/view-exists     a tool's resourceUri names a view the server serves
  apps/tool-meta       a tool's _meta.ui has no csp or permissions, and agrees with ui/resourceUri
  apps/visibility      a tool's visibility lists only model and app, and not none
  apps/flat-key        tools also carry the flat ui/resourceUri key older hosts read
  apps/resource-meta   a view's _meta.ui has the shape of McpUiResourceMeta
  apps/mime-type       views are served as text/html;profile=mcp-app
  apps/html-document   a view's content is an HTML document
  apps/csp-source      CSP sources fit the grammar hosts accept
  apps/content-meta    the content resources/read returns carries the view's _meta.ui
  apps/text-fallback   a tool with a view returns non-empty text (only with --call)

Exit codes:
  0    no errors (warnings may remain)
  1    at least one rule failed
  2    usage error
  3    the server could not be reached or listed";

/// `arctern apps`.
#[derive(Args)]
pub struct AppsArgs {
    #[command(subcommand)]
    command: AppsCommand,
}

#[derive(Subcommand)]
enum AppsCommand {
    /// Connect as a client that renders MCP Apps views and report what a host would refuse.
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
}

#[derive(Args)]
struct CheckArgs {
    /// The server's URL, such as http://127.0.0.1:8000/mcp (or use --stdio).
    #[arg(value_name = "URL")]
    url: Option<String>,
    /// Also call TOOL (with a JSON object of arguments, default {}) to check its text
    /// fallback; tools are never called otherwise (repeatable).
    #[arg(long = "call", value_name = "TOOL[=JSON]")]
    calls: Vec<String>,
    /// Let CSP sources that allow every origin (*, https:) pass.
    #[arg(long)]
    allow_wildcard_csp: bool,
    #[command(flatten)]
    conn: ConnectArgs,
}

/// Runs `arctern apps …`.
pub async fn run(a: AppsArgs, format: Format) -> Result<Exit, Failure> {
    match a.command {
        AppsCommand::Check(a) => crate::within(a.conn.whole_timeout(), check(a, format)).await,
    }
}

fn parse_call(spec: &str) -> Result<(String, Value), Failure> {
    let (name, args) = match spec.split_once('=') {
        Some((name, json)) => {
            let args: Value = serde_json::from_str(json).map_err(|e| {
                Failure::usage(format!("--call {spec:?}: the arguments are not JSON: {e}"))
            })?;
            if !args.is_object() {
                return Err(Failure::usage(format!(
                    "--call {spec:?}: the arguments must be a JSON object"
                )));
            }
            (name, args)
        }
        None => (spec, json!({})),
    };
    if name.is_empty() {
        return Err(Failure::usage("--call needs a tool name"));
    }
    Ok((name.to_owned(), args))
}

async fn check(a: CheckArgs, format: Format) -> Result<Exit, Failure> {
    let mut check = AppsCheck::new().allow_wildcard_csp(a.allow_wildcard_csp);
    for spec in &a.calls {
        let (name, args) = parse_call(spec)?;
        check = check.call(name, args);
    }
    let endpoint = Endpoint::resolve(a.url, &a.conn)?;
    let session = Session::new(&AnswerArgs {
        no_input: true,
        ..AnswerArgs::default()
    })?;
    let client = session.connect_as(&endpoint, &a.conn, |b| b.apps()).await?;
    let report = check.run(&client).await;
    let _ = client.close().await;
    let report = report.map_err(|e| Failure::from_client(&e, "listing the server"))?;
    print_report(&report, format);
    Ok(if report.passed() {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

fn print_report(report: &AppsReport, format: Format) {
    let errors = report.errors().count();
    let warnings = report
        .findings()
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    if format == Format::Json {
        let findings: Vec<Value> = report
            .findings()
            .iter()
            .map(|f| {
                json!({"rule": f.rule.id(), "severity": f.severity.as_str(),
                       "subject": f.subject, "message": f.message})
            })
            .collect();
        output::json(&json!({"result": {
            "passed": report.passed(),
            "extensionDeclared": report.extension_declared(),
            "tools": report.tools_checked(),
            "views": report.views_checked(),
            "errors": errors,
            "warnings": warnings,
            "findings": findings,
        }}));
        return;
    }
    for f in report.findings() {
        output::line(
            false,
            &format!(
                "{:<8} {:<20} {}: {}",
                f.severity.as_str(),
                f.rule.id(),
                f.subject,
                f.message
            ),
        );
    }
    let broken: std::collections::BTreeSet<Rule> = report.errors().map(|f| f.rule).collect();
    output::line(
        false,
        &format!(
            "{} tool(s) with a view, {} view(s): {errors} error(s), {warnings} warning(s){}",
            report.tools_checked(),
            report.views_checked(),
            if broken.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    broken.iter().map(|r| r.id()).collect::<Vec<_>>().join(", ")
                )
            }
        ),
    );
}

/// `arctern call --app-info`: the tool's view and metadata, the view read for its MIME type
/// and sandbox settings (the content item's `_meta.ui`, else the listing's). Nothing is
/// called.
pub async fn app_info(client: &Client, tool: &Tool, format: Format) -> Result<Exit, Failure> {
    let ui = UiToolMeta::from_tool(tool).map_err(|e| {
        Failure::new(
            Exit::Connection,
            format!("tool {:?}: its _meta.ui is malformed: {e}", tool.name),
        )
    })?;
    let uri = ui.as_ref().and_then(|u| u.resource_uri.clone());
    let mut info = json!({
        "tool": tool.name,
        "hasApp": uri.is_some(),
        "resourceUri": uri,
        "visibility": ui.as_ref().and_then(|u| u.visibility.clone()),
    });
    if let Some(uri) = &uri {
        let read = client
            .read_resource(uri)
            .await
            .map_err(|e| Failure::from_client(&e, &format!("reading the view {uri}")))?;
        let item = read.contents.first();
        let mut view_ui = item.and_then(|c| c.ui_meta().ok().flatten());
        if view_ui.is_none() {
            let listed = crate::inspect::list_resources(client)
                .await
                .map(|(r, _)| r)
                .unwrap_or_default();
            view_ui = listed
                .iter()
                .find(|r| &r.uri == uri)
                .and_then(|r| UiResourceMeta::from_resource(r).ok().flatten());
        }
        let ui = view_ui.unwrap_or_default();
        let mime = item.and_then(|c| match c {
            arctern::types::ResourceContents::Text(t) => t.mime_type.clone(),
            arctern::types::ResourceContents::Blob(b) => b.mime_type.clone(),
            _ => None,
        });
        info["resourceMimeType"] = json!(mime);
        info["csp"] = json!(ui.csp);
        info["permissions"] = json!(ui.permissions);
        info["domain"] = json!(ui.domain);
        info["prefersBorder"] = json!(ui.prefers_border);
    }
    if format == Format::Json {
        output::json(&json!({ "result": info }));
    } else {
        let Value::Object(map) = &info else {
            unreachable!("built as an object")
        };
        for (key, value) in map {
            if !value.is_null() {
                output::line(false, &format!("{key}: {value}"));
            }
        }
    }
    Ok(Exit::Ok)
}
