//! What the server pushes, typed: `run/state`, `run/progress`, `run/proposal`, `ui/render`,
//! `stream/cancelled`, `tool/call` and `ui/notify` are the protocol's own types
//! (`rummy-protocol`), the ones the server writes.

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use rummy_protocol::notifications::{
    Proposed, RunProgress, RunProposal, RunState, StreamCancelled, ToolCall, UiNotify, UiRender,
};
pub use rummy_protocol::NotifyLevel;

/// A notification from the server.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "run/state is most of what arrives: boxing it would allocate once more for each"
)]
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
    /// `tool/call`: call a tool this connection offered, and answer with `tool/result`.
    ToolCall(ToolCall),
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
            "tool/call" => typed(&params, Notification::ToolCall),
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
            Notification::ToolCall(_) => "tool/call",
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
            Notification::ToolCall(n) => Some(&n.run),
            Notification::UiNotify(n) => n.run.as_deref(),
            Notification::Other { params, .. } => params.get("run").and_then(Value::as_str),
        }
    }
}
