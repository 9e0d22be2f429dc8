//! Looking at a server: `discover`, `tools`, `prompts`, `resources`, and the results of
//! `read` and `prompt`.

use std::collections::BTreeMap;
use std::path::Path;

use arctern::Era;
use arctern::client::Client;
use arctern::types::content::ResourceContents;
use arctern::types::discover::DiscoverResult;
use arctern::types::prompts::{GetPromptResult, Prompt};
use arctern::types::resources::{ReadResourceResult, Resource, ResourceTemplate};
use arctern::types::tools::Tool;
use serde_json::{Value, json};

use crate::args::describe_parameter;
use crate::exit::{Exit, Failure};
use crate::output::{self, Format, line, render_block, resource_lines, save};

/// The first line of a description.
fn first_line(text: Option<&str>) -> &str {
    text.and_then(|t| t.lines().next()).unwrap_or("")
}

/// Two columns: names padded to the widest.
fn table(rows: &[(String, String)]) {
    let width = rows
        .iter()
        .map(|(a, _)| a.chars().count())
        .max()
        .unwrap_or(0);
    for (a, b) in rows {
        if b.is_empty() {
            line(false, a);
        } else {
            line(false, &format!("{a:width$}  {b}"));
        }
    }
}

/// `server/discover`, with what the client learned.
///
/// A 2025-era server has no `server/discover`: what its `initialize` said (the one version it
/// chose, its capabilities and instructions) is shown in the same shape, marked as such.
pub async fn discover(client: &Client, format: Format) -> Result<(), Failure> {
    let legacy = client.era() == Era::Legacy;
    let result = if legacy {
        let mut r = DiscoverResult::new(
            [client.protocol_version().as_str()],
            client.server_capabilities().unwrap_or_default(),
        );
        r.instructions = client.instructions();
        r
    } else {
        client
            .discover()
            .await
            .map_err(|e| Failure::from_client(&e, "server/discover"))?
    };
    let info = client.server_info();
    let source = if legacy {
        "initialize"
    } else {
        "server/discover"
    };
    if format == Format::Json {
        output::json(&json!({
            "result": result,
            "serverInfo": info,
            "protocolVersion": client.protocol_version().as_str(),
            "source": source,
        }));
        return Ok(());
    }
    let mut rows = Vec::new();
    if let Some(i) = &info {
        let name = match &i.title {
            Some(t) => format!("{t} ({})", i.name),
            None => i.name.clone(),
        };
        rows.push(("server".to_owned(), format!("{name} {}", i.version)));
        if let Some(d) = &i.description {
            rows.push(("description".into(), d.clone()));
        }
    }
    rows.push((
        "protocol".into(),
        if legacy {
            format!(
                "{} (a 2025-era session: as initialize said, no server/discover)",
                client.protocol_version().as_str()
            )
        } else {
            format!(
                "{} (supported: {})",
                client.protocol_version().as_str(),
                result.supported_versions.join(", ")
            )
        },
    ));
    let caps = &result.capabilities;
    let mut names = Vec::new();
    if let Some(t) = &caps.tools {
        names.push(with_flags("tools", &[("listChanged", t.list_changed)]));
    }
    if let Some(p) = &caps.prompts {
        names.push(with_flags("prompts", &[("listChanged", p.list_changed)]));
    }
    if let Some(r) = &caps.resources {
        names.push(with_flags(
            "resources",
            &[("subscribe", r.subscribe), ("listChanged", r.list_changed)],
        ));
    }
    if caps.completions.is_some() {
        names.push("completions".into());
    }
    if caps.logging.is_some() {
        names.push("logging".into());
    }
    if let Some(ext) = &caps.extensions {
        names.extend(ext.keys().map(|k| format!("extension {k}")));
    }
    rows.push(("capabilities".into(), names.join(", ")));
    table(&rows);
    if let Some(text) = &result.instructions {
        line(false, "");
        line(false, "instructions:");
        for l in text.lines() {
            line(false, &format!("  {l}"));
        }
    }
    Ok(())
}

fn with_flags(name: &str, flags: &[(&str, Option<bool>)]) -> String {
    let on: Vec<&str> = flags
        .iter()
        .filter(|(_, v)| *v == Some(true))
        .map(|(k, _)| *k)
        .collect();
    if on.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", on.join(", "))
    }
}

/// The tools, each with its parameters (`*` marks required ones).
pub fn tools(list: &[Tool], format: Format) {
    if format == Format::Json {
        output::json(&json!({ "tools": list }));
        return;
    }
    if list.is_empty() {
        line(false, "(no tools)");
        return;
    }
    let mut rows = Vec::new();
    for tool in list {
        rows.push((
            tool.name.clone(),
            first_line(tool.description.as_deref().or(tool.title.as_deref())).to_owned(),
        ));
        let props = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, schema) in props.into_iter().flatten() {
            let mark = if required.contains(&name.as_str()) {
                "*"
            } else {
                ""
            };
            rows.push((
                String::new(),
                format!(
                    "  --arg {}",
                    describe_parameter(&format!("{name}{mark}"), Some(schema))
                ),
            ));
        }
    }
    table(&rows);
}

