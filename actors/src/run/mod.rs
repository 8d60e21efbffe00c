//! `RunActor`: one active run's state machine — claim a loop, run its turns one by one (pausing on proposals), finish it, claim the next.
//!
//! Each async step is spawned on the actor's context and its completion moves
//! the state on, so a cancel can stop whatever is in flight. A failing turn
//! never takes the run down: the loop ends 500 with an `error://` entry and the
//! run waits for the next prompt.
//!
//! An accepted `sh`/`env` pauses the turn once more: the server starts the
//! command (with `RUMMY_COMMAND_RUNNER=server`), and the turn goes on once its
//! channels are settled, or after `RUMMY_STREAM_WAIT` with the output so far;
//! the run stays 102 meanwhile, with `run/progress` `streaming`. A command that
//! failed (a non-zero exit, a timeout, a cancel) aborts the rest of the turn's
//! actions, as any failed action does.
//!
//! While a fair-use limit applies to the run's project, an idle run with a queued
//! loop first asks [`Admission`](crate::admission::Admission) for a place: granted, it claims
//! the loop; otherwise it waits (status 100, `queued` in `run/state`) until it is sent
//! [`Admitted`](crate::admission::Admitted). Its place frees when the loop ends or pauses on a
//! proposal; when the person's answer resumes it, the accepted action is applied at once and the
//! loop asks for a place again before its next model call (`place`), staying 102 meanwhile.
//!
//! An actor lives only while its run has something to do: idle, it tells its registry and is
//! retired (`retire`); the run's next message starts a fresh one from the database.

mod cancel;
mod claim;
mod consolidate;
mod output;
mod place;
mod queue;
mod resolve;
mod retire;
use crate::loop_queue::{Claimed, Finish, LoopQueue};
use crate::provider::undefined_model;
use crate::services::Services;
use crate::session_state;
use crate::turn::{
    Decision, Start, StopTurn, TurnDone, TurnEnd, TurnExecutor, TurnFailure, TurnJob,
};
use actix::prelude::*;
pub use retire::{Idle, Keeper, Retire};
use rummy_core::memory::consolidate as memory_consolidate;
use rummy_core::memory::recall as memory_recall;
use rummy_core::session_state::stored;
use rummy_core::session_state::Occasion;
use rummy_core::turn::healer::{Healer, HealerLimits};
use rummy_core::turn::proposals::{Decision as ProposalDecision, Resolved};
use rummy_core::turn::streams::Awaited;
use rummy_core::wire::RpcError;
use rummy_provider::routing;
use rummy_store::entries::RunRef;
use rummy_store::loops::Loop;
use rummy_store::run::{Mode, RunStatus, StopReason};
use rummy_store::StoreError;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Look at the queue and start the next loop if idle.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

/// A restart found the run queued for a place and handed it to admission: it waits for
/// [`Admitted`](crate::admission::Admitted) (a cancel meanwhile cancels the waiting loop).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitPlace;

/// Start a loop already claimed for this run (a new run's first, claimed in its creation's
/// write): what [`Wake`] does after its claim.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Begin {
    /// The claimed loop, its run and model.
    pub claimed: Claimed,
}

/// Queue a new loop (a continuation prompt) and wake.
#[derive(Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct QueueLoop {
    /// `ask` or `act`.
    pub mode: Mode,
    /// Model alias.
    pub model: String,
    /// The prompt.
    pub prompt: String,
    /// Loop flags.
    pub config: Value,
}

/// Fold a prompt into the active loop — a `prompt://<next turn>` entry the
/// model sees next turn — or queue it as a new loop when none is active.
/// Answers whether it was folded in.
#[derive(Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct Inject {
    /// The prompt.
    pub prompt: String,
    /// The run's mode, should it become a new loop.
    pub mode: Mode,
    /// Model alias, should it become a new loop.
    pub model: String,
    /// Loop flags, should it become a new loop.
    pub flags: Value,
}

/// Stop the active loop (499) and its pending proposal; queued loops run next. Answers whether a loop was stopped.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Cancel;

/// The run was renamed: notifications carry the new alias from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Rename(pub String);

/// Resolve the proposal the run waits on; the turn then resumes.
#[derive(Message)]
#[rtype(result = "Result<Resolved, RpcError>")]
pub struct Resolve {
    /// The proposal's path.
    pub path: String,
    /// Accept, reject or error.
    pub decision: ProposalDecision,
    /// The project root on disk, where accepted file changes land.
    pub root: PathBuf,
    /// Who decided, when a token names the person (the proposal records it).
    pub by: Option<String>,
}

