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
//! A client's call on the run (inject, continue, cancel, resolve, rename) reaches the actor as
//! one [`RunCall`], taken in one handler (`command`).
//!
//! An actor lives only while its run has something to do: idle, it tells its registry and is
//! retired (`retire`); the run's next message starts a fresh one from the database.
//!
//! The actor is the interpreter of the run's pure state machine,
//! [`rummy_core::orchestration`]: each message, and each end of work it spawned, becomes an
//! input; the machine answers the new state's effects, which the actor performs
//! (`interpret`). The control state — the phase, what the loop does, a pending cancel, the
//! place asked for, the retire bookkeeping — lives in the machine; the actor keeps only what
//! the effects need (the loop's row and turn job, the executor's address, the output wait).

mod claim;
mod command;
mod consolidate;
mod finish;
mod output;
mod place;
mod queue;
mod resolve;
mod retire;
use crate::loop_queue::{Claimed, LoopQueue};
use crate::services::Services;
use crate::turn::{Decision, StopTurn, TurnDone, TurnExecutor, TurnJob};
use actix::prelude::*;
pub use command::RunCall;
use output::OutputWait;
use queue::PromptJob;
use resolve::Pending;
pub use retire::{Idle, Keeper, RecoverRun, Retire};
use rummy_core::orchestration::{Effect, Facts, Input, Orchestration, TurnOutcome};
use rummy_core::turn::streams::Awaited;
use rummy_store::entries::RunRef;
use rummy_store::loops::Loop;
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

/// What a restored loop was waiting on when the server stopped.
#[derive(Debug, Clone)]
pub enum Paused {
    /// A pending proposal (its path): resolving it resumes the turn.
    Proposal(String),
    /// An accepted command's output (its channels failed by recovery): the turn goes on.
    Output(Awaited),
}

/// Restore a run a restart left waiting on a proposal or on a command's output (`rummy_core::turn::recovery`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Restore {
    /// Its active loop, run and model.
    pub claimed: Claimed,
    /// What the loop waited on.
    pub paused: Paused,
}

/// What the run's actor carries through its state machine.
pub(crate) struct Interpreter;

impl rummy_core::orchestration::Carry for Interpreter {
    type Claimed = Claimed;
    type Start = crate::turn::Start;
    type Resolution = Pending;
    type Output = OutputWait;
    type Prompt = PromptJob;

    fn fresh() -> crate::turn::Start {
        crate::turn::Start::Fresh
    }

    fn is_new(start: &crate::turn::Start) -> bool {
        matches!(
            start,
            crate::turn::Start::Fresh | crate::turn::Start::Allocated(_)
        )
    }

    fn turn_of(start: &crate::turn::Start) -> Option<i32> {
        match start {
            crate::turn::Start::Fresh => None,
            crate::turn::Start::Allocated(next) => Some(next.turn),
            crate::turn::Start::Resume { turn, .. } => Some(*turn),
        }
    }
}

/// The loop the run claimed: its row, and its turns' job once it started.
struct Current {
    loop_row: Loop,
    job: Option<TurnJob>,
}

/// One run.
pub struct RunActor {
    svc: Services,
    run: RunRef,
    alias: Arc<str>,
    queue: Addr<LoopQueue>,
    /// The run's control state.
    machine: Orchestration<Interpreter>,
    /// The loop claimed or running.
    current: Option<Current>,
    /// The turn running: its number and executor.
    executor: Option<(u64, Addr<TurnExecutor>)>,
    /// The wait for an accepted command's output, a future on the actor's context.
    output_wait: Option<SpawnHandle>,
    /// Who started the run (its runs in flight are counted under this user), once a loop of
    /// it was claimed.
    user: Option<String>,
    /// The registry that keeps the actor, told when it is idle (see `retire`).
    keeper: Keeper,
    /// The actor retired: its supervisor does not bring it back to work.
    retired: bool,
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
        let machine = Orchestration::new(svc.config.limits.max_turns);
        RunActor {
            svc,
            run,
            alias: Arc::from(alias),
            queue,
            machine,
            current: None,
            executor: None,
            output_wait: None,
            user: None,
            keeper,
            retired: false,
        }
    }

    /// Feeds the machine `input` and performs its effects, in order.
    fn step(&mut self, input: Input<Interpreter>, ctx: &mut Context<Self>) {
        let facts = Facts {
            now: crate::clock::now(),
            gated: self.svc.admission.applies(self.run.project_id),
            counts_runs: self.svc.admission.counts_runs(),
        };
        for effect in self.machine.step(input, facts) {
            self.perform(effect, ctx);
        }
    }

    /// Performs one effect.
    fn perform(&mut self, effect: Effect<Interpreter>, ctx: &mut Context<Self>) {
        let run_id = self.run.run_id;
        match effect {
            Effect::ReportIdle { handled } => self.keeper.idle.do_send(Idle {
                run_id,
                id: self.keeper.id,
                handled,
            }),
            Effect::Stop => {
                tracing::debug!(run = %self.alias, "idle run actor retired");
                self.retired = true;
                ctx.stop();
            }
            Effect::StopCommands { awaiting } => self.stop_commands(awaiting),
            Effect::Cancelled(stopped) => {
                tracing::debug!(run = %self.alias, stopped, "cancel: a loop stopped or not");
            }
            Effect::LookForPlace => self.look_for_place(ctx),
            Effect::AskPlace { asked_at, since } => self.ask_place(asked_at, since, ctx),
            Effect::TellQueued { turn, queued } => self.tell_queued(turn, queued),
            Effect::ReleasePlace => self.svc.admission.release(run_id),
            Effect::WithdrawPlace => self.svc.admission.withdraw(run_id),
            Effect::Claim { admitted } => self.claim(admitted, ctx),
            Effect::Prepare {
                claimed,
                hold,
                paused,
            } => {
                if hold {
                    let user = claimed.run.user.clone();
                    self.svc.admission.hold(run_id, self.run.project_id, user);
                }
                self.prepare_loop(claimed, paused, ctx);
            }
            Effect::StartTurn {
                seq,
                start,
                first_in_loop,
                next_allowed,
            } => {
                let Some(mut job) = self.current.as_ref().and_then(|c| c.job.clone()) else {
                    return;
                };
                job.first_in_loop = first_in_loop;
                job.next_allowed = next_allowed;
                let done = ctx.address().recipient();
                let executor = TurnExecutor::start(self.svc.clone(), job, seq, start, done);
                self.executor = Some((seq, executor));
            }
            Effect::StopTurn(seq) => {
                if let Some((running, executor)) = self.executor.take() {
                    if running == seq {
                        executor.do_send(StopTurn);
                    }
                }
            }
            Effect::AwaitOutput(wait) => self.await_output(wait, ctx),
            Effect::StopOutputWait => {
                if let Some(wait) = self.output_wait.take() {
                    ctx.cancel_future(wait);
                }
            }
            Effect::DropOutput(wait) => {
                let path = wait.awaited.path;
                self.svc.shell.forget_waiter(run_id, &path);
                self.cancel_output(path);
            }
            Effect::ForgetContext => {
                if let Some(job) = self.current.as_mut().and_then(|c| c.job.as_mut()) {
                    job.context = Arc::default();
                }
            }
            Effect::Resolve(pending) => self.resolve(pending, ctx),
            Effect::NotPending(pending) => pending.not_pending(),
            Effect::Enqueue(prompt) => self.enqueue(prompt, ctx),
            Effect::Fold(prompt) => self.fold(prompt, ctx),
            Effect::Finish(end) => self.finish(end, ctx),
            Effect::Stray(_) => {
                // Only a new run's actor is sent a claimed loop, and it starts idle; the loop
                // stays running in the store, where recovery finds it should this ever happen.
                tracing::error!(run = %self.alias, "a claimed loop arrived while another is active");
            }
        }
    }

    /// Notifications carry `alias` from now on.
    fn rename(&mut self, alias: &str) {
        if *self.alias != *alias {
            self.alias = Arc::from(alias);
            if let Some(job) = self.current.as_mut().and_then(|c| c.job.as_mut()) {
                job.alias = Arc::clone(&self.alias);
            }
        }
    }
}

