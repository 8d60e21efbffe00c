//! `RunRegistry`: finds or starts the `RunActor` of a run, retires it when it is idle, starts runs, and recovers runs a crash left mid-loop.
//!
//! A run has an actor only while it has something to do: every message for a run goes through
//! [`RunRegistry::send`] or [`RunRegistry::do_send`], which start an actor when the run has
//! none and count what each actor is sent, so that an actor reporting [`Idle`] is retired only
//! when no message is on its way to it (the protocol: `run/retire.rs`).

use crate::clock::now;
use crate::cluster::calls::Forwarded;
use crate::errors::{from_store, internal};
use crate::run::{
    Cancel, Idle, Inject, Keeper, QueueLoop, RecoverRun, Rename, Resolve, Retire, RunActor,
};
use crate::services::Services;
use actix::prelude::*;
use rummy_core::wire::params::RunAttributes;
use rummy_core::wire::RpcError;
use rummy_store::entries::RunRef;
use rummy_store::ids::{ProjectId, RunId};
use rummy_store::runs::{self, Run, RunSettings};
use std::collections::HashMap;

mod placement;
mod recover;
mod start;
pub use placement::TakeOver;
use placement::{done, folded, resolved};
pub(crate) use recover::recover;
pub use recover::Recover;
use start::{checked_model, checked_route};
pub use start::{flags_of, validate_settings};

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
            // Its supervisor went with it (a panic): the run is recovered from the database,
            // as a restarted actor's is.
            tracing::warn!(run = alias, "a run actor had stopped; starting another");
            self.runs.remove(&run.run_id);
            ctx.notify(RecoverRun {
                run,
                alias: alias.to_owned(),
            });
        }
        let (svc, next_id) = (&self.svc, &mut self.next_id);
        self.runs.entry(run.run_id).or_insert_with(|| {
            *next_id += 1;
            let keeper = Keeper {
                idle: ctx.address().recipient(),
                recover: ctx.address().recipient(),
                id: *next_id,
            };
            let (svc, alias) = (svc.clone(), alias.to_owned());
            Kept {
                addr: Supervisor::start(move |_| RunActor::new(svc, run, &alias, keeper)),
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
