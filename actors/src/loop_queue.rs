//! `LoopQueue`: a run's durable FIFO of loops (the `loops` table), and the run status that follows each loop's start and end.
//!
//! It owns the run's queue: every queuing, injection, claim and end of the run's loops goes
//! through it, and it takes them one at a time (`serial`), so they reach the database in the
//! order the run sent them — a claim never passes a queuing sent before it. It keeps the
//! queued loops in memory as it writes them (`pending`), so a claim with nothing queued — the
//! one after almost every loop's end — costs the writer nothing: an empty memory is confirmed
//! by a read of the table (a loop queued by the run's creation, or by another process while it
//! held the run, is found there) and only a loop found is claimed in a write.
//!
//! Claiming a loop also fixes its model: a loop whose run asked for routing
//! is routed in the claiming transaction (`loops::route`), so the choice is
//! made once per loop and survives a restart.

use crate::clock::{now, write_ctx};
use crate::store::Store;
use actix::prelude::*;
use rummy_core::memory::history;
use rummy_core::turn::{proposals, record, state, TurnRef};
use rummy_core::wire::bounded::Bounds;
use rummy_provider::routing::RoutingConfig;
use rummy_store::entries::{RunRef, WriteCtx};
use rummy_store::flags::RunFlags;
use rummy_store::ids::{LoopId, RunId};
use rummy_store::loops::{self, Loop};
use rummy_store::models::{self, Model};
use rummy_store::notifications::Recorded;
use rummy_store::run::{Mode, RunStatus, StopReason};
use rummy_store::runs::{self, Run};
use rummy_store::{entries, projects, turns, StoreError};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Appends a loop to the queue.
#[derive(Message)]
#[rtype(result = "Result<Loop, StoreError>")]
pub struct Enqueue {
    /// `ask` or `act`.
    pub mode: Mode,
    /// Model alias.
    pub model: String,
    /// The prompt.
    pub prompt: String,
    /// Loop flags.
    pub config: RunFlags,
}

/// Folds an injected prompt into the run's active loop, or queues it as a loop of its own (see
/// [`inject`]); answers whether it was folded in.
#[derive(Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct InjectPrompt {
    /// The loop the run has active.
    pub loop_id: LoopId,
    /// The active loop's mode, the folded-in prompt's.
    pub mode: Mode,
    /// The loop it becomes when it cannot be folded in.
    pub queued: Enqueue,
}

/// Takes the oldest queued loop (routing it, if its run asked) and marks the run running.
#[derive(Message)]
#[rtype(result = "Result<Option<Claimed>, StoreError>")]
pub struct ClaimNext;

/// A claimed loop with what its turns need.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The loop.
    pub loop_row: Loop,
    /// The run as it stands.
    pub run: Run,
    /// The loop's model (the routed one for a routed loop), if defined.
    pub model: Option<Model>,
    /// Its project's command network override (`project/set {commandNetwork}`) as the loop
    /// was claimed; `None`: the server's `RUMMY_COMMAND_NETWORK` applies.
    pub command_network: Option<bool>,
}

/// Ends the active loop, sets the run's status and pushes the final `run/state`.
#[derive(Message)]
#[rtype(result = "Result<Recorded, StoreError>")]
pub struct Finish {
    /// The loop.
    pub loop_id: LoopId,
    /// The loop's result status.
    pub loop_status: i32,
    /// The run's status afterwards.
    pub run_status: RunStatus,
    /// Why it ended, stored in the loop's result (`stopReason`).
    pub stop_reason: StopReason,
    /// Why it failed, recorded as an `error://` entry the model sees.
    pub error: Option<String>,
    /// Whether the project keeps the loop for recall (its history line, its facts indexed).
    pub kept: bool,
}

