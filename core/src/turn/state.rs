//! `run/state` payloads (incremental, numbered) and the whole-run snapshot `getRun` returns.
//!
//! Both carry `stopReason` (why the run's last loop ended; `null` while a loop is under way),
//! `route`: the routing decision (`{class, model}`) of the run's
//! current loop — the active one, else the one that ran last — or `null` when
//! that loop was not routed, and `queued`: why a loop of the run waits (`{reason, position}`,
//! TEAM.md §4) — for a place among the runs in flight or under the project's cost ceiling
//! (status 100, given by admission), or behind the run's own running loop (`loop`, status 102
//! or 202, `position` the number of loops queued) — else `null` in `getRun` and left out of
//! `run/state`.

use crate::entry::http_status;
use crate::fair::admission::{QueueReason, Queued};
use crate::provider::routing::Routed;
use crate::run::RunStatus;
use crate::store::entries::{self, ViewRow};
use crate::store::notifications::{self, Recorded};
use crate::store::{loops, runs, turns, StoreError};
use crate::time::Millis;
use diesel::SqliteConnection;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// One history item as clients see it, serialised straight from the row.
#[derive(Serialize)]
struct HistoryItem<'a> {
    path: &'a str,
    tool: &'a str,
    state: &'a str,
    outcome: Option<&'a str>,
    status: i32,
    visibility: &'a str,
    turn: i32,
    tokens: i32,
    /// The stored JSON as it is (it is only checked, not rebuilt).
    attributes: Attributes<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
}

/// Stored attributes: the stored JSON text, or `{}` when the text is not JSON.
enum Attributes<'a> {
    Stored(&'a RawValue),
    Unreadable,
}

impl Serialize for Attributes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Attributes::Stored(raw) => raw.serialize(s),
            Attributes::Unreadable => serde_json::Map::new().serialize(s),
        }
    }
}

impl<'a> HistoryItem<'a> {
    fn of(row: &'a ViewRow, with_body: bool) -> Self {
        let attributes = serde_json::from_str::<&RawValue>(&row.attributes)
            .map_or(Attributes::Unreadable, Attributes::Stored);
        HistoryItem {
            path: &row.path,
            tool: row.tag(),
            state: &row.state,
            outcome: row.outcome.as_deref(),
            status: http_status(row.state(), row.outcome.as_deref()),
            visibility: &row.visibility,
            turn: row.turn,
            tokens: row.tokens,
            attributes,
            body: with_body.then_some(row.body.as_str()),
        }
    }
}

/// An open question as clients see it.
#[derive(Serialize)]
struct UnknownItem<'a> {
    path: &'a str,
    body: &'a str,
}

impl<'a> UnknownItem<'a> {
    fn of(row: &'a ViewRow) -> Self {
        UnknownItem {
            path: &row.path,
            body: &row.body,
        }
    }
}

/// A `run/state` push; `seq` is added when it is recorded.
#[derive(Serialize)]
struct StatePush<'a> {
    run: &'a str,
    turn: i32,
    status: i32,
    summary: &'a str,
    history: Vec<HistoryItem<'a>>,
    unknowns: Vec<UnknownItem<'a>>,
    telemetry: &'a Value,
    route: Option<Routed>,
    #[serde(rename = "stopReason")]
    stop_reason: Option<&'a str>,
    /// Left out unless a loop waits: every push carries it otherwise, and clients parse each.
    #[serde(skip_serializing_if = "Option::is_none")]
    queued: Option<Queued>,
}

/// The routing decision of the run's current loop (the active one, else the one that ran
/// last), as clients see it: read with the run's push marks.
fn route(marks: &runs::PushMarks) -> Option<Routed> {
    marks
        .routed
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
}

/// Why the run's current loop ended, as clients see it: `None` while the run is active (a loop
/// queued, running or waiting on a proposal), and for a loop that ended before reasons were kept.
fn stop_reason(marks: &runs::PushMarks, status: i32) -> Option<&str> {
    let active = RunStatus::try_from(status).is_ok_and(RunStatus::is_active);
    marks.stop_reason.as_deref().filter(|_| !active)
}

