//! A run's context rows kept between the turns of a loop: a turn rereads only what changed.
//!
//! Reading every view of the run with its entry is most of a turn's read, and between two
//! turns of a loop little of it changes. What did change is found from two signals, read in
//! the same snapshot as the rows:
//! - every write of one of the run's views takes the run's next revision (`run_views.rev`), so
//!   the views written since are those with a later revision;
//! - `context_clocks`, kept by triggers (migration `context_clocks`), counts what a view's
//!   revision cannot show: a change to an entry other runs share (a project's files, global
//!   skills), which other runs and the file sync write without touching this run's views, and
//!   a deleted view of the run. When either moved, everything is read again.

use super::cached::{cached, Bind, StaticSql};
use super::entries::{context_rows, in_context, in_context_order, ViewRow, VIEW_COLUMNS};
use super::StoreError;
use crate::db::Db;
use crate::entry::Visibility;
use crate::ids::RunId;
use crate::schema::{entries, run_views};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};

/// A run's context rows as one read saw them, and what tells a later read whether they are
/// still current.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptContext {
    run_id: RunId,
    rows: Vec<ViewRow>,
    marks: Marks,
}

impl KeptContext {
    /// The rows, in context order (as [`context_rows`] returns them).
    pub fn rows(&self) -> &[ViewRow] {
        &self.rows
    }

    /// The next view revision of the run when the rows were read: views written later get
    /// this revision or a later one.
    pub fn next_rev(&self) -> i32 {
        self.marks.rev + 1
    }
}

/// The signals of one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
struct Marks {
    /// The run's last view revision taken.
    #[diesel(sql_type = Integer)]
    rev: i32,
    /// How many of the run's views were ever deleted.
    #[diesel(sql_type = BigInt)]
    dropped: i64,
    /// How many writes the shared entries the run can see (its project's, the global ones)
    /// have had.
    #[diesel(sql_type = BigInt)]
    shared: i64,
}

struct ReadMarks;
impl StaticSql for ReadMarks {
    const SQL: &'static str = "SELECT r.next_rev - 1 AS rev, \
        coalesce((SELECT version FROM context_clocks WHERE name = 'views:run:' || r.id), 0) \
        AS dropped, \
        CAST(coalesce((SELECT sum(version) FROM context_clocks \
        WHERE name IN ('project:' || r.project_id, 'global')), 0) AS BIGINT) AS shared \
        FROM runs r WHERE r.id = ?";
}

