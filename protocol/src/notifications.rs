//! What the server pushes: `run/state`, `run/progress`, `run/proposal`, `ui/render`,
//! `stream/cancelled`, `tool/call` and `ui/notify`.
//!
//! Every type but [`RunState`] is written by the server as it is, straight to text, so its
//! fields are declared in the order of their wire names (the order in which the server has
//! always written them; a test keeps it so). `run/state` is written from the store's rows
//! without copying them (`rummy_core::wire::state`), with the fields of [`RunState`].

use crate::results::{HistoryItem, Queued, Route, Telemetry, Unknown};
use crate::values::{NotifyLevel, ProposalKind, StopReason};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A notification's params, and the method they are pushed under.
pub trait Push: Serialize {
    /// The notification's method.
    const METHOD: &'static str;
}

impl Push for RunState {
    const METHOD: &'static str = "run/state";
}

impl Push for RunProgress {
    const METHOD: &'static str = "run/progress";
}

impl Push for RunProposal {
    const METHOD: &'static str = "run/proposal";
}

impl Push for UiRender {
    const METHOD: &'static str = "ui/render";
}

impl Push for ToolCall {
    const METHOD: &'static str = "tool/call";
}

impl Push for StreamCancelled {
    const METHOD: &'static str = "stream/cancelled";
}

impl Push for UiNotify {
    const METHOD: &'static str = "ui/notify";
}

/// `run/state`: what changed in a run, numbered by `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunState {
    /// The run.
    pub run: String,
    /// The turn.
    #[serde(default)]
    pub turn: i64,
    /// The run's status.
    pub status: i64,
    /// The latest status report.
    #[serde(default)]
    pub summary: Option<String>,
    /// The entries changed since the previous push.
    #[serde(default)]
    pub history: Vec<HistoryItem>,
    /// The open questions.
    #[serde(default)]
    pub unknowns: Vec<Unknown>,
    /// The turn's telemetry (turn ends only).
    #[serde(default)]
    pub telemetry: Option<Telemetry>,
    /// The current loop's routing decision.
    #[serde(default)]
    pub route: Option<Route>,
    /// Why the loop stopped (final pushes): `concluded`, `max_turns`, …
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Why a loop waits; left out when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<Queued>,
    /// How many changed entries did not fit the message and were left out (read the run
    /// again with `getRun`); left out when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_omitted: Option<i64>,
    /// Its per-run number, for `getRun {sinceSeq}`.
    #[serde(default)]
    pub seq: Option<i64>,
}

/// `run/progress`: transient activity of the run's current turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunProgress {
    /// How long until the retry (`retrying`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<i64>,
    /// Why (`queued`, `retrying`, `rerouted`); the side task's name (`sidecar`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The accepted command whose output the turn waits for (`streaming`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The run.
    pub run: String,
    /// `queued`, `thinking`, `processing`, `retrying`, `rerouted`, `streaming` or `sidecar`.
    pub status: String,
    /// The model rerouted to (`rerouted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The turn.
    #[serde(default)]
    pub turn: i64,
}

impl RunProgress {
    /// A progress of `status` with nothing more to say.
    pub fn new(run: &str, turn: i64, status: &str) -> RunProgress {
        RunProgress {
            delay_ms: None,
            detail: None,
            path: None,
            run: run.to_owned(),
            status: status.to_owned(),
            to: None,
            turn,
        }
    }
}

/// `run/proposal`: proposals waiting for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProposal {
    /// The proposals.
    #[serde(default)]
    pub proposed: Vec<Proposed>,
    /// The run.
    pub run: String,
}

/// One proposal waiting for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposed {
    /// Its attributes (`kind`, `path`, `command`, `question`, …).
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// What it would do (a unified diff for an edit; empty for a command): its first
    /// `RUMMY_INLINE_BODY_BYTES` when `body_truncated`.
    #[serde(default)]
    pub body: String,
    /// The body's whole size in bytes, when `body` is not all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<i64>,
    /// `body` is the body's first bytes only: `getBody` reads the rest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body_truncated: bool,
    /// What it does, hashed: the SHA-256 (hex) of its canonical JSON (`kind`, `paths`,
    /// `command`, `content`, `patch`). An accept sends it as `approves`; the server refuses
    /// the accept (-32005) when the proposal's differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Its path: accept with `set {run, path, state: "resolved", approves: hash}`.
    pub path: String,
    /// Its kind (also its `kind` attribute); `None` from a server that does not send it (see
    /// [`Proposed::kind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalKind>,
    /// The turn that proposed it.
    #[serde(default)]
    pub turn: i64,
}

