//! A `set` on a project file: the edit is applied to the file's current content now, and the result is proposed, never written.
//!
//! The proposal carries the complete new content; the client that accepts it
//! gets exactly that content written (never re-derived from the
//! edit), and only while the file on disk is still the one the edit was made
//! against (`bases`). An edit that fails is no proposal: it fails `conflict` with each
//! block's problem.

use super::{described, edit_needs_existing, needs_existing, NO_CHANGE};
use crate::tools::handler::{bases, Handler, ToolResult};
use crate::tools::proposal::Proposed;
use rummy_store::entry::FailureKind;
use rummy_store::StoreError;
use rummy_text::hedberg::{self, Edit};

/// Proposes the edit of the project file at `path` (a new file when it does not exist).
pub fn propose(h: &mut Handler<'_>, path: &str, edit: &Edit) -> Result<ToolResult, StoreError> {
    let old = h.file_body(path)?;
    let created = old.is_none();
    if created && needs_existing(edit) {
        return Ok(ToolResult::failed(
            path,
            FailureKind::NotFound,
            edit_needs_existing(path),
        ));
    }
    let base = bases([(path, old.as_deref())]);
    let old = old.unwrap_or_default();
    let applied = match hedberg::apply(path, &old, edit, h.divisor()) {
        Ok(applied) => applied,
        Err(failure) => {
            return Ok(ToolResult::failed(
                path,
                FailureKind::Conflict,
                failure.to_string(),
            ))
        }
    };
    if !created && applied.content == old {
        return Ok(ToolResult::resolved(path, NO_CHANGE));
    }
    let kind = Proposed::Edit {
        path: path.to_owned(),
        content: applied.content.clone(),
    };
    let proposal = ToolResult::proposed(path, applied.patch.clone(), &kind)
        .with("created", created)
        .with("bases", base);
    Ok(described(proposal, &applied))
}
