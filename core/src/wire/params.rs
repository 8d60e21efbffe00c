//! Typed params of each method, deserialised from the wire (camelCase).
//!
//! Every params type refuses a field it does not know (`deny_unknown_fields`): a misspelled
//! field is answered -32602 naming it, never read as absent. The only free-form objects are
//! the `attributes` of ordinary entries. `discover` lists each method's params as these types
//! read them (names, aliases, types, required-ness: [`super::shape`]), checked by a test.

use serde::Deserialize;
use serde_json::Value;

/// The default page size of list methods.
pub const DEFAULT_LIMIT: i64 = 100;
/// The largest page a list method returns.
pub const MAX_LIMIT: i64 = 1000;

/// `rummy/hello`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct HelloParams {
    /// Project name.
    pub name: String,
    /// Project root: creates the project, or must equal an existing project's. Absent: opens
    /// the existing project of that name.
    pub project_root: Option<String>,
    /// Client configuration path.
    pub config_path: Option<String>,
    /// Protocol version the client speaks.
    pub client_version: Option<String>,
    /// A token, for clients that cannot send `Authorization: Bearer` on the upgrade.
    pub token: Option<String>,
}

/// `getProjects`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct ProjectsParams {
    /// A token, for clients that cannot send `Authorization: Bearer` on the upgrade.
    pub token: Option<String>,
    /// Page size.
    pub limit: Option<i64>,
    /// Items to skip.
    pub offset: Option<i64>,
}

/// `token/create` (admin).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct TokenCreateParams {
    /// The user it is for (created on first use).
    pub user: String,
    /// Whether it is an admin token.
    #[serde(default)]
    pub admin: bool,
    /// The projects a member token opens.
    #[serde(default)]
    pub projects: Vec<String>,
    /// Days until it stops working; absent, it never expires.
    pub expires_in_days: Option<u32>,
}

/// `project/set` (admin): a project's cost ceiling and command network.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSetParams {
    /// The project's name.
    pub name: String,
    /// The ceiling in US dollars: `Some(None)` (sent as `null`) removes it; `None` (absent)
    /// keeps it.
    #[serde(default, deserialize_with = "present")]
    pub cost_ceiling: Option<Option<f64>>,
    /// `month` or `day`; absent keeps the current period (a month for a new ceiling).
    pub period: Option<String>,
    /// Whether the project's accepted commands reach the network: `Some(None)` (sent as
    /// `null`) removes the override, so the server's `RUMMY_COMMAND_NETWORK` applies; `None`
    /// (absent) keeps it.
    #[serde(default, deserialize_with = "present")]
    pub command_network: Option<Option<bool>>,
}

/// A field that may be given as `null`: present (`Some`, holding `None` for `null`) or absent
/// (`None`, through `#[serde(default)]`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `token/revoke` (admin).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct TokenRevokeParams {
    /// The token's id, or its listed prefix.
    pub token: String,
}

/// Paging for list methods.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// Page size.
    pub limit: Option<i64>,
    /// Items to skip.
    pub offset: Option<i64>,
}

impl Page {
    /// `(limit, offset)` clamped to sane values.
    pub fn bounds(self) -> (i64, i64) {
        (
            self.limit.unwrap_or(DEFAULT_LIMIT).clamp(0, MAX_LIMIT),
            self.offset.unwrap_or(0).max(0),
        )
    }
}

/// `addModel`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct AddModelParams {
    /// Alias.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window.
    pub context_length: Option<i32>,
    /// Fallback alias.
    pub fallback: Option<String>,
}

/// `removeModel`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasParams {
    /// Alias.
    pub alias: String,
}

/// `getRun`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetRunParams {
    /// Run alias.
    pub run: String,
    /// Replay notifications after this seq.
    pub since_seq: Option<i32>,
    /// Page the history: at most this many entries, the newest (after `offset`).
    pub limit: Option<i64>,
    /// With `limit`: how many of the newest history entries to skip.
    pub offset: Option<i64>,
}

