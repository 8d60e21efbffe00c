//! Writing a scan into the store, and giving a run its views of the project's files.

use super::Scan;
use crate::entry::{Scope, Visibility};
use crate::schema::{entries, run_views};
use crate::store::cached::{cached, Bind, StaticSql};
use crate::store::constraints::{Constraint, ConstraintKind};
use crate::store::entries::RunRef;
use crate::store::{runs, StoreError};
use crate::time::Millis;
use crate::tokens;
use diesel::prelude::*;
use std::collections::HashMap;

/// What a sync changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// New files.
    pub added: usize,
    /// Files whose content changed on disk.
    pub changed: usize,
    /// Files gone from disk (their entries are removed).
    pub removed: usize,
    /// Files the scan did not read as unchanged but that have no entry: the stamps the scan
    /// was given are stale, and a full scan must bring these in.
    pub missing: usize,
}

/// Brings the project's file entries in line with a scan: new files added,
/// changed files refreshed (hash, tokens), vanished files removed (only after
/// a complete scan). Files the scan found unchanged keep their entries; any of them
/// without one is counted as `missing`.
pub fn sync_project(
    conn: &mut SqliteConnection,
    project_id: i32,
    scan: &Scan,
    token_divisor: u32,
    now: Millis,
) -> Result<SyncReport, StoreError> {
    let scope = Scope::Project(project_id).key();
    let stored: HashMap<String, (i32, String)> = entries::table
        .filter(entries::scope.eq(&scope))
        .filter(entries::scheme.is_null())
        .select((entries::path, entries::id, entries::hash))
        .load::<(String, i32, String)>(conn)?
        .into_iter()
        .map(|(path, id, hash)| (path, (id, hash)))
        .collect();
    let mut report = SyncReport::default();
    for file in &scan.files {
        let tokens = tokens::estimate(&file.body, token_divisor);
        match stored.get(&file.path) {
            Some((_, hash)) if *hash == file.hash => {}
            Some((id, _)) => {
                diesel::update(entries::table.find(*id))
                    .set((
                        entries::body.eq(&file.body),
                        entries::hash.eq(&file.hash),
                        entries::tokens.eq(tokens),
                        entries::updated_at.eq(now.0),
                    ))
                    .execute(conn)?;
                report.changed += 1;
            }
            None => {
                diesel::insert_into(entries::table)
                    .values((
                        entries::scope.eq(&scope),
                        entries::path.eq(&file.path),
                        entries::body.eq(&file.body),
                        entries::hash.eq(&file.hash),
                        entries::tokens.eq(tokens),
                        entries::created_at.eq(now.0),
                        entries::updated_at.eq(now.0),
                    ))
                    .execute(conn)?;
                report.added += 1;
            }
        }
    }
    report.missing = scan
        .unchanged
        .iter()
        .filter(|path| !stored.contains_key(*path))
        .count();
    if !scan.truncated {
        let present: std::collections::HashSet<&str> = scan
            .files
            .iter()
            .map(|f| f.path.as_str())
            .chain(scan.unchanged.iter().map(String::as_str))
            .collect();
        let gone: Vec<i32> = stored
            .iter()
            .filter(|(path, _)| !present.contains(path.as_str()))
            .map(|(_, (id, _))| *id)
            .collect();
        report.removed =
            diesel::delete(entries::table.filter(entries::id.eq_any(&gone))).execute(conn)?;
    }
    Ok(report)
}

/// Gives the run a view of every project file it has none of yet: visible for
/// `active`/`readonly` constraints, none for `ignore`, summarized otherwise —
/// so a large repository does not flood the context.
pub fn attach(
    conn: &mut SqliteConnection,
    run: RunRef,
    constraints: &[Constraint],
    matches: impl Fn(&str, &str) -> bool,
    now: Millis,
) -> Result<usize, StoreError> {
    let scope = Scope::Project(run.project_id).key();
    if constraints.is_empty() {
        // No constraint to match paths against: every new file is summarized, in one statement.
        let attached = cached::<AttachAll>(&[
            Bind::Int(run.run_id),
            Bind::Int(run.run_id),
            Bind::Big(now.0),
            Bind::Big(now.0),
            Bind::Text(&scope),
        ])
        .execute(conn)?;
        if attached > 0 {
            // The views took the run's next revision; now it is taken.
            runs::take_rev(conn, run.run_id)?;
        }
        return Ok(attached);
    }
    let seen: std::collections::HashSet<i32> = run_views::table
        .filter(run_views::run_id.eq(run.run_id))
        .select(run_views::entry_id)
        .load::<i32>(conn)?
        .into_iter()
        .collect();
    let files: Vec<(i32, String)> = entries::table
        .filter(entries::scope.eq(&scope))
        .filter(entries::scheme.is_null())
        .select((entries::id, entries::path))
        .load(conn)?;
    let new_views: Vec<(i32, Visibility)> = files
        .into_iter()
        .filter(|(id, _)| !seen.contains(id))
        .filter_map(|(id, path)| {
            let kind = constraints
                .iter()
                .rev()
                .find(|c| matches(&c.pattern, &path))
                .map(|c| c.kind);
            match kind {
                Some(ConstraintKind::Ignore) => None,
                Some(ConstraintKind::Active | ConstraintKind::Readonly) => {
                    Some((id, Visibility::Visible))
                }
                None => Some((id, Visibility::Summarized)),
            }
        })
        .collect();
    if new_views.is_empty() {
        return Ok(0);
    }
    // One change, one revision: the views attached together are pushed together.
    let rev = runs::take_rev(conn, run.run_id)?;
    for (id, visibility) in &new_views {
        cached::<AttachView>(&[
            Bind::Int(run.run_id),
            Bind::Int(*id),
            Bind::Text(visibility.as_str()),
            Bind::Int(rev),
            Bind::Big(now.0),
            Bind::Big(now.0),
        ])
        .execute(conn)?;
    }
    Ok(new_views.len())
}

