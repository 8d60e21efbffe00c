//! The server's own answers: `ping`, `rummy/hello`, its projects and its access tokens.

use serde::{Deserialize, Serialize};

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
    /// The domains its model fetches from without asking; `None`: its web fetch is off.
    #[serde(default)]
    pub web_domains: Option<Vec<String>>,
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
