//! Which tools a loop may use, and which commands are refused before they run: one mechanism for the tool list and for dispatch.
//!
//! Mode, flags and the run's active skills (`allowedTools`) all remove tools from the
//! advertised list ([`super::active_tools`]) and refuse them here, so a model that uses a
//! tool it was not offered reads why. Ask mode also refuses the file-changing
//! forms of tools it keeps (`set`, `rm`, `cp`, `mv` still work on scheme
//! entries such as `known://`).

use super::context::{DispatchCtx, LoopFlags};
use super::handler::{attr, body, path_and_filter};
use super::wording;
use rummy_store::entry::FailureKind;
use rummy_store::run::Mode;
use rummy_text::parse::{ToolCall, ToolName};
use rummy_text::path::scheme_of;

/// Longest target (path, command, question) a command may have.
pub const MAX_TARGET_CHARS: usize = 512;

/// A refused command: its outcome and the reason the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `permission` (403) or `501`.
    pub outcome: FailureKind,
    /// The visible reason.
    pub reason: String,
}

fn refused(outcome: FailureKind, reason: impl Into<String>) -> Option<Refused> {
    Some(Refused {
        outcome,
        reason: reason.into(),
    })
}

/// Why `tool` is not offered in this loop, if it is not.
pub fn tool_refusal(
    mode: Mode,
    flags: LoopFlags,
    search_enabled: bool,
    tool: ToolName,
) -> Option<Refused> {
    match tool {
        ToolName::Search if flags.no_web => refused(FailureKind::Permission, wording::NO_WEB),
        ToolName::Search if !search_enabled => refused(
            FailureKind::Status { code: 501 },
            wording::SEARCH_NOT_CONFIGURED,
        ),
        ToolName::AskUser if flags.no_interaction => {
            refused(FailureKind::Permission, wording::NO_INTERACTION)
        }
        ToolName::AskUser | ToolName::Env | ToolName::Sh | ToolName::Call if flags.no_proposals => {
            refused(
                FailureKind::Permission,
                wording::no_proposals(tool.as_str()),
            )
        }
        ToolName::Sh if mode == Mode::Ask => refused(FailureKind::Permission, wording::ASK_SH),
        ToolName::Call if mode == Mode::Ask => refused(FailureKind::Permission, wording::ASK_CALL),
        ToolName::Call if !flags.client_tools => {
            refused(FailureKind::Status { code: 501 }, wording::NO_CLIENT_TOOLS)
        }
        _ if !flags.skill_tools.allows(tool) => refused(
            FailureKind::Permission,
            wording::not_allowed_by_skills(tool.as_str(), &flags.skill_tools.names()),
        ),
        ToolName::Get
        | ToolName::Search
        | ToolName::Env
        | ToolName::Think
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Sh
        | ToolName::Update
        | ToolName::AskUser
        | ToolName::Call => None,
    }
}

/// Why this command may not run in this loop, if it may not.
pub fn refusal(ctx: &DispatchCtx, call: &ToolCall) -> Option<Refused> {
    let tool = call.name;
    if let Some(refused) = tool_refusal(ctx.mode, ctx.flags, ctx.search_enabled, tool) {
        return Some(refused);
    }
    if ctx.mode != Mode::Ask {
        return None;
    }
    let bare = |p: &str| scheme_of(p).is_none();
    match tool {
        ToolName::Set => {
            let path = attr(call, "path")?;
            let writes = body(call).is_some()
                || attr(call, "body").is_some()
                || call.attr("search").is_some();
            (bare(path) && writes).then(|| Refused {
                outcome: FailureKind::Permission,
                reason: wording::ask_file_edit(path),
            })
        }
        ToolName::Rm => {
            let path = path_and_filter(call).0?;
            bare(path).then(|| Refused {
                outcome: FailureKind::Permission,
                reason: wording::ask_file_rm(path),
            })
        }
        ToolName::Cp | ToolName::Mv => {
            let to = attr(call, "to").or_else(|| body(call))?;
            if bare(to) {
                return refused(
                    FailureKind::Permission,
                    wording::ask_copy_to_file(tool.as_str(), to),
                );
            }
            let from = attr(call, "path")?;
            (tool == ToolName::Mv && bare(from)).then(|| Refused {
                outcome: FailureKind::Permission,
                reason: wording::ask_file_mv(from),
            })
        }
        ToolName::Get
        | ToolName::Search
        | ToolName::Env
        | ToolName::Think
        | ToolName::Sh
        | ToolName::Update
        | ToolName::AskUser
        | ToolName::Call => None,
    }
}

/// Whether a target is unusable: longer than [`MAX_TARGET_CHARS`], or holding
/// control characters (commands may span lines: scripts and heredocs do).
fn unusable(text: &str, multi_line: bool) -> bool {
    text.chars().count() > MAX_TARGET_CHARS
        || text
            .chars()
            .any(|c| c.is_control() && !(multi_line && matches!(c, '\n' | '\r' | '\t')))
}

/// Whether the command's path, destination, command or question is unusable; such a command is not run.
pub fn invalid_target(call: &ToolCall) -> bool {
    let strict = ["path", "to", "question", "query", "server", "tool"]
        .iter()
        .filter_map(|name| call.attr(name))
        .any(|v| unusable(v.trim(), false));
    let command = match call.name {
        ToolName::Sh | ToolName::Env => attr(call, "command")
            .or_else(|| body(call))
            .is_some_and(|c| unusable(c, true)),
        ToolName::Get
        | ToolName::Search
        | ToolName::Think
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Update
        | ToolName::AskUser
        | ToolName::Call => false,
    };
    let body_target = match call.name {
        ToolName::Get | ToolName::Rm if call.attr("path").is_none() => body(call),
        ToolName::Search if call.attr("path").is_none() && call.attr("query").is_none() => {
            body(call)
        }
        ToolName::Cp | ToolName::Mv if call.attr("to").is_none() => body(call),
        ToolName::Get
        | ToolName::Search
        | ToolName::Env
        | ToolName::Think
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Sh
        | ToolName::Update
        | ToolName::AskUser
        | ToolName::Call => None,
    };
    strict || command || body_target.is_some_and(|b| unusable(b, false))
}
