//! `sh` and `env`: a shell command proposed to the user; once accepted, it runs (on the server in the project root, or on the accepting client with `RUMMY_COMMAND_RUNNER=client`) and its output streams into `<path>_1` and `<path>_2`.
//!
//! Views: the result body when visible, nothing when summarized.

use super::handler::{attr, body, Handler, ToolResult};
use super::proposal::Proposed;
use rummy_store::entry::FailureKind;
use rummy_store::StoreError;
use rummy_text::parse::{ToolCall, ToolName};

/// The model-facing doc of `sh`.
pub const DOC: &str = include_str!("doc.md");

/// What the `sh`/`env` docs say of a loop's commands with network off.
const NO_NETWORK: &str = "no network";

/// Where a loop's accepted `sh`/`env` run and what they reach, as their docs tell the model
/// (the line holding `[%NETWORK%]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CommandReach {
    /// Nothing confines them: the accepting client runs them (`RUMMY_COMMAND_RUNNER=client`),
    /// or the server runs them unconfined (`RUMMY_UNSANDBOXED_COMMANDS=1` where a layer is
    /// missing); the docs say nothing of a confinement that is not applied.
    Unconfined,
    /// The server's sandbox, without network.
    #[default]
    Offline,
    /// The server's sandbox, with TCP to these ports only.
    Online(Vec<u16>),
}

impl CommandReach {
    /// The server's sandbox, with network (to `ports`) or without: the project's
    /// `commandNetwork`, else `RUMMY_COMMAND_NETWORK`.
    pub fn sandboxed(network: bool, ports: &[u16]) -> CommandReach {
        if network {
            CommandReach::Online(ports.to_vec())
        } else {
            CommandReach::Offline
        }
    }

    /// A tool doc with its `[%NETWORK%]` line filled in, or dropped where the client runs
    /// commands.
    pub fn fill(&self, doc: &str) -> String {
        let network = match self {
            CommandReach::Unconfined => {
                let kept: Vec<&str> = doc.lines().filter(|l| !l.contains("[%NETWORK%]")).collect();
                return kept.join("\n");
            }
            CommandReach::Offline => NO_NETWORK.to_owned(),
            CommandReach::Online(ports) => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                format!("network only by TCP to ports {}", ports.join(", "))
            }
        };
        doc.replace("[%NETWORK%]", &network)
    }
}

/// A shell command without a command.
pub const COMMAND_REQUIRED: &str = "command is required: <sh>command</sh> or command=\"…\"";

/// Runs `sh` or `env`: a proposal carrying the command and who will run it once accepted
/// (`runner`: `server` or `client`); its body stays empty until output arrives.
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let Some(command) = attr(call, "command").or_else(|| body(call)) else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            COMMAND_REQUIRED,
        ));
    };
    let command_text = command.to_owned();
    let kind = if call.name == ToolName::Env {
        Proposed::Env {
            command: command_text,
        }
    } else {
        Proposed::Sh {
            command: command_text,
        }
    };
    Ok(ToolResult::proposed(command, "", &kind)
        .with("summary", command)
        .with("runner", h.ctx.runner.as_str()))
}
