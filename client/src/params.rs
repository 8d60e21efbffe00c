//! What each method is sent, as the server reads it (camelCase on the wire; absent options are
//! left out rather than sent as `null`).
//!
//! The server's own types (`rummy_core::wire::params`) only deserialise, and the client must not
//! pull in the server's domain crate (SQLite and all) to talk to it; so these are the client's
//! half of the same wire, and the crate's tests read every one of them back through the
//! server's types, so the two cannot drift apart unseen.

use rummy_protocol::values::{State, Visibility};
use serde::Serialize;
use serde_json::{Map, Value};

/// `rummy/hello`: binds the connection to a project.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloParams {
    /// The project's name.
    pub name: String,
    /// The project's root on the server's machine: creates the project, or opens it when it is
    /// that project's root. Without it, an existing project is opened by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// Client configuration path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// The protocol version the client speaks (another MAJOR is refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// A token, for a connection that did not send one on its upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Paging of list methods (`getModels`, `getRuns`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// Page size (server default 100, at most 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Items to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// No params (`ping`, `discover`, `getProjects`, `getConstraints`, `listSkills`, `listPersonas`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct NoParams {}

/// `addModel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddModelParams {
    /// The alias runs name.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_length: Option<i32>,
    /// Alias tried when a call fails for a transport reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// `removeModel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AliasParams {
    /// The alias.
    pub alias: String,
}

/// `getRun`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetRunParams {
    /// Run alias.
    pub run: String,
    /// Also answer the notifications the run pushed after this seq (`missed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_seq: Option<i64>,
    /// Page the history: at most this many entries, the newest (the answer adds
    /// `historyTotal`); `None`: the whole history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// With `limit`: how many of the newest history entries to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `getEntries`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetEntriesParams {
    /// Run alias.
    pub run: String,
    /// Only paths matching this pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Only this scheme (`file` for project files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Only this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// Only this visibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
    /// Only bodies matching this pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// Include bodies.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub with_body: bool,
    /// Page size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Items to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `getBody`: a slice of one entry's body.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBodyParams {
    /// Run alias.
    pub run: String,
    /// The entry's path.
    pub path: String,
    /// Where the slice starts, in bytes (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// The most bytes wanted (default: what fits a message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<i64>,
}

/// `set`: writes an entry; on `run://<alias>` starts, continues, injects, configures or cancels.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetParams {
    /// Run alias (not needed on `run://` paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Entry path, or a pattern with `pattern`.
    pub path: String,
    /// New body, the chunk to append, or the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// New state (`resolved` accepts a proposal, `cancelled` rejects it or cancels a run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// New visibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
    /// Why, with a failed or cancelled state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Attributes (a run start's settings: [`RunAttributes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
    /// Append the body to the current body.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// Treat the path as a pattern.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pattern: bool,
    /// Only entries whose body matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// On a proposal's resolution: the hash of the proposal decided on (`run/proposal`'s
    /// `hash`); the server refuses it (-32005) when the proposal's differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approves: Option<String>,
}

/// A run's settings, sent as `set`'s `attributes` on `run://<alias>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAttributes {
    /// Model alias (required to start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `ask` or `act`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Persona text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// Temperature 0–2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Context limit in tokens (at least 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_limit: Option<i32>,
    /// Skip the project file scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_repo: Option<bool>,
    /// Remove `ask_user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_interaction: Option<bool>,
    /// Remove `search`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_web: Option<bool>,
    /// Remove the proposing tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proposals: Option<bool>,
    /// Route each loop by its prompt's class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<bool>,
    /// `false`: no call goes to its model's fallback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<bool>,
    /// Keep a session state, updated by the sidecar between loops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_state: Option<bool>,
    /// Recall the project's memory on each loop's first turn (`false` turns it off for the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<bool>,
    /// Re-rank each loop's recall with the sidecar model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_rerank: Option<bool>,
    /// Consolidate each loop's facts into project memory at its end (a sidecar call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidate: Option<bool>,
    /// Skills the run has before this prompt's loop (at a start, from its first turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// The run to fork from (on a start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<String>,
    /// Fold the body into the active loop.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inject: bool,
}

impl RunAttributes {
    /// These settings as `set`'s attributes object.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// `route/check`: what routing would do with a text.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RouteCheckParams {
    /// The text, as a loop's prompt.
    pub text: String,
    /// The run whose settings decide (none: a run with routing on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `file/constraint` and `file/drop`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConstraintParams {
    /// Path or glob.
    pub pattern: String,
    /// `active`, `readonly` or `ignore` (for `file/constraint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// `skill/add`, `skill/remove`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SkillParams {
    /// Run alias.
    pub run: String,
    /// Skill name.
    pub name: String,
}

/// `getSkills`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunParams {
    /// Run alias.
    pub run: String,
}

/// `persona/set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PersonaParams {
    /// Run alias.
    pub run: String,
    /// Persona file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Persona text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `get`: promotes matching entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// The visibility to set (default visible).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
}

/// `rm`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RmParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
}

/// `cp` and `mv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MoveParams {
    /// Run alias.
    pub run: String,
    /// Source path.
    pub from: String,
    /// Destination path.
    pub to: String,
    /// Visibility of the destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
}

/// `update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    /// Run alias.
    pub run: String,
    /// The status text.
    pub body: String,
    /// 102, 200, 204 or 422.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
}

/// `stream`: a chunk of an accepted command's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Channel (1 stdout, 2 stderr).
    pub channel: u32,
    /// Text to append.
    pub chunk: String,
}

/// `stream/completed`, `stream/aborted`, `stream/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamEndParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Exit code (`stream/completed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Why it stopped (`stream/aborted`, `stream/cancel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `token/create` (admin).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCreateParams {
    /// The user it is for.
    pub user: String,
    /// An admin token.
    pub admin: bool,
    /// The projects a member token opens.
    pub projects: Vec<String>,
    /// Days until it stops working; none, never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

/// `token/revoke` (admin).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TokenRevokeParams {
    /// The token's id or listed prefix.
    pub token: String,
}

/// `project/set` (admin): a project's cost ceiling and command network.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSetParams {
    /// The project's name.
    pub name: String,
    /// The ceiling in US dollars: `Some(None)` removes it (sent as `null`); `None` keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_ceiling: Option<Option<f64>>,
    /// `month` or `day`; none keeps the current period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// Whether its accepted commands reach the network: `Some(None)` removes the override
    /// (sent as `null`; the server's setting applies); `None` keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_network: Option<Option<bool>>,
}