/// What a restored loop was waiting on when the server stopped.
#[derive(Debug, Clone)]
pub enum Paused {
    /// A pending proposal (its path): resolving it resumes the turn.
    Proposal(String),
    /// An accepted command's output (its channels failed by recovery): the turn goes on.
    Output(Awaited),
}

/// Restore a run a restart left waiting on a proposal or on a command's output (ARCHITECTURE.md §3).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Restore {
    /// Its active loop, run and model.
    pub claimed: Claimed,
    /// What the loop waited on.
    pub paused: Paused,
}

enum Phase {
    /// Nothing to do.
    Idle,
    /// Looking for a queued loop and asking admission for a place for it.
    Asking,
    /// Queued for a place (a runs limit or the project's cost ceiling): [`Admitted`](crate::admission::Admitted) ends it.
    Waiting,
    /// Asking the queue for the next loop.
    Claiming,
    /// A loop is running (boxed: it is much larger than the other phases).
    Running(Box<Active>),
    /// Recording a loop's end.
    Finishing,
}

struct Active {
    loop_row: Loop,
    job: TurnJob,
    turns_done: u32,
    /// What the loop does now, which a cancel stops in one step.
    doing: Option<Doing>,
    /// The proposal the loop waits on, if any.
    waiting: Option<String>,
    /// The accepted command whose output the loop waits for, if any.
    output: Option<Awaited>,
    /// Resolutions that arrived while a turn was in flight: its `run/proposal` can reach a
    /// client before its end reaches the run, so they wait for that end (see `resolve`).
    early: Vec<resolve::Early>,
    /// The loop gave its place back when it paused on a proposal: its next model call waits
    /// for one (see `place`).
    placeless: bool,
    /// The turn that waits for a place, while it does.
    place: Option<place::PlaceWait>,
    /// The number of the loop's latest turn started, when known.
    last_turn: i32,
}

/// What a running loop is doing between its messages.
enum Doing {
    /// A turn: its executor, and the run's number for it (see [`TurnDone`]).
    Turn(Addr<TurnExecutor>, u64),
    /// The wait for an accepted command's output, a future on the run's own context.
    Output(SpawnHandle),
    /// The wait for a place before the next model call (`place`): a cancel withdraws it.
    Place,
}

impl Doing {
    /// Stops it: the turn's executor, or the wait.
    fn stop(self, ctx: &mut Context<RunActor>) {
        match self {
            Doing::Turn(executor, _) => executor.do_send(StopTurn),
            Doing::Output(wait) => {
                ctx.cancel_future(wait);
            }
            // The run withdraws its ask (`cancel`): nothing runs meanwhile.
            Doing::Place => {}
        }
    }
}

enum LoopEnd {
    Concluded(i32),
    MaxTurns,
    Cancelled,
    Failed(String),
    Abandoned(String),
    Overflow,
}

/// One run.
pub struct RunActor {
    svc: Services,
    run: RunRef,
    alias: Arc<str>,
    queue: Addr<LoopQueue>,
    phase: Phase,
    /// A cancel that arrived while a loop was being claimed.
    cancel_pending: bool,
    /// A wake that arrived while a claim was in flight: that claim may have looked before the
    /// new loop was stored, so one more claim follows if it finds nothing.
    wake_again: bool,
    /// [`Admitted`](crate::admission::Admitted) arrived while the run was still asking for a place: whatever the answer
    /// says, the place is its.
    admitted_early: bool,
    /// Who started the run (its runs in flight are counted under this user), once a loop of
    /// it was claimed.
    user: Option<String>,
    /// The registry that keeps the actor, told when it is idle (see `retire`).
    keeper: Keeper,
    /// How many of the registry's messages the actor has handled.
    handled: u64,
    /// Handlers whose work is still in flight on the actor's context.
    busy: u32,
    /// The count of handled messages the registry was last told the actor was idle at.
    told: Option<u64>,
    /// How many turns the actor has started: each turn's number, which its end carries.
    turns_started: u64,
}

impl RunActor {
    /// An actor for a stored run, kept by `keeper`.
    pub fn new(svc: Services, run: RunRef, alias: &str, keeper: Keeper) -> Self {
        let mut queue = LoopQueue::new(
            run,
            svc.store.clone(),
            svc.config.limits.token_divisor,
            svc.config.providers.routing.clone(),
        );
        if let Some(cluster) = &svc.cluster {
            queue = queue.held_by(Arc::from(cluster.me()));
        }
        let queue = queue.start();
        RunActor {
            svc,
            run,
            alias: Arc::from(alias),
            queue,
            phase: Phase::Idle,
            cancel_pending: false,
            wake_again: false,
            admitted_early: false,
            user: None,
            keeper,
            handled: 0,
            turns_started: 0,
            busy: 0,
            told: None,
        }
    }

