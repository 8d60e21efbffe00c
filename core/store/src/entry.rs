//! The entry model: states, outcomes and their HTTP codes, visibility, writer tiers and scopes.

use crate::ids::{ProjectId, RunId};
pub use rummy_protocol::FailureKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where an entry lives in a run's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Waiting for a client to accept or reject it (202).
    Proposed,
    /// Output still arriving (102).
    Streaming,
    /// Done (200).
    Resolved,
    /// Failed; the outcome says why.
    Failed,
    /// Cancelled (499); the outcome may say why.
    Cancelled,
}

impl State {
    /// Every state, for exhaustive checks.
    pub const ALL: [State; 5] = [
        State::Proposed,
        State::Streaming,
        State::Resolved,
        State::Failed,
        State::Cancelled,
    ];

    /// The database and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Proposed => "proposed",
            State::Streaming => "streaming",
            State::Resolved => "resolved",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }

    /// Parses a database or wire name.
    pub fn parse(text: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<State> for rummy_protocol::State {
    fn from(state: State) -> Self {
        match state {
            State::Proposed => Self::Proposed,
            State::Streaming => Self::Streaming,
            State::Resolved => Self::Resolved,
            State::Failed => Self::Failed,
            State::Cancelled => Self::Cancelled,
        }
    }
}

/// The HTTP code the model and clients read for a state and its outcome.
///
/// Every outcome keeps its real code: failures are not collapsed to 500.
pub fn http_status(state: State, outcome: Option<&str>) -> i32 {
    match state {
        State::Resolved => 200,
        State::Proposed => 202,
        State::Streaming => 102,
        State::Cancelled => 499,
        State::Failed => failure_status(outcome.map_or(FailureKind::Unknown, FailureKind::parse)),
    }
}

/// The HTTP code of a failure: its own, never a blanket 500 (a backend's status is kept as it
/// came).
pub fn failure_status(kind: FailureKind) -> i32 {
    match kind {
        FailureKind::Validation => 400,
        FailureKind::Permission | FailureKind::Readonly => 403,
        FailureKind::NotFound => 404,
        FailureKind::Conflict | FailureKind::Aborted => 409,
        FailureKind::Overflow { .. } => 413,
        FailureKind::Status { code } => i32::from(code),
        FailureKind::Exit { .. } | FailureKind::Error | FailureKind::Unknown => 500,
    }
}

/// How much of an entry the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The whole body.
    Visible,
    /// The path, attributes and summary only.
    Summarized,
    /// Out of the model's context; still found by pattern.
    Archived,
}

impl Visibility {
    /// Every visibility.
    pub const ALL: [Visibility; 3] = [
        Visibility::Visible,
        Visibility::Summarized,
        Visibility::Archived,
    ];

