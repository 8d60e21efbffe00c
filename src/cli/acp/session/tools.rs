//! The editor's MCP servers in a session: started by `rummy acp` when the session opens, their
//! tools offered to its run on every connection to the server (an offer lasts as long as the
//! connection), and each call a person accepted made here, its result sent back.

use super::{Inbox, Session};
use crate::cli::acp::mcp::{self, Answer, Servers, Spec};
use crate::cli::acp::wire::McpServer;
use rummy_client::notifications::ToolCall;
use rummy_client::params::{ToolResultParams, ToolsOfferParams};
use rummy_client::CallError;
use serde_json::Value;
use std::path::Path;
use tokio::sync::oneshot;

impl Session {
    /// Starts the stdio servers the editor names, in `cwd`, and offers their tools: what went
    /// wrong, to be said once the session is open. An HTTP or SSE server is only logged:
    /// `initialize` said `rummy acp` connects to none.
    pub(super) async fn start_tools(&mut self, servers: &[McpServer], cwd: &Path) -> Vec<String> {
        let mut specs = Vec::new();
        for server in servers {
            match Spec::of(server) {
                Ok(spec) => specs.push(spec),
                Err(why) => tracing::warn!(session = %self.id, "{why}"),
            }
        }
        if specs.is_empty() {
            return Vec::new();
        }
        let (running, mut problems) = Servers::start(&specs, cwd).await;
        self.mcp = running;
        let (offered, left_out) = mcp::offerable(self.mcp.tools());
        self.offer = offered;
        problems.extend(left_out);
        for why in &problems {
            tracing::warn!(session = %self.id, "{why}");
        }
        if let Err(why) = self.offer_tools().await {
            problems.push(why);
        }
        problems
    }

    /// Offers the servers' tools to the run, on this connection.
    async fn offer_tools(&mut self) -> Result<(), String> {
        if self.offer.is_empty() {
            return Ok(());
        }
        let params = ToolsOfferParams {
            run: self.id.clone(),
            tools: self.offer.clone(),
        };
        match self.client.tools_offer(&params).await {
            Ok(_) => {
                self.offered_on = Some(self.client.reconnects());
                Ok(())
            }
            Err(e) => {
                if matches!(e, CallError::Rpc(_)) {
                    // Refused: the same offer would be refused again on this connection.
                    self.offered_on = Some(self.client.reconnects());
                }
                let why = format!("the MCP servers' tools were not offered to the run: {e}");
                tracing::warn!(run = %self.id, "{why}");
                Err(why)
            }
        }
    }

    /// Offers the tools again on a new connection (the client reconnected since the offer).
    pub(super) async fn offer_again(&mut self) {
        if self.down || self.offer.is_empty() || self.offered_on == Some(self.client.reconnects()) {
            return;
        }
        // Said in the log; the next reconnect tries again.
        let _ = self.offer_tools().await;
    }

    /// The server asks this client to call a tool a person accepted: called in a task of its
    /// own (a slow tool holds nothing else of the session), whose answer comes to the inbox;
    /// until then a `stream/cancelled` of the call gives it up ([`Session::give_up`]).
    pub(super) fn call_tool(&mut self, call: ToolCall) {
        let ToolCall {
            arguments,
            path,
            server,
            tool,
            ..
        } = call;
        let inbox = self.inbox.clone();
        let Some(caller) = self.mcp.caller(&server) else {
            let why = format!("the editor's session runs no MCP server {server}");
            let _ = inbox.send(Inbox::Called {
                path,
                answer: Answer::failed(why),
            });
            return;
        };
        let (cancel, cancelled) = oneshot::channel();
        self.calling.insert(path.clone(), cancel);
        actix_rt::spawn(async move {
            let answer = caller
                .call(&tool, Value::Object(arguments), cancelled)
                .await;
            if let Some(answer) = answer {
                let _ = inbox.send(Inbox::Called { path, answer });
            }
        });
    }

    /// The server gave up the call at `path` (a `stream/cancel`, the run cancelled): the tool
    /// is told, and nothing is answered.
    pub(super) fn give_up(&mut self, path: &str) {
        if let Some(cancel) = self.calling.remove(path) {
            // A call that ended meanwhile has nothing to give up.
            let _ = cancel.send(());
        }
    }

    /// A tool's answer, sent to the server: it lands in the call's result channel.
    pub(super) async fn called(&mut self, path: &str, answer: Answer) {
        if self.calling.remove(path).is_none() {
            // Given up meanwhile: the server waits for no answer.
            return;
        }
        let params = ToolResultParams {
            run: self.id.clone(),
            path: path.to_owned(),
            content: answer.text,
            is_error: answer.is_error,
        };
        if let Err(e) = self.client.tool_result(&params).await {
            // The server settles a call whose result never comes.
            tracing::warn!(run = %self.id, "the result of {path} did not reach the server: {e}");
        }
    }
}
