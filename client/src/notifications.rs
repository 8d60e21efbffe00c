//! What the server pushes, typed: `run/state`, `run/progress`, `run/proposal`, `ui/render`,
//! `stream/cancelled` and `ui/notify`.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::results::{HistoryItem, Route, Telemetry, Unknown};

/// A notification from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `run/state`: what changed in a run (numbered by `seq`).
    RunState(RunState),
    /// `run/progress`: transient activity.
    RunProgress(RunProgress),
    /// `run/proposal`: proposals waiting for a decision.
    RunProposal(RunProposal),
    /// `ui/render`: streamed model text.
    UiRender(UiRender),
    /// `stream/cancelled`: a command's stream was cancelled.
    StreamCancelled(StreamCancelled),
    /// `ui/notify`: a message for the person.
    UiNotify(UiNotify),
    /// A method this client does not know, or a known one whose params it cannot read.
    Other {
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
}

impl Notification {
    /// Reads a notification's method and params into its type.
    pub fn parse(method: &str, params: Value) -> Notification {
        fn typed<T: DeserializeOwned>(
            params: &Value,
            wrap: impl FnOnce(T) -> Notification,
        ) -> Option<Notification> {
            T::deserialize(params).ok().map(wrap)
        }
        let parsed = match method {
            "run/state" => typed(&params, Notification::RunState),
            "run/progress" => typed(&params, Notification::RunProgress),
            "run/proposal" => typed(&params, Notification::RunProposal),
            "ui/render" => typed(&params, Notification::UiRender),
            "stream/cancelled" => typed(&params, Notification::StreamCancelled),
            "ui/notify" => typed(&params, Notification::UiNotify),
            _ => None,
        };
        parsed.unwrap_or_else(|| Notification::Other {
            method: method.to_owned(),
            params,
        })
    }

    /// Its wire method.
    pub fn method(&self) -> &str {
        match self {
            Notification::RunState(_) => "run/state",
            Notification::RunProgress(_) => "run/progress",
            Notification::RunProposal(_) => "run/proposal",
            Notification::UiRender(_) => "ui/render",
            Notification::StreamCancelled(_) => "stream/cancelled",
            Notification::UiNotify(_) => "ui/notify",
            Notification::Other { method, .. } => method,
        }
    }

    /// The run it is about, if any.
    pub fn run(&self) -> Option<&str> {
        match self {
            Notification::RunState(n) => Some(&n.run),
            Notification::RunProgress(n) => Some(&n.run),
            Notification::RunProposal(n) => Some(&n.run),
            Notification::UiRender(n) => Some(&n.run),
            Notification::StreamCancelled(n) => Some(&n.run),
            Notification::UiNotify(n) => n.run.as_deref(),
            Notification::Other { params, .. } => params.get("run").and_then(Value::as_str),
        }
    }
}

/// `run/state`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunState {
    /// The run.
    pub run: String,
    /// Its per-run number, for `getRun {sinceSeq}`.
    #[serde(default)]
    pub seq: Option<i64>,
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
    pub stop_reason: Option<String>,
}

/// `run/progress`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunProgress {
    /// The run.
    pub run: String,
    /// The turn.
    #[serde(default)]
    pub turn: i64,
    /// `queued`, `thinking`, `streaming`, `processing`, `retrying` or `rerouted`.
    pub status: String,
    /// Why (queued, retrying, rerouted).
    #[serde(default)]
    pub detail: Option<String>,
    /// How long until the retry (retrying).
    #[serde(default)]
    pub delay_ms: Option<i64>,
    /// The model rerouted to.
    #[serde(default)]
    pub to: Option<String>,
}

/// `run/proposal`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunProposal {
    /// The run.
    pub run: String,
    /// The proposals.
    #[serde(default)]
    pub proposed: Vec<Proposed>,
}

/// One proposal waiting for a decision.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Proposed {
    /// Its path: accept with `set {run, path, state: "resolved"}`.
    pub path: String,
    /// What it would do (a unified diff for an edit; empty for a command).
    #[serde(default)]
    pub body: String,
    /// Its attributes (`kind`, `path`, `command`, `question`, …).
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// The turn that proposed it.
    #[serde(default)]
    pub turn: i64,
}

/// `ui/render`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UiRender {
    /// The run.
    pub run: String,
    /// The turn.
    #[serde(default)]
    pub turn: Option<i64>,
    /// The text.
    pub text: String,
    /// Whether it continues the turn's text (false: the turn's first text).
    #[serde(default)]
    pub append: bool,
    /// Whether it is the model's reasoning, streamed beside its text.
    #[serde(default)]
    pub reasoning: bool,
}

/// `stream/cancelled`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StreamCancelled {
    /// The run.
    pub run: String,
    /// The stream's proposal path.
    pub path: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `ui/notify`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UiNotify {
    /// The run, when it is about one.
    #[serde(default)]
    pub run: Option<String>,
    /// The message.
    pub text: String,
    /// `info`, `warn` or `error`.
    #[serde(default)]
    pub level: Option<String>,
}