impl Proposed {
    /// Its kind: the `proposal` field, or from a server that does not send it, its `kind`
    /// attribute.
    pub fn kind(&self) -> ProposalKind {
        self.proposal
            .or_else(|| ProposalKind::of(&self.attributes))
            .unwrap_or_default()
    }
}

/// `ui/render`: streamed model text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiRender {
    /// Whether it continues the turn's text (false: the turn's first text).
    #[serde(default)]
    pub append: bool,
    /// Whether it is the model's reasoning, streamed beside its text; left out for its text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoning: bool,
    /// The run.
    pub run: String,
    /// The text.
    pub text: String,
    /// The turn.
    #[serde(default)]
    pub turn: Option<i64>,
}

/// `stream/cancelled`: a command's stream was cancelled; whoever runs it stops it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamCancelled {
    /// The stream's proposal path.
    pub path: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
    /// The run.
    pub run: String,
}

/// `tool/call`: a person accepted a call of a tool this connection offered; the client calls
/// it and answers with `tool/result`. Sent to the offering connection alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's arguments, a JSON object.
    pub arguments: Map<String, Value>,
    /// The call's proposal path, which `tool/result` names.
    pub path: String,
    /// The run.
    pub run: String,
    /// The MCP server holding the tool.
    pub server: String,
    /// The tool.
    pub tool: String,
}

/// `ui/notify`: a notice for the person, to show as it is (a run waits for a decision, a loop
/// failed or was abandoned, the server is stopping).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiNotify {
    /// How much it matters: `info`, `warn` or `error` (a level this version does not know, or
    /// none, reads as `Unknown`: the notice is still shown).
    #[serde(default)]
    pub level: NotifyLevel,
    /// The run it is about; left out when it is about none (the server stopping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The notice, one line.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Written straight to text, each pushed type comes out exactly as its JSON value does
    /// (keys in order), which is how the server wrote it before it had types.
    #[test]
    fn pushed_types_write_their_keys_in_order() {
        let attributes = json!({"kind": "edit", "path": "a.rs"});
        let mut progress = RunProgress::new("r", 2, "retrying");
        progress.delay_ms = Some(1500);
        progress.detail = Some("429".into());
        progress.to = Some("b".into());
        progress.path = Some("sh://turn_2/ls".into());
        let texts = [
            serde_json::to_string(&progress),
            serde_json::to_string(&RunProposal {
                proposed: vec![Proposed {
                    attributes: attributes.as_object().cloned().unwrap_or_default(),
                    body: "diff".into(),
                    body_bytes: None,
                    body_truncated: false,
                    hash: Some("ab12".into()),
                    path: "edit://turn_1/a.rs".into(),
                    proposal: Some(ProposalKind::Edit),
                    turn: 1,
                }],
                run: "r".into(),
            }),
            serde_json::to_string(&UiRender {
                append: true,
                reasoning: true,
                run: "r".into(),
                text: "hi".into(),
                turn: Some(3),
            }),
            serde_json::to_string(&StreamCancelled {
                path: "sh://turn_1/x".into(),
                reason: Some("stop".into()),
                run: "r".into(),
            }),
            serde_json::to_string(&UiNotify {
                level: NotifyLevel::Warn,
                run: Some("r".into()),
                text: "run r was abandoned".into(),
            }),
        ];
        for text in texts {
            let text = text.unwrap_or_default();
            let value: Value = serde_json::from_str(&text).unwrap_or_default();
            assert_eq!(text, value.to_string());
        }
    }

    /// A notice reads whatever its level: an unknown word or none reads as `Unknown`, so the
    /// client still shows it.
    #[test]
    fn a_notice_reads_with_any_level() {
        let read = |v: Value| serde_json::from_value::<UiNotify>(v).ok();
        let notice = |level| UiNotify {
            level,
            run: None,
            text: "hi".into(),
        };
        assert_eq!(
            read(json!({"level": "error", "text": "hi"})),
            Some(notice(NotifyLevel::Error))
        );
        assert_eq!(
            read(json!({"level": "debug", "text": "hi"})),
            Some(notice(NotifyLevel::Unknown))
        );
        assert_eq!(
            read(json!({"text": "hi"})),
            Some(notice(NotifyLevel::Unknown))
        );
    }
}