/// The run's context rows now, in context order. With `kept` (an earlier read of the same
/// run; another run's is ignored) only the views written since are read, unless a shared entry changed or a view was
/// deleted since; then, as without `kept`, all of them are. One transaction, so the rows and
/// the signals that date them are one snapshot.
pub fn context_since(
    conn: &mut Db,
    run_id: RunId,
    kept: Option<KeptContext>,
) -> Result<KeptContext, StoreError> {
    conn.transaction(|conn| {
        let marks = cached::<ReadMarks>(&[Bind::Int(run_id.0)])
            .get_result::<Marks>(conn)
            .optional()?
            .ok_or_else(|| StoreError::NotFound(format!("run {run_id} not found")))?;
        let rows = match kept.filter(|k| k.run_id == run_id) {
            Some(kept) if kept.marks == marks => kept.rows,
            Some(kept)
                if kept.marks.dropped == marks.dropped && kept.marks.shared == marks.shared =>
            {
                // Every view written since leaves the kept rows; only those the model may
                // still see come back, read whole. An archived view's body is never read:
                // each turn archives its own audit trail (the prompt it sent among it), and
                // reading that back on the next turn only to drop it was most of the read.
                let changed: Vec<i32> = crate::on_backend!(conn, c => run_views::table
                    .filter(run_views::run_id.eq(run_id))
                    .filter(run_views::rev.gt(kept.marks.rev))
                    .select(run_views::id)
                    .load(c))?;
                let written: Vec<ViewRow> = crate::on_backend!(conn, c => run_views::table
                    .inner_join(entries::table)
                    .filter(run_views::run_id.eq(run_id))
                    .filter(run_views::rev.gt(kept.marks.rev))
                    .filter(run_views::visibility.ne(Visibility::Archived))
                    .select(VIEW_COLUMNS)
                    .load(c))?;
                let mut rows = kept.rows;
                rows.retain(|r| !changed.contains(&r.view_id));
                rows.extend(written.into_iter().filter(in_context));
                in_context_order(&mut rows);
                rows
            }
            _ => {
                return Ok(KeptContext {
                    run_id,
                    rows: context_rows(conn, run_id)?,
                    marks,
                })
            }
        };
        // Every test run checks the kept rows against a full read.
        #[cfg(debug_assertions)]
        {
            let full = context_rows(conn, run_id)?;
            debug_assert!(rows == full, "kept context rows differ from a full read");
        }
        Ok(KeptContext {
            run_id,
            rows,
            marks,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entries::{context_rows, RunRef};
    use crate::entry::{Visibility, Writer};
    use crate::schema::context_clocks;
    use crate::testing::{memory, project, run, write};
    use pretty_assertions::assert_eq;

    /// A store with one project and two runs of it.
    fn two_runs() -> (Db, RunRef, RunRef) {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
        (conn, a, b)
    }

    /// Writes each `(path, body)` for `run`, visible, as the model.
    fn set(conn: &mut Db, run: RunRef, writes: &[(&str, &str)]) {
        for (path, body) in writes {
            write(conn, run, path, body, Visibility::Visible, Writer::Model).unwrap();
        }
    }

    /// The run's context as a first read sees it after `writes`.
    fn kept_after(conn: &mut Db, run: RunRef, writes: &[(&str, &str)]) -> KeptContext {
        set(conn, run, writes);
        context_since(conn, run.run_id, None).unwrap()
    }

    fn bodies(context: &KeptContext) -> Vec<(&str, &str)> {
        context
            .rows()
            .iter()
            .map(|r| (r.path.as_str(), r.body.as_str()))
            .collect()
    }

    const PORT_AND_HOST: &[(&str, &str)] =
        &[("known://port", "8080"), ("known://host", "localhost")];

    #[test]
    fn unchanged_views_are_kept_as_read() {
        let (mut conn, a, _) = two_runs();
        let first = kept_after(&mut conn, a, &[("known://port", "8080")]);
        let again = context_since(&mut conn, a.run_id, Some(first.clone())).unwrap();
        assert_eq!(again, first);
        assert_eq!(bodies(&again), vec![("known://port", "8080")]);
    }

    #[test]
    fn another_runs_kept_rows_are_not_used() {
        let (mut conn, a, b) = two_runs();
        set(&mut conn, b, &[("known://host", "localhost")]);
        let kept_a = kept_after(&mut conn, a, &[("known://port", "8080")]);
        let for_b = context_since(&mut conn, b.run_id, Some(kept_a)).unwrap();
        assert_eq!(bodies(&for_b), vec![("known://host", "localhost")]);
    }

    #[test]
    fn views_written_since_replace_or_join_the_kept_rows() {
        let (mut conn, a, _) = two_runs();
        let kept = kept_after(&mut conn, a, PORT_AND_HOST);
        set(
            &mut conn,
            a,
            &[("known://port", "9090"), ("known://user", "root")],
        );
        let now = context_since(&mut conn, a.run_id, Some(kept)).unwrap();
        assert_eq!(
            bodies(&now),
            // One turn, one instant: in the order the views were first written.
            vec![
                ("known://port", "9090"),
                ("known://host", "localhost"),
                ("known://user", "root"),
            ]
        );
        assert_eq!(now.rows(), context_rows(&mut conn, a.run_id).unwrap());
        assert_eq!(
            now.next_rev(),
            crate::runs::by_id(&mut conn, a.run_id).unwrap().next_rev
        );
    }

    #[test]
    fn a_view_archived_since_leaves_the_kept_rows() {
        let (mut conn, a, _) = two_runs();
        let kept = kept_after(&mut conn, a, PORT_AND_HOST);
        write(
            &mut conn,
            a,
            "known://port",
            "8080",
            Visibility::Archived,
            Writer::Model,
        )
        .unwrap();
        let now = context_since(&mut conn, a.run_id, Some(kept)).unwrap();
        assert_eq!(bodies(&now), vec![("known://host", "localhost")]);
    }

    /// Another run's write changes a shared file entry without touching this run's view of it.
    #[test]
    fn a_shared_entry_another_run_changed_is_read_again() {
        let (mut conn, a, b) = two_runs();
        set(&mut conn, b, &[("src/main.rs", "fn main() {}")]);
        let kept = kept_after(&mut conn, a, &[("src/main.rs", "fn main() {}")]);
        set(&mut conn, b, &[("src/main.rs", "fn main() { run() }")]);
        let now = context_since(&mut conn, a.run_id, Some(kept)).unwrap();
        assert_eq!(bodies(&now), vec![("src/main.rs", "fn main() { run() }")]);
    }

    /// A deleted view leaves no revision behind to find it by.
    #[test]
    fn a_view_deleted_since_leaves_the_kept_rows() {
        let (mut conn, a, _) = two_runs();
        let kept = kept_after(&mut conn, a, PORT_AND_HOST);
        diesel::delete(entries::table.filter(entries::path.eq("known://port")))
            .execute(&mut conn)
            .unwrap();
        let now = context_since(&mut conn, a.run_id, Some(kept)).unwrap();
        assert_eq!(bodies(&now), vec![("known://host", "localhost")]);
    }

    #[test]
    fn clocks_count_shared_writes_and_deleted_views_only() {
        let (mut conn, a, b) = two_runs();
        let clocks = |conn: &mut Db| {
            context_clocks::table
                .order(context_clocks::name)
                .load::<(String, i64)>(conn)
                .unwrap()
        };
        set(&mut conn, a, &[("known://port", "8080")]);
        assert_eq!(clocks(&mut conn), vec![]);
        set(&mut conn, a, &[("src/main.rs", "fn main() {}")]);
        set(&mut conn, b, &[("src/main.rs", "fn main() { run() }")]);
        diesel::delete(entries::table.filter(entries::path.eq("known://port")))
            .execute(&mut conn)
            .unwrap();
        let views_a = format!("views:run:{}", a.run_id);
        let project = format!("project:{}", a.project_id);
        assert_eq!(
            clocks(&mut conn),
            vec![(project.clone(), 2), (views_a.clone(), 1)]
        );
        diesel::delete(crate::schema::runs::table.find(a.run_id))
            .execute(&mut conn)
            .unwrap();
        assert_eq!(clocks(&mut conn), vec![(project, 2)]);
        diesel::delete(crate::schema::projects::table.find(a.project_id))
            .execute(&mut conn)
            .unwrap();
        assert_eq!(clocks(&mut conn), vec![]);
    }
}
