//! A run and its history: `getRuns`, `getRun`, the history items of `run/state`, what a loop
//! recalled, its open questions and why it waits.

use super::failure;
use super::models::Route;
use super::telemetry::Usage;
use crate::values::{FailureKind, ProposalKind, State, StopReason, ToolName, Visibility};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One run of `getRuns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Its alias.
    pub run: String,
    /// Its status (100, 102, 200, 202, 413, 499, 500, 508).
    pub status: i64,
    /// Its last turn.
    #[serde(default)]
    pub turn: i64,
    /// The latest status report.
    #[serde(default)]
    pub summary: Option<String>,
    /// Its model alias.
    #[serde(default)]
    pub model: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// Tokens its turns used so far.
    #[serde(default)]
    pub tokens: i64,
    /// What its turns cost so far.
    #[serde(default)]
    pub cost: f64,
}

/// One history entry of `run/state` and `getRun`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem {
    /// The entry's path (`get://turn_1/src/a.rs`, `sh://turn_2/ls_1`, …).
    pub path: String,
    /// The scheme of its path: a tool's name for a tool's result (see [`HistoryItem::tool_name`]),
    /// else what it is (`file`, `known`, `error`, `prompt`, …).
    #[serde(default)]
    pub tool: String,
    /// `proposed`, `streaming`, `resolved`, `failed` or `cancelled`.
    pub state: State,
    /// Why it failed (see [`HistoryItem::failure`]) or was cancelled.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its HTTP status (200, 202, 403, 404, …).
    #[serde(default)]
    pub status: i64,
    /// `visible`, `summarized` or `archived`.
    #[serde(default)]
    pub visibility: Visibility,
    /// The turn that wrote it.
    #[serde(default)]
    pub turn: i64,
    /// What it costs in the context.
    #[serde(default)]
    pub tokens: i64,
    /// Its attributes (`kind`, `command`, `path`, `channels`, `exitCode`, …).
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Its body, when sent: with `append`, what was appended at `offset`; with
    /// `body_truncated`, its first `RUMMY_INLINE_BODY_BYTES` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body's whole size in bytes, when `body` is not all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<i64>,
    /// `body` is the body's first bytes only: `getBody` reads the rest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body_truncated: bool,
    /// `body` is what was appended to the entry's body at `offset` (a channel's growth).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// With `append`: the byte offset in the body where the appended text starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// While it is a pending proposal: the hash of what it does, which an accept sends as
    /// `approves` (see `run/proposal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// When it is (or was) a tool's proposal: its kind. Left out for every other entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalKind>,
}

impl HistoryItem {
    /// A string attribute.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// When this entry is (or was) a tool's proposal, its kind: the `proposal` field, or from a
    /// server that does not send it, what its attributes say ([`ProposalKind::of`]).
    pub fn proposal(&self) -> Option<ProposalKind> {
        self.proposal.or_else(|| ProposalKind::of(&self.attributes))
    }

    /// Whether this entry is (or was) a tool's proposal.
    pub fn is_proposal(&self) -> bool {
        self.proposal().is_some()
    }

    /// Whether it is a tool's proposal still waiting for a decision.
    pub fn is_pending_proposal(&self) -> bool {
        self.state == State::Proposed && self.is_proposal()
    }

    /// The tool that wrote it, when its scheme is a tool's name ([`ToolName::Unknown`] for any
    /// other scheme).
    pub fn tool_name(&self) -> ToolName {
        ToolName::parse(&self.tool).unwrap_or(ToolName::Unknown)
    }

    /// Why it failed, when it did.
    pub fn failure(&self) -> Option<FailureKind> {
        failure(self.state, self.outcome.as_deref())
    }
}

