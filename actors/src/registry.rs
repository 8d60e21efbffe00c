//! `RunRegistry`: finds or starts the `RunActor` of a run, retires it when it is idle, starts runs, and recovers runs a crash left mid-loop.
//!
//! A run has an actor only while it has something to do: every message for a run goes through
//! [`RunRegistry::send`] or [`RunRegistry::do_send`], which start an actor when the run has
//! none and count what each actor is sent, so that an actor reporting [`Idle`] is retired only
//! when no message is on its way to it (the protocol: `run/retire.rs`).

use crate::admission::Acquire;
use crate::clock::{now, write_ctx};
use crate::cluster::calls::Forwarded;
use crate::errors::{from_store, internal};
use crate::loop_queue::{self, Claimed};
use crate::provider::undefined_model;
use crate::run::{
    AwaitPlace, Begin, Cancel, Idle, Inject, Keeper, Paused, QueueLoop, Rename, Resolve, Restore,
    Retire, RunActor, Wake,
};
use crate::services::Services;
use crate::session_state;
use actix::prelude::*;
use rummy_core::fair::admission::Ask;
use rummy_core::session_state::stored::FLAG as SESSION_STATE_FLAG;
use rummy_core::session_state::Occasion;
use rummy_core::turn::{recovery, summary};
use rummy_core::wire::bounded::Bounds;
use rummy_core::wire::params::RunAttributes;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_provider::routing;
use rummy_store::entries::RunRef;
use rummy_store::ids::{ProjectId, RunId};
use rummy_store::run::Mode;
use rummy_store::runs::{self, NewRun, Run, RunSettings};
use rummy_store::{entries, loops, models, projects, rpc_log, StoreError};
use serde_json::json;
use std::collections::HashMap;

mod placement;
pub use placement::TakeOver;
use placement::{done, folded, resolved};

/// Starts a new run with its first loop; answers the run's alias.
#[derive(Message)]
#[rtype(result = "Result<String, RpcError>")]
pub struct StartRun {
    /// The project.
    pub project_id: ProjectId,
    /// The requested alias, or `None` for a server-made one.
    pub alias: Option<String>,
    /// The first prompt.
    pub prompt: String,
    /// Model, mode and settings.
    pub attributes: RunAttributes,
    /// Who starts it, when a token names them (their runs in flight are counted).
    pub user: Option<String>,
    /// Skills the run has from its first turn (`attributes.skills`, loaded and checked),
    /// added in its creation.
    pub skills: Vec<(String, rummy_store::skill::Skill)>,
}

/// Queues a new loop on an existing run.
#[derive(Message)]
#[rtype(result = "Result<(), RpcError>")]
pub struct ContinueRun {
    /// The stored run.
    pub run: Run,
    /// The prompt.
    pub prompt: String,
}

/// Cancels the run's active loop, if any.
#[derive(Message)]
#[rtype(result = "Result<(), RpcError>")]
pub struct CancelRun {
    /// The stored run.
    pub run: Run,
}

/// At start-up: recovers runs a crash left mid-loop, then runs their queued loops; and
/// removes the runs finished, and the calls logged, more than `RUMMY_RETENTION_DAYS` ago (0
/// keeps them all).
#[derive(Message)]
#[rtype(result = "Result<usize, StoreError>")]
pub struct Recover;

/// How many runs have an actor now: the busy ones (a loop claimed, running, waiting on a
/// proposal, a command's output or a place, or finishing) and those whose actor has not yet
/// reported idle. For tests and diagnostics.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct CountRunActors;

/// A run's actor as the registry keeps it.
struct Kept {
    addr: Addr<RunActor>,
    /// The number this actor is known by ([`Keeper::id`]).
    id: u64,
    /// How many messages the registry has sent it.
    sent: u64,
}

/// Keeps one `RunActor` per run that has something to do.
pub struct RunRegistry {
    svc: Services,
    runs: HashMap<RunId, Kept>,
    /// The number the next actor is known by.
    next_id: u64,
    /// On PostgreSQL with several processes: when this process took each run it holds (a
    /// release gives up only that taking).
    held: HashMap<RunId, rummy_provider::time::Millis>,
}

