//! Resolving the proposal a run's loop waits on: the resolution (read, disk work, write) on the actor's context, then the turn resumed — or, for an accepted `sh`/`env`, the wait for its output.

use super::{Phase, Resolve, RunActor};
use crate::commands::CommandJob;
use crate::turn::Start;
use actix::prelude::*;
use rummy_core::config::CommandRunner;
use rummy_core::turn::proposals::Resolved;
use rummy_core::turn::streams::Awaited;
use rummy_core::wire::{ErrorKind, RpcError};

impl Handler<Resolve> for RunActor {
    type Result = ResponseActFuture<Self, Result<Resolved, RpcError>>;

    fn handle(&mut self, msg: Resolve, _: &mut Context<Self>) -> Self::Result {
        self.took();
        let waiting = matches!(
            &self.phase,
            Phase::Running(active) if active.waiting.as_deref() == Some(msg.path.as_str())
        );
        if !waiting {
            let err = RpcError::new(
                ErrorKind::Conflict,
                format!(
                    "{} is not a pending proposal of this run (already resolved?)",
                    msg.path
                ),
            );
            self.report_idle();
            return Box::pin(actix::fut::ready(Err(err)));
        }
        let (run, svc) = (self.run, self.svc.clone());
        // Taken before the resolution opens any channel: a client that completes an accepted
        // command at once cannot settle it unseen.
        let waiter = self.svc.commands.waiter(run.run_id, &msg.path);
        let (root, asked) = (msg.root.clone(), msg.path.clone());
        let resolve = async move {
            crate::proposals::resolve(&svc, run, msg.path, msg.decision, msg.root, msg.by).await
        };
        let resolved = resolve.into_actor(self).map(move |res, act, ctx| {
            let done = res.inspect_err(|_| act.svc.commands.forget_waiter(run.run_id, &asked))?;
            let resolved = done.resolved;
            act.svc
                .publish_state(act.run.project_id, &act.alias, &done.push);
            let output = crate::proposals::awaits_output(&resolved);
            if !output {
                act.svc.commands.forget_waiter(run.run_id, &resolved.path);
            }
            // The disk work took a while: resume only the loop still waiting on this proposal
            // (a cancel meanwhile has ended it).
            match &mut act.phase {
                Phase::Running(active) if active.waiting.as_deref() == Some(&resolved.path) => {
                    active.waiting = None;
                    // The loop goes on: it takes its place back, even over a limit (it is
                    // no new loop).
                    act.svc
                        .admission
                        .hold(act.run.run_id, act.run.project_id, act.user.clone());
                }
                _ => {
                    act.svc.commands.forget_waiter(run.run_id, &resolved.path);
                    // The loop ended (a cancel) while the acceptance was written: the command
                    // is not run, and its channels do not stay open.
                    if output {
                        act.cancel_output(resolved.path.clone());
                    }
                    return Ok(resolved);
                }
            }
            if output {
                let awaited = Awaited {
                    path: resolved.path.clone(),
                    tool: resolved.tool,
                    turn: resolved.turn,
                    command_index: resolved.command_index,
                };
                let job = match (act.svc.config.commands.runner, done.command) {
                    (CommandRunner::Server, Some(command)) => Some(CommandJob {
                        run,
                        path: resolved.path.clone(),
                        command,
                        root,
                    }),
                    _ => None,
                };
                act.await_output(awaited, waiter, job, ctx);
                return Ok(resolved);
            }
            let aborted_by = resolved.aborts_rest.then_some(resolved.tool);
            let start = Start::Resume {
                turn: resolved.turn,
                next_index: resolved.command_index + 1,
                aborted_by,
                awaited: None,
            };
            act.run_turn(start, ctx);
            Ok(resolved)
        });
        self.in_flight(resolved)
    }
}