/// The prompts, each with its arguments.
pub fn prompts(list: &[Prompt], format: Format) {
    if format == Format::Json {
        output::json(&json!({ "prompts": list }));
        return;
    }
    if list.is_empty() {
        line(false, "(no prompts)");
        return;
    }
    let mut rows = Vec::new();
    for p in list {
        rows.push((
            p.name.clone(),
            first_line(p.description.as_deref().or(p.title.as_deref())).to_owned(),
        ));
        for a in p.arguments.iter().flatten() {
            let mark = if a.required == Some(true) { "*" } else { "" };
            let mut text = format!("  --arg {}{mark}", a.name);
            if let Some(d) = &a.description {
                text.push_str(&format!(" — {d}"));
            }
            rows.push((String::new(), text));
        }
    }
    table(&rows);
}

/// The resources and resource templates.
pub fn resources(list: &[Resource], templates: &[ResourceTemplate], format: Format) {
    if format == Format::Json {
        output::json(&json!({ "resources": list, "resourceTemplates": templates }));
        return;
    }
    if list.is_empty() && templates.is_empty() {
        line(false, "(no resources)");
        return;
    }
    let mut rows = Vec::new();
    for r in list {
        let mut about = r.title.clone().unwrap_or_else(|| r.name.clone());
        if let Some(m) = &r.mime_type {
            about.push_str(&format!(" ({m})"));
        }
        if let Some(d) = &r.description {
            about.push_str(&format!(" — {}", first_line(Some(d))));
        }
        rows.push((r.uri.clone(), about));
    }
    for t in templates {
        let mut about = format!("template: {}", t.title.as_deref().unwrap_or(&t.name));
        if let Some(m) = &t.mime_type {
            about.push_str(&format!(" ({m})"));
        }
        if let Some(d) = &t.description {
            about.push_str(&format!(" — {}", first_line(Some(d))));
        }
        rows.push((t.uri_template.clone(), about));
    }
    table(&rows);
}

/// A resource's contents: text printed, binary data saved to files.
pub fn read_result(
    uri: &str,
    result: &ReadResourceResult,
    dir: &Path,
    format: Format,
) -> Result<(), Failure> {
    let mut saved = Vec::new();
    let mut lines = Vec::new();
    for (index, contents) in result.contents.iter().enumerate() {
        match contents {
            ResourceContents::Blob(b) => {
                let mime = b.mime_type.as_deref().unwrap_or("application/octet-stream");
                let file = save(dir, uri, index, mime, &b.blob)?;
                lines.push(format!(
                    "[resource {} ({mime})] saved to {}",
                    b.uri,
                    file.path.display()
                ));
                saved.push(file);
            }
            // One resource read: its text alone, without a header.
            ResourceContents::Text(t) if result.contents.len() == 1 => lines.push(t.text.clone()),
            other => lines.extend(resource_lines(other)),
        }
    }
    match format {
        Format::Json => output::json(&json!({ "result": result, "savedFiles": saved })),
        Format::Text => lines.iter().for_each(|l| line(false, l)),
    }
    Ok(())
}

/// A prompt's messages, one `[role]` header each; media is saved (named from the prompt and
/// the message's index).
pub fn prompt_result(
    name: &str,
    result: &GetPromptResult,
    dir: &Path,
    format: Format,
) -> Result<(), Failure> {
    let mut lines = Vec::new();
    let mut saved = Vec::new();
    if let Some(d) = &result.description {
        lines.push(d.clone());
        lines.push(String::new());
    }
    for (i, message) in result.messages.iter().enumerate() {
        let role = serde_json::to_value(message.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "message".into());
        lines.push(format!("[{role}]"));
        let (more, file) = render_block(&message.content, i, name, dir, None)?;
        lines.extend(more);
        saved.extend(file);
    }
    match format {
        Format::Json => output::json(&json!({ "result": result, "savedFiles": saved })),
        Format::Text => lines.iter().for_each(|l| line(false, l)),
    }
    Ok(())
}

/// `a, b, c`, or `none`.
fn listing<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Finds a prompt by name, or says which exist (and which was likely meant).
pub fn find_prompt<'a>(list: &'a [Prompt], name: &str) -> Result<&'a Prompt, Failure> {
    list.iter().find(|p| p.name == name).ok_or_else(|| {
        let names = || list.iter().map(|p| p.name.as_str());
        Failure::usage(format!(
            "the server has no prompt {name:?}{}; it has: {}",
            crate::suggest::hint(name, names()),
            listing(names())
        ))
    })
}