impl RunRegistry {
    /// A registry over the shared services.
    pub fn new(svc: Services) -> Self {
        RunRegistry {
            svc,
            runs: HashMap::new(),
            next_id: 0,
            held: HashMap::new(),
        }
    }

    /// The run's actor, started when it has none (it was never started, it retired, or it
    /// stopped): a fresh actor reads what it needs from the database.
    fn kept(&mut self, run: RunRef, alias: &str, ctx: &mut Context<Self>) -> &mut Kept {
        if self
            .runs
            .get(&run.run_id)
            .is_some_and(|kept| !kept.addr.connected())
        {
            tracing::warn!(run = alias, "a run actor had stopped; starting another");
            self.runs.remove(&run.run_id);
        }
        let (svc, next_id) = (&self.svc, &mut self.next_id);
        self.runs.entry(run.run_id).or_insert_with(|| {
            *next_id += 1;
            let keeper = Keeper {
                idle: ctx.address().recipient(),
                id: *next_id,
            };
            Kept {
                addr: RunActor::new(svc.clone(), run, alias, keeper).start(),
                id: *next_id,
                sent: 0,
            }
        })
    }

    /// Sends the run's actor `msg` (starting one if need be), counted for its retirement.
    fn send<M>(
        &mut self,
        run: RunRef,
        alias: &str,
        msg: M,
        ctx: &mut Context<Self>,
    ) -> Request<RunActor, M>
    where
        RunActor: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let kept = self.kept(run, alias, ctx);
        kept.sent += 1;
        kept.addr.send(msg)
    }

    /// [`RunRegistry::send`] without waiting for the answer.
    fn do_send<M>(&mut self, run: RunRef, alias: &str, msg: M, ctx: &mut Context<Self>)
    where
        RunActor: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let kept = self.kept(run, alias, ctx);
        kept.sent += 1;
        kept.addr.do_send(msg);
    }
}

/// The run a stored run's actor serves.
fn run_ref(run: &Run) -> RunRef {
    RunRef {
        run_id: run.id,
        project_id: run.project_id,
    }
}

impl Handler<Idle> for RunRegistry {
    type Result = ();

    /// Retires the actor if it is still the run's and has been sent nothing since it counted:
    /// out of the map first, so any later message for the run starts a fresh actor, then told.
    fn handle(&mut self, msg: Idle, ctx: &mut Context<Self>) {
        let current = self
            .runs
            .get(&msg.run_id)
            .is_some_and(|kept| kept.id == msg.id && kept.sent == msg.handled);
        if current {
            if let Some(kept) = self.runs.remove(&msg.run_id) {
                kept.addr.do_send(Retire);
            }
            self.release(msg.run_id, ctx);
        }
    }
}

impl Handler<CountRunActors> for RunRegistry {
    type Result = usize;

    fn handle(&mut self, _: CountRunActors, _: &mut Context<Self>) -> usize {
        self.runs.len()
    }
}

impl Actor for RunRegistry {
    type Context = Context<Self>;

    /// With several processes: binds the cluster's calls here, and takes over, every third of
    /// the lease, the runs whose holders stopped renewing.
    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(cluster) = &self.svc.cluster {
            cluster.bind(ctx.address().recipient());
            let every = std::time::Duration::from_millis((cluster.lease_ms() / 3).max(100));
            ctx.run_interval(every, |_, ctx| ctx.notify(TakeOver));
        }
    }
}

/// Checks the settings a start or configure carries (the model is checked against the store separately).
pub fn validate_settings(attributes: &RunAttributes) -> Result<Option<Mode>, RpcError> {
    let mode = match attributes.mode.as_deref() {
        None => None,
        Some(m) => Some(Mode::parse(m).ok_or_else(|| {
            RpcError::invalid_param("attributes.mode", "expected \"ask\" or \"act\"")
        })?),
    };
    if attributes
        .temperature
        .is_some_and(|t| !(0.0..=2.0).contains(&t))
    {
        return Err(RpcError::invalid_param(
            "attributes.temperature",
            "expected a number from 0 to 2",
        ));
    }
    if attributes.context_limit.is_some_and(|l| l < 1024) {
        return Err(RpcError::invalid_param(
            "attributes.contextLimit",
            "expected at least 1024",
        ));
    }
    Ok(mode)
}

