//! What the server knows of each project root's files on disk: the stamps of the last committed scan, and whether the disk may have changed since (the directories are watched).
//!
//! Shared through `Services`; `files` begins and ends each scan through it. A scan is counted
//! in flight from `ScanStamps::begin` until its sync committed or it was dropped
//! (`ScanStamps::end`); only a committed scan's stamps are kept, and only a scan that began
//! after the last change seen, walked from the root, was complete and ran under the watch of
//! every directory it walked lets the next loop start skip the walk.

mod watch;

use rummy_core::files::{Scan, Stamps};
use rummy_store::ids::ProjectId;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use watch::Watch;

/// A project and its root as scanned.
pub(crate) type ProjectRoot = (ProjectId, String);

/// What is known of each project root's files on disk: the stamps of the last committed scan,
/// and whether the disk may have changed since.
#[derive(Debug, Clone, Default)]
pub struct ScanStamps(Arc<Mutex<Shared>>);

/// Every project root's state, and the one queue that watches all their directories.
#[derive(Debug, Default)]
struct Shared {
    projects: HashMap<ProjectRoot, Known>,
    /// The server's inotify queue, from the first trusted scan on.
    watch: Option<Watch>,
    /// No queue could be had (no inotify, or the user's queues are all taken): loop starts
    /// always walk.
    no_watch: bool,
    /// The projects watching each directory, by watch descriptor (nested roots share some).
    watchers: HashMap<i32, Vec<ProjectRoot>>,
}

/// One project root's state.
#[derive(Debug, Default)]
struct Known {
    /// The last committed scan's stamps.
    stamps: Option<Arc<Stamps>>,
    /// The watch descriptors of its directories.
    wds: HashSet<i32>,
    /// One of its directories could not be watched (out of watches): every loop start walks it.
    unwatchable: bool,
    /// Something may have changed that no committed scan has seen.
    dirty: bool,
    /// Scans begun and not yet settled or dropped.
    in_flight: usize,
    /// Another scan began while one was in flight: once they are all settled, walk again.
    overlapped: bool,
}

/// How a scan in flight ended.
pub(crate) enum Ended<'a> {
    /// Its sync committed and no stamped file lacked its entry: its stamps and what it walked
    /// describe the disk.
    Committed(Stamps, &'a Scan),
    /// Its sync committed, but stamped files had no entry: its stamps cannot be trusted.
    Incomplete,
    /// It failed or was dropped before its sync committed.
    Dropped,
}

/// Whether a loop start must walk the project.
pub(crate) enum Begin {
    /// Nothing changed since the last committed scan.
    Unchanged,
    /// Walk it, reading only files whose stamps differ from these.
    Scan(Arc<Stamps>),
}

impl ScanStamps {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides whether a scan of `key` is needed now and, if so, counts it in flight.
    pub(crate) fn begin(&self, key: &ProjectRoot, watching: bool) -> Begin {
        let mut shared = self.lock();
        shared.drain();
        let known = shared.projects.entry(key.clone()).or_default();
        let quiet = !known.dirty && known.in_flight == 0 && !known.wds.is_empty();
        if watching && quiet && known.stamps.is_some() {
            return Begin::Unchanged;
        }
        // The changes queued so far are this scan's to see.
        known.dirty = false;
        known.count_in();
        Begin::Scan(known.stamps.clone().unwrap_or_default())
    }

    /// Counts a forced full rescan in flight.
    pub(crate) fn begin_again(&self, key: &ProjectRoot) {
        self.lock()
            .projects
            .entry(key.clone())
            .or_default()
            .count_in();
    }

    /// Ends a scan in flight.
    pub(crate) fn end(&self, key: &ProjectRoot, ended: Ended<'_>, watching: bool) {
        let mut shared = self.lock();
        let trusted = match ended {
            Ended::Committed(stamps, scan) => {
                shared.projects.entry(key.clone()).or_default().stamps = Some(Arc::new(stamps));
                let from_root = scan
                    .dirs
                    .first()
                    .is_some_and(|root| root.as_path() == Path::new(&key.1));
                watching && from_root && !scan.truncated && shared.cover(key, &scan.dirs)
            }
            Ended::Incomplete => {
                shared.projects.entry(key.clone()).or_default().stamps = None;
                false
            }
            Ended::Dropped => false,
        };
        let known = shared.projects.entry(key.clone()).or_default();
        known.in_flight = known.in_flight.saturating_sub(1);
        if known.overlapped {
            // Overlapping scans' syncs may have committed in either order, so the entries may
            // hold an older read than the newest stamps describe: the next scan reads it all.
            known.stamps = None;
        }
        if !trusted || known.overlapped {
            known.dirty = true;
        }
        if known.in_flight == 0 {
            known.overlapped = false;
        }
    }
}

