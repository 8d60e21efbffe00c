//! `call`: a call of a tool a client offered the run (an editor's MCP server's), proposed to the user; once accepted, the offering client calls it and its answer streams into `<path>_1`.
//!
//! Arguments that are not a JSON object, or lack a field the tool's schema requires, and a
//! tool no client offers are errors the model reads, never proposals. Views: the result body
//! when visible, nothing when summarized.

use super::handler::{attr, body, Handler, ToolResult, SUMMARY_CHARS};
use super::proposal::Proposed;
use rummy_protocol::params::OfferedTool;
use rummy_store::entry::FailureKind;
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;
use serde_json::{Map, Value};

/// The model-facing doc; its `[%OFFERED%]` line becomes the list of offered tools.
pub const DOC: &str = include_str!("doc.md");

/// Characters of a tool's description the model reads.
pub const DESCRIPTION_CHARS: usize = 400;

/// Bytes of a tool's argument schema the model reads; a longer one is shown as its
/// properties' names.
pub const SCHEMA_BYTES: usize = 1_000;

/// Bytes of the whole list of offered tools the model reads; the tools past it are named only.
pub const LIST_BYTES: usize = 12_000;

/// A `call` without its server or tool.
pub const TOOL_REQUIRED: &str =
    "server and tool are required: <call server=\"…\" tool=\"…\">{…}</call>";

/// The name the model reads and a call's target: `server/tool`.
pub fn qualified(server: &str, tool: &str) -> String {
    format!("{server}/{tool}")
}

/// The offered tool a call names, if a client offers it.
fn offered<'o>(offers: &'o [OfferedTool], server: &str, tool: &str) -> Option<&'o OfferedTool> {
    offers.iter().find(|t| t.server == server && t.name == tool)
}

/// The fields `schema` requires (`required`, an array of names).
fn required(schema: Option<&Value>) -> Vec<&str> {
    schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The arguments a call's body holds: one JSON object (an empty body is `{}`), or why not.
pub fn arguments(body: &str) -> Result<Map<String, Value>, String> {
    let body = body.trim();
    if body.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(_) => Err("the arguments must be one JSON object ({…}), not another JSON value".into()),
        Err(e) => Err(format!("the arguments are not JSON ({e})")),
    }
}

/// Runs `call`: checks the tool is offered and its arguments, then proposes the call, which the
/// offering client makes once a person accepts it (`runner: "client"`).
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let (Some(server), Some(tool)) = (attr(call, "server"), attr(call, "tool")) else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            TOOL_REQUIRED,
        ));
    };
    let name = qualified(server, tool);
    let Some(offer) = offered(&h.ctx.client_tools, server, tool) else {
        let known: Vec<String> = h
            .ctx
            .client_tools
            .iter()
            .map(|t| qualified(&t.server, &t.name))
            .collect();
        let reason = format!(
            "no client offers the tool {name}; the offered tools are: {}",
            known.join(", ")
        );
        return Ok(ToolResult::failed(&name, FailureKind::NotFound, reason));
    };
    let arguments = match arguments(body(call).unwrap_or("")) {
        Ok(arguments) => arguments,
        Err(why) => {
            let reason = format!("{name} was not called: {why}");
            return Ok(ToolResult::failed(&name, FailureKind::Validation, reason));
        }
    };
    let missing: Vec<&str> = required(offer.input_schema.as_ref())
        .into_iter()
        .filter(|field| !arguments.contains_key(*field))
        .collect();
    if !missing.is_empty() {
        let reason = format!(
            "{name} was not called: its arguments lack the required {}",
            missing.join(", ")
        );
        return Ok(ToolResult::failed(&name, FailureKind::Validation, reason));
    }
    let summary: String = format!("{name} {}", Value::Object(arguments.clone()))
        .chars()
        .take(SUMMARY_CHARS)
        .collect();
    let kind = Proposed::Call {
        server: server.to_owned(),
        tool: tool.to_owned(),
        arguments,
    };
    Ok(ToolResult::proposed(&name, "", &kind)
        .with("summary", summary)
        .with("runner", "client"))
}

/// The list of offered tools the doc shows: `- server/tool: description` and the arguments'
/// schema, each part capped, the whole list within [`LIST_BYTES`] (the tools past it named
/// only, so the model knows they exist).
pub fn listing(offers: &[OfferedTool]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0;
    let mut unlisted: Vec<String> = Vec::new();
    for tool in offers {
        let name = qualified(&tool.server, &tool.name);
        let line = describe(&name, tool);
        if used + line.len() > LIST_BYTES {
            unlisted.push(name);
            continue;
        }
        used += line.len() + 1;
        lines.push(line);
    }
    if !unlisted.is_empty() {
        lines.push(format!(
            "- (not described: the list is full) {}",
            unlisted.join(", ")
        ));
    }
    lines.join("\n")
}

/// One offered tool as the doc lists it.
fn describe(name: &str, tool: &OfferedTool) -> String {
    let description: String = tool
        .description
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut short: String = description.chars().take(DESCRIPTION_CHARS).collect();
    if short.len() < description.len() {
        short.push('…');
    }
    let schema = match &tool.input_schema {
        None => "{}".to_owned(),
        Some(schema) => {
            let text = schema.to_string();
            if text.len() <= SCHEMA_BYTES {
                text
            } else {
                let properties: Vec<&str> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                format!(
                    "(schema too long to show) properties: {}; required: {}",
                    properties.join(", "),
                    required(Some(schema)).join(", ")
                )
            }
        }
    };
    if short.is_empty() {
        format!("- {name}: arguments {schema}")
    } else {
        format!("- {name}: {short} Arguments: {schema}")
    }
}
