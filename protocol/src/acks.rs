//! The answers of the writing methods: `{ok: true, …}` with fields that depend on the method.
//! Each has its type (what the server sends), and [`Ack`] reads any of them.

use crate::values::State;
use serde::{Deserialize, Serialize};

/// `{ok: true}`: `removeModel`, `skill/remove`, `persona/set`, `stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// Always true.
    pub ok: bool,
}

impl Done {
    /// The answer.
    pub const OK: Done = Done { ok: true };
}

/// `set` on `run://`: the run started, continued, injected into, configured or cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAck {
    /// Always true.
    pub ok: bool,
    /// The run's alias (the one the server chose for `run://`).
    pub alias: String,
    /// With `attributes.inject`: whether the prompt was folded into the running loop (else it
    /// was queued as a loop of its own). Left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<bool>,
}

/// `{ok, path}`: the entry written by `set`, `cp`, `mv` or `update` (`mv` of a run: its new
/// `run://` path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathAck {
    /// Always true.
    pub ok: bool,
    /// The path written.
    pub path: String,
}

/// `{ok, count}`: how many entries `get`, or a pattern `set`, matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountAck {
    /// Always true.
    pub ok: bool,
    /// How many matched.
    pub count: i64,
}

/// `rm`'s answer: the entries removed from the run's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathsAck {
    /// Always true.
    pub ok: bool,
    /// Their paths.
    pub paths: Vec<String>,
}

/// `file/constraint` and `file/drop`: the pattern as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternAck {
    /// Always true.
    pub ok: bool,
    /// The pattern.
    pub pattern: String,
}

/// `skill/add`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillAck {
    /// Always true.
    pub ok: bool,
    /// The skill's name.
    pub skill: String,
    /// Its entry (`skill://<name>`).
    pub path: String,
}

/// `stream/completed`, `stream/aborted`, `stream/cancel`: the channels settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelsAck {
    /// Always true.
    pub ok: bool,
    /// Their paths.
    pub channels: Vec<String>,
}

/// `set {state}` on a pending proposal's path: how it was resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// Always true.
    pub ok: bool,
    /// The proposal's path.
    pub path: String,
    /// `resolved`, `cancelled` or `failed`.
    pub state: State,
    /// Why it failed or was refused (`permission`, `conflict`, …); `None` when accepted.
    #[serde(default)]
    pub outcome: Option<String>,
    /// An accepted `sh`/`env`: who runs it, `server` or `client` (a client told `client` runs
    /// it and streams its output back). Left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// An accepted `sh`/`env`: its output channels (`<path>_1` stdout, `<path>_2` stderr).
    /// Left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
}

/// Any `{ok, …}` answer of the writing methods, read whole: which fields are set depends on
/// the method (see [`RunAck`], [`PathAck`], [`CountAck`], [`PathsAck`], [`PatternAck`],
/// [`SkillAck`], [`ChannelsAck`], [`Resolution`], [`Done`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    /// Always true on success.
    #[serde(default)]
    pub ok: bool,
    /// The run (`set` on `run://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// The entry written (`set`, `cp`, `mv`, `update`, `skill/add`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How many entries matched (`get`, pattern `set`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// The entries removed (`rm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// The pattern stored (`file/constraint`, `file/drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The skill added (`skill/add`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// The channels settled (`stream/completed`, `stream/aborted`, `stream/cancel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// A resolved proposal's state (`resolved`, `cancelled`, `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// A resolved proposal's outcome (`permission`, `conflict`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Whether an inject was folded into the running loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<bool>,
    /// Who runs an accepted `sh`/`env`: `server` or `client`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::Value;

    /// `value` without its `null` fields (an absent `Option` reads as one).
    fn without_nulls(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
            }
            other => other,
        }
    }

    /// Every `{ok, …}` answer the server sends is read whole by [`Ack`]: no field is lost.
    #[test]
    fn ack_reads_every_write_answer_whole() {
        let path = || "known://a".to_owned();
        let answers = [
            serde_json::to_value(Done::OK),
            serde_json::to_value(RunAck {
                ok: true,
                alias: "r".into(),
                injected: Some(true),
            }),
            serde_json::to_value(PathAck {
                ok: true,
                path: path(),
            }),
            serde_json::to_value(CountAck { ok: true, count: 3 }),
            serde_json::to_value(PathsAck {
                ok: true,
                paths: vec![path()],
            }),
            serde_json::to_value(PatternAck {
                ok: true,
                pattern: "*.lock".into(),
            }),
            serde_json::to_value(SkillAck {
                ok: true,
                skill: "s".into(),
                path: "skill://s".into(),
            }),
            serde_json::to_value(ChannelsAck {
                ok: true,
                channels: vec![path()],
            }),
            serde_json::to_value(Resolution {
                ok: true,
                path: path(),
                state: State::Resolved,
                outcome: None,
                runner: Some("server".into()),
                channels: Some(vec![path()]),
            }),
        ];
        for answer in answers {
            let sent = without_nulls(answer.unwrap_or_default());
            let read: Ack = serde_json::from_value(sent.clone()).unwrap_or_default();
            let again = serde_json::to_value(&read).unwrap_or_default();
            assert_eq!(again, sent);
        }
    }
}
