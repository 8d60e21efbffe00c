//! A loop's end: the session state refreshed and memories consolidated when the loop did its
//! work, then its end recorded through the [`LoopQueue`](crate::loop_queue::LoopQueue), the
//! final `run/state` published and, for a loop that failed or was abandoned, a `ui/notify`.

use super::{consolidate, RunActor};
use crate::loop_queue::Finish;
use crate::session_state;
use actix::prelude::*;
use rummy_core::memory::recall as memory_recall;
use rummy_core::orchestration::{Input, LoopEnd};
use rummy_core::session_state::Occasion;
use rummy_core::wire::notices;
use rummy_store::run::StopReason;
use std::sync::Arc;

impl RunActor {
    /// Records the end of the current loop (its place was given back already).
    pub(super) fn finish(&mut self, end: LoopEnd, ctx: &mut Context<Self>) {
        self.executor = None;
        self.output_wait = None;
        let Some(current) = self.current.take() else {
            // No loop to record: the machine goes on as if it were.
            return self.step(Input::Finished, ctx);
        };
        let loop_row = current.loop_row;
        // A loop that did its work (not cancelled, not failed by its model) updates the
        // session state, when the run keeps one, before its end is recorded: the run's next
        // loop, and every client told it ended, find the state current.
        let flags = loop_row.flags();
        let refresh = end.did_its_work()
            && flags
                .session_state
                .unwrap_or(self.svc.config.session_state.enabled);
        let ending = end.ending();
        // A loop that failed, was abandoned or overflowed is a failure the operator should see.
        let loop_status = ending.loop_status;
        if loop_status >= 400 && loop_status != 499 {
            tracing::warn!(run = %self.alias, loop_seq = loop_row.sequence, loop_status, error = ending.error.as_deref(), "loop failed");
        } else {
            tracing::info!(run = %self.alias, loop_seq = loop_row.sequence, loop_status, "loop finished");
        }
        // A loop that did its work may leave memories behind, before its end is recorded.
        let consolidating = matches!(
            ending.stop_reason,
            StopReason::Concluded | StopReason::MaxTurns
        ) && flags
            .consolidate
            .unwrap_or(self.svc.config.recall.consolidate);
        // A failed or abandoned loop is told to the people of the project once its end is
        // recorded, with the reason the run records.
        let notice = notices::loop_ended(&self.alias, loop_status, ending.error.as_deref());
        let msg = Finish {
            loop_id: loop_row.id,
            loop_status,
            run_status: ending.run_status,
            stop_reason: ending.stop_reason,
            error: ending.error,
            kept: memory_recall::kept(&flags, self.svc.config.recall.enabled),
        };
        let (queue, svc, run) = (self.queue.clone(), self.svc.clone(), self.run);
        let alias = Arc::clone(&self.alias);
        let work = async move {
            // The session state first: consolidation reads it.
            if refresh {
                let refreshed =
                    session_state::refresh(&svc, run, Occasion::LoopEnd, &loop_row.model).await;
                tracing::debug!(run = %alias, ?refreshed, "session state after the loop");
            }
            if consolidating {
                consolidate::consolidate(svc, run, loop_row).await;
            }
            queue.send(msg).await
        };
        let done = work.into_actor(self).map(move |res, act, ctx| {
            let error = match res {
                Ok(Ok(params)) => {
                    act.svc
                        .publish_state(act.run.project_id, &act.alias, &params);
                    if let Some(notice) = &notice {
                        act.svc.push(act.run.project_id, &act.alias, notice);
                    }
                    return act.step(Input::Finished, ctx);
                }
                Ok(Err(e)) => e.to_string(),
                Err(e) => format!("loop queue unavailable: {e}"),
            };
            // The database still has the loop running while the actor would go on as if it
            // ended: the actor fails, and its supervisor restarts it from the database.
            tracing::error!(run = %act.alias, %error, "cannot record the loop's end: the run actor restarts");
            ctx.stop();
        });
        ctx.spawn(done);
    }
}
