//! `run/state` payloads (incremental, numbered) and the whole-run snapshot `getRun` returns.
//!
//! Both carry `route`: the routing decision (`{class, model}`) of the run's
//! current loop — the active one, else the one that ran last — or `null` when
//! that loop was not routed.

use crate::entry::http_status;
use crate::store::entries::{self, ViewRow};
use crate::store::notifications::{self, Recorded};
use crate::store::{loops, runs, turns, StoreError};
use crate::time::Millis;
use diesel::SqliteConnection;
use serde_json::{json, Value};

/// One history item as clients see it.
pub fn history_item(row: &ViewRow, with_body: bool) -> Value {
    let mut item = json!({
        "path": row.path,
        "tool": row.tag(),
        "state": row.state,
        "outcome": row.outcome,
        "status": http_status(row.state(), row.outcome.as_deref()),
        "visibility": row.visibility,
        "turn": row.turn,
        "tokens": row.tokens,
        "attributes": row.attributes(),
    });
    if with_body {
        item["body"] = Value::from(row.body.clone());
    }
    item
}

/// The routing decision of the run's current loop, as clients see it.
fn route(conn: &mut SqliteConnection, run_id: i32) -> Result<Value, StoreError> {
    let routed = loops::current(conn, run_id)?.and_then(|l| l.routed());
    Ok(serde_json::to_value(routed).unwrap_or(Value::Null))
}

fn unknown_items(rows: &[ViewRow]) -> Vec<Value> {
    rows.iter()
        .map(|r| json!({ "path": r.path, "body": r.body }))
        .collect()
}

/// Builds, numbers and stores a `run/state` push holding the entries changed since the previous push; returns its params.
///
/// `status` is the run's wire status; `telemetry` is `null` mid-turn.
pub fn push(
    conn: &mut SqliteConnection,
    run_id: i32,
    turn: i32,
    status: i32,
    telemetry: Value,
    now: Millis,
) -> Result<Recorded, StoreError> {
    let run = runs::push_marks(conn, run_id)?;
    let changed = entries::changed_since(conn, run_id, run.pushed_rev)?;
    let unknowns = entries::unknowns(conn, run_id)?;
    let summary = entries::latest_summary(conn, run_id)?;
    runs::mark_pushed(conn, run_id, run.next_rev - 1)?;
    let params = json!({
        "run": run.alias,
        "turn": turn,
        "status": status,
        "summary": summary,
        "history": changed.iter().map(|r| history_item(r, true)).collect::<Vec<_>>(),
        "unknowns": unknown_items(&unknowns),
        "telemetry": telemetry,
        "route": route(conn, run_id)?,
    });
    notifications::record(conn, run_id, "run/state", params, now)
}

/// The whole state of a run: what `getRun` answers.
pub fn snapshot(conn: &mut SqliteConnection, run: &runs::Run) -> Result<Value, StoreError> {
    let history = entries::history(conn, run.id)?;
    let unknowns = entries::unknowns(conn, run.id)?;
    let summary = entries::latest_summary(conn, run.id)?;
    let totals = turns::totals(conn, run.id)?;
    Ok(json!({
        "run": run.alias,
        "status": run.status,
        "turn": run.last_turn(),
        "model": run.model,
        "route": route(conn, run.id)?,
        "temperature": run.temperature,
        "persona": run.persona,
        "contextLimit": run.context_limit,
        "summary": summary,
        "history": history.iter().map(|r| history_item(r, true)).collect::<Vec<_>>(),
        "unknowns": unknown_items(&unknowns),
        "telemetry": totals,
        "lastSeq": run.next_seq - 1,
        "created": Millis(run.created_at).to_rfc3339(),
    }))
}
