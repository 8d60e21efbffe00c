//! Claiming: the run wakes, asks admission for a place when a fair-use limit applies, and
//! claims its next queued loop from the [`LoopQueue`](crate::loop_queue::LoopQueue).

use super::{AwaitPlace, Phase, RunActor, Wake};
use crate::admission::{Acquire, Admit, Admitted};
use crate::clock::now;
use crate::loop_queue::ClaimNext;
use actix::prelude::*;
use rummy_core::fair::admission::Ask;
use rummy_store::entries::RunRef;
use rummy_store::{loops, runs};

impl RunActor {
    pub(super) fn wake(&mut self, ctx: &mut Context<Self>) {
        if matches!(self.phase, Phase::Claiming | Phase::Asking) {
            self.wake_again = true;
        }
        if !matches!(self.phase, Phase::Idle) {
            return;
        }
        self.wake_again = false;
        if self.svc.admission.applies(self.run.project_id) {
            self.ask(ctx);
        } else {
            self.claim(false, ctx);
        }
    }

    /// Claims the next queued loop and starts it. `admitted`: admission gave the run a place
    /// for it, which the loop holds (or gives back when there is nothing to claim).
    pub(super) fn claim(&mut self, admitted: bool, ctx: &mut Context<Self>) {
        self.phase = Phase::Claiming;
        let claim = self
            .queue
            .send(ClaimNext)
            .into_actor(self)
            .map(move |res, act, ctx| match res {
                Ok(Ok(Some(claimed))) => {
                    if admitted {
                        act.svc.admission.hold(
                            act.run.run_id,
                            act.run.project_id,
                            claimed.run.user.clone(),
                        );
                    }
                    act.prepare_loop(claimed, ctx)
                }
                Ok(Ok(None)) => {
                    act.give_back(admitted);
                    act.phase = Phase::Idle;
                    if act.wake_again {
                        act.wake(ctx);
                    }
                }
                Ok(Err(e)) => {
                    tracing::error!(run = %act.alias, error = %e, "cannot claim the next loop");
                    act.give_back(admitted);
                    act.phase = Phase::Idle;
                }
                Err(e) => {
                    tracing::error!(run = %act.alias, error = %e, "loop queue unavailable");
                    act.give_back(admitted);
                    act.phase = Phase::Idle;
                }
            })
            .map(|(), act, _| act.report_idle());
        ctx.spawn(claim);
    }

    /// A place admission gave for a loop that did not start.
    fn give_back(&self, admitted: bool) {
        if admitted {
            self.svc.admission.release(self.run.run_id);
        }
    }

    /// Looks for a queued loop and asks admission for a place for it: granted, the
    /// loop is claimed; otherwise the run waits for [`Admitted`].
    fn ask(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Asking;
        self.admitted_early = false;
        let RunRef { run_id, project_id } = self.run;
        let store = self.svc.store.clone();
        let admission = self.svc.admission.clone();
        let wake = ctx.address().recipient();
        let asked = async move {
            let next = store
                .read(move |c| {
                    let Some((loop_id, since)) = loops::next_queued(c, run_id)? else {
                        return Ok(None);
                    };
                    Ok(Some((loop_id, since, runs::by_id(c, run_id)?.user)))
                })
                .await
                .map_err(|e| e.to_string())?;
            let Some((loop_id, since, user)) = next else {
                return Ok(None);
            };
            let ask = Ask {
                run_id,
                project_id,
                user,
                since: since.unwrap_or_else(now),
                going_on: false,
            };
            admission
                .acquire(Acquire { ask, loop_id, wake })
                .await
                .map(Some)
                .map_err(|e| format!("admission unavailable: {e}"))
        };
        let answered = asked.into_actor(self).map(|res, act, ctx| {
            let early = std::mem::take(&mut act.admitted_early);
            match res {
                Ok(None) => {
                    act.phase = Phase::Idle;
                    if act.wake_again {
                        act.wake(ctx);
                    }
                }
                Ok(Some(Admit::Granted)) => act.claim(true, ctx),
                Ok(Some(Admit::Queued(_))) if early => act.claim(true, ctx),
                Ok(Some(Admit::Queued(_))) if act.cancel_pending => {
                    // Cancelled while it asked: the loop is not worth a place; it ends 499.
                    act.svc.admission.withdraw(act.run.run_id);
                    act.claim(false, ctx);
                }
                Ok(Some(Admit::Queued(queued))) => {
                    tracing::debug!(run = %act.alias, reason = queued.reason.as_str(), position = queued.position, "waiting for a place");
                    act.phase = Phase::Waiting;
                }
                Err(e) => {
                    tracing::error!(run = %act.alias, error = %e, "cannot ask for a place");
                    act.phase = Phase::Idle;
                }
            }
            act.report_idle();
        });
        ctx.spawn(answered);
    }
}

impl Handler<Wake> for RunActor {
    type Result = ();

    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        self.took();
        self.wake(ctx);
        self.report_idle();
    }
}

impl Handler<Admitted> for RunActor {
    type Result = ();

    fn handle(&mut self, _: Admitted, ctx: &mut Context<Self>) {
        if self.admitted_on_the_way(ctx) {
            return;
        }
        match self.phase {
            Phase::Waiting => self.claim(true, ctx),
            Phase::Asking => self.admitted_early = true,
            // Claiming, running or finishing: the place admission counted is already the run's
            // (its claim holds it; its end gives it back). Idle: the run no longer waits (its
            // waiting loop was cancelled, and admission gave the place back on that
            // withdrawal), so this is stale — and an idle actor may be retiring (see `retire`).
            Phase::Claiming | Phase::Running(_) | Phase::Finishing | Phase::Idle => {}
        }
    }
}

impl Handler<AwaitPlace> for RunActor {
    type Result = ();

    fn handle(&mut self, _: AwaitPlace, _: &mut Context<Self>) {
        self.took();
        // Admission learns of the waiter only after this was sent (`admission::Seed`), so no
        // `Admitted` comes before it; a run busy already keeps what it does.
        if matches!(self.phase, Phase::Idle) {
            self.phase = Phase::Waiting;
        }
        self.report_idle();
    }
}