impl GetRunParams {
    /// The history page asked for, clamped (`limit` at most 1000); `None`: the whole history.
    pub fn history_page(&self) -> Option<HistoryPage> {
        let limit = self.limit?.clamp(0, MAX_LIMIT);
        let offset = self.offset.unwrap_or(0).max(0);
        Some(HistoryPage {
            limit: usize::try_from(limit).unwrap_or(0),
            offset: usize::try_from(offset).unwrap_or(usize::MAX),
        })
    }
}

/// A page of a run's history, counted from its newest entry (`getRun {limit, offset}`): a
/// client shows the latest work first and reaches back as it scrolls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryPage {
    /// At most this many entries.
    pub limit: usize,
    /// How many of the newest entries to skip.
    pub offset: usize,
}

impl HistoryPage {
    /// The range of a history of `total` entries (oldest first) this page covers.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        let end = total.saturating_sub(self.offset);
        end.saturating_sub(self.limit)..end
    }
}

/// `getEntries`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetEntriesParams {
    /// Run alias.
    pub run: String,
    /// Only paths matching this hedberg pattern.
    pub pattern: Option<String>,
    /// Scheme filter.
    pub scheme: Option<String>,
    /// State filter.
    pub state: Option<String>,
    /// Visibility filter.
    pub visibility: Option<String>,
    /// Only bodies matching this hedberg pattern.
    pub body_filter: Option<String>,
    /// Include bodies.
    #[serde(default)]
    pub with_body: bool,
    /// Page size.
    pub limit: Option<i64>,
    /// Items to skip.
    pub offset: Option<i64>,
}

/// `getBody`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetBodyParams {
    /// Run alias.
    pub run: String,
    /// The entry's path.
    pub path: String,
    /// Where the slice starts, in bytes.
    pub offset: Option<u64>,
    /// The most bytes wanted.
    pub length: Option<u64>,
}

/// `set`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct SetParams {
    /// Run alias (absent on `run://` paths).
    pub run: Option<String>,
    /// Entry path.
    pub path: String,
    /// New body.
    pub body: Option<String>,
    /// New state.
    pub state: Option<String>,
    /// New visibility.
    pub visibility: Option<String>,
    /// Outcome with a failed/cancelled state.
    pub outcome: Option<String>,
    /// Attributes.
    pub attributes: Option<serde_json::Map<String, Value>>,
    /// Append to the body instead of replacing it.
    #[serde(default)]
    pub append: bool,
    /// Treat the path as a pattern.
    #[serde(default)]
    pub pattern: bool,
    /// Body filter for pattern writes.
    pub body_filter: Option<String>,
    /// On a proposal's resolution: the hash of the proposal the client decided on.
    pub approves: Option<String>,
}

/// The attributes of a run start (`set` on `run://<alias>`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RunAttributes {
    /// Model alias (required to start).
    pub model: Option<String>,
    /// `ask` (default) or `act`.
    pub mode: Option<String>,
    /// Persona text.
    pub persona: Option<String>,
    /// Temperature 0–2.
    pub temperature: Option<f64>,
    /// Context limit in tokens (≥ 1024).
    pub context_limit: Option<i32>,
    /// Skip the project file scan.
    pub no_repo: Option<bool>,
    /// Remove `ask_user`.
    pub no_interaction: Option<bool>,
    /// Remove `search`.
    pub no_web: Option<bool>,
    /// Remove proposing tools.
    pub no_proposals: Option<bool>,
    /// Route each loop to the model configured for its prompt's class (`RUMMY_ROUTE_<class>`).
    pub route: Option<bool>,
    /// `false`: a failed call never goes to its model's fallback (on by default where one is
    /// configured).
    pub fallback: Option<bool>,
    /// Keep a session state (`session://state`), updated by the sidecar between loops
    /// (`RUMMY_SESSION_STATE` when absent).
    pub session_state: Option<bool>,
    /// Recall what the project remembers on each loop's first turn (over `RUMMY_RECALL`).
    pub recall: Option<bool>,
    /// Re-rank each loop's recall with the sidecar (over `RUMMY_RECALL_RERANK`).
    pub recall_rerank: Option<bool>,
    /// Consolidate each loop's facts into project memory at its end (over `RUMMY_CONSOLIDATE`).
    pub consolidate: Option<bool>,
    /// Summarise on eviction: fold what the budget takes out of the context into the run's
    /// `summary://run` (default `RUMMY_SUMMARIZE`).
    pub summarize: Option<bool>,
    /// Skills (files of `$RUMMY_HOME/skills`) the run has before this prompt's loop: at a
    /// start, added in the run's creation, so its first turn is built with them.
    pub skills: Option<Vec<String>>,
    /// Parent run to fork from.
    pub fork: Option<String>,
    /// Fold the body into the active loop.
    #[serde(default)]
    pub inject: bool,
}

