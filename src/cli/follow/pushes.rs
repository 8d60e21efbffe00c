//! Showing the run's `run/state` pushes: turn headers, the status line, one line per history
//! entry, and a proposal's changes of state.

use super::Follow;
use crate::cli::render::{self};
use rummy_client::notifications::RunState;
use rummy_client::results::{HistoryItem, ProposalKind, State, ToolName};

impl Follow<'_> {
    pub(super) fn turn_header(&mut self, turn: i64) {
        if turn > self.header_turn {
            self.header_turn = turn;
            self.view.end_stream();
            let line = self.view.style.dim(&format!("─ turn {turn}"));
            self.view.line(&line);
        }
    }

    pub(super) fn state(&mut self, state: RunState) {
        let newest = state.seq.is_none_or(|seq| seq > self.status_seq);
        if let Some(seq) = state.seq {
            self.status_seq = self.status_seq.max(seq);
        }
        if let Some(telemetry) = &state.telemetry {
            self.view.end_stream();
            if let Some(usage) = telemetry.usage {
                self.status.tokens += usage.total_tokens;
                self.status.cost += usage.cost;
            }
            if let Some(context) = telemetry.context_tokens {
                self.status.context = Some(context);
            }
            if state.route.is_none() {
                if let Some(model) = &telemetry.model {
                    self.status.model = Some(model.clone());
                }
            }
        }
        for item in &state.history {
            self.item(item);
        }
        if !newest {
            return;
        }
        self.run_status = state.status;
        self.status.turn = self.status.turn.max(state.turn);
        if let Some(route) = &state.route {
            self.status.model = Some(format!("{} ({})", route.model, route.class));
        }
        self.status.activity = match state.status {
            202 => "waiting for you".into(),
            100 => "queued".into(),
            102 => self.status.activity.clone(),
            _ => "done".into(),
        };
        if !matches!(state.status, 100 | 102 | 202) && state.queued.is_none() {
            self.ended = Some((state.status, state.stop_reason, state.turn));
        } else if self
            .ended
            .as_ref()
            .is_some_and(|(_, _, turn)| state.turn > *turn)
        {
            // A new loop (a continuation, an inject queued as a loop) began after the end.
            // A push of the ended loop's turns saying it still works is one whose status was
            // read before the end (a stream's settling), not a new start.
            self.ended = None;
        }
    }

    pub(super) fn item(&mut self, item: &HistoryItem) {
        // What came before this command followed the run (a fork's copy of its parent's
        // history, a continued run's earlier turns) was not done now: not shown as if it were.
        if item.turn > 0 && item.turn <= self.base_turn {
            return;
        }
        if item.attributes.contains_key("channel") {
            self.channel(item);
            return;
        }
        if !item.path.contains("://turn_") {
            return;
        }
        if item.is_proposal() {
            self.proposal_changed(item);
            return;
        }
        if self.printed.get(&item.path) == Some(&item.state) {
            return;
        }
        self.printed.insert(item.path.clone(), item.state);
        if item.tool_name() == ToolName::Update {
            let status = item.attributes.get("status").and_then(|s| s.as_i64());
            if status == Some(102) {
                let text = item.body.as_deref().unwrap_or_default();
                let line = format!("  {}", self.view.style.cyan(&format!("» {text}")));
                self.view.end_stream();
                self.view.line(&line);
            }
            return;
        }
        self.view.end_stream();
        let line = format!("  {}", render::command_line(item, self.view.style));
        self.view.line(&line);
    }

    pub(super) fn proposal_changed(&mut self, item: &HistoryItem) {
        if item.state == State::Proposed {
            let known = self.printed.contains_key(&item.path)
                || self.asking.as_ref().is_some_and(|a| a.path == item.path)
                || self.queue.iter().any(|q| q.path == item.path);
            if !known {
                self.printed.insert(item.path.clone(), item.state);
                self.queue.push_back(item.clone());
            }
            return;
        }
        if item.state == State::Resolved && item.proposal() == Some(ProposalKind::Edit) {
            self.files.insert(render::target(item));
        }
        if let Some(code) = item.attributes.get("exitCode").and_then(|c| c.as_i64()) {
            if self.exits.insert(item.path.clone()) {
                self.flush_channels(&item.path);
                self.exit_line(code, None);
            }
        }
        if self.printed.get(&item.path) == Some(&item.state) {
            return;
        }
        let first = self.printed.insert(item.path.clone(), item.state);
        if self.decided.contains(&item.path) {
            return;
        }
        // Decided elsewhere (another terminal, a cancel).
        let queued = self.queue.iter().position(|q| q.path == item.path);
        if let Some(index) = queued {
            self.queue.remove(index);
        }
        if self.asking.as_ref().is_some_and(|a| a.path == item.path) {
            self.asking = None;
            self.view.ask(None);
        }
        if first.is_some() || queued.is_some() {
            let what = match item.state {
                State::Resolved => self.view.style.green("✓ accepted elsewhere"),
                State::Cancelled => self.view.style.yellow("✗ rejected elsewhere"),
                other => self.view.style.red(&format!("✗ {other}")),
            };
            let reason = match (item.state, item.outcome.as_deref()) {
                (State::Cancelled, Some(reason)) if reason != "rejected" => format!(": {reason}"),
                _ => String::new(),
            };
            let line = format!("  {what}: {}{reason}", render::target(item));
            self.view.line(&line);
        }
    }
}
