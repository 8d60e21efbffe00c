//! Start-up recovery of runs a crash or stop left mid-loop.
//!
//! A turn interrupted before its reply was recorded is marked failed with an
//! `error://` entry, its loop ends 500, and the run waits for the client;
//! queued loops then run in order. A run waiting on a proposal is restored
//! as it was: the proposal stays pending, and resolving it resumes the turn.
//! Every command channel still streaming fails "interrupted by restart" (no
//! process of the stopped server feeds it any more), and a turn that waited for
//! such a command's output goes on after it, as it would once the output ended.

use super::streams::{self, Awaited};
use super::{proposals, record, state, TurnRef};
use crate::memory::{history, recall};
use crate::tools::search;
use crate::wire::bounded::Bounds;
use rummy_store::db::Db;
use rummy_store::entries::{RunRef, WriteCtx};
use rummy_store::ids::{ProjectId, RunId};
use rummy_store::loops::Loop;
use rummy_store::models::{self, Model};
use rummy_store::notifications::Recorded;
use rummy_store::run::{RunStatus, StopReason};
use rummy_store::runs::{self, Run};
use rummy_store::{loops, turns, views, StoreError};
use serde_json::{json, Value};

/// The message the model and clients read on an interrupted turn.
pub const INTERRUPTED: &str = "interrupted by restart";

/// What recovery did.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Loops that were ended as interrupted.
    pub interrupted: usize,
    /// `run/state` pushes to publish: (project, run alias, params).
    pub pushed: Vec<(ProjectId, String, Recorded)>,
    /// Runs with queued loops to run.
    pub to_wake: Vec<Run>,
    /// Runs waiting on a proposal, to restore: the run, its active loop, its model and the proposal's path.
    pub to_restore: Vec<(Run, Loop, Option<Model>, String)>,
    /// Runs whose turn waited for a command's output, to go on after it: the run, its active
    /// loop, its model and the command.
    pub to_resume: Vec<(Run, Loop, Option<Model>, Awaited)>,
}

/// Which runs a recovery takes up.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every run: a process starting on a database no other process uses.
    All,
    /// These runs: those a process took over from one that stopped renewing its hold on
    /// them (several processes on PostgreSQL), the others' runs left alone.
    Runs(&'a [RunId]),
}

impl Scope<'_> {
    fn takes(&self, run_id: RunId) -> bool {
        match self {
            Scope::All => true,
            Scope::Runs(ids) => ids.contains(&run_id),
        }
    }
}

/// Ends interrupted loops and lists the runs that have loops waiting, of the runs `scope`
/// names; an interrupted loop is kept for recall as a finished one is ([`recall::kept`],
/// `recall_default`: `RUMMY_RECALL`).
pub fn recover(
    conn: &mut Db,
    scope: Scope<'_>,
    recall_default: bool,
    bounds: Bounds,
    at: WriteCtx,
) -> Result<Recovery, StoreError> {
    let now = at.now;
    let mut report = Recovery::default();
    let streams_failed = streams::fail_streaming(conn, |run| scope.takes(run), INTERRUPTED, at)?;
    let mut unfinished = runs::unfinished(conn)?;
    unfinished.retain(|run| scope.takes(run.id));
    for run in unfinished {
        let rr = RunRef {
            run_id: run.id,
            project_id: run.project_id,
        };
        if run.run_status() == RunStatus::Running {
            if let Some((active, awaited)) = awaiting_output(conn, run.id)? {
                let model = models::by_alias(conn, &active.model)?;
                report.to_resume.push((run, active, model, awaited));
                continue;
            }
        }
        if run.run_status() == RunStatus::Proposed {
            if let (Some(active), Some(pending)) = (
                loops::active(conn, run.id)?,
                proposals::pending(conn, run.id)?,
            ) {
                let model = models::by_alias(conn, &active.model)?;
                report.to_restore.push((run, active, model, pending.path));
                continue;
            }
        }
        if let Some(active) = loops::active(conn, run.id)? {
            let turn = match turns::running_in_loop(conn, run.id, active.id)? {
                Some(t) => {
                    turns::finish(conn, t.id, turns::FAILED, now)?;
                    t.sequence
                }
                None => run.last_turn().max(1),
            };
            let t = TurnRef {
                run: rr,
                loop_id: active.id,
                turn,
            };
            record::warning(conn, t, INTERRUPTED, at)?;
            // A search (or a web page) the server was asking for when it stopped will never be
            // answered: it fails (502, like an unreachable backend) instead of streaming forever.
            for (path, turn) in views::asked_in_flight(conn, run.id)? {
                let t = TurnRef { turn, ..t };
                search::record_failure(conn, t, &path, INTERRUPTED, at)?;
            }
            loops::finish(
                conn,
                active.id,
                500,
                &json!({
                    "status": 500,
                    "error": INTERRUPTED,
                    loops::STOP_REASON: StopReason::Interrupted.as_str(),
                }),
                now,
            )?;
            history::loop_ended(
                conn,
                rr,
                &run.alias,
                active.id,
                history::LoopEnding {
                    status: 500,
                    stop_reason: StopReason::Interrupted,
                    error: Some(INTERRUPTED),
                    kept: recall::kept(&active.flags(), recall_default),
                },
                at,
            )?;
            report.interrupted += 1;
        }
        if matches!(run.run_status(), RunStatus::Running | RunStatus::Proposed) {
            runs::set_status(conn, run.id, RunStatus::Failed, now)?;
            let params = state::push(
                conn,
                run.id,
                run.last_turn(),
                RunStatus::Failed.code(),
                Value::Null,
                bounds,
                now,
            )?;
            report
                .pushed
                .push((run.project_id, run.alias.clone(), params));
        }
        if loops::queued(conn, run.id)? > 0 {
            report.to_wake.push(runs::by_id(conn, run.id)?);
        }
    }
    // Clients learn of the failed channels of runs recovery pushed nothing else for.
    let mut failed_runs: Vec<RunId> = streams_failed.iter().map(|(r, _)| r.run_id).collect();
    failed_runs.dedup();
    for run_id in failed_runs {
        let run = runs::by_id(conn, run_id)?;
        if report
            .pushed
            .iter()
            .any(|(project, alias, _)| *project == run.project_id && alias == &run.alias)
        {
            continue;
        }
        let params = state::push(
            conn,
            run.id,
            run.last_turn(),
            run.status,
            Value::Null,
            bounds,
            now,
        )?;
        report.pushed.push((run.project_id, run.alias, params));
    }
    Ok(report)
}

/// The run's active loop and the command its running turn waits for, if it waits for one.
fn awaiting_output(conn: &mut Db, run_id: RunId) -> Result<Option<(Loop, Awaited)>, StoreError> {
    let Some(active) = loops::active(conn, run_id)? else {
        return Ok(None);
    };
    let Some(turn) = turns::running_in_loop(conn, run_id, active.id)? else {
        return Ok(None);
    };
    Ok(streams::awaited(conn, run_id, turn.sequence)?.map(|awaited| (active, awaited)))
}
