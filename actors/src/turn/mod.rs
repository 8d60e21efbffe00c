//! `TurnExecutor`: one turn's pipeline (docs/design/turns.md) — materialise, assemble, check the budget, call the model, record, dispatch, judge.
//!
//! Short-lived: the `RunActor` starts one per turn (or to resume a turn after
//! its proposal was resolved) and stops it to cancel. Every step is a call
//! into `rummy_core::turn`; writes go through the store.

mod events;
pub(crate) mod fetch;
mod filters;
mod pipeline;
mod search;

use crate::provider::Route;
use crate::services::Services;
use actix::prelude::*;
use rummy_core::turn::verdict::Referee;
use rummy_store::context::KeptContext;
use rummy_store::entries::RunRef;
use rummy_store::flags::RunFlags;
use rummy_store::ids::{LoopId, TurnId};
use rummy_store::run::Mode;
use rummy_text::parse::ToolName;
use std::sync::{Arc, Mutex};
use tracing::Instrument;

pub use events::distribution;

/// Everything one turn needs, fixed when the loop starts.
#[derive(Clone)]
pub struct TurnJob {
    /// The run and project.
    pub run: RunRef,
    /// The run's alias (for notifications).
    pub alias: Arc<str>,
    /// The active loop.
    pub loop_id: LoopId,
    /// The loop's number in its run (`recall://<loop>`).
    pub loop_number: i32,
    /// Whether the loop's first turn recalls what the project remembers (the run's `recall`
    /// attribute, else `RUMMY_RECALL`).
    pub recall: bool,
    /// The loop's prompt, recorded on its first turn.
    pub prompt: String,
    /// The loop's mode.
    pub mode: Mode,
    /// The loop's flags.
    pub flags: RunFlags,
    /// Whether this is the loop's first turn.
    pub first_in_loop: bool,
    /// Whether the loop may run a turn after this one (the turn limit allows it): only then
    /// does a continuing turn allocate the next in its last write.
    pub next_allowed: bool,
    /// Model alias (telemetry).
    pub model_alias: String,
    /// The provider to call.
    pub route: Route,
    /// Sampling temperature.
    pub temperature: f64,
    /// Persona text.
    pub persona: Option<String>,
    /// Skip the project's files (`noRepo`).
    pub no_repo: bool,
    /// min(run contextLimit, model context length), when known.
    pub context_size: Option<i32>,
    /// Whether the loop's accepted commands reach the network, as its start read it (the
    /// project's `commandNetwork`, else `RUMMY_COMMAND_NETWORK`): what the `sh`/`env` docs
    /// say.
    pub command_network: bool,
    /// The loop's referee as it stood after the previous turn.
    pub referee: Referee,
    /// The run's context rows as the loop's last read left them, for the next read to start
    /// from (`store::context`); a loop starts without. Turns of a run never overlap, so the
    /// lock is never waited on.
    pub context: Arc<Mutex<Option<KeptContext>>>,
}

/// Where a turn starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// A new turn: call the model.
    Fresh,
    /// A new turn the previous one already allocated (in the write that ended it): call the model.
    Allocated(Allocated),
    /// Continue a turn whose proposal was resolved: dispatch its stored reply from `next_index`.
    Resume {
        /// The turn number.
        turn: i32,
        /// The first command still to run.
        next_index: usize,
        /// The tool whose rejected or failed proposal aborts the rest.
        aborted_by: Option<ToolName>,
        /// The accepted command whose output the turn waited for: no longer awaited from the
        /// first write on (`rummy_core::turn::streams::stop_awaiting`).
        awaited: Option<String>,
    },
}

/// A turn row allocated ahead, by the write that ended the turn before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allocated {
    /// The turn number.
    pub turn: i32,
    /// The turn's row.
    pub turn_id: TurnId,
    /// Set when that write also read the turn's context (into the loop's kept rows).
    pub read: Option<ContextRead>,
}

/// What a write that read a turn's context in advance read besides the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextRead {
    /// The budget's calibration ([`rummy_core::turn::budget::last_ratio`]) as of that write.
    pub ratio: Option<f64>,
}

/// How a turn ended when it ran to completion (or paused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run another turn.
    Continue,
    /// End the loop with this status.
    Conclude(i32),
    /// The referee gave up on the loop (508), for this reason.
    Abandon(String),
    /// The context does not fit even after demotion: the loop ends 413 without a model call
    /// (the turn recorded why, for the model to read).
    Overflow,
    /// A proposal waits for a client; the turn resumes after it is resolved (and, for an
    /// accepted `sh`/`env`, after its output).
    Paused {
        /// The proposal's path.
        path: String,
    },
}