    /// Learns the claimed loop's context length — asking the model's provider
    /// (and caching the answer in `models`) when the store does not know it —
    /// then starts the loop. The phase stays `Claiming` meanwhile, so a cancel
    /// still lands.
    fn prepare_loop(&mut self, claimed: Claimed, ctx: &mut Context<Self>) {
        let model = match &claimed.model {
            Some(m) if m.context_length.is_none() => m.clone(),
            known_or_missing => {
                let model_context = known_or_missing.as_ref().and_then(|m| m.context_length);
                return self.start_loop(claimed, model_context, None, ctx);
            }
        };
        let providers = self.svc.providers.clone();
        let discover = async move { providers.context_length(&model).await };
        let start = discover
            .into_actor(self)
            .map(|model_context, act, ctx| act.start_loop(claimed, model_context, None, ctx));
        ctx.spawn(start);
    }

    /// Starts a claimed loop, or (with `paused`) restores one paused on a proposal or a
    /// command's output. `model_context` is the loop's model's context length, if known.
    fn start_loop(
        &mut self,
        claimed: Claimed,
        model_context: Option<i32>,
        paused: Option<Paused>,
        ctx: &mut Context<Self>,
    ) {
        let Claimed {
            loop_row,
            run,
            model,
            command_network,
        } = claimed;
        self.user.clone_from(&run.user);
        // As the claim read it: an actor started just before a rename committed takes it here.
        self.rename(&run.alias);
        let routed = loop_row.routed();
        tracing::info!(
            run = %self.alias,
            loop_seq = loop_row.sequence,
            restored = paused.is_some(),
            model = %loop_row.model,
            route = routed.as_ref().map(|r| r.class.name()),
            "loop started"
        );
        let route = match &model {
            None => Err(match &routed {
                Some(r) if r.changes(&run.model) => {
                    format!("{} ({})", undefined_model(&r.model), r.why())
                }
                _ => format!("model \"{}\" is no longer defined", loop_row.model),
            }),
            Some(m) => self.svc.providers.route(m),
        };
        let mut route = match route {
            Ok(route) => route,
            Err(message) => return self.finish(loop_row, LoopEnd::Failed(message), ctx),
        };
        if std::mem::take(&mut self.cancel_pending) {
            return self.finish(loop_row, LoopEnd::Cancelled, ctx);
        }
        let flags = loop_row.config();
        // `fallback: false` on the run: its calls fail where they would have gone to the fallback.
        if !routing::fallback_allowed(&flags) {
            route.fallback = None;
        }
        let context_size = match (run.context_limit, model_context) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let recall = memory_recall::requested(&flags, self.svc.config.recall.enabled);
        let job = TurnJob {
            run: self.run,
            alias: Arc::clone(&self.alias),
            loop_id: loop_row.id,
            loop_number: loop_row.sequence,
            recall,
            prompt: loop_row.prompt.clone(),
            mode: loop_row.mode(),
            no_repo: flags
                .get("noRepo")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            flags,
            first_in_loop: true,
            next_allowed: false,
            model_alias: loop_row.model.clone(),
            route,
            temperature: run
                .temperature
                .unwrap_or(self.svc.config.limits.temperature),
            persona: run.persona.clone(),
            context_size,
            command_network: command_network.unwrap_or(self.svc.config.commands.sandbox.network),
            healer: Healer::new(HealerLimits::from(&self.svc.config.limits)),
            context: Arc::default(),
        };
        let restored = paused.is_some();
        // A loop paused on a proposal holds no place: a restart found it so.
        let placeless = matches!(paused, Some(Paused::Proposal(_)));
        let (waiting, output) = match paused {
            Some(Paused::Proposal(path)) => (Some(path), None),
            Some(Paused::Output(awaited)) => (None, Some(awaited)),
            None => (None, None),
        };
        self.phase = Phase::Running(Box::new(Active {
            loop_row,
            job,
            turns_done: u32::from(restored),
            doing: None,
            waiting,
            output: None,
            early: Vec::new(),
            placeless,
            place: None,
            last_turn: 0,
        }));
        match output {
            Some(awaited) => {
                let waiter = self.svc.commands.waiter(self.run.run_id, &awaited.path);
                self.await_output(awaited, waiter, None, ctx);
            }
            None if !restored => self.run_turn(Start::Fresh, ctx),
            None => {}
        }
    }

