//! Begin: the turn's row allocated — by the write that ended the turn before it, or by a write of its own that, on a loop's first turn, also records the loop's prompt, syncs the project's scan, attaches its files and gives a run that keeps session state and has none the empty one.
//!
//! Either write reads the turn's context ahead ([`context::read_ahead`](super::context::read_ahead)).

use super::context::{put_kept, read_ahead, take_kept};
use super::failure;
use crate::clock::now;
use crate::files::ProjectScan;
use crate::services::Services;
use crate::turn::{Allocated, ContextRead, TurnFailure, TurnJob};
use rummy_core::files::sync::{self, SyncReport};
use rummy_core::hedberg;
use rummy_core::ids::{ProjectId, TurnId};
use rummy_core::session_state::stored;
use rummy_core::store::entries::RunRef;
use rummy_core::store::{constraints, projects, turns, StoreError};
use rummy_core::turn::{record, TurnRef};
use std::sync::Arc;

/// A turn that began: where it writes, its row, and whether its context was read ahead (the
/// rows are then in the loop's slot).
#[derive(Debug, Clone, Copy)]
pub(super) struct Begun {
    /// The turn.
    pub t: TurnRef,
    /// Its row.
    pub turn_id: TurnId,
    /// What the write before it read besides the rows, when it read them.
    pub read: Option<ContextRead>,
}

/// Begins the turn: takes the row the previous turn allocated, or allocates one (scanning the
/// project first on a loop's first turn).
pub(super) async fn begin(
    svc: &Services,
    job: &TurnJob,
    allocated: Option<Allocated>,
) -> Result<Begun, TurnFailure> {
    if let Some(next) = allocated.filter(|_| !job.first_in_loop) {
        // Allocated by the previous turn's last write (`end::end_turn`): nothing to write first.
        let t = TurnRef {
            run: job.run,
            loop_id: job.loop_id,
            turn: next.turn,
        };
        tracing::debug!(turn = t.turn, "turn started");
        return Ok(Begun {
            t,
            turn_id: next.turn_id,
            read: next.read,
        });
    }
    let attach = job.first_in_loop && !job.no_repo;
    let scan = if attach {
        scan_project(svc, job.run.project_id).await
    } else {
        None
    };
    let (mut begun, synced) = allocate(svc, job, scan, attach).await?;
    tracing::debug!(turn = begun.t.turn, "turn started");
    if let Some((report, scan)) = synced {
        let missing = report.missing > 0;
        match scan.settle(svc, report).await {
            // Files the first sync missed were synced after the views were attached; the
            // turn reads its context again.
            Ok(_) if missing => {
                begun.read = None;
                let run = job.run;
                svc.store
                    .write(move |c| attach_views(c, run))
                    .await
                    .map_err(failure)?
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "project rescan failed; using the files already stored")
            }
        }
    }
    Ok(begun)
}

/// The write that begins a turn: its row and, on the loop's first turn, its prompt, the scan's
/// sync and the project's files attached — all in one write after the scan — and, last, the
/// turn's context read ahead.
async fn allocate(
    svc: &Services,
    job: &TurnJob,
    scan: Option<ProjectScan>,
    attach: bool,
) -> Result<(Begun, Option<(SyncReport, ProjectScan)>), TurnFailure> {
    let (run, loop_id, first, mode) = (job.run, job.loop_id, job.first_in_loop, job.mode);
    let (prompt, divisor) = (job.prompt.clone(), svc.config.limits.token_divisor);
    let session_state = first && stored::enabled(&job.flags, svc.config.session_state.enabled);
    let slot = Arc::clone(&job.context);
    let (t, turn_id, synced, ahead) = svc
        .store
        .write(move |c| {
            let turn = turns::begin(c, run.run_id, loop_id, now())?;
            let t = TurnRef {
                run,
                loop_id,
                turn: turn.sequence,
            };
            if first {
                record::prompt(c, t, &prompt, mode, crate::clock::write_ctx(divisor))?;
            }
            // A run that keeps session state and has none yet (older than the setting, or new)
            // gets the empty one at its loop's start, silently.
            if session_state && stored::allowed(c, run.run_id)? {
                stored::ensure(c, run, crate::clock::write_ctx(divisor))?;
            }
            let synced = match scan {
                Some(scan) => Some((scan.sync(c, crate::clock::write_ctx(divisor))?, scan)),
                None => None,
            };
            if attach {
                attach_views(c, run)?;
            }
            let ahead = read_ahead(c, run.run_id, take_kept(&slot));
            Ok((t, turn.id, synced, ahead))
        })
        .await
        .map_err(failure)?;
    let read = ahead.map(|(context, read)| {
        put_kept(&job.context, context);
        read
    });
    Ok((Begun { t, turn_id, read }, synced))
}

/// Scans the run's project: `None` when its watch shows nothing changed since the last
/// committed scan, or when the scan fails (the run then works with the files already stored).
async fn scan_project(svc: &Services, project_id: ProjectId) -> Option<ProjectScan> {
    let project = svc
        .store
        .read(move |c| projects::by_id(c, project_id))
        .await;
    let scanned = match project {
        Ok(p) => ProjectScan::run(svc, p.id, &p.project_root).await,
        Err(e) => Err(e),
    };
    scanned
        .inspect_err(|e| tracing::warn!(project_id = project_id.0, error = %e, "project scan failed; using the files already stored"))
        .ok()
        .flatten()
}

/// Gives the run views of the project's files it has none of yet (loop start, unless `noRepo`).
fn attach_views(c: &mut diesel::SqliteConnection, run: RunRef) -> Result<(), StoreError> {
    let constraints = constraints::list(c, run.project_id)?;
    sync::attach(c, run, &constraints, hedberg::hedmatch, now())?;
    Ok(())
}
