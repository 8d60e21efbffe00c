//! Builds the turn's two messages from the run's context rows: no chat history, ever.
//!
//! System: instructions, then `<session>` (the run's session state, when it keeps one and its
//! active skills allow it: what a restarted or forked run reads first), `<knowns>`,
//! `<previous>` (the run's summary first, when it has one), `<unknowns>`.
//! User: `<performed>`, then the loop's `<recall>` (what its first turn recalled of the
//! project's memory, history and other runs), then `<prompt mode=…>`. Empty sections are left
//! out.

use super::budget::{token_usage, tokens_free, Budget};
use super::summary::is_summary;
use super::views::project;
use crate::session_state;
use rummy_store::entries::ViewRow;
use rummy_store::entry::{http_status, Category, State};
use rummy_store::run::Mode;
use rummy_store::skill;
use rummy_text::tokens::estimate;
use serde_json::Value;

/// The scheme of a loop's recall (`recall://<loop>`), rendered as one block before the prompt.
const RECALL: &str = "recall";

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
    /// Whether the run keeps session state (`RUMMY_SESSION_STATE`, run attribute
    /// `sessionState`): only then is `session://state` shown.
    pub session_state: bool,
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

    // A loop's recall is context for that loop alone: never part of `<previous>`.
    let recalled = |r: &ViewRow| r.tag() == RECALL;
    let mut earlier: Vec<&ViewRow> = rows
        .iter()
        .filter(|r| r.turn < loop_start && !recalled(r))
        .filter(|r| matches!(category(r), Some(Category::Logging | Category::Prompt)))
        .filter(|r| !is_summary(r))
        .collect();
    earlier.sort_by_key(|r| (r.turn, category(r) != Some(Category::Prompt)));
    // The run's summary of what left the context opens `<previous>`, whatever its turn.
    let summaries = rows.iter().filter(|r| is_summary(r));

    let mut system = String::with_capacity(input.instructions.len() + 128 * rows.len());
    system.push_str(input.instructions);
    if input.session_state {
        if let Some(row) = session_row(rows) {
            system.push_str("\n\n");
            render_session(&mut system, row);
        }
    }
    let knowns = rows
        .iter()
        .filter(|r| category(r) == Some(Category::Data) && r.tag() != "session");
    push_section(&mut system, "knowns", "\n\n", knowns, render_known);
    push_section(
        &mut system,
        "previous",
        "\n\n",
        summaries.chain(earlier),
        |out, row| {
            if is_summary(row) {
                render_summary(out, row);
            } else {
                render_log(out, row);
            }
        },
    );
    let unknowns = rows
        .iter()
        .filter(|r| category(r) == Some(Category::Unknown));
    push_section(&mut system, "unknowns", "\n\n", unknowns, render_unknown);

    let mut user = String::new();
    let performed = rows
        .iter()
        .filter(|r| r.turn >= loop_start && category(r) == Some(Category::Logging) && !recalled(r))
        .filter(|r| !is_summary(r));
    push_section(&mut user, "performed", "", performed, render_log);
    if !user.is_empty() {
        user.push('\n');
    }
    for row in rows.iter().filter(|r| r.turn >= loop_start && recalled(r)) {
        let block = project(row);
        if !block.is_empty() {
            user.push_str(&format!("<{RECALL}>\n{block}\n</{RECALL}>\n"));
        }
    }
    let mode = prompt.and_then(ViewRow::prompt_mode).unwrap_or(input.mode);
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

/// Appends `<name>` with one rendered row per line, after `separator`; nothing without rows.
fn push_section<'r>(
    out: &mut String,
    name: &str,
    separator: &str,
    rows: impl Iterator<Item = &'r ViewRow>,
    render: impl Fn(&mut String, &ViewRow),
) {
    let mut any = false;
    for row in rows {
        if any {
            out.push('\n');
        } else {
            out.push_str(separator);
            out.push('<');
            out.push_str(name);
            out.push_str(">\n");
            any = true;
        }
        render(out, row);
    }
    if any {
        out.push_str("\n</");
        out.push_str(name);
        out.push('>');
    }
}

/// Escapes text for a double-quoted attribute value.
pub fn attr_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    escape_into(&mut out, value);
    out
}