    fn run_turn(&mut self, start: Start, ctx: &mut Context<Self>) {
        let max_turns = self.svc.config.limits.max_turns;
        let Phase::Running(active) = &mut self.phase else {
            return;
        };
        let new_turn = matches!(start, Start::Fresh | Start::Allocated(_));
        if new_turn && active.turns_done >= max_turns {
            let loop_row = active.loop_row.clone();
            return self.finish(loop_row, LoopEnd::MaxTurns, ctx);
        }
        match &start {
            Start::Allocated(next) => active.last_turn = next.turn,
            Start::Resume { turn, .. } => active.last_turn = *turn,
            Start::Fresh => {}
        }
        if new_turn && active.placeless && self.svc.admission.counts_runs() {
            return self.ask_place(start, ctx);
        }
        let mut job = active.job.clone();
        job.first_in_loop = active.turns_done == 0;
        job.next_allowed = active.turns_done + 1 < max_turns;
        self.turns_started += 1;
        let seq = self.turns_started;
        let executor =
            TurnExecutor::start(self.svc.clone(), job, seq, start, ctx.address().recipient());
        if let Phase::Running(active) = &mut self.phase {
            active.doing = Some(Doing::Turn(executor, seq));
        }
    }

    fn turn_done(&mut self, res: Result<TurnEnd, TurnFailure>, ctx: &mut Context<Self>) {
        let Phase::Running(active) = &mut self.phase else {
            return;
        };
        active.doing = None;
        // Resolutions that came ahead of the end: answered once it is known, below or as they
        // are dropped with the loop.
        let early = std::mem::take(&mut active.early);
        let loop_row = active.loop_row.clone();
        let end = match res {
            Ok(end) => {
                active.job.healer = end.healer;
                match end.decision {
                    Decision::Paused { path } => {
                        active.waiting = Some(path);
                        self.resolve_early(early, ctx);
                        let Phase::Running(active) = &mut self.phase else {
                            return;
                        };
                        // A person may take hours to answer: the loop does not hold its
                        // context rows meanwhile, and reads them whole when it goes on — nor
                        // its place among the runs in flight.
                        active.job.context = Arc::default();
                        active.placeless = true;
                        self.svc.admission.release(self.run.run_id);
                        return;
                    }
                    Decision::Continue => {
                        active.turns_done += 1;
                        let start = end.next.map_or(Start::Fresh, Start::Allocated);
                        return self.run_turn(start, ctx);
                    }
                    Decision::Conclude(status) => LoopEnd::Concluded(status),
                    Decision::Abandon(reason) => LoopEnd::Abandoned(reason),
                    Decision::Overflow => LoopEnd::Overflow,
                }
            }
            Err(failure) => LoopEnd::Failed(failure.to_string()),
        };
        self.finish(loop_row, end, ctx);
    }

