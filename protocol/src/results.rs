//! What each method answers. The `{ok: true, …}` answers of the writing methods are in
//! [`crate::acks`], re-exported here.

pub use crate::acks::{
    Ack, ChannelsAck, CountAck, Done, PathAck, PathsAck, PatternAck, Resolution, RunAck, SkillAck,
};
use crate::values::{FailureKind, ProposalKind, State, StopReason, ToolName, Visibility};
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
    /// Whether its accepted commands reach the network, as an admin set it; `None`: the
    /// server's `RUMMY_COMMAND_NETWORK` applies.
    #[serde(default)]
    pub command_network: Option<bool>,
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
    /// Whether the server's environment defines it now (`RUMMY_MODEL_<alias>`); false: the
    /// database keeps it from an earlier start's environment or an `addModel`. `None` from a
    /// server that does not say.
    #[serde(default)]
    pub configured: Option<bool>,
}

/// `addModel`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedModel {
    /// The model's id.
    pub id: i64,
    /// Its alias.
    pub alias: String,
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

/// The failure an entry's state and outcome say, when it failed.
fn failure(state: State, outcome: Option<&str>) -> Option<FailureKind> {
    (state == State::Failed).then(|| outcome.map_or(FailureKind::Unknown, FailureKind::parse))
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
    /// The side tasks the turn made (the sidecar's calls: summaries and the like), each with its
    /// usage and cost, or why it failed; left out when there were none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sidecar: Vec<SidecarCall>,
}

/// One side task a turn made (the sidecar's call), in the turn's telemetry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SidecarCall {
    /// The task (`summary`, `compress`, …).
    pub task: String,
    /// The model alias asked.
    pub model: String,
    /// `ok`, `failed`, `timeout` or `unparseable`.
    pub outcome: String,
    /// Why it failed; absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The provider's usage and cost (zero without an answer).
    pub usage: Usage,
    /// How long it took, in ms.
    pub elapsed_ms: i64,
}

/// A loop's routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// The prompt's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The model alias the loop uses.
    pub model: String,
}

/// One prompt class of `getRoutes`: the model alias routing sends it to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteClass {
    /// The class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The alias it is sent to in runs with `route: true`; `None`: such a run keeps its model.
    #[serde(default)]
    pub model: Option<String>,
    /// The server setting that maps it (`RUMMY_ROUTE_CODE`, …).
    #[serde(default)]
    pub variable: String,
}

/// `route/check`'s answer: what routing would do with a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteCheck {
    /// The text's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The alias the class maps to, if any.
    #[serde(default)]
    pub mapped: Option<String>,
    /// The run asked about, if one was named.
    #[serde(default)]
    pub run: Option<String>,
    /// Whether routing is on: the run's `route` setting; without a run, whether the server
    /// maps any class.
    #[serde(default)]
    pub routing: bool,
    /// The model a loop starting with the text would use; `None` without a run when that is the
    /// run's own model.
    #[serde(default)]
    pub model: Option<String>,
    /// The decision in words (saying why when routing is off).
    #[serde(default)]
    pub reason: String,
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

/// `getBody`'s answer: a slice of an entry's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BodySlice {
    /// The entry's path.
    pub path: String,
    /// Where the slice starts, in bytes of the body's UTF-8 text.
    pub offset: i64,
    /// The slice (never a cut character).
    pub body: String,
    /// The body's whole size in bytes.
    pub body_bytes: i64,
    /// Where the next slice starts; `null` when this one reaches the end.
    #[serde(default)]
    pub next: Option<i64>,
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
    pub state: State,
    /// Why it failed (see [`Entry::failure`]) or was cancelled.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its HTTP status.
    #[serde(default)]
    pub status: i64,
    /// Its visibility.
    #[serde(default)]
    pub visibility: Visibility,
    /// The turn that wrote it.
    #[serde(default)]
    pub turn: i64,
    /// What it costs in the context.
    #[serde(default)]
    pub tokens: i64,
    /// Its attributes.
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Its body (with `withBody`; left out without): its first `RUMMY_INLINE_BODY_BYTES` when
    /// `body_truncated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body's whole size in bytes, when `body` is not all of it.
    #[serde(default, rename = "bodyBytes", skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<i64>,
    /// `body` is the body's first bytes only: `getBody` reads the rest.
    #[serde(
        default,
        rename = "bodyTruncated",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub body_truncated: bool,
    /// While it is a pending proposal: the hash of what it does, which an accept sends as
    /// `approves` (see `run/proposal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// When it is (or was) a tool's proposal: its kind. Left out for every other entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalKind>,
}

impl Entry {
    /// When this entry is (or was) a tool's proposal, its kind: the `proposal` field, or from a
    /// server that does not send it, what its attributes say ([`ProposalKind::of`]).
    pub fn proposal(&self) -> Option<ProposalKind> {
        self.proposal.or_else(|| ProposalKind::of(&self.attributes))
    }

    /// Why it failed, when it did.
    pub fn failure(&self) -> Option<FailureKind> {
        failure(self.state, self.outcome.as_deref())
    }
}

/// One file constraint of `getConstraints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    /// Path or glob.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}

/// One skill of a run (`getSkills`), with its frontmatter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSkill {
    /// Its name.
    pub name: String,
    /// Its entry's state.
    pub state: State,
    /// Whether it is active: in the run's view and not archived (what the model reads).
    #[serde(default)]
    pub active: bool,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// When to add it.
    #[serde(default)]
    pub when_to_use: Option<String>,
    /// The only tools the run is offered while it is active (besides `update` and `think`);
    /// `None`: no restriction.
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// The project files (paths or globs) made visible when it was added.
    #[serde(default)]
    pub paths: Vec<String>,
    /// `none`, `relevant` or `session`; `None`: no restriction.
    #[serde(default)]
    pub memory_scope: Option<String>,
}

