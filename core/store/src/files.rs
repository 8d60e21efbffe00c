//! A project's files as entries: a scan's content synced into them, runs given views of them, one file's content following the disk.
//!
//! A file's content follows the disk, not a turn: these writes change the project-scoped
//! entry and leave each run's view as it is (its state, turn and write count), since a file
//! is a run's history only as what a turn did to it. They are therefore not
//! [`entries::write`], which writes a run's view with every entry; each makes the same tier
//! check ([`entries::admitted`]) — once per call, since every project file is of the one
//! `file` scheme: a scan's sync and an attach write a whole project's files at once, one
//! statement per file or one `INSERT … SELECT` for all.

use super::cached::{cached, Bind, StaticSql};
use super::constraints::{Constraint, ConstraintKind};
use super::entries::{self, hex_sha256, RunRef, WriteCtx};
use super::{runs, StoreError};
use crate::db::Db;
use crate::entry::{Scope, Visibility, Writer};
use crate::ids::ProjectId;
use crate::schema::{entries as entries_table, run_views};
use diesel::prelude::*;
use rummy_provider::time::Millis;
use rummy_text::tokens;
use std::collections::{HashMap, HashSet};

/// One file as read from disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileContent<'a> {
    /// Its path relative to the project root.
    pub path: &'a str,
    /// Its text.
    pub body: &'a str,
    /// SHA-256 of the text.
    pub hash: &'a str,
}

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

/// Fails unless `writer` may write project files (one check for any number of them).
fn admit(writer: Writer) -> Result<(), StoreError> {
    entries::admitted("", None, writer).map(|_| ())
}

/// What a scan of a project root found, as the sync needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanContent<'a> {
    /// The files it read from disk.
    pub files: &'a [FileContent<'a>],
    /// The files it did not read because their stamps were unchanged.
    pub unchanged: &'a [String],
    /// Whether it saw every file (no limit cut it short): only then are files removed.
    pub complete: bool,
}