impl Decision {
    /// The decision's name as `rummy_turns_total{end}` counts it.
    pub fn metric_name(&self) -> &'static str {
        match self {
            Decision::Continue => "continue",
            Decision::Conclude(_) => "conclude",
            Decision::Abandon(_) => "abandon",
            Decision::Overflow => "overflow",
            Decision::Paused { .. } => "paused",
        }
    }
}

/// A finished (or paused) turn.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    /// What comes next.
    pub decision: Decision,
    /// The referee after judging this turn, for the next one.
    pub referee: Referee,
    /// The next turn, when this one continues and allocated it in its last write.
    pub next: Option<Allocated>,
}

/// Why a turn could not finish. Returned by the `TurnExecutor` (and the turn steps it calls,
/// such as a search's answer); the `RunActor` ends the loop 500 (`failed`) with the message as
/// its `error://` entry, which the model and clients read, and the run stays usable.
#[derive(Debug, thiserror::Error)]
pub enum TurnFailure {
    /// A store read or write failed (its kind says which: a database error, a writer that
    /// stopped, …).
    #[error(transparent)]
    Store(#[from] rummy_store::StoreError),
    /// The model call failed after its retries and fallback. A prompt the provider refuses as
    /// too long is no failure: the turn ends 413 (`context_full`).
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    /// Work handed to the blocking pool (assembling, planning a demotion) panicked or was
    /// cancelled.
    #[error("{0}")]
    Blocking(#[from] actix_rt::task::JoinError),
    /// The turn's pipeline stopped without an end (it panicked): an internal error.
    #[error("the turn stopped unexpectedly (internal error); the loop was ended")]
    Vanished,
}

/// A turn's end, sent to the run that started it. `seq` names the turn among the run's, so a
/// run that cancelled it (and perhaps started another) knows a late one for what it is.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TurnDone {
    /// The run's number for the turn, given at its start.
    pub seq: u64,
    /// How it ended.
    pub result: Result<TurnEnd, TurnFailure>,
}

/// Stops the turn wherever it is (cancel): its pipeline is dropped at the await it is in, and
/// nothing more is written (a write already handed to the store commits whole). The one step a
/// cancel takes; no `TurnDone` follows.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopTurn;

/// One turn's pipeline: an actor that runs it from its start and reports its end to the run.
pub struct TurnExecutor {
    svc: Services,
    job: TurnJob,
    seq: u64,
    start: Option<Start>,
    /// Where the end goes; taken once it is sent, or when the turn is stopped.
    done: Option<Recipient<TurnDone>>,
}

impl TurnExecutor {
    /// Starts the job's turn `seq` from `start`; its end goes to `done`.
    pub fn start(
        svc: Services,
        job: TurnJob,
        seq: u64,
        start: Start,
        done: Recipient<TurnDone>,
    ) -> Addr<TurnExecutor> {
        TurnExecutor {
            svc,
            job,
            seq,
            start: Some(start),
            done: Some(done),
        }
        .start()
    }

    fn report(&mut self, result: Result<TurnEnd, TurnFailure>) {
        if let Some(done) = self.done.take() {
            done.do_send(TurnDone {
                seq: self.seq,
                result,
            });
        }
    }
}

impl Actor for TurnExecutor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(start) = self.start.take() else {
            return;
        };
        // The turn's number is known once it began (`begin` records it).
        let span = tracing::info_span!(
            "turn",
            project = self.job.run.project_id.0,
            run = %self.job.alias,
            loop_id = self.job.loop_id.0,
            turn = tracing::field::Empty,
        );
        let started = std::time::Instant::now();
        let turn = pipeline::execute(self.svc.clone(), self.job.clone(), start).instrument(span);
        ctx.spawn(turn.into_actor(self).map(move |result, act, ctx| {
            let end = match &result {
                Ok(end) => end.decision.metric_name(),
                Err(_) => "failed",
            };
            act.svc.store.metrics().turn_ended(end, started.elapsed());
            act.report(result);
            ctx.stop();
        }));
    }
}

impl Handler<StopTurn> for TurnExecutor {
    type Result = ();

    fn handle(&mut self, _: StopTurn, ctx: &mut Context<Self>) {
        self.done = None;
        ctx.stop();
    }
}

impl Drop for TurnExecutor {
    /// A turn that vanished without an end — its pipeline panicked — still ends its loop: the
    /// run is told, and stays usable.
    fn drop(&mut self) {
        self.report(Err(TurnFailure::Vanished));
    }
}
