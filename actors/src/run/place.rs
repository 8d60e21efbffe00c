//! A loop going on after a person answered its proposal, under a runs limit: the accepted action
//! is applied at once, and the loop asks admission for a place again before its next model call.
//!
//! It gave its place back when it paused (a person may take hours), so going on is asking like
//! any new loop — in its user's turn — except that a cost ceiling does not hold it. While it
//! waits the run stays 102 (it is running, not queued) and its clients get `run/progress`
//! `queued` with `detail: "runs_limit"`; a cancel withdraws the ask and ends the loop 499.

use super::RunActor;
use crate::admission::{Acquire, Admit};
use actix::prelude::*;
use rummy_core::fair::admission::{Ask, Queued};
use rummy_core::orchestration::{self as orch, Input};
use rummy_core::wire::methods::progress;
use rummy_core::wire::notifications::RunProgress;
use rummy_provider::time::Millis;

impl RunActor {
    /// Asks for a place for the loop's next model call; the answer carries `asked_at` back.
    pub(super) fn ask_place(&mut self, asked_at: u64, since: Millis, ctx: &mut Context<Self>) {
        let Some(loop_id) = self.current.as_ref().map(|c| c.loop_row.id) else {
            return;
        };
        let ask = Ask {
            run_id: self.run.run_id,
            project_id: self.run.project_id,
            user: self.user.clone(),
            since,
            going_on: true,
        };
        let asked = self.svc.admission.acquire(Acquire {
            ask,
            loop_id,
            wake: ctx.address().recipient(),
        });
        let answered = asked.into_actor(self).map(move |res, act, ctx| {
            let answer = match res {
                Ok(Admit::Granted) => Some(orch::Admit::Granted),
                Ok(Admit::Queued(queued)) => Some(orch::Admit::Queued(queued)),
                Err(e) => {
                    // Without admission no place can be given: going on beats waiting forever.
                    tracing::error!(run = %act.alias, error = %e, "admission unavailable; the loop goes on");
                    None
                }
            };
            act.step(Input::Placed { asked_at, answer }, ctx);
        });
        ctx.spawn(answered);
    }

    /// Tells the run's clients its turn `turn` waits for a place.
    pub(super) fn tell_queued(&self, turn: i32, queued: Queued) {
        tracing::info!(run = %self.alias, reason = queued.reason.as_str(), position = queued.position, "going on after its answer: waiting for a place");
        let waiting = RunProgress {
            detail: Some(queued.reason.as_str().to_owned()),
            ..RunProgress::new(&self.alias, i64::from(turn), progress::QUEUED)
        };
        self.svc.push(self.run.project_id, &self.alias, &waiting);
    }
}
