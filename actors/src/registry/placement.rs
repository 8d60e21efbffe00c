//! Where a call for a run is carried out when several processes share a PostgreSQL database:
//! here, in the run's actor (the run's lease taken, and the run recovered first when its
//! holder had expired), or in the process holding the run, through the database.

use super::{recover, run_ref, RunRegistry};
use crate::clock::now;
use crate::cluster::calls::{Answer, Forwarded};
use crate::cluster::Execute;
use crate::errors::from_store;
use crate::run::Rename;
use actix::prelude::*;
use rummy_core::turn::proposals::Resolved;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::cluster::{self, Lease};
use rummy_store::ids::RunId;
use rummy_store::runs;

/// A call's local way, run once the run is known to be this process's.
type Here<R> = Box<
    dyn FnOnce(
        &mut RunRegistry,
        &mut Context<RunRegistry>,
    ) -> ResponseActFuture<RunRegistry, Result<R, RpcError>>,
>;

/// Where a run's call goes.
enum Placement {
    /// This process holds the run (`taken`: since when, if it just took it).
    Here(Option<rummy_provider::time::Millis>),
    /// This process took the run over from a holder that expired: recover it first.
    TakenOver,
    /// The process named holds it.
    There(String),
}

/// An answer that says nothing.
pub fn done(answer: Answer) -> Result<(), RpcError> {
    match answer {
        Answer::Done => Ok(()),
        other => Err(unexpected(&other)),
    }
}

/// Whether an injected prompt was folded in.
pub fn folded(answer: Answer) -> Result<bool, RpcError> {
    match answer {
        Answer::Folded(folded) => Ok(folded),
        other => Err(unexpected(&other)),
    }
}

/// What a resolution did.
pub fn resolved(answer: Answer) -> Result<Resolved, RpcError> {
    match answer {
        Answer::Resolved(resolved) => Ok(resolved),
        other => Err(unexpected(&other)),
    }
}

fn unexpected(answer: &Answer) -> RpcError {
    RpcError::new(
        ErrorKind::Internal,
        format!("the process holding the run answered {answer:?}"),
    )
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
    /// holds the run or may take it; otherwise `forwarded` goes to the holder, whose answer
    /// `answer` reads. A holder that does not answer in time loses the call to a new placing:
    /// by then its hold may have expired, and this process takes the run over.
    pub(super) fn routed<R: 'static>(
        &mut self,
        run_id: RunId,
        forwarded: Forwarded,
        answer: fn(Answer) -> Result<R, RpcError>,
        here: impl FnOnce(&mut Self, &mut Context<Self>) -> ResponseActFuture<Self, Result<R, RpcError>>
            + 'static,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<R, RpcError>> {
        let Some(cluster) = self.svc.cluster.clone() else {
            return here(self, ctx);
        };
        if self.runs.contains_key(&run_id) && self.held.contains_key(&run_id) {
            return here(self, ctx);
        }
        let svc = self.svc.clone();
        let here: Here<R> = Box::new(here);
        let me = cluster.me().to_owned();
        Box::pin(
            async move { place(&svc, &me, run_id).await }
                .into_actor(self)
                .then(
                    move |placed, act, ctx| -> ResponseActFuture<Self, Result<R, RpcError>> {
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
                                        .then(
                                            move |recovered,
                                                  act,
                                                  ctx|
                                                  -> ResponseActFuture<
                                                Self,
                                                Result<R, RpcError>,
                                            > {
                                                match recovered {
                                                    Err(e) => Box::pin(
                                                        async move { Err(from_store(e)) }
                                                            .into_actor(act),
                                                    ),
                                                    Ok(recovered) => {
                                                        act.apply(recovered, ctx);
                                                        here(act, ctx)
                                                    }
                                                }
                                            },
                                        ),
                                )
                            }
                            Ok(Placement::There(owner)) => {
                                let cluster = cluster.clone();
                                Box::pin(
                                    async move {
                                        cluster
                                            .call(run_id, &owner, &forwarded)
                                            .await
                                            .and_then(answer)
                                    }
                                    .into_actor(act),
                                )
                            }
                        }
                    },
                ),
        )
    }

    /// [`RunRegistry::routed`] for a call that only matters to a run with an actor: with
    /// several processes, sent to the holder if another process holds the run, and dropped
    /// when none does.
    pub(super) fn routed_if_held(
        &mut self,
        run_id: RunId,
        forwarded: Forwarded,
        here: impl FnOnce(&mut Self, &mut Context<Self>) -> ResponseActFuture<Self, Result<(), RpcError>>
            + 'static,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<(), RpcError>> {
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
                    Some(owner) if owner != me => cluster
                        .call(run_id, &owner, &forwarded)
                        .await
                        .and_then(done),
                    _ => Ok(()),
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
    type Result = ResponseActFuture<Self, Result<Answer, RpcError>>;

    /// A call another process made for a run it found this one holding: carried out as a call
    /// of this process's own clients would be (placed again: if this process let the run go
    /// meanwhile, it takes it again or sends the call on).
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
                let run = match run {
                    Ok(run) => run,
                    Err(e) => return Box::pin(async move { Err(e) }.into_actor(act)),
                };
                let me = ctx.address();
                let call = msg.call;
                Box::pin(
                    async move {
                        let answer = match call {
                            Forwarded::Inject { prompt } => me
                                .send(super::InjectRun { run, prompt })
                                .await
                                .map_err(|e| crate::errors::internal(&e))?
                                .map(Answer::Folded),
                            Forwarded::Continue { prompt } => me
                                .send(super::ContinueRun { run, prompt })
                                .await
                                .map_err(|e| crate::errors::internal(&e))?
                                .map(|()| Answer::Done),
                            Forwarded::Cancel => me
                                .send(super::CancelRun { run })
                                .await
                                .map_err(|e| crate::errors::internal(&e))?
                                .map(|()| Answer::Done),
                            Forwarded::Resolve {
                                path,
                                decision,
                                root,
                                by,
                            } => me
                                .send(super::ResolveProposal {
                                    run,
                                    resolve: crate::run::Resolve {
                                        path,
                                        decision,
                                        root,
                                        by,
                                    },
                                })
                                .await
                                .map_err(|e| crate::errors::internal(&e))?
                                .map(Answer::Resolved),
                            Forwarded::Rename { alias } => {
                                me.do_send(Renamed { run, alias });
                                Ok(Answer::Done)
                            }
                        };
                        answer
                    }
                    .into_actor(act),
                )
            }),
        )
    }
}

/// Another process renamed a run this one holds: its actor goes on under the new alias.
#[derive(Message)]
#[rtype(result = "()")]
struct Renamed {
    run: rummy_store::runs::Run,
    alias: String,
}

impl Handler<Renamed> for RunRegistry {
    type Result = ();

    fn handle(&mut self, msg: Renamed, ctx: &mut Context<Self>) {
        if self.runs.contains_key(&msg.run.id) {
            self.do_send(run_ref(&msg.run), &msg.run.alias, Rename(msg.alias), ctx);
        }
    }
}
