//! `sh` and `env`: a shell command proposed to the user; once accepted, it runs (on the server in the project root, or on the accepting client with `RUMMY_COMMAND_RUNNER=client`) and its output streams into `<path>_1` and `<path>_2`.
//!
//! Views: the result body when visible, nothing when summarized.

use super::handler::{attr, body, Handler, Outcome};
use super::proposal::ProposalKind;
use crate::parse::{ToolCall, ToolName};
use crate::store::StoreError;

/// The model-facing doc of `sh`.
pub const DOC: &str = include_str!("doc.md");

/// A shell command without a command.
pub const COMMAND_REQUIRED: &str = "command is required: <sh>command</sh> or command=\"…\"";

/// Runs `sh` or `env`: a proposal carrying the command and who will run it once accepted
/// (`runner`: `server` or `client`); its body stays empty until output arrives.
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<Outcome, StoreError> {
    let Some(command) = attr(call, "command").or_else(|| body(call)) else {
        return Ok(Outcome::failed("", "validation", COMMAND_REQUIRED));
    };
    let command_text = command.to_owned();
    let kind = if call.name == ToolName::Env {
        ProposalKind::Env {
            command: command_text,
        }
    } else {
        ProposalKind::Sh {
            command: command_text,
        }
    };
    Ok(Outcome::proposed(command, "", &kind)
        .with("summary", command)
        .with("runner", h.ctx.runner.as_str()))
}
