//! What each method is sent: its params, camelCase on the wire. The server reads them (a
//! misspelled or unknown field is refused -32602 naming it, never read as absent:
//! `deny_unknown_fields`) and clients write them (an absent option is left out, not sent as
//! `null`), through these same types, so the two halves of the wire cannot drift apart.
//!
//! The only free-form objects are the `attributes` of ordinary entries. `discover` lists each
//! method's params as these types read them ([`crate::shape`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `rummy/hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct HelloParams {
    /// Project name.
    pub name: String,
    /// Project root: creates the project, or must equal an existing project's. Absent: opens
    /// the existing project of that name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// Client configuration path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// Protocol version the client speaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// A token, for clients that cannot send `Authorization: Bearer` on the upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `getProjects`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct ProjectsParams {
    /// A token, for clients that cannot send `Authorization: Bearer` on the upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Page size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Items to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `token/create` (admin).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

/// `project/set` (admin): a project's cost ceiling and command network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSetParams {
    /// The project's name.
    pub name: String,
    /// The ceiling in US dollars: `Some(None)` (sent as `null`) removes it; `None` (absent)
    /// keeps it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cost_ceiling: Option<Option<f64>>,
    /// `month` or `day`; absent keeps the current period (a month for a new ceiling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// Whether the project's accepted commands reach the network: `Some(None)` (sent as
    /// `null`) removes the override, so the server's `RUMMY_COMMAND_NETWORK` applies; `None`
    /// (absent) keeps it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub command_network: Option<Option<bool>>,
    /// The domains the project's model fetches from without asking (host names; each lets
    /// its subdomains through): a list turns the model's web fetch on for the project (a URL
    /// outside it is a proposal); `Some(None)` (`null`) turns it off; `None` (absent) keeps it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub web_domains: Option<Option<Vec<String>>>,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct TokenRevokeParams {
    /// The token's id, or its listed prefix.
    pub token: String,
}

/// Paging for list methods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// Page size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Items to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `addModel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct AddModelParams {
    /// Alias.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_length: Option<i32>,
    /// Fallback alias.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// `removeModel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasParams {
    /// Alias.
    pub alias: String,
}

/// `getRun`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetRunParams {
    /// Run alias.
    pub run: String,
    /// Replay notifications after this seq.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_seq: Option<i32>,
    /// Page the history: at most this many entries, the newest (after `offset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// With `limit`: how many of the newest history entries to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `getEntries`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetEntriesParams {
    /// Run alias.
    pub run: String,
    /// Only paths matching this hedberg pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Scheme filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// State filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Visibility filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Only bodies matching this hedberg pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// Include bodies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub with_body: bool,
    /// Page size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Items to skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

/// `getBody`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetBodyParams {
    /// Run alias.
    pub run: String,
    /// The entry's path.
    pub path: String,
    /// Where the slice starts, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The most bytes wanted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// `set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct SetParams {
    /// Run alias (absent on `run://` paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Entry path.
    pub path: String,
    /// New body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// New state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// New visibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Outcome with a failed/cancelled state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<serde_json::Map<String, Value>>,
    /// Append to the body instead of replacing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// Treat the path as a pattern.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pattern: bool,
    /// Body filter for pattern writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// On a proposal's resolution: the hash of the proposal the client decided on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approves: Option<String>,
}

/// The attributes of a run start (`set` on `run://<alias>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RunAttributes {
    /// Model alias (required to start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `ask` (default) or `act`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Persona text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// Temperature 0–2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Context limit in tokens (≥ 1024).
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
    /// Remove proposing tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proposals: Option<bool>,
    /// Route each loop to the model configured for its prompt's class (`RUMMY_ROUTE_<class>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<bool>,
    /// `false`: a failed call never goes to its model's fallback (on by default where one is
    /// configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<bool>,
    /// Keep a session state (`session://state`), updated by the sidecar between loops
    /// (`RUMMY_SESSION_STATE` when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_state: Option<bool>,
    /// Recall what the project remembers on each loop's first turn (over `RUMMY_RECALL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<bool>,
    /// Re-rank each loop's recall with the sidecar (over `RUMMY_RECALL_RERANK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_rerank: Option<bool>,
    /// Consolidate each loop's facts into project memory at its end (over `RUMMY_CONSOLIDATE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidate: Option<bool>,
    /// Summarise on eviction: fold what the budget takes out of the context into the run's
    /// `summary://run` (default `RUMMY_SUMMARIZE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarize: Option<bool>,
    /// Skills (files of `$RUMMY_HOME/skills`) the run has before this prompt's loop: at a
    /// start, added in the run's creation, so its first turn is built with them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// Parent run to fork from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<String>,
    /// Fold the body into the active loop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inject: bool,
}

impl RunAttributes {
    /// These settings as `set`'s attributes object.
    pub fn to_map(&self) -> serde_json::Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        }
    }
}

/// `route/check`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteCheckParams {
    /// The text to classify, as a loop's prompt.
    pub text: String,
    /// The run whose settings and model decide (absent: a run with routing on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `file/constraint`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstraintParams {
    /// Path or glob; absolute paths under the root are made relative.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}

/// `file/drop`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropParams {
    /// The constraint's pattern.
    pub pattern: String,
}

