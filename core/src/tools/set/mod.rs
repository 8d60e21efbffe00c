//! `set`: write or edit a scheme entry at once, propose an edit of a project file, or change visibility and summary.
//!
//! Every body is read by `hedberg::parse_edit` (all eight edit formats and
//! the `search`/`replace` attributes) and applied atomically by
//! `hedberg::apply`: a failing block changes nothing and the result lists
//! each block's problem. Scheme entries (`known://`, `unknown://`, …) change
//! now; a project file's new content goes into an `edit` proposal and the
//! file changes only when a client accepts it; a `memory://` entry is the
//! project's, superseded rather than overwritten (`memory`). A body-less `set` with
//! `visibility=`/`summary=` changes every entry its path selects. With
//! `preview`, a `set` with content shows its diff and changes nothing.
//!
//! Views: visible `# set <path> <before>→<after> tokens`, the warnings, then
//! the patch (or the error when it failed); summarized nothing.

mod file;
mod memory;
mod pattern;
pub mod preview;
mod questions;

use super::handler::{
    attr, is_file, read_target, summary_of, visibility_of, Handler, Outcome, Target,
};
use super::messages;
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::entry::{State, Visibility, Writer};
use rummy_store::ops::check_writer;
use rummy_store::{shared, StoreError};
use rummy_text::hedberg::{self, Applied, Edit, EditAttrs};
use rummy_text::parse::ToolCall;
use rummy_text::path::{normalize, scheme_of};
use serde_json::Value;

pub use file::propose;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// A `set` with neither content nor a change of visibility or summary.
pub const NOTHING_TO_SET: &str =
    "nothing to set: send content, an edit, or visibility=/summary= to change";

/// Shown instead of a patch when a write left the content as it was.
pub const NO_CHANGE: &str = "No change: the content is already this.";

/// An edit (SEARCH blocks) aimed at an entry or file that does not exist.
pub fn edit_needs_existing(path: &str) -> String {
    format!("{path} not found: an edit needs existing content; send the whole content to create it")
}

/// Runs `set`.
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<Outcome, StoreError> {
    let Some(raw) = attr(call, "path") else {
        return Ok(Outcome::failed(
            "",
            FailureKind::Validation,
            messages::PATH_REQUIRED,
        ));
    };
    let visibility = match visibility_of(call) {
        Ok(v) => v,
        Err(reason) => return Ok(Outcome::failed(raw, FailureKind::Validation, reason)),
    };
    let summary = summary_of(call);
    let filter = attr(call, "filter");
    let content = match attr(call, "body") {
        Some(body) if call.body.trim().is_empty() => body,
        _ => call.body.as_str(),
    };
    let edit_attrs = EditAttrs {
        search: call.attr("search").map(str::to_owned),
        replace: call.attr("replace").map(str::to_owned),
    };
    if content.trim().is_empty() && edit_attrs.search.is_none() {
        if visibility.is_none() && summary.is_none() {
            return Ok(Outcome::failed(
                raw,
                FailureKind::Validation,
                NOTHING_TO_SET,
            ));
        }
        if call.attr("preview").is_some() {
            return preview::views(h, raw, filter);
        }
        return h.change_views(raw, filter, visibility, summary);
    }
    let target = match read_target(raw, filter) {
        Ok(target) => target,
        Err(reason) => return Ok(Outcome::failed(raw, FailureKind::Validation, reason)),
    };
    let edit = hedberg::parse_edit(content, &edit_attrs);
    let answers = match attr(call, "answers").map(normalize).transpose() {
        Ok(answers) => answers,
        Err(e) => return Ok(Outcome::failed(raw, FailureKind::Validation, e.to_string())),
    };
    let change = Change {
        edit: &edit,
        visibility,
        summary: summary.as_deref(),
        shared: call
            .attr("shared")
            .is_some_and(|v| !matches!(v.trim(), "false" | "no" | "0")),
        answers: answers.as_deref(),
    };
    if call.attr("preview").is_some() {
        return preview::run(h, raw, &target, filter, &change);
    }
    match target {
        Target::Pattern(p) => pattern::run(h, raw, &p, filter, &change),
        Target::Exact(path) if is_file(&path) => propose(h, &path, &edit),
        Target::Exact(path) if scheme_of(&path).as_deref() == Some("memory") => {
            memory::remember(h, &path, &change)
        }
        Target::Exact(path) => write_entry(h, &path, &change),
    }
}

/// What a `set` with content asks for.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// The edit read from the body and attributes.
    pub edit: &'a Edit,
    /// The visibility to leave the entry at (visible by default).
    pub visibility: Option<Visibility>,
    /// A summary to merge into the entry's attributes.
    pub summary: Option<&'a str>,
    /// `shared`: the `unknown://` is a question of the whole project (`store::shared`).
    pub shared: bool,
    /// `answers="unknown://…"`: the question this entry answers, closed by the write.
    pub answers: Option<&'a str>,
}