/// What a loop's first turn recalled, and why (`getRun`'s `recall`, and the attributes of the
/// loop's `recall://<loop>` history entry): the terms it looked for and each item injected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    /// The entry holding the block the model read (`recall://<loop>`).
    pub path: String,
    /// The loop's number in its run.
    #[serde(rename = "loop")]
    pub loop_number: i64,
    /// The prompt's words it looked for.
    #[serde(default)]
    pub terms: Vec<String>,
    /// How many entries the full-text index matched (at most `RUMMY_RECALL_MAX_CANDIDATES`).
    #[serde(default)]
    pub candidates: i64,
    /// Whether the sidecar re-ranked the candidates (`RUMMY_RECALL_RERANK`); `false`: the
    /// lexical order.
    #[serde(default)]
    pub reranked: bool,
    /// What it injected, best first.
    #[serde(default)]
    pub items: Vec<RecallItem>,
}

/// One recalled item: where it came from and why it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallItem {
    /// Its source entry (`memory://…`, `history://…`, another run's `known://…` or `session://…`).
    pub path: String,
    /// `memory`, `history`, `known` or `session`.
    pub source: String,
    /// The run it belongs to, for another run's fact or session state.
    #[serde(default)]
    pub run: Option<String>,
    /// The section of the entry it is (its heading), when the entry has sections.
    #[serde(default)]
    pub section: Option<String>,
    /// Its score: the share of the prompt's terms it matched, times the index's bm25 relative
    /// to the best match (from one half for the worst to one for the best), times the weight of
    /// its source (and, for history, its age).
    pub score: f64,
    /// The terms it matched.
    #[serde(default)]
    pub matched: Vec<String>,
}

/// An open question (`unknown://`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unknown {
    /// Its path.
    pub path: String,
    /// The question.
    #[serde(default)]
    pub body: String,
    /// Whether it is a question of the project, which every run of it sees (`shared`), rather
    /// than the run's own.
    #[serde(default)]
    pub shared: bool,
}

/// Why a loop of a run waits: for a fair-use place, or behind the run's own loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queued {
    /// `runs_limit` or `cost_ceiling` (status 100: for a place), `loop` (behind the run's own
    /// running loop).
    pub reason: String,
    /// Its 1-based place in that line (for `loop`: how many of the run's loops wait).
    pub position: i64,
}

/// `getRun`'s answer: the whole state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSnapshot {
    /// Its alias.
    pub run: String,
    /// Its status.
    pub status: i64,
    /// Why its last loop stopped (`concluded`, `max_turns`, …), once stopped.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Why a loop waits, if one does.
    #[serde(default)]
    pub queued: Option<Queued>,
    /// Its mode (`ask` or `act`), when the server says.
    #[serde(default)]
    pub mode: Option<String>,
    /// Its last turn.
    #[serde(default)]
    pub turn: i64,
    /// Its model alias.
    #[serde(default)]
    pub model: Option<String>,
    /// The current loop's routing decision.
    #[serde(default)]
    pub route: Option<Route>,
    /// Its temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Its persona.
    #[serde(default)]
    pub persona: Option<String>,
    /// Its context limit.
    #[serde(default)]
    pub context_limit: Option<i64>,
    /// The latest status report.
    #[serde(default)]
    pub summary: Option<String>,
    /// Every history entry, oldest first (with `limit`: the page asked for).
    #[serde(default)]
    pub history: Vec<HistoryItem>,
    /// With `limit`: how many history entries the run has (the server leaves the field out
    /// without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_total: Option<i64>,
    /// The open questions.
    #[serde(default)]
    pub unknowns: Vec<Unknown>,
    /// What the current loop's first turn recalled, and why; `null` when it recalled nothing
    /// (nothing was relevant, or recall is off).
    #[serde(default)]
    pub recall: Option<Recall>,
    /// Tokens and cost of the whole run.
    #[serde(default)]
    pub telemetry: Usage,
    /// The seq of its last `run/state`.
    #[serde(default)]
    pub last_seq: i64,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// With `sinceSeq`: the notifications pushed after it, oldest first (the server leaves the
    /// field out without `sinceSeq`).
    #[serde(default)]
    pub missed: Vec<MissedNotification>,
    /// With `sinceSeq`: more notifications followed than fit the answer; ask again from the
    /// last one in `missed` (the server leaves the field out when all fit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missed_more: bool,
}

/// A notification replayed by `getRun {sinceSeq}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissedNotification {
    /// Its method.
    pub method: String,
    /// Its params.
    #[serde(default)]
    pub params: Value,
}
