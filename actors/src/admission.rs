//! `Admission`: the one place a run asks for a place before it claims its next loop, while a
//! fair-use limit applies — a runs-in-flight limit (`RUMMY_MAX_RUNS_PER_USER`,
//! `RUMMY_MAX_RUNS_PER_PROJECT`) or the project's cost ceiling (`project/set`).
//!
//! Without any (the default), [`Admission::applies`] is false and a run claims its loops as it
//! always did: no message, no query. With one, a run idle with a queued loop sends [`Acquire`];
//! it is granted a place at once or waits, queued (status 100, `queued: {reason, position}`
//! pushed in `run/state`), until a pass admits it and it is sent [`Admitted`]. A pass runs
//! whenever a place frees (a loop ends, or pauses at 202), a ceiling changes, a run asks,
//! waiters are restored after a restart, and — while a waiter is held by a ceiling — at the next
//! period boundary and at least every minute, so a period that rolls over lets them start.
//!
//! The places taken are counted here, in memory ([`Book`]): runs hold one while a loop of theirs
//! runs and give it back when it ends or waits on a person; a loop going on after a person
//! answered asks again before its next model call (`going_on`: the run stays 102 and tells its
//! clients itself, with `run/progress` `queued`; a cost ceiling does not hold it). Waiters are
//! admitted round-robin by the user who started their run ([`Book`]). After a restart,
//! recovery rebuilds the counts from the database: the loops it resumes hold again, and the
//! runs it finds queued are restored as waiters in the order they began waiting
//! (`loops.waiting_since`).

use crate::clock::now;
use crate::hub::publish_state;
use crate::hub::NotificationHub;
use crate::store::Store;
use actix::prelude::*;
use rummy_core::fair::admission::{Ask, Book, Queued, RunLimits};
use rummy_core::turn::state;
use rummy_provider::time::Millis;
use rummy_store::ids::{LoopId, ProjectId, RunId};
use rummy_store::projects::{self, Ceiling};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// The longest a waiter held by a cost ceiling goes without the ceiling being checked again.
const RECHECK: Duration = Duration::from_secs(60);

/// A waiting run is given its place: it claims its next loop now.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Admitted;

/// What a run asking for a place hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// The place is its: claim the loop.
    Granted,
    /// It waits, and is sent [`Admitted`] when its turn comes.
    Queued(Queued),
}

/// Asks for a place for a run's next queued loop.
#[derive(Message)]
#[rtype(result = "Admit")]
pub struct Acquire {
    /// The run, its project and user, and when it began waiting.
    pub ask: Ask,
    /// The queued loop it would claim.
    pub loop_id: LoopId,
    /// Where [`Admitted`] goes if it has to wait.
    pub wake: Recipient<Admitted>,
}

/// A run's loop runs (it resumed after a person answered, or after a restart): it counts.
#[derive(Message)]
#[rtype(result = "()")]
struct Hold {
    run_id: RunId,
    project_id: ProjectId,
    user: Option<String>,
}

/// A run's loop no longer runs (it ended, or waits on a person): its place frees.
#[derive(Message)]
#[rtype(result = "()")]
struct Release(RunId);

/// A waiting run no longer waits (its loop was cancelled): it leaves the line, or gives back the
/// place it was just given.
#[derive(Message)]
#[rtype(result = "()")]
struct Withdraw(RunId);

/// Runs a restart found queued, to wait again in the order they began waiting.
#[derive(Message)]
#[rtype(result = "()")]
struct Seed(Vec<Acquire>);

/// A project's cost ceiling changed (`None`: removed).
#[derive(Message)]
#[rtype(result = "()")]
struct SetCeiling {
    project_id: ProjectId,
    ceiling: Option<Ceiling>,
}

/// Why a run waits, and where, if it does.
#[derive(Message)]
#[rtype(result = "Option<Queued>")]
struct QueuedOf(RunId);

