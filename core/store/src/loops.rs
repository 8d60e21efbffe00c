//! Loops: the durable FIFO of prompts of a run; at most one is active at a time (the database enforces it).

use super::cached::{cached, Bind, StaticSql};
use super::flags::RunFlags;
use super::{runs, StoreError};
use crate::db::Db;
use crate::ids::{LoopId, RunId};
use crate::run::Mode;
use crate::schema::loops;
use diesel::prelude::*;
use rummy_provider::routing::{self, Routed, RoutingConfig};
use rummy_provider::time::Millis;
use serde_json::{Map, Value};

/// Loop status while it waits in the queue.
pub const QUEUED: i32 = 100;
/// Loop status while it runs.
pub const ACTIVE: i32 = 102;

/// A stored loop.
#[derive(Debug, Clone, PartialEq, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = loops, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Loop {
    /// Primary key.
    pub id: LoopId,
    /// Owning run.
    pub run_id: RunId,
    /// Position in the run's queue.
    pub sequence: i32,
    /// `ask` or `act`.
    pub mode: String,
    /// Model alias used for this loop (the routed one once a routed loop is claimed).
    pub model: String,
    /// The prompt that started it.
    pub prompt: String,
    /// 100 queued, 102 running, else the final status.
    pub status: i32,
    /// Loop flags as a JSON object, and `routed` once routing chose the loop's model.
    pub config: String,
    /// Final result as JSON.
    pub result: Option<String>,
    /// Creation time.
    pub created_at: i64,
    /// Last change.
    pub updated_at: i64,
}

impl Loop {
    /// The loop's mode (`ask` when the stored value is unreadable, the safe choice).
    pub fn mode(&self) -> Mode {
        Mode::parse(&self.mode).unwrap_or(Mode::Ask)
    }

    /// The loop's config as stored: its run's flags and its routing decision.
    pub fn config(&self) -> Value {
        serde_json::from_str(&self.config).unwrap_or(Value::Null)
    }

    /// The loop's flags, copied from its run's when it was queued.
    pub fn flags(&self) -> RunFlags {
        RunFlags::parse(&self.config)
    }

    /// The routing decision made when the loop was claimed, if its run asked for routing.
    pub fn routed(&self) -> Option<Routed> {
        let mut config = self.config();
        serde_json::from_value(config.get_mut(ROUTED)?.take()).ok()
    }
}

/// The key of a loop's config that holds its routing decision.
const ROUTED: &str = "routed";

/// The key of an ended loop's result that holds why it ended ([`crate::run::StopReason`]).
pub const STOP_REASON: &str = "stopReason";

/// Appends a loop to the end of the run's queue.
pub fn enqueue(
    conn: &mut Db,
    run_id: RunId,
    mode: Mode,
    model: &str,
    prompt: &str,
    flags: &RunFlags,
    now: Millis,
) -> Result<Loop, StoreError> {
    let sequence = runs::take_loop_number(conn, run_id)?;
    Ok(
        crate::on_backend!(conn, c => diesel::insert_into(loops::table)
        .values((
            loops::run_id.eq(run_id),
            loops::sequence.eq(sequence),
            loops::mode.eq(mode.as_str()),
            loops::model.eq(model),
            loops::prompt.eq(prompt),
            loops::status.eq(QUEUED),
            loops::config.eq(flags.to_text()),
            loops::created_at.eq(now.0),
            loops::updated_at.eq(now.0),
        ))
        .returning(Loop::as_returning())
        .get_result(c))?,
    )
}

/// Marks the oldest queued loop active and returns it; `None` when the queue is empty.
pub fn claim_next(conn: &mut Db, run_id: RunId, now: Millis) -> Result<Option<Loop>, StoreError> {
    let next = cached::<NextQueued>(&[Bind::Int(run_id.0)])
        .get_result::<Loop>(conn)
        .optional()?;
    let Some(next) = next else { return Ok(None) };
    cached::<Claim>(&[Bind::Int(ACTIVE), Bind::Big(now.0), Bind::Int(next.id.0)]).execute(conn)?;
    Ok(Some(Loop {
        status: ACTIVE,
        updated_at: now.0,
        ..next
    }))
}

// Every loop runs these: kept prepared (see `cached`).

