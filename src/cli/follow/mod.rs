//! Following a run until its loop ends: the model's text as it streams, one line per command,
//! proposals answered (asked, or by `--yes` / `--no`), accepted commands' output as it comes,
//! Ctrl-C, and at the end the answer and a summary line.
//!
//! Everything shown comes from the run's `run/state` pushes (which a reconnect replays), not
//! from `run/proposal`: a proposal is a history entry in state `proposed`, a command's output
//! is the body of its channel entries (`<proposal>_1`, `_2`).
//!
//! This module holds the loop (events, reconnects, Ctrl-C, the end); what the pushes show is in
//! [`pushes`], accepted commands' output in [`output`], the decision prompt in [`prompt`].

mod output;
mod prompt;
mod pushes;

use super::exit::Exit;
use super::render::{self, Status};
use super::runner::{self, Running};
use super::session::{Failure, Session};
use super::view::{Output, View};
use rummy_client::params::StreamCancelParams;
use rummy_client::results::{HistoryItem, ProposalKind, RunSnapshot, State, StopReason};
use rummy_client::{CallError, ClientError, Notification};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How many times a lost connection is tried again before the command gives up (3).
const RETRIES: u32 = 8;
/// The wait before the first try; it doubles up to [`MAX_RETRY_DELAY`] (about 12 s in all).
const RETRY_DELAY: Duration = Duration::from_millis(250);
/// The longest wait between two tries.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(2);

/// How proposals are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Ask the person (stdin).
    Ask,
    /// Accept every one (`--yes`).
    AcceptAll,
    /// Reject every one (`--no`: a dry run).
    RejectAll,
}

/// What woke the loop.
enum Event {
    Note(Box<Result<(Notification, serde_json::Value), ClientError>>),
    Answer(Option<String>),
    Output(Option<runner::Output>),
    Interrupt,
    Tick,
}

/// One channel of a command's output as shown so far.
#[derive(Default)]
struct Shown {
    /// Bytes of the channel's body already taken.
    taken: usize,
    /// The end of the text after its last newline, not shown yet.
    partial: String,
}

/// A followed run.
pub struct Follow<'a> {
    session: &'a mut Session,
    view: &'a mut View,
    run: String,
    policy: Policy,
    all: bool,
    status: Status,
    started: Instant,
    run_status: i64,
    /// The seq of the push the run's status was last taken from: pushes are sent as their
    /// writes commit, not always in number order, and an older one must not undo a newer one.
    status_seq: i64,
    /// How the loop ended (status, why) and the turn it ended at, once it has.
    ended: Option<(i64, Option<StopReason>, i64)>,
    printed: HashMap<String, State>,
    decided: HashSet<String>,
    queue: VecDeque<HistoryItem>,
    asking: Option<HistoryItem>,
    stdin: Option<mpsc::UnboundedReceiver<Option<String>>>,
    channels: HashMap<String, Shown>,
    own: HashSet<String>,
    server_run: HashSet<String>,
    exits: HashSet<String>,
    running: Option<Running>,
    aborting: bool,
    cancel_sent: bool,
    files: BTreeSet<String>,
    header_turn: i64,
    /// Reconnections already told of.
    reconnects: u32,
    /// The run's last turn before this command followed it: the summary counts the turns after.
    base_turn: i64,
}

