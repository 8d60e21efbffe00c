//! `RunCommand`: what a client asks of an existing run — inject, continue, cancel, resolve, rename — as one value, and `RunAnswer`, what the run answers.
//!
//! The value travels unchanged from the session's route through the run registry to the run's
//! actor, which turns it into its one [`Input`](super::Input); when another process holds the
//! run, it crosses processes as serde's JSON of the same value (the `run_calls` table, written
//! and read by the actors' `cluster::calls`, which adds the encoding's version).

use crate::turn::proposals::{Decision, Resolved};
use crate::wire::{ErrorKind, RpcError};
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Each call's serde form is its method beside its fields, a resolution's decision split
    /// into its kind and body; each reads back as the same call.
    #[test]
    fn each_call_is_its_method_beside_its_fields() {
        let calls = [
            (
                RunCommand::Inject { prompt: "p".into() },
                json!({ "method": "inject", "prompt": "p" }),
            ),
            (
                RunCommand::Continue { prompt: "q".into() },
                json!({ "method": "continue", "prompt": "q" }),
            ),
            (RunCommand::Cancel, json!({ "method": "cancel" })),
            (
                RunCommand::Resolve {
                    path: "edit://a".into(),
                    decision: Decision::Error(Some("exit 1".into())),
                    root: PathBuf::from("/p"),
                    by: Some("ana".into()),
                },
                json!({
                    "method": "resolve",
                    "path": "edit://a",
                    "decision": "error",
                    "body": "exit 1",
                    "root": "/p",
                    "by": "ana",
                }),
            ),
            (
                RunCommand::Rename { alias: "b".into() },
                json!({ "method": "rename", "alias": "b" }),
            ),
        ];
        for (call, form) in calls {
            assert_eq!(serde_json::to_value(&call).unwrap(), form);
            assert_eq!(serde_json::from_value::<RunCommand>(form).unwrap(), call);
        }
    }

    /// An answer of another kind than the call expects is an internal error, not a success.
    #[test]
    fn an_answer_of_another_kind_is_refused() {
        assert_eq!(RunAnswer::Done.done(), Ok(()));
        assert_eq!(RunAnswer::Folded(true).folded(), Ok(true));
        assert_eq!(
            RunAnswer::Done.folded(),
            Err(RpcError::new(
                ErrorKind::Internal,
                "the run answered Done, not what its call expects"
            ))
        );
    }
}