    fn finish(&mut self, loop_row: Loop, end: LoopEnd, ctx: &mut Context<Self>) {
        self.phase = Phase::Finishing;
        self.svc.admission.release(self.run.run_id);
        // A loop that did its work (not cancelled, not failed by its model) updates the
        // session state, when the run keeps one, before its end is recorded: the run's next
        // loop, and every client told it ended, find the state current.
        let flags = loop_row.config();
        let refresh = !matches!(end, LoopEnd::Cancelled | LoopEnd::Failed(_))
            && stored::enabled(&flags, self.svc.config.session_state.enabled);
        let (loop_status, run_status, stop_reason, error) = match end {
            LoopEnd::Concluded(status) => {
                (status, RunStatus::Completed, StopReason::Concluded, None)
            }
            LoopEnd::MaxTurns => (200, RunStatus::Completed, StopReason::MaxTurns, None),
            LoopEnd::Cancelled => (499, RunStatus::Cancelled, StopReason::Cancelled, None),
            LoopEnd::Failed(message) => (500, RunStatus::Failed, StopReason::Failed, Some(message)),
            LoopEnd::Abandoned(reason) => (
                508,
                RunStatus::LoopDetected,
                StopReason::Abandoned,
                Some(reason),
            ),
            LoopEnd::Overflow => (413, RunStatus::ContextFull, StopReason::ContextFull, None),
        };
        // A loop that failed, was abandoned or overflowed is a failure the operator should see.
        if loop_status >= 400 && loop_status != 499 {
            tracing::warn!(run = %self.alias, loop_seq = loop_row.sequence, loop_status, error = error.as_deref(), "loop failed");
        } else {
            tracing::info!(run = %self.alias, loop_seq = loop_row.sequence, loop_status, "loop finished");
        }
        // A loop that did its work may leave memories behind, before its end is recorded.
        let consolidating = matches!(stop_reason, StopReason::Concluded | StopReason::MaxTurns)
            && memory_consolidate::requested(&flags, self.svc.config.recall.consolidate);
        let msg = Finish {
            loop_id: loop_row.id,
            loop_status,
            run_status,
            stop_reason,
            error,
            kept: memory_recall::kept(&flags, self.svc.config.recall.enabled),
        };
        let (queue, svc, run) = (self.queue.clone(), self.svc.clone(), self.run);
        let alias = Arc::clone(&self.alias);
        let work = async move {
            // The session state first: consolidation reads it.
            if refresh {
                let refreshed =
                    session_state::refresh(&svc, run, Occasion::LoopEnd, &loop_row.model).await;
                tracing::debug!(run = %alias, ?refreshed, "session state after the loop");
            }
            if consolidating {
                consolidate::consolidate(svc, run, loop_row).await;
            }
            queue.send(msg).await
        };
        let done = work.into_actor(self).map(|res, act, ctx| {
            match res {
                Ok(Ok(params)) => act
                    .svc
                    .publish_state(act.run.project_id, &act.alias, &params),
                Ok(Err(e)) => {
                    tracing::error!(run = %act.alias, error = %e, "cannot record the loop's end")
                }
                Err(e) => tracing::error!(run = %act.alias, error = %e, "loop queue unavailable"),
            }
            act.phase = Phase::Idle;
            act.wake(ctx);
            act.report_idle();
        });
        ctx.spawn(done);
    }
}

impl Actor for RunActor {
    type Context = Context<Self>;
}

impl Handler<Begin> for RunActor {
    type Result = ();

    fn handle(&mut self, msg: Begin, ctx: &mut Context<Self>) {
        self.took();
        if matches!(self.phase, Phase::Idle) {
            self.phase = Phase::Claiming;
            self.prepare_loop(msg.claimed, ctx);
        } else {
            // Only a new run's actor is sent this, and it starts idle; the claimed loop stays
            // running in the store, where recovery finds it should this ever happen.
            tracing::error!(run = %self.alias, "a claimed loop arrived while another is active");
        }
        self.report_idle();
    }
}

impl Handler<Restore> for RunActor {
    type Result = ();

    fn handle(&mut self, msg: Restore, ctx: &mut Context<Self>) {
        self.took();
        if matches!(self.phase, Phase::Idle) {
            // No discovery here: the loop ran before the restart, so any context length its
            // provider gave was cached then, and the pending proposal must be resolvable at once.
            let model_context = msg.claimed.model.as_ref().and_then(|m| m.context_length);
            if matches!(msg.paused, Paused::Output(_)) {
                // Its turn was running: it holds its place again (a proposal's does not).
                self.svc.admission.hold(
                    self.run.run_id,
                    self.run.project_id,
                    msg.claimed.run.user.clone(),
                );
            }
            self.start_loop(msg.claimed, model_context, Some(msg.paused), ctx);
        }
        self.report_idle();
    }
}

impl RunActor {
    /// Notifications carry `alias` from now on.
    fn rename(&mut self, alias: &str) {
        if *self.alias != *alias {
            self.alias = Arc::from(alias);
            if let Phase::Running(active) = &mut self.phase {
                active.job.alias = Arc::clone(&self.alias);
            }
        }
    }
}

impl Handler<Rename> for RunActor {
    type Result = ();

    fn handle(&mut self, msg: Rename, _: &mut Context<Self>) {
        self.took();
        self.rename(&msg.0);
        self.report_idle();
    }
}

impl Handler<TurnDone> for RunActor {
    type Result = ();

    /// The end of the loop's current turn; one that was stopped, or belongs to a loop already
    /// ended, is stale and dropped.
    fn handle(&mut self, msg: TurnDone, ctx: &mut Context<Self>) {
        let current = matches!(&self.phase, Phase::Running(active)
            if matches!(active.doing, Some(Doing::Turn(_, seq)) if seq == msg.seq));
        if current {
            self.turn_done(msg.result, ctx);
        }
        self.report_idle();
    }
}
