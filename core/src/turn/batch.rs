//! A turn's commands dispatched in batches: one write runs them in order up to the first that waits (a proposal, a search), each with its own `run/state`.
//!
//! One commit per batch instead of one per command; clients still see every
//! command's outcome (clients get a `run/state` after each dispatched command). Where
//! dispatch stands between batches — the next command, the first failed action, the
//! latest update — is [`Commands`], kept here once: the executor moves it into each
//! batch's write and gets it back, and a turn resumed after its proposal (or a
//! restart) starts from its stored position ([`Commands::resume_at`]).

use crate::turn::dispatch::{dispatch_judged, DispatchCtx, Dispatched, UpdateSignal};
use crate::turn::{state, TurnRef};
use crate::wire::bounded::Bounds;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entry::State;
use rummy_store::notifications::Recorded;
use rummy_store::run::RunStatus;
use rummy_store::selection::{FilterCall, Judgements};
use rummy_store::{runs, StoreError};
use rummy_text::parse::{ToolCall, ToolName};
use serde_json::Value;
use std::sync::Arc;

/// A turn's commands (`think` left out: it is never dispatched, and a command's index counts
/// without it) and how far their dispatch has come.
#[derive(Debug, Clone)]
pub struct Commands {
    calls: Arc<[ToolCall]>,
    next: usize,
    failed: Option<ToolName>,
    update: Option<UpdateSignal>,
}

impl Commands {
    /// A reply's commands, none dispatched yet.
    pub fn new(commands: &[ToolCall]) -> Commands {
        Commands::resume_at(commands, 0, None)
    }

    /// A reply's commands with those before `next` dispatched already (a turn resumed after
    /// its proposal): `aborted_by` is the tool whose failure aborts the rest, and the turn's
    /// update is the last `update` before `next`.
    pub fn resume_at(commands: &[ToolCall], next: usize, aborted_by: Option<ToolName>) -> Commands {
        let calls: Arc<[ToolCall]> = commands
            .iter()
            .filter(|c| c.name != ToolName::Think)
            .cloned()
            .collect();
        let update = calls[..next.min(calls.len())]
            .iter()
            .rfind(|c| c.name == ToolName::Update)
            .map(UpdateSignal::of);
        Commands {
            calls,
            next,
            failed: aborted_by,
            update,
        }
    }

    /// The commands, in order.
    pub fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// Whether a command is still to be dispatched.
    pub fn pending(&self) -> bool {
        self.next < self.calls.len()
    }

    /// Whether an action failed (and aborted the ones after it).
    pub fn any_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The turn's latest `update`, if it sent one.
    pub fn update(&self) -> Option<&UpdateSignal> {
        self.update.as_ref()
    }

    /// Dispatches the pending commands in order, in the caller's write, up to and including
    /// the first that waits ([`Dispatched::waits`]), or up to (not including) the first whose
    /// body filter `judged` lacks ([`Batch::unjudged`]: judge it off the writer, then dispatch
    /// on). A proposal also makes the run `proposed`.
    /// Every command but the last gets its `run/state` here; the last one's is the caller's
    /// to push ([`Batch::push_last`]) or to share with the turn-end push written after it.
    pub fn dispatch_batch(
        &mut self,
        c: &mut Db,
        ctx: &DispatchCtx,
        now: Millis,
        judged: &Judgements,
    ) -> Result<Batch, StoreError> {
        let calls = Arc::clone(&self.calls);
        let mut batch = Batch {
            dispatched: Vec::new(),
            status: RunStatus::Running,
            unjudged: None,
        };
        for call in calls.iter().skip(self.next) {
            batch.push_last(c, ctx.t, ctx.limits.bounds, now)?;
            let at = DispatchCtx {
                command_index: self.next,
                ..ctx.clone()
            };
            let done = match dispatch_judged(c, &at, call, self.failed, now, judged) {
                Err(StoreError::Unjudged(filter)) => {
                    batch.unjudged = Some(*filter);
                    break;
                }
                done => done?,
            };
            self.next += 1;
            batch.status = if done.state == State::Proposed {
                runs::set_status(c, ctx.t.run.run_id, RunStatus::Proposed, now)?;
                RunStatus::Proposed
            } else {
                RunStatus::Running
            };
            self.note(&done);
            let waits = done.waits();
            batch.dispatched.push((done, None));
            if waits {
                break;
            }
        }
        Ok(batch)
    }

    /// Takes in a command's outcome: the first action that failed aborts the rest (an
    /// `update` never does), and an `update` is the turn's latest. A batch notes each
    /// command it dispatches; a command that waited is noted again once its wait settles it
    /// (a search answered or failed).
    pub fn note(&mut self, done: &Dispatched) {
        if done.failed() && done.update.is_none() && self.failed.is_none() {
            self.failed = Some(done.tool);
        }
        if done.update.is_some() {
            self.update.clone_from(&done.update);
        }
    }
}

/// What one batch dispatched.
#[derive(Debug)]
pub struct Batch {
    /// Each command with its `run/state` (the last one's is pushed by [`Batch::push_last`]).
    pub dispatched: Vec<(Dispatched, Option<Recorded>)>,
    /// The run status the last command's push carries: `proposed` after a proposal.
    status: RunStatus,
    /// The body filter the next command needs judged before it is dispatched.
    pub unjudged: Option<FilterCall>,
}

impl Batch {
    /// Whether the batch stopped at a command that waits, or before one whose filter must be
    /// judged first.
    pub fn waits(&self) -> bool {
        self.unjudged.is_some() || self.dispatched.last().is_some_and(|(d, _)| d.waits())
    }

    /// Pushes the last command's `run/state` if it has none yet: what the caller does when the
    /// turn does not end in the same write (when it does, the turn-end push — nothing is
    /// written between the two — is that command's push too).
    pub fn push_last(
        &mut self,
        c: &mut Db,
        t: TurnRef,
        bounds: Bounds,
        now: Millis,
    ) -> Result<(), StoreError> {
        if let Some((_, params @ None)) = self.dispatched.last_mut() {
            let status = self.status.code();
            *params = Some(state::push(
                c,
                t.run.run_id,
                t.turn,
                status,
                Value::Null,
                bounds,
                now,
            )?);
        }
        Ok(())
    }
}
