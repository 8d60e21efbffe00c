//! The tools a client offers a run (`tools/offer`) and its answers to their calls
//! (`tool/result`): an editor's MCP servers run on the editor's machine, started by its client,
//! never by the server; the model calls their tools through proposals that a person accepts.

use crate::errors::Error;
use crate::services::client_tools::NotYours;
use crate::session::call::Call;
use crate::tool_calls;
use rummy_core::wire::params::{OfferedTool, ToolResultParams, ToolsOfferParams};
use rummy_core::wire::results::{ChannelsAck, Done};
use rummy_core::wire::{ErrorKind, RpcError};
use serde_json::Value;

/// Most tools one offer holds.
pub const MAX_OFFERED: usize = 128;

/// Longest server or tool name.
pub const MAX_NAME_CHARS: usize = 64;

/// Most characters of a tool's description kept (the model reads fewer).
pub const MAX_DESCRIPTION_CHARS: usize = 4_000;

/// Most bytes of a tool's argument schema.
pub const MAX_SCHEMA_BYTES: usize = 16_384;

fn invalid(message: String) -> Error {
    Error::Rpc(RpcError::new(ErrorKind::InvalidParams, message))
}

/// A server or tool name: 1 to [`MAX_NAME_CHARS`] letters, digits, `_`, `-` and `.` — what a
/// tag attribute holds without escaping, and what the model can spell back.
fn check_name(what: &str, name: &str) -> Result<(), Error> {
    let fits = (1..=MAX_NAME_CHARS).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if fits {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what} \"{name}\" is not a name: 1 to {MAX_NAME_CHARS} letters, digits, '_', '-' or '.'"
        )))
    }
}

/// One offered tool, checked: names, schema an object within bounds, description cut.
fn checked(mut tool: OfferedTool) -> Result<OfferedTool, Error> {
    check_name("server", &tool.server)?;
    check_name("tool", &tool.name)?;
    let name = format!("{}/{}", tool.server, tool.name);
    if let Some(schema) = &tool.input_schema {
        if !matches!(schema, Value::Object(_)) {
            return Err(invalid(format!(
                "the inputSchema of {name} is not a JSON Schema object"
            )));
        }
        let bytes = schema.to_string().len();
        if bytes > MAX_SCHEMA_BYTES {
            return Err(invalid(format!(
                "the inputSchema of {name} has {bytes} bytes; at most {MAX_SCHEMA_BYTES}"
            )));
        }
    }
    tool.description = tool
        .description
        .map(|d| d.chars().take(MAX_DESCRIPTION_CHARS).collect());
    Ok(tool)
}

/// `tools/offer`: this connection offers run `run` (which need not exist yet) these tools,
/// replacing its earlier offer for that run; none withdraws it. Nothing is kept of an offer
/// with one bad tool.
pub async fn tools_offer(call: Call, p: ToolsOfferParams) -> Result<Done, Error> {
    let project_id = call.project()?.project_id;
    if p.run.trim().is_empty() {
        return Err(invalid("run is required".to_owned()));
    }
    if p.tools.len() > MAX_OFFERED {
        return Err(invalid(format!(
            "{} tools offered; at most {MAX_OFFERED}",
            p.tools.len()
        )));
    }
    let mut tools: Vec<OfferedTool> = Vec::with_capacity(p.tools.len());
    for tool in p.tools {
        let tool = checked(tool)?;
        if tools
            .iter()
            .any(|t| t.server == tool.server && t.name == tool.name)
        {
            return Err(invalid(format!(
                "{}/{} is offered twice",
                tool.server, tool.name
            )));
        }
        tools.push(tool);
    }
    tracing::info!(run = %p.run, tools = tools.len(), session = call.session, "client tools offered");
    call.svc()
        .client_tools
        .offer(call.session, project_id, &p.run, tools);
    Ok(Done::OK)
}

/// `tool/result`: this connection answers a call it was sent (`tool/call`); the answer fills
/// the call's channel and the turn goes on. Any other connection is refused.
pub async fn tool_result(call: Call, p: ToolResultParams) -> Result<ChannelsAck, Error> {
    let run = call.run(&p.run).await?;
    let rr = run.run_ref();
    match call.svc().client_tools.answer(call.session, rr.run_id, &p.path) {
        Ok(_) => {}
        Err(NotYours::NotWaiting) => {
            return Err(Error::Rpc(RpcError::new(
                ErrorKind::Conflict,
                format!(
                    "no call at {} waits for an answer (answered already, cancelled, or never sent)",
                    p.path
                ),
            )))
        }
        Err(NotYours::Elsewhere) => {
            return Err(Error::Rpc(RpcError::new(
                ErrorKind::Permission,
                format!(
                    "permission denied: the call at {} was sent to the connection that offered its tool; only it answers",
                    p.path
                ),
            )))
        }
    }
    let channels = tool_calls::answer(call.svc(), rr, &p.path, p.content, p.is_error).await?;
    Ok(ChannelsAck { ok: true, channels })
}
