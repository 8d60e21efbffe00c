//! What session state (`crate::session_state`) reads of a run: its turns and the prompts and
//! results its loops wrote since a given turn.

use super::entries::{ViewRow, VIEW_COLUMNS};
use super::StoreError;
use crate::db::Db;
use crate::ids::{LoopId, RunId};
use crate::schema::{entries, run_views, turns};
use diesel::dsl::count_star;
use diesel::prelude::*;

/// The schemes whose entries tell what a run did: its prompts, its commands' results and its
/// errors (never the audit trail, whose bodies are whole prompts).
pub const ACTIVITY_SCHEMES: &[&str] = &[
    "prompt", "get", "search", "env", "think", "set", "cp", "mv", "rm", "sh", "update", "ask_user",
    "error",
];

/// The run's last turn: its loop and number; `None` before its first turn.
pub fn last_turn(conn: &mut Db, run_id: RunId) -> Result<Option<(LoopId, i32)>, StoreError> {
    Ok(turns::table
        .filter(turns::run_id.eq(run_id))
        .order(turns::sequence.desc())
        .select((turns::loop_id, turns::sequence))
        .first(conn)
        .optional()?)
}

/// How many turns the run began after turn `since`.
pub fn turns_since(conn: &mut Db, run_id: RunId, since: i32) -> Result<u32, StoreError> {
    let n: i64 = turns::table
        .filter(turns::run_id.eq(run_id))
        .filter(turns::sequence.gt(since))
        .select(count_star())
        .first(conn)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The run's prompts, results and errors written after turn `since`, in the order they were
/// written.
pub fn activity_since(
    conn: &mut Db,
    run_id: RunId,
    since: i32,
) -> Result<Vec<ViewRow>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::turn.gt(since))
        .filter(entries::scheme.eq_any(ACTIVITY_SCHEMES))
        .order((run_views::turn.asc(), run_views::id.asc()))
        .select(VIEW_COLUMNS)
        .load(conn)?)
}