fn escape_into(out: &mut String, value: &str) {
    let mut rest = value;
    while let Some(at) = rest.find(['&', '"', '<']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'"' => "&quot;",
            _ => "&lt;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

/// A tag written straight into the message: attributes in order, then the body (self-closing
/// when empty).
struct Tag<'o> {
    out: &'o mut String,
}

impl<'o> Tag<'o> {
    fn open(out: &'o mut String, name: &str) -> Self {
        out.push('<');
        out.push_str(name);
        Tag { out }
    }

    fn attr(&mut self, key: &str, value: &str) {
        self.out.push(' ');
        self.out.push_str(key);
        self.out.push_str("=\"");
        escape_into(self.out, value);
        self.out.push('"');
    }

    fn number(&mut self, key: &str, value: i64) {
        self.attr(key, &value.to_string());
    }

    fn close(self, name: &str, body: &str) {
        if body.is_empty() {
            self.out.push_str("/>");
        } else {
            self.out.push('>');
            self.out.push_str(body);
            self.out.push_str("</");
            self.out.push_str(name);
            self.out.push('>');
        }
    }
}

fn status_of(row: &ViewRow, attributes: &Value) -> i64 {
    attributes
        .get("status")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| i64::from(http_status(row.state, row.outcome.as_deref())))
}

fn state_attrs(tag: &mut Tag<'_>, row: &ViewRow, attributes: &Value) {
    tag.number("status", status_of(row, attributes));
    if row.state != State::Resolved {
        tag.attr("state", row.state.as_str());
    }
    if let Some(outcome) = &row.outcome {
        tag.attr("outcome", outcome);
    }
}

fn summary_of(attributes: &Value) -> Option<String> {
    attributes
        .get("summary")
        .and_then(Value::as_str)
        .map(|s| s.chars().take(80).collect())
}

fn visibility_and_tokens(tag: &mut Tag<'_>, row: &ViewRow) {
    tag.attr("visibility", row.visibility.as_str());
    if row.tokens > 0 {
        tag.number("tokens", i64::from(row.tokens));
    }
}

fn render_known(out: &mut String, row: &ViewRow) {
    let attributes = row.attributes();
    let mut tag = Tag::open(out, row.tag());
    tag.attr("path", &row.path);
    if row.turn > 0 {
        tag.number("turn", i64::from(row.turn));
    }
    state_attrs(&mut tag, row, &attributes);
    // Always present, even empty: it reminds the model to tag entries with keywords.
    tag.attr("summary", &summary_of(&attributes).unwrap_or_default());
    visibility_and_tokens(&mut tag, row);
    tag.close(row.tag(), &project(row));
}

/// A logging or prompt row: its `path` attribute is the tool's target, not the entry's own path.
fn render_log(out: &mut String, row: &ViewRow) {
    let attributes = row.attributes();
    let target = attributes
        .get("path")
        .or_else(|| attributes.get("command"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut tag = Tag::open(out, row.tag());
    tag.attr("path", target);
    if row.turn > 0 {
        tag.number("turn", i64::from(row.turn));
    }
    state_attrs(&mut tag, row, &attributes);
    if let Some(summary) = summary_of(&attributes) {
        tag.attr("summary", &summary);
    }
    visibility_and_tokens(&mut tag, row);
    tag.close(row.tag(), &project(row));
}

/// The run's `session://state` row, unless it is empty to the model or an active skill's
/// `memoryScope` withholds session state.
fn session_row(rows: &[ViewRow]) -> Option<&ViewRow> {
    let row = rows
        .iter()
        .find(|r| r.tag() == "session" && r.path == session_state::PATH)?;
    let scopes: Vec<Value> = rows
        .iter()
        .filter(|r| r.tag() == "skill" && r.attributes.contains("memoryScope"))
        .map(ViewRow::attributes)
        .collect();
    let allowed = skill::memory_scope(&scopes).allows_session_state();
    (allowed && !project(row).is_empty()).then_some(row)
}

/// `<session path="session://state" turn="N">`, the sentence that says what it is, then the
/// document.
fn render_session(out: &mut String, row: &ViewRow) {
    let mut tag = Tag::open(out, "session");
    tag.attr("path", &row.path);
    if row.turn > 0 {
        tag.number("turn", i64::from(row.turn));
    }
    let body = format!("\n{}\n\n{}", session_state::intro(), project(row));
    tag.close("session", &body);
}

/// The run's summary (`summary://run`): its path and the turn that last wrote it.
fn render_summary(out: &mut String, row: &ViewRow) {
    let mut tag = Tag::open(out, "summary");
    tag.attr("path", &row.path);
    tag.number("turn", i64::from(row.turn));
    tag.close("summary", &project(row));
}

fn render_unknown(out: &mut String, row: &ViewRow) {
    let attributes = row.attributes();
    let mut tag = Tag::open(out, "unknown");
    tag.attr("path", &row.path);
    tag.number("turn", i64::from(row.turn));
    // A question of the project: answering it (a known:// with answers=) closes it for all.
    if attributes.get("shared") == Some(&Value::Bool(true)) {
        tag.attr("shared", "true");
    }
    if let Some(summary) = summary_of(&attributes) {
        tag.attr("summary", &summary);
    }
    visibility_and_tokens(&mut tag, row);
    tag.close("unknown", &project(row));
}
