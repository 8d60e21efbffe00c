//! Accepted calls of the tools clients offer (`tools/offer`): each goes to the connection
//! offering its tool as `tool/call`, and its answer (`tool/result`) fills the call's channel
//! `<path>_1` — capped as a command's output is — and wakes the turn waiting for it. A call
//! whose connection has gone, before or after it was sent, fails with a reason the model reads.
//!
//! Invariant: a call is settled once, by its connection's answer or by its failure here; the
//! waiting turn is woken either way ([`crate::services::shell::ShellRegistry::settled`]).

use crate::hub::{Direct, Notify};
use crate::services::client_tools::SentCall;
use crate::services::Services;
use crate::shell::write_output;
use rummy_core::tools::call::qualified;
use rummy_core::turn::streams::StreamEnd;
use rummy_core::wire::jsonrpc::notification_text;
use rummy_core::wire::notifications::{Push, ToolCall};
use rummy_store::entries::RunRef;
use rummy_store::StoreError;
use serde_json::{Map, Value};

/// An accepted call, as its proposal holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The run's alias.
    pub alias: String,
    /// The call's proposal path.
    pub path: String,
    /// The MCP server holding the tool.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

/// Why a call failed when the connection that offered its tool closed first.
fn gone(tool: &str) -> String {
    format!("the client that offered {tool} disconnected before answering; it was not called or its answer was lost")
}

/// Sends an accepted call to the connection offering its tool. With none left (it closed
/// since the model saw the tool), the call fails at once.
pub async fn send(svc: &Services, run: RunRef, call: Accepted) {
    let tool = qualified(&call.server, &call.tool);
    let offerer = svc
        .client_tools
        .offerer(run.project_id, &call.alias, &call.server, &call.tool);
    let Some(session) = offerer else {
        let reason = format!("no client offers {tool} any more (the connection that offered it closed); it was not called");
        fail(svc, run, &call.path, reason).await;
        return;
    };
    svc.client_tools.sent(
        session,
        SentCall {
            project_id: run.project_id,
            run_id: run.run_id,
            alias: call.alias.clone(),
            path: call.path.clone(),
            tool: tool.clone(),
        },
    );
    let (alias, path) = (call.alias.clone(), call.path.clone());
    let params = ToolCall {
        arguments: call.arguments,
        path: call.path,
        run: call.alias,
        server: call.server,
        tool: call.tool,
    };
    let text = match serde_json::to_string(&params) {
        Ok(json) => notification_text(ToolCall::METHOD, &json),
        Err(e) => {
            tracing::error!(error = %e, "cannot serialise a tool/call");
            String::new()
        }
    };
    let notify = Notify {
        run: alias.into(),
        text: text.into(),
        seq: None,
    };
    let delivered = svc
        .hub
        .send(Direct { session, notify })
        .await
        .unwrap_or(false);
    // Gone between the look-up and the send: unless its close already failed the call, fail it.
    if !delivered && svc.client_tools.answer(session, run.run_id, &path).is_ok() {
        fail(svc, run, &path, gone(&tool)).await;
    }
}

/// Fails the calls a closed connection left unanswered.
pub async fn orphaned(svc: &Services, calls: Vec<SentCall>) {
    for call in calls {
        let run = RunRef {
            project_id: call.project_id,
            run_id: call.run_id,
        };
        tracing::info!(run = %call.alias, path = %call.path, "a client tool's call failed: its connection closed");
        fail(svc, run, &call.path, gone(&call.tool)).await;
    }
}

/// Fails the call at `path` with `reason` and wakes its turn. A call settled meanwhile (the
/// run was cancelled) stays as it is.
async fn fail(svc: &Services, run: RunRef, path: &str, reason: String) {
    let end = StreamEnd::Failed {
        reason,
        duration: None,
    };
    match write_output(svc, run, path.to_owned(), Vec::new(), Some(end), None).await {
        Ok(_) | Err(StoreError::Conflict(_)) => {}
        Err(e) => tracing::warn!(path, error = %e, "cannot fail a client tool's call"),
    }
    svc.shell.settled(run.run_id, path);
}

/// Writes a client's answer to the call at `path`: `content` into its channel, capped at
/// `RUMMY_COMMAND_OUTPUT_BYTES`, settled resolved (or failed, `exit:1`, when the tool reported
/// an error); wakes the turn. Answers the channels settled.
pub async fn answer(
    svc: &Services,
    run: RunRef,
    path: &str,
    content: String,
    is_error: bool,
) -> Result<Vec<String>, StoreError> {
    let cap = svc.config.shell.output_bytes;
    let chunks = if content.is_empty() {
        Vec::new()
    } else {
        vec![(1, content)]
    };
    let end = StreamEnd::Completed {
        exit_code: i32::from(is_error),
        duration: None,
    };
    let settled = write_output(svc, run, path.to_owned(), chunks, Some(end), Some(cap)).await;
    svc.shell.settled(run.run_id, path);
    settled
}