/// What [`Admission::applies`] reads without a message: whether runs are counted, and which
/// projects have a ceiling.
#[derive(Debug)]
struct Gate {
    counts_runs: bool,
    ceilings: RwLock<HashSet<ProjectId>>,
}

/// The handle runs and sessions use (in `Services`). One `Arc`: `Services` is cloned many
/// times a turn, and cloning an actix address allocates.
#[derive(Clone)]
pub struct Admission(Arc<Shared>);

struct Shared {
    addr: Addr<AdmissionActor>,
    gate: Gate,
}

impl Admission {
    /// Starts admission under the configured runs limits, with the projects' stored ceilings.
    pub fn start(
        limits: RunLimits,
        ceilings: Vec<(ProjectId, Ceiling)>,
        store: Store,
        hub: Addr<NotificationHub>,
    ) -> Admission {
        let gate = Gate {
            counts_runs: limits.any(),
            ceilings: RwLock::new(ceilings.iter().map(|(id, _)| *id).collect()),
        };
        let addr = AdmissionActor {
            book: Book::new(limits),
            ceilings: ceilings.into_iter().collect(),
            waiters: HashMap::new(),
            store,
            hub,
            recheck: None,
        }
        .start();
        Admission(Arc::new(Shared { addr, gate }))
    }

    /// Whether a loop of `project_id` must ask for a place: a runs limit is set, or the project
    /// has a cost ceiling. When not, a run claims its loops at once, as without fair use.
    pub fn applies(&self, project_id: ProjectId) -> bool {
        self.0.gate.counts_runs
            || self
                .0
                .gate
                .ceilings
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&project_id)
    }

    /// Whether runs in flight are counted (a runs limit is set).
    pub fn counts_runs(&self) -> bool {
        self.0.gate.counts_runs
    }

    /// Asks for a place for the run's next loop (or the next model call of a loop going on).
    /// The ask is queued when this is called, before the answer is awaited: a withdrawal sent
    /// after it finds it.
    pub fn acquire(
        &self,
        acquire: Acquire,
    ) -> impl std::future::Future<Output = Result<Admit, MailboxError>> {
        self.0.addr.send(acquire)
    }

    /// The run's loop runs without asking (a restart found it running): it holds a place, even
    /// over a limit. Only when runs are counted.
    pub fn hold(&self, run_id: RunId, project_id: ProjectId, user: Option<String>) {
        if self.0.gate.counts_runs {
            self.0.addr.do_send(Hold {
                run_id,
                project_id,
                user,
            });
        }
    }

    /// The run's loop ended or waits on a person: its place frees. Only when runs are counted.
    pub fn release(&self, run_id: RunId) {
        if self.0.gate.counts_runs {
            self.0.addr.do_send(Release(run_id));
        }
    }

    /// The run's waiting loop was cancelled: it leaves the line.
    pub fn withdraw(&self, run_id: RunId) {
        self.0.addr.do_send(Withdraw(run_id));
    }

    /// Runs a restart found queued: they wait again, in the order they began waiting.
    pub fn seed(&self, waiters: Vec<Acquire>) {
        if !waiters.is_empty() {
            self.0.addr.do_send(Seed(waiters));
        }
    }

    /// Why the run waits for a place, and its place in that line, if it does.
    pub async fn queued(&self, run_id: RunId) -> Option<Queued> {
        self.0.addr.send(QueuedOf(run_id)).await.ok().flatten()
    }

    /// A project's ceiling was set (`None`: removed): its new loops ask for a place from now on
    /// (or no longer), and its waiters are looked at again.
    pub fn set_ceiling(&self, project_id: ProjectId, ceiling: Option<Ceiling>) {
        {
            let mut with = self
                .0
                .gate
                .ceilings
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if ceiling.is_some() {
                with.insert(project_id);
            } else {
                with.remove(&project_id);
            }
        }
        self.0.addr.do_send(SetCeiling {
            project_id,
            ceiling,
        });
    }
}