/// Owns one run's queue.
pub struct LoopQueue {
    run: RunRef,
    store: Store,
    token_divisor: u32,
    /// The class → alias map claimed loops are routed with, when their run asks.
    routing: RoutingConfig,
    /// With several processes on PostgreSQL, this process: a loop is claimed only while it
    /// holds the run (one whose hold was taken over claims nothing more).
    holder: Option<std::sync::Arc<str>>,
    /// The run's queued loops, oldest first, as this queue last wrote or read them. Never
    /// trusted to be empty: a claim that finds it so reads the table first.
    pending: VecDeque<LoopId>,
}

impl LoopQueue {
    /// A queue for a run.
    pub fn new(run: RunRef, store: Store, token_divisor: u32, routing: RoutingConfig) -> Self {
        LoopQueue {
            run,
            store,
            token_divisor,
            routing,
            holder: None,
            pending: VecDeque::new(),
        }
    }

    /// Claims loops only while process `holder` holds the run (several processes on
    /// PostgreSQL).
    pub fn held_by(mut self, holder: std::sync::Arc<str>) -> Self {
        self.holder = Some(holder);
        self
    }
}

impl Actor for LoopQueue {
    type Context = Context<Self>;
}

/// Handles the queue's messages one at a time: the next is not taken until this one's write is
/// done, so the run's claims, queuings and ends are applied in the order they were sent. `then`
/// brings the queue's memory up to date with what the write did, before the answer goes out.
fn serial<T: 'static, R: 'static>(
    work: std::pin::Pin<Box<dyn std::future::Future<Output = T>>>,
    queue: &LoopQueue,
    then: impl FnOnce(T, &mut LoopQueue) -> R + 'static,
) -> AtomicResponse<LoopQueue, R> {
    AtomicResponse::new(Box::pin(
        work.into_actor(queue)
            .map(move |done, act, _| then(done, act)),
    ))
}

/// What an injected prompt became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Injected {
    /// Folded into the active loop's next turn.
    Folded,
    /// Queued as a loop of its own.
    Queued(LoopId),
}

impl Handler<Enqueue> for LoopQueue {
    type Result = AtomicResponse<Self, Result<Loop, StoreError>>;

    fn handle(&mut self, msg: Enqueue, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run_id = self.run.run_id;
        serial(
            Box::pin(async move { store.write(move |c| enqueue(c, run_id, &msg)).await }),
            self,
            |queued, act| {
                if let Ok(l) = &queued {
                    act.pending.push_back(l.id);
                }
                queued
            },
        )
    }
}

/// Appends a loop to the run's queue; a run that is not running becomes queued.
fn enqueue(c: &mut rummy_store::db::Db, run_id: RunId, msg: &Enqueue) -> Result<Loop, StoreError> {
    let now = now();
    let l = loops::enqueue(
        c,
        run_id,
        msg.mode,
        &msg.model,
        &msg.prompt,
        &msg.config,
        now,
    )?;
    if !runs::by_id(c, run_id)?.run_status().is_active() {
        runs::set_status(c, run_id, RunStatus::Queued, now)?;
    }
    Ok(l)
}

impl Handler<InjectPrompt> for LoopQueue {
    type Result = AtomicResponse<Self, Result<bool, StoreError>>;

    fn handle(&mut self, msg: InjectPrompt, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let (run, divisor) = (self.run, self.token_divisor);
        serial(
            Box::pin(async move {
                store
                    .write(move |c| {
                        let at = write_ctx(divisor);
                        inject(c, run, msg.loop_id, msg.mode, &msg.queued, at)
                    })
                    .await
            }),
            self,
            |injected, act| {
                let injected = injected?;
                if let Injected::Queued(id) = injected {
                    act.pending.push_back(id);
                }
                Ok(injected == Injected::Folded)
            },
        )
    }
}

