//! Where a call for a run is carried out when several processes share a PostgreSQL database:
//! here, in the run's actor (the run's lease taken, and the run recovered first when its
//! holder had expired), or in the process holding the run, through the database.

use super::{recover, RunRegistry};
use crate::clock::now;
use crate::cluster::Execute;
use crate::errors::from_store;
use crate::run::RunCall;
use actix::prelude::*;
use rummy_core::orchestration::{RunAnswer, RunCommand};
use rummy_core::wire::RpcError;
use rummy_store::cluster::{self, Lease};
use rummy_store::ids::RunId;
use rummy_store::runs;

/// What a call on a run answers, when it is done.
pub(super) type Answered = ResponseActFuture<RunRegistry, Result<RunAnswer, RpcError>>;

/// A call's local way, run once the run is known to be this process's.
type Here = Box<dyn FnOnce(&mut RunRegistry, &mut Context<RunRegistry>) -> Answered>;

/// Where a run's call goes.
enum Placement {
    /// This process holds the run (`taken`: since when, if it just took it).
    Here(Option<rummy_provider::time::Millis>),
    /// This process took the run over from a holder that expired: recover it first.
    TakenOver,
    /// The process named holds it.
    There(String),
}

/// Takes run `run_id` for this process, or says who holds it.
async fn place(
    svc: &crate::services::Services,
    me: &str,
    run_id: RunId,
) -> Result<Placement, RpcError> {
    let me = me.to_owned();
    let at = now();
    let lease = svc
        .store
        .write(move |c| cluster::take(c, run_id, &me, at))
        .await
        .map_err(from_store)?;
    Ok(match lease {
        Lease::Mine => Placement::Here(Some(at)),
        Lease::TakenOver => Placement::TakenOver,
        Lease::Held(owner) => Placement::There(owner),
    })
}

impl RunRegistry {
    /// Carries out a call for run `run_id`: `here` when there is one process, or this one
    /// holds the run or may take it; otherwise `command` goes to the holder, and its answer is
    /// the call's. A holder that does not answer in time loses the call to a new placing:
    /// by then its hold may have expired, and this process takes the run over.
    pub(super) fn routed(
        &mut self,
        run_id: RunId,
        command: RunCommand,
        here: impl FnOnce(&mut Self, &mut Context<Self>) -> Answered + 'static,
        ctx: &mut Context<Self>,
    ) -> Answered {
        let Some(cluster) = self.svc.cluster.clone() else {
            return here(self, ctx);
        };
        if self.runs.contains_key(&run_id) && self.held.contains_key(&run_id) {
            return here(self, ctx);
        }
        let svc = self.svc.clone();
        let here: Here = Box::new(here);
        let me = cluster.me().to_owned();
        Box::pin(
            async move { place(&svc, &me, run_id).await }
                .into_actor(self)
                .then(move |placed, act, ctx| -> Answered {
                    match placed {
                        Err(e) => Box::pin(async move { Err(e) }.into_actor(act)),
                        Ok(Placement::Here(taken)) => {
                            if let Some(at) = taken {
                                act.held.insert(run_id, at);
                            }
                            here(act, ctx)
                        }
                        Ok(Placement::TakenOver) => {
                            tracing::warn!(
                                run_id = run_id.0,
                                "taking over a run whose process stopped renewing its hold"
                            );
                            let svc = act.svc.clone();
                            Box::pin(
                                async move { recover(&svc, Some(run_id)).await }
                                    .into_actor(act)
                                    .then(move |recovered, act, ctx| -> Answered {
                                        match recovered {
                                            Err(e) => Box::pin(
                                                async move { Err(from_store(e)) }.into_actor(act),
                                            ),
                                            Ok(recovered) => {
                                                act.apply(recovered, ctx);
                                                here(act, ctx)
                                            }
                                        }
                                    }),
                            )
                        }
                        Ok(Placement::There(owner)) => {
                            let cluster = cluster.clone();
                            Box::pin(
                                async move { cluster.call(run_id, &owner, &command).await }
                                    .into_actor(act),
                            )
                        }
                    }
                }),
        )
    }

