//! New prompts for the run: a loop queued, or a prompt injected into the running loop.

use super::RunActor;
use crate::loop_queue::{Enqueue, InjectPrompt};
use actix::prelude::*;
use rummy_core::orchestration::Input;
use rummy_store::StoreError;
use tokio::sync::oneshot;

/// A prompt for the run (the loop it becomes when it is not folded in), and where the answer —
/// whether it was folded in — goes.
pub(crate) struct PromptJob {
    queued: Enqueue,
    answer: oneshot::Sender<Result<bool, StoreError>>,
}

impl RunActor {
    /// Feeds the machine a prompt (`inject`: fold it into the active loop if there is one);
    /// answers the reply on its way, counted in flight.
    pub(super) fn prompt(
        &mut self,
        queued: Enqueue,
        inject: bool,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<bool, StoreError>> {
        let (answer, answered) = oneshot::channel();
        let job = PromptJob { queued, answer };
        let input = if inject {
            Input::Inject(job)
        } else {
            Input::QueueLoop(job)
        };
        self.step(input, ctx);
        let wait = async move {
            answered
                .await
                .unwrap_or(Err(StoreError::Stopped("the run actor")))
        };
        self.in_flight(wait.into_actor(self))
    }

    /// Queues the prompt as a loop of its own; once written, the run wakes to claim it.
    pub(super) fn enqueue(&mut self, prompt: PromptJob, ctx: &mut Context<Self>) {
        let PromptJob { queued, answer } = prompt;
        let written = self
            .queue
            .send(queued)
            .into_actor(self)
            .map(|res, act, ctx| {
                let res = res
                    .map_err(|_| StoreError::Stopped("the loop queue"))
                    .and_then(|r| r.map(|_| false));
                act.step(
                    Input::Enqueued {
                        queued: res.is_ok(),
                    },
                    ctx,
                );
                let _ = answer.send(res);
            });
        ctx.spawn(written);
    }

    /// Folds the prompt into the active loop; not folded in, it became a loop of its own, which
    /// the run claims once it is idle.
    pub(super) fn fold(&mut self, prompt: PromptJob, ctx: &mut Context<Self>) {
        let PromptJob { queued, answer } = prompt;
        let Some(current) = &self.current else {
            return self.enqueue(PromptJob { queued, answer }, ctx);
        };
        let mode = current
            .job
            .as_ref()
            .map_or_else(|| current.loop_row.mode(), |job| job.mode);
        let inject = InjectPrompt {
            loop_id: current.loop_row.id,
            mode,
            queued,
        };
        let injected = self
            .queue
            .send(inject)
            .into_actor(self)
            .map(|res, act, ctx| {
                let res = res.map_err(|_| StoreError::Stopped("the loop queue"))?;
                act.step(
                    Input::Enqueued {
                        queued: matches!(res, Ok(false)),
                    },
                    ctx,
                );
                Ok::<_, StoreError>(res)
            })
            .map(|res, _, _| {
                let _ = answer.send(res.and_then(|r| r));
            });
        ctx.spawn(injected);
    }
}
