//! The entry primitives behind the client's `set`/`get`/`rm`/`cp`/`mv`/`update` (and, later, the model's tools).
//!
//! Every operation checks the writer's tier against the scheme of each entry
//! it touches — for body, state, visibility and attribute changes alike — and
//! takes a new view revision for each change so `run/state` pushes see it. A client may not
//! change a project file's body or state at all ([`check_file_change`]): files change on
//! disk and through accepted proposals. Nor may it change a pending proposal's body, attributes
//! or state ([`check_proposal_change`]): it resolves the proposal, it never edits it.
//! Patterns and body filters are hedberg patterns evaluated in SQL
//! (`hedmatch`, `hedsearch`, registered on every connection).

use super::entries::{self, EntryWrite, RunRef, ViewRow, WriteCtx};
use super::selection::{self, Selection};
use super::{runs, StoreError};
use crate::db::Db;
use crate::entry::{State, Visibility, Writer};
use crate::ids::RunId;
use crate::schema::{entries as e, run_views as v};
use diesel::prelude::*;
use rummy_text::path::{normalize, result_path, scheme_of};
use serde_json::{Map, Value};

/// Who performs an operation, on which run, with which token divisor and at what time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// The run.
    pub run: RunRef,
    /// The writer tier, checked against each entry's scheme.
    pub writer: Writer,
    /// The largest `known://` body a content write may leave, in tokens
    /// (`RUMMY_MAX_ENTRY_TOKENS`): the gate the model's writes pass, for every writer.
    pub max_entry_tokens: u32,
    /// The token divisor and the time of the operation.
    pub at: WriteCtx,
}

/// The schemes whose entries hold one topic each and are size-gated: facts and project memory.
pub const GATED: [&str; 2] = ["known", "memory"];

/// Whether a body at `path` passes the size gate (a `known://` or `memory://` path).
pub fn gated(path: &str) -> bool {
    scheme_of(path).is_some_and(|s| GATED.contains(&s.as_str()))
}

/// The size gate of `known://` and `memory://`: a body over
/// `RUMMY_MAX_ENTRY_TOKENS` is refused with the message that asks to split it, whoever writes it.
pub fn size_gate(op: &Op, path: &str, body: &str) -> Result<(), StoreError> {
    if !gated(path) {
        return Ok(());
    }
    let tokens = rummy_text::token_estimate::estimate(body, op.at.divisor);
    let limit = i32::try_from(op.max_entry_tokens).unwrap_or(i32::MAX);
    if tokens <= limit {
        return Ok(());
    }
    Err(StoreError::TooLarge {
        message: too_large(path, tokens, limit),
        tokens,
        limit,
    })
}

/// A `known://` (or `memory://`) body over the size limit: what the writer reads, the model (a
/// failed result) and a client (-32007) alike.
pub fn too_large(path: &str, tokens: i32, max: i32) -> String {
    let scheme = scheme_of(path).unwrap_or_else(|| "known".to_owned());
    format!(
        "{path} too large ({tokens} tokens, max {max}). Split it into several {scheme}:// entries, one topic each, linked by path."
    )
}

/// Whether entries at `path` are a run's that recall reads (facts, session state).
fn recalled(path: &str) -> bool {
    matches!(scheme_of(path).as_deref(), Some("known" | "session"))
}

/// Fails unless `writer` may write entries at `path`.
pub fn check_writer(path: &str, writer: Writer) -> Result<(), StoreError> {
    entries::admitted(path, scheme_of(path).as_deref(), writer).map(|_| ())
}

/// Whether `path` (normalised) is a project file's entry: a bare project path, no scheme.
pub fn is_file(path: &str) -> bool {
    scheme_of(path).is_none()
}

/// Fails when a client would change the body or state of a project file's entry. A file's
/// content follows the disk and changes through accepted proposals: a body or state a client
/// wrote would be what every later run reads as the file (and its edits would fail 409 until
/// the file changed on disk). A client resolves a proposal by the proposal's own path.
pub fn check_file_change(path: &str, writer: Writer) -> Result<(), StoreError> {
    if writer != Writer::Client || !is_file(path) {
        return Ok(());
    }
    Err(StoreError::Refused(format!(
        "permission denied: a client may not change the body or state of {path}, a project \
         file: files change on disk and through accepted proposals (to accept or reject a \
         proposal, set the proposal's own path to resolved or cancelled)"
    )))
}

