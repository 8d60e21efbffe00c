//! New prompts for the run: a loop queued, or a prompt injected into the running loop.

use super::{Inject, Phase, QueueLoop, RunActor};
use crate::loop_queue::{Enqueue, InjectPrompt};
use actix::prelude::*;
use rummy_store::StoreError;

impl Handler<QueueLoop> for RunActor {
    type Result = ResponseActFuture<Self, Result<(), StoreError>>;

    fn handle(&mut self, msg: QueueLoop, _: &mut Context<Self>) -> Self::Result {
        self.took();
        let enqueue = Enqueue {
            mode: msg.mode,
            model: msg.model,
            prompt: msg.prompt,
            config: msg.config,
        };
        let queued = self
            .queue
            .send(enqueue)
            .into_actor(self)
            .map(|res, act, ctx| {
                res.map_err(|_| StoreError::Stopped("the loop queue"))??;
                act.wake(ctx);
                Ok(())
            });
        self.in_flight(queued)
    }
}

impl Handler<Inject> for RunActor {
    type Result = ResponseActFuture<Self, Result<bool, StoreError>>;

    fn handle(&mut self, msg: Inject, _: &mut Context<Self>) -> Self::Result {
        self.took();
        // What the prompt becomes when it cannot be folded in: a loop of its own.
        let queued = Enqueue {
            mode: msg.mode,
            model: msg.model,
            prompt: msg.prompt,
            config: msg.flags,
        };
        let Phase::Running(active) = &self.phase else {
            let queued = self
                .queue
                .send(queued)
                .into_actor(self)
                .map(|res, act, ctx| {
                    res.map_err(|_| StoreError::Stopped("the loop queue"))??;
                    act.wake(ctx);
                    Ok(false)
                });
            return self.in_flight(queued);
        };
        let inject = InjectPrompt {
            loop_id: active.loop_row.id,
            mode: active.job.mode,
            queued,
        };
        // Not folded in: it became a loop of its own, which the run claims once it is idle.
        let injected = self
            .queue
            .send(inject)
            .into_actor(self)
            .map(|res, act, ctx| {
                let res = res.map_err(|_| StoreError::Stopped("the loop queue"))?;
                if let Ok(false) = res {
                    act.wake(ctx);
                }
                res
            });
        self.in_flight(injected)
    }
}
