//! Indexing for recall: an entry's or a finished loop's terms written into `recall_index` (FTS5
//! on SQLite, a tsvector table on PostgreSQL) as it is written, so recall's look-ups find them.

use crate::cached::{cached, Bind, StaticSql};
use crate::db::Db;
use crate::entry::Scope;
use crate::ids::{LoopId, RunId};
use crate::StoreError;

/// Indexes the entry `entry_id` for recall as it is now (its terms before, if any, replaced): a
/// memory's current version, a history line, a client's fact. A superseded memory and an entry
/// of no project (a global one) leave the index.
pub fn index(conn: &mut Db, entry_id: i32) -> Result<(), StoreError> {
    cached::<Unindex>(&[Bind::Int(entry_id)]).execute(conn)?;
    cached::<Index>(&[Bind::Int(entry_id)]).execute(conn)?;
    Ok(())
}

/// Indexes, in a loop's finishing write, the facts and session state the run's loop `loop_id`
/// wrote, and the entry `also` (the loop's history line): two statements for all of them, since
/// the index writes what it holds to disk at every statement that follows a change — a
/// statement per entry would write one small segment each.
pub fn index_loop(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
    also: i32,
) -> Result<(), StoreError> {
    let scope = Scope::Run(run_id).key();
    cached::<UnindexLoop>(&[
        Bind::Text(&scope),
        Bind::Int(run_id.0),
        Bind::Int(loop_id.0),
    ])
    .execute(conn)?;
    cached::<IndexLoop>(&[
        Bind::Text(&scope),
        Bind::Int(run_id.0),
        Bind::Int(loop_id.0),
        Bind::Int(also),
    ])
    .execute(conn)?;
    Ok(())
}

/// What an entry holds for the index — its id, owner tokens (`p<project>`, and `r<run>` for a
/// run's entry or a history line of that run), its path after the scheme (none for history,
/// whose path is a date and numbers) with its summary, its body — for the entries `e` the
/// caller's `FROM`/`WHERE` names, closed by the caller's `)`; a superseded memory and an entry of
/// no project give no row.
macro_rules! indexed {
    ($($from:expr),+) => {
        concat!(
            "INSERT INTO recall_index (rowid, owner, path, body) ",
            "SELECT id, owner, indexed_path, body FROM (SELECT e.id AS id, e.body AS body, ",
            "CASE WHEN e.scope GLOB 'project:*' THEN 'p' || CAST(substr(e.scope, 9) AS INTEGER) ",
            "|| coalesce((SELECT ' r' || r.id FROM runs r WHERE e.scheme = 'history' ",
            "AND r.project_id = CAST(substr(e.scope, 9) AS INTEGER) ",
            "AND r.alias = json_extract(e.attributes, '$.run')), '') ",
            "ELSE (SELECT 'p' || r.project_id || ' r' || r.id FROM runs r ",
            "WHERE r.id = CAST(substr(e.scope, 5) AS INTEGER)) END AS owner, ",
            "CASE WHEN e.scheme = 'history' THEN '' ELSE substr(e.path, instr(e.path, '://') + 3) END ",
            "|| ' ' || coalesce(json_extract(e.attributes, '$.summary'), '') AS indexed_path, ",
            "json_extract(e.attributes, '$.supersededBy') AS superseded ",
            $($from),+,
            ") WHERE owner IS NOT NULL AND superseded IS NULL"
        )
    };
}

/// [`indexed!`] on PostgreSQL: the same rows into `recall_index (id, project_id, run_id,
/// document)`, the document made by the migration's `rummy_recall_document` (path and summary
/// at weight A, body at weight D, words read as FTS5 reads them); an entry indexed already is
/// replaced (a primary key refuses a second row where FTS5 would keep both).
macro_rules! indexed_pg {
    ($($from:expr),+) => {
        concat!(
            "INSERT INTO recall_index (id, project_id, run_id, document) ",
            "SELECT id, project_id, run_id, rummy_recall_document(indexed_path, body) FROM (",
            "SELECT e.id, e.body, ",
            "CASE WHEN e.scope LIKE 'project:%' ",
            "THEN substring(e.scope FROM '^project:([0-9]+)')::integer ",
            "ELSE (SELECT r.project_id FROM runs r ",
            "WHERE r.id = substring(e.scope FROM '^run:([0-9]+)')::integer) END AS project_id, ",
            "CASE WHEN e.scope LIKE 'project:%' ",
            "THEN (SELECT r.id FROM runs r WHERE e.scheme = 'history' ",
            "AND r.project_id = substring(e.scope FROM '^project:([0-9]+)')::integer ",
            "AND r.alias = e.attributes::json ->> 'run') ",
            "ELSE substring(e.scope FROM '^run:([0-9]+)')::integer END AS run_id, ",
            "CASE WHEN e.scheme = 'history' THEN '' ELSE substr(e.path, strpos(e.path, '://') + 3) END ",
            "|| ' ' || coalesce(e.attributes::json ->> 'summary', '') AS indexed_path, ",
            "e.attributes::json ->> 'supersededBy' AS superseded ",
            $($from),+,
            ") indexed WHERE project_id IS NOT NULL AND superseded IS NULL ",
            "ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, ",
            "run_id = excluded.run_id, document = excluded.document"
        )
    };
}

/// The facts and session state a run's loop wrote: the run's scope, the run, the loop.
macro_rules! loop_facts {
    () => {
        "SELECT e.id FROM entries e JOIN run_views v ON v.entry_id = e.id \
         WHERE e.scope = ? AND e.scheme IN ('known', 'session') AND v.run_id = ? AND v.loop_id = ?"
    };
}

/// Takes an entry's terms out of the index, if it is there (a delete of a document the index
/// never held would still leave a tombstone for later merges to carry).
pub(super) struct Unindex;
impl StaticSql for Unindex {
    const SQL: &'static str = "DELETE FROM recall_index WHERE rowid IN \
        (SELECT id FROM recall_index_docsize WHERE id = ?)";
    const PG: &'static str = "DELETE FROM recall_index WHERE id = ?";
}

/// Puts one entry's terms in the index.
struct Index;
impl StaticSql for Index {
    const SQL: &'static str = indexed!("FROM entries e WHERE e.id = ?");
    const PG: &'static str = indexed_pg!("FROM entries e WHERE e.id = ?");
}

/// Takes the terms of a loop's facts out of the index, where it holds them.
struct UnindexLoop;
impl StaticSql for UnindexLoop {
    const SQL: &'static str = concat!(
        "DELETE FROM recall_index WHERE rowid IN ",
        "(SELECT id FROM recall_index_docsize WHERE id IN (",
        loop_facts!(),
        "))"
    );
    const PG: &'static str = concat!("DELETE FROM recall_index WHERE id IN (", loop_facts!(), ")");
}

/// Puts a loop's facts, and one more entry, in the index.
struct IndexLoop;
impl StaticSql for IndexLoop {
    const SQL: &'static str = indexed!(
        "FROM entries e WHERE e.id IN (",
        loop_facts!(),
        " UNION ALL SELECT ?)"
    );
    const PG: &'static str = indexed_pg!(
        "FROM entries e WHERE e.id IN (",
        loop_facts!(),
        " UNION ALL SELECT ?)"
    );
}
