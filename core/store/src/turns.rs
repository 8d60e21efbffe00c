//! Turns: one model call each, numbered per run, with the provider's usage figures.

use super::cached::{cached, Bind, StaticSql};
use super::usage::{usage_of, UsageSums};
use super::{runs, StoreError};
use crate::db::Db;
use crate::ids::{LoopId, RunId, TurnId};
use crate::schema::turns;
use diesel::dsl::sum;
use diesel::prelude::*;
use rummy_provider::time::Millis;
use rummy_provider::Usage;

/// Turn status while it runs.
pub const RUNNING: i32 = 102;
/// Turn status once its reply was recorded and dispatched.
pub const DONE: i32 = 200;
/// Turn status when it failed or was interrupted.
pub const FAILED: i32 = 500;

/// A stored turn.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = turns, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Turn {
    /// Primary key.
    pub id: TurnId,
    /// Owning run.
    pub run_id: RunId,
    /// Owning loop.
    pub loop_id: LoopId,
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

/// Starts the next turn of the run inside `loop_id`.
pub fn begin(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
    now: Millis,
) -> Result<Turn, StoreError> {
    let sequence = runs::take_turn_number(conn, run_id)?;
    cached::<InsertTurn>(&[
        Bind::Int(run_id.0),
        Bind::Int(loop_id.0),
        Bind::Int(sequence),
        Bind::Int(RUNNING),
        Bind::Big(now.0),
        Bind::Big(now.0),
    ])
    .execute(conn)?;
    let id = TurnId(cached::<LastId>(&[]).get_result::<Id>(conn)?.id);
    Ok(Turn {
        id,
        run_id,
        loop_id,
        sequence,
        status: RUNNING,
        context_tokens: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        completion_tokens: 0,
        reasoning_tokens: 0,
        total_tokens: 0,
        cost: 0.0,
        reasoning_content: None,
        created_at: now.0,
        updated_at: now.0,
    })
}

// Every turn runs these: kept prepared (see `cached`).
struct InsertTurn;
impl StaticSql for InsertTurn {
    const SQL: &'static str = "INSERT INTO turns \
        (run_id, loop_id, sequence, status, created_at, updated_at) \
        VALUES (?, ?, ?, ?, ?, ?)";
}

/// The row just inserted (no `RETURNING`: SQLite builds a temporary b-tree for it each call).
/// On PostgreSQL the last value this session took from a sequence: the turn's identity (no
/// trigger on `turns` takes another).
struct LastId;
impl StaticSql for LastId {
    const SQL: &'static str = "SELECT last_insert_rowid() AS id";
    const PG: &'static str = "SELECT CAST(lastval() AS INTEGER) AS id";
}

struct RecordUsage;
impl StaticSql for RecordUsage {
    const SQL: &'static str = "UPDATE turns SET context_tokens = ?, prompt_tokens = ?, \
        cached_tokens = ?, completion_tokens = ?, reasoning_tokens = ?, total_tokens = ?, \
        cost = ?, reasoning_content = ?, updated_at = ? WHERE id = ?";
}

struct Finish;
impl StaticSql for Finish {
    const SQL: &'static str = "UPDATE turns SET status = ?, updated_at = ? WHERE id = ?";
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    id: i32,
}

/// Stores the provider's usage and the reasoning text for a turn.
pub fn record_usage(
    conn: &mut Db,
    turn_id: TurnId,
    context_tokens: i32,
    usage: &Usage,
    reasoning: Option<&str>,
    now: Millis,
) -> Result<(), StoreError> {
    cached::<RecordUsage>(&[
        Bind::Int(context_tokens.max(0)),
        Bind::Int(usage.prompt_tokens.max(0)),
        Bind::Int(usage.cached_tokens.max(0)),
        Bind::Int(usage.completion_tokens.max(0)),
        Bind::Int(usage.reasoning_tokens.max(0)),
        Bind::Int(usage.total_tokens.max(0)),
        Bind::Double(usage.cost.max(0.0)),
        Bind::OptText(reasoning),
        Bind::Big(now.0),
        Bind::Int(turn_id.0),
    ])
    .execute(conn)?;
    Ok(())
}

