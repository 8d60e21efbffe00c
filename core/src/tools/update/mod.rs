//! `update`: the turn's status report and lifecycle signal; dispatch applies it always (`turn::dispatch`), even after a failed action.
//!
//! Views: `# update` and the body, at both visibilities (feedback the model
//! keeps seeing).

use super::handler::Outcome;
use rummy_store::entries::ViewRow;
use rummy_text::parse::ToolCall;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// Update statuses: 102 continues, the others conclude the loop.
pub const UPDATE_STATUSES: [i32; 4] = [102, 200, 204, 422];

/// The `<update>` a turn sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateSignal {
    /// Its status (102 when absent or unreadable).
    pub status: i32,
    /// Whether the model gave a valid status itself.
    pub status_given: bool,
    /// Its text.
    pub body: String,
}

impl UpdateSignal {
    /// The signal an `update` command gives: its `status` when it is one of
    /// [`UPDATE_STATUSES`], else 102.
    pub fn of(call: &ToolCall) -> UpdateSignal {
        let given = call
            .attr("status")
            .and_then(|s| s.trim().parse::<i32>().ok())
            .filter(|s| UPDATE_STATUSES.contains(s));
        UpdateSignal {
            status: given.unwrap_or(102),
            status_given: given.is_some(),
            body: call.body.trim().to_owned(),
        }
    }
}

/// The result entry an update is recorded as: its text, with its status.
pub fn outcome(signal: &UpdateSignal) -> Outcome {
    Outcome::resolved("", signal.body.clone()).with("status", signal.status)
}

/// The view at every visibility.
pub fn view(row: &ViewRow) -> String {
    format!("# update\n{}", row.body)
}
