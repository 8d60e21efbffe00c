//! `run/state` payloads (incremental, numbered) and the whole-run snapshot `getRun` returns.
//!
//! `getRun` also carries `recall`: what the current loop's first turn recalled and why (the
//! attributes of its `recall://<loop>` entry), `null` when it recalled nothing.
//!
//! Both carry `stopReason` (why the run's last loop ended; `null` while a loop is under way),
//! `route`: the routing decision (`{class, model}`) of the run's
//! current loop — the active one, else the one that ran last — or `null` when
//! that loop was not routed, and `queued`: why a loop of the run waits (`{reason, position}`,
//! TEAM.md §4) — for a place among the runs in flight or under the project's cost ceiling
//! (status 100, given by admission), or behind the run's own running loop (`loop`, status 102
//! or 202, `position` the number of loops queued) — else `null` in `getRun` and left out of
//! `run/state`.

use crate::db::Db;
use crate::fair::admission::{QueueReason, Queued};
use crate::ids::{LoopId, RunId};
use crate::provider::routing::Routed;
use crate::run::RunStatus;
use crate::store::entries::{self, RunRef};
use crate::store::notifications::{self, Recorded};
use crate::store::{loops, memory, runs, turns, StoreError};
use crate::time::Millis;
use crate::wire::params::HistoryPage;
use crate::wire::state::{HistoryItem, Snapshot, StatePush, UnknownItem};
use rummy_protocol::results::{MissedNotification, Recall};
use serde_json::Value;

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

/// `queued` of a run with loops waiting behind its own (`position`: how many): one under way,
/// or one that just ended while the next is not claimed yet (so a client following the run
/// knows another loop comes). A run at 100 says why in its own `queued`.
fn behind_own_loop(status: i32, queued_loops: i64) -> Option<Queued> {
    let waiting = status != RunStatus::Queued.code();
    let position = u32::try_from(queued_loops).unwrap_or(u32::MAX);
    (waiting && position > 0).then_some(Queued {
        reason: QueueReason::Loop,
        position,
    })
}

/// Builds, numbers and stores a `run/state` push holding the entries changed since the previous push; returns its params.
///
/// `status` is the run's wire status; `telemetry` is `null` mid-turn.
pub fn push(
    conn: &mut Db,
    run_id: RunId,
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
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
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
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
    status: i32,
    telemetry: Value,
    queued: Option<Queued>,
    now: Millis,
) -> Result<Recorded, StoreError> {
    let run = runs::push_marks(conn, run_id)?;
    let changed = entries::changed_since(conn, run_id, run.pushed_rev)?;
    let unknowns = entries::unknowns(
        conn,
        RunRef {
            run_id,
            project_id: crate::ids::ProjectId(run.project_id),
        },
        run.project_questions > 0,
    )?;
    let summary = entries::latest_summary(conn, run_id)?;
    let seq = runs::take_push(conn, run_id, run.next_rev - 1)?;
    let params = StatePush {
        run: &run.alias,
        turn,
        status,
        summary: &summary,
        history: changed.iter().map(HistoryItem::of).collect(),
        unknowns: unknowns.iter().map(UnknownItem::of).collect(),
        telemetry: &telemetry,
        route: route(&run),
        stop_reason: stop_reason(&run, status),
        queued: queued.or_else(|| behind_own_loop(status, i64::from(run.queued_loops))),
    };
    notifications::record(conn, run_id, seq, "run/state", &params, now)
}

/// The whole state of a run: what `getRun` answers. `queued` is admission's word for a run at
/// 100 when it holds one; otherwise it says only whether loops wait behind the run's own. With
/// `since`, the pushes after that seq (at most 1,000) are replayed in `missed`. Answered as a
/// JSON value: the rows it borrows from live only as long as the read. With `page`, `history`
/// holds only that page of it (counted from the newest entry) and `historyTotal` says how many
/// entries there are: a run of a thousand entries is not shipped whole to show its last turns.
pub fn snapshot(
    conn: &mut Db,
    run: &runs::Run,
    queued: Option<Queued>,
    since: Option<i32>,
    page: Option<HistoryPage>,
) -> Result<Value, StoreError> {
    let history = entries::history(conn, run.id)?;
    let history_total = page.map(|_| history.len());
    let shown = page.map_or(0..history.len(), |p| p.range(history.len()));
    let unknowns = entries::unknowns(conn, run.run_ref(), true)?;
    let summary = entries::latest_summary(conn, run.id)?;
    let recall = memory::recall_of_current_loop(conn, run.id)?
        .and_then(|(_, _, attributes)| serde_json::from_str::<Recall>(&attributes).ok());
    let totals = turns::totals(conn, run.id)?;
    let marks = runs::push_marks(conn, run.id)?;
    let missed = since
        .map(|seq| notifications::since(conn, run.id, seq, 1000))
        .transpose()?
        .map(|missed| {
            missed
                .into_iter()
                .map(|n| MissedNotification {
                    method: n.method,
                    params: serde_json::from_str(&n.params).unwrap_or(Value::Null),
                })
                .collect()
        });
    let snapshot = Snapshot {
        run: &run.alias,
        status: run.status,
        stop_reason: stop_reason(&marks, run.status),
        queued: queued.or_else(|| behind_own_loop(run.status, i64::from(marks.queued_loops))),
        mode: &run.mode,
        turn: run.last_turn(),
        model: &run.model,
        route: route(&marks),
        temperature: run.temperature,
        persona: run.persona.as_deref(),
        context_limit: run.context_limit,
        summary: &summary,
        history: history[shown].iter().map(HistoryItem::of).collect(),
        history_total,
        unknowns: unknowns.iter().map(UnknownItem::of).collect(),
        recall,
        telemetry: totals,
        last_seq: run.next_seq - 1,
        created: Millis(run.created_at).to_rfc3339(),
        missed,
    };
    Ok(serde_json::to_value(&snapshot)?)
}
