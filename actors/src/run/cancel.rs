//! Cancelling: the run's commands stopped and the loop ended 499, whatever phase it is in.

use super::{Cancel, Doing, LoopEnd, Phase, RunActor};
use actix::prelude::*;

impl Handler<Cancel> for RunActor {
    type Result = bool;

    fn handle(&mut self, _: Cancel, ctx: &mut Context<Self>) -> bool {
        self.took();
        let cancelled = self.cancel(ctx);
        self.report_idle();
        cancelled
    }
}

impl RunActor {
    /// Stops the active loop (499) and the run's commands; answers whether a loop was stopped.
    fn cancel(&mut self, ctx: &mut Context<Self>) -> bool {
        self.stop_commands();
        match &mut self.phase {
            Phase::Running(active) => {
                if let Some(doing) = active.doing.take() {
                    if matches!(doing, Doing::Place) {
                        // Its ask leaves the line, or gives back the place just given.
                        self.svc.admission.withdraw(self.run.run_id);
                    }
                    doing.stop(ctx);
                }
                let loop_row = active.loop_row.clone();
                self.finish(loop_row, LoopEnd::Cancelled, ctx);
                true
            }
            Phase::Claiming | Phase::Asking => {
                self.cancel_pending = true;
                true
            }
            Phase::Waiting => {
                // The loop waiting for a place is the one cancelled: it leaves the line and
                // ends 499 without running.
                self.svc.admission.withdraw(self.run.run_id);
                self.cancel_pending = true;
                self.claim(false, ctx);
                true
            }
            Phase::Idle | Phase::Finishing => false,
        }
    }
}