/// The loop flags a start or configure sets explicitly.
pub fn flags_of(a: &RunAttributes) -> serde_json::Map<String, serde_json::Value> {
    let mut flags = serde_json::Map::new();
    for (name, value) in [
        ("noRepo", a.no_repo),
        ("noInteraction", a.no_interaction),
        ("noWeb", a.no_web),
        ("noProposals", a.no_proposals),
        (routing::ROUTE_FLAG, a.route),
        (routing::FALLBACK_FLAG, a.fallback),
        (SESSION_STATE_FLAG, a.session_state),
        (rummy_core::memory::recall::RECALL_FLAG, a.recall),
        (rummy_core::memory::rerank::FLAG, a.recall_rerank),
        (rummy_core::memory::consolidate::FLAG, a.consolidate),
        (summary::FLAG, a.summarize),
    ] {
        if let Some(value) = value {
            flags.insert(name.to_owned(), serde_json::Value::Bool(value));
        }
    }
    flags
}

/// The model alias, checked to exist and to have a configured provider.
async fn checked_model(svc: &Services, alias: &str) -> Result<models::Model, RpcError> {
    let lookup = alias.to_owned();
    let model = svc
        .store
        .read(move |c| models::by_alias(c, &lookup))
        .await
        .map_err(from_store)?
        .ok_or_else(|| RpcError::new(ErrorKind::NotFound, undefined_model(alias)))?;
    svc.providers
        .route(&model)
        .map_err(|m| RpcError::new(ErrorKind::NotFound, m))?;
    Ok(model)
}

/// With routing on in `flags`, checks the model the prompt will be routed to
/// like the run's own model, so a mapping to an undefined alias is refused at
/// once rather than failing the loop. (The loop still checks when it starts:
/// the model may be removed in between.)
async fn checked_route(
    svc: &Services,
    flags: &serde_json::Value,
    prompt: &str,
    own_model: &str,
) -> Result<(), RpcError> {
    if !routing::requested(flags) {
        return Ok(());
    }
    let routed = routing::decide(prompt, own_model, &svc.config.providers.routing);
    if !routed.changes(own_model) {
        return Ok(());
    }
    checked_model(svc, &routed.model)
        .await
        .map(drop)
        .map_err(|mut e| {
            e.message = format!("{} ({})", e.message, routed.why());
            e
        })
}

