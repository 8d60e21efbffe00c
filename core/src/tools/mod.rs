//! The model's tools: their names in advertised order, which a loop offers, their handlers and views, and their model-facing docs.
//!
//! One folder per tool holds its handler, its views and its doc (`doc.md`,
//! or `<tool>.md` where two tools share a handler). Inside the docs, HTML
//! comments hold the rationale for the next line; they are stripped before
//! the model sees the text. Shared machinery: [`handler`] (the result a
//! handler returns, store look-ups), [`policy`] (mode and flag refusals,
//! target validation), [`wording`] (shared model-facing texts).

pub mod ask_user;
pub mod call;
pub mod context;
pub mod cp;
pub mod env;
pub mod get;
pub mod handler;
pub mod mv;
pub mod policy;
pub mod proposal;
pub mod rm;
pub mod search;
pub mod set;
pub mod sh;
pub mod think;
pub mod update;
pub mod wording;

#[cfg(test)]
mod tests;

pub use rummy_text::parse::ToolName;

use context::LoopFlags;
use handler::{Handler, ToolResult};
use rummy_store::entries::ViewRow;
use rummy_store::run::Mode;
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;
pub use sh::CommandReach;
use std::sync::LazyLock;

/// Every tool, in the order tools are advertised (gather → reason → act → communicate).
pub const TOOL_ORDER: [ToolName; 12] = ToolName::ALL;

/// Lifecycle tools: always applied, never aborted by an earlier failure.
pub const LIFECYCLE: [ToolName; 2] = [ToolName::Update, ToolName::Think];

const PREAMBLE: &str = include_str!("preamble.md");

/// The model-facing doc of a tool, rationale comments included.
pub fn doc(tool: ToolName) -> &'static str {
    match tool {
        ToolName::Get => get::DOC,
        ToolName::Search => search::DOC,
        ToolName::Env => env::DOC,
        ToolName::Think => think::DOC,
        ToolName::Set => set::DOC,
        ToolName::Cp => cp::DOC,
        ToolName::Mv => mv::DOC,
        ToolName::Rm => rm::DOC,
        ToolName::Sh => sh::DOC,
        ToolName::Update => update::DOC,
        ToolName::AskUser => ask_user::DOC,
        ToolName::Call => call::DOC,
    }
}

/// The tools offered to a loop, in advertised order: mode and flags remove
/// tools (see [`policy::tool_refusal`]), and `search` needs a backend.
pub fn active_tools(mode: Mode, flags: LoopFlags, search_enabled: bool) -> Vec<ToolName> {
    TOOL_ORDER
        .into_iter()
        .filter(|&t| policy::tool_refusal(mode, flags, search_enabled, t).is_none())
        .collect()
}

/// Runs the handler of a command that passed dispatch's checks. The lifecycle tools' outcomes
/// are what dispatch records of them (`think` is never recorded).
pub fn handle(h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    match call.name {
        ToolName::Get => get::run(h, call),
        ToolName::Set => set::run(h, call),
        ToolName::Rm => rm::run(h, call),
        ToolName::Cp => cp::run(h, call, cp::Kind::Cp),
        ToolName::Mv => cp::run(h, call, cp::Kind::Mv),
        ToolName::Sh | ToolName::Env => sh::run(h, call),
        ToolName::AskUser => ask_user::run(h, call),
        ToolName::Call => call::run(h, call),
        ToolName::Search => search::run(h, call),
        ToolName::Update => Ok(update::outcome(&update::UpdateSignal::of(call))),
        ToolName::Think => Ok(ToolResult::resolved("", call.body.trim())),
    }
}

/// What the model sees of a tool's result entry, visible or summarized (`turn::views` has the
/// table of every scheme).
pub fn view(tool: ToolName, row: &ViewRow, visible: bool) -> String {
    match tool {
        ToolName::Update => update::view(row),
        ToolName::Set if visible => set::visible(row),
        ToolName::AskUser if visible => ask_user::visible(row),
        ToolName::AskUser => ask_user::summarized(row),
        ToolName::Get
        | ToolName::Search
        | ToolName::Env
        | ToolName::Think
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Sh
        | ToolName::Call => {
            if visible {
                row.body.clone()
            } else {
                String::new()
            }
        }
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
static STRIPPED_DOCS: LazyLock<Vec<(ToolName, String)>> = LazyLock::new(|| {
    TOOL_ORDER
        .into_iter()
        .map(|tool| (tool, strip_rationale(doc(tool))))
        .collect()
});

/// The preamble with its rationale stripped.
static STRIPPED_PREAMBLE: LazyLock<String> = LazyLock::new(|| strip_rationale(PREAMBLE));

/// The instructions that open the system message: preamble, tool list and the docs of the
/// active tools in advertised order, `sh`'s and `env`'s saying where their commands run and
/// what they reach (`reach`), `call`'s listing the tools clients offer the run (`offered`).
pub fn instructions(
    tools: &[ToolName],
    max_commands: usize,
    persona: Option<&str>,
    reach: &CommandReach,
    offered: &[rummy_protocol::params::OfferedTool],
) -> String {
    let ordered: Vec<ToolName> = TOOL_ORDER
        .into_iter()
        .filter(|t| tools.contains(t))
        .collect();
    let names: Vec<&str> = ordered.iter().map(|t| t.as_str()).collect();
    let docs: Vec<String> = STRIPPED_DOCS
        .iter()
        .filter(|(tool, _)| ordered.contains(tool))
        .map(|(tool, doc)| match tool {
            ToolName::Sh | ToolName::Env => reach.fill(doc),
            ToolName::Call => doc.replace("[%OFFERED%]", &call::listing(offered)),
            _ => doc.clone(),
        })
        .collect();
    let mut text = STRIPPED_PREAMBLE
        .replace("[%MAX%]", &max_commands.to_string())
        .replace("[%TOOLS%]", &names.join(", "))
        .replace("[%TOOLDOCS%]", &docs.join("\n\n"));
    if let Some(persona) = persona.map(str::trim).filter(|p| !p.is_empty()) {
        text.push_str("\n\n## Persona\n\n");
        text.push_str(persona);
    }
    text
}