/// What admission keeps of a waiting run besides its place in the book.
struct Waiting {
    loop_id: LoopId,
    since: Millis,
    wake: Recipient<Admitted>,
    /// A loop going on: it stays 102 and its run announces the wait itself.
    going_on: bool,
}

/// Keeps the [`Book`] and talks to the store for it.
struct AdmissionActor {
    book: Book,
    ceilings: HashMap<ProjectId, Ceiling>,
    waiters: HashMap<RunId, Waiting>,
    store: Store,
    hub: Addr<NotificationHub>,
    /// The next look at waiters held by a cost ceiling.
    recheck: Option<SpawnHandle>,
}

impl Actor for AdmissionActor {
    type Context = Context<Self>;
}

impl AdmissionActor {
    /// Adds a waiter (a run already waiting keeps its place and its first wake-up address).
    fn wait(&mut self, acquire: Acquire) {
        let run_id = acquire.ask.run_id;
        self.waiters.entry(run_id).or_insert(Waiting {
            loop_id: acquire.loop_id,
            since: acquire.ask.since,
            wake: acquire.wake,
            going_on: acquire.ask.going_on,
        });
        self.book.wait(acquire.ask);
    }

    /// Reads which waiting projects are at or over their ceiling, then admits whom the book
    /// admits: each is sent [`Admitted`], except `asking` (answered by its own call); the runs
    /// that wait anew or for another reason get their `run/state`. Answers whether `asking` got
    /// its place. The actor takes no other message meanwhile (run under `ctx.wait` or as an
    /// atomic response), so the book does not change under the read.
    fn pass(&mut self, asking: Option<RunId>) -> impl ActorFuture<Self, Output = bool> {
        let at = now();
        let ceilings: Vec<(ProjectId, Ceiling)> = self
            .book
            .waiting_projects()
            .into_iter()
            .filter_map(|p| self.ceilings.get(&p).map(|c| (p, *c)))
            .collect();
        let store = self.store.clone();
        let over = async move {
            if ceilings.is_empty() {
                return HashSet::new();
            }
            let checked = ceilings.clone();
            let read = store
                .read(move |c| {
                    let mut over = HashSet::new();
                    for (project_id, ceiling) in &checked {
                        let spent =
                            projects::spent_since(c, *project_id, ceiling.period.start(at))?;
                        if spent >= ceiling.usd {
                            over.insert(*project_id);
                        }
                    }
                    Ok(over)
                })
                .await;
            read.unwrap_or_else(|e| {
                // A ceiling that cannot be checked holds its project's loops; the next check
                // (at most a minute away) tries again.
                tracing::error!(error = %e, "cannot read projects' spending; their new loops wait");
                ceilings.iter().map(|(p, _)| *p).collect()
            })
        };
        over.into_actor(self).map(move |over, act, ctx| {
            let pass = act.book.pass(&over);
            let mut granted = false;
            for run_id in pass.admitted {
                let Some(waiting) = act.waiters.remove(&run_id) else {
                    continue;
                };
                if Some(run_id) == asking {
                    granted = true;
                } else {
                    waiting.wake.do_send(Admitted);
                }
            }
            for (run_id, queued) in pass.announce {
                match act.waiters.get(&run_id) {
                    Some(waiting) if !waiting.going_on => {
                        act.announce(run_id, waiting.loop_id, waiting.since, queued);
                    }
                    _ => {}
                }
            }
            act.schedule_recheck(at, ctx);
            granted
        })
    }

    /// Runs a pass with the mailbox held.
    fn pass_now(&mut self, ctx: &mut Context<Self>) {
        let pass = self.pass(None).map(|_, _, _| ());
        ctx.wait(pass);
    }