    /// The database and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Visible => "visible",
            Visibility::Summarized => "summarized",
            Visibility::Archived => "archived",
        }
    }

    /// Parses a current name or one of the legacy names models and old clients still send.
    pub fn parse(text: &str) -> Option<Visibility> {
        match text {
            "visible" | "full" | "promoted" => Some(Visibility::Visible),
            "summarized" | "summary" | "demoted" | "index" => Some(Visibility::Summarized),
            "archived" | "archive" | "stored" => Some(Visibility::Archived),
            _ => None,
        }
    }

    /// Parses a stored name: only the current names, which are the only ones ever written.
    pub fn stored(text: &str) -> Option<Visibility> {
        Visibility::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

impl From<Visibility> for rummy_protocol::Visibility {
    fn from(visibility: Visibility) -> Self {
        match visibility {
            Visibility::Visible => Self::Visible,
            Visibility::Summarized => Self::Summarized,
            Visibility::Archived => Self::Archived,
        }
    }
}

impl std::fmt::Display for Visibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is writing: the tiers form a hierarchy `system > plugin > client > model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Writer {
    /// The model, through its tool commands.
    Model,
    /// A client, through the RPC primitives.
    Client,
    /// A server plugin acting on its own (prompt, budget, errors).
    Plugin,
    /// The server itself (audit, instructions, runs).
    System,
}

impl Writer {
    /// The tier's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Writer::Model => "model",
            Writer::Client => "client",
            Writer::Plugin => "plugin",
            Writer::System => "system",
        }
    }
}

/// What an entry is for, which decides where it is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Files, facts, skills: rendered in `<knowns>`.
    Data,
    /// Tool results, updates, errors: `<performed>` and `<previous>`.
    Logging,
    /// Open questions: `<unknowns>`.
    Unknown,
    /// The loop's prompt.
    Prompt,
    /// Audit trail; never shown to the model.
    Audit,
}

impl Category {
    /// The database name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Data => "data",
            Category::Logging => "logging",
            Category::Unknown => "unknown",
            Category::Prompt => "prompt",
            Category::Audit => "audit",
        }
    }

    /// Sort rank of the category in the model's context (data first, prompt last).
    pub fn rank(self) -> u8 {
        match self {
            Category::Data => 2,
            Category::Logging => 3,
            Category::Unknown => 4,
            Category::Prompt | Category::Audit => 5,
        }
    }
}

/// Which scope an entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Shared by the whole server (skills).
    Global,
    /// Shared by every run of a project (files).
    Project(ProjectId),
    /// One run's own (facts, questions, results, audit).
    Run(RunId),
}

impl Scope {
    /// The `entries.scope` column value.
    pub fn key(self) -> String {
        match self {
            Scope::Global => "global".to_owned(),
            Scope::Project(id) => format!("project:{id}"),
            Scope::Run(id) => format!("run:{id}"),
        }
    }
}

/// Which scope a scheme's entries default to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    /// Per run.
    Run,
    /// Per project.
    Project,
    /// Server-wide.
    Global,
}

impl ScopeKind {
    /// The `schemes.default_scope` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Run => "run",
            ScopeKind::Project => "project",
            ScopeKind::Global => "global",
        }
    }

    /// The concrete scope for a run of a project.
    pub fn scope(self, project_id: ProjectId, run_id: RunId) -> Scope {
        match self {
            ScopeKind::Run => Scope::Run(run_id),
            ScopeKind::Project => Scope::Project(project_id),
            ScopeKind::Global => Scope::Global,
        }
    }
}

/// The text of attribute `key` of an entry's attributes ("" when absent or not a string).
pub fn text_attr<'a>(attributes: &'a Value, key: &str) -> &'a str {
    attributes
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The strings of array attribute `key` (none when absent or not an array; non-strings skipped).
pub fn strings_attr<'a>(attributes: &'a Value, key: &str) -> Vec<&'a str> {
    attributes
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each state and outcome maps to its own HTTP code, not a blanket 500.
    #[test]
    fn states_and_outcomes_map_to_their_codes() {
        let cases: &[(State, Option<&str>, i32)] = &[
            (State::Resolved, None, 200),
            (State::Proposed, None, 202),
            (State::Streaming, None, 102),
            (State::Cancelled, Some("rejected"), 499),
            (State::Failed, Some("validation"), 400),
            (State::Failed, Some("permission"), 403),
            (State::Failed, Some("readonly"), 403),
            (State::Failed, Some("not_found"), 404),
            (State::Failed, Some("conflict"), 409),
            (State::Failed, Some("aborted"), 409),
            (State::Failed, Some("overflow"), 413),
            (State::Failed, Some("overflow:120"), 413),
            (State::Failed, Some("exit:2"), 500),
            (State::Failed, Some("error"), 500),
            (State::Failed, Some("422"), 422),
            (State::Failed, Some("501"), 501),
            (State::Failed, Some("4222"), 500),
            (State::Failed, None, 500),
        ];
        for (state, outcome, code) in cases {
            assert_eq!(
                http_status(*state, *outcome),
                *code,
                "{state:?} {outcome:?}"
            );
        }
    }

    /// Legacy visibility names are accepted wherever a model or client sends them.
    #[test]
    fn legacy_visibility_names() {
        for (name, v) in [
            ("full", Visibility::Visible),
            ("promoted", Visibility::Visible),
            ("summary", Visibility::Summarized),
            ("demoted", Visibility::Summarized),
            ("index", Visibility::Summarized),
            ("archive", Visibility::Archived),
            ("stored", Visibility::Archived),
        ] {
            assert_eq!(Visibility::parse(name), Some(v));
        }
        assert_eq!(Visibility::parse("hidden"), None);
    }

    /// Every word the core writes for a state, visibility, tool or stop reason is one the
    /// protocol's enums read back as a known value with the same word, so what a client reads
    /// cannot drift from what the server writes (proposal kinds: `tools::proposal`'s tests).
    #[test]
    fn the_core_words_are_the_protocols() {
        use crate::run::StopReason;
        use rummy_protocol as wire;
        use rummy_text::parse::ToolName;
        let written: Vec<&str> = (State::ALL.iter().map(|s| s.as_str()))
            .chain(Visibility::ALL.iter().map(|v| v.as_str()))
            .chain(ToolName::ALL.iter().map(|t| t.as_str()))
            .chain(StopReason::ALL.iter().map(|r| r.as_str()))
            .collect();
        let read: Vec<Option<&str>> = (State::ALL.iter().map(|s| Some(wire::State::from(*s))))
            .map(|s| s.filter(|s| s.is_known()).map(wire::State::as_str))
            .chain(Visibility::ALL.iter().map(|v| {
                Some(wire::Visibility::from(*v))
                    .filter(|v| v.is_known())
                    .map(wire::Visibility::as_str)
            }))
            .chain(
                ToolName::ALL
                    .iter()
                    .map(|t| wire::ToolName::parse(t.as_str()).map(wire::ToolName::as_str)),
            )
            .chain(
                StopReason::ALL
                    .iter()
                    .map(|r| wire::StopReason::parse(r.as_str()).map(wire::StopReason::as_str)),
            )
            .collect();
        assert_eq!(read, written.iter().copied().map(Some).collect::<Vec<_>>());
    }

    /// The writer tiers are ordered system > plugin > client > model.
    #[test]
    fn writer_tiers_are_ordered() {
        assert!(Writer::System > Writer::Plugin);
        assert!(Writer::Plugin > Writer::Client);
        assert!(Writer::Client > Writer::Model);
    }
}
