//! A loop going on after a person answered its proposal, under a runs limit: the accepted action
//! is applied at once, and the loop asks admission for a place again before its next model call.
//!
//! It gave its place back when it paused (a person may take hours), so going on is asking like
//! any new loop — in its user's turn — except that a cost ceiling does not hold it. While it
//! waits the run stays 102 (it is running, not queued) and its clients get `run/progress`
//! `queued` with `detail: "runs_limit"`; a cancel withdraws the ask and ends the loop 499.

use super::{Doing, Phase, RunActor};
use crate::admission::{Acquire, Admit};
use crate::clock::now;
use crate::turn::Start;
use actix::prelude::*;
use rummy_core::fair::admission::Ask;
use rummy_core::wire::methods::progress;
use rummy_core::wire::notifications::RunProgress;

/// A turn that waits for a place before it calls the model.
pub(super) struct PlaceWait {
    /// How the turn starts once the place is the run's.
    start: Start,
    /// The turn's number, for `run/progress`.
    turn: i32,
    /// The run's turn count when it asked: an answer for an earlier ask is stale.
    asked_at: u64,
    /// The ask is not answered yet.
    asking: bool,
    /// [`Admitted`](crate::admission::Admitted) came before the answer: the place is the run's.
    admitted_early: bool,
}

impl RunActor {
    /// Asks for a place for the loop's next model call; `start` runs once it is the run's.
    pub(super) fn ask_place(&mut self, start: Start, ctx: &mut Context<Self>) {
        let turns_started = self.turns_started;
        let Phase::Running(active) = &mut self.phase else {
            return;
        };
        let turn = match &start {
            Start::Allocated(next) => next.turn,
            Start::Resume { turn, .. } => *turn,
            Start::Fresh => active.last_turn + 1,
        };
        let ask = Ask {
            run_id: self.run.run_id,
            project_id: self.run.project_id,
            user: self.user.clone(),
            since: now(),
            going_on: true,
        };
        let asked = self.svc.admission.acquire(Acquire {
            ask,
            loop_id: active.loop_row.id,
            wake: ctx.address().recipient(),
        });
        active.place = Some(PlaceWait {
            start,
            turn,
            asked_at: turns_started,
            asking: true,
            admitted_early: false,
        });
        active.doing = Some(Doing::Place);
        let answered = asked.into_actor(self).map(move |res, act, ctx| {
            let Phase::Running(active) = &mut act.phase else {
                return;
            };
            // Cancelled meanwhile (and perhaps another loop started since): not this ask's.
            let Some(place) = active.place.as_mut().filter(|p| p.asked_at == turns_started)
            else {
                return;
            };
            place.asking = false;
            match res {
                Ok(Admit::Granted) => act.placed(ctx),
                Ok(Admit::Queued(_)) if place.admitted_early => act.placed(ctx),
                Ok(Admit::Queued(queued)) => {
                    tracing::info!(run = %act.alias, reason = queued.reason.as_str(), position = queued.position, "going on after its answer: waiting for a place");
                    let waiting = RunProgress {
                        detail: Some(queued.reason.as_str().to_owned()),
                        ..RunProgress::new(&act.alias, i64::from(place.turn), progress::QUEUED)
                    };
                    act.svc.push(act.run.project_id, &act.alias, &waiting);
                }
                Err(e) => {
                    // Without admission no place can be given: going on beats waiting forever.
                    tracing::error!(run = %act.alias, error = %e, "admission unavailable; the loop goes on");
                    act.placed(ctx);
                }
            }
        });
        ctx.spawn(answered);
    }

    /// The place is the run's: the turn that waited for it starts.
    fn placed(&mut self, ctx: &mut Context<Self>) {
        let Phase::Running(active) = &mut self.phase else {
            return;
        };
        let Some(place) = active.place.take() else {
            return;
        };
        active.doing = None;
        active.placeless = false;
        self.run_turn(place.start, ctx);
    }

    /// Takes [`Admitted`](crate::admission::Admitted) for a loop going on that waits for a
    /// place; answers whether it was that.
    pub(super) fn admitted_on_the_way(&mut self, ctx: &mut Context<Self>) -> bool {
        let Phase::Running(active) = &mut self.phase else {
            return false;
        };
        let Some(place) = &mut active.place else {
            return false;
        };
        if place.asking {
            place.admitted_early = true;
        } else {
            self.placed(ctx);
        }
        true
    }
}