impl Handler<StartRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<String, RpcError>>;

    fn handle(&mut self, msg: StartRun, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let started = async move {
            let a = msg.attributes;
            let mode = validate_settings(&a)?;
            let parent = match &a.fork {
                None => None,
                Some(parent) => {
                    let (project_id, alias) = (msg.project_id, parent.clone());
                    let found = svc
                        .store
                        .read(move |c| runs::by_alias(c, project_id, &alias))
                        .await
                        .map_err(from_store)?;
                    Some(found.ok_or_else(|| {
                        RpcError::new(
                            ErrorKind::NotFound,
                            format!("run \"{parent}\" to fork from not found in this project"),
                        )
                    })?)
                }
            };
            let model_alias = a
                .model
                .clone()
                .filter(|m| !m.trim().is_empty())
                .or_else(|| parent.as_ref().map(|p| p.model.clone()))
                .ok_or_else(|| {
                    RpcError::invalid_param("attributes.model", "required to start a run")
                })?;
            let model = checked_model(&svc, &model_alias).await?;
            let mut flags = parent.as_ref().map(Run::flags).unwrap_or_else(|| json!({}));
            if let Some(map) = flags.as_object_mut() {
                map.extend(flags_of(&a));
            }
            checked_route(&svc, &flags, &msg.prompt, &model.alias).await?;
            // The fork starts from its parent's session state, brought up to date once the start
            // is known to be valid (a run that keeps none, or did nothing since, is left as it
            // is).
            if let Some(p) = &parent {
                let from = RunRef {
                    run_id: p.id,
                    project_id: p.project_id,
                };
                let refreshed = session_state::refresh(&svc, from, Occasion::Fork, &p.model).await;
                tracing::debug!(run = %p.alias, ?refreshed, "session state before a fork");
            }
            // A fork runs in its parent's mode unless the start names one.
            let mode = mode.or(parent.as_ref().map(Run::mode)).unwrap_or_default();
            let new = NewRun {
                mode,
                project_id: msg.project_id,
                alias: msg.alias,
                model: model.alias.clone(),
                temperature: a
                    .temperature
                    .or(parent.as_ref().and_then(|p| p.temperature)),
                persona: a
                    .persona
                    .clone()
                    .or(parent.as_ref().and_then(|p| p.persona.clone())),
                context_limit: a
                    .context_limit
                    .or(parent.as_ref().and_then(|p| p.context_limit)),
                flags: flags.clone(),
                parent_run_id: parent.as_ref().map(|p| p.id),
                user: msg.user,
            };
            let (prompt, skills) = (msg.prompt, msg.skills);
            let divisor = svc.config.limits.token_divisor;
            let routing = svc.config.providers.routing.clone();
            // Under a fair-use limit the first loop waits in the queue until admission gives
            // it a place; otherwise it is claimed at once.
            let claim_now = !svc.admission.applies(msg.project_id);
            let me = svc.cluster.as_ref().map(|c| c.me().to_owned());
            svc.store
                .write(move |c| {
                    let run = runs::create(c, &new, now())?;
                    // With several processes, the process that starts a run holds it.
                    if let Some(me) = &me {
                        rummy_store::cluster::take(c, run.id, me, now())?;
                    }
                    if let Some(parent) = &parent {
                        runs::continue_numbering(c, run.id, parent)?;
                        entries::fork(c, run_ref(parent), run_ref(&run), now())?;
                    }
                    let to = run_ref(&run);
                    for (name, skill) in &skills {
                        rummy_store::skills::add(c, to, name, skill, write_ctx(divisor))?;
                    }
                    loops::enqueue(c, run.id, mode, &new.model, &prompt, &flags, now())?;
                    // The first loop is claimed here: one write fewer before the first turn.
                    let claimed = if claim_now {
                        loop_queue::claim(c, run.id, &routing)?
                    } else {
                        None
                    };
                    Ok((run, claimed))
                })
                .await
                .map_err(from_store)
        };
        Box::pin(started.into_actor(self).map(|res, act, ctx| {
            let (run, claimed) = res?;
            tracing::info!(run = %run.alias, project = run.project_id.0, "run started");
            if act.svc.cluster.is_some() {
                act.held.insert(run.id, now());
            }
            match claimed {
                Some(claimed) => act.do_send(run_ref(&run), &run.alias, Begin { claimed }, ctx),
                None => act.do_send(run_ref(&run), &run.alias, Wake, ctx),
            }
            Ok(run.alias)
        }))
    }
}

/// Changes a run's settings for its next loops; answers the run as it now stands.
#[derive(Message)]
#[rtype(result = "Result<Run, RpcError>")]
pub struct ConfigureRun {
    /// The stored run.
    pub run: Run,
    /// The new settings.
    pub attributes: RunAttributes,
}

impl Handler<ConfigureRun> for RunRegistry {
    type Result = ResponseFuture<Result<Run, RpcError>>;

    fn handle(&mut self, msg: ConfigureRun, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        Box::pin(async move {
            let a = msg.attributes;
            let mode = validate_settings(&a)?;
            if let Some(model) = &a.model {
                checked_model(&svc, model).await?;
            }
            let flags = flags_of(&a);
            let settings = RunSettings {
                mode,
                model: a.model.clone(),
                temperature: a.temperature,
                persona: a.persona.clone(),
                context_limit: a.context_limit,
                flags: (!flags.is_empty()).then_some(flags),
            };
            let run_id = msg.run.id;
            svc.store
                .write(move |c| runs::configure(c, run_id, &settings, now()))
                .await
                .map_err(from_store)
        })
    }
}

/// Folds a prompt into the run's active loop, or queues it as a new loop when none is active.
#[derive(Message)]
#[rtype(result = "Result<bool, RpcError>")]
pub struct InjectRun {
    /// The stored run.
    pub run: Run,
    /// The prompt.
    pub prompt: String,
}