/// Whether an edit only makes sense on existing content (some block searches for text).
pub fn needs_existing(edit: &Edit) -> bool {
    match edit {
        Edit::Replace(_) => false,
        Edit::Blocks(blocks) => blocks
            .iter()
            .any(|b| b.search.as_deref().is_some_and(|s| !s.is_empty())),
    }
}

/// A whole new content for a scheme entry loses its trailing whitespace (entry tags stay tidy).
pub(crate) fn tidy(edit: &Edit) -> Edit {
    match edit {
        Edit::Replace(content) => Edit::Replace(content.trim_end().to_owned()),
        blocks => blocks.clone(),
    }
}

/// The entry's attributes with `summary` merged in.
pub fn with_summary(attributes: Value, summary: Option<&str>) -> Value {
    let mut attributes = match attributes {
        Value::Object(map) => Value::Object(map),
        _ => Value::Object(Default::default()),
    };
    if let (Some(summary), Some(map)) = (summary, attributes.as_object_mut()) {
        map.insert("summary".to_owned(), Value::from(summary));
    }
    attributes
}

/// Writes or edits one scheme entry now, and describes the change.
pub fn write_entry(
    h: &mut Handler<'_>,
    path: &str,
    change: &Change<'_>,
) -> Result<Outcome, StoreError> {
    check_writer(path, Writer::Model)?;
    let current = h.find(path)?;
    let shared_question = scheme_of(path).as_deref() == Some("unknown")
        && (change.shared
            || current
                .as_ref()
                .is_some_and(|r| shared::is_shared_text(&r.attributes)));
    if current.is_none() && needs_existing(change.edit) {
        return Ok(Outcome::failed(
            path,
            FailureKind::NotFound,
            edit_needs_existing(path),
        ));
    }
    let old = current.as_ref().map_or("", |r| r.body.as_str());
    let applied = match hedberg::apply(path, old, &tidy(change.edit), h.divisor()) {
        Ok(applied) => applied,
        Err(failure) => {
            return Ok(Outcome::failed(
                path,
                FailureKind::Conflict,
                failure.to_string(),
            ))
        }
    };
    if let Some(overflow) = h.size_gate(path, path, &applied.content) {
        return Ok(overflow);
    }
    let visibility = change.visibility.unwrap_or(Visibility::Visible);
    if shared_question {
        questions::ask(h, path, &applied.content, change.summary, visibility)?;
        return Ok(described(
            Outcome::resolved(path, applied.patch.clone()).with(shared::SHARED, true),
            &applied,
        ));
    }
    let mut attributes = with_summary(
        current
            .as_ref()
            .map(ViewRow::attributes)
            .unwrap_or_default(),
        change.summary,
    );
    if let (Some(question), Some(map)) = (change.answers, attributes.as_object_mut()) {
        map.insert(shared::ANSWERS.to_owned(), Value::from(question));
    }
    h.write(path, &applied.content, &attributes, visibility)?;
    let mut applied = applied;
    let mut outcome = Outcome::resolved(path, applied.patch.clone());
    if let Some(question) = change.answers {
        match questions::answer(h, question, path)? {
            Some(closed) => outcome = outcome.with("closed", closed),
            None => applied.warnings.push(questions::not_open(question)),
        }
    }
    Ok(described(outcome, &applied))
}

/// An outcome carrying an applied edit's patch, token counts and warnings.
pub fn described(outcome: Outcome, applied: &Applied) -> Outcome {
    outcome
        .with("patch", applied.patch.clone())
        .with("beforeTokens", applied.tokens_before)
        .with("afterTokens", applied.tokens_after)
        .with("warnings", applied.warnings.clone())
}

/// The visible view: the change's header and warnings, then the patch; or the error.
pub fn visible(row: &ViewRow) -> String {
    let a = row.attributes();
    let tokens = (
        a.get("beforeTokens").and_then(Value::as_i64),
        a.get("afterTokens").and_then(Value::as_i64),
    );
    let (Some(before), Some(after)) = tokens else {
        return row.body.clone();
    };
    if row.state == State::Failed {
        return row.body.clone();
    }
    let path = a.get("path").and_then(Value::as_str).unwrap_or_default();
    let mut out = format!("# set {path} {before}→{after} tokens");
    let warnings = a.get("warnings").and_then(Value::as_array);
    for warning in warnings.into_iter().flatten().filter_map(Value::as_str) {
        out.push('\n');
        out.push_str(warning);
    }
    out.push('\n');
    out.push_str(if row.body.is_empty() {
        NO_CHANGE
    } else {
        &row.body
    });
    out
}
