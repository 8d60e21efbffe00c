//! Resolving the proposal a run's loop waits on: the resolution (read, disk work, write) on the actor's context, then the turn resumed — or, for an accepted `sh`/`env` or `call`, the wait for its output (a call sent to the client offering its tool).

use super::output::OutputWait;
use super::RunActor;
use crate::services::Services;
use crate::shell::ShellJob;
use crate::tool_calls;
use crate::turn::Start;
use actix::prelude::*;
use rummy_core::config::ShellRunner;
use rummy_core::orchestration::{Input, Then};
use rummy_core::tools::proposal::Proposed;
use rummy_core::turn::proposals::{Decision, Resolved};
use rummy_core::turn::streams::Awaited;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::RunRef;
use rummy_store::projects;
use rummy_text::parse::ToolName;
use std::path::PathBuf;
use tokio::sync::oneshot;

/// A client's resolution of a proposal of the run (`RunCommand::Resolve`).
pub(super) struct Resolution {
    /// The proposal's path.
    pub path: String,
    /// Accept, reject or error.
    pub decision: Decision,
    /// The project root on disk, where accepted file changes land.
    pub root: PathBuf,
    /// Who decided, when a token names the person.
    pub by: Option<String>,
}

/// A resolution of a proposal, and where its answer goes.
pub(crate) struct Pending {
    msg: Resolution,
    answer: oneshot::Sender<Result<Resolved, RpcError>>,
}

impl Pending {
    /// Answers that the proposal is not pending (the client may have gone meanwhile).
    pub(super) fn not_pending(self) {
        let _ = self.answer.send(Err(not_pending(&self.msg.path)));
    }
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
        Ok(set) => set.unwrap_or(svc.config.shell.sandbox.network),
        Err(error) => {
            tracing::warn!(run = run.run_id.0, %error, "command network unread: none");
            false
        }
    }
}

impl RunActor {
    /// Feeds the machine a resolution: it resolves it at once, keeps it for the end of the turn
    /// in flight (which may be pausing on this very proposal: it was announced from the turn,
    /// whose end has not reached the run yet), or answers that it is not pending. Answers the
    /// reply on its way, counted in flight.
    pub(super) fn take_resolution(
        &mut self,
        msg: Resolution,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<Resolved, RpcError>> {
        let path = msg.path.clone();
        let (answer, answered) = oneshot::channel();
        let resolution = Pending { msg, answer };
        self.step(
            Input::Resolve {
                path: path.clone(),
                resolution,
            },
            ctx,
        );
        let wait = async move { answered.await.unwrap_or_else(|_| Err(not_pending(&path))) };
        self.in_flight(wait.into_actor(self))
    }

    /// Resolves the proposal the loop waits on (read, disk work, write), then feeds the
    /// machine how the loop goes on.
    pub(super) fn resolve(&mut self, pending: Pending, ctx: &mut Context<Self>) {
        let Pending { msg, answer } = pending;
        let (run, svc) = (self.run, self.svc.clone());
        // Taken before the resolution opens any channel: a client that completes an accepted
        // command at once cannot settle it unseen.
        let waiter = self.svc.shell.waiter(run.run_id, &msg.path);
        let (root, asked) = (msg.root.clone(), msg.path.clone());
        let resolve = async move {
            let done =
                crate::proposals::resolve(&svc, run, msg.path, msg.decision, msg.root, msg.by)
                    .await?;
            let server_runs = svc.config.shell.runner == ShellRunner::Server;
            let network = server_runs && done.command.is_some() && command_network(&svc, run).await;
            Ok::<_, RpcError>((done, network))
        };
        let resolved = resolve.into_actor(self).map(move |res, act, ctx| {
            let (done, network) = match res {
                Ok(done) => done,
                Err(e) => {
                    act.svc.shell.forget_waiter(run.run_id, &asked);
                    let then = Then::Failed;
                    act.step(Input::Resolved { path: asked, then }, ctx);
                    let _ = answer.send(Err(e));
                    return;
                }
            };
            let resolved = done.resolved;
            act.svc
                .publish_state(act.run.project_id, &act.alias, &done.push);
            // An accepted call of a client's tool goes to the client offering it, an accepted
            // fetch is made here; its turn waits for the answer as for a command's output.
            let svc = act.svc.clone();
            match done.call {
                Some(Proposed::Call {
                    server,
                    tool,
                    arguments,
                }) => {
                    let accepted = tool_calls::Accepted {
                        alias: act.alias.to_string(),
                        path: resolved.path.clone(),
                        server,
                        tool,
                        arguments,
                    };
                    actix_rt::spawn(async move { tool_calls::send(&svc, run, accepted).await });
                }
                Some(Proposed::Fetch { url }) => {
                    let (path, turn) = (resolved.path.clone(), resolved.turn);
                    actix_rt::spawn(async move {
                        crate::turn::fetch::accepted(&svc, (run, turn), &path, &url).await
                    });
                }
                _ => {}
            }
            let then = if crate::proposals::awaits_output(&resolved) {
                let awaited = Awaited {
                    path: resolved.path.clone(),
                    tool: resolved.tool,
                    turn: resolved.turn,
                    command_index: resolved.command_index,
                };
                let job = match (act.svc.config.shell.runner, done.command) {
                    (ShellRunner::Server, Some(command)) => Some(ShellJob {
                        run,
                        path: resolved.path.clone(),
                        command,
                        root,
                        writes: resolved.tool == ToolName::Sh,
                        network,
                    }),
                    _ => None,
                };
                Then::Output(OutputWait {
                    awaited,
                    waiter,
                    job,
                })
            } else {
                act.svc.shell.forget_waiter(run.run_id, &resolved.path);
                // The loop goes on: the accepted action is applied; its next model call waits
                // for a place (`place`).
                Then::Resume(Start::Resume {
                    turn: resolved.turn,
                    next_index: resolved.command_index + 1,
                    aborted_by: resolved.aborts_rest.then_some(resolved.tool),
                    awaited: None,
                })
            };
            // The disk work took a while: the machine resumes only the loop still waiting on
            // this proposal (a cancel meanwhile has ended it).
            let path = resolved.path.clone();
            act.step(Input::Resolved { path, then }, ctx);
            // The client may have gone meanwhile; the resolution stands.
            let _ = answer.send(Ok(resolved));
        });
        ctx.spawn(resolved);
    }
}
