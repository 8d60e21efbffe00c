//! Builds the turn's two messages from the run's context rows (ENGINE.md §3): no chat history, ever.
//!
//! System: instructions, then `<knowns>`, `<previous>`, `<unknowns>`.
//! User: `<performed>`, then `<prompt mode=…>`. Empty sections are left out.

use super::budget::{token_usage, tokens_free, Budget};
use super::views::project;
use crate::entry::{http_status, Category, State};
use crate::run::Mode;
use crate::store::entries::ViewRow;
use crate::tokens::estimate;
use serde_json::Value;

/// The two messages sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Messages {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
    /// The estimated tokens of both messages (not calibrated).
    pub tokens: i32,
}

/// What assembly needs besides the rows.
#[derive(Debug, Clone, Copy)]
pub struct AssemblyInput<'a> {
    /// Context rows in context order (`store::entries::context_rows`).
    pub rows: &'a [ViewRow],
    /// The instructions that open the system message.
    pub instructions: &'a str,
    /// The loop's mode, used when the prompt row does not carry one.
    pub mode: Mode,
    /// The budget, when the context size is known: adds `tokensFree`/`tokenUsage` to `<prompt>`.
    pub budget: Option<Budget>,
    /// Characters per estimated token.
    pub divisor: u32,
}

/// Assembles the system and user messages.
pub fn assemble(input: AssemblyInput<'_>) -> Messages {
    let rows = input.rows;
    let prompt = rows
        .iter()
        .filter(|r| r.tag() == "prompt")
        .max_by_key(|r| (r.turn, r.view_id));
    let loop_start = prompt.map_or(0, |p| p.turn);
    let category = |r: &ViewRow| r.category();

    let knowns: Vec<String> = rows
        .iter()
        .filter(|r| category(r) == Some(Category::Data))
        .map(render_known)
        .collect();
    let mut earlier: Vec<&ViewRow> = rows
        .iter()
        .filter(|r| r.turn < loop_start)
        .filter(|r| matches!(category(r), Some(Category::Logging | Category::Prompt)))
        .collect();
    earlier.sort_by_key(|r| (r.turn, category(r) != Some(Category::Prompt)));
    let previous: Vec<String> = earlier.into_iter().map(|r| render_log(r, true)).collect();
    let unknowns: Vec<String> = rows
        .iter()
        .filter(|r| category(r) == Some(Category::Unknown))
        .map(render_unknown)
        .collect();
    let performed: Vec<String> = rows
        .iter()
        .filter(|r| r.turn >= loop_start && category(r) == Some(Category::Logging))
        .map(|r| render_log(r, false))
        .collect();

    let mut system = input.instructions.to_owned();
    push_section(&mut system, "knowns", &knowns, "\n\n");
    push_section(&mut system, "previous", &previous, "\n\n");
    push_section(&mut system, "unknowns", &unknowns, "\n\n");

    let mut user = String::new();
    push_section(&mut user, "performed", &performed, "");
    if !user.is_empty() {
        user.push('\n');
    }
    let mode = prompt
        .and_then(|p| {
            p.attributes()
                .get("mode")
                .and_then(Value::as_str)
                .and_then(Mode::parse)
        })
        .unwrap_or(input.mode);
    let body = prompt.map(project).unwrap_or_default();
    let mut attrs = format!(" mode=\"{}\"", mode.as_str());
    if mode == Mode::Ask {
        attrs.push_str(" warn=\"File editing disallowed.\"");
    }
    let plain_tag = format!("<prompt{attrs}>{body}</prompt>");
    let tokens = estimate(&system, input.divisor)
        + estimate(&user, input.divisor)
        + estimate(&plain_tag, input.divisor);
    if let Some(budget) = &input.budget {
        let usage = token_usage(rows);
        let free = tokens_free(budget, budget.calibrate(tokens), usage);
        attrs.push_str(&format!(" tokensFree=\"{free}\" tokenUsage=\"{usage}\""));
    }
    user.push_str(&format!("<prompt{attrs}>{body}</prompt>"));
    Messages {
        system,
        user,
        tokens,
    }
}

fn push_section(out: &mut String, name: &str, items: &[String], separator: &str) {
    if items.is_empty() {
        return;
    }
    out.push_str(separator);
    out.push_str(&format!("<{name}>\n{}\n</{name}>", items.join("\n")));
}

/// Escapes text for a double-quoted attribute value.
pub fn attr_escape(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

fn status_of(row: &ViewRow) -> i64 {
    row.attributes()
        .get("status")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| i64::from(http_status(row.state(), row.outcome.as_deref())))
}

fn tag(name: &str, attrs: &[(&str, String)], body: &str) -> String {
    let attrs: String = attrs
        .iter()
        .map(|(k, v)| format!(" {k}=\"{}\"", attr_escape(v)))
        .collect();
    if body.is_empty() {
        format!("<{name}{attrs}/>")
    } else {
        format!("<{name}{attrs}>{body}</{name}>")
    }
}

fn state_attrs(row: &ViewRow, attrs: &mut Vec<(&'static str, String)>) {
    attrs.push(("status", status_of(row).to_string()));
    if row.state() != State::Resolved {
        attrs.push(("state", row.state.clone()));
    }
    if let Some(outcome) = &row.outcome {
        attrs.push(("outcome", outcome.clone()));
    }
}

fn summary_of(row: &ViewRow) -> Option<String> {
    row.attributes()
        .get("summary")
        .and_then(Value::as_str)
        .map(|s| s.chars().take(80).collect())
}

fn render_known(row: &ViewRow) -> String {
    let mut attrs = vec![("path", row.path.clone())];
    if row.turn > 0 {
        attrs.push(("turn", row.turn.to_string()));
    }
    state_attrs(row, &mut attrs);
    // Always present, even empty: it reminds the model to tag entries with keywords.
    attrs.push(("summary", summary_of(row).unwrap_or_default()));
    attrs.push(("visibility", row.visibility.clone()));
    if row.tokens > 0 {
        attrs.push(("tokens", row.tokens.to_string()));
    }
    tag(row.tag(), &attrs, &project(row))
}

/// A logging or prompt row: its `path` attribute is the tool's target, not the entry's own path.
fn render_log(row: &ViewRow, _previous: bool) -> String {
    let a = row.attributes();
    let target = a
        .get("path")
        .or_else(|| a.get("command"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut attrs = vec![("path", target)];
    if row.turn > 0 {
        attrs.push(("turn", row.turn.to_string()));
    }
    state_attrs(row, &mut attrs);
    if let Some(summary) = summary_of(row) {
        attrs.push(("summary", summary));
    }
    attrs.push(("visibility", row.visibility.clone()));
    if row.tokens > 0 {
        attrs.push(("tokens", row.tokens.to_string()));
    }
    tag(row.tag(), &attrs, &project(row))
}

fn render_unknown(row: &ViewRow) -> String {
    let mut attrs = vec![("path", row.path.clone()), ("turn", row.turn.to_string())];
    if let Some(summary) = summary_of(row) {
        attrs.push(("summary", summary));
    }
    attrs.push(("visibility", row.visibility.clone()));
    if row.tokens > 0 {
        attrs.push(("tokens", row.tokens.to_string()));
    }
    tag("unknown", &attrs, &project(row))
}