/// The run's next queued loop. The status is spelled out, not bound: SQLite checks a bound
/// value against the partial index `loops_one_active_per_run` (`status = 102`) when it plans
/// the statement, and a statement planned on a bound value is planned again at every bind.
struct NextQueued;
impl StaticSql for NextQueued {
    const SQL: &'static str =
        "SELECT * FROM loops WHERE run_id = ? AND status = 100 ORDER BY sequence LIMIT 1";
}
const _: () = assert!(QUEUED == 100, "NextQueued spells QUEUED out");

struct Claim;
impl StaticSql for Claim {
    const SQL: &'static str = "UPDATE loops SET status = ?, updated_at = ? WHERE id = ?";
}

struct Finish;
impl StaticSql for Finish {
    const SQL: &'static str =
        "UPDATE loops SET status = ?, result = ?, updated_at = ? WHERE id = ?";
}

/// Routes a just-claimed loop whose flags ask for it (`route: true`): classifies
/// its prompt and records the class and the model — the class's mapped alias,
/// or the loop's own model — in the same row, so every turn of the loop, and a
/// restore after a restart, use that model. A loop already routed keeps its
/// decision; a loop that did not ask is returned unchanged.
pub fn route(
    conn: &mut Db,
    loop_row: Loop,
    routing: &RoutingConfig,
    now: Millis,
) -> Result<Loop, StoreError> {
    if !loop_row.flags().routes() || loop_row.routed().is_some() {
        return Ok(loop_row);
    }
    let mut config = match loop_row.config() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let routed = routing::decide(&loop_row.prompt, &loop_row.model, routing);
    config.insert(ROUTED.to_owned(), serde_json::to_value(&routed)?);
    Ok(
        crate::on_backend!(conn, c => diesel::update(loops::table.find(loop_row.id))
        .set((
            loops::model.eq(&routed.model),
            loops::config.eq(Value::Object(config).to_string()),
            loops::updated_at.eq(now.0),
        ))
        .returning(Loop::as_returning())
        .get_result(c))?,
    )
}

/// The loop `loop_id`.
pub fn by_id(conn: &mut Db, loop_id: LoopId) -> Result<Loop, StoreError> {
    loops::table
        .find(loop_id)
        .select(Loop::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("loop {loop_id} not found")))
}

/// The run's active loop, if any.
pub fn active(conn: &mut Db, run_id: RunId) -> Result<Option<Loop>, StoreError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(ACTIVE))
        .select(Loop::as_select())
        .first(conn)
        .optional()?)
}

/// The run's next queued loop and when it began waiting for a place (`None`: it has not
/// waited), if a loop is queued: what a run asks admission with.
pub fn next_queued(
    conn: &mut Db,
    run_id: RunId,
) -> Result<Option<(LoopId, Option<Millis>)>, StoreError> {
    let next: Option<(LoopId, Option<i64>)> = loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(QUEUED))
        .order(loops::sequence.asc())
        .select((loops::id, loops::waiting_since))
        .first(conn)
        .optional()?;
    Ok(next.map(|(id, since)| (id, since.map(Millis))))
}

/// Records when the queued loop `loop_id` began waiting for a place, unless it already was;
/// answers whether the loop is still queued.
pub fn mark_waiting(conn: &mut Db, loop_id: LoopId, since: Millis) -> Result<bool, StoreError> {
    diesel::update(
        loops::table
            .find(loop_id)
            .filter(loops::status.eq(QUEUED))
            .filter(loops::waiting_since.is_null()),
    )
    .set(loops::waiting_since.eq(since.0))
    .execute(conn)?;
    Ok(diesel::select(diesel::dsl::exists(
        loops::table.find(loop_id).filter(loops::status.eq(QUEUED)),
    ))
    .get_result(conn)?)
}

/// The run's queued loops, oldest first.
pub fn queued_ids(conn: &mut Db, run_id: RunId) -> Result<Vec<LoopId>, StoreError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(QUEUED))
        .order(loops::sequence.asc())
        .select(loops::id)
        .load(conn)?)
}

/// How many loops wait in the run's queue.
pub fn queued(conn: &mut Db, run_id: RunId) -> Result<i64, StoreError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(QUEUED))
        .count()
        .get_result(conn)?)
}

/// Ends a loop with its final status and result.
pub fn finish(
    conn: &mut Db,
    loop_id: LoopId,
    status: i32,
    result: &Value,
    now: Millis,
) -> Result<(), StoreError> {
    let result = result.to_string();
    cached::<Finish>(&[
        Bind::Int(status),
        Bind::Text(&result),
        Bind::Big(now.0),
        Bind::Int(loop_id.0),
    ])
    .execute(conn)?;
    Ok(())
}
