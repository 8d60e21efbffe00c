//! The run's entries as the editor sees them: each command a tool call, each status report
//! the agent's message; each proposal asked as a permission (or accepted by an allow-always
//! rule), its answer sent to the server; and the commands this session runs for the server.

use super::{Asked, Inbox, Session};
use crate::cli::acp::commands::{self, Job, Ran};
use crate::cli::acp::convert::{self, Rule};
use crate::cli::acp::wire as acp;
use crate::cli::render;
use rummy_client::bodies::Applied;
use rummy_client::params::{StreamAbortedParams, StreamCompletedParams, StreamParams};
use rummy_client::results::{HistoryItem, ProposalKind, State, ToolName};
use rummy_client::{CallError, Decision};

impl Session {
    /// One changed entry of the run.
    pub(super) async fn item(&mut self, item: &HistoryItem) {
        if item.attributes.contains_key("channel") {
            self.channel(item).await;
            return;
        }
        if !item.path.contains("://turn_") {
            return;
        }
        if item.tool_name() == ToolName::Update {
            let known = self.calls.entry(item.path.clone()).or_default();
            let said = known.item.as_ref().is_some_and(|i| i.body == item.body);
            known.item = Some(item.clone());
            if !said {
                if let Some(body) = item.body.as_deref().filter(|b| !b.is_empty()) {
                    self.say(&format!("{body}\n"));
                }
            }
            return;
        }
        if item.proposal() == Some(ProposalKind::AskUser) {
            if item.state == State::Proposed {
                self.question = Some(item.clone());
            } else if self.question.as_ref().is_some_and(|q| q.path == item.path) {
                self.question = None;
            }
            return;
        }
        if item.is_pending_proposal() {
            self.proposed(item).await;
            return;
        }
        if let Some(asked) = self.asking.remove(&item.path) {
            // Answered elsewhere (the page, the CLI) before the editor: its dialog is withdrawn.
            self.cx.cancel_request(asked.request);
            let elsewhere = match item.state {
                State::Resolved => "Accepted elsewhere (the page or the CLI)",
                _ => "Rejected elsewhere (the page or the CLI)",
            };
            self.show(item, Some(elsewhere));
            return;
        }
        self.show(item, None);
    }

    /// A proposal waiting for a decision: accepted at once by an allow-always rule of the
    /// session, else asked of the editor.
    pub(super) async fn proposed(&mut self, item: &HistoryItem) {
        if item.proposal() == Some(ProposalKind::AskUser) {
            self.question = Some(item.clone());
            return;
        }
        if self.asking.contains_key(&item.path) {
            return;
        }
        let rule = Rule::of(item);
        if item.proposal() == Some(ProposalKind::Edit) {
            let old = self.old_text(item).await;
            self.calls.entry(item.path.clone()).or_default().old = old;
        }
        self.show(item, None);
        if rule.as_ref().is_some_and(|r| self.rules.contains(r)) {
            self.decide(item.path.clone(), item.hash.clone(), true)
                .await;
            return;
        }
        let call = self.calls.get(&item.path);
        let old = call.and_then(|c| c.old.clone());
        let call = acp::ToolCallUpdate {
            tool_call_id: item.path.clone(),
            title: Some(convert::title(item)),
            kind: Some(convert::kind(item)),
            status: Some(acp::ToolCallStatus::Pending),
            content: Some(convert::content(item, &self.root, old, "")),
            locations: Some(convert::locations(item, &self.root)),
            raw_input: convert::raw_input(item),
        };
        let options =
            convert::permission_options(rule.as_ref().unwrap_or(&Rule::Tool(item.tool.clone())));
        let request = acp::RequestPermissionRequest {
            session_id: self.id.clone(),
            tool_call: call,
            options,
        };
        let (id, answer) = self
            .cx
            .request::<acp::RequestPermissionResponse>("session/request_permission", &request);
        self.asking.insert(
            item.path.clone(),
            Asked {
                hash: item.hash.clone(),
                rule,
                request: id,
            },
        );
        let inbox = self.inbox.clone();
        let path = item.path.clone();
        actix_rt::spawn(async move {
            let outcome = answer
                .await
                .map(|answer| answer.outcome)
                .map_err(|e| e.message);
            let _ = inbox.send(Inbox::Answer { path, outcome });
        });
    }