impl Known {
    /// Counts a scan in flight; one already in flight makes them overlap.
    fn count_in(&mut self) {
        self.overlapped |= self.in_flight > 0;
        self.in_flight += 1;
    }
}

impl Shared {
    /// Reads the queue: every project watching a directory that changed may have changed, and
    /// after lost events, every project.
    fn drain(&mut self) {
        let Some(watch) = &self.watch else {
            return;
        };
        let drained = watch.drain();
        if drained.lost {
            for known in self.projects.values_mut() {
                known.dirty = true;
            }
        }
        for wd in &drained.changed {
            for key in self.watchers.get(wd).into_iter().flatten() {
                if let Some(known) = self.projects.get_mut(key) {
                    known.dirty = true;
                }
            }
        }
        for wd in drained.ended {
            for key in self.watchers.remove(&wd).into_iter().flatten() {
                if let Some(known) = self.projects.get_mut(&key) {
                    known.dirty = true;
                    known.wds.remove(&wd);
                }
            }
        }
    }

    /// Watches `dirs` for `key` (opening the queue on first use); whether every one of them
    /// was watched for it already, i.e. throughout the scan that walked them.
    fn cover(&mut self, key: &ProjectRoot, dirs: &[PathBuf]) -> bool {
        if self.no_watch {
            return false;
        }
        if self.watch.is_none() {
            match Watch::new() {
                Ok(watch) => self.watch = Some(watch),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch project directories; every loop start scans its project");
                    self.no_watch = true;
                    return false;
                }
            }
        }
        let Some(watch) = &self.watch else {
            return false;
        };
        let known = self.projects.entry(key.clone()).or_default();
        if known.unwatchable {
            return false;
        }
        let mut all_watched = true;
        for dir in dirs {
            match watch.add(dir) {
                Ok(Some(wd)) => {
                    if known.wds.insert(wd) {
                        all_watched = false;
                        let watchers = self.watchers.entry(wd).or_default();
                        if !watchers.contains(key) {
                            watchers.push(key.clone());
                        }
                    }
                }
                Ok(None) => all_watched = false,
                Err(e) => {
                    tracing::warn!(project_id = key.0 .0, root = %key.1, error = %e,
                        "cannot watch the project's directories; every loop start scans it");
                    known.unwatchable = true;
                    return false;
                }
            }
        }
        all_watched
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A scan of `root` that walked only the root and committed with no stamps.
    fn walked(root: &std::path::Path) -> Scan {
        Scan {
            dirs: vec![root.to_path_buf()],
            ..Scan::default()
        }
    }

    fn unchanged(known: &ScanStamps, key: &ProjectRoot) -> bool {
        matches!(known.begin(key, true), Begin::Unchanged)
    }

    /// Begins and commits one scan of `key`.
    fn scan_once(known: &ScanStamps, key: &ProjectRoot, scan: &Scan) {
        assert!(!unchanged(known, key));
        known.end(key, Ended::Committed(Stamps::new(), scan), true);
    }

    fn project() -> std::io::Result<(tempfile::TempDir, ProjectRoot)> {
        let dir = tempfile::TempDir::new()?;
        let key = (ProjectId(1), dir.path().display().to_string());
        Ok((dir, key))
    }

    /// A project whose second scan ran under the watch its first one set.
    fn trusted_project() -> std::io::Result<(tempfile::TempDir, ProjectRoot, ScanStamps)> {
        let (dir, key) = project()?;
        let known = ScanStamps::default();
        scan_once(&known, &key, &walked(dir.path()));
        scan_once(&known, &key, &walked(dir.path()));
        Ok((dir, key, known))
    }

