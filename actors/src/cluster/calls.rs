//! The calls one process makes for a run another holds, and their answers, as the JSON the
//! `run_calls` table keeps.

use rummy_core::turn::proposals::{Decision, Resolved};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entry::State;
use rummy_text::parse::ToolName;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// What a process asks of the run's holder: what the run registry would do for a client of
/// its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Forwarded {
    /// Fold a prompt into the active loop, or queue it (`InjectRun`).
    Inject {
        /// The prompt.
        prompt: String,
    },
    /// Queue a loop (`ContinueRun`).
    Continue {
        /// The prompt.
        prompt: String,
    },
    /// Cancel the active loop (`CancelRun`).
    Cancel,
    /// Resolve a proposal (`ResolveProposal`).
    Resolve {
        /// The proposal's path.
        path: String,
        /// Accept, reject or error.
        decision: Decision,
        /// The project's root on disk.
        root: PathBuf,
        /// Who decided.
        by: Option<String>,
    },
    /// The run was renamed (`RenameRun`): its actor goes on under the new alias.
    Rename {
        /// The new alias.
        alias: String,
    },
}

/// What the holder answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Done, nothing to tell.
    Done,
    /// Whether an injected prompt was folded into the active loop.
    Folded(bool),
    /// What a resolution did.
    Resolved(Resolved),
}

fn bad(what: &str) -> RpcError {
    RpcError::new(ErrorKind::Internal, format!("a forwarded call: {what}"))
}

fn text(params: &Value, key: &str) -> Result<String, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad(&format!("no {key}")))
}

/// The version of the calls' encoding this build writes: a row carries it (`"v"`), and one
/// written by a later version is refused by name rather than misread. A row without it is of
/// the first version, which had the same shape.
pub const CALLS_ENCODING: u64 = 1;

/// A call as the table keeps it: serde's encoding of [`Forwarded`], the method apart.
#[derive(Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "lowercase")]
enum Wire {
    Inject {
        prompt: String,
    },
    Continue {
        prompt: String,
    },
    Cancel,
    Resolve {
        path: String,
        decision: Kind,
        body: Option<String>,
        root: PathBuf,
        by: Option<String>,
    },
    Rename {
        alias: String,
    },
}

/// A resolution's kind, its body beside it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Accept,
    Reject,
    Error,
}

impl From<&Forwarded> for Wire {
    fn from(call: &Forwarded) -> Wire {
        match call.clone() {
            Forwarded::Inject { prompt } => Wire::Inject { prompt },
            Forwarded::Continue { prompt } => Wire::Continue { prompt },
            Forwarded::Cancel => Wire::Cancel,
            Forwarded::Resolve {
                path,
                decision,
                root,
                by,
            } => {
                let (decision, body) = match decision {
                    Decision::Accept(body) => (Kind::Accept, body),
                    Decision::Reject(body) => (Kind::Reject, body),
                    Decision::Error(body) => (Kind::Error, body),
                };
                Wire::Resolve {
                    path,
                    decision,
                    body,
                    root,
                    by,
                }
            }
            Forwarded::Rename { alias } => Wire::Rename { alias },
        }
    }
}

impl From<Wire> for Forwarded {
    fn from(wire: Wire) -> Forwarded {
        match wire {
            Wire::Inject { prompt } => Forwarded::Inject { prompt },
            Wire::Continue { prompt } => Forwarded::Continue { prompt },
            Wire::Cancel => Forwarded::Cancel,
            Wire::Resolve {
                path,
                decision,
                body,
                root,
                by,
            } => Forwarded::Resolve {
                path,
                decision: match decision {
                    Kind::Accept => Decision::Accept(body),
                    Kind::Reject => Decision::Reject(body),
                    Kind::Error => Decision::Error(body),
                },
                root,
                by,
            },
            Wire::Rename { alias } => Forwarded::Rename { alias },
        }
    }
}

impl Forwarded {
    /// Its method and params, as the table keeps them (the params carry the encoding's
    /// version).
    pub fn encode(&self) -> (String, String) {
        let mut params = match serde_json::to_value(Wire::from(self)) {
            Ok(Value::Object(params)) => params,
            // A tagged enum of strings always serialises to an object.
            _ => Map::new(),
        };
        let method = match params.remove("method") {
            Some(Value::String(method)) => method,
            _ => String::new(),
        };
        params.insert("v".into(), Value::from(CALLS_ENCODING));
        (method, Value::Object(params).to_string())
    }

    /// The call a table row holds.
    ///
    /// # Errors
    /// A row this build cannot read (a later version wrote it, or it is malformed).
    pub fn decode(method: &str, params: &str) -> Result<Forwarded, RpcError> {
        let mut params: Map<String, Value> =
            serde_json::from_str(params).map_err(|e| bad(&e.to_string()))?;
        let version = params.remove("v").and_then(|v| v.as_u64()).unwrap_or(1);
        if version > CALLS_ENCODING {
            return Err(bad(&format!(
                "encoding {version}, written by a later version (this one reads up to {CALLS_ENCODING})"
            )));
        }
        params.insert("method".into(), Value::from(method));
        let wire: Wire =
            serde_json::from_value(Value::Object(params)).map_err(|e| bad(&e.to_string()))?;
        Ok(wire.into())
    }
}

