//! Begin: the turn's row allocated — by the write that ended the turn before it, or by a write of its own that, on a loop's first turn, also records the loop's prompt, syncs the project's scan, attaches its files and gives a run that keeps session state and has none the empty one, and records what the loop recalls.
//!
//! Either write reads the turn's context ahead ([`context::read_ahead`](super::context::read_ahead)).

use super::context::{put_kept, read_ahead, take_kept};
use super::failure;
use crate::clock::now;
use crate::files::ProjectScan;
use crate::services::Services;
use crate::sidecar::{self, Charge};
use crate::turn::{Allocated, ContextRead, TurnFailure, TurnJob};
use rummy_core::files::sync::{self, SyncReport};
use rummy_core::memory::recall::{self, Recalled};
use rummy_core::memory::rerank;
use rummy_core::session_state::stored;
use rummy_core::sidecar::SidecarRecord;
use rummy_core::turn::{record, TurnRef};
use rummy_store::entries::RunRef;
use rummy_store::ids::{ProjectId, TurnId};
use rummy_store::{constraints, projects, runs, shared, turns, StoreError};
use rummy_text::hedberg;
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
/// project and recalling first on a loop's first turn); answers it with the side tasks the
/// recall made (its re-ranking), for the turn's telemetry.
pub(super) async fn begin(
    svc: &Services,
    job: &TurnJob,
    allocated: Option<Allocated>,
) -> Result<(Begun, Vec<SidecarRecord>), TurnFailure> {
    if let Some(next) = allocated.filter(|_| !job.first_in_loop) {
        // Allocated by the previous turn's last write (`end::end_turn`): nothing to write first.
        let t = TurnRef {
            run: job.run,
            loop_id: job.loop_id,
            turn: next.turn,
        };
        tracing::debug!(turn = t.turn, "turn started");
        let begun = Begun {
            t,
            turn_id: next.turn_id,
            read: next.read,
        };
        return Ok((begun, Vec::new()));
    }
    let attach = job.first_in_loop && !job.no_repo;
    let scan = async {
        if attach {
            scan_project(svc, job.run.project_id).await
        } else {
            None
        }
    };
    let (scan, (recalled, side_tasks)) = futures_util::future::join(scan, recall(svc, job)).await;
    let (mut begun, synced) = allocate(svc, job, scan, attach, recalled).await?;
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
    Ok((begun, side_tasks))
}

/// The write that begins a turn: its row and, on the loop's first turn, its prompt, the scan's
/// sync and the project's files attached — all in one write after the scan — and, last, the
/// turn's context read ahead.
async fn allocate(
    svc: &Services,
    job: &TurnJob,
    scan: Option<ProjectScan>,
    attach: bool,
    recalled: Option<Recalled>,
) -> Result<(Begun, Option<(SyncReport, ProjectScan)>), TurnFailure> {
    let (run, loop_id, first, mode) = (job.run, job.loop_id, job.first_in_loop, job.mode);
    let loop_number = job.loop_number;
    let (prompt, divisor) = (job.prompt.clone(), svc.config.limits.token_divisor);
    let session_state = first
        && job
            .flags
            .session_state
            .unwrap_or(svc.config.session_state.enabled);
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
            if first {
                // The project's open questions reach every run at its loop's start.
                shared::attach(c, run, now())?;
            }
            if let Some(recalled) = &recalled {
                recall::record(
                    c,
                    t,
                    loop_number,
                    recalled,
                    crate::clock::write_ctx(divisor),
                )?;
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

/// What the loop's first turn recalls for its prompt (`memory::recall`), read before the
/// write that records it — re-ranked by the sidecar when the loop asks for it (`recallRerank`,
/// else `RUMMY_RECALL_RERANK`), whose call is charged to the turn about to begin — and the side
/// tasks it made. Nothing on later turns, with recall off, when nothing is relevant, or when
/// the read fails; a re-ranking that fails leaves the lexical order. Recall never fails a turn:
/// a failure is logged.
async fn recall(svc: &Services, job: &TurnJob) -> (Option<Recalled>, Vec<SidecarRecord>) {
    if !(job.first_in_loop && job.recall) {
        return (None, Vec::new());
    }
    let settings = svc.config.recall;
    let reranking = job.flags.recall_rerank.unwrap_or(settings.rerank);
    let injected = usize::try_from(settings.max_injected).unwrap_or(usize::MAX);
    let pool = if reranking {
        injected.saturating_mul(rerank::POOL)
    } else {
        injected
    };
    let (run, prompt) = (job.run, job.prompt.clone());
    let read = svc
        .store
        .read(move |c| {
            // An active skill whose `memoryScope` is `none` leaves the run no recall.
            if !rummy_store::skills::memory_scope(c, run.run_id)?.allows_recall() {
                return Ok((None, 0));
            }
            let found = recall::candidates(c, run, &prompt, &settings, pool, now())?;
            Ok((found, runs::by_id(c, run.run_id)?.next_turn))
        })
        .await;
    let (found, next_turn) = match read {
        Ok((Some(found), next_turn)) => (found, next_turn),
        Ok((None, _)) => return (None, Vec::new()),
        Err(e) => {
            tracing::warn!(error = %e, "recall failed; the loop goes on without it");
            return (None, Vec::new());
        }
    };
    if !reranking {
        return (recall::conclude(found, None, &settings), Vec::new());
    }
    let turn = TurnRef {
        run,
        loop_id: job.loop_id,
        turn: next_turn,
    };
    let charge = Charge::new(turn, job.model_alias.clone());
    let order = sidecar::run(svc, &charge, rerank::task(&job.prompt, &found.chosen))
        .await
        .ok();
    (recall::conclude(found, order, &settings), charge.records())
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
fn attach_views(c: &mut rummy_store::db::Db, run: RunRef) -> Result<(), StoreError> {
    let constraints = constraints::list(c, run.project_id)?;
    sync::attach(c, run, &constraints, hedberg::hedmatch, now())?;
    Ok(())
}