impl<'a> Follow<'a> {
    /// A follower of `run`; `context_length` and `model` fill the status line.
    pub fn new(
        session: &'a mut Session,
        view: &'a mut View,
        run: &str,
        policy: Policy,
        model: Option<String>,
        context_length: Option<i64>,
    ) -> Follow<'a> {
        let status = Status {
            run: run.to_owned(),
            max_turns: session.max_turns,
            context_length,
            model,
            activity: "starting".into(),
            ..Status::default()
        };
        Follow {
            session,
            view,
            run: run.to_owned(),
            policy,
            all: false,
            status,
            started: Instant::now(),
            run_status: 100,
            status_seq: 0,
            ended: None,
            printed: HashMap::new(),
            decided: HashSet::new(),
            queue: VecDeque::new(),
            asking: None,
            stdin: None,
            channels: HashMap::new(),
            own: HashSet::new(),
            server_run: HashSet::new(),
            exits: HashSet::new(),
            running: None,
            aborting: false,
            cancel_sent: false,
            files: BTreeSet::new(),
            header_turn: 0,
            reconnects: 0,
            base_turn: 0,
        }
    }

    /// The run's last turn before the loop this command follows (a continued run's): the
    /// summary line counts only the turns after it.
    pub fn after_turn(mut self, turn: i64) -> Follow<'a> {
        self.base_turn = turn;
        self.header_turn = turn;
        self
    }

    /// Starts from a run's whole state (attaching to it): what it did is taken as shown, its
    /// pending proposals are asked, and a run already at rest ends the follow at once.
    pub fn attach(&mut self, snapshot: &RunSnapshot) {
        self.status.turn = snapshot.turn;
        self.header_turn = snapshot.turn;
        self.run_status = snapshot.status;
        self.status_seq = snapshot.last_seq;
        for item in &snapshot.history {
            if item.attributes.contains_key("channel") {
                let shown = self.channels.entry(item.path.clone()).or_default();
                shown.taken = item
                    .body_bytes
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or_else(|| item.body.as_deref().map_or(0, str::len));
                continue;
            }
            if item.is_pending_proposal() {
                self.queue.push_back(item.clone());
            }
            self.printed.insert(item.path.clone(), item.state);
            if item.attributes.contains_key("exitCode") {
                self.exits.insert(item.path.clone());
            }
        }
        if !matches!(snapshot.status, 100 | 102 | 202) {
            self.ended = Some((snapshot.status, snapshot.stop_reason, snapshot.turn));
        }
    }

    /// Follows the run until its loop ends (or the person leaves); answers the exit code.
    pub async fn run(mut self) -> Result<Exit, Failure> {
        let mut interrupts =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .map_err(|e| Failure::new(Exit::Failure, format!("Ctrl-C handler: {e}")))?;
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        self.draw_status();
        loop {
            if self.asking.is_none() {
                if let Some(item) = self.queue.pop_front() {
                    if let Some(exit) = self.present(item).await? {
                        return Ok(exit);
                    }
                    continue;
                }
            }
            if self.done() {
                // Another loop of the run may be queued behind the one that ended (a
                // continuation, or an inject that found the turn concluded): followed too.
                if self.another_loop().await? {
                    continue;
                }
                break;
            }
            let event = tokio::select! {
                n = self.session.client.next_message(None) => Event::Note(Box::new(n)),
                line = recv(&mut self.stdin), if self.asking.is_some() => Event::Answer(line),
                out = output(&mut self.running), if self.running.is_some() => Event::Output(out),
                _ = interrupts.recv() => Event::Interrupt,
                _ = tick.tick() => Event::Tick,
            };
            if self.session.client.reconnects() > self.reconnects {
                self.reconnects = self.session.client.reconnects();
                self.warn("the connection dropped: reconnected, and caught up on what was missed");
            }
            let left = match event {
                Event::Note(note) => match *note {
                    Ok((n, params)) => {
                        self.note(n, &params).await?;
                        None
                    }
                    Err(e) => self.reconnect(e, &mut interrupts).await?,
                },
                Event::Answer(line) => self.answer(line).await?,
                Event::Output(out) => {
                    self.output(out).await;
                    None
                }
                Event::Interrupt => self.interrupt(&mut interrupts).await?,
                Event::Tick => {
                    self.draw_status();
                    None
                }
            };
            if let Some(exit) = left {
                self.view.finish();
                return Ok(exit);
            }
        }
        self.finish().await
    }

    /// Whether the run has a loop under way after the one that ended (queued while it ran):
    /// then it is followed too, from the run's state now.
    async fn another_loop(&mut self) -> Result<bool, Failure> {
        let snapshot = match self.session.client.get_run(&self.run, None).await {
            Ok(snapshot) => snapshot,
            Err(e) => return Err(Failure::call("reading the run's state", e)),
        };
        if !matches!(snapshot.status, 100 | 102 | 202) && snapshot.queued.is_none() {
            return Ok(false);
        }
        self.ended = None;
        self.run_status = snapshot.status;
        self.status_seq = self.status_seq.max(snapshot.last_seq);
        self.status.activity = if snapshot.status == 100 {
            "queued".into()
        } else {
            "working".into()
        };
        for item in &snapshot.history {
            self.item(item);
        }
        let line = self
            .view
            .style
            .dim("─ another loop of the run follows (queued while this one ran)");
        self.view.end_stream();
        self.view.line(&line);
        Ok(true)
    }

    /// The connection was lost: says so at once, then tries again a few times over some
    /// seconds (Ctrl-C leaves meanwhile); `Some` when the person left, an error (3) when the
    /// server did not come back, or (11) when it no longer takes the token.
    async fn reconnect(
        &mut self,
        error: ClientError,
        interrupts: &mut tokio::signal::unix::Signal,
    ) -> Result<Option<Exit>, Failure> {
        let refused = match &error {
            ClientError::Closed(Some((1008, reason))) => super::session::lapsed_token(reason),
            ClientError::Rejected { .. } => true,
            _ => false,
        };
        if refused {
            return Err(Failure::connection("following the run", &error));
        }
        self.view.end_stream();
        self.warn(&format!(
            "the connection to the server was lost ({error}): retrying (Ctrl-C leaves)"
        ));
        self.status.activity = "reconnecting".into();
        self.draw_status();
        let started = Instant::now();
        let mut delay = RETRY_DELAY;
        let mut last = error;
        for _ in 0..RETRIES {
            let tried = tokio::select! {
                tried = async {
                    tokio::time::sleep(delay).await;
                    self.session.client.reconnect().await
                } => tried,
                _ = interrupts.recv() => {
                    self.warn(&format!(
                        "left while reconnecting: the run goes on if the server does \
                         (`rummy watch {}` follows it again)",
                        self.run
                    ));
                    self.view.finish();
                    return Ok(Some(Exit::Interrupted));
                }
            };
            delay = (delay * 2).min(MAX_RETRY_DELAY);
            match tried {
                Ok(()) => {
                    self.reconnects = self.session.client.reconnects();
                    self.warn("reconnected, and caught up on what was missed");
                    self.status.activity = "working".into();
                    return Ok(None);
                }
                Err(e @ ClientError::Rejected { .. }) => {
                    return Err(Failure::connection("reconnecting", &e));
                }
                Err(e) => last = e,
            }
        }
        self.view.finish();
        Err(Failure::new(
            Exit::Connection,
            format!(
                "connection lost: the server did not come back in {} ({RETRIES} tries; the last: {last})",
                runner::seconds(started.elapsed())
            ),
        )
        .hint(format!(
            "once it is back, `rummy watch {}` follows the run again",
            self.run
        )))
    }

    fn done(&self) -> bool {
        self.ended.is_some()
            && self.running.is_none()
            && self.queue.is_empty()
            && self.asking.is_none()
    }

    fn draw_status(&mut self) {
        self.status.elapsed = self.started.elapsed();
        let line = self.status.line();
        self.view.status(line);
    }

    async fn note(&mut self, n: Notification, params: &serde_json::Value) -> Result<(), Failure> {
        if let Notification::UiNotify(u) = &n {
            if u.run.is_none() || u.run.as_deref() == Some(self.run.as_str()) {
                self.view.json(n.method(), params);
                let line = render::notice_line(u, self.view.style);
                self.view.line(&line);
            }
            return Ok(());
        }
        if n.run() != Some(self.run.as_str()) {
            return Ok(());
        }
        self.view.json(n.method(), params);
        match n {
            Notification::UiRender(r) => {
                if !r.append {
                    self.view.end_stream();
                }
                self.status.activity = if r.reasoning { "reasoning" } else { "writing" }.into();
                self.view.stream_as(&r.text, r.reasoning);
            }
            Notification::RunProgress(p) => {
                self.turn_header(p.turn);
                self.status.turn = self.status.turn.max(p.turn);
                self.status.activity = match (p.status.as_str(), &p.detail) {
                    ("sidecar", Some(task)) => format!("sidecar: {task}"),
                    _ => p.status.clone(),
                };
                match p.status.as_str() {
                    "retrying" | "rerouted" | "queued" => {
                        let detail = p.detail.unwrap_or_default();
                        let line = self.view.style.yellow(&format!("  {} {detail}", p.status));
                        self.view.line(&line);
                    }
                    _ => {}
                }
            }
            Notification::RunState(state) => self.state(state),
            Notification::StreamCancelled(c) => {
                if self.running.as_ref().is_some_and(|r| r.path == c.path) {
                    if let Some(running) = &self.running {
                        running.stop();
                    }
                    self.aborting = true;
                }
                let reason = c.reason.unwrap_or_default();
                let line = self
                    .view
                    .style
                    .red(&format!("  ✗ command cancelled: {reason}"));
                self.view.line(&line);
            }
            _ => {}
        }
        self.draw_status();
        Ok(())
    }

    fn warn(&mut self, text: &str) {
        let line = self.view.style.yellow(&format!("  ! {text}"));
        self.view.line(&line);
    }

    /// Ctrl-C: stop the running command; else cancel the run; else leave. Another Ctrl-C
    /// while the cancel is on its way leaves at once.
    async fn interrupt(
        &mut self,
        interrupts: &mut tokio::signal::unix::Signal,
    ) -> Result<Option<Exit>, Failure> {
        if let Some(running) = &self.running {
            if !self.aborting {
                running.stop();
                self.aborting = true;
                self.warn("stopping the command (Ctrl-C again cancels the run)");
                return Ok(None);
            }
        }
        let streaming: Vec<String> = self
            .server_run
            .iter()
            .filter(|p| !self.exits.contains(*p))
            .cloned()
            .collect();
        if !streaming.is_empty() && !self.aborting {
            self.aborting = true;
            for path in streaming {
                let params = StreamCancelParams {
                    run: self.run.clone(),
                    path,
                    reason: Some("interrupted (Ctrl-C)".into()),
                };
                if let Err(e) = self.session.client.stream_cancel(&params).await {
                    self.warn(&format!("the command could not be cancelled: {e}"));
                }
            }
            self.warn("cancelling the command (Ctrl-C again cancels the run)");
            return Ok(None);
        }
        if !self.cancel_sent && self.ended.is_none() {
            self.cancel_sent = true;
            if self.asking.take().is_some() {
                self.view.ask(None);
            }
            self.queue.clear();
            self.warn("cancelling the run (Ctrl-C again leaves at once)");
            let sent = tokio::select! {
                sent = self.session.client.cancel_run(&self.run) => sent,
                _ = interrupts.recv() => {
                    self.view.finish();
                    return Ok(Some(Exit::Interrupted));
                }
            };
            return match sent {
                Ok(_) => Ok(None),
                // The connection was lost on the way: once back, the cancel goes again.
                Err(CallError::Client(e)) => match self.reconnect(e, interrupts).await? {
                    Some(exit) => Ok(Some(exit)),
                    None => match self.session.client.cancel_run(&self.run).await {
                        Ok(_) => Ok(None),
                        Err(e) => Err(Failure::call("cancelling the run", e)),
                    },
                },
                Err(e) => Err(Failure::call("cancelling the run", e)),
            };
        }
        if let Some(running) = &self.running {
            running.stop();
        }
        Ok(Some(Exit::Interrupted))
    }

    /// The end: the answer, the summary line, the exit code.
    async fn finish(self) -> Result<Exit, Failure> {
        let Follow {
            session,
            view,
            run,
            started,
            ended,
            mut files,
            printed,
            base_turn,
            ..
        } = self;
        view.end_stream();
        let (status, stop_reason, _) = ended.unwrap_or((500, None, 0));
        let snapshot = session
            .client
            .get_run(&run, None)
            .await
            .map_err(|e| Failure::call("reading the run's end", e))?;
        let stop_reason = stop_reason.or(snapshot.stop_reason);
        for item in &snapshot.history {
            if item.state == State::Resolved && item.proposal() == Some(ProposalKind::Edit) {
                files.insert(render::target(item));
            }
        }
        view.finish();
        if view.output() == Output::Json {
            return Ok(Exit::of_run(status, stop_reason));
        }
        let style = view.style;
        view.line("");
        let answer = snapshot.summary.clone().unwrap_or_default();
        if status == 200 && !answer.is_empty() {
            view.line(&style.bold(&answer));
        }
        if let Some(error) = snapshot.history.iter().rev().find(|i| i.tool == "error") {
            if status != 200 && !printed.contains_key(&error.path) {
                view.line(&style.red(error.body.as_deref().unwrap_or_default()));
            }
        }
        let ending = render::ending(status, stop_reason, style);
        let files: Vec<String> = files.into_iter().collect();
        view.line(&render::summary_line(
            &ending,
            (snapshot.turn - base_turn).max(0),
            snapshot.telemetry.total_tokens,
            snapshot.telemetry.cost,
            started.elapsed(),
            &files,
        ));
        Ok(Exit::of_run(status, stop_reason))
    }
}

/// The next line typed on stdin (`None` when it ended); waits forever without a reader.
async fn recv(stdin: &mut Option<mpsc::UnboundedReceiver<Option<String>>>) -> Option<String> {
    match stdin {
        Some(rx) => rx.recv().await.flatten(),
        None => std::future::pending().await,
    }
}

/// The next output of the running command (`None` when it has no more).
async fn output(running: &mut Option<Running>) -> Option<runner::Output> {
    match running {
        Some(r) => r.output.recv().await,
        None => std::future::pending().await,
    }
}