/// Brings the project's file entries in line with a scan, as `writer`: the files it read
/// added or refreshed (hash, tokens), files gone from disk removed (only after a complete
/// scan). Files the scan found unchanged keep their entries; any of them without one is
/// counted as `missing`.
pub fn sync(
    conn: &mut Db,
    project_id: ProjectId,
    scan: ScanContent<'_>,
    writer: Writer,
    at: WriteCtx,
) -> Result<SyncReport, StoreError> {
    let WriteCtx {
        divisor: token_divisor,
        now,
    } = at;
    admit(writer)?;
    let scope = Scope::Project(project_id).key();
    let stored: HashMap<String, (i32, String)> = entries_table::table
        .filter(entries_table::scope.eq(&scope))
        .filter(entries_table::scheme.is_null())
        .select((entries_table::path, entries_table::id, entries_table::hash))
        .load::<(String, i32, String)>(conn)?
        .into_iter()
        .map(|(path, id, hash)| (path, (id, hash)))
        .collect();
    let mut report = SyncReport::default();
    for file in scan.files {
        let tokens = tokens::estimate(file.body, token_divisor);
        match stored.get(file.path) {
            Some((_, hash)) if hash == file.hash => {}
            Some((id, _)) => {
                diesel::update(entries_table::table.find(*id))
                    .set((
                        entries_table::body.eq(file.body),
                        entries_table::hash.eq(file.hash),
                        entries_table::tokens.eq(tokens),
                        entries_table::updated_at.eq(now.0),
                    ))
                    .execute(conn)?;
                report.changed += 1;
            }
            None => {
                diesel::insert_into(entries_table::table)
                    .values((
                        entries_table::scope.eq(&scope),
                        entries_table::path.eq(file.path),
                        entries_table::body.eq(file.body),
                        entries_table::hash.eq(file.hash),
                        entries_table::tokens.eq(tokens),
                        entries_table::created_at.eq(now.0),
                        entries_table::updated_at.eq(now.0),
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
    if scan.complete {
        let present: HashSet<&str> = scan
            .files
            .iter()
            .map(|f| f.path)
            .chain(scan.unchanged.iter().map(String::as_str))
            .collect();
        let gone: Vec<i32> = stored
            .iter()
            .filter(|(path, _)| !present.contains(path.as_str()))
            .map(|(_, (id, _))| *id)
            .collect();
        report.removed =
            diesel::delete(entries_table::table.filter(entries_table::id.eq_any(&gone)))
                .execute(conn)?;
    }
    Ok(report)
}

/// Gives the run a view of every project file it has none of yet: visible for
/// `active`/`readonly` constraints, none for `ignore`, summarized otherwise —
/// so a large repository does not flood the context.
pub fn attach(
    conn: &mut Db,
    run: RunRef,
    constraints: &[Constraint],
    matches: impl Fn(&str, &str) -> bool,
    now: Millis,
) -> Result<usize, StoreError> {
    // The server gives a run its project's files.
    admit(Writer::System)?;
    let scope = Scope::Project(run.project_id).key();
    if constraints.is_empty() {
        // No constraint to match paths against: every new file is summarized, in one statement.
        let attached = cached::<AttachAll>(&[
            Bind::Int(run.run_id.0),
            Bind::Int(run.run_id.0),
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
    let seen: HashSet<i32> = crate::on_backend!(conn, c => run_views::table
        .filter(run_views::run_id.eq(run.run_id))
        .select(run_views::entry_id)
        .load::<i32>(c))?
    .into_iter()
    .collect();
    let files: Vec<(i32, String)> = crate::on_backend!(conn, c => entries_table::table
        .filter(entries_table::scope.eq(&scope))
        .filter(entries_table::scheme.is_null())
        .select((entries_table::id, entries_table::path))
        .load(c))?;
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
            Bind::Int(run.run_id.0),
            Bind::Int(*id),
            Bind::Visibility(*visibility),
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

/// Gives the run a view of one entry if it has none; an existing view is made `visibility`
/// (its state and turn stay).
pub fn ensure_view(
    conn: &mut Db,
    run: RunRef,
    entry_id: i32,
    visibility: Visibility,
    now: Millis,
) -> Result<(), StoreError> {
    let rev = runs::take_rev(conn, run.run_id)?;
    crate::on_backend!(conn, c => diesel::insert_into(run_views::table)
        .values((
            run_views::run_id.eq(run.run_id),
            run_views::entry_id.eq(entry_id),
            run_views::visibility.eq(visibility),
            run_views::rev.eq(rev),
            run_views::created_at.eq(now.0),
            run_views::updated_at.eq(now.0),
        ))
        .on_conflict((run_views::run_id, run_views::entry_id))
        .do_update()
        .set((
            run_views::visibility.eq(visibility),
            run_views::rev.eq(rev),
            run_views::updated_at.eq(now.0),
        ))
        .execute(c))?;
    Ok(())
}

/// Writes the content the file at `path` of the run's project now holds on disk, as `writer`,
/// and makes the run's view of it visible.
pub fn write_file(
    conn: &mut Db,
    run: RunRef,
    path: &str,
    content: &str,
    writer: Writer,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let WriteCtx { divisor, now } = at;
    admit(writer)?;
    let scope = Scope::Project(run.project_id).key();
    let id: i32 = crate::on_backend!(conn, c => diesel::insert_into(entries_table::table)
        .values((
            entries_table::scope.eq(&scope),
            entries_table::path.eq(path),
            entries_table::body.eq(content),
            entries_table::hash.eq(hex_sha256(content)),
            entries_table::tokens.eq(tokens::estimate(content, divisor)),
            entries_table::created_at.eq(now.0),
            entries_table::updated_at.eq(now.0),
        ))
        .on_conflict((entries_table::scope, entries_table::path))
        .do_update()
        .set((
            entries_table::body.eq(content),
            entries_table::hash.eq(hex_sha256(content)),
            entries_table::tokens.eq(tokens::estimate(content, divisor)),
            entries_table::updated_at.eq(now.0),
        ))
        .returning(entries_table::id)
        .get_result(c))?;
    ensure_view(conn, run, id, Visibility::Visible, now)
}

/// Drops the project's entry of a file that is gone from disk, as `writer` (every run's view
/// of it goes with it).
pub fn forget_file(
    conn: &mut Db,
    project_id: ProjectId,
    path: &str,
    writer: Writer,
) -> Result<(), StoreError> {
    admit(writer)?;
    let scope = Scope::Project(project_id).key();
    diesel::delete(
        entries_table::table
            .filter(entries_table::scope.eq(scope))
            .filter(entries_table::path.eq(path)),
    )
    .execute(conn)?;
    Ok(())
}

/// The stored content of the project's file at `path`, whether or not a run sees it.
pub fn body(
    conn: &mut Db,
    project_id: ProjectId,
    path: &str,
) -> Result<Option<String>, StoreError> {
    let scope = Scope::Project(project_id).key();
    Ok(entries_table::table
        .filter(entries_table::scope.eq(scope))
        .filter(entries_table::path.eq(path))
        .select(entries_table::body)
        .first(conn)
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::State;
    use crate::ids::RunId;
    use crate::testing::{memory, project, run, NOW};
    use pretty_assertions::assert_eq;

    /// One project file as the run `run_id` sees it: (body, visibility, state, turn, writes).
    fn seen(conn: &mut Db, run_id: RunId, path: &str) -> (String, Visibility, State, i32, i32) {
        run_views::table
            .inner_join(entries_table::table)
            .filter(run_views::run_id.eq(run_id))
            .filter(entries_table::path.eq(path))
            .select((
                entries_table::body,
                run_views::visibility,
                run_views::state,
                run_views::turn,
                run_views::write_count,
            ))
            .first(conn)
            .unwrap()
    }

    /// A file's content written after the disk changed replaces the entry's body and makes the
    /// run's view visible, but leaves the view's state, turn and write count: the file is not a
    /// turn's write.
    #[test]
    fn a_files_content_follows_the_disk_and_leaves_the_view_as_it_was() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let r = run(&mut conn, p.id, "r");
        let read = [FileContent {
            path: "a.txt",
            body: "one",
            hash: &hex_sha256("one"),
        }];
        let scan = ScanContent {
            files: &read,
            unchanged: &[],
            complete: true,
        };
        sync(
            &mut conn,
            p.id,
            scan,
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!(attach(&mut conn, r, &[], |_, _| false, NOW).unwrap(), 1);
        let before = seen(&mut conn, r.run_id, "a.txt");
        assert_eq!(
            before,
            (
                "one".to_owned(),
                Visibility::Summarized,
                State::Resolved,
                0,
                1
            )
        );

        write_file(
            &mut conn,
            r,
            "a.txt",
            "two",
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();

        let (_, _, state, turn, writes) = before;
        assert_eq!(
            seen(&mut conn, r.run_id, "a.txt"),
            ("two".to_owned(), Visibility::Visible, state, turn, writes)
        );
    }

    /// A complete scan removes the files it did not see; an incomplete one removes nothing, and
    /// a file it skipped as unchanged without an entry is reported missing.
    #[test]
    fn only_a_complete_scan_removes_files() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let file = |path: &'static str| FileContent {
            path,
            body: path,
            hash: path,
        };
        let both = [file("a.txt"), file("b.txt")];
        let all = ScanContent {
            files: &both,
            unchanged: &[],
            complete: true,
        };
        let added = sync(
            &mut conn,
            p.id,
            all,
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!((added.added, added.removed), (2, 0));

        let only_a = [file("a.txt")];
        let cut_short = ScanContent {
            files: &only_a,
            unchanged: &["c.txt".to_owned()],
            complete: false,
        };
        let partial = sync(
            &mut conn,
            p.id,
            cut_short,
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!(
            partial,
            SyncReport {
                added: 0,
                changed: 0,
                removed: 0,
                missing: 1,
            }
        );
        let full = ScanContent {
            complete: true,
            unchanged: &[],
            ..cut_short
        };
        let removed = sync(
            &mut conn,
            p.id,
            full,
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        assert_eq!(removed.removed, 1);
        assert_eq!(body(&mut conn, p.id, "b.txt").unwrap(), None);
        assert_eq!(
            body(&mut conn, p.id, "a.txt").unwrap().as_deref(),
            Some("a.txt")
        );
    }
}