    /// Marks the run queued and pushes its `run/state` with `queued` (off the actor: nothing
    /// here waits for the write).
    fn announce(&self, run_id: RunId, loop_id: LoopId, since: Millis, queued: Queued) {
        let (store, hub) = (self.store.clone(), self.hub.clone());
        let bounds = store.bounds();
        actix_rt::spawn(async move {
            let written = store
                .write(move |c| {
                    state::push_queued(c, run_id, loop_id, since, queued, bounds, now())
                })
                .await;
            match written {
                Ok(Some((run, pushed))) => {
                    tracing::info!(run = %run.alias, reason = queued.reason.as_str(), position = queued.position, "run queued");
                    publish_state(&hub, run.project_id, &run.alias, &pushed);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(run_id = run_id.0, error = %e, "cannot record a queued run")
                }
            }
        });
    }

    /// While a waiter is held by a cost ceiling, looks again at the earliest next period of
    /// those projects, or in a minute, whichever comes first.
    fn schedule_recheck(&mut self, at: Millis, ctx: &mut Context<Self>) {
        if let Some(handle) = self.recheck.take() {
            ctx.cancel_future(handle);
        }
        let next = self
            .book
            .held_by_cost()
            .iter()
            .filter_map(|p| self.ceilings.get(p))
            .map(|c| c.period.next_start(at))
            .min();
        let Some(next) = next else { return };
        let until = u64::try_from(next.0.saturating_sub(at.0)).unwrap_or(0);
        let delay = Duration::from_millis(until).min(RECHECK);
        self.recheck = Some(ctx.run_later(delay, |act, ctx| {
            act.recheck = None;
            act.pass_now(ctx);
        }));
    }
}

impl Handler<Acquire> for AdmissionActor {
    type Result = AtomicResponse<Self, Admit>;

    fn handle(&mut self, msg: Acquire, _: &mut Context<Self>) -> Self::Result {
        let run_id = msg.ask.run_id;
        if self.book.holds(run_id) {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Admit::Granted)));
        }
        self.wait(msg);
        AtomicResponse::new(Box::pin(self.pass(Some(run_id)).map(
            move |granted, act, _| match (granted, act.book.queued(run_id)) {
                (false, Some(queued)) => Admit::Queued(queued),
                _ => Admit::Granted,
            },
        )))
    }
}

impl Handler<Hold> for AdmissionActor {
    type Result = ();

    fn handle(&mut self, msg: Hold, _: &mut Context<Self>) {
        self.book.hold(msg.run_id, msg.project_id, msg.user);
    }
}

impl Handler<Release> for AdmissionActor {
    type Result = ();

    fn handle(&mut self, msg: Release, ctx: &mut Context<Self>) {
        if self.book.release(msg.0) {
            self.pass_now(ctx);
        }
    }
}

impl Handler<Withdraw> for AdmissionActor {
    type Result = ();

    fn handle(&mut self, msg: Withdraw, ctx: &mut Context<Self>) {
        self.waiters.remove(&msg.0);
        let left = self.book.withdraw(msg.0);
        if self.book.release(msg.0) || left {
            self.pass_now(ctx);
        }
    }
}

impl Handler<Seed> for AdmissionActor {
    type Result = ();

    fn handle(&mut self, msg: Seed, ctx: &mut Context<Self>) {
        for acquire in msg.0 {
            if !self.book.holds(acquire.ask.run_id) {
                self.wait(acquire);
            }
        }
        self.pass_now(ctx);
    }
}

impl Handler<SetCeiling> for AdmissionActor {
    type Result = ();

    fn handle(&mut self, msg: SetCeiling, ctx: &mut Context<Self>) {
        match msg.ceiling {
            Some(ceiling) => self.ceilings.insert(msg.project_id, ceiling),
            None => self.ceilings.remove(&msg.project_id),
        };
        self.pass_now(ctx);
    }
}

impl Handler<QueuedOf> for AdmissionActor {
    type Result = Option<Queued>;

    fn handle(&mut self, msg: QueuedOf, _: &mut Context<Self>) -> Option<Queued> {
        self.book.queued(msg.0)
    }
}
