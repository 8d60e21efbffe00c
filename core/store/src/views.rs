//! A run's views on their own: the changes that touch only `run_views` (visibility, the turn, removal) and the look-ups of views by state or turn that the turn's steps make.
//!
//! Entries with their views — the write path, a run's context, listings and history — are
//! `store::entries`; these are the statements that change a view without its entry, or find
//! views for one step's decision.

use super::entries::{ViewRow, VIEW_COLUMNS};
use super::{runs, StoreError};
use crate::db::Db;
use crate::entry::{Scope, State, Visibility};
use crate::ids::{LoopId, ProjectId, RunId};
use crate::schema::{entries, run_views};
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// The scheme and token count of every view of the run written at revision `rev` or later.
pub fn tokens_since(
    conn: &mut Db,
    run_id: RunId,
    rev: i32,
) -> Result<Vec<(Option<String>, i32)>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::rev.ge(rev))
        .select((entries::scheme, entries::tokens))
        .load(conn)?)
}

/// Makes each of the views `view_ids` of the run `visibility`, each at a revision of its own.
pub fn set_visibility_each(
    conn: &mut Db,
    run_id: RunId,
    view_ids: &[i32],
    visibility: Visibility,
    now: Millis,
) -> Result<(), StoreError> {
    for id in view_ids {
        let rev = runs::take_rev(conn, run_id)?;
        diesel::update(run_views::table.find(id))
            .set((
                run_views::visibility.eq(visibility),
                run_views::rev.eq(rev),
                run_views::updated_at.eq(now.0),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// Makes the views `view_ids` of the run `visibility`, all at revision `rev` (one change).
pub fn set_visibility_at(
    conn: &mut Db,
    run_id: RunId,
    view_ids: &[i32],
    visibility: Visibility,
    rev: i32,
    now: Millis,
) -> Result<(), StoreError> {
    diesel::update(
        run_views::table
            .filter(run_views::run_id.eq(run_id))
            .filter(run_views::id.eq_any(view_ids)),
    )
    .set((
        run_views::visibility.eq(visibility),
        run_views::rev.eq(rev),
        run_views::updated_at.eq(now.0),
    ))
    .execute(conn)?;
    Ok(())
}

/// The views of turn `turn` of the run that Turn Demotion may summarize: visible, neither
/// proposals nor failed or cancelled (except a command's output channels, whatever their
/// state), and not updates, errors, budget notes, prompts or the run's summary.
type Demotable = diesel::helper_types::IntoBoxed<
    'static,
    diesel::helper_types::InnerJoin<run_views::table, entries::table>,
    crate::db::MultiBackend,
>;

fn demotable(conn: &Db, run_id: RunId, turn: i32) -> Demotable {
    let channel = match conn {
        Db::Sqlite(_) => "json_extract(entries.attributes, '$.channel') IS NOT NULL",
        Db::Pg(_) => "(entries.attributes::json ->> 'channel') IS NOT NULL",
    };
    run_views::table
        .inner_join(entries::table)
        .into_boxed()
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::turn.eq(turn))
        .filter(run_views::visibility.eq(Visibility::Visible))
        .filter(run_views::state.ne(State::Proposed))
        .filter(
            run_views::state
                .ne_all([State::Failed, State::Cancelled])
                // A command's output channel (Turn Demotion is rare: the fragment may be
                // prepared each time).
                .or(diesel::dsl::sql::<diesel::sql_types::Bool>(channel)),
        )
        .filter(
            entries::scheme
                .ne_all(["update", "error", "budget", "prompt", "summary"])
                .or(entries::scheme.is_null()),
        )
}

/// What Turn Demotion may summarize of turn `turn` of the run (see [`Demotable`]): (view id,
/// full tokens).
pub fn demotable_in_turn(
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
) -> Result<Vec<(i32, i32)>, StoreError> {
    Ok(demotable(conn, run_id, turn)
        .select((run_views::id, entries::tokens))
        .load(conn)?)
}

/// The rows Turn Demotion may summarize of turn `turn` of the run, with their bodies: what
/// summarisation folds into the run's summary before they leave the model's view.
pub fn demotable_rows_in_turn(
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
) -> Result<Vec<ViewRow>, StoreError> {
    Ok(demotable(conn, run_id, turn)
        .select(VIEW_COLUMNS)
        .load(conn)?)
}

/// The run's views in state `proposed`, newest first.
pub fn proposed(conn: &mut Db, run_id: RunId) -> Result<Vec<ViewRow>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::state.eq(State::Proposed))
        .order(run_views::id.desc())
        .select(VIEW_COLUMNS)
        .load(conn)?)
}

/// The loop the view `view_id` was last written in (`None` outside loops); an error if there
/// is no such view.
pub fn loop_of(conn: &mut Db, view_id: i32) -> Result<Option<LoopId>, StoreError> {
    Ok(run_views::table
        .find(view_id)
        .select(run_views::loop_id)
        .first(conn)?)
}

/// Removes the view `view_id` (its entry stays for the runs that share it).
pub fn remove(conn: &mut Db, view_id: i32) -> Result<(), StoreError> {
    diesel::delete(run_views::table.find(view_id)).execute(conn)?;
    Ok(())
}

/// The run's `search://` results still waiting for their backend, and its `get://` results
/// still waiting for a web page: (path, turn).
pub fn asked_in_flight(conn: &mut Db, run_id: RunId) -> Result<Vec<(String, i32)>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(entries::scope.eq(Scope::Run(run_id).key()))
        .filter(entries::scheme.eq_any(["search", "get"]))
        .filter(run_views::state.eq(State::Streaming))
        .select((entries::path, run_views::turn))
        .load(conn)?)
}

/// The `sh`/`env` entries turn `turn` of the run wrote (the commands it proposed).
pub fn commands_of_turn(
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
) -> Result<Vec<ViewRow>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::turn.eq(turn))
        .filter(entries::scheme.eq_any(["sh", "env"]))
        .select(VIEW_COLUMNS)
        .load(conn)?)
}

/// Every `sh`/`env` view still streaming, of every run: (run, project, path), oldest first.
pub fn streaming_commands(conn: &mut Db) -> Result<Vec<(RunId, ProjectId, String)>, StoreError> {
    use crate::schema::runs;
    Ok(run_views::table
        .inner_join(entries::table)
        .inner_join(runs::table.on(runs::id.eq(run_views::run_id)))
        .filter(entries::scheme.eq_any(["sh", "env"]))
        .filter(run_views::state.eq(State::Streaming))
        .select((run_views::run_id, runs::project_id, entries::path))
        .order(run_views::id)
        .load(conn)?)
}

/// Removes the views `view_ids` (their entries stay for the runs that share them).
pub fn remove_all(conn: &mut Db, view_ids: &[i32]) -> Result<(), StoreError> {
    diesel::delete(run_views::table.filter(run_views::id.eq_any(view_ids))).execute(conn)?;
    Ok(())
}

/// Dates the views `view_ids` to turn `turn` (their revision and state stay).
pub fn set_turn(conn: &mut Db, view_ids: &[i32], turn: i32) -> Result<(), StoreError> {
    diesel::update(run_views::table.filter(run_views::id.eq_any(view_ids)))
        .set(run_views::turn.eq(turn))
        .execute(conn)?;
    Ok(())
}