/// A skill file in the server's home (`listSkills`), with what its frontmatter says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillFile {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// When to add it.
    #[serde(default)]
    pub when_to_use: Option<String>,
    /// Why `skill/add` would refuse it (its frontmatter is invalid), if it would.
    #[serde(default)]
    pub error: Option<String>,
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

/// What `server/doctor` found: each check the server alone can make, with what to do when it
/// failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// The server's version.
    pub version: String,
    /// Whether the database took a write (a probe row rewritten and committed).
    pub database: Check,
    /// Each configured provider, asked for its models.
    #[serde(default)]
    pub providers: Vec<ProviderCheck>,
    /// Each model alias, and whether its context length is known.
    #[serde(default)]
    pub models: Vec<ModelCheck>,
    /// The command sandbox: what the server does with accepted commands, and each layer its
    /// probe at start-up found.
    #[serde(default)]
    pub sandbox: SandboxCheck,
}

/// What the server does with the commands it runs, and the layers of their sandbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCheck {
    /// Confined, unconfined or refused.
    pub mode: SandboxMode,
    /// The missing required layers, each with its reason (empty when confined).
    #[serde(default)]
    pub missing: String,
    /// Every layer the probe looked at, in the order they are listed to people.
    #[serde(default)]
    pub layers: Vec<SandboxLayer>,
}

/// What the server does with an accepted `sh` or `env` command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxMode {
    /// Runs it in the sandbox: every required layer is there.
    Confined,
    /// Runs it unconfined: a required layer is missing and `RUMMY_UNSANDBOXED_COMMANDS=1`.
    Unconfined,
    /// Runs none itself (a client runner still may): a required layer is missing. Also what an
    /// older server that says nothing of its sandbox reads as.
    #[default]
    Refused,
}

/// One layer of the command sandbox as the server's probe found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxLayer {
    /// Its name: `userNamespace`, `landlock`, `mountNamespace`, `pidNamespace`, `proc`,
    /// `network` or `limits`.
    pub name: String,
    /// Its name for people (`file system (Landlock)`).
    pub label: String,
    /// Whether the server runs no command itself without it (unless told to).
    pub required: bool,
    /// Whether it works, and what it is or why it is missing.
    #[serde(flatten)]
    pub check: Check,
}

/// One check: passed or not, and what it found or what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Whether it passed.
    pub ok: bool,
    /// What was found, or what to do.
    pub detail: String,
}

/// A configured provider's answer to its models endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCheck {
    /// The provider's name (`openai`, `ollama`, `openrouter`, `xai`).
    pub name: String,
    /// Its base URL, without credentials.
    pub base_url: String,
    /// Whether it answered, and how many models it listed or what to do.
    #[serde(flatten)]
    pub check: Check,
}

/// A model alias: where it goes and whether its context length is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCheck {
    /// The alias.
    pub alias: String,
    /// `provider/model`.
    pub actual: String,
    /// The context length, stored or asked of the provider; `None` when unknown.
    #[serde(default)]
    pub context_length: Option<i64>,
    /// Whether the context length is known, and what to do if not.
    #[serde(flatten)]
    pub check: Check,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notifications::RunState;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// A history item or entry from a newer server, with words this version does not know,
    /// is read whole: each unknown word is `Unknown`, and the rest is as sent.
    #[test]
    fn unknown_words_in_a_result_read_as_unknown() {
        let item: HistoryItem = serde_json::from_value(json!({
            "path": "teleport://turn_1/moon", "tool": "teleport", "state": "pondering",
            "outcome": "gravity:2", "status": 500, "visibility": "hidden", "turn": 1,
            "tokens": 3, "attributes": {"kind": "teleport", "commandIndex": 0},
            "proposal": "teleport"
        }))
        .unwrap();
        let entry: Entry = serde_json::from_value(json!({
            "path": "known://a", "state": "failed", "outcome": "exit:3", "visibility": "visible",
            "attributes": {}
        }))
        .unwrap();
        let state: RunState = serde_json::from_value(json!({
            "run": "r", "status": 200, "stopReason": "napping"
        }))
        .unwrap();
        assert_eq!(
            (
                item.state,
                item.visibility,
                item.tool_name(),
                item.proposal(),
                item.failure(),
                item.turn,
                state.stop_reason,
                entry.proposal(),
                entry.failure(),
            ),
            (
                State::Unknown,
                Visibility::Unknown,
                ToolName::Unknown,
                Some(ProposalKind::Unknown),
                None,
                1,
                Some(StopReason::Unknown),
                None,
                Some(FailureKind::Exit { code: 3 }),
            )
        );
    }

    /// From a server that does not send `proposal`, an entry is still known as a proposal by
    /// its `commandIndex` attribute, its kind its `kind` attribute.
    #[test]
    fn a_proposal_is_known_without_its_field() {
        let item = |attributes: Value| -> HistoryItem {
            serde_json::from_value(json!({
                "path": "sh://turn_1/ls", "tool": "sh", "state": "proposed",
                "attributes": attributes
            }))
            .unwrap()
        };
        let proposal = item(json!({"kind": "sh", "command": "ls", "commandIndex": 0}));
        let marked = item(json!({"kind": "sh", "command": "ls"}));
        assert_eq!(
            (
                proposal.proposal(),
                proposal.is_pending_proposal(),
                marked.proposal(),
                marked.is_pending_proposal(),
                proposal.tool_name(),
            ),
            (Some(ProposalKind::Sh), true, None, false, ToolName::Sh)
        );
    }
}
