//! Recovery: the runs a stop left mid-loop ended, restored or woken — all of them at start-up (`Recover`), or one run whose actor was restarted (`RecoverRun`).

use super::{run_ref, RunRegistry};
use crate::admission::Acquire;
use crate::clock::now;
use crate::loop_queue::Claimed;
use crate::run::{AwaitPlace, Paused, RecoverRun, Restore, Wake};
use crate::services::Services;
use actix::prelude::*;
use rummy_core::fair::admission::Ask;
use rummy_core::turn::recovery;
use rummy_core::wire::bounded::Bounds;
use rummy_store::ids::{ProjectId, RunId};
use rummy_store::{loops, projects, rpc_log, runs, StoreError};
use std::collections::HashMap;

/// At start-up: recovers runs a crash left mid-loop, then runs their queued loops; and
/// removes the runs finished, and the calls logged, more than `RUMMY_RETENTION_DAYS` ago (0
/// keeps them all).
#[derive(Message)]
#[rtype(result = "Result<usize, StoreError>")]
pub struct Recover;

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

/// How long a run's recovery the store refused waits before it is tried again.
const RECOVER_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);

impl Handler<RecoverRun> for RunRegistry {
    type Result = ResponseActFuture<Self, ()>;

    /// Recovers the run from the database, then wakes its actor (so one with nothing to do
    /// reports idle and retires); a recovery the store refuses is tried again a moment later.
    fn handle(&mut self, msg: RecoverRun, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let run_id = msg.run.run_id;
        let recovered = async move { recover(&svc, Some(run_id)).await };
        Box::pin(recovered.into_actor(self).map(move |res, act, ctx| {
            match res {
                Ok(recovered) => {
                    let interrupted = act.apply(recovered, ctx);
                    tracing::info!(run = %msg.alias, interrupted, "run recovered after its actor restarted");
                    act.do_send(msg.run, &msg.alias, Wake, ctx);
                }
                Err(e) => {
                    tracing::error!(run = %msg.alias, error = %e, "cannot recover the run yet");
                    ctx.notify_later(msg, RECOVER_AGAIN);
                }
            }
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
    pub(super) taken: Vec<RunId>,
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
                None => {
                    // One process: every run, or the one run whose actor was restarted.
                    let one: Vec<RunId> = taking.into_iter().collect();
                    let scope = match taking {
                        None => recovery::Scope::All,
                        Some(_) => recovery::Scope::Runs(&one),
                    };
                    Ok((
                        recovery::recover(c, scope, recall_default, bounds, at)?,
                        Vec::new(),
                    ))
                }
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
    pub(super) fn apply(&mut self, recovered: Recovered, ctx: &mut Context<Self>) -> usize {
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