/// Sets a turn's final status.
pub fn finish(conn: &mut Db, turn_id: TurnId, status: i32, now: Millis) -> Result<(), StoreError> {
    cached::<Finish>(&[Bind::Int(status), Bind::Big(now.0), Bind::Int(turn_id.0)]).execute(conn)?;
    Ok(())
}

/// Turns a crash left running: the loop's latest turn still at 102. The run narrows the search
/// to its own turns (the `(run_id, sequence)` key); `loop_id` alone has no index.
pub fn running_in_loop(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
) -> Result<Option<Turn>, StoreError> {
    Ok(turns::table
        .filter(turns::run_id.eq(run_id))
        .filter(turns::loop_id.eq(loop_id))
        .filter(turns::status.eq(RUNNING))
        .order(turns::sequence.desc())
        .select(Turn::as_select())
        .first(conn)
        .optional()?)
}

/// Whether the loop has begun a turn (its first turn records the loop's prompt).
pub fn any_in_loop(conn: &mut Db, run_id: RunId, loop_id: LoopId) -> Result<bool, StoreError> {
    Ok(diesel::select(diesel::dsl::exists(
        turns::table
            .filter(turns::run_id.eq(run_id))
            .filter(turns::loop_id.eq(loop_id)),
    ))
    .get_result(conn)?)
}

/// The run's usage summed over all its turns and the side tasks they made (the sidecar's
/// calls count in the run's tokens and cost like its turns').
pub fn totals(conn: &mut Db, run_id: RunId) -> Result<Usage, StoreError> {
    let turns = turn_totals(conn, run_id)?;
    let side = super::sidecar_calls::totals(conn, run_id)?;
    Ok(Usage {
        prompt_tokens: turns.prompt_tokens.saturating_add(side.prompt_tokens),
        cached_tokens: turns.cached_tokens.saturating_add(side.cached_tokens),
        completion_tokens: turns
            .completion_tokens
            .saturating_add(side.completion_tokens),
        reasoning_tokens: turns.reasoning_tokens.saturating_add(side.reasoning_tokens),
        total_tokens: turns.total_tokens.saturating_add(side.total_tokens),
        cost: turns.cost + side.cost,
    })
}

/// The run's usage summed over its turns' own calls.
fn turn_totals(conn: &mut Db, run_id: RunId) -> Result<Usage, StoreError> {
    let sums: UsageSums = turns::table
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
    Ok(usage_of(sums))
}

/// The last turn of the run with both counts known: (the prompt tokens its provider reported,
/// the tokens estimated of what was sent).
pub fn last_measured(conn: &mut Db, run_id: RunId) -> Result<Option<(i32, i32)>, StoreError> {
    Ok(turns::table
        .filter(turns::run_id.eq(run_id))
        .filter(turns::prompt_tokens.gt(0))
        .filter(turns::context_tokens.gt(0))
        .order(turns::sequence.desc())
        .select((turns::prompt_tokens, turns::context_tokens))
        .first(conn)
        .optional()?)
}

/// A turn's id and the token counts its provider reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnTokens {
    /// The turn's id.
    pub id: TurnId,
    /// Prompt tokens.
    pub prompt: i32,
    /// Completion tokens.
    pub completion: i32,
    /// Total tokens.
    pub total: i32,
}

/// The id and reported token counts of turn `sequence` of the run; an error if there is none.
pub fn tokens_of(conn: &mut Db, run_id: RunId, sequence: i32) -> Result<TurnTokens, StoreError> {
    let (id, prompt, completion, total) = turns::table
        .filter(turns::run_id.eq(run_id))
        .filter(turns::sequence.eq(sequence))
        .select((
            turns::id,
            turns::prompt_tokens,
            turns::completion_tokens,
            turns::total_tokens,
        ))
        .first(conn)?;
    Ok(TurnTokens {
        id,
        prompt,
        completion,
        total,
    })
}