    /// [`RunRegistry::routed`] for a call that only matters to a run with an actor: with
    /// several processes, sent to the holder if another process holds the run, and dropped
    /// when none does.
    pub(super) fn routed_if_held(
        &mut self,
        run_id: RunId,
        command: RunCommand,
        here: impl FnOnce(&mut Self, &mut Context<Self>) -> Answered + 'static,
        ctx: &mut Context<Self>,
    ) -> Answered {
        let Some(cluster) = self.svc.cluster.clone() else {
            return here(self, ctx);
        };
        if self.runs.contains_key(&run_id) {
            return here(self, ctx);
        }
        let store = self.svc.store.clone();
        let me = cluster.me().to_owned();
        Box::pin(
            async move {
                let holder = store
                    .read(move |c| cluster::holder(c, run_id, now()))
                    .await
                    .map_err(from_store)?;
                match holder {
                    Some(owner) if owner != me => cluster.call(run_id, &owner, &command).await,
                    _ => Ok(RunAnswer::Done),
                }
            }
            .into_actor(self),
        )
    }

    /// Gives up this process's hold on a run whose actor retired (with several processes).
    pub(super) fn release(&mut self, run_id: RunId, ctx: &mut Context<Self>) {
        let (Some(cluster), Some(taken)) = (self.svc.cluster.clone(), self.held.remove(&run_id))
        else {
            return;
        };
        let store = self.svc.store.clone();
        let me = cluster.me().to_owned();
        ctx.spawn(
            async move {
                if let Err(e) = store
                    .write(move |c| cluster::release(c, run_id, &me, taken))
                    .await
                {
                    tracing::warn!(error = %e, run_id = run_id.0, "cannot release a run");
                }
            }
            .into_actor(self),
        );
    }
}

/// With several processes: takes over the runs whose holders stopped renewing, and recovers
/// them as a restart would. Sent every third of `RUMMY_LEASE_MS`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TakeOver;

impl Handler<TakeOver> for RunRegistry {
    type Result = ();

    fn handle(&mut self, _: TakeOver, ctx: &mut Context<Self>) {
        if self.svc.cluster.is_none() {
            return;
        }
        let svc = self.svc.clone();
        ctx.spawn(
            async move { recover(&svc, None).await }
                .into_actor(self)
                .map(|recovered, act, ctx| match recovered {
                    Ok(recovered) => {
                        if !recovered.taken.is_empty() {
                            tracing::warn!(
                                runs = recovered.taken.len(),
                                "took over runs whose process stopped renewing its hold"
                            );
                        }
                        act.apply(recovered, ctx);
                    }
                    Err(e) => tracing::error!(error = %e, "taking over runs failed"),
                }),
        );
    }
}

impl Handler<Execute> for RunRegistry {
    type Result = Answered;

    /// A call another process made for a run it found this one holding: carried out as a call
    /// of this process's own clients would be (placed again: if this process let the run go
    /// meanwhile, it takes it again or sends the call on), a rename only told to the run's
    /// actor (the caller wrote it).
    fn handle(&mut self, msg: Execute, _: &mut Context<Self>) -> Self::Result {
        let store = self.svc.store.clone();
        let run_id = msg.run_id;
        Box::pin(
            async move {
                store
                    .read(move |c| runs::by_id(c, run_id))
                    .await
                    .map_err(from_store)
            }
            .into_actor(self)
            .then(move |run, act, ctx| -> Self::Result {
                match run {
                    Ok(run) => act.deliver(
                        RunCall {
                            run,
                            command: msg.command,
                        },
                        ctx,
                    ),
                    Err(e) => Box::pin(fut::ready(Err(e))),
                }
            }),
        )
    }
}