impl Actor for RunActor {
    type Context = Context<Self>;
}

impl Supervised for RunActor {
    /// A failed actor (see `finish`) comes back with nothing in memory: its turn is stopped,
    /// its place given back, and its registry recovers the run from the database as a restart
    /// of the server would — an interrupted loop ends, a paused one is restored, queued loops
    /// run. A retired actor stays idle until its last address is dropped.
    fn restarting(&mut self, _: &mut Context<Self>) {
        if let Some((_, executor)) = self.executor.take() {
            executor.do_send(StopTurn);
        }
        self.output_wait = None;
        self.current = None;
        self.machine = self.machine.restarted();
        if self.retired {
            return;
        }
        tracing::warn!(run = %self.alias, "run actor restarted: its run is recovered from the database");
        self.svc.admission.release(self.run.run_id);
        self.keeper.recover.do_send(RecoverRun {
            run: self.run,
            alias: self.alias.to_string(),
        });
    }
}

impl Handler<Begin> for RunActor {
    type Result = ();

    fn handle(&mut self, msg: Begin, ctx: &mut Context<Self>) {
        self.step(Input::Begin(msg.claimed), ctx);
    }
}

impl Handler<Restore> for RunActor {
    type Result = ();

    fn handle(&mut self, msg: Restore, ctx: &mut Context<Self>) {
        let paused = match msg.paused {
            Paused::Proposal(path) => rummy_core::orchestration::Paused::Proposal(path),
            Paused::Output(awaited) => {
                let waiter = self.svc.shell.waiter(self.run.run_id, &awaited.path);
                let path = awaited.path.clone();
                let wait = OutputWait {
                    awaited,
                    waiter,
                    job: None,
                };
                rummy_core::orchestration::Paused::Output(path, wait)
            }
        };
        self.step(Input::Restore(msg.claimed, paused), ctx);
    }
}

impl Handler<TurnDone> for RunActor {
    type Result = ();

    /// The end of the loop's current turn; one that was stopped, or belongs to a loop already
    /// ended, is stale and dropped (by the machine).
    fn handle(&mut self, msg: TurnDone, ctx: &mut Context<Self>) {
        let current = self
            .executor
            .as_ref()
            .is_some_and(|(seq, _)| *seq == msg.seq);
        if current {
            self.executor = None;
        }
        let end = match msg.result {
            Ok(end) => {
                if current {
                    if let Some(job) = self.current.as_mut().and_then(|c| c.job.as_mut()) {
                        job.referee = end.referee;
                    }
                }
                match end.decision {
                    Decision::Paused { path } => TurnOutcome::Paused(path),
                    Decision::Continue => TurnOutcome::Continue(
                        end.next
                            .map_or(crate::turn::Start::Fresh, crate::turn::Start::Allocated),
                    ),
                    Decision::Conclude(status) => TurnOutcome::Concluded(status),
                    Decision::Abandon(reason) => TurnOutcome::Abandoned(reason),
                    Decision::Overflow => TurnOutcome::Overflow,
                }
            }
            Err(failure) => TurnOutcome::Failed(failure.to_string()),
        };
        self.step(Input::TurnDone { seq: msg.seq, end }, ctx);
    }
}
