//! Resolving the proposal a run's loop waits on: the resolution (read, disk work, write) on the actor's context, then the turn resumed — or, for an accepted `sh`/`env`, the wait for its output.

use super::{Doing, Phase, Resolve, RunActor};
use crate::commands::CommandJob;
use crate::services::Services;
use crate::turn::Start;
use actix::prelude::*;
use rummy_core::config::CommandRunner;
use rummy_core::turn::proposals::Resolved;
use rummy_core::turn::streams::Awaited;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::RunRef;
use rummy_store::projects;
use rummy_text::parse::ToolName;
use tokio::sync::oneshot;

/// A resolution that arrived while a turn was in flight, and where its answer goes.
pub(super) struct Early {
    msg: Resolve,
    answer: oneshot::Sender<Result<Resolved, RpcError>>,
}

fn not_pending(path: &str) -> RpcError {
    RpcError::new(
        ErrorKind::Conflict,
        format!("{path} is not a pending proposal of this run (already resolved?)"),
    )
}

/// Whether the run's project's accepted commands reach the network: its override
/// (`project/set {commandNetwork}`), read as each command starts, else the server's
/// `RUMMY_COMMAND_NETWORK`. A failed read runs the command without network.
async fn command_network(svc: &Services, run: RunRef) -> bool {
    let project_id = run.project_id;
    match svc
        .store
        .read(move |c| projects::command_network(c, project_id))
        .await
    {
        Ok(set) => set.unwrap_or(svc.config.commands.sandbox.network),
        Err(error) => {
            tracing::warn!(run = run.run_id.0, %error, "command network unread: none");
            false
        }
    }
}

impl Handler<Resolve> for RunActor {
    type Result = ResponseActFuture<Self, Result<Resolved, RpcError>>;

    fn handle(&mut self, msg: Resolve, _: &mut Context<Self>) -> Self::Result {
        self.took();
        if let Phase::Running(active) = &mut self.phase {
            if active.waiting.is_none() && matches!(active.doing, Some(Doing::Turn(..))) {
                // The turn in flight may be pausing on this very proposal: it was announced
                // from the turn, and the turn's end has not reached the run yet. The answer
                // waits for that end; a loop that ends without the proposal pending drops the
                // sender, and the answer is that it is not pending.
                let path = msg.path.clone();
                let (answer, answered) = oneshot::channel();
                active.early.push(Early { msg, answer });
                let wait =
                    async move { answered.await.unwrap_or_else(|_| Err(not_pending(&path))) };
                return self.in_flight(wait.into_actor(self));
            }
        }
        self.resolve(msg)
    }
}

impl RunActor {
    /// Answers the resolutions that arrived ahead of the turn's pause: the one for the proposal
    /// now pending is resolved, the others are not pending.
    pub(super) fn resolve_early(&mut self, early: Vec<Early>, ctx: &mut Context<Self>) {
        for Early { msg, answer } in early {
            let pending = matches!(
                &self.phase,
                Phase::Running(active) if active.waiting.as_deref() == Some(msg.path.as_str())
            );
            if pending {
                let resolved = self.resolve(msg).map(move |res, _, _| {
                    // The client may have gone meanwhile; the resolution stands.
                    let _ = answer.send(res);
                });
                ctx.spawn(resolved);
            } else {
                let _ = answer.send(Err(not_pending(&msg.path)));
            }
        }
    }

    /// Resolves the proposal the loop waits on, or answers that `msg.path` is not pending.
    fn resolve(&mut self, msg: Resolve) -> ResponseActFuture<Self, Result<Resolved, RpcError>> {
        let waiting = matches!(
            &self.phase,
            Phase::Running(active) if active.waiting.as_deref() == Some(msg.path.as_str())
        );
        if !waiting {
            self.report_idle();
            return Box::pin(actix::fut::ready(Err(not_pending(&msg.path))));
        }
        let (run, svc) = (self.run, self.svc.clone());
        // Taken before the resolution opens any channel: a client that completes an accepted
        // command at once cannot settle it unseen.
        let waiter = self.svc.commands.waiter(run.run_id, &msg.path);
        let (root, asked) = (msg.root.clone(), msg.path.clone());
        let resolve = async move {
            let done =
                crate::proposals::resolve(&svc, run, msg.path, msg.decision, msg.root, msg.by)
                    .await?;
            let server_runs = svc.config.commands.runner == CommandRunner::Server;
            let network = server_runs && done.command.is_some() && command_network(&svc, run).await;
            Ok::<_, RpcError>((done, network))
        };
        let resolved = resolve.into_actor(self).map(move |res, act, ctx| {
            let (done, network) =
                res.inspect_err(|_| act.svc.commands.forget_waiter(run.run_id, &asked))?;
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
                    // The loop goes on: the accepted action is applied; its next model call
                    // waits for a place (`place`).
                    active.waiting = None;
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
                        writes: resolved.tool == ToolName::Sh,
                        network,
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
