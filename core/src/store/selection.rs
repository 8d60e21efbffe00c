//! What a client's pattern call (`get`, `rm`, `set` on every match) changes, chosen in two
//! steps so a body filter never runs on the store's writer: [`choose`] judges the filter on a
//! read connection, [`rows`] reads the chosen views fresh inside the write.

use super::entries::{self, ViewRow};
use super::{ops, StoreError};
use crate::db::Db;
use crate::ids::RunId;
use crate::path::normalize;
use crate::schema::{entries as e, run_views as v};
use diesel::prelude::*;

/// The views a pattern call changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every view whose path matches this normalised pattern, matched inside the write
    /// (a path pattern is cheap and judges only short paths).
    Pattern(String),
    /// These views, chosen by a body filter before the write; one removed since is left out.
    Views(Vec<i32>),
}

impl Selection {
    /// Every match of `pattern`, without a body filter.
    pub fn pattern(pattern: &str) -> Result<Selection, StoreError> {
        normalize(pattern)
            .map(Selection::Pattern)
            .map_err(|err| StoreError::Invalid(err.to_string()))
    }
}

/// Chooses the run's views that `pattern` and `body_filter` select. With a body filter the
/// filter runs here, on `conn`: call it on a read connection, off the writer, so a slow or
/// refused filter delays only its own call.
pub fn choose(
    conn: &mut Db,
    run_id: RunId,
    pattern: &str,
    body_filter: Option<&str>,
) -> Result<Selection, StoreError> {
    let selection = Selection::pattern(pattern)?;
    let (Selection::Pattern(pattern), Some(filter)) = (&selection, body_filter) else {
        return Ok(selection);
    };
    let rows = ops::matching(conn, run_id, pattern, Some(filter))?;
    Ok(Selection::Views(
        rows.into_iter().map(|r| r.view_id).collect(),
    ))
}

/// The run's views `selection` names, as they are now on `conn`, oldest first.
pub fn rows(
    conn: &mut Db,
    run_id: RunId,
    selection: &Selection,
) -> Result<Vec<ViewRow>, StoreError> {
    match selection {
        Selection::Pattern(pattern) => ops::matching(conn, run_id, pattern, None),
        Selection::Views(ids) => Ok(v::table
            .inner_join(e::table)
            .filter(v::run_id.eq(run_id))
            .filter(v::id.eq_any(ids))
            .order(v::id.asc())
            .select(entries::VIEW_COLUMNS)
            .load(conn)?),
    }
}
