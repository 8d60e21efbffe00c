//! Keeping a project's file entries in step with its disk: scans run on the blocking pool, the sync on the store writer.
//!
//! Each project's last scan stamps (size and modification time per file) are kept in memory,
//! so a rescan at every loop start reads only the files that changed. The stamps are replaced
//! only after their sync committed; a sync that finds a stamped file without an entry drops
//! them and scans everything again.

use crate::clock::now;
use crate::services::Services;
use rummy_core::files::sync::{sync_project, SyncReport};
use rummy_core::files::{scan_since, ScanLimits, Stamps};
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
    let key = (project_id, root.to_owned());
    let mut report = scan_and_sync(svc, &key, svc.scan_stamps.get(&key)).await?;
    if report.missing > 0 {
        tracing::warn!(
            project_id,
            missing = report.missing,
            "stamped files had no entry; scanning everything again"
        );
        svc.scan_stamps.put(key.clone(), None);
        report = scan_and_sync(svc, &key, Arc::default()).await?;
    }
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

async fn scan_and_sync(
    svc: &Services,
    key: &ProjectRoot,
    known: Arc<Stamps>,
) -> Result<SyncReport, StoreError> {
    let root = PathBuf::from(&key.1);
    let mut scanned =
        actix_rt::task::spawn_blocking(move || scan_since(&root, ScanLimits::default(), &known))
            .await
            .map_err(|e| StoreError::Pool(format!("scan task failed: {e}")))?;
    let stamps = std::mem::take(&mut scanned.stamps);
    let divisor = svc.config.limits.token_divisor;
    let project_id = key.0;
    let report = svc
        .store
        .write(move |c| sync_project(c, project_id, &scanned, divisor, now()))
        .await?;
    if report.missing == 0 {
        svc.scan_stamps.put(key.clone(), Some(stamps));
    }
    Ok(report)
}
