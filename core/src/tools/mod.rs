//! The model's tools: their names in advertised order, which a loop offers, their handlers and views, and their model-facing docs.
//!
//! One folder per tool holds its handler, its views and its doc (`doc.md`,
//! or `<tool>.md` where two tools share a handler). Inside the docs, HTML
//! comments hold the rationale for the next line; they are stripped before
//! the model sees the text. Shared machinery: [`handler`] (the outcome a
//! handler returns, store look-ups), [`policy`] (mode and flag refusals,
//! target validation), [`messages`] (shared model-facing texts).

pub mod ask_user;
pub mod context;
pub mod cp;
pub mod env;
pub mod get;
pub mod handler;
pub mod messages;
pub mod mv;
pub mod policy;
pub mod rm;
pub mod search;
pub mod set;
pub mod sh;
pub mod think;
pub mod update;

#[cfg(test)]
mod tests;

use crate::parse::ToolCall;
use crate::run::Mode;
use crate::store::StoreError;
use context::LoopFlags;
use handler::{Handler, Outcome};
use std::sync::LazyLock;

/// Every tool name the parser recognises, in the order tools are advertised (gather → reason → act → communicate).
pub const TOOL_ORDER: &[&str] = &[
    "get", "search", "env", "think", "set", "cp", "mv", "rm", "sh", "update", "ask_user",
];

/// Lifecycle tools: always applied, never aborted by an earlier failure.
pub const LIFECYCLE: &[&str] = &["update", "think"];

const PREAMBLE: &str = include_str!("preamble.md");

/// The model-facing doc of a tool, rationale comments included.
pub fn doc(tool: &str) -> Option<&'static str> {
    match tool {
        "get" => Some(get::DOC),
        "search" => Some(search::DOC),
        "env" => Some(env::DOC),
        "think" => Some(think::DOC),
        "set" => Some(set::DOC),
        "cp" => Some(cp::DOC),
        "mv" => Some(mv::DOC),
        "rm" => Some(rm::DOC),
        "sh" => Some(sh::DOC),
        "update" => Some(update::DOC),
        "ask_user" => Some(ask_user::DOC),
        _ => None,
    }
}

/// The tools offered to a loop, in advertised order: mode and flags remove
/// tools (see [`policy::tool_refusal`]), and `search` needs a backend.
pub fn active_tools(mode: Mode, flags: LoopFlags, search_enabled: bool) -> Vec<&'static str> {
    TOOL_ORDER
        .iter()
        .copied()
        .filter(|t| policy::tool_refusal(mode, flags, search_enabled, t).is_none())
        .collect()
}

/// Runs the handler of a command that passed dispatch's checks.
pub fn handle(h: &mut Handler<'_>, call: &ToolCall) -> Result<Outcome, StoreError> {
    match call.name.as_str() {
        "get" => get::run(h, call),
        "set" => set::run(h, call),
        "rm" => rm::run(h, call),
        "cp" => cp::run(h, call, cp::Kind::Cp),
        "mv" => cp::run(h, call, cp::Kind::Mv),
        "sh" | "env" => sh::run(h, call),
        "ask_user" => ask_user::run(h, call),
        "search" => search::run(h, call),
        tool => Ok(Outcome::failed(
            &handler::target_of(call),
            "501",
            messages::not_a_tool(tool),
        )),
    }
}

/// Removes `<!-- … -->` rationale comments; a line that held only a comment disappears.
pub fn strip_rationale(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_comment = false;
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        let mut had_comment = in_comment;
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else if let Some(start) = rest.find("<!--") {
                kept.push_str(&rest[..start]);
                rest = &rest[start + 4..];
                in_comment = true;
                had_comment = true;
            } else {
                kept.push_str(rest);
                break;
            }
        }
        if !(had_comment && kept.trim().is_empty()) {
            out.push(kept);
        }
    }
    out.join("\n").trim().to_owned()
}

/// Every tool's doc in advertised order with its rationale stripped, stripped once: the
/// instructions are built for every turn.
static STRIPPED_DOCS: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    TOOL_ORDER
        .iter()
        .filter_map(|tool| doc(tool).map(|d| (*tool, strip_rationale(d))))
        .collect()
});

/// The preamble with its rationale stripped.
static STRIPPED_PREAMBLE: LazyLock<String> = LazyLock::new(|| strip_rationale(PREAMBLE));

/// The instructions that open the system message: preamble, tool list and the docs of the active tools in advertised order.
pub fn instructions(tools: &[&str], max_commands: usize, persona: Option<&str>) -> String {
    let ordered: Vec<&str> = TOOL_ORDER
        .iter()
        .copied()
        .filter(|t| tools.contains(t))
        .collect();
    let docs: Vec<&str> = STRIPPED_DOCS
        .iter()
        .filter(|(tool, _)| ordered.contains(tool))
        .map(|(_, doc)| doc.as_str())
        .collect();
    let mut text = STRIPPED_PREAMBLE
        .replace("[%MAX%]", &max_commands.to_string())
        .replace("[%TOOLS%]", &ordered.join(", "))
        .replace("[%TOOLDOCS%]", &docs.join("\n\n"));
    if let Some(persona) = persona.map(str::trim).filter(|p| !p.is_empty()) {
        text.push_str("\n\n## Persona\n\n");
        text.push_str(persona);
    }
    text
}
