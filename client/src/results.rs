//! What the server answers, typed. Fields the server may add later are ignored; fields an older
//! server does not send are `None` or empty.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

/// `rummy/hello`'s answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
}

/// One project of `getProjects`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
}

/// One model alias of `getModels`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AddedModel {
    /// The model's id.
    pub id: i64,
    /// Its alias.
    pub alias: String,
}

/// The `{ok, …}` answer of the writing methods; which fields are set depends on the method.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    /// Always true on success.
    #[serde(default)]
    pub ok: bool,
    /// The run (`set` on `run://`).
    #[serde(default)]
    pub alias: Option<String>,
    /// The entry written (`set`, `cp`, `mv`, `update`, `skill/add`).
    #[serde(default)]
    pub path: Option<String>,
    /// How many entries matched (`get`, pattern `set`).
    #[serde(default)]
    pub count: Option<i64>,
    /// The entries removed (`rm`).
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// The pattern stored (`file/constraint`, `file/drop`).
    #[serde(default)]
    pub pattern: Option<String>,
    /// The skill added (`skill/add`).
    #[serde(default)]
    pub skill: Option<String>,
    /// The channels settled (`stream/completed`, `stream/aborted`, `stream/cancel`).
    #[serde(default)]
    pub channels: Option<Vec<String>>,
    /// A resolved proposal's state (`resolved`, `cancelled`, `failed`).
    #[serde(default)]
    pub state: Option<String>,
    /// A resolved proposal's outcome (`permission`, `conflict`, …).
    #[serde(default)]
    pub outcome: Option<String>,
    /// Whether an inject was folded into the running loop.
    #[serde(default)]
    pub injected: Option<bool>,
    /// Who runs an accepted `sh`/`env`: `server` or `client`.
    #[serde(default)]
    pub runner: Option<String>,
}

/// One run of `getRuns`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// Why its last loop stopped, once stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Tokens its turns used so far.
    #[serde(default)]
    pub tokens: i64,
    /// What its turns cost so far.
    #[serde(default)]
    pub cost: f64,
}

/// One history entry of `run/state` and `getRun`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    #[serde(default)]
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Unknown {
    /// Its path.
    pub path: String,
    /// The question.
    #[serde(default)]
    pub body: String,
}

/// Tokens and cost of a call, or of a run so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Telemetry {
    /// The model alias the turn used.
    pub model: Option<String>,
    /// Tokens of the assembled context.
    pub context_tokens: Option<i64>,
    /// The call's usage.
    pub usage: Option<Usage>,
    /// The context by category.
    pub context_distribution: Option<Vec<Bucket>>,
}

/// A loop's routing decision.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Route {
    /// The prompt's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The model alias the loop uses.
    pub model: String,
}

/// `getRun`'s answer: the whole state of a run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSnapshot {
    /// Its alias.
    pub run: String,
    /// Its status.
    pub status: i64,
    /// Its last turn.
    #[serde(default)]
    pub turn: i64,
    /// Its model alias.
    #[serde(default)]
    pub model: Option<String>,
    /// Its mode (`ask` or `act`), when the server says.
    #[serde(default)]
    pub mode: Option<String>,
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
    /// Why its last loop stopped (`concluded`, `max_turns`, …), once stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// With `sinceSeq`: the notifications pushed after it, oldest first.
    #[serde(default)]
    pub missed: Vec<MissedNotification>,
}

/// A notification replayed by `getRun {sinceSeq}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MissedNotification {
    /// Its method.
    pub method: String,
    /// Its params.
    #[serde(default)]
    pub params: Value,
}

/// One entry of `getEntries`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    /// Its path.
    pub path: String,
    /// Its scheme (`file` for project files).
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
    /// Its body (with `withBody`).
    #[serde(default)]
    pub body: Option<String>,
}

/// One file constraint of `getConstraints`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Constraint {
    /// Path or glob.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}

/// One skill of a run (`getSkills`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunSkill {
    /// Its name.
    pub name: String,
    /// Its entry's state.
    pub state: String,
}

/// A skill or persona file in the server's home (`listSkills`, `listPersonas`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NamedFile {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: String,
}

/// `discover`'s answer: the methods and notifications the server serves.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Catalogue {
    /// Methods by name.
    pub methods: BTreeMap<String, MethodDoc>,
    /// Notifications by name.
    #[serde(default)]
    pub notifications: BTreeMap<String, NotificationDoc>,
}

/// One method of the catalogue.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodDoc {
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its params by name.
    #[serde(default)]
    pub params: BTreeMap<String, ParamDoc>,
    /// Whether `rummy/hello` must come first.
    #[serde(default)]
    pub requires_hello: bool,
}

/// One param of a method.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ParamDoc {
    /// JSON type.
    #[serde(rename = "type", default)]
    pub ty: String,
    /// Whether the call fails without it.
    #[serde(default)]
    pub required: bool,
    /// What it is for.
    #[serde(default)]
    pub description: String,
}

/// One notification of the catalogue.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NotificationDoc {
    /// When it is sent and what it carries.
    #[serde(default)]
    pub description: String,
}

/// A token as `token/list` and `token/revoke` show it (never its text).
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// The projects it opens.
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MadeToken {
    /// The token's text.
    pub token: String,
    /// What listings show of it.
    #[serde(flatten)]
    pub info: TokenInfo,
}
