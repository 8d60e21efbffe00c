//! The decision prompt: presenting a proposal, reading the answer from stdin, and sending the
//! decision (and, for a command run here, running it).

use super::{Follow, Policy};
use crate::cli::exit::Exit;
use crate::cli::render::{self};
use crate::cli::runner::Running;
use crate::cli::session::Failure;
use rummy_client::results::{HistoryItem, ProposalKind, State};
use rummy_client::{CallError, Decision};
use tokio::sync::mpsc;

impl Follow<'_> {
    /// Shows a proposal and answers it by policy, or asks; `Some` when the person left.
    pub(super) async fn present(&mut self, item: HistoryItem) -> Result<Option<Exit>, Failure> {
        self.view.end_stream();
        for line in render::proposal_lines(&item, self.view.style) {
            self.view.line(&format!("  {line}"));
        }
        match (self.policy, self.all) {
            (Policy::AcceptAll, _) | (Policy::Ask, true) => {
                self.decide(item, Decision::Accept(None)).await?;
            }
            (Policy::RejectAll, _) => {
                let reason = "rejected without asking (a dry run: rummy --no)".to_owned();
                self.decide(item, Decision::Reject(Some(reason))).await?;
            }
            (Policy::Ask, false) => {
                if self.stdin.is_none() {
                    self.stdin = Some(read_stdin());
                }
                let question = render::question(&item, self.view.style);
                self.asking = Some(item);
                self.view.ask(Some(&question));
            }
        }
        Ok(None)
    }

    /// A line typed at the question; `Some` when the person left.
    pub(super) async fn answer(&mut self, line: Option<String>) -> Result<Option<Exit>, Failure> {
        let Some(item) = self.asking.clone() else {
            return Ok(None);
        };
        let Some(line) = line else {
            self.view.ask(None);
            self.leave_hint("stdin ended");
            return Ok(Some(Exit::Waiting));
        };
        let text = line.trim();
        let ask_user = item.proposal() == Some(ProposalKind::AskUser);
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = Some(rest.trim().to_owned()).filter(|r| !r.is_empty());
        let decision = match (ask_user, word.to_lowercase().as_str()) {
            (true, "n" | "no") if rest.is_none() => Decision::Reject(None),
            (true, "") => return Ok(None),
            (true, _) => Decision::Accept(Some(text.to_owned())),
            (false, "y" | "yes") => Decision::Accept(None),
            (false, "n" | "no") => Decision::Reject(rest),
            (false, "a" | "all") => {
                self.all = true;
                Decision::Accept(None)
            }
            (false, "q" | "quit") => {
                self.view.ask(None);
                self.leave_hint("you left");
                return Ok(Some(Exit::Waiting));
            }
            (false, _) => {
                let question = format!(
                    "  {} {}",
                    self.view.style.yellow("answer y, n (+reason), a or q:"),
                    render::question(&item, self.view.style).trim_start()
                );
                self.view.ask(Some(&question));
                return Ok(None);
            }
        };
        self.asking = None;
        self.view.ask(None);
        self.decide(item, decision).await?;
        Ok(None)
    }

    pub(super) fn leave_hint(&mut self, why: &str) {
        let line = self.view.style.yellow(&format!(
            "{why}: the run waits on its proposal; answer it with `rummy approve {run}` or \
             `rummy reject {run} PATH --reason ...`, or follow it again with `rummy watch {run}`",
            run = self.run
        ));
        self.view.line(&line);
    }

    pub(super) async fn decide(
        &mut self,
        item: HistoryItem,
        decision: Decision,
    ) -> Result<(), Failure> {
        let accepting = matches!(decision, Decision::Accept(_));
        let reason = match &decision {
            Decision::Reject(reason) => reason.clone(),
            _ => None,
        };
        self.decided.insert(item.path.clone());
        // An accept approves what was shown: the server refuses it (-32005) if it changed.
        let approves = item.hash.as_deref().filter(|_| accepting);
        let ack = match self
            .session
            .client
            .resolve(&self.run, &item.path, decision, approves)
            .await
        {
            Ok(ack) => ack,
            Err(CallError::Rpc(e)) if e.kind() == Some("conflict") => {
                let line = self.view.style.yellow(&format!("  {}", e.message));
                self.view.line(&line);
                return Ok(());
            }
            Err(e) => return Err(Failure::call("answering the proposal", e)),
        };
        let state = ack.state.unwrap_or(State::Resolved);
        self.printed.insert(item.path.clone(), state);
        let style = self.view.style;
        let line = match (state, accepting) {
            (State::Resolved, true) => style.green("✓ accepted"),
            (State::Cancelled, _) => style.yellow(&match reason {
                Some(reason) => format!("✗ rejected: {reason}"),
                None => "✗ rejected".to_owned(),
            }),
            (other, _) => style.red(&format!(
                "✗ {other}: {}",
                ack.outcome.as_deref().unwrap_or("refused")
            )),
        };
        self.view.line(&format!("  {line}"));
        if state != State::Resolved || !accepting {
            return Ok(());
        }
        match item.proposal() {
            Some(ProposalKind::Edit) => {
                self.files.insert(render::target(&item));
            }
            Some(ProposalKind::Sh | ProposalKind::Env) => {
                let command = render::target(&item);
                if ack.runner.as_deref() == Some("server") {
                    self.server_run.insert(item.path.clone());
                } else {
                    self.own.insert(item.path.clone());
                    self.aborting = false;
                    self.running = Some(Running::start(
                        &self.run,
                        &item.path,
                        &command,
                        &self.session.root,
                    ));
                    self.status.activity = format!("running {command}");
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Lines typed on stdin, read on a thread of their own (reading blocks); `None` at its end.
fn read_stdin() -> mpsc::UnboundedReceiver<Option<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Some(line.clone())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    if spawned.is_err() {
        // Without a reader the question can never be answered: as if stdin had ended.
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(None);
        return rx;
    }
    rx
}
