//! Keeping a project's file entries in step with its disk: scans run on the blocking pool, the sync on the store writer.
//!
//! Each project's last scan stamps (size and modification time per file) are kept in memory,
//! so a rescan at every loop start reads only the files that changed. The stamps are replaced
//! only after their sync committed; a sync that finds a stamped file without an entry drops
//! them and scans everything again.
//!
//! With `RUMMY_WATCH_FILES` on, the directories a committed scan walked are watched (one
//! queue for the server, its events routed to projects by watch descriptor; what is known of
//! each root is `services::stamps`, shared through `Services`), and a loop start skips the
//! walk (and the sync) when nothing changed there since a scan that began after the previous
//! change. Anything that could make that untrue forces the
//! next loop start to walk: a scan that failed or was dropped, scans that overlapped (their
//! syncs may commit in either order, so the next scan also reads every file again), a
//! directory first watched after the scan walked it, a truncated scan, a root that could not be
//! watched.

use crate::clock::now;
use crate::services::stamps::{Begin, Ended, ProjectRoot, ScanStamps};
use crate::services::Services;
use rummy_core::access::server_state::ServerState;
use rummy_core::files::sync::{sync_project, SyncReport};
use rummy_core::files::{scan_since, Scan, ScanLimits, Stamps};
use rummy_store::entries::WriteCtx;
use rummy_store::ids::ProjectId;
use rummy_store::StoreError;
use std::path::PathBuf;
use std::sync::Arc;

/// Scans the project root and syncs the project's file entries (nothing when the watch shows
/// the project unchanged since its last committed scan).
pub async fn refresh(
    svc: &Services,
    project_id: ProjectId,
    root: &str,
) -> Result<SyncReport, StoreError> {
    let Some(scan) = ProjectScan::run(svc, project_id, root).await? else {
        return Ok(SyncReport::default());
    };
    let (report, scan) = scan.synced(svc).await?;
    scan.settle(svc, report).await
}

/// One scan of a project root, to be synced inside a store write of the caller's choosing
/// (a loop's first turn syncs it in the write that starts the turn) and then settled. Dropped
/// unsettled (the write failed, the turn was cancelled), it leaves the next loop start to walk.
#[derive(Debug)]
pub struct ProjectScan {
    key: ProjectRoot,
    scanned: Scan,
    known: ScanStamps,
    watching: bool,
    settled: bool,
}

impl ProjectScan {
    /// Scans the root on the blocking pool, reading only files changed since the last
    /// committed scan; `None` when the project's watch shows nothing changed since then.
    pub async fn run(
        svc: &Services,
        project_id: ProjectId,
        root: &str,
    ) -> Result<Option<Self>, StoreError> {
        let key = (project_id, root.to_owned());
        let watching = svc.config.watch_files;
        match svc.scan_stamps.begin(&key, watching) {
            Begin::Unchanged => {
                tracing::debug!(
                    project_id = project_id.0,
                    "project unchanged since its last scan; not walked"
                );
                Ok(None)
            }
            Begin::Scan(stamps) => {
                let known = svc.scan_stamps.clone();
                let server = svc.config.server_state();
                Self::scan(known, key, stamps, server, watching)
                    .await
                    .map(Some)
            }
        }
    }

    /// Scans `key`'s root, counted in flight by the caller, keeping out of the server's own
    /// state (`server`, looked up on disk as the scan begins).
    async fn scan(
        known: ScanStamps,
        key: ProjectRoot,
        stamps: Arc<Stamps>,
        server: ServerState,
        watching: bool,
    ) -> Result<Self, StoreError> {
        let root = PathBuf::from(&key.1);
        // Built before the scan, so that even a failed scan ends its count in flight.
        let mut scan = ProjectScan {
            key,
            scanned: Scan::default(),
            known,
            watching,
            settled: false,
        };
        scan.scanned = actix_rt::task::spawn_blocking(move || {
            let server = server.on_disk();
            scan_since(&root, ScanLimits::default(), &stamps, &server, now())
        })
        .await
        .map_err(|e| StoreError::Task(Box::new(e)))?;
        Ok(scan)
    }

    /// Syncs the scan in a write of its own.
    async fn synced(self, svc: &Services) -> Result<(SyncReport, Self), StoreError> {
        let divisor = svc.config.limits.token_divisor;
        svc.store
            .write(move |c| Ok((self.sync(c, crate::clock::write_ctx(divisor))?, self)))
            .await
    }

    /// Brings the project's file entries in line with the scan (on the writer).
    pub fn sync(
        &self,
        conn: &mut rummy_store::db::Db,
        at: WriteCtx,
    ) -> Result<SyncReport, StoreError> {
        sync_project(conn, self.key.0, &self.scanned, at)
    }

    /// After the sync committed: keeps the stamps for the next scan, or — when stamped files
    /// had no entry — drops them and scans and syncs everything again. The final report.
    pub async fn settle(
        mut self,
        svc: &Services,
        report: SyncReport,
    ) -> Result<SyncReport, StoreError> {
        let project_id = self.key.0;
        let report = if report.missing == 0 {
            self.commit(true);
            report
        } else {
            tracing::warn!(
                project_id = project_id.0,
                missing = report.missing,
                "stamped files had no entry; scanning everything again"
            );
            self.commit(false);
            let (known, key, watching) = (self.known.clone(), self.key.clone(), self.watching);
            known.begin_again(&key);
            let server = svc.config.server_state();
            let (report, mut again) = Self::scan(known, key, Arc::default(), server, watching)
                .await?
                .synced(svc)
                .await?;
            again.commit(report.missing == 0);
            report
        };
        if report.added + report.changed + report.removed > 0 {
            tracing::info!(
                project_id = project_id.0,
                added = report.added,
                changed = report.changed,
                removed = report.removed,
                "project files synced"
            );
        }
        Ok(report)
    }

    /// Ends this scan's count in flight after its sync committed; `complete`: no stamped file
    /// lacked its entry, so its stamps (and directories) describe the disk.
    fn commit(&mut self, complete: bool) {
        self.settled = true;
        let ended = if complete {
            Ended::Committed(std::mem::take(&mut self.scanned.stamps), &self.scanned)
        } else {
            Ended::Incomplete
        };
        self.known.end(&self.key, ended, self.watching);
    }
}

impl Drop for ProjectScan {
    fn drop(&mut self) {
        if !self.settled {
            self.known.end(&self.key, Ended::Dropped, self.watching);
        }
    }
}
