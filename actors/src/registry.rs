//! `RunRegistry`: finds or starts the `RunActor` of a run, retires it when it is idle, starts runs, and recovers runs a crash left mid-loop.
//!
//! A run has an actor only while it has something to do: every message for a run goes through
//! [`RunRegistry::send`] or [`RunRegistry::do_send`], which start an actor when the run has
//! none and count what each actor is sent, so that an actor reporting [`Idle`] is retired only
//! when no message is on its way to it (the protocol: `run/retire.rs`).
//!
//! A client's call on an existing run arrives as one [`RunCall`] (a [`RunCommand`]), which the
//! registry routes unchanged: to the run's actor here, or, when another process holds the run,
//! through the cluster's `run_calls` table (`placement.rs`).

use crate::clock::now;
use crate::errors::{from_store, internal};
use crate::run::{Idle, Keeper, RecoverRun, Retire, RunActor, RunCall};
use crate::services::Services;
use actix::prelude::*;
use rummy_core::orchestration::{RunAnswer, RunCommand};
use rummy_core::wire::params::RunAttributes;
use rummy_core::wire::RpcError;
use rummy_store::entries::RunRef;
use rummy_store::ids::{ProjectId, RunId};
use rummy_store::runs::{self, Run, RunSettings};
use std::collections::HashMap;

mod placement;
mod recover;
mod start;
use placement::Answered;
pub use placement::TakeOver;
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

impl Handler<RunCall> for RunRegistry {
    type Result = Answered;

    /// A client's call on a run, carried out where the run is (`deliver`); a rename
    /// (`mv run://old run://new`) is written first, and the run's actor, if it has one, told
    /// after (a later one reads the new alias).
    fn handle(&mut self, msg: RunCall, ctx: &mut Context<Self>) -> Self::Result {
        let RunCommand::Rename { alias } = &msg.command else {
            return self.deliver(msg, ctx);
        };
        let store = self.svc.store.clone();
        let (run_id, alias) = (msg.run.id, alias.clone());
        let renamed = async move {
            store
                .write(move |c| runs::rename(c, run_id, &alias, now()))
                .await
                .map_err(from_store)
        };
        Box::pin(renamed.into_actor(self).then(move |res, act, ctx| {
            let told: Self::Result = match res {
                Err(e) => Box::pin(fut::ready(Err(e))),
                // The actor of the run, here or in the process holding it, goes on under the
                // alias the store now has.
                Ok(run) => {
                    let alias = run.alias.clone();
                    let command = RunCommand::Rename { alias };
                    act.deliver(RunCall { run, command }, ctx)
                }
            };
            told
        }))
    }
}

impl RunRegistry {
    /// Sends the run's actor `msg` — here, started if need be, or in the process holding the
    /// run (`placement.rs`) — and answers what it answered.
    ///
    /// A continuation's route is checked first, here, and the call sent from the registry
    /// once it is: the run's actor then is whichever the registry keeps at that moment. A
    /// cancel goes to the run's actor even when it has none: an idle run's cancel still stops
    /// the server's commands a finished loop left running. A rename matters only to an actor
    /// that exists: one no process holds is not started for it.
    fn deliver(&mut self, msg: RunCall, ctx: &mut Context<Self>) -> Answered {
        let (run_id, command) = (msg.run.id, msg.command.clone());
        if let RunCommand::Rename { .. } = &msg.command {
            let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Answered {
                if act.runs.contains_key(&run_id) {
                    let (run, alias) = (run_ref(&msg.run), msg.run.alias.clone());
                    act.do_send(run, &alias, msg, ctx);
                }
                Box::pin(fut::ready(Ok(RunAnswer::Done)))
            };
            return self.routed_if_held(run_id, command, here, ctx);
        }
        let here = move |act: &mut Self, ctx: &mut Context<Self>| -> Answered {
            let RunCommand::Continue { prompt } = &msg.command else {
                return act.sent(msg, ctx);
            };
            let (svc, prompt, run) = (act.svc.clone(), prompt.clone(), msg.run.clone());
            let checked =
                async move { checked_route(&svc, &run.flags(), &prompt, &run.model).await };
            Box::pin(
                checked
                    .into_actor(act)
                    .then(move |checked, act, ctx| -> Answered {
                        match checked {
                            Err(e) => Box::pin(fut::ready(Err(e))),
                            Ok(()) => act.sent(msg, ctx),
                        }
                    }),
            )
        };
        self.routed(run_id, command, here, ctx)
    }

    /// Sends the run's actor here `msg` and answers its answer.
    fn sent(&mut self, msg: RunCall, ctx: &mut Context<Self>) -> Answered {
        let (run, alias) = (run_ref(&msg.run), msg.run.alias.clone());
        let sent = self.send(run, &alias, msg, ctx);
        Box::pin(async move { sent.await.map_err(|e| internal(&e))? }.into_actor(self))
    }
}