    /// The file an edit changes, as the run's store holds it; `None` when the edit creates it.
    pub(super) async fn old_text(&mut self, item: &HistoryItem) -> Option<String> {
        if item.attributes.get("created").and_then(|c| c.as_bool()) == Some(true) {
            return None;
        }
        let path = render::target(item);
        self.client.read_body(&self.id, &path).await.ok()
    }

    /// The editor answered the permission request of the proposal at `path`.
    pub(super) async fn answer(
        &mut self,
        path: &str,
        outcome: Result<acp::PermissionOutcome, String>,
    ) {
        // Gone: decided elsewhere first, or by an allow-always answer meanwhile.
        let Some(asked) = self.asking.remove(path) else {
            return;
        };
        let option = match outcome {
            Ok(acp::PermissionOutcome::Selected { option_id }) => option_id,
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(run = %self.id, "permission request for {path}: {e}");
                return;
            }
        };
        match option.as_str() {
            convert::ALLOW_ONCE => self.decide(path.to_owned(), asked.hash, true).await,
            convert::ALLOW_ALWAYS => {
                if let Some(rule) = asked.rule.clone() {
                    self.rules.insert(rule.clone());
                    // What else waits under the same rule is allowed with it.
                    let same: Vec<(String, Option<String>)> = self
                        .asking
                        .iter()
                        .filter(|(_, a)| a.rule.as_ref() == Some(&rule))
                        .map(|(p, a)| (p.clone(), a.hash.clone()))
                        .collect();
                    for (other, hash) in same {
                        if let Some(a) = self.asking.remove(&other) {
                            self.cx.cancel_request(a.request);
                        }
                        self.decide(other, hash, true).await;
                    }
                }
                self.decide(path.to_owned(), asked.hash, true).await;
            }
            _ => self.decide(path.to_owned(), asked.hash, false).await,
        }
    }

    /// Accepts or rejects the proposal at `path`; one already decided elsewhere is left as it
    /// was decided.
    pub(super) async fn decide(&mut self, path: String, hash: Option<String>, accept: bool) {
        let decision = if accept {
            Decision::Accept(None)
        } else {
            Decision::Reject(Some(convert::REJECTED_IN_THE_EDITOR.to_owned()))
        };
        match self
            .client
            .resolve(&self.id, &path, decision, hash.as_deref())
            .await
        {
            Ok(_) if accept => self.run_if_ours(&path),
            Ok(_) => {}
            Err(CallError::Rpc(e)) if e.code == -32005 => {}
            Err(e) => {
                tracing::warn!(run = %self.id, "resolving {path}: {e}");
                self.send(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate {
                    tool_call_id: path,
                    status: Some(acp::ToolCallStatus::Failed),
                    content: Some(vec![acp::ToolCallContent::text(format!(
                        "The answer did not reach the server: {e}"
                    ))]),
                    ..acp::ToolCallUpdate::default()
                }));
            }
        }
    }

    /// Shows an entry as a tool call: announced the first time, updated when it changed.
    pub(super) fn show(&mut self, item: &HistoryItem, note: Option<&str>) {
        let call = self.calls.entry(item.path.clone()).or_default();
        let first = call.item.is_none();
        if call.item.as_ref().is_some_and(|shown| {
            shown.state == item.state && shown.attributes == item.attributes && note.is_none()
        }) {
            return;
        }
        call.item = Some(item.clone());
        let old = call.old.clone();
        let output = self.output(&item.path);
        let mut content = convert::content(item, &self.root, old, &output);
        if let Some(note) = note {
            content.push(acp::ToolCallContent::text(note));
        }
        let update = if first {
            let mut call = convert::tool_call(item, &self.root, None, "");
            call.content = content;
            acp::SessionUpdate::ToolCall(call)
        } else {
            acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate {
                tool_call_id: item.path.clone(),
                status: Some(convert::status(item)),
                content: Some(content),
                ..acp::ToolCallUpdate::default()
            })
        };
        self.send(update);
    }

    /// A command's output channel grew: its tool call shows the output so far. The channel's
    /// body is kept as the client keeps bodies (an append at its offset, a push seen twice
    /// once); a body cut in the push, or an append past what is held, is read whole.
    pub(super) async fn channel(&mut self, item: &HistoryItem) {
        let Some((parent, _)) = item.path.rsplit_once('_') else {
            return;
        };
        let parent = parent.to_owned();
        if matches!(self.channels.apply(item), Applied::Truncated | Applied::Gap) {
            if let Ok(whole) = self.client.read_body(&self.id, &item.path).await {
                self.channels.set(&item.path, whole);
            }
        }
        let Some(call) = self.calls.get(&parent) else {
            return;
        };
        // The editor shows its own terminal.
        let Some(shown) = call.item.clone().filter(|_| call.terminal.is_none()) else {
            return;
        };
        let content = convert::content(&shown, &self.root, None, &self.output(&parent));
        self.send(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate {
            tool_call_id: parent,
            content: Some(content),
            ..acp::ToolCallUpdate::default()
        }));
    }

    /// The output of the command whose proposal is at `path` so far: stdout, then stderr.
    fn output(&self, path: &str) -> String {
        ["_1", "_2"]
            .iter()
            .filter_map(|suffix| self.channels.get(&format!("{path}{suffix}")))
            .collect()
    }

    /// After this session accepted a command the server asks its client to run
    /// (`attributes.runner: "client"`): runs it, in the editor's terminal when it offers one.
    pub(super) fn run_if_ours(&mut self, path: &str) {
        let Some(item) = self.calls.get(path).and_then(|c| c.item.clone()) else {
            return;
        };
        let command = matches!(item.proposal(), Some(ProposalKind::Sh | ProposalKind::Env));
        if !command || item.attr("runner") != Some("client") || self.running.contains_key(path) {
            return;
        }
        let job = Job {
            session: self.id.clone(),
            path: path.to_owned(),
            command: item.attr("command").unwrap_or_default().to_owned(),
            root: self.root.clone(),
        };
        let terminal = self.opening.terminal.then(|| self.cx.clone());
        let started = commands::start(job, terminal, self.inbox.clone());
        self.running.insert(path.to_owned(), started);
    }

    /// What a command this session runs did: streamed to the server, which records it and
    /// pushes it to every client (this one too).
    pub(super) async fn ran(&mut self, path: &str, ran: Ran) {
        let duration = self
            .running
            .get(path)
            .map(|c| crate::cli::runner::seconds(c.started.elapsed()));
        let sent = match ran {
            Ran::Terminal(terminal) => {
                let call = self.calls.entry(path.to_owned()).or_default();
                call.terminal = Some(terminal.clone());
                let mut content = call
                    .item
                    .as_ref()
                    .map(|item| convert::content(item, &self.root, None, ""))
                    .unwrap_or_default();
                content.push(acp::ToolCallContent::Terminal {
                    terminal_id: terminal,
                });
                self.send(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate {
                    tool_call_id: path.to_owned(),
                    status: Some(acp::ToolCallStatus::InProgress),
                    content: Some(content),
                    ..acp::ToolCallUpdate::default()
                }));
                return;
            }
            Ran::Chunk { channel, text } => {
                let params = StreamParams {
                    run: self.id.clone(),
                    path: path.to_owned(),
                    channel,
                    chunk: text,
                };
                self.client.stream(&params).await.map(|_| ())
            }
            Ran::Exited(end) => {
                self.running.remove(path);
                match end {
                    Ok(Some(code)) => {
                        let params = StreamCompletedParams {
                            run: self.id.clone(),
                            path: path.to_owned(),
                            exit_code: Some(code),
                            duration,
                        };
                        self.client.stream_completed(&params).await.map(|_| ())
                    }
                    Ok(None) | Err(_) => {
                        let why = match end {
                            Err(why) => why,
                            _ => "stopped by a signal".to_owned(),
                        };
                        let params = StreamAbortedParams {
                            run: self.id.clone(),
                            path: path.to_owned(),
                            reason: Some(why),
                            duration,
                        };
                        self.client.stream_aborted(&params).await.map(|_| ())
                    }
                }
            }
        };
        if let Err(e) = sent {
            tracing::warn!(run = %self.id, "the output of {path} was not recorded: {e}");
        }
    }
}
