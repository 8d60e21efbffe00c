//! `ask_user`: a question proposed to the user, with options; the answer arrives when a client resolves it.
//!
//! Views: visible `# ask_user`, `# Question: Q` and `# Answer: A` (or the
//! options while unanswered); summarized `Q → A` (or just `Q`).

use super::handler::{attr, body, Handler, ToolResult};
use super::proposal::Proposed;
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::entry::{strings_attr, text_attr, State};
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;
use serde_json::Value;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// An `ask_user` without a question.
pub const QUESTION_REQUIRED: &str =
    "question is required: <ask_user question=\"…?\">option; option</ask_user>";

/// Options from a list: split on `;` when there is one, else on `,`; trimmed, empty ones dropped.
pub fn options(list: &str) -> Vec<String> {
    let separator = if list.contains(';') { ';' } else { ',' };
    list.split(separator)
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Runs `ask_user`: the question attribute (or the body), options from `options=` or the body.
pub fn run(_h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let (question, list) = match attr(call, "question") {
        Some(q) => (q, attr(call, "options").or_else(|| body(call))),
        None => (body(call).unwrap_or(""), attr(call, "options")),
    };
    if question.is_empty() {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            QUESTION_REQUIRED,
        ));
    }
    let options = list.map(options).unwrap_or_default();
    let kind = Proposed::AskUser {
        question: question.to_owned(),
        options,
    };
    Ok(ToolResult::proposed(question, "", &kind))
}

/// The answer: the `answer` attribute, or the body once resolved.
fn answer(row: &ViewRow, attributes: &Value) -> Option<String> {
    Some(text_attr(attributes, "answer").to_owned())
        .filter(|a| !a.is_empty())
        .or_else(|| {
            (row.state == State::Resolved && !row.body.is_empty()).then(|| row.body.clone())
        })
}

/// The visible view.
pub fn visible(row: &ViewRow) -> String {
    let a = row.attributes();
    let mut out = format!("# ask_user\n# Question: {}", text_attr(&a, "question"));
    match answer(row, &a) {
        Some(answer) => out.push_str(&format!("\n# Answer: {answer}")),
        None => {
            let options = strings_attr(&a, "options");
            if !options.is_empty() {
                out.push_str(&format!("\n# Options: {}", options.join("; ")));
            }
        }
    }
    out
}

/// The summarized view.
pub fn summarized(row: &ViewRow) -> String {
    let a = row.attributes();
    let question = text_attr(&a, "question");
    match answer(row, &a) {
        Some(answer) => format!("{question} → {answer}"),
        None => question.to_owned(),
    }
}