impl Handler<InjectRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<bool, RpcError>>;

    fn handle(&mut self, msg: InjectRun, ctx: &mut Context<Self>) -> Self::Result {
        let run = msg.run;
        let forwarded = Forwarded::Inject {
            prompt: msg.prompt.clone(),
        };
        let run_id = run.id;
        let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Self::Result {
            let inject = Inject {
                prompt: msg.prompt,
                mode: run.mode(),
                model: run.model.clone(),
                flags: run.flags(),
            };
            let sent = act.send(run_ref(&run), &run.alias, inject, ctx);
            Box::pin(
                async move { sent.await.map_err(|e| internal(&e))?.map_err(from_store) }
                    .into_actor(act),
            )
        };
        self.routed(run_id, forwarded, folded, here, ctx)
    }
}

impl Handler<ContinueRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<(), RpcError>>;

    /// The loop runs in the run's mode: a continuation that names another configures the run
    /// first (see the `set` route), so the mode stays for the loops after it too.
    fn handle(&mut self, msg: ContinueRun, ctx: &mut Context<Self>) -> Self::Result {
        let run = msg.run;
        let run_id = run.id;
        let forwarded = Forwarded::Continue {
            prompt: msg.prompt.clone(),
        };
        let here = move |act: &mut Self, _: &mut Context<Self>| -> Self::Result {
            let queue = QueueLoop {
                mode: run.mode(),
                model: run.model.clone(),
                prompt: msg.prompt,
                config: run.flags(),
            };
            let svc = act.svc.clone();
            let checked = async move {
                checked_route(&svc, &queue.config, &queue.prompt, &queue.model).await?;
                Ok::<_, RpcError>(queue)
            };
            // Sent from the registry once the route is checked: the run's actor then is
            // whichever the registry keeps at that moment.
            Box::pin(checked.into_actor(act).then(move |checked, act, ctx| {
                let sent = checked.map(|queue| act.send(run_ref(&run), &run.alias, queue, ctx));
                async move { sent?.await.map_err(|e| internal(&e))?.map_err(from_store) }
                    .into_actor(act)
            }))
        };
        self.routed(run_id, forwarded, done, here, ctx)
    }
}

impl Handler<CancelRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<(), RpcError>>;

    /// Goes to the run's actor even when it has none: an idle run's cancel still stops the
    /// server's commands a finished loop left running.
    fn handle(&mut self, msg: CancelRun, ctx: &mut Context<Self>) -> Self::Result {
        let run = msg.run;
        let run_id = run.id;
        let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Self::Result {
            let sent = act.send(run_ref(&run), &run.alias, Cancel, ctx);
            Box::pin(
                async move {
                    sent.await.map_err(|e| internal(&e))?;
                    Ok(())
                }
                .into_actor(act),
            )
        };
        self.routed(run_id, Forwarded::Cancel, done, here, ctx)
    }
}

impl Handler<Recover> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<usize, StoreError>>;

    /// On PostgreSQL with other processes, only the runs no live process holds are this
    /// process's to recover (each taken in the same transaction); on SQLite, every run.
    fn handle(&mut self, _: Recover, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let retention_days = svc.config.limits.retention_days;
        let recovered = async move {
            let report = recover(&svc, None).await?;
            // In a write of its own: a purge that fails must not undo the recovery.
            if retention_days > 0 {
                let cutoff = now().days_before(retention_days);
                let purge = move |c: &mut rummy_store::db::Db| {
                    let runs = runs::purge_finished_before(c, cutoff)?.len();
                    Ok((runs, rpc_log::purge_before(c, cutoff)?))
                };
                match svc.store.write(purge).await {
                    Ok((0, 0)) => {}
                    Ok((runs, calls)) => tracing::info!(
                        runs,
                        calls,
                        retention_days,
                        "removed runs finished and calls logged before the retention period"
                    ),
                    Err(e) => tracing::error!(error = %e, "removing old runs and calls failed"),
                }
            }
            Ok::<_, StoreError>(report)
        };
        Box::pin(recovered.into_actor(self).map(|res, act, ctx| {
            let recovered = res?;
            Ok(act.apply(recovered, ctx))
        }))
    }
}