    #[test]
    fn an_unchanged_project_is_walked_until_a_scan_ran_under_its_watch() {
        let (dir, key) = project().unwrap();
        let known = ScanStamps::default();
        // The first scan's directories were not watched while it walked them.
        scan_once(&known, &key, &walked(dir.path()));
        scan_once(&known, &key, &walked(dir.path()));
        assert!(unchanged(&known, &key));
        assert!(unchanged(&known, &key));
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        scan_once(&known, &key, &walked(dir.path()));
        assert!(unchanged(&known, &key));
    }

    #[test]
    fn projects_share_one_queue_and_only_a_changed_one_is_walked() {
        let (a_dir, a) = project().unwrap();
        let (b_dir, b) = project().unwrap();
        let b = (ProjectId(2), b.1);
        let known = ScanStamps::default();
        for _ in 0..2 {
            scan_once(&known, &a, &walked(a_dir.path()));
            scan_once(&known, &b, &walked(b_dir.path()));
        }
        std::fs::write(a_dir.path().join("a.txt"), "a").unwrap();
        // B's loop start reads the queue first: A's change is kept for A.
        assert!(unchanged(&known, &b));
        assert!(!unchanged(&known, &a));
        known.end(
            &a,
            Ended::Committed(Stamps::new(), &walked(a_dir.path())),
            true,
        );
        assert!(unchanged(&known, &a));
        let shared = known.lock();
        assert_eq!(
            shared.watchers.len(),
            2,
            "one watch per directory, in one queue"
        );
    }

    #[test]
    fn a_change_inside_a_nested_root_is_a_change_of_both_projects() {
        let (dir, outer) = project().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let inner = (ProjectId(2), sub.display().to_string());
        let known = ScanStamps::default();
        let outer_scan = Scan {
            dirs: vec![dir.path().to_path_buf(), sub.clone()],
            ..Scan::default()
        };
        for _ in 0..2 {
            scan_once(&known, &outer, &outer_scan);
            scan_once(&known, &inner, &walked(&sub));
        }
        std::fs::write(sub.join("x.txt"), "x").unwrap();
        assert!(!unchanged(&known, &inner));
        assert!(!unchanged(&known, &outer));
    }

    #[test]
    fn overlapping_scans_leave_the_next_loop_start_a_full_walk() {
        let (dir, key, known) = trusted_project().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        assert!(!unchanged(&known, &key));
        // A second loop start while the first scan runs scans too, with the same stamps.
        assert!(!unchanged(&known, &key));
        let scan = walked(dir.path());
        known.end(&key, Ended::Committed(Stamps::new(), &scan), true);
        known.end(&key, Ended::Committed(Stamps::new(), &scan), true);
        match known.begin(&key, true) {
            Begin::Scan(stamps) => assert!(stamps.is_empty(), "every file is read again"),
            Begin::Unchanged => panic!("overlapping scans were trusted"),
        }
    }

    #[test]
    fn a_scan_that_did_not_commit_is_not_trusted() {
        let (dir, key, known) = trusted_project().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        assert!(!unchanged(&known, &key));
        known.end(&key, Ended::Dropped, true);
        assert!(!unchanged(&known, &key), "the change is still to be seen");
    }

    #[test]
    fn incomplete_or_rootless_scans_and_unwatched_servers_always_walk() {
        let (dir, key) = project().unwrap();
        let known = ScanStamps::default();
        let truncated = Scan {
            truncated: true,
            ..walked(dir.path())
        };
        for _ in 0..3 {
            scan_once(&known, &key, &truncated);
        }
        assert!(!unchanged(&known, &key));
        known.end(&key, Ended::Dropped, true);

        let (_other, missing_root) = project().unwrap();
        for _ in 0..3 {
            scan_once(&known, &missing_root, &Scan::default());
        }
        assert!(!unchanged(&known, &missing_root));
        known.end(&missing_root, Ended::Dropped, true);

        let (dir, key) = project().unwrap();
        for _ in 0..3 {
            assert!(matches!(known.begin(&key, false), Begin::Scan(_)));
            known.end(
                &key,
                Ended::Committed(Stamps::new(), &walked(dir.path())),
                false,
            );
        }
    }
}
