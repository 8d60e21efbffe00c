//! A `set` on a `memory://` path: the project's memory, written now, with the run, turn and user as its provenance.
//!
//! The edit is applied to the memory's current content (any of the edit formats); content that
//! differs supersedes it — the version before is kept, archived (`store::memory`) — and the
//! same content writes nothing. No run holds a view of a memory: the model reads memories when
//! a loop's first turn recalls them, so the result entry (with the patch) is what this run sees
//! of the write.

use super::{described, edit_needs_existing, needs_existing, tidy, Change};
use crate::tools::handler::{Handler, Outcome};
use rummy_store::entry::FailureKind;
use rummy_store::entry::Writer;
use rummy_store::memory::{self, MemoryWrite, Provenance, Remembered};
use rummy_store::ops::check_writer;
use rummy_store::{runs, StoreError};
use rummy_text::hedberg;

/// Writes the memory at `path` for the model.
pub fn remember(
    h: &mut Handler<'_>,
    path: &str,
    change: &Change<'_>,
) -> Result<Outcome, StoreError> {
    check_writer(path, Writer::Model)?;
    let t = h.ctx.t;
    let current = memory::current(h.conn, t.run.project_id, path)?;
    if current.is_none() && needs_existing(change.edit) {
        return Ok(Outcome::failed(
            path,
            FailureKind::NotFound,
            edit_needs_existing(path),
        ));
    }
    let old = current.as_ref().map_or("", |m| m.body.as_str());
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
    let run = runs::by_id(h.conn, t.run.run_id)?;
    let w = MemoryWrite {
        project_id: t.run.project_id,
        path,
        body: &applied.content,
        summary: change.summary,
        provenance: Provenance {
            run: &run.alias,
            turn: t.turn,
            user: run.user.as_deref(),
            writer: Writer::Model,
        },
    };
    let outcome = match memory::remember(h.conn, &w, h.at())? {
        Remembered::Added => Outcome::resolved(path, applied.patch.clone()).with("memory", "added"),
        Remembered::Superseded { archived, version } => {
            Outcome::resolved(path, applied.patch.clone())
                .with("memory", "superseded")
                .with("supersedes", archived)
                .with("version", version)
        }
        Remembered::Unchanged => Outcome::resolved(path, "").with("memory", "unchanged"),
    };
    Ok(described(outcome, &applied))
}