/// `queued` of a run with a loop under way: its next loops wait behind it (`position`: how many).
fn behind_own_loop(status: i32, queued_loops: i64) -> Option<Queued> {
    let busy = status == RunStatus::Running.code() || status == RunStatus::Proposed.code();
    let position = u32::try_from(queued_loops).unwrap_or(u32::MAX);
    (busy && position > 0).then_some(Queued {
        reason: QueueReason::Loop,
        position,
    })
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
    push_with(conn, run_id, turn, status, telemetry, None, now)
}

/// A run waits for a place (TEAM.md §4): records when its queued loop `loop_id` began waiting
/// (`since`, unless it already had), makes the run queued (100) and pushes `run/state` with
/// `queued`. Answers the run (as it was before) and the push, or `None` when the loop is no longer queued
/// (it was claimed meanwhile), in which case nothing is written.
pub fn push_queued(
    conn: &mut SqliteConnection,
    run_id: i32,
    loop_id: i32,
    since: Millis,
    queued: Queued,
    now: Millis,
) -> Result<Option<(runs::Run, Recorded)>, StoreError> {
    if !loops::mark_waiting(conn, loop_id, since)? {
        return Ok(None);
    }
    let run = runs::by_id(conn, run_id)?;
    runs::set_status(conn, run_id, RunStatus::Queued, now)?;
    let pushed = push_with(
        conn,
        run_id,
        run.last_turn(),
        RunStatus::Queued.code(),
        Value::Null,
        Some(queued),
        now,
    )?;
    Ok(Some((run, pushed)))
}

/// [`push`], with `queued` when admission holds the run; otherwise `queued` says whether loops
/// wait behind the run's own.
fn push_with(
    conn: &mut SqliteConnection,
    run_id: i32,
    turn: i32,
    status: i32,
    telemetry: Value,
    queued: Option<Queued>,
    now: Millis,
) -> Result<Recorded, StoreError> {
    let run = runs::push_marks(conn, run_id)?;
    let changed = entries::changed_since(conn, run_id, run.pushed_rev)?;
    let unknowns = entries::unknowns(conn, run_id)?;
    let summary = entries::latest_summary(conn, run_id)?;
    let seq = runs::take_push(conn, run_id, run.next_rev - 1)?;
    let params = StatePush {
        run: &run.alias,
        turn,
        status,
        summary: &summary,
        history: changed.iter().map(|r| HistoryItem::of(r, true)).collect(),
        unknowns: unknowns.iter().map(UnknownItem::of).collect(),
        telemetry: &telemetry,
        route: route(&run),
        stop_reason: stop_reason(&run, status),
        queued: queued.or_else(|| behind_own_loop(status, i64::from(run.queued_loops))),
    };
    notifications::record(conn, run_id, seq, "run/state", &params, now)
}

/// The whole state of a run: what `getRun` answers. `queued` here says only whether loops wait
/// behind the run's own; the caller puts in admission's word for a run at 100.
pub fn snapshot(conn: &mut SqliteConnection, run: &runs::Run) -> Result<Value, StoreError> {
    let history = entries::history(conn, run.id)?;
    let unknowns = entries::unknowns(conn, run.id)?;
    let summary = entries::latest_summary(conn, run.id)?;
    let totals = turns::totals(conn, run.id)?;
    let marks = runs::push_marks(conn, run.id)?;
    Ok(json!({
        "run": run.alias,
        "status": run.status,
        "stopReason": stop_reason(&marks, run.status),
        "queued": behind_own_loop(run.status, i64::from(marks.queued_loops)),
        "mode": run.mode,
        "turn": run.last_turn(),
        "model": run.model,
        "route": route(&marks),
        "temperature": run.temperature,
        "persona": run.persona,
        "contextLimit": run.context_limit,
        "summary": summary,
        "history": history.iter().map(|r| HistoryItem::of(r, true)).collect::<Vec<_>>(),
        "unknowns": unknowns.iter().map(UnknownItem::of).collect::<Vec<_>>(),
        "telemetry": totals,
        "lastSeq": run.next_seq - 1,
        "created": Millis(run.created_at).to_rfc3339(),
    }))
}