/// `skill/add`, `skill/remove`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillParams {
    /// Run alias.
    pub run: String,
    /// Skill name.
    pub name: String,
}

/// `getSkills`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// Run alias.
    pub run: String,
}

/// `persona/set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// `get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body contains this pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
    /// The visibility to set (default visible).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// `rm`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RmParams {
    /// Run alias.
    pub run: String,
    /// Path or pattern.
    pub path: String,
    /// Only entries whose body contains this pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_filter: Option<String>,
}

/// `cp` and `mv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// `update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    /// Run alias.
    pub run: String,
    /// The status text.
    pub body: String,
    /// 102, 200, 204 or 422 (default 102).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<serde_json::Map<String, Value>>,
}

/// `stream`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

/// One tool a client offers a run: an MCP tool of a server the client runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct OfferedTool {
    /// The name of the MCP server holding the tool, as the client knows it.
    pub server: String,
    /// The tool's name on that server.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's arguments (an object schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

/// `tools/offer`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsOfferParams {
    /// Run alias (the run need not exist yet).
    pub run: String,
    /// Every tool this connection offers the run; empty withdraws its offer.
    pub tools: Vec<OfferedTool>,
}

/// `tool/result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultParams {
    /// Run alias.
    pub run: String,
    /// The accepted call's proposal path.
    pub path: String,
    /// What the tool answered, as text.
    pub content: String,
    /// Whether the tool reported an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// `stream/completed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct StreamCompletedParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Exit code (default 0); the snake_case `exit_code` spelling is read too.
    #[serde(alias = "exit_code", skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// `stream/aborted`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamAbortedParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Why the producer stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// `stream/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamCancelParams {
    /// Run alias.
    pub run: String,
    /// The accepted proposal's path.
    pub path: String,
    /// Why it is cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Methods that take no params (`ping`, `discover`, `getConstraints`, `listSkills`,
/// `listPersonas`): an absent or empty object; any field is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// What a client writes is what the server reads back: the value, unchanged.
    fn read_back<T: Serialize + serde::de::DeserializeOwned>(value: &T) -> Option<T> {
        serde_json::from_value(serde_json::to_value(value).ok()?).ok()
    }

    /// Absent options are left out of the request, not sent as `null`; false flags too.
    #[test]
    fn absent_options_are_not_sent() {
        let params = SetParams {
            path: "run://a".into(),
            body: Some("hi".into()),
            ..SetParams::default()
        };
        assert_eq!(
            (
                serde_json::to_value(&params).ok(),
                serde_json::to_value(Page::default()).ok()
            ),
            (
                Some(json!({"path": "run://a", "body": "hi"})),
                Some(json!({}))
            )
        );
    }

    /// A nullable field is sent as `null` to remove, left out to keep, and read back so.
    #[test]
    fn a_removal_is_null_and_a_kept_value_is_absent() {
        let removed = ProjectSetParams {
            name: "p".into(),
            cost_ceiling: Some(None),
            command_network: Some(Some(true)),
            ..ProjectSetParams::default()
        };
        assert_eq!(
            serde_json::to_value(&removed).ok(),
            Some(json!({"name": "p", "costCeiling": null, "commandNetwork": true}))
        );
        assert_eq!(read_back(&removed), Some(removed));
    }

    /// Every field of the params with the most of them reads back as written.
    #[test]
    fn params_read_back_as_written() {
        let mut attributes = serde_json::Map::new();
        attributes.insert("model".into(), json!("m"));
        let set = SetParams {
            run: Some("r".into()),
            path: "known://a".into(),
            body: Some("b".into()),
            state: Some("resolved".into()),
            visibility: Some("archived".into()),
            outcome: Some("o".into()),
            attributes: Some(attributes),
            append: true,
            pattern: true,
            body_filter: Some("x".into()),
            approves: Some("h".into()),
        };
        let entries = GetEntriesParams {
            run: "r".into(),
            pattern: Some("*".into()),
            scheme: Some("file".into()),
            state: Some("proposed".into()),
            visibility: Some("visible".into()),
            body_filter: Some("y".into()),
            with_body: true,
            limit: Some(5),
            offset: Some(1),
        };
        let completed = StreamCompletedParams {
            run: "r".into(),
            path: "sh://1".into(),
            exit_code: Some(2),
            duration: Some("1s".into()),
        };
        let token = TokenCreateParams {
            user: "u".into(),
            admin: false,
            projects: vec!["p".into()],
            expires_in_days: Some(3),
        };
        assert_eq!(
            (
                read_back(&set),
                read_back(&entries),
                read_back(&completed),
                read_back(&token)
            ),
            (Some(set), Some(entries), Some(completed), Some(token))
        );
    }

    /// A run's settings become `set`'s attributes object, camelCase, absent ones left out.
    #[test]
    fn run_attributes_become_an_attributes_object() {
        let attributes = RunAttributes {
            model: Some("m".into()),
            context_limit: Some(2048),
            inject: true,
            ..RunAttributes::default()
        };
        assert_eq!(
            Value::Object(attributes.to_map()),
            json!({"model": "m", "contextLimit": 2048, "inject": true})
        );
    }
}
