//! What the model sees of an entry at each visibility: the per-scheme projection of its body.
//!
//! | scheme | visible | summarized |
//! |---|---|---|
//! | known, unknown, file, skill | body | "" (the tag's summary remains) |
//! | prompt | body | first 500 characters and a marker |
//! | update | `# update` + body | same |
//! | error, budget | body | body |
//! | set | `# set <path> <before>→<after> tokens`, warnings, patch (or the error) | "" |
//! | get, rm, cp, mv, sh, env, search | result body | "" |
//! | ask_user | `# ask_user`, `# Question: Q`, `# Answer: A` | `Q → A` |
//! | http, https | page body | snippet |
//!
//! A tool's results are projected by the tool (`tools::view`, matched on its
//! [`ToolName`]); the other schemes here. Archived entries are never shown. Renderers trust the projection: they
//! do not check visibility again.

use crate::tools::{self, ToolName};
use rummy_store::entries::ViewRow;
use rummy_store::entry::Visibility;

/// Characters of a summarized prompt the model still sees.
pub const PROMPT_SUMMARY_CHARS: usize = 500;

/// The marker after a truncated prompt.
pub const PROMPT_TRUNCATED: &str = "\n[truncated — promote to see the complete prompt]";

/// Projects a row's body for the model, by scheme and visibility.
pub fn project(row: &ViewRow) -> String {
    let visible = match row.visibility {
        Visibility::Archived => return String::new(),
        Visibility::Visible => true,
        Visibility::Summarized => false,
    };
    let tag = row.tag();
    if let Some(tool) = ToolName::from_scheme(tag) {
        return tools::view(tool, row, visible);
    }
    match (tag, visible) {
        ("prompt", true) => row.body.clone(),
        ("prompt", false) => truncate_prompt(&row.body),
        ("error" | "budget", _) => row.body.clone(),
        ("http" | "https", false) => tools::search::page_summary(row),
        (_, true) => row.body.clone(),
        (_, false) => String::new(),
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
    use pretty_assertions::assert_eq;
    use rummy_store::entry::State;
    use serde_json::json;

    fn row(
        path: &str,
        body: &str,
        visibility: Visibility,
        state: State,
        attributes: &str,
    ) -> ViewRow {
        ViewRow {
            view_id: 1,
            path: path.into(),
            scheme: rummy_text::path::scheme_of(path),
            body: body.into(),
            attributes: attributes.into(),
            tokens: 1,
            state,
            outcome: None,
            visibility,
            turn: 1,
            rev: 1,
            updated_at: 0,
        }
    }

    /// Every scheme's visible and summarized projection, as in the table of the module doc.
    #[test]
    fn projections_per_scheme() {
        let long = "x".repeat(600);
        let set = json!({
            "path": "known://a", "patch": "P", "beforeTokens": 2, "afterTokens": 5,
            "warnings": ["W"],
        })
        .to_string();
        let asked = json!({"question": "Which DB?", "options": ["PG", "SQLite"]}).to_string();
        let answered =
            json!({"question": "Which DB?", "options": ["PG"], "answer": "PG"}).to_string();
        let page = json!({"title": "T", "snippet": "S"}).to_string();
        let cases: Vec<(ViewRow, &str, &str)> = vec![
            (
                row(
                    "known://a",
                    "fact",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "fact",
                "",
            ),
            (
                row(
                    "unknown://q",
                    "why?",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "why?",
                "",
            ),
            (
                row(
                    "src/a.rs",
                    "fn a",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "fn a",
                "",
            ),
            (
                row(
                    "skill://s",
                    "skill",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "skill",
                "",
            ),
            (
                row(
                    "update://turn_1",
                    "done",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "# update\ndone",
                "# update\ndone",
            ),
            (
                row(
                    "error://turn_1/x",
                    "oops",
                    Visibility::Visible,
                    State::Failed,
                    "{}",
                ),
                "oops",
                "oops",
            ),
            (
                row(
                    "budget://1/2",
                    "over",
                    Visibility::Visible,
                    State::Failed,
                    "{}",
                ),
                "over",
                "over",
            ),
            (
                row(
                    "get://turn_1/a",
                    "a promoted (3 tokens)",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "a promoted (3 tokens)",
                "",
            ),
            (
                row(
                    "rm://turn_1/a",
                    "known://a",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "known://a",
                "",
            ),
            (
                row(
                    "cp://turn_1/a",
                    "a copied",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "a copied",
                "",
            ),
            (
                row(
                    "mv://turn_1/a",
                    "a moved",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "a moved",
                "",
            ),
            (
                row(
                    "sh://turn_1/ls",
                    "",
                    Visibility::Visible,
                    State::Proposed,
                    "{}",
                ),
                "",
                "",
            ),
            (
                row(
                    "env://turn_1/ls",
                    "out",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "out",
                "",
            ),
            (
                row(
                    "search://turn_1/q",
                    "2 results",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "2 results",
                "",
            ),
            (
                row(
                    "set://turn_1/a",
                    "P",
                    Visibility::Visible,
                    State::Resolved,
                    &set,
                ),
                "# set known://a 2→5 tokens\nW\nP",
                "",
            ),
            (
                row(
                    "set://turn_1/b",
                    "No change was made.",
                    Visibility::Visible,
                    State::Failed,
                    &set,
                ),
                "No change was made.",
                "",
            ),
            (
                row(
                    "set://turn_1/c",
                    "a → summarized",
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                "a → summarized",
                "",
            ),
            (
                row(
                    "ask_user://turn_1/q",
                    "",
                    Visibility::Visible,
                    State::Proposed,
                    &asked,
                ),
                "# ask_user\n# Question: Which DB?\n# Options: PG; SQLite",
                "Which DB?",
            ),
            (
                row(
                    "ask_user://turn_1/q",
                    "PG",
                    Visibility::Visible,
                    State::Resolved,
                    &answered,
                ),
                "# ask_user\n# Question: Which DB?\n# Answer: PG",
                "Which DB? → PG",
            ),
            (
                row(
                    "https://x.org/a",
                    "# T\n\nS",
                    Visibility::Visible,
                    State::Resolved,
                    &page,
                ),
                "# T\n\nS",
                "S",
            ),
            (
                row(
                    "prompt://1",
                    &long,
                    Visibility::Visible,
                    State::Resolved,
                    "{}",
                ),
                long.as_str(),
                "",
            ),
        ];
        let project_at = |r: &ViewRow, v: Visibility| {
            project(&ViewRow {
                visibility: v,
                ..r.clone()
            })
        };
        let got: Vec<(String, String, String)> = cases
            .iter()
            .map(|(r, _, _)| {
                (
                    r.path.clone(),
                    project_at(r, Visibility::Visible),
                    project_at(r, Visibility::Summarized),
                )
            })
            .collect();
        let cut = format!("{}{PROMPT_TRUNCATED}", "x".repeat(500));
        let want: Vec<(String, String, String)> = cases
            .iter()
            .map(|(r, v, s)| {
                let s = if r.path == "prompt://1" {
                    cut.as_str()
                } else {
                    s
                };
                (r.path.clone(), (*v).to_owned(), s.to_owned())
            })
            .collect();
        assert_eq!(got, want);
    }

    /// Archived entries project to nothing, whatever their scheme.
    #[test]
    fn archived_is_empty() {
        for path in ["known://a", "update://turn_1", "error://x", "prompt://1"] {
            assert_eq!(
                project(&row(
                    path,
                    "body",
                    Visibility::Archived,
                    State::Resolved,
                    "{}"
                )),
                ""
            );
        }
    }
}
