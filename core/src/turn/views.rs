//! What the model sees of an entry at each visibility: the per-scheme projection of its body.

use crate::entry::Visibility;
use crate::store::entries::ViewRow;

/// Characters of a summarized prompt the model still sees.
pub const PROMPT_SUMMARY_CHARS: usize = 500;

/// The marker after a truncated prompt.
pub const PROMPT_TRUNCATED: &str = "\n[truncated — promote to see the complete prompt]";

/// Projects a row's body for the model: visible rows show their body; summarized
/// rows show nothing (their tag's attributes and summary remain), except prompts
/// (truncated) and lifecycle feedback (update, error, budget), which stay whole.
pub fn project(row: &ViewRow) -> String {
    match (row.tag(), row.visibility()) {
        (_, Visibility::Archived) => String::new(),
        (_, Visibility::Visible) => row.body.clone(),
        ("prompt", Visibility::Summarized) => truncate_prompt(&row.body),
        ("update" | "error" | "budget", Visibility::Summarized) => row.body.clone(),
        (_, Visibility::Summarized) => String::new(),
    }
}

fn truncate_prompt(body: &str) -> String {
    match body.char_indices().nth(PROMPT_SUMMARY_CHARS) {
        None => body.to_owned(),
        Some((cut, _)) => format!("{}{PROMPT_TRUNCATED}", &body[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, body: &str, visibility: &str) -> ViewRow {
        ViewRow {
            view_id: 1,
            path: path.into(),
            scheme: crate::path::scheme_of(path),
            body: body.into(),
            attributes: "{}".into(),
            tokens: 1,
            state: "resolved".into(),
            outcome: None,
            visibility: visibility.into(),
            turn: 1,
            rev: 1,
            updated_at: 0,
        }
    }

    /// Summarized facts hide their body; summarized prompts are truncated; updates stay whole.
    #[test]
    fn projections_per_visibility() {
        assert_eq!(project(&row("known://a", "fact", "visible")), "fact");
        assert_eq!(project(&row("known://a", "fact", "summarized")), "");
        assert_eq!(
            project(&row("update://turn_1", "done", "summarized")),
            "done"
        );
        let long = "x".repeat(600);
        let cut = project(&row("prompt://1", &long, "summarized"));
        assert_eq!(cut, format!("{}{PROMPT_TRUNCATED}", "x".repeat(500)));
    }
}
