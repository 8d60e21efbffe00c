//! A `set` with content on a pattern: one match is edited as if named; several scheme entries take the same edit blocks at once.
//!
//! Files are proposed one at a time (one proposal per command), so a pattern
//! that selects several files is refused rather than guessing which one was
//! meant. A whole new content on several entries would overwrite them all
//! with one text, which is never what a model means, so it needs blocks.

use super::{propose, with_summary, write_entry, Change};
use crate::tools::handler::{is_file, Handler, Outcome, Target};
use crate::tools::messages::{listing, not_found};
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::entry::Visibility;
use rummy_store::StoreError;
use rummy_text::hedberg::{self, Applied, Edit};

/// A pattern selecting several files.
pub fn several_files(pattern: &str, files: usize) -> String {
    format!("{pattern} matches {files} files; a file edit names one file at a time")
}

/// A whole new content aimed at several entries.
pub const NEEDS_BLOCKS: &str = "a pattern selecting several entries takes edit blocks (SEARCH/REPLACE, sed, search=); a whole new content needs one exact path";

/// Heading of a pattern edit that changed none of its entries.
pub const NONE_CHANGED: &str = "No entry changed; the edit failed on each:";

/// Runs a `set` with content on a pattern.
pub fn run(
    h: &mut Handler<'_>,
    raw: &str,
    pattern: &str,
    filter: Option<&str>,
    change: &Change<'_>,
) -> Result<Outcome, StoreError> {
    let rows = h.select(&Target::Pattern(pattern.to_owned()), filter)?;
    match &rows[..] {
        [] => {
            return Ok(Outcome::failed(
                pattern,
                FailureKind::NotFound,
                not_found(raw),
            ))
        }
        [row] if is_file(&row.path) => return propose(h, &row.path, change.edit),
        [row] => return write_entry(h, &row.path, change),
        _ => {}
    }
    let files = rows.iter().filter(|r| is_file(&r.path)).count();
    if files > 0 {
        return Ok(Outcome::failed(
            pattern,
            FailureKind::Validation,
            several_files(raw, files),
        ));
    }
    if matches!(change.edit, Edit::Replace(_)) {
        return Ok(Outcome::failed(
            pattern,
            FailureKind::Validation,
            NEEDS_BLOCKS,
        ));
    }
    h.check_all(rows.iter().map(|r| r.path.as_str()))?;
    let mut changed: Vec<(&ViewRow, Applied)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for row in &rows {
        match hedberg::apply(&row.path, &row.body, change.edit, h.divisor()) {
            Ok(applied) if applied.content != row.body => changed.push((row, applied)),
            Ok(_) => {}
            Err(failure) => {
                let first = failure.to_string();
                let reason = first.lines().last().unwrap_or_default().to_owned();
                failed.push(format!("{}: {reason}", row.path));
            }
        }
    }
    if changed.is_empty() {
        let body = format!("{NONE_CHANGED}\n{}", listing(failed));
        return Ok(Outcome::failed(pattern, FailureKind::Conflict, body));
    }
    for (row, applied) in &changed {
        if let Some(overflow) = h.size_gate(pattern, &row.path, &applied.content) {
            return Ok(overflow);
        }
    }
    let visibility = change.visibility.unwrap_or(Visibility::Visible);
    let mut sections = Vec::new();
    for (row, applied) in &changed {
        let attributes = with_summary(row.attributes(), change.summary);
        h.write(&row.path, &applied.content, &attributes, visibility)?;
        sections.push(format!(
            "# set {} {}→{} tokens\n{}",
            row.path,
            applied.tokens_before,
            applied.tokens_after,
            applied.patch.trim_end_matches('\n')
        ));
    }
    if !failed.is_empty() {
        sections.push(format!("Unchanged:\n{}", listing(failed)));
    }
    let paths: Vec<&str> = changed.iter().map(|(r, _)| r.path.as_str()).collect();
    Ok(Outcome::resolved(pattern, sections.join("\n")).with("paths", paths))
}
