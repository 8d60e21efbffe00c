//! What each method answers.
//!
//! The answers of the writing methods are `{ok: true, …}` with fields that depend on the method;
//! each has its type here (what the server sends), and [`Ack`] reads any of them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `ping`'s answer: `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pong {}

/// `rummy/hello`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// The server's own version.
    pub rummy_version: String,
    /// The protocol version it speaks.
    pub protocol_version: String,
    /// The project's id.
    pub project_id: i64,
    /// The project's root (its real path on the server's machine).
    pub project_root: String,
    /// The most turns a loop runs (`RUMMY_MAX_TURNS`).
    #[serde(default)]
    pub max_turns: i64,
}

/// One project of `getProjects`, and `project/set`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// Its name.
    pub name: String,
    /// Its id.
    pub project_id: i64,
    /// Its root on the server's machine.
    pub project_root: String,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created_at: Option<String>,
    /// Its cost ceiling in US dollars per period; `None`: none.
    #[serde(default)]
    pub cost_ceiling: Option<f64>,
    /// The period its spending is summed over: `month` or `day`.
    #[serde(default)]
    pub period: String,
    /// When the current period began (RFC 3339, UTC).
    #[serde(default)]
    pub period_start: String,
    /// What its turns begun since `period_start` cost (USD).
    #[serde(default)]
    pub spent: f64,
}

/// One model alias of `getModels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The alias runs name.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window in tokens, once known.
    #[serde(default)]
    pub context_length: Option<i64>,
    /// Fallback alias.
    #[serde(default)]
    pub fallback: Option<String>,
}

/// `addModel`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedModel {
    /// The model's id.
    pub id: i64,
    /// Its alias.
    pub alias: String,
}

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
    pub state: String,
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
    pub state: Option<String>,
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
    /// The tool (scheme) that wrote it.
    #[serde(default)]
    pub tool: String,
    /// `proposed`, `streaming`, `resolved`, `failed` or `cancelled`.
    pub state: String,
    /// Why it failed or was cancelled.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its HTTP status (200, 202, 403, 404, …).
    #[serde(default)]
    pub status: i64,
    /// `visible`, `summarized` or `archived`.
    #[serde(default)]
    pub visibility: String,
    /// The turn that wrote it.
    #[serde(default)]
    pub turn: i64,
    /// What it costs in the context.
    #[serde(default)]
    pub tokens: i64,
    /// Its attributes (`kind`, `command`, `path`, `channels`, `exitCode`, …).
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Its body, when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl HistoryItem {
    /// A string attribute.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// Whether this entry is a proposal (it carries the index of the command that made it).
    pub fn is_proposal(&self) -> bool {
        self.attributes.contains_key("commandIndex")
    }
}

/// An open question (`unknown://`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unknown {
    /// Its path.
    pub path: String,
    /// The question.
    #[serde(default)]
    pub body: String,
}

/// Tokens and cost of a call, or of a run so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: i64,
    /// Cached prompt tokens.
    pub cached_tokens: i64,
    /// Completion tokens.
    pub completion_tokens: i64,
    /// Reasoning tokens.
    pub reasoning_tokens: i64,
    /// All tokens.
    pub total_tokens: i64,
    /// Cost in USD.
    pub cost: f64,
}

/// One category of the context (`files`, `known`, `history`, …) in telemetry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// The category.
    pub bucket: String,
    /// Its tokens.
    #[serde(default)]
    pub tokens: i64,
    /// Its entries.
    #[serde(default)]
    pub entries: i64,
}

/// A turn's telemetry (a turn-end `run/state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Telemetry {
    /// The model alias the turn used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens of the assembled context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<i64>,
    /// The call's usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The context by category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_distribution: Option<Vec<Bucket>>,
    /// Whether the turn went on after a restart (its call was made before it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
}

/// A loop's routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// The prompt's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The model alias the loop uses.
    pub model: String,
}

/// Why a loop of a run waits (TEAM.md §4).
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
    pub stop_reason: Option<String>,
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
    /// Every history entry.
    #[serde(default)]
    pub history: Vec<HistoryItem>,
    /// The open questions.
    #[serde(default)]
    pub unknowns: Vec<Unknown>,
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

/// One entry of `getEntries`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Its path.
    pub path: String,
    /// Its scheme (`null` for project files).
    #[serde(default)]
    pub scheme: Option<String>,
    /// Its state.
    pub state: String,
    /// Why it failed or was cancelled.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its HTTP status.
    #[serde(default)]
    pub status: i64,
    /// Its visibility.
    #[serde(default)]
    pub visibility: String,
    /// The turn that wrote it.
    #[serde(default)]
    pub turn: i64,
    /// What it costs in the context.
    #[serde(default)]
    pub tokens: i64,
    /// Its attributes.
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Its body (with `withBody`; left out without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// One file constraint of `getConstraints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    /// Path or glob.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}

/// One skill of a run (`getSkills`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSkill {
    /// Its name.
    pub name: String,
    /// Its entry's state.
    pub state: String,
}

/// A skill or persona file in the server's home (`listSkills`, `listPersonas`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedFile {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: String,
}

/// A token as `token/list` and `token/revoke` show it (never its text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Its id.
    pub id: i64,
    /// Its user.
    pub user: String,
    /// Its first characters.
    pub prefix: String,
    /// Whether it is an admin token.
    pub admin: bool,
    /// The projects it opens (admins open every project).
    #[serde(default)]
    pub projects: Vec<String>,
    /// When it was made (ms since the epoch).
    pub created_at: i64,
    /// When it stops working.
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// When it was revoked.
    #[serde(default)]
    pub revoked_at: Option<i64>,
}

/// A token `token/create` made: what listings show, and its text, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MadeToken {
    /// The token's text.
    pub token: String,
    /// What listings show of it.
    #[serde(flatten)]
    pub info: TokenInfo,
}