/// What a recovery found, with the loops of the runs under a fair-use limit that wait for a
/// place, and the runs this process took for it (PostgreSQL).
pub(crate) struct Recovered {
    report: recovery::Recovery,
    waiting: HashMap<
        RunId,
        (
            rummy_store::ids::LoopId,
            Option<rummy_provider::time::Millis>,
        ),
    >,
    taken: Vec<RunId>,
    /// The command network overrides of the projects of the loops restored.
    command_network: HashMap<ProjectId, Option<bool>>,
}

/// Recovers the runs a stop left mid-loop: every run (`taking: None`) or, with several
/// processes, those this process takes — `Some(run)` that one run whose holder expired, or
/// with `None` every run no live process holds.
pub(crate) async fn recover(
    svc: &Services,
    taking: Option<RunId>,
) -> Result<Recovered, StoreError> {
    let divisor = svc.config.limits.token_divisor;
    let recall_default = svc.config.recall.enabled;
    let bounds = Bounds::of(&svc.config.limits);
    let me = svc.cluster.as_ref().map(|c| c.me().to_owned());
    let (report, taken) = svc
        .store
        .write(move |c| {
            let at = crate::clock::write_ctx(divisor);
            match me {
                None => Ok((
                    recovery::recover(c, recovery::Scope::All, recall_default, bounds, at)?,
                    Vec::new(),
                )),
                Some(me) => {
                    // A process of this machine that is gone (killed, or an earlier start of
                    // this one) holds nothing any more: its runs are taken over now, not once
                    // its hold expires.
                    let gone =
                        crate::cluster::gone_here(&rummy_store::cluster::alive(c, at.now)?, &me);
                    rummy_store::cluster::expire(c, &gone)?;
                    let taken = match taking {
                        Some(run_id) => vec![run_id],
                        None => rummy_store::cluster::take_orphans(c, &me, at.now, 10_000)?,
                    };
                    let scope = recovery::Scope::Runs(&taken);
                    Ok((
                        recovery::recover(c, scope, recall_default, bounds, at)?,
                        taken,
                    ))
                }
            }
        })
        .await?;
    // Runs under a fair-use limit wait for a place again, in the order they began
    // waiting (what their next loop recorded), the others' first.
    let admission = svc.admission.clone();
    let gated: Vec<RunId> = report
        .to_wake
        .iter()
        .filter(|r| admission.applies(r.project_id))
        .map(|r| r.id)
        .collect();
    let restored: Vec<ProjectId> = (report.to_restore.iter().map(|(run, ..)| run.project_id))
        .chain(report.to_resume.iter().map(|(run, ..)| run.project_id))
        .collect();
    let (waiting, command_network) = svc
        .store
        .read(move |c| {
            let mut waiting = HashMap::new();
            for run_id in gated {
                if let Some(next) = loops::next_queued(c, run_id)? {
                    waiting.insert(run_id, next);
                }
            }
            let mut network = HashMap::new();
            for project_id in restored {
                if let std::collections::hash_map::Entry::Vacant(e) = network.entry(project_id) {
                    e.insert(projects::command_network(c, project_id)?);
                }
            }
            Ok((waiting, network))
        })
        .await?;
    Ok(Recovered {
        report,
        waiting,
        taken,
        command_network,
    })
}

