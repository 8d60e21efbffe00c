//! `rm`: remove entries from the run now, and propose deleting the project files a command selects.
//!
//! One command gives one result: scheme entries it selects are removed at
//! once (after the writer check of every one, so a refusal removes nothing);
//! if it also selects files, the result is one `rm` proposal listing them,
//! and they are deleted only when a client accepts it. `preview` lists what
//! would go and removes nothing.
//!
//! Views: the result body when visible, nothing when summarized.

use super::handler::{bases, is_file, path_and_filter, read_target, Handler, ToolResult};
use super::proposal::Proposed;
use super::wording::{self, listing, not_found};
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::run::Mode;
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// The line of a file proposal that lists scheme entries removed at once.
pub const REMOVED_NOW: &str = "removed at once:";

/// Runs `rm`.
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let (raw, filter) = path_and_filter(call);
    let Some(raw) = raw else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            wording::PATH_REQUIRED,
        ));
    };
    let target = match read_target(raw, filter) {
        Ok(target) => target,
        Err(reason) => return Ok(ToolResult::failed(raw, FailureKind::Validation, reason)),
    };
    let target_text = target.as_str().to_owned();
    let rows = h.select(&target, filter)?;
    if rows.is_empty() {
        return Ok(ToolResult::failed(
            &target_text,
            FailureKind::NotFound,
            not_found(raw),
        ));
    }
    if call.attr("preview").is_some() {
        let head = format!("PREVIEW rm path=\"{target_text}\": {} matched", rows.len());
        let lines = listing(rows.iter().map(|r| r.path.clone()));
        return Ok(ToolResult::resolved(
            &target_text,
            format!("{head}\n{lines}"),
        ));
    }
    let (files, entries): (Vec<ViewRow>, Vec<ViewRow>) =
        rows.into_iter().partition(|r| is_file(&r.path));
    if let (Mode::Ask, Some(first)) = (h.ctx.mode, files.first()) {
        return Ok(ToolResult::failed(
            &target_text,
            FailureKind::Permission,
            wording::ask_file_rm(&first.path),
        ));
    }
    h.check_all(entries.iter().map(|r| r.path.as_str()))?;
    h.remove_views(&entries)?;
    let removed = listing(entries.iter().map(|r| r.path.clone()));
    if files.is_empty() {
        return Ok(ToolResult::resolved(&target_text, removed));
    }
    let mut body = listing(files.iter().map(|r| r.path.clone()));
    if !entries.is_empty() {
        body.push_str(&format!("\n{REMOVED_NOW}\n{removed}"));
    }
    let kind = Proposed::Rm {
        paths: files.iter().map(|r| r.path.clone()).collect(),
    };
    let seen = bases(
        files
            .iter()
            .map(|r| (r.path.as_str(), Some(r.body.as_str()))),
    );
    Ok(ToolResult::proposed(&target_text, body, &kind).with("bases", seen))
}
