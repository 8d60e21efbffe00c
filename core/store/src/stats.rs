//! What `/metrics` reads from the database at scrape time: counts that cost a turn nothing to keep.

use super::loops::QUEUED;
use super::StoreError;
use crate::db::Db;
use crate::ids::ProjectId;
use crate::schema::{loops, projects, runs};
use diesel::dsl::count_star;
use diesel::prelude::*;

/// The counts a scrape reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs per status code, by status.
    pub runs_by_status: Vec<(i32, i64)>,
    /// Loops waiting in the queue.
    pub loops_queued: i64,
    /// Every project's id and name.
    pub projects: Vec<(ProjectId, String)>,
}

/// Reads the counts in one snapshot (the caller's transaction or read connection).
pub fn counts(conn: &mut Db) -> Result<Counts, StoreError> {
    let runs_by_status = runs::table
        .group_by(runs::status)
        .select((runs::status, count_star()))
        .order(runs::status.asc())
        .load::<(i32, i64)>(conn)?;
    let loops_queued = loops::table
        .filter(loops::status.eq(QUEUED))
        .select(count_star())
        .first::<i64>(conn)?;
    let projects = projects::table
        .order(projects::id.asc())
        .select((projects::id, projects::name))
        .load::<(ProjectId, String)>(conn)?;
    Ok(Counts {
        runs_by_status,
        loops_queued,
        projects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use pretty_assertions::assert_eq;

    /// An empty database counts nothing; runs are counted by status, projects named.
    #[test]
    fn counts_runs_by_status_and_names_projects() {
        let mut conn = testing::memory();
        assert_eq!(counts(&mut conn).unwrap(), Counts::default());
        let project = testing::project(&mut conn, "web");
        testing::run(&mut conn, project.id, "a");
        testing::run(&mut conn, project.id, "b");
        assert_eq!(
            counts(&mut conn).unwrap(),
            Counts {
                runs_by_status: vec![(100, 2)],
                loops_queued: 0,
                projects: vec![(project.id, "web".to_owned())],
            }
        );
    }
}