/// Folds an injected prompt into the run's active loop `loop_id`: `prompt://<next turn>`, which that
/// turn reads (joined after a prompt injected before it for the same turn, so neither is lost).
/// A loop that has ended, or has not begun its first turn (whose own prompt takes that path),
/// gets the prompt as a loop of its own, `msg`, instead.
///
/// One write, so it is ordered with the loop's own: a loop whose last turn ends after this wrote
/// hands the prompt on to a new loop (see [`finish`]).
fn inject(
    c: &mut rummy_store::db::Db,
    run: RunRef,
    loop_id: LoopId,
    mode: Mode,
    msg: &Enqueue,
    at: WriteCtx,
) -> Result<Injected, StoreError> {
    let run_id = run.run_id;
    let running = loops::active(c, run_id)?.is_some_and(|l| l.id == loop_id);
    if !running || !turns::any_in_loop(c, run_id, loop_id)? {
        return Ok(Injected::Queued(enqueue(c, run_id, msg)?.id));
    }
    let turn = runs::by_id(c, run_id)?.next_turn;
    let path = format!("prompt://{turn}");
    let body = match entries::by_path(c, run_id, &path)? {
        Some(earlier) => format!("{}\n\n{}", earlier.body, msg.prompt),
        None => msg.prompt.clone(),
    };
    record::prompt(c, TurnRef { run, loop_id, turn }, &body, mode, at)?;
    Ok(Injected::Folded)
}

impl Handler<ClaimNext> for LoopQueue {
    type Result = AtomicResponse<Self, Result<Option<Claimed>, StoreError>>;

    fn handle(&mut self, _: ClaimNext, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run_id = self.run.run_id;
        let routing = self.routing.clone();
        let holder = self.holder.clone();
        let remembered = !self.pending.is_empty();
        serial(
            Box::pin(async move {
                // An empty memory is confirmed by a read; only a loop found costs a write.
                let found = if remembered {
                    None
                } else {
                    let ids = store.read(move |c| loops::queued_ids(c, run_id)).await?;
                    if ids.is_empty() {
                        return Ok((Some(ids), None));
                    }
                    Some(ids)
                };
                let claimed = store
                    .write(move |c| {
                        if let Some(me) = &holder {
                            if !rummy_store::cluster::holds(c, run_id, me)? {
                                tracing::warn!(
                                    run_id = run_id.0,
                                    "not claiming a loop of a run this process no longer holds"
                                );
                                return Ok(None);
                            }
                        }
                        claim(c, run_id, &routing)
                    })
                    .await?;
                Ok((found, claimed))
            }),
            self,
            |done: Result<(Option<Vec<LoopId>>, Option<Claimed>), StoreError>, act| {
                let (found, claimed) = done?;
                if let Some(found) = found {
                    act.pending = found.into();
                }
                match &claimed {
                    Some(c) => act.pending.retain(|id| *id != c.loop_row.id),
                    // The table has nothing to claim (or the run is held elsewhere): neither
                    // has the memory.
                    None => act.pending.clear(),
                }
                Ok(claimed)
            },
        )
    }
}

/// Takes the run's oldest queued loop, routes it if its run asked, and marks the run running:
/// what [`ClaimNext`] writes, also called by a new run's creation to claim its first loop in
/// the same write.
pub fn claim(
    c: &mut rummy_store::db::Db,
    run_id: RunId,
    routing: &RoutingConfig,
) -> Result<Option<Claimed>, StoreError> {
    let now = now();
    let Some(loop_row) = loops::claim_next(c, run_id, now)? else {
        return Ok(None);
    };
    let loop_row = loops::route(c, loop_row, routing, now)?;
    runs::set_status(c, run_id, RunStatus::Running, now)?;
    let run = runs::by_id(c, run_id)?;
    let model = models::by_alias(c, &loop_row.model)?;
    let command_network = projects::command_network(c, run.project_id)?;
    Ok(Some(Claimed {
        loop_row,
        run,
        model,
        command_network,
    }))
}

impl Handler<Finish> for LoopQueue {
    type Result = AtomicResponse<Self, Result<Recorded, StoreError>>;

