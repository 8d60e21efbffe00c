//! Keeping a project's file entries in step with its disk: scans run on the blocking pool, the sync on the store writer.

use crate::clock::now;
use crate::services::Services;
use rummy_core::files::sync::{sync_project, SyncReport};
use rummy_core::files::{scan, ScanLimits};
use rummy_core::store::StoreError;
use std::path::PathBuf;

/// Scans the project root and syncs the project's file entries.
pub async fn refresh(
    svc: &Services,
    project_id: i32,
    root: &str,
) -> Result<SyncReport, StoreError> {
    let root = PathBuf::from(root);
    let scanned = actix_rt::task::spawn_blocking(move || scan(&root, ScanLimits::default()))
        .await
        .map_err(|e| StoreError::Pool(format!("scan task failed: {e}")))?;
    let divisor = svc.config.limits.token_divisor;
    let report = svc
        .store
        .write(move |c| sync_project(c, project_id, &scanned, divisor, now()))
        .await?;
    if report != SyncReport::default() {
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