/// Fails when a client would change a pending proposal other than by resolving it: its body,
/// its attributes or its state. What it will do is fixed when `run/proposal` announces it; a
/// client resolves it by `set {state}` on its path (accept, reject with a reason, answer),
/// which goes through the resolution, never through here. Its visibility stays a client's to
/// set, as every entry's (it changes nothing of what the proposal does).
pub fn check_proposal_change(row: &ViewRow, writer: Writer) -> Result<(), StoreError> {
    if writer != Writer::Client || !row.is_pending_proposal() {
        return Ok(());
    }
    Err(StoreError::Refused(format!(
        "permission denied: {} is a pending proposal, fixed once announced: a client may \
         resolve it (set its state to resolved or cancelled, with a reason or an answer as the \
         body), never change its body or attributes",
        row.path
    )))
}

fn clean(path: &str) -> Result<String, StoreError> {
    normalize(path).map_err(|err| StoreError::Invalid(err.to_string()))
}

/// One exact entry of the run, or `NotFound`.
pub fn exact(conn: &mut Db, run_id: RunId, path: &str) -> Result<ViewRow, StoreError> {
    entries::by_path(conn, run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))
}

/// Changes of a view and its attributes that need no body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewChange {
    /// New state.
    pub state: Option<State>,
    /// Outcome (with failed/cancelled).
    pub outcome: Option<String>,
    /// New visibility.
    pub visibility: Option<Visibility>,
    /// Attributes merged into the entry's (a `null` value removes the key).
    pub merge: Option<Map<String, Value>>,
}

/// Applies a body-less change to one view, after the writer check.
pub fn change_view(
    conn: &mut Db,
    op: &Op,
    row: &ViewRow,
    change: &ViewChange,
) -> Result<(), StoreError> {
    let now = op.at.now;
    check_writer(&row.path, op.writer)?;
    if change.state.is_some() {
        check_file_change(&row.path, op.writer)?;
    }
    if change.state.is_some() || change.merge.is_some() {
        check_proposal_change(row, op.writer)?;
    }
    let rev = runs::take_rev(conn, op.run.run_id)?;
    let state = change.state.unwrap_or(row.state);
    let outcome = match change.state {
        Some(State::Failed | State::Cancelled) => change.outcome.clone(),
        Some(_) => None,
        None => row.outcome.clone(),
    };
    let visibility = change.visibility.unwrap_or(row.visibility);
    diesel::update(v::table.find(row.view_id))
        .set((
            v::state.eq(state),
            v::outcome.eq(outcome),
            v::visibility.eq(visibility),
            v::rev.eq(rev),
            v::updated_at.eq(now.0),
        ))
        .execute(conn)?;
    if let Some(merge) = &change.merge {
        let mut attributes = row.attributes();
        if let Some(map) = attributes.as_object_mut() {
            for (k, val) in merge {
                if val.is_null() {
                    map.remove(k);
                } else {
                    map.insert(k.clone(), val.clone());
                }
            }
        }
        let entry_id: i32 = v::table.find(row.view_id).select(v::entry_id).first(conn)?;
        diesel::update(e::table.find(entry_id))
            .set((
                e::attributes.eq(attributes.to_string()),
                e::updated_at.eq(now.0),
            ))
            .execute(conn)?;
        // The summary is indexed for recall with the path.
        if recalled(&row.path) {
            super::memory::index(conn, entry_id)?;
        }
    }
    Ok(())
}

/// A client or tool write of one entry's content.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentWrite {
    /// The path (normalised here).
    pub path: String,
    /// The body (or the chunk, when appending).
    pub body: String,
    /// Append to the current body instead of replacing it.
    pub append: bool,
    /// State (default resolved).
    pub state: Option<State>,
    /// Outcome with a failed/cancelled state.
    pub outcome: Option<String>,
    /// Visibility (default: the current one, or visible).
    pub visibility: Option<Visibility>,
    /// Attributes replacing the current ones (default: keep them).
    pub attributes: Option<Map<String, Value>>,
}

