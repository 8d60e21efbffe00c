//! `run/state` payloads (incremental, numbered) and the whole-run snapshot `getRun` returns.
//!
//! `getRun` also carries `recall`: what the current loop's first turn recalled and why (the
//! attributes of its `recall://<loop>` entry), `null` when it recalled nothing.
//!
//! Both carry `stopReason` (why the run's last loop ended; `null` while a loop is under way),
//! `route`: the routing decision (`{class, model}`) of the run's
//! current loop — the active one, else the one that ran last — or `null` when
//! that loop was not routed, and `queued`: why a loop of the run waits (`{reason, position}`,
//! docs/design/team.md) — for a place among the runs in flight or under the project's cost ceiling
//! (status 100, given by admission), or behind the run's own running loop (`loop`, status 102
//! or 202, `position` the number of loops queued) — else `null` in `getRun` and left out of
//! `run/state`.

use crate::fair::admission::{QueueReason, Queued};
use crate::wire::bounded::{self, Bounds};
use crate::wire::params::HistoryPage;
use crate::wire::state::{HistoryItem, Snapshot, StatePush, UnknownItem};
use rummy_protocol::results::{MissedNotification, Recall};
use rummy_provider::routing::Routed;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{self, RunRef};
use rummy_store::ids::{LoopId, RunId};
use rummy_store::notifications::{self, Recorded};
use rummy_store::run::RunStatus;
use rummy_store::{loops, memory, runs, turns, StoreError};
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
/// `status` is the run's wire status; `telemetry` is `null` mid-turn. The push is held to
/// `bounds` ([`fit_push`]).
pub fn push(
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
    status: i32,
    telemetry: Value,
    bounds: Bounds,
    now: Millis,
) -> Result<Recorded, StoreError> {
    let at = PushAt {
        bounds,
        appended: &[],
        now,
    };
    push_with(conn, run_id, turn, status, telemetry, None, at)
}

/// A channel whose body grew by appending in this write: its path, and its size before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The channel's path.
    pub path: String,
    /// Its body's size in bytes before the write appended to it.
    pub offset: usize,
}

/// [`push`] after appending to channels: each channel in `appended` goes out as what was
/// appended to it (`append: true, offset, body`), not as its whole body.
pub fn push_appended(
    conn: &mut Db,
    run_id: RunId,
    turn: i32,
    status: i32,
    bounds: Bounds,
    appended: &[Appended],
    now: Millis,
) -> Result<Recorded, StoreError> {
    let at = PushAt {
        bounds,
        appended,
        now,
    };
    push_with(conn, run_id, turn, status, Value::Null, None, at)
}

/// What a push is written with beside its content: its bounds, the channels appended to, and
/// the time.
#[derive(Debug, Clone, Copy)]
struct PushAt<'a> {
    bounds: Bounds,
    appended: &'a [Appended],
    now: Millis,
}

/// A run waits for a place: records when its queued loop `loop_id` began waiting
/// (`since`, unless it already had), makes the run queued (100) and pushes `run/state` with
/// `queued`. Answers the run (as it was before) and the push, or `None` when the loop is no longer queued
/// (it was claimed meanwhile), in which case nothing is written.
pub fn push_queued(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
    since: Millis,
    queued: Queued,
    bounds: Bounds,
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
        PushAt {
            bounds,
            appended: &[],
            now,
        },
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
    at: PushAt<'_>,
) -> Result<Recorded, StoreError> {
    let run = runs::push_marks(conn, run_id)?;
    let changed = entries::changed_since(conn, run_id, run.pushed_rev)?;
    let unknowns = entries::unknowns(
        conn,
        RunRef {
            run_id,
            project_id: rummy_store::ids::ProjectId(run.project_id),
        },
        run.project_questions > 0,
    )?;
    let summary = entries::latest_summary(conn, run_id)?;
    let seq = runs::take_push(conn, run_id, run.next_rev - 1)?;
    let inline = at.bounds.inline_body_bytes;
    let history = changed
        .iter()
        .map(
            |row| match at.appended.iter().find(|a| a.path == row.path) {
                Some(a) => HistoryItem::appended(row, a.offset, inline),
                None => HistoryItem::of(row, inline),
            },
        )
        .collect();
    let mut params = StatePush {
        run: &run.alias,
        turn,
        status,
        summary: &summary,
        history,
        unknowns: unknowns.iter().map(UnknownItem::of).collect(),
        telemetry: &telemetry,
        route: route(&run),
        stop_reason: stop_reason(&run, status),
        queued: queued.or_else(|| behind_own_loop(status, i64::from(run.queued_loops))),
        history_omitted: None,
    };
    fit_push(&mut params, &changed, at.bounds)?;
    notifications::record(conn, run_id, seq, "run/state", &params, at.now)
}