impl RunRegistry {
    /// Acts on a recovery: its pushes published, its runs woken, waiting for a place or
    /// restored; answers how many loops it ended as interrupted.
    fn apply(&mut self, recovered: Recovered, ctx: &mut Context<Self>) -> usize {
        let Recovered {
            report,
            waiting,
            taken,
            command_network,
        } = recovered;
        let at = now();
        for run_id in taken {
            self.held.insert(run_id, at);
        }
        for (project_id, alias, params) in &report.pushed {
            self.svc.publish_state(*project_id, alias, params);
        }
        // The loops resumed below run: they hold their places before any waiter is given
        // one.
        for (run, ..) in &report.to_resume {
            self.svc
                .admission
                .hold(run.id, run.project_id, run.user.clone());
        }
        let mut seeded = Vec::new();
        for run in &report.to_wake {
            match waiting.get(&run.id) {
                Some((loop_id, since)) => {
                    self.do_send(run_ref(run), &run.alias, AwaitPlace, ctx);
                    let actor = self.kept(run_ref(run), &run.alias, ctx).addr.clone();
                    seeded.push(Acquire {
                        ask: Ask {
                            run_id: run.id,
                            project_id: run.project_id,
                            user: run.user.clone(),
                            since: since.unwrap_or(at),
                            going_on: false,
                        },
                        loop_id: *loop_id,
                        wake: actor.recipient(),
                    });
                }
                None => self.do_send(run_ref(run), &run.alias, Wake, ctx),
            }
        }
        self.svc.admission.seed(seeded);
        for (run, loop_row, model, proposal) in report.to_restore {
            let claimed = Claimed {
                loop_row,
                command_network: command_network.get(&run.project_id).copied().flatten(),
                run: run.clone(),
                model,
            };
            let paused = Paused::Proposal(proposal);
            self.do_send(run_ref(&run), &run.alias, Restore { claimed, paused }, ctx);
        }
        for (run, loop_row, model, awaited) in report.to_resume {
            let claimed = Claimed {
                loop_row,
                command_network: command_network.get(&run.project_id).copied().flatten(),
                run: run.clone(),
                model,
            };
            let paused = Paused::Output(awaited);
            self.do_send(run_ref(&run), &run.alias, Restore { claimed, paused }, ctx);
        }
        report.interrupted
    }
}

/// Renames a run (`mv run://old run://new`); its actor, if it has one, goes on under the new
/// alias (a later one reads it).
#[derive(Message)]
#[rtype(result = "Result<(), RpcError>")]
pub struct RenameRun {
    /// The stored run.
    pub run: Run,
    /// The new alias.
    pub alias: String,
}

impl Handler<RenameRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<(), RpcError>>;

    fn handle(&mut self, msg: RenameRun, _: &mut Context<Self>) -> Self::Result {
        let store = self.svc.store.clone();
        let (run_id, alias) = (msg.run.id, msg.alias.clone());
        let renamed = async move {
            store
                .write(move |c| runs::rename(c, run_id, &alias, now()))
                .await
                .map_err(from_store)
        };
        Box::pin(renamed.into_actor(self).then(move |res, act, ctx| {
            let tell: Self::Result = match res {
                Err(e) => Box::pin(async move { Err(e) }.into_actor(act)),
                // The actor of the run, here or in the process holding it, goes on under the
                // new alias; a run no process holds has no actor to tell.
                Ok(run) => {
                    let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Self::Result {
                        if act.runs.contains_key(&run.id) {
                            let rename = Rename(run.alias.clone());
                            act.do_send(run_ref(&run), &run.alias, rename, ctx);
                        }
                        Box::pin(async { Ok(()) }.into_actor(act))
                    };
                    let forwarded = Forwarded::Rename {
                        alias: msg.alias.clone(),
                    };
                    act.routed_if_held(run_id, forwarded, here, ctx)
                }
            };
            tell
        }))
    }
}

/// Resolves a proposal of a run: accept, reject or error.
#[derive(Message)]
#[rtype(result = "Result<rummy_core::turn::proposals::Resolved, RpcError>")]
pub struct ResolveProposal {
    /// The stored run.
    pub run: Run,
    /// The resolution.
    pub resolve: Resolve,
}

impl Handler<ResolveProposal> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<rummy_core::turn::proposals::Resolved, RpcError>>;

    fn handle(&mut self, msg: ResolveProposal, ctx: &mut Context<Self>) -> Self::Result {
        let run = msg.run;
        let run_id = run.id;
        let forwarded = Forwarded::Resolve {
            path: msg.resolve.path.clone(),
            decision: msg.resolve.decision.clone(),
            root: msg.resolve.root.clone(),
            by: msg.resolve.by.clone(),
        };
        let resolve = msg.resolve;
        let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Self::Result {
            let sent = act.send(run_ref(&run), &run.alias, resolve, ctx);
            Box::pin(async move { sent.await.map_err(|e| internal(&e))? }.into_actor(act))
        };
        self.routed(run_id, forwarded, resolved, here, ctx)
    }
}