impl Answer {
    /// The answer as the table keeps it: `{"ok": …}` or `{"error": {code, message, data}}`.
    pub fn encode(answer: &Result<Answer, RpcError>) -> String {
        match answer {
            Ok(Answer::Done) => json!({ "ok": null }),
            Ok(Answer::Folded(folded)) => json!({ "ok": folded }),
            Ok(Answer::Resolved(r)) => json!({ "ok": {
                "path": r.path,
                "state": r.state.as_str(),
                "outcome": r.outcome,
                "tool": r.tool.as_str(),
                "abortsRest": r.aborts_rest,
                "commandIndex": r.command_index,
                "turn": r.turn,
            }}),
            Err(e) => json!({ "error": e.to_value() }),
        }
        .to_string()
    }

    /// The answer a row holds; an error answer is the holder's error, as it was.
    ///
    /// # Errors
    /// The holder's error, or a row this build cannot read.
    pub fn decode(result: &str) -> Result<Answer, RpcError> {
        let value: Value = serde_json::from_str(result).map_err(|e| bad(&e.to_string()))?;
        if let Some(error) = value.get("error") {
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
            let mut extra: Map<String, Value> = error
                .get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            extra.remove("kind");
            return Err(RpcError {
                kind: ErrorKind::from_code(code).unwrap_or(ErrorKind::Internal),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                extra,
            });
        }
        match value.get("ok") {
            Some(Value::Null) | None => Ok(Answer::Done),
            Some(Value::Bool(folded)) => Ok(Answer::Folded(*folded)),
            Some(ok) => {
                let state = ok
                    .get("state")
                    .and_then(Value::as_str)
                    .and_then(State::parse)
                    .ok_or_else(|| bad("state"))?;
                let tool = ok
                    .get("tool")
                    .and_then(Value::as_str)
                    .and_then(ToolName::parse)
                    .ok_or_else(|| bad("tool"))?;
                let number = |key: &str| ok.get(key).and_then(Value::as_i64).unwrap_or(0);
                Ok(Answer::Resolved(Resolved {
                    path: text(ok, "path")?,
                    state,
                    outcome: ok.get("outcome").and_then(Value::as_str).map(str::to_owned),
                    tool,
                    aborts_rest: ok
                        .get("abortsRest")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    command_index: usize::try_from(number("commandIndex")).unwrap_or(0),
                    turn: i32::try_from(number("turn")).unwrap_or(0),
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every call reads back as it was sent.
    #[test]
    fn calls_read_back_as_sent() {
        for call in [
            Forwarded::Inject {
                prompt: "also this".into(),
            },
            Forwarded::Continue {
                prompt: "next".into(),
            },
            Forwarded::Cancel,
            Forwarded::Resolve {
                path: "edit://src/a.rs".into(),
                decision: Decision::Reject(Some("not like that".into())),
                root: PathBuf::from("/srv/p"),
                by: Some("ana".into()),
            },
            Forwarded::Resolve {
                path: "sh://turn_1/ls".into(),
                decision: Decision::Accept(None),
                root: PathBuf::from("/srv/p"),
                by: None,
            },
            Forwarded::Rename {
                alias: "renamed".into(),
            },
        ] {
            let (method, params) = call.encode();
            assert_eq!(Forwarded::decode(&method, &params), Ok(call));
        }
    }

    /// A call carries its encoding's version; one without it (the first version's) reads the
    /// same, and one from a later version is refused by name.
    #[test]
    fn calls_carry_their_encodings_version() {
        let (method, params) = Forwarded::Inject { prompt: "p".into() }.encode();
        assert_eq!(method, "inject");
        assert_eq!(
            serde_json::from_str::<Value>(&params).unwrap(),
            json!({ "prompt": "p", "v": 1 })
        );
        assert_eq!(
            Forwarded::decode(
                "resolve",
                r#"{"path":"edit://a","decision":"accept","body":null,"root":"/p","by":null}"#
            ),
            Ok(Forwarded::Resolve {
                path: "edit://a".into(),
                decision: Decision::Accept(None),
                root: PathBuf::from("/p"),
                by: None,
            })
        );
        assert_eq!(
            Forwarded::decode("cancel", r#"{"v":2}"#),
            Err(bad(
                "encoding 2, written by a later version (this one reads up to 1)"
            ))
        );
    }

    /// Every answer, an error with its data included, reads back as it was given.
    #[test]
    fn answers_read_back_as_given() {
        let resolved = Resolved {
            path: "edit://a".into(),
            state: State::Resolved,
            outcome: None,
            tool: ToolName::Set,
            aborts_rest: false,
            command_index: 2,
            turn: 3,
        };
        for answer in [
            Ok(Answer::Done),
            Ok(Answer::Folded(true)),
            Ok(Answer::Resolved(resolved)),
            Err(RpcError::new(ErrorKind::Conflict, "already resolved")
                .with("path", Value::from("edit://a"))),
        ] {
            assert_eq!(Answer::decode(&Answer::encode(&answer)), answer);
        }
    }
}
