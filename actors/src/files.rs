//! Keeping a project's file entries in step with its disk: scans run on the blocking pool, the sync on the store writer.
//!
//! Each project's last scan stamps (size and modification time per file) are kept in memory,
//! so a rescan at every loop start reads only the files that changed. The stamps are replaced
//! only after their sync committed; a sync that finds a stamped file without an entry drops
//! them and scans everything again.

use crate::clock::now;
use crate::services::Services;
use rummy_core::files::sync::{sync_project, SyncReport};
use rummy_core::files::{scan_since, Scan, ScanLimits, Stamps};
use rummy_core::store::StoreError;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// A project and its root as scanned.
type ProjectRoot = (i32, String);

/// The stamps of each project's last committed scan, by project and root.
#[derive(Debug, Clone, Default)]
pub struct ScanStamps(Arc<Mutex<HashMap<ProjectRoot, Arc<Stamps>>>>);

impl ScanStamps {
    fn get(&self, key: &ProjectRoot) -> Arc<Stamps> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(key).cloned().unwrap_or_default()
    }

    fn put(&self, key: ProjectRoot, stamps: Option<Stamps>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match stamps {
            Some(stamps) => map.insert(key, Arc::new(stamps)),
            None => map.remove(&key),
        };
    }
}

/// Scans the project root and syncs the project's file entries.
pub async fn refresh(
    svc: &Services,
    project_id: i32,
    root: &str,
) -> Result<SyncReport, StoreError> {
    let (report, scan) = ProjectScan::run(svc, project_id, root)
        .await?
        .synced(svc)
        .await?;
    scan.settle(svc, report).await
}

/// One scan of a project root, to be synced inside a store write of the caller's choosing
/// (a loop's first turn syncs it in the write that starts the turn) and then settled.
#[derive(Debug)]
pub struct ProjectScan {
    key: ProjectRoot,
    scanned: Scan,
}

impl ProjectScan {
    /// Scans the root on the blocking pool, reading only files changed since the last
    /// committed scan.
    pub async fn run(svc: &Services, project_id: i32, root: &str) -> Result<Self, StoreError> {
        let key = (project_id, root.to_owned());
        let known = svc.scan_stamps.get(&key);
        Self::scan(key, known).await
    }

    async fn scan(key: ProjectRoot, known: Arc<Stamps>) -> Result<Self, StoreError> {
        let root = PathBuf::from(&key.1);
        let scanned = actix_rt::task::spawn_blocking(move || {
            scan_since(&root, ScanLimits::default(), &known)
        })
        .await
        .map_err(|e| StoreError::Pool(format!("scan task failed: {e}")))?;
        Ok(ProjectScan { key, scanned })
    }

    /// Syncs the scan in a write of its own.
    async fn synced(self, svc: &Services) -> Result<(SyncReport, Self), StoreError> {
        let divisor = svc.config.limits.token_divisor;
        svc.store
            .write(move |c| Ok((self.sync(c, divisor)?, self)))
            .await
    }

    /// Brings the project's file entries in line with the scan (on the writer).
    pub fn sync(
        &self,
        conn: &mut diesel::SqliteConnection,
        divisor: u32,
    ) -> Result<SyncReport, StoreError> {
        sync_project(conn, self.key.0, &self.scanned, divisor, now())
    }

    /// After the sync committed: keeps the stamps for the next scan, or — when stamped files
    /// had no entry — drops them and scans and syncs everything again. The final report.
    pub async fn settle(
        self,
        svc: &Services,
        report: SyncReport,
    ) -> Result<SyncReport, StoreError> {
        let project_id = self.key.0;
        let report = if report.missing == 0 {
            svc.scan_stamps.put(self.key, Some(self.scanned.stamps));
            report
        } else {
            tracing::warn!(
                project_id,
                missing = report.missing,
                "stamped files had no entry; scanning everything again"
            );
            svc.scan_stamps.put(self.key.clone(), None);
            let (report, again) = Self::scan(self.key, Arc::default())
                .await?
                .synced(svc)
                .await?;
            if report.missing == 0 {
                svc.scan_stamps.put(again.key, Some(again.scanned.stamps));
            }
            report
        };
        if report.added + report.changed + report.removed > 0 {
            tracing::info!(
                project_id,
                added = report.added,
                changed = report.changed,
                removed = report.removed,
                "project files synced"
            );
        }
        Ok(report)
    }
}