/// Holds a push to one message (`RUMMY_MAX_MESSAGE_BYTES`, less the envelope): while it is
/// larger, the largest body still sent goes without (`bodyTruncated`, `body: ""`), then
/// changed entries are left out from the newest back, counted in `historyOmitted`.
fn fit_push(
    params: &mut StatePush<'_>,
    rows: &[entries::ViewRow],
    bounds: Bounds,
) -> Result<(), StoreError> {
    let budget = bounds.result_bytes();
    let mut size = serde_json::to_vec(params)?.len();
    if size <= budget {
        return Ok(());
    }
    let mut sizes = params
        .history
        .iter()
        .map(|item| serde_json::to_vec(item).map(|v| v.len()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut by_size: Vec<usize> = (0..sizes.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    for i in by_size {
        if size <= budget {
            return Ok(());
        }
        params.history[i].without_body(rows[i].body.len());
        let smaller = serde_json::to_vec(&params.history[i])?.len();
        size -= sizes[i] - smaller.min(sizes[i]);
        sizes[i] = smaller;
    }
    let mut omitted = 0;
    while size > budget && !params.history.is_empty() {
        let last = params.history.len() - 1;
        size -= sizes[last] + usize::from(last > 0);
        params.history.pop();
        omitted += 1;
    }
    params.history_omitted = (omitted > 0).then_some(omitted);
    Ok(())
}

/// The whole state of a run: what `getRun` answers. `queued` is admission's word for a run at
/// 100 when it holds one; otherwise it says only whether loops wait behind the run's own. With
/// `since`, the pushes after that seq (at most 1,000) are replayed in `missed`. Answered as a
/// JSON value: the rows it borrows from live only as long as the read. With `page`, `history`
/// holds only that page of it (counted from the newest entry) and `historyTotal` says how many
/// entries there are: a run of a thousand entries is not shipped whole to show its last turns.
///
/// Held to `bounds`: every body, its history's and its replayed pushes', at most
/// `inline_body_bytes` of it; `missed` only as many pushes as fit beside the rest
/// (`missedMore` says more followed); a history that does not fit the message is refused
/// [`StoreError::TooMany`] with the number of its newest entries that would.
pub fn snapshot(
    conn: &mut Db,
    run: &runs::Run,
    queued: Option<Queued>,
    since: Option<i32>,
    page: Option<HistoryPage>,
    bounds: Bounds,
) -> Result<Value, StoreError> {
    let inline = bounds.inline_body_bytes;
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
                .map(|n| {
                    let mut params = serde_json::from_str(&n.params).unwrap_or(Value::Null);
                    bound_replayed(&mut params, inline);
                    MissedNotification {
                        method: n.method,
                        params,
                    }
                })
                .collect::<Vec<_>>()
        });
    let mut snapshot = Snapshot {
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
        history: history[shown]
            .iter()
            .map(|row| HistoryItem::of(row, inline))
            .collect(),
        history_total,
        unknowns: unknowns.iter().map(UnknownItem::of).collect(),
        recall,
        telemetry: totals,
        last_seq: run.next_seq - 1,
        created: Millis(run.created_at).to_rfc3339(),
        missed: None,
        missed_more: false,
    };
    let mut missed = missed;
    fit_snapshot(&mut snapshot, &mut missed, bounds)?;
    snapshot.missed = missed;
    Ok(serde_json::to_value(&snapshot)?)
}

/// Holds `getRun`'s answer to one message: its history whole or refused (with how many of its
/// newest entries fit), then as many of the replayed pushes as fit beside it.
fn fit_snapshot(
    snapshot: &mut Snapshot<'_>,
    missed: &mut Option<Vec<MissedNotification>>,
    bounds: Bounds,
) -> Result<(), StoreError> {
    let history = std::mem::take(&mut snapshot.history);
    snapshot.missed = missed.as_ref().map(|_| Vec::new());
    snapshot.missed_more = missed.is_some();
    let base = serde_json::to_vec(&*snapshot)?.len();
    snapshot.missed = None;
    snapshot.missed_more = false;
    let budget = bounds.result_bytes().saturating_sub(base);
    let sizes = history
        .iter()
        .map(|item| serde_json::to_vec(item).map(|v| v.len()))
        .collect::<Result<Vec<_>, _>>()?;
    let whole = array_bytes(&sizes);
    if whole > budget {
        let fit = bounded::fitting(sizes.iter().rev().copied(), budget + 2);
        return Err(StoreError::TooMany {
            message: format!(
                "too large: this run's history ({} entries, {whole} bytes) does not fit the \
                 {}-byte message limit; page it with limit (at most {fit} entries fit) and read \
                 long bodies with getBody",
                history.len(),
                bounds.max_message_bytes
            ),
            limit: fit,
        });
    }
    snapshot.history = history;
    if let Some(list) = missed.as_mut() {
        let sizes = list
            .iter()
            .map(|m| serde_json::to_vec(m).map(|v| v.len()))
            .collect::<Result<Vec<_>, _>>()?;
        let fit = bounded::fitting(sizes, budget - whole + 2);
        if fit < list.len() {
            list.truncate(fit);
            snapshot.missed_more = true;
        }
    }
    Ok(())
}

/// The bytes of a JSON array of items of `sizes` bytes.
fn array_bytes(sizes: &[usize]) -> usize {
    2 + sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1)
}

/// A replayed push's history bodies held to `inline` bytes, as they are pushed now: a push
/// stored before the bound applied goes out as a new one would.
fn bound_replayed(params: &mut Value, inline: usize) {
    let Some(items) = params.get_mut("history").and_then(Value::as_array_mut) else {
        return;
    };
    for item in items {
        let Some(body) = item.get("body").and_then(Value::as_str) else {
            continue;
        };
        let cut = bounded::inline(body, inline);
        if let Some(full) = cut.truncated_from {
            let text = cut.text.to_owned();
            item["body"] = Value::from(text);
            item["bodyBytes"] = Value::from(full);
            item["bodyTruncated"] = Value::Bool(true);
        }
    }
}
