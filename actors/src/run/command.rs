//! `RunCommand`: a client's call on an existing run, one value from the session's route through the run registry to the run's actor, or through the `run_calls` table to the process holding the run.
//!
//! The session builds a [`Command`] (the stored run and the [`RunCommand`]); the registry
//! routes it unchanged — to the run's actor here (started from the database if it has none),
//! or, when another process holds the run, as serde's JSON of the same `RunCommand`
//! (`cluster::calls`) — and the actor takes it in one handler, below, which feeds the run's
//! state machine the call's input. Every call is one such input, counted once by the machine
//! for the retire protocol (`retire.rs`), so no handler keeps that count by hand. The answer is
//! a [`RunAnswer`], whichever way the call went.

use super::resolve::Resolution;
use super::RunActor;
use crate::errors::from_store;
use crate::loop_queue::Enqueue;
use actix::prelude::*;
use rummy_core::orchestration::Input;
use rummy_core::turn::proposals::{Decision, Resolved};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::runs::Run;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a client asks of an existing run. Its serde form is the `run_calls` table's (the
/// method as `"method"`, the fields beside it, a resolution's decision as `"decision"` and
/// `"body"`), so a row written by an earlier build reads as the call it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum RunCommand {
    /// Fold a prompt into the active loop — a `prompt://<next turn>` entry the model sees next
    /// turn — or queue it as a new loop, in the run's settings, when none is active. Answers
    /// [`RunAnswer::Folded`].
    Inject {
        /// The prompt.
        prompt: String,
    },
    /// Queue a new loop in the run's mode and settings (its route checked first; a
    /// continuation that names other settings configured the run before, so they stay for the
    /// loops after it too). Answers [`RunAnswer::Done`].
    Continue {
        /// The prompt.
        prompt: String,
    },
    /// Stop the active loop (499) and its pending proposal, and the server's commands a
    /// finished loop left running; queued loops run next. Reaches the run's actor even when it
    /// has none. Answers [`RunAnswer::Done`].
    Cancel,
    /// Resolve the proposal the run waits on; the turn then resumes. Answers
    /// [`RunAnswer::Resolved`].
    Resolve {
        /// The proposal's path.
        path: String,
        /// Accept, reject or error, with its body.
        #[serde(flatten, with = "decision")]
        decision: Decision,
        /// The project root on disk, where accepted file changes land.
        root: PathBuf,
        /// Who decided, when a token names the person (the proposal records it).
        by: Option<String>,
    },
    /// The run was renamed (the store has the new alias already): its actor, if it has one,
    /// goes on under `alias`. Answers [`RunAnswer::Done`].
    Rename {
        /// The new alias.
        alias: String,
    },
}

/// What a run answered a [`RunCommand`].
#[derive(Debug, Clone, PartialEq)]
pub enum RunAnswer {
    /// Done, nothing to tell.
    Done,
    /// Whether an injected prompt was folded into the active loop.
    Folded(bool),
    /// What a resolution did.
    Resolved(Resolved),
}

impl RunAnswer {
    /// The answer of a call that tells nothing back.
    ///
    /// # Errors
    /// Another answer: the run answered a call of another kind.
    pub fn done(self) -> Result<(), RpcError> {
        match self {
            RunAnswer::Done => Ok(()),
            other => Err(other.unexpected()),
        }
    }

    /// Whether an injected prompt was folded in.
    ///
    /// # Errors
    /// Another answer: the run answered a call of another kind.
    pub fn folded(self) -> Result<bool, RpcError> {
        match self {
            RunAnswer::Folded(folded) => Ok(folded),
            other => Err(other.unexpected()),
        }
    }

    /// What a resolution did.
    ///
    /// # Errors
    /// Another answer: the run answered a call of another kind.
    pub fn resolved(self) -> Result<Resolved, RpcError> {
        match self {
            RunAnswer::Resolved(resolved) => Ok(resolved),
            other => Err(other.unexpected()),
        }
    }

    fn unexpected(&self) -> RpcError {
        RpcError::new(
            ErrorKind::Internal,
            format!("the run answered {self:?}, not what its call expects"),
        )
    }
}

/// A client's call on run `run`: what the session sends the run registry, and the registry the
/// run's actor.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<RunAnswer, RpcError>")]
pub struct Command {
    /// The stored run, as the caller read it (an inject or a continuation that becomes a loop
    /// takes its mode, model and flags).
    pub run: Run,
    /// What to do.
    pub command: RunCommand,
}

impl Handler<Command> for RunActor {
    type Result = ResponseActFuture<Self, Result<RunAnswer, RpcError>>;

    /// Feeds the machine the call's one input and answers, at once or once the work the
    /// input started is done (a prompt's write, a resolution).
    fn handle(&mut self, msg: Command, ctx: &mut Context<Self>) -> Self::Result {
        let Command { run, command } = msg;
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

/// A resolution's decision as the table keeps it: its kind (`"decision"`) and its body
/// (`"body"`) side by side, flattened into the call.
mod decision {
    use super::Decision;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// A decision's kind.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Accept,
        Reject,
        Error,
    }

    /// The two fields as they lie in the call.
    #[derive(Serialize, Deserialize)]
    struct Row {
        decision: Kind,
        body: Option<String>,
    }

    /// Writes `decision` as its kind and body.
    pub fn serialize<S: Serializer>(decision: &Decision, s: S) -> Result<S::Ok, S::Error> {
        let (decision, body) = match decision.clone() {
            Decision::Accept(body) => (Kind::Accept, body),
            Decision::Reject(body) => (Kind::Reject, body),
            Decision::Error(body) => (Kind::Error, body),
        };
        Row { decision, body }.serialize(s)
    }

    /// Reads a decision from its kind and body.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decision, D::Error> {
        let Row { decision, body } = Row::deserialize(d)?;
        Ok(match decision {
            Kind::Accept => Decision::Accept(body),
            Kind::Reject => Decision::Reject(body),
            Kind::Error => Decision::Error(body),
        })
    }
}
