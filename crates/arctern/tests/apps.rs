//! MCP Apps on a server: views and the tools pointing at them on both eras, the extension
//! declared in `server/discover` and in `initialize`, the checks `build()` runs, and the
//! client's declaration.

use arctern::Era;
use arctern::apps::{
    EXTENSION_ID, LEGACY_RESOURCE_URI_KEY, MIME_TYPE, UiResourceCsp, UiResourcePermissions,
    UiToolMeta, ViewSpec, Visibility,
};
use arctern::client::Client;
use arctern::server::{McpServer, RequestContext, ToolSpec};
use arctern::testing::apps::AppsCheck;
use arctern::testing::{TestClient, text};
use arctern::types::ResourceContents;
use serde_json::json;

const DASHBOARD: &str = "<!doctype html><html><body><h1>Inventory</h1></body></html>";

fn server() -> McpServer {
    McpServer::new("inventory")
        .view(
            ViewSpec::new("ui://inventory/dashboard.html", "dashboard")
                .title("Inventory dashboard")
                .html(DASHBOARD)
                .csp(
                    UiResourceCsp::new()
                        .connect(["https://api.example.com"])
                        .resources(["https://*.cdn.example.com"]),
                )
                .permissions(UiResourcePermissions::new().clipboard_write())
                .prefers_border(true),
        )
        .view_with(
            ViewSpec::new("ui://inventory/live.html", "live"),
            |ctx: RequestContext| async move {
                format!(
                    "<!doctype html><html><body>apps={}</body></html>",
                    ctx.client_supports_apps()
                )
            },
        )
        .tool_spec(
            ToolSpec::new("show_inventory")
                .description("Shows the inventory.")
                .ui("ui://inventory/dashboard.html"),
            |ctx: RequestContext| async move {
                if ctx.client_supports_apps() {
                    "12 items (shown in the dashboard)".to_owned()
                } else {
                    "12 items".to_owned()
                }
            },
        )
        .tool_spec(
            ToolSpec::new("refresh")
                .description("Refreshes the dashboard.")
                .ui("ui://inventory/dashboard.html")
                .visibility([Visibility::APP]),
            || async { "refreshed" },
        )
}

async fn exercise(era: Era) {
    let t = TestClient::builder()
        .era(era)
        .configure(|b| b.apps())
        .connect(server())
        .await
        .unwrap();
    let client = t.client();
    let caps = client.server_capabilities().expect("capabilities");
    assert_eq!(
        caps.extensions.as_ref().unwrap()[EXTENSION_ID],
        json!({}),
        "{era:?}"
    );

    let tools = client.list_tools().await.unwrap();
    let show = tools.iter().find(|t| t.name == "show_inventory").unwrap();
    let ui = show.ui_meta().unwrap().unwrap();
    assert_eq!(
        ui.resource_uri.as_deref(),
        Some("ui://inventory/dashboard.html")
    );
    assert!(ui.is_visible_to_model());
    // The flat key, for hosts that read only it.
    assert_eq!(
        show.meta.as_ref().unwrap()[LEGACY_RESOURCE_URI_KEY],
        "ui://inventory/dashboard.html"
    );
    let refresh = tools.iter().find(|t| t.name == "refresh").unwrap();
    let ui = refresh.ui_meta().unwrap().unwrap();
    assert!(!ui.is_visible_to_model() && ui.is_callable_by_app());

    let resources = client.list_resources().await.unwrap();
    let listed = resources
        .iter()
        .find(|r| r.uri == "ui://inventory/dashboard.html")
        .unwrap();
    assert_eq!(listed.mime_type.as_deref(), Some(MIME_TYPE));
    let listed_ui = listed.ui_meta().unwrap().unwrap();
    assert_eq!(listed_ui.prefers_border, Some(true));

    let read = client
        .read_resource("ui://inventory/dashboard.html")
        .await
        .unwrap();
    let [ResourceContents::Text(item)] = read.contents.as_slice() else {
        panic!("{read:?}")
    };
    assert_eq!(item.mime_type.as_deref(), Some(MIME_TYPE));
    assert_eq!(item.text, DASHBOARD);
    // The content item carries the view's metadata too, the same as the listing's.
    let content_ui = read.contents[0].ui_meta().unwrap().unwrap();
    assert_eq!(content_ui, listed_ui);
    assert_eq!(
        content_ui.csp.unwrap().connect_domains.unwrap(),
        ["https://api.example.com"]
    );

    // A handler's view: the MIME type and metadata are the view's; the context knows the
    // client renders views, on both eras.
    let live = client
        .read_resource("ui://inventory/live.html")
        .await
        .unwrap();
    let [ResourceContents::Text(item)] = live.contents.as_slice() else {
        panic!("{live:?}")
    };
    assert_eq!(item.mime_type.as_deref(), Some(MIME_TYPE));
    assert!(item.text.contains("apps=true"), "{}", item.text);

    let result = t.call_tool("show_inventory", json!({})).await.unwrap();
    assert_eq!(text(&result), "12 items (shown in the dashboard)");

    // What a host checks, from the client's side: nothing to report.
    let report = AppsCheck::new()
        .call("show_inventory", json!({}))
        .call("refresh", json!({}))
        .run(client)
        .await
        .unwrap();
    report.assert_clean();
    assert_eq!((report.tools_checked(), report.views_checked()), (2, 2));
}