/// Writes one entry's body for the run; answers the normalised path.
pub fn write_content(
    conn: &mut Db,
    op: &Op,
    w: &ContentWrite,
    turn: i32,
) -> Result<String, StoreError> {
    let (run, writer, at) = (op.run, op.writer, op.at);
    let path = clean(&w.path)?;
    check_file_change(&path, writer)?;
    let current = entries::by_path(conn, run.run_id, &path)?;
    if let Some(row) = &current {
        check_proposal_change(row, writer)?;
    }
    let body = match (&current, w.append) {
        (Some(row), true) => format!("{}{}", row.body, w.body),
        _ => w.body.clone(),
    };
    let attributes = match (&w.attributes, &current) {
        (Some(map), _) => Value::Object(map.clone()),
        (None, Some(row)) => row.attributes(),
        (None, None) => Value::Object(Map::new()),
    };
    size_gate(op, &path, &body)?;
    let visibility = w
        .visibility
        .or_else(|| current.as_ref().map(|row| row.visibility))
        .unwrap_or(Visibility::Visible);
    let state = w.state.unwrap_or(State::Resolved);
    let outcome = matches!(state, State::Failed | State::Cancelled)
        .then(|| w.outcome.clone())
        .flatten();
    let written = entries::write(
        conn,
        &EntryWrite {
            run,
            path: &path,
            body: &body,
            attributes: &attributes,
            state,
            outcome: outcome.as_deref(),
            visibility,
            loop_id: None,
            turn,
            writer,
        },
        at,
    )?;
    // A loop's facts are indexed when it ends; a client's, written outside loops, at once.
    if recalled(&path) {
        super::memory::index(conn, written.entry_id)?;
    }
    Ok(path)
}

/// Promotes (or sets the visibility of) every selected entry; answers how many.
pub fn get(
    conn: &mut Db,
    op: &Op,
    selection: &Selection,
    visibility: Option<Visibility>,
) -> Result<usize, StoreError> {
    let rows = selection::rows(conn, op.run.run_id, selection)?;
    let change = ViewChange {
        visibility: Some(visibility.unwrap_or(Visibility::Visible)),
        ..ViewChange::default()
    };
    for row in &rows {
        change_view(conn, op, row, &change)?;
    }
    Ok(rows.len())
}

/// Removes the run's views of every selected entry (the entries stay for other runs); answers the paths.
pub fn rm(conn: &mut Db, op: &Op, selection: &Selection) -> Result<Vec<String>, StoreError> {
    let rows = selection::rows(conn, op.run.run_id, selection)?;
    for row in &rows {
        check_writer(&row.path, op.writer)?;
    }
    let ids: Vec<i32> = rows.iter().map(|r| r.view_id).collect();
    diesel::delete(v::table.filter(v::id.eq_any(&ids))).execute(conn)?;
    Ok(rows.into_iter().map(|r| r.path).collect())
}

/// Copies one entry's body and attributes to `to` (the source stays); answers the destination path.
pub fn cp(
    conn: &mut Db,
    op: &Op,
    from: &str,
    to: &str,
    visibility: Option<Visibility>,
) -> Result<String, StoreError> {
    let run = op.run;
    let source = exact(conn, run.run_id, &clean(from)?)?;
    let write = ContentWrite {
        path: to.to_owned(),
        body: source.body.clone(),
        append: false,
        state: None,
        outcome: None,
        visibility,
        attributes: source.attributes().as_object().cloned(),
    };
    let turn = runs::by_id(conn, run.run_id)?.last_turn().max(0);
    write_content(conn, op, &write, turn)
}

/// Moves one entry: copy, then remove the source from the run's view.
pub fn mv(
    conn: &mut Db,
    op: &Op,
    from: &str,
    to: &str,
    visibility: Option<Visibility>,
) -> Result<String, StoreError> {
    let source = clean(from)?;
    check_writer(&source, op.writer)?;
    let dest = cp(conn, op, &source, to, visibility)?;
    if dest != source {
        let row = exact(conn, op.run.run_id, &source)?;
        diesel::delete(v::table.find(row.view_id)).execute(conn)?;
    }
    Ok(dest)
}

/// Writes an `update://` entry with its status; answers its path.
pub fn update(
    conn: &mut Db,
    op: &Op,
    body: &str,
    status: i32,
    attributes: Option<&Map<String, Value>>,
) -> Result<String, StoreError> {
    let run = op.run;
    let turn = runs::by_id(conn, run.run_id)?.last_turn().max(0);
    let path = entries::unique_path(conn, run, &result_path("update", turn, ""))?;
    let mut attrs = attributes.cloned().unwrap_or_default();
    attrs.insert("status".to_owned(), Value::from(status));
    let write = ContentWrite {
        path,
        body: body.to_owned(),
        append: false,
        state: None,
        outcome: None,
        visibility: None,
        attributes: Some(attrs),
    };
    write_content(conn, op, &write, turn)
}
