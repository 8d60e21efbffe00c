//! `<set … preview>`: the change a `set` would make, shown and not made — no write, no
//! proposal (the original documented it and never ran it).
//!
//! The edit is applied to the current content exactly as the real `set` would, so the model
//! reads the same diff, token counts, warnings and failures (a conflict, a missing entry, a
//! `known://` body over the size limit) — as a resolved result marked as a preview.

use super::{edit_needs_existing, needs_existing, tidy, Change, NO_CHANGE};
use crate::tools::handler::{is_file, Handler, Outcome, Target};
use crate::tools::messages::{listing, not_found};
use rummy_store::entry::FailureKind;
use rummy_store::StoreError;
use rummy_text::hedberg::{self, Applied};

/// The line that closes every preview: nothing happened.
pub const NOTHING_CHANGED: &str =
    "PREVIEW only: nothing was changed. Send the same set without preview to make the change.";

/// The preview of a `set` with content on `target`.
pub fn run(
    h: &mut Handler<'_>,
    raw: &str,
    target: &Target,
    filter: Option<&str>,
    change: &Change<'_>,
) -> Result<Outcome, StoreError> {
    let rows = match target {
        Target::Exact(path) => return one(h, path, change),
        Target::Pattern(_) => h.select(target, filter)?,
    };
    if let [row] = &rows[..] {
        return one(h, &row.path, change);
    }
    let pattern = target.as_str();
    if rows.is_empty() {
        return Ok(Outcome::failed(
            pattern,
            FailureKind::NotFound,
            not_found(raw),
        ));
    }
    let mut sections = vec![format!(
        "PREVIEW set path=\"{raw}\": {} matched",
        rows.len()
    )];
    let mut failed = Vec::new();
    for row in &rows {
        match hedberg::apply(&row.path, &row.body, change.edit, h.divisor()) {
            Ok(applied) => sections.push(section(&row.path, &applied)),
            Err(failure) => {
                let first = failure.to_string();
                failed.push(format!(
                    "{}: {}",
                    row.path,
                    first.lines().last().unwrap_or_default()
                ));
            }
        }
    }
    if !failed.is_empty() {
        sections.push(format!("Would fail:\n{}", listing(failed)));
    }
    sections.push(NOTHING_CHANGED.to_owned());
    Ok(Outcome::resolved(pattern, sections.join("\n")).with("preview", true))
}

/// The preview of a `set` with content on one entry or file.
fn one(h: &mut Handler<'_>, path: &str, change: &Change<'_>) -> Result<Outcome, StoreError> {
    let file = is_file(path);
    let old = if file {
        h.file_body(path)?
    } else {
        h.find(path)?.map(|row| row.body)
    };
    if old.is_none() && needs_existing(change.edit) {
        return Ok(Outcome::failed(
            path,
            FailureKind::NotFound,
            edit_needs_existing(path),
        ));
    }
    let edit = if file {
        change.edit.clone()
    } else {
        tidy(change.edit)
    };
    let applied = match hedberg::apply(path, old.as_deref().unwrap_or(""), &edit, h.divisor()) {
        Ok(applied) => applied,
        Err(failure) => {
            return Ok(Outcome::failed(
                path,
                FailureKind::Conflict,
                failure.to_string(),
            ))
        }
    };
    if !file {
        if let Some(overflow) = h.size_gate(path, path, &applied.content) {
            return Ok(overflow);
        }
    }
    let body = format!("{}\n{NOTHING_CHANGED}", section(path, &applied));
    Ok(Outcome::resolved(path, body).with("preview", true))
}

/// One entry's change as a preview shows it: header, warnings, then the diff.
fn section(path: &str, applied: &Applied) -> String {
    let mut out = format!(
        "# PREVIEW set {path} {}→{} tokens",
        applied.tokens_before, applied.tokens_after
    );
    for warning in &applied.warnings {
        out.push('\n');
        out.push_str(warning);
    }
    out.push('\n');
    let patch = applied.patch.trim_end_matches('\n');
    out.push_str(if patch.is_empty() { NO_CHANGE } else { patch });
    out
}

/// The preview of a body-less `set` (a visibility or summary change): the entries it would
/// change.
pub fn views(h: &mut Handler<'_>, raw: &str, filter: Option<&str>) -> Result<Outcome, StoreError> {
    let target = match crate::tools::handler::read_target(raw, filter) {
        Ok(target) => target,
        Err(reason) => return Ok(Outcome::failed(raw, FailureKind::Validation, reason)),
    };
    let rows = h.select(&target, filter)?;
    if rows.is_empty() {
        return Ok(Outcome::failed(
            target.as_str(),
            FailureKind::NotFound,
            not_found(raw),
        ));
    }
    let head = format!("PREVIEW set path=\"{raw}\": {} matched", rows.len());
    let lines = listing(rows.iter().map(|r| r.path.clone()));
    let body = format!("{head}\n{lines}\n{NOTHING_CHANGED}");
    Ok(Outcome::resolved(target.as_str(), body).with("preview", true))
}
