//! What the model sees of an entry at each visibility: the per-scheme projection of its body (seed 003, "Per-plugin visibility projection").
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

use crate::entry::Visibility;
use crate::store::entries::ViewRow;
use crate::tools::{self, ToolName};

/// Characters of a summarized prompt the model still sees.
pub const PROMPT_SUMMARY_CHARS: usize = 500;

/// The marker after a truncated prompt.
pub const PROMPT_TRUNCATED: &str = "\n[truncated — promote to see the complete prompt]";

/// Projects a row's body for the model, by scheme and visibility.
pub fn project(row: &ViewRow) -> String {
    let visible = match row.visibility() {
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
    use serde_json::json;

    fn row(path: &str, body: &str, visibility: &str, state: &str, attributes: &str) -> ViewRow {
        ViewRow {
            view_id: 1,
            path: path.into(),
            scheme: crate::path::scheme_of(path),
            body: body.into(),
            attributes: attributes.into(),
            tokens: 1,
            state: state.into(),
            outcome: None,
            visibility: visibility.into(),
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
            (row("known://a", "fact", "", "resolved", "{}"), "fact", ""),
            (row("unknown://q", "why?", "", "resolved", "{}"), "why?", ""),
            (row("src/a.rs", "fn a", "", "resolved", "{}"), "fn a", ""),
            (row("skill://s", "skill", "", "resolved", "{}"), "skill", ""),
            (
                row("update://turn_1", "done", "", "resolved", "{}"),
                "# update\ndone",
                "# update\ndone",
            ),
            (
                row("error://turn_1/x", "oops", "", "failed", "{}"),
                "oops",
                "oops",
            ),
            (
                row("budget://1/2", "over", "", "failed", "{}"),
                "over",
                "over",
            ),
            (
                row(
                    "get://turn_1/a",
                    "a promoted (3 tokens)",
                    "",
                    "resolved",
                    "{}",
                ),
                "a promoted (3 tokens)",
                "",
            ),
            (
                row("rm://turn_1/a", "known://a", "", "resolved", "{}"),
                "known://a",
                "",
            ),
            (
                row("cp://turn_1/a", "a copied", "", "resolved", "{}"),
                "a copied",
                "",
            ),
            (
                row("mv://turn_1/a", "a moved", "", "resolved", "{}"),
                "a moved",
                "",
            ),
            (row("sh://turn_1/ls", "", "", "proposed", "{}"), "", ""),
            (
                row("env://turn_1/ls", "out", "", "resolved", "{}"),
                "out",
                "",
            ),
            (
                row("search://turn_1/q", "2 results", "", "resolved", "{}"),
                "2 results",
                "",
            ),
            (
                row("set://turn_1/a", "P", "", "resolved", &set),
                "# set known://a 2→5 tokens\nW\nP",
                "",
            ),
            (
                row("set://turn_1/b", "No change was made.", "", "failed", &set),
                "No change was made.",
                "",
            ),
            (
                row("set://turn_1/c", "a → summarized", "", "resolved", "{}"),
                "a → summarized",
                "",
            ),
            (
                row("ask_user://turn_1/q", "", "", "proposed", &asked),
                "# ask_user\n# Question: Which DB?\n# Options: PG; SQLite",
                "Which DB?",
            ),
            (
                row("ask_user://turn_1/q", "PG", "", "resolved", &answered),
                "# ask_user\n# Question: Which DB?\n# Answer: PG",
                "Which DB? → PG",
            ),
            (
                row("https://x.org/a", "# T\n\nS", "", "resolved", &page),
                "# T\n\nS",
                "S",
            ),
            (
                row("prompt://1", &long, "", "resolved", "{}"),
                long.as_str(),
                "",
            ),
        ];
        let project_at = |r: &ViewRow, v: &str| {
            project(&ViewRow {
                visibility: v.into(),
                ..r.clone()
            })
        };
        let got: Vec<(String, String, String)> = cases
            .iter()
            .map(|(r, _, _)| {
                (
                    r.path.clone(),
                    project_at(r, "visible"),
                    project_at(r, "summarized"),
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
                project(&row(path, "body", "archived", "resolved", "{}")),
                ""
            );
        }
    }
}
