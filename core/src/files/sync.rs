//! Writing a scan into the store, and giving a run its views of the project's files (the SQL is `store::files`).

use super::Scan;
use rummy_store::db::Db;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::Writer;
use rummy_store::files::{self, FileContent, ScanContent};
use rummy_store::ids::ProjectId;
use rummy_store::StoreError;

pub use rummy_store::files::{attach, SyncReport};

/// Brings the project's file entries in line with a scan: new files added,
/// changed files refreshed (hash, tokens), vanished files removed (only after
/// a complete scan). Files the scan found unchanged keep their entries; any of them
/// without one is counted as `missing`.
pub fn sync_project(
    conn: &mut Db,
    project_id: ProjectId,
    scan: &Scan,
    at: WriteCtx,
) -> Result<SyncReport, StoreError> {
    let read: Vec<FileContent<'_>> = scan
        .files
        .iter()
        .map(|f| FileContent {
            path: &f.path,
            body: &f.body,
            hash: &f.hash,
        })
        .collect();
    let content = ScanContent {
        files: &read,
        unchanged: &scan.unchanged,
        complete: !scan.truncated,
    };
    // The server's own scan.
    files::sync(conn, project_id, content, Writer::System, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::server_state::StateOnDisk;
    use crate::files::{scan, scan_since, ScanLimits};
    use rummy_store::constraints::{Constraint, ConstraintKind};
    use rummy_store::entry::Scope;
    use rummy_store::ids::RunId;
    use rummy_store::schema::{entries, run_views};

    use diesel::prelude::*;
    use pretty_assertions::assert_eq;
    use rummy_provider::time::Millis;
    use rummy_store::projects;
    use rummy_store::testing::run;
    use std::time::{Duration, SystemTime};

    const NOW: Millis = Millis(1_700_000_000_000);

    /// The wall clock: the files' times are real.
    fn now() -> Millis {
        Millis::from_system_time(SystemTime::now())
    }

    fn write_old(path: &std::path::Path, body: &str) {
        std::fs::write(path, body).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
    }

    fn stored_paths(conn: &mut Db, project_id: ProjectId) -> Vec<String> {
        entries::table
            .filter(entries::scope.eq(Scope::Project(project_id).key()))
            .select(entries::path)
            .order(entries::path.asc())
            .load(conn)
            .unwrap()
    }

    /// A migrated in-memory store with the scheme registry and project `p`.
    fn project_db() -> (Db, projects::Project) {
        let mut conn = rummy_store::testing::memory();
        let p = projects::hello(&mut conn, "p", "/p", None, NOW).unwrap();
        (conn, p)
    }

    /// Files a stamped rescan skips keep their entries; a stamped file whose entry is gone is
    /// reported missing rather than silently left out.
    #[test]
    fn unchanged_files_keep_their_entries_and_lost_ones_are_missing() {
        let (mut conn, p) = project_db();
        let dir = tempfile::TempDir::new().unwrap();
        write_old(&dir.path().join("a.txt"), "alpha");
        write_old(&dir.path().join("b.txt"), "beta");
        let first = scan(
            dir.path(),
            ScanLimits::default(),
            &StateOnDisk::default(),
            now(),
        );
        let report = sync_project(
            &mut conn,
            p.id,
            &first,
            WriteCtx {
                divisor: 4,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!((report.added, report.missing), (2, 0));

        std::fs::remove_file(dir.path().join("b.txt")).unwrap();
        let second = scan_since(
            dir.path(),
            ScanLimits::default(),
            &first.stamps,
            &StateOnDisk::default(),
            now(),
        );
        assert_eq!((second.files.len(), second.unchanged.len()), (0, 1));
        let report = sync_project(
            &mut conn,
            p.id,
            &second,
            WriteCtx {
                divisor: 4,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!((report.removed, report.missing), (1, 0));
        assert_eq!(stored_paths(&mut conn, p.id), vec!["a.txt".to_owned()]);

        diesel::delete(entries::table).execute(&mut conn).unwrap();
        let third = scan_since(
            dir.path(),
            ScanLimits::default(),
            &second.stamps,
            &StateOnDisk::default(),
            now(),
        );
        let report = sync_project(
            &mut conn,
            p.id,
            &third,
            WriteCtx {
                divisor: 4,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!(report.missing, 1);
    }

    /// Scans `root` afresh and syncs the project's entries with it.
    fn rescan(conn: &mut Db, project_id: ProjectId, root: &std::path::Path) {
        sync_project(
            conn,
            project_id,
            &scan(root, ScanLimits::default(), &StateOnDisk::default(), now()),
            WriteCtx {
                divisor: 4,
                now: NOW,
            },
        )
        .unwrap();
    }

    /// The views of a run: (entry path, visibility, revision), by entry.
    fn views(conn: &mut Db, run_id: RunId) -> Vec<(String, String, i32)> {
        run_views::table
            .inner_join(entries::table)
            .filter(run_views::run_id.eq(run_id))
            .order(entries::id.asc())
            .select((entries::path, run_views::visibility, run_views::rev))
            .load(conn)
            .unwrap()
    }

    /// Without constraints every new file is attached summarized in one statement; with
    /// constraints each path is matched. Both give the same views at one revision, and a second
    /// attach adds only the files that are new since.
    #[test]
    fn attaching_with_and_without_constraints_gives_the_same_views() {
        use rummy_store::runs;
        let (mut conn, p) = project_db();
        let dir = tempfile::TempDir::new().unwrap();
        for name in ["b.txt", "a.txt", "c.txt"] {
            write_old(&dir.path().join(name), name);
        }
        rescan(&mut conn, p.id, dir.path());
        let (bulk, matched) = (
            run(&mut conn, p.id, "bulk"),
            run(&mut conn, p.id, "matched"),
        );
        // A constraint that matches nothing takes the per-path way to the same result.
        let nothing = [Constraint {
            pattern: "nothing/**".into(),
            kind: ConstraintKind::Active,
        }];
        let matches = |pattern: &str, path: &str| pattern == path;
        assert_eq!(attach(&mut conn, bulk, &[], matches, NOW).unwrap(), 3);
        assert_eq!(
            attach(&mut conn, matched, &nothing, matches, NOW).unwrap(),
            3
        );
        let mut got = views(&mut conn, bulk.run_id);
        let rev = got[0].2;
        got.sort();
        let expected: Vec<(String, String, i32)> = ["a.txt", "b.txt", "c.txt"]
            .iter()
            .map(|p| ((*p).to_owned(), "summarized".to_owned(), rev))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(
            views(&mut conn, bulk.run_id),
            views(&mut conn, matched.run_id)
        );

        write_old(&dir.path().join("d.txt"), "d");
        rescan(&mut conn, p.id, dir.path());
        assert_eq!(attach(&mut conn, bulk, &[], matches, NOW).unwrap(), 1);
        assert_eq!(attach(&mut conn, bulk, &[], matches, NOW).unwrap(), 0);
        let after = views(&mut conn, bulk.run_id);
        assert_eq!(after.len(), 4);
        assert_eq!(
            after[3],
            ("d.txt".to_owned(), "summarized".to_owned(), rev + 1)
        );
        assert_eq!(runs::take_rev(&mut conn, bulk.run_id).unwrap(), rev + 2);
    }
}