#[tokio::test]
async fn a_view_and_its_tools_on_the_modern_era() {
    exercise(Era::Modern).await;
}

#[tokio::test]
async fn a_view_and_its_tools_on_a_legacy_session() {
    exercise(Era::Legacy).await;
}

#[tokio::test]
async fn a_client_without_apps_gets_the_text_fallback_and_the_same_lists() {
    for era in [Era::Modern, Era::Legacy] {
        let t = TestClient::builder()
            .era(era)
            .connect(server())
            .await
            .unwrap();
        let result = t.call_tool("show_inventory", json!({})).await.unwrap();
        assert_eq!(text(&result), "12 items", "{era:?}");
        let live = t.read_resource("ui://inventory/live.html").await.unwrap();
        let ResourceContents::Text(item) = &live.contents[0] else {
            panic!()
        };
        assert!(item.text.contains("apps=false"));
        // Lists do not vary by capability.
        assert_eq!(t.client().list_tools().await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn the_client_declares_extensions_only_when_asked() {
    let plain = Client::builder()
        .connect_memory(server().build().unwrap())
        .await
        .unwrap();
    let declared = plain.capabilities().extensions.clone().unwrap_or_default();
    assert!(!declared.contains_key(EXTENSION_ID));
    let apps = Client::builder()
        .apps()
        .extension("io.example/other", json!({"level": 2}))
        .connect_memory(server().build().unwrap())
        .await
        .unwrap();
    let declared = apps.capabilities().extensions.clone().unwrap();
    assert_eq!(
        declared[EXTENSION_ID],
        json!({"mimeTypes": ["text/html;profile=mcp-app"]})
    );
    assert_eq!(declared["io.example/other"], json!({"level": 2}));
    assert!(declared.contains_key("io.modelcontextprotocol/tasks"));
}

#[tokio::test]
async fn the_flat_key_can_be_turned_off() {
    let t = TestClient::connect(server().apps_flat_key(false))
        .await
        .unwrap();
    let tools = t.client().list_tools().await.unwrap();
    for tool in tools {
        let meta = tool.meta.unwrap();
        assert!(!meta.contains_key(LEGACY_RESOURCE_URI_KEY));
        assert!(meta.contains_key("ui"));
    }
}

#[tokio::test]
async fn views_come_from_files_and_tools_added_later_are_checked() {
    let dir = std::env::temp_dir().join(format!("arctern-apps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("view.html");
    std::fs::write(&path, "<html><body>one</body></html>").unwrap();
    let server = McpServer::new("files")
        .enable_tools()
        .view(ViewSpec::new("ui://files/view.html", "view").html_file(&path))
        .build()
        .unwrap();
    let t = TestClient::connect(server.clone()).await.unwrap();
    // Read again on every read.
    std::fs::write(&path, "<html><body>two</body></html>").unwrap();
    let read = t.read_resource("ui://files/view.html").await.unwrap();
    let ResourceContents::Text(item) = &read.contents[0] else {
        panic!()
    };
    assert_eq!(item.text, "<html><body>two</body></html>");
    std::fs::remove_dir_all(&dir).unwrap();

    let handler = server.handler();
    let e = handler
        .add_tool(
            ToolSpec::new("lost").ui("ui://files/missing.html"),
            || async { "x" },
        )
        .unwrap_err();
    assert!(e.to_string().contains("apps/view-exists"), "{e}");
    handler
        .add_tool(
            ToolSpec::new("found").ui("ui://files/view.html"),
            || async { "x" },
        )
        .unwrap();
    let tools = t.client().list_tools().await.unwrap();
    let found = tools.iter().find(|t| t.name == "found").unwrap();
    assert_eq!(
        found.ui_meta().unwrap().unwrap(),
        UiToolMeta::new("ui://files/view.html")
    );
    // Views too, with the same checks.
    let e = handler
        .add_view(ViewSpec::new("ui://files/late.html", "late").html("<p>"))
        .unwrap_err();
    assert!(e.to_string().contains("apps/html-document"), "{e}");
    handler
        .add_view(ViewSpec::new("ui://files/late.html", "late").html("<html></html>"))
        .unwrap();
    handler
        .add_tool(ToolSpec::new("late").ui("ui://files/late.html"), || async {
            "x"
        })
        .unwrap();
    let late = t.read_resource("ui://files/late.html").await.unwrap();
    assert_eq!(late.contents[0].ui_meta().unwrap(), None);
}

/// The error of building `server`, with the rule it names.
fn refused(server: McpServer) -> String {
    server.build().unwrap_err().to_string()
}

#[test]
fn misconfigured_servers_fail_to_build_naming_the_rule() {
    let html = "<!doctype html><html></html>";
    let cases: Vec<(McpServer, &str, &str)> = vec![
        (
            McpServer::new("a").view(ViewSpec::new("https://example.com/v.html", "v").html(html)),
            "apps/ui-scheme",
            "must start with ui://",
        ),
        (
            McpServer::new("a")
                .tool_spec(ToolSpec::new("t").ui("ui://nowhere.html"), || async { "x" }),
            "apps/view-exists",
            "\"ui://nowhere.html\" is not registered",
        ),
        (
            McpServer::new("a")
                .view(ViewSpec::new("ui://a/v.html", "v").html(html))
                .tool_spec(ToolSpec::new("t").ui("https://a/v.html"), || async { "x" }),
            "apps/ui-scheme",
            "must be a ui:// URI",
        ),
        (
            McpServer::new("a").view(
                ViewSpec::new("ui://a/v.html", "v")
                    .html(html)
                    .csp(UiResourceCsp::new().connect(["https://a.com; script-src *"])),
            ),
            "apps/csp-source",
            "in csp.connectDomains",
        ),
        (
            McpServer::new("a").view(
                ViewSpec::new("ui://a/v.html", "v")
                    .html(html)
                    .csp(UiResourceCsp::new().resources(["'self'"])),
            ),
            "apps/csp-source",
            "quote",
        ),
        (
            McpServer::new("a").view(
                ViewSpec::new("ui://a/v.html", "v")
                    .html(html)
                    .csp(UiResourceCsp::new().frames(["*"])),
            ),
            "apps/csp-source",
            "allows every origin",
        ),
        (
            McpServer::new("a").view(ViewSpec::new("ui://a/v.html", "v").html("<div>hi</div>")),
            "apps/html-document",
            "HTML document",
        ),
        (
            McpServer::new("a").resource(
                arctern::server::ResourceSpec::new("ui://a/v.html", "v").mime_type("text/html"),
                || async { "<html></html>".to_owned() },
            ),
            "apps/mime-type",
            "exactly \"text/html;profile=mcp-app\"",
        ),
        (
            McpServer::new("a")
                .view(ViewSpec::new("ui://a/v.html", "v").html(html))
                .tool_spec(
                    ToolSpec::new("t")
                        .ui("ui://a/v.html")
                        .visibility([Visibility::new("robot")]),
                    || async { "x" },
                ),
            "apps/visibility",
            "\"robot\"",
        ),
        (
            McpServer::new("a")
                .view(ViewSpec::new("ui://a/v.html", "v").html(html))
                .tool_spec(
                    ToolSpec::new("t").ui("ui://a/v.html").visibility([]),
                    || async { "x" },
                ),
            "apps/visibility",
            "empty",
        ),
        (
            McpServer::new("a")
                .view(ViewSpec::new("ui://a/v.html", "v").html(html))
                .tool_spec(
                    ToolSpec::new("t").meta(
                        serde_json::from_value(
                            json!({"ui": {"resourceUri": "ui://a/v.html", "csp": {}}}),
                        )
                        .unwrap(),
                    ),
                    || async { "x" },
                ),
            "apps/tool-meta",
            "belongs to the view",
        ),
        (
            McpServer::new("a")
                .view(ViewSpec::new("ui://a/v.html", "v").html(html))
                .tool_spec(
                    ToolSpec::new("t")
                        .ui("ui://a/v.html")
                        .meta(serde_json::from_value(json!({"ui": {}})).unwrap()),
                    || async { "x" },
                ),
            "apps/tool-meta",
            "ToolSpec::ui",
        ),
        (
            McpServer::new("a").view(ViewSpec::new("ui://a/v.html", "v")),
            "it has no HTML",
            "McpServer::view_with",
        ),
    ];
    for (server, rule, detail) in cases {
        let e = refused(server);
        assert!(e.contains(rule) && e.contains(detail), "{rule}: {e}");
    }
    // Wildcards only when allowed; a hand-registered view that is right is accepted.
    McpServer::new("a")
        .view(
            ViewSpec::new("ui://a/v.html", "v")
                .html(html)
                .csp(UiResourceCsp::new().frames(["*"]))
                .allow_wildcard_csp(true),
        )
        .resource(
            arctern::server::ResourceSpec::new("ui://a/raw.html", "raw").mime_type(MIME_TYPE),
            || async { "<html></html>".to_owned() },
        )
        .build()
        .unwrap();
}

#[tokio::test]
async fn a_server_without_views_declares_nothing_unless_enabled() {
    let plain = TestClient::connect(McpServer::new("plain").tool("t", "T.", || async { "x" }))
        .await
        .unwrap();
    let caps = plain.client().server_capabilities().unwrap();
    assert!(
        !caps
            .extensions
            .unwrap_or_default()
            .contains_key(EXTENSION_ID)
    );
    let enabled = TestClient::builder()
        .legacy()
        .connect(McpServer::new("later").enable_apps())
        .await
        .unwrap();
    let caps = enabled.client().server_capabilities().unwrap();
    assert!(caps.extensions.unwrap().contains_key(EXTENSION_ID));
}
