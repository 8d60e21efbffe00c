//! Turns: one model call each, numbered per run, with the provider's usage figures.

use super::{runs, StoreError};
use crate::schema::turns;
use crate::time::Millis;
use diesel::dsl::sum;
use diesel::prelude::*;
use serde::Serialize;

/// Turn status while it runs.
pub const RUNNING: i32 = 102;
/// Turn status once its reply was recorded and dispatched.
pub const DONE: i32 = 200;
/// Turn status when it failed or was interrupted.
pub const FAILED: i32 = 500;

/// A stored turn.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = turns, check_for_backend(diesel::sqlite::Sqlite))]
pub struct Turn {
    /// Primary key.
    pub id: i32,
    /// Owning run.
    pub run_id: i32,
    /// Owning loop.
    pub loop_id: i32,
    /// Turn number in the run.
    pub sequence: i32,
    /// 102 running, 200 done, 500 failed.
    pub status: i32,
    /// Tokens of the context sent.
    pub context_tokens: i32,
    /// Provider-reported prompt tokens.
    pub prompt_tokens: i32,
    /// Provider-reported cached prompt tokens.
    pub cached_tokens: i32,
    /// Provider-reported completion tokens.
    pub completion_tokens: i32,
    /// Provider-reported reasoning tokens.
    pub reasoning_tokens: i32,
    /// Provider-reported total.
    pub total_tokens: i32,
    /// Cost in USD.
    pub cost: f64,
    /// Reasoning text.
    pub reasoning_content: Option<String>,
    /// Start time.
    pub created_at: i64,
    /// Last change.
    pub updated_at: i64,
}

/// Token usage and cost of one call, or of a run so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: i32,
    /// Cached prompt tokens.
    pub cached_tokens: i32,
    /// Completion tokens.
    pub completion_tokens: i32,
    /// Reasoning tokens.
    pub reasoning_tokens: i32,
    /// Total tokens.
    pub total_tokens: i32,
    /// Cost in USD.
    pub cost: f64,
}

/// Starts the next turn of the run inside `loop_id`.
pub fn begin(
    conn: &mut SqliteConnection,
    run_id: i32,
    loop_id: i32,
    now: Millis,
) -> Result<Turn, StoreError> {
    let sequence = runs::take_turn_number(conn, run_id)?;
    Ok(diesel::insert_into(turns::table)
        .values((
            turns::run_id.eq(run_id),
            turns::loop_id.eq(loop_id),
            turns::sequence.eq(sequence),
            turns::status.eq(RUNNING),
            turns::created_at.eq(now.0),
            turns::updated_at.eq(now.0),
        ))
        .returning(Turn::as_returning())
        .get_result(conn)?)
}

/// Stores the provider's usage and the reasoning text for a turn.
pub fn record_usage(
    conn: &mut SqliteConnection,
    turn_id: i32,
    context_tokens: i32,
    usage: &Usage,
    reasoning: Option<&str>,
    now: Millis,
) -> Result<(), StoreError> {
    diesel::update(turns::table.find(turn_id))
        .set((
            turns::context_tokens.eq(context_tokens.max(0)),
            turns::prompt_tokens.eq(usage.prompt_tokens.max(0)),
            turns::cached_tokens.eq(usage.cached_tokens.max(0)),
            turns::completion_tokens.eq(usage.completion_tokens.max(0)),
            turns::reasoning_tokens.eq(usage.reasoning_tokens.max(0)),
            turns::total_tokens.eq(usage.total_tokens.max(0)),
            turns::cost.eq(usage.cost.max(0.0)),
            turns::reasoning_content.eq(reasoning),
            turns::updated_at.eq(now.0),
        ))
        .execute(conn)?;
    Ok(())
}

/// Sets a turn's final status.
pub fn finish(
    conn: &mut SqliteConnection,
    turn_id: i32,
    status: i32,
    now: Millis,
) -> Result<(), StoreError> {
    diesel::update(turns::table.find(turn_id))
        .set((turns::status.eq(status), turns::updated_at.eq(now.0)))
        .execute(conn)?;
    Ok(())
}

/// Turns a crash left running: the loop's latest turn still at 102.
pub fn running_in_loop(
    conn: &mut SqliteConnection,
    loop_id: i32,
) -> Result<Option<Turn>, StoreError> {
    Ok(turns::table
        .filter(turns::loop_id.eq(loop_id))
        .filter(turns::status.eq(RUNNING))
        .order(turns::sequence.desc())
        .select(Turn::as_select())
        .first(conn)
        .optional()?)
}

/// The run's usage summed over all its turns.
pub fn totals(conn: &mut SqliteConnection, run_id: i32) -> Result<Usage, StoreError> {
    type Sums = (
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<f64>,
    );
    let (p, c, co, r, t, cost): Sums = turns::table
        .filter(turns::run_id.eq(run_id))
        .select((
            sum(turns::prompt_tokens),
            sum(turns::cached_tokens),
            sum(turns::completion_tokens),
            sum(turns::reasoning_tokens),
            sum(turns::total_tokens),
            sum(turns::cost),
        ))
        .first(conn)?;
    let clamp = |v: Option<i64>| i32::try_from(v.unwrap_or(0)).unwrap_or(i32::MAX);
    Ok(Usage {
        prompt_tokens: clamp(p),
        cached_tokens: clamp(c),
        completion_tokens: clamp(co),
        reasoning_tokens: clamp(r),
        total_tokens: clamp(t),
        cost: cost.unwrap_or(0.0),
    })
}
