//! The calls one process makes for a run another holds, and their answers, as the JSON the
//! `run_calls` table keeps: a call is serde's encoding of the [`RunCommand`] a client of the
//! calling process made, its method in a column of its own and its version beside its fields.

use rummy_core::orchestration::{RunAnswer, RunCommand};
use rummy_core::turn::proposals::Resolved;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entry::State;
use rummy_text::parse::ToolName;
use serde_json::{json, Map, Value};

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

/// A call's method and params, as the table keeps them (the params carry the encoding's
/// version).
pub fn encode_call(call: &RunCommand) -> (String, String) {
    let mut params = match serde_json::to_value(call) {
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
pub fn decode_call(method: &str, params: &str) -> Result<RunCommand, RpcError> {
    let mut params: Map<String, Value> =
        serde_json::from_str(params).map_err(|e| bad(&e.to_string()))?;
    let version = params.remove("v").and_then(|v| v.as_u64()).unwrap_or(1);
    if version > CALLS_ENCODING {
        return Err(bad(&format!(
                "encoding {version}, written by a later version (this one reads up to {CALLS_ENCODING})"
            )));
    }
    params.insert("method".into(), Value::from(method));
    serde_json::from_value(Value::Object(params)).map_err(|e| bad(&e.to_string()))
}

/// An answer as the table keeps it: `{"ok": …}` or `{"error": {code, message, data}}`.
pub fn encode_answer(answer: &Result<RunAnswer, RpcError>) -> String {
    match answer {
        Ok(RunAnswer::Done) => json!({ "ok": null }),
        Ok(RunAnswer::Folded(folded)) => json!({ "ok": folded }),
        Ok(RunAnswer::Resolved(r)) => json!({ "ok": {
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
pub fn decode_answer(result: &str) -> Result<RunAnswer, RpcError> {
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
        Some(Value::Null) | None => Ok(RunAnswer::Done),
        Some(Value::Bool(folded)) => Ok(RunAnswer::Folded(*folded)),
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
            Ok(RunAnswer::Resolved(Resolved {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rummy_core::turn::proposals::Decision;
    use std::path::PathBuf;

    /// Every call reads back as it was sent.
    #[test]
    fn calls_read_back_as_sent() {
        for call in [
            RunCommand::Inject {
                prompt: "also this".into(),
            },
            RunCommand::Continue {
                prompt: "next".into(),
            },
            RunCommand::Cancel,
            RunCommand::Resolve {
                path: "edit://src/a.rs".into(),
                decision: Decision::Reject(Some("not like that".into())),
                root: PathBuf::from("/srv/p"),
                by: Some("ana".into()),
            },
            RunCommand::Resolve {
                path: "sh://turn_1/ls".into(),
                decision: Decision::Accept(None),
                root: PathBuf::from("/srv/p"),
                by: None,
            },
            RunCommand::Rename {
                alias: "renamed".into(),
            },
        ] {
            let (method, params) = encode_call(&call);
            assert_eq!(decode_call(&method, &params), Ok(call));
        }
    }

    /// A call carries its encoding's version; one without it (the first version's) reads the
    /// same, and one from a later version is refused by name.
    #[test]
    fn calls_carry_their_encodings_version() {
        let (method, params) = encode_call(&RunCommand::Inject { prompt: "p".into() });
        assert_eq!(method, "inject");
        assert_eq!(
            serde_json::from_str::<Value>(&params).unwrap(),
            json!({ "prompt": "p", "v": 1 })
        );
        assert_eq!(
            decode_call(
                "resolve",
                r#"{"path":"edit://a","decision":"accept","body":null,"root":"/p","by":null}"#
            ),
            Ok(RunCommand::Resolve {
                path: "edit://a".into(),
                decision: Decision::Accept(None),
                root: PathBuf::from("/p"),
                by: None,
            })
        );
        assert_eq!(
            decode_call("cancel", r#"{"v":2}"#),
            Err(bad(
                "encoding 2, written by a later version (this one reads up to 1)"
            ))
        );
    }

    /// The rows the calls' own encoding wrote before calls were `RunCommand`s (each method's
    /// params, as written) read as the same calls, and a call today writes the same row.
    #[test]
    fn rows_written_before_run_commands_read_as_the_same_calls() {
        let rows = [
            (
                "inject",
                r#"{"prompt":"also this","v":1}"#,
                RunCommand::Inject {
                    prompt: "also this".into(),
                },
            ),
            (
                "continue",
                r#"{"prompt":"next","v":1}"#,
                RunCommand::Continue {
                    prompt: "next".into(),
                },
            ),
            ("cancel", r#"{"v":1}"#, RunCommand::Cancel),
            (
                "resolve",
                r#"{"body":"not like that","by":"ana","decision":"reject","path":"edit://src/a.rs","root":"/srv/p","v":1}"#,
                RunCommand::Resolve {
                    path: "edit://src/a.rs".into(),
                    decision: Decision::Reject(Some("not like that".into())),
                    root: PathBuf::from("/srv/p"),
                    by: Some("ana".into()),
                },
            ),
            (
                "resolve",
                r#"{"body":"out","by":null,"decision":"error","path":"sh://turn_1/ls","root":"/srv/p","v":1}"#,
                RunCommand::Resolve {
                    path: "sh://turn_1/ls".into(),
                    decision: Decision::Error(Some("out".into())),
                    root: PathBuf::from("/srv/p"),
                    by: None,
                },
            ),
            (
                "rename",
                r#"{"alias":"renamed","v":1}"#,
                RunCommand::Rename {
                    alias: "renamed".into(),
                },
            ),
        ];
        for (method, params, call) in rows {
            assert_eq!(decode_call(method, params), Ok(call.clone()));
            assert_eq!(encode_call(&call), (method.to_owned(), params.to_owned()));
        }
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
            Ok(RunAnswer::Done),
            Ok(RunAnswer::Folded(true)),
            Ok(RunAnswer::Resolved(resolved)),
            Err(RpcError::new(ErrorKind::Conflict, "already resolved")
                .with("path", Value::from("edit://a"))),
        ] {
            assert_eq!(decode_answer(&encode_answer(&answer)), answer);
        }
    }
}