/// `route/check`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteCheckParams {
    /// The text to classify, as a loop's prompt.
    pub text: String,
    /// The run whose settings and model decide (absent: a run with routing on).
    pub run: Option<String>,
}

/// `file/constraint`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstraintParams {
    /// Path or glob; absolute paths under the root are made relative.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}

/// `file/drop`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropParams {
    /// The constraint's pattern.
    pub pattern: String,
}

/// `skill/add`, `skill/remove`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillParams {
    /// Run alias.
    pub run: String,
    /// Skill name.
    pub name: String,
}

/// `getSkills`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// Run alias.
    pub run: String,
}

/// `persona/set`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaParams {
    /// Run alias.
    pub run: String,
    /// Persona file name.
    pub name: Option<String>,
    /// Persona text.
    pub text: Option<String>,
}

/// `get`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body contains this pattern.
    pub body_filter: Option<String>,
    /// The visibility to set (default visible).
    pub visibility: Option<String>,
}

/// `rm`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RmParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body contains this pattern.
    pub body_filter: Option<String>,
}

/// `cp` and `mv`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct MoveParams {
    /// Run alias.
    pub run: String,
    /// Source path.
    pub from: String,
    /// Destination path.
    pub to: String,
    /// Visibility of the destination.
    pub visibility: Option<String>,
}

/// `update`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    /// Run alias.
    pub run: String,
    /// The status text.
    pub body: String,
    /// 102, 200, 204 or 422 (default 102).
    pub status: Option<i32>,
    /// Extra attributes.
    pub attributes: Option<serde_json::Map<String, Value>>,
}

/// `stream`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Channel number (1 stdout, 2 stderr, 3+ producer-specific).
    pub channel: u32,
    /// Text to append.
    pub chunk: String,
}

/// `stream/completed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct StreamCompletedParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Exit code (default 0); the older `exit_code` spelling is read too.
    #[serde(alias = "exit_code")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration: Option<String>,
}

/// `stream/aborted`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamAbortedParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Why the producer stopped.
    pub reason: Option<String>,
    /// How long it ran.
    pub duration: Option<String>,
}

/// `stream/cancel`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamCancelParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Why it is cancelled.
    pub reason: Option<String>,
}

/// Methods that take no params (`ping`, `discover`, `getConstraints`, `listSkills`,
/// `listPersonas`): an absent or empty object; any field is refused.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

pub use super::shape::fields_of;

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A history page counts from the newest entry: `offset` newest skipped, then `limit`
    /// before them; past the oldest it is empty, never out of bounds.
    #[test]
    fn a_history_page_counts_from_the_newest_entry() {
        let page = |limit, offset| HistoryPage { limit, offset };
        let table = [
            (page(4, 0), 10, 6..10),
            (page(4, 4), 10, 2..6),
            (page(4, 8), 10, 0..2),
            (page(4, 12), 10, 0..0),
            (page(0, 0), 10, 10..10),
            (page(1000, 0), 3, 0..3),
        ];
        let got: Vec<_> = table.iter().map(|(p, total, _)| p.range(*total)).collect();
        let want: Vec<_> = table.iter().map(|(_, _, r)| r.clone()).collect();
        assert_eq!(got, want);
    }

    /// `limit` is clamped to 1000 and a negative offset to 0; without `limit` there is no page.
    #[test]
    fn a_history_page_is_clamped() {
        let params = |limit, offset| GetRunParams {
            run: "r".into(),
            since_seq: None,
            limit,
            offset,
        };
        assert_eq!(
            (
                params(Some(5000), Some(-3)).history_page(),
                params(None, Some(7)).history_page()
            ),
            (
                Some(HistoryPage {
                    limit: 1000,
                    offset: 0
                }),
                None
            )
        );
    }
}
