//! `RunCall`: a client's call on an existing run — the run and its `RunCommand` — as the session sends it to the run registry and the registry to the run's actor, which takes every call in one handler.
//!
//! The session builds a [`RunCall`] (the stored run and the `RunCommand`, which
//! `rummy_core::orchestration` defines); the registry routes it unchanged — to the run's actor
//! here (started from the database if it has none), or, when another process holds the run, as
//! serde's JSON of the same `RunCommand` (`cluster::calls`) — and the actor takes it in one
//! handler, below, which feeds the run's state machine the call's input. Every call is one such input, counted once by the machine
//! for the retire protocol (`retire.rs`), so no handler keeps that count by hand. The answer is
//! a `RunAnswer`, whichever way the call went.

use super::resolve::Resolution;
use super::RunActor;
use crate::errors::from_store;
use crate::loop_queue::Enqueue;
use actix::prelude::*;
use rummy_core::orchestration::{Input, RunAnswer, RunCommand};
use rummy_core::wire::RpcError;
use rummy_store::runs::Run;

/// A client's call on run `run`: what the session sends the run registry, and the registry the
/// run's actor.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<RunAnswer, RpcError>")]
pub struct RunCall {
    /// The stored run, as the caller read it (an inject or a continuation that becomes a loop
    /// takes its mode, model and flags).
    pub run: Run,
    /// What to do.
    pub command: RunCommand,
}

impl Handler<RunCall> for RunActor {
    type Result = ResponseActFuture<Self, Result<RunAnswer, RpcError>>;

    /// Feeds the machine the call's one input and answers, at once or once the work the
    /// input started is done (a prompt's write, a resolution).
    fn handle(&mut self, msg: RunCall, ctx: &mut Context<Self>) -> Self::Result {
        let RunCall { run, command } = msg;
        match command {
            RunCommand::Inject { prompt } => {
                let wait = self.prompt(enqueue(&run, prompt), true, ctx);
                Box::pin(wait.map(|res, _, _| res.map(RunAnswer::Folded).map_err(from_store)))
            }
            RunCommand::Continue { prompt } => {
                let wait = self.prompt(enqueue(&run, prompt), false, ctx);
                Box::pin(wait.map(|res, _, _| res.map(|_| RunAnswer::Done).map_err(from_store)))
            }
            RunCommand::Cancel => {
                self.step(Input::Cancel, ctx);
                Box::pin(fut::ready(Ok(RunAnswer::Done)))
            }
            RunCommand::Resolve {
                path,
                decision,
                root,
                by,
            } => {
                let resolution = Resolution {
                    path,
                    decision,
                    root,
                    by,
                };
                Box::pin(
                    self.take_resolution(resolution, ctx)
                        .map(|res, _, _| res.map(RunAnswer::Resolved)),
                )
            }
            RunCommand::Rename { alias } => {
                self.rename(&alias);
                self.step(Input::Rename, ctx);
                Box::pin(fut::ready(Ok(RunAnswer::Done)))
            }
        }
    }
}

/// The loop a prompt for `run` becomes, should it not be folded in: in the run's mode, model
/// and flags.
fn enqueue(run: &Run, prompt: String) -> Enqueue {
    Enqueue {
        mode: run.mode(),
        model: run.model.clone(),
        prompt,
        config: run.flags(),
    }
}