/// Every project file the run has no view of, summarized, at the run's next revision (in entry
/// order, as the per-file path inserts them). Views the run has are skipped by the conflict
/// on `(run_id, entry_id)`, not by a `NOT EXISTS` over `run_views`: a statement that reads the
/// table it inserts into makes SQLite collect the whole selection in a temporary table first,
/// which was most of a new run's attach.
struct AttachAll;
impl StaticSql for AttachAll {
    const SQL: &'static str = "INSERT INTO run_views \
        (run_id, entry_id, visibility, rev, created_at, updated_at) \
        SELECT ?, e.id, 'summarized', (SELECT next_rev FROM runs WHERE id = ?), ?, ? \
        FROM entries e WHERE e.scope = ? AND e.scheme IS NULL \
        ORDER BY e.id \
        ON CONFLICT (run_id, entry_id) DO NOTHING";
}

/// One attached view; prepared once per connection, where a multi-row insert is prepared anew
/// for every count of rows.
struct AttachView;
impl StaticSql for AttachView {
    const SQL: &'static str = "INSERT INTO run_views \
        (run_id, entry_id, visibility, rev, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)";
}

/// Gives the run a view of one entry if it has none; an existing view is made `visibility`.
pub fn ensure_view(
    conn: &mut SqliteConnection,
    run: RunRef,
    entry_id: i32,
    visibility: Visibility,
    now: Millis,
) -> Result<(), StoreError> {
    let rev = runs::take_rev(conn, run.run_id)?;
    diesel::insert_into(run_views::table)
        .values((
            run_views::run_id.eq(run.run_id),
            run_views::entry_id.eq(entry_id),
            run_views::visibility.eq(visibility.as_str()),
            run_views::rev.eq(rev),
            run_views::created_at.eq(now.0),
            run_views::updated_at.eq(now.0),
        ))
        .on_conflict((run_views::run_id, run_views::entry_id))
        .do_update()
        .set((
            run_views::visibility.eq(visibility.as_str()),
            run_views::rev.eq(rev),
            run_views::updated_at.eq(now.0),
        ))
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::run_migrations;
    use crate::files::{scan, scan_since, ScanLimits};
    use crate::store::projects;
    use crate::store::testing::run;
    use pretty_assertions::assert_eq;
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

    fn stored_paths(conn: &mut SqliteConnection, project_id: i32) -> Vec<String> {
        entries::table
            .filter(entries::scope.eq(Scope::Project(project_id).key()))
            .select(entries::path)
            .order(entries::path.asc())
            .load(conn)
            .unwrap()
    }

    /// A migrated in-memory store with the scheme registry and project `p`.
    fn project_db() -> (SqliteConnection, projects::Project) {
        let mut conn = SqliteConnection::establish(":memory:").unwrap();
        run_migrations(&mut conn).unwrap();
        crate::store::schemes::seed(&mut conn).unwrap();
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
        let first = scan(dir.path(), ScanLimits::default(), now());
        let report = sync_project(&mut conn, p.id, &first, 4, NOW).unwrap();
        assert_eq!((report.added, report.missing), (2, 0));

        std::fs::remove_file(dir.path().join("b.txt")).unwrap();
        let second = scan_since(dir.path(), ScanLimits::default(), &first.stamps, now());
        assert_eq!((second.files.len(), second.unchanged.len()), (0, 1));
        let report = sync_project(&mut conn, p.id, &second, 4, NOW).unwrap();
        assert_eq!((report.removed, report.missing), (1, 0));
        assert_eq!(stored_paths(&mut conn, p.id), vec!["a.txt".to_owned()]);

        diesel::delete(entries::table).execute(&mut conn).unwrap();
        let third = scan_since(dir.path(), ScanLimits::default(), &second.stamps, now());
        let report = sync_project(&mut conn, p.id, &third, 4, NOW).unwrap();
        assert_eq!(report.missing, 1);
    }

    /// Scans `root` afresh and syncs the project's entries with it.
    fn rescan(conn: &mut SqliteConnection, project_id: i32, root: &std::path::Path) {
        sync_project(
            conn,
            project_id,
            &scan(root, ScanLimits::default(), now()),
            4,
            NOW,
        )
        .unwrap();
    }

    /// The views of a run: (entry path, visibility, revision), by entry.
    fn views(conn: &mut SqliteConnection, run_id: i32) -> Vec<(String, String, i32)> {
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
        use crate::store::runs;
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