/// Builds a prompt's string arguments from `--arg` pairs, checking their names (an unknown
/// one is refused, with the closest name when one is near), that none is given twice, and
/// that the required ones are there.
pub fn prompt_arguments(
    prompt: &Prompt,
    pairs: &[String],
) -> Result<BTreeMap<String, String>, Failure> {
    let names = || prompt.arguments.iter().flatten().map(|a| a.name.as_str());
    let mut out = BTreeMap::new();
    for pair in pairs {
        let (k, v) = crate::args::split_pair(pair, "--arg").map_err(Failure::usage)?;
        if !names().any(|n| n == k) {
            return Err(Failure::usage(format!(
                "--arg {k}: the prompt {:?} has no argument {k:?}{}; it takes: {}",
                prompt.name,
                crate::suggest::hint(k, names()),
                listing(names())
            )));
        }
        if out.insert(k.to_owned(), v.to_owned()).is_some() {
            return Err(Failure::usage(format!(
                "--arg {k} is given twice; give each argument once"
            )));
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !out.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "missing required prompt argument{}: {} (pass --arg NAME=VALUE)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )));
    }
    Ok(out)
}

/// Finds a tool by name, or says which exist (and which was likely meant).
pub fn find_tool<'a>(list: &'a [Tool], name: &str) -> Result<&'a Tool, Failure> {
    list.iter().find(|t| t.name == name).ok_or_else(|| {
        let names = || list.iter().map(|t| t.name.as_str());
        Failure::new(
            Exit::Usage,
            format!(
                "the server has no tool {name:?}{}; it has: {}",
                crate::suggest::hint(name, names()),
                listing(names())
            ),
        )
    })
}

/// The server's resources and resource templates; none when it declares no resources
/// (asking would be an error).
pub async fn list_resources(
    client: &Client,
) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), Failure> {
    let caps = client.server_capabilities();
    if caps.as_ref().is_some_and(|c| c.resources.is_none()) {
        return Ok((Vec::new(), Vec::new()));
    }
    let resources = client
        .list_resources()
        .await
        .map_err(|e| Failure::from_client(&e, "resources/list"))?;
    let templates = client
        .list_resource_templates()
        .await
        .map_err(|e| Failure::from_client(&e, "resources/templates/list"))?;
    Ok((resources, templates))
}

/// After a read of `uri` failed: the URI of a listed resource close to it, if one is. A
/// failure to list is no answer, not an error (the read's own error is the one to show).
pub async fn closest_resource(client: &Client, uri: &str) -> Option<String> {
    let (resources, _) = list_resources(client).await.ok()?;
    if resources.iter().any(|r| r.uri == uri) {
        return None;
    }
    crate::suggest::closest(uri, resources.iter().map(|r| r.uri.as_str())).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn a_mistyped_tool_or_prompt_gets_a_suggestion() {
        let tools = [tool("provision"), tool("slow_count"), tool("invite")];
        let e = find_tool(&tools, "provison").unwrap_err();
        assert_eq!(e.exit, Exit::Usage);
        assert_eq!(
            e.message,
            "the server has no tool \"provison\" (did you mean \"provision\"?); it has: \
             provision, slow_count, invite"
        );
        let e = find_tool(&tools, "deploy").unwrap_err();
        assert!(
            e.message
                .starts_with("the server has no tool \"deploy\"; it has:"),
            "{}",
            e.message
        );
        assert!(
            find_tool(&[], "x")
                .unwrap_err()
                .message
                .ends_with("it has: none")
        );

        let prompt: Prompt = serde_json::from_value(json!({"name": "briefing", "arguments": [
            {"name": "topic", "required": true}, {"name": "audience"}]}))
        .unwrap();
        let prompts = [prompt.clone()];
        let e = find_prompt(&prompts, "breifing").unwrap_err();
        assert!(
            e.message.contains("(did you mean \"briefing\"?)"),
            "{}",
            e.message
        );
        let pairs = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = prompt_arguments(&prompt, &pairs(&["tpoic=x"])).unwrap_err();
        assert_eq!(
            e.message,
            "--arg tpoic: the prompt \"briefing\" has no argument \"tpoic\" (did you mean \
             \"topic\"?); it takes: topic, audience"
        );
        let e = prompt_arguments(&prompt, &pairs(&["topic=a", "topic=b"])).unwrap_err();
        assert!(
            e.message.starts_with("--arg topic is given twice"),
            "{}",
            e.message
        );
        let ok = prompt_arguments(&prompt, &pairs(&["topic=a", "audience=b"])).unwrap();
        assert_eq!(ok.len(), 2);
    }
}