    fn handle(&mut self, msg: Finish, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run = self.run;
        let divisor = self.token_divisor;
        let bounds = store.bounds();
        serial(
            Box::pin(async move {
                store
                    .write(move |c| finish(c, run, &msg, bounds, write_ctx(divisor)))
                    .await
            }),
            self,
            |ended, act| {
                let (pushed, handed_on) = ended?;
                act.pending.extend(handed_on);
                Ok(pushed)
            },
        )
    }
}

/// Ends the loop; answers its final `run/state` and the loop an injected prompt the loop never
/// ran was handed on to, if one was.
fn finish(
    c: &mut rummy_store::db::Db,
    run: RunRef,
    msg: &Finish,
    bounds: Bounds,
    at: WriteCtx,
) -> Result<(Recorded, Option<LoopId>), StoreError> {
    let now = at.now;
    let interrupted = turns::running_in_loop(c, run.run_id, msg.loop_id)?;
    if let Some(turn) = &interrupted {
        let status = if msg.run_status == RunStatus::Cancelled {
            499
        } else {
            turns::FAILED
        };
        turns::finish(c, turn.id, status, now)?;
    }
    let stored = runs::by_id(c, run.run_id)?;
    let last_turn = stored.last_turn();
    // A loop that ends while a proposal waits takes the proposal with it.
    let reason = if msg.run_status == RunStatus::Cancelled {
        "cancelled"
    } else {
        "interrupted"
    };
    let t = TurnRef {
        run,
        loop_id: msg.loop_id,
        turn: last_turn.max(1),
    };
    proposals::cancel_pending(c, t, reason, at)?;
    if let Some(message) = &msg.error {
        let turn = interrupted
            .as_ref()
            .map_or(last_turn, |t| t.sequence)
            .max(1);
        let t = TurnRef {
            run,
            loop_id: msg.loop_id,
            turn,
        };
        record::warning(c, t, message, at)?;
    }
    let result = json!({
        "status": msg.loop_status,
        "error": msg.error,
        loops::STOP_REASON: msg.stop_reason.as_str(),
    });
    loops::finish(c, msg.loop_id, msg.loop_status, &result, now)?;
    history::loop_ended(
        c,
        run,
        &stored.alias,
        msg.loop_id,
        history::LoopEnding {
            status: msg.loop_status,
            stop_reason: msg.stop_reason,
            error: msg.error.as_deref(),
            kept: msg.kept,
        },
        at,
    )?;
    runs::set_status(c, run.run_id, msg.run_status, now)?;
    let pushed = state::push(
        c,
        run.run_id,
        last_turn,
        msg.run_status.code(),
        Value::Null,
        bounds,
        now,
    )?;
    // A prompt injected for a turn the loop never ran (it concluded first) is not dropped: it
    // becomes a loop of its own. A cancel stops what was asked of the loop, the prompt with it.
    let mut handed_on = None;
    if msg.run_status != RunStatus::Cancelled {
        if let Some(prompt) = entries::injected_for(c, run.run_id, msg.loop_id, last_turn + 1)? {
            // As an inject with no active loop is queued: the run's model and flags.
            let queued = Enqueue {
                mode: prompt.prompt_mode().unwrap_or(stored.mode()),
                model: stored.model.clone(),
                prompt: prompt.body,
                config: stored.flags(),
            };
            handed_on = Some(enqueue(c, run.run_id, &queued)?.id);
        }
    }
    Ok((pushed, handed_on))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rummy_store::{projects, schemes};

    const DIVISOR: u32 = 4;

    /// A new run `r` of a new project `p`, nothing queued.
    fn new_run(c: &mut rummy_store::db::Db) -> RunRef {
        let project = projects::hello(c, "p", "/p", None, now()).unwrap();
        let new = runs::NewRun {
            project_id: project.id,
            alias: Some("r".into()),
            model: "m".into(),
            ..Default::default()
        };
        let stored = runs::create(c, &new, now()).unwrap();
        RunRef {
            run_id: stored.id,
            project_id: project.id,
        }
    }

    /// A store with a run `r` whose first loop is claimed (active, no turn begun yet).
    fn claimed_run() -> (tempfile::TempDir, rummy_store::db::Db, RunRef, LoopId) {
        let dir = tempfile::TempDir::new().unwrap();
        let mut c = rummy_store::database::open_writer(&dir.path().join("rummy.db")).unwrap();
        schemes::write_registry(&mut c).unwrap();
        let run = new_run(&mut c);
        let first = Enqueue {
            mode: Mode::Ask,
            model: "m".into(),
            prompt: "Do the thing".into(),
            config: RunFlags::default(),
        };
        enqueue(&mut c, run.run_id, &first).unwrap();
        let claimed = claim(&mut c, run.run_id, &RoutingConfig::default())
            .unwrap()
            .unwrap();
        (dir, c, run, claimed.loop_row.id)
    }

    fn injected(prompt: &str) -> Enqueue {
        Enqueue {
            mode: Mode::Ask,
            model: "m".into(),
            prompt: prompt.into(),
            config: RunFlags::default(),
        }
    }

    /// Before the loop's first turn begins, `prompt://<next turn>` is the loop's own prompt's
    /// path: an inject then waits as a loop of its own rather than being overwritten.
    #[test]
    fn an_inject_before_the_first_turn_is_queued_as_a_loop() {
        let (_dir, mut c, run, loop_id) = claimed_run();
        let folded = inject(
            &mut c,
            run,
            loop_id,
            Mode::Ask,
            &injected("More"),
            write_ctx(DIVISOR),
        )
        .unwrap();
        let queued = loops::queued_ids(&mut c, run.run_id).unwrap();
        assert_eq!(queued.len(), 1);
        assert_eq!(folded, Injected::Queued(queued[0]));
        assert_eq!(
            entries::by_path(&mut c, run.run_id, "prompt://1").unwrap(),
            None
        );
    }

    /// An inject that reaches the writer after the loop's end is a loop of its own.
    #[test]
    fn an_inject_into_an_ended_loop_is_queued_as_a_loop() {
        let (_dir, mut c, run, loop_id) = claimed_run();
        turns::begin(&mut c, run.run_id, loop_id, now()).unwrap();
        let end = Finish {
            loop_id,
            loop_status: 200,
            run_status: RunStatus::Completed,
            stop_reason: StopReason::Concluded,
            error: None,
            kept: true,
        };
        finish(&mut c, run, &end, Bounds::default(), write_ctx(DIVISOR)).unwrap();
        let folded = inject(
            &mut c,
            run,
            loop_id,
            Mode::Ask,
            &injected("More"),
            write_ctx(DIVISOR),
        )
        .unwrap();
        let queued = loops::queued_ids(&mut c, run.run_id).unwrap();
        assert_eq!(queued.len(), 1);
        assert_eq!(folded, Injected::Queued(queued[0]));
        assert_eq!(
            runs::by_id(&mut c, run.run_id).unwrap().run_status(),
            RunStatus::Queued
        );
    }

    /// A loop that ends without running the turn an inject was for hands the prompt on as a
    /// new loop; a cancelled one drops it with the rest of what it was asked.
    #[test]
    fn a_loop_ending_before_its_injected_turn_hands_the_prompt_on_unless_cancelled() {
        for (run_status, loop_status, queued) in [
            (RunStatus::Completed, 200, vec!["More".to_owned()]),
            (RunStatus::Cancelled, 499, vec![]),
        ] {
            let (_dir, mut c, run, loop_id) = claimed_run();
            turns::begin(&mut c, run.run_id, loop_id, now()).unwrap();
            let folded = inject(
                &mut c,
                run,
                loop_id,
                Mode::Act,
                &injected("More"),
                write_ctx(DIVISOR),
            );
            assert_eq!(folded.unwrap(), Injected::Folded);
            let end = Finish {
                loop_id,
                loop_status,
                run_status,
                stop_reason: StopReason::Concluded,
                error: None,
                kept: true,
            };
            let (_, handed_on) =
                finish(&mut c, run, &end, Bounds::default(), write_ctx(DIVISOR)).unwrap();
            assert_eq!(
                handed_on,
                loops::queued_ids(&mut c, run.run_id).unwrap().pop()
            );
            let next = claim(&mut c, run.run_id, &RoutingConfig::default()).unwrap();
            let prompts: Vec<String> = next.iter().map(|n| n.loop_row.prompt.clone()).collect();
            assert_eq!(prompts, queued, "after a {loop_status}");
            if let Some(next) = next {
                assert_eq!(
                    next.loop_row.mode(),
                    Mode::Act,
                    "the mode the prompt was injected in"
                );
            }
        }
    }

    /// A store on a fresh SQLite database with a run `r` and nothing queued, the writer's commits
    /// counted by its metrics.
    fn store_with_run() -> (tempfile::TempDir, Store, RunRef) {
        let dir = tempfile::TempDir::new().unwrap();
        let location = rummy_store::location::Location::Sqlite(dir.path().join("rummy.db"));
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::new().unwrap());
        let store = Store::open(&location, 2, metrics).unwrap();
        let mut c = rummy_store::database::open_writer(&dir.path().join("rummy.db")).unwrap();
        (dir, store, new_run(&mut c))
    }

    /// The writer's group commits so far.
    fn commits(store: &Store) -> u64 {
        store.metrics().commit_seconds.get_sample_count()
    }

    /// The prompt of what a claim answered.
    fn prompt_of(claimed: Result<Option<Claimed>, StoreError>) -> Option<String> {
        claimed.unwrap().map(|c| c.loop_row.prompt)
    }

    /// The queue claims its loops oldest first, and a claim with nothing queued — the one after
    /// almost every loop's end — is answered without a write.
    #[actix_rt::test]
    async fn claims_come_in_queue_order_and_an_empty_claim_costs_no_write() {
        let (_dir, store, run) = store_with_run();
        let queue = LoopQueue::new(run, store.clone(), DIVISOR, RoutingConfig::default()).start();
        let before = commits(&store);
        assert_eq!(prompt_of(queue.send(ClaimNext).await.unwrap()), None);
        assert_eq!(commits(&store), before, "an empty claim wrote");
        for prompt in ["first", "second"] {
            queue.send(injected(prompt)).await.unwrap().unwrap();
        }
        let first = queue.send(ClaimNext).await.unwrap().unwrap().unwrap();
        assert_eq!(first.loop_row.prompt, "first");
        let end = Finish {
            loop_id: first.loop_row.id,
            loop_status: 200,
            run_status: RunStatus::Completed,
            stop_reason: StopReason::Concluded,
            error: None,
            kept: true,
        };
        queue.send(end).await.unwrap().unwrap();
        let second = queue.send(ClaimNext).await.unwrap();
        assert_eq!(prompt_of(second), Some("second".to_owned()));
        let after = commits(&store);
        assert_eq!(prompt_of(queue.send(ClaimNext).await.unwrap()), None);
        assert_eq!(commits(&store), after, "an empty claim wrote");
    }

    /// A loop queued past the queue's memory (by the run's creation, or by another process
    /// while it held the run) is found by the read that confirms an empty memory, and claimed.
    #[actix_rt::test]
    async fn a_loop_queued_past_the_queue_is_still_claimed() {
        let (_dir, store, run) = store_with_run();
        let queue = LoopQueue::new(run, store.clone(), DIVISOR, RoutingConfig::default()).start();
        let outside = injected("queued elsewhere");
        store
            .write(move |c| enqueue(c, run.run_id, &outside))
            .await
            .unwrap();
        let claimed = queue.send(ClaimNext).await.unwrap();
        assert_eq!(prompt_of(claimed), Some("queued elsewhere".to_owned()));
        assert_eq!(prompt_of(queue.send(ClaimNext).await.unwrap()), None);
    }
}
