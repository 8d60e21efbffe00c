//! The project's memory and history: `memory://` entries kept with their provenance and superseded (never overwritten), one `history://` entry per finished loop, and the full-text look-up recall scores them with.
//!
//! Both schemes are the project's (scope `project:<id>`), and no run holds a view of them:
//! [`entries::write_at`] refuses them, and these functions write the entry alone. So a memory
//! or history write changes no run's context — the context clock triggers leave the two
//! schemes out (migration 000040) — and a run reads them only when a loop's first turn
//! recalls them into its own `recall://<loop>` entry.
//!
//! A memory written again with other content is **superseded**: its stored version moves to
//! `<path>@<version>`, archived, with `supersededBy` and the time it stopped being valid
//! (`validTo`); the path keeps the new content, with its own provenance, `version` and
//! `validFrom`. A normalised path never holds a bare `@` (it is percent-encoded), so these
//! paths cannot meet one a writer names. A memory **removed** (consolidation's cleanup of a
//! task's transient state, [`forget`]) moves to `<path>@<version>` the same way, with
//! `removedBy` and `removedBecause`; a later memory at the path continues its version numbers.
//!
//! `recall_index` (FTS5) indexes the entries recall may bring back: memory, history, and every
//! run's `known://` and `session://` entries. They are indexed here ([`index`]) when they are
//! written — a memory or a history line at once, a run's facts and session state in its loop's
//! finishing write ([`index_loop`]), a client's at once (`store::ops`) — so a turn's writes pay
//! nothing for it; a trigger takes an entry's terms out when it is deleted. Each is indexed each with the tokens of its
//! owner (`p<project>`, and `r<run>` for a run's entry and for a history line of that run) so a
//! query keeps to its project and leaves its own run out — whose facts and loops its context
//! holds already — inside the index.

use super::cached::{cached, Bind, StaticSql};
use super::entries::{self, hex_sha256, ViewRow};
use super::StoreError;
use crate::db::Db;
use crate::entries::WriteCtx;
use crate::entry::{Scope, State, Visibility, Writer};
use crate::ids::{LoopId, ProjectId, RunId};
use crate::schema::{entries as e, loops, run_views, runs};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Double, Integer, Text};
use rummy_text::path::scheme_of;
use rummy_text::tokens;
use serde_json::{json, Map, Value};

/// The schemes whose entries no run holds a view of: written here, never by [`entries::write`].
pub const VIEWLESS: [&str; 2] = ["memory", "history"];

/// Whether entries of `scheme` are the project's memory or history (written here alone).
pub fn is_viewless(scheme: Option<&str>) -> bool {
    scheme.is_some_and(|s| VIEWLESS.contains(&s))
}

/// Who wrote a memory: the run (its alias), the turn it was written in (the run's last turn
/// for a client's write) and the person (the user the run's or the caller's token names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance<'a> {
    /// The run's alias.
    pub run: &'a str,
    /// The turn.
    pub turn: i32,
    /// The user, when a token names one (the owner has none).
    pub user: Option<&'a str>,
    /// The writer tier (`model` or `client`).
    pub writer: Writer,
}

impl Provenance<'_> {
    /// The provenance as attributes (`run`, `turn`, `user`, `writer`).
    fn attributes(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("run".into(), Value::from(self.run));
        map.insert("turn".into(), Value::from(self.turn));
        map.insert("user".into(), self.user.map_or(Value::Null, Value::from));
        map.insert("writer".into(), Value::from(self.writer.as_str()));
        map
    }
}

/// One write of a project memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryWrite<'a> {
    /// The project.
    pub project_id: ProjectId,
    /// A normalised `memory://` path.
    pub path: &'a str,
    /// The new content.
    pub body: &'a str,
    /// Keywords for the memory; the current ones stay when `None`.
    pub summary: Option<&'a str>,
    /// Who writes it.
    pub provenance: Provenance<'a>,
}

/// What a memory write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remembered {
    /// A new memory (version 1).
    Added,
    /// The memory had other content: that version was archived at `archived`, and the path
    /// holds `version` now.
    Superseded {
        /// Where the replaced version is kept.
        archived: String,
        /// The new version's number.
        version: i64,
    },
    /// The memory already held this content (and summary): nothing was written.
    Unchanged,
}

/// A stored memory or history entry.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct Stored {
    /// The entry's id.
    pub id: i32,
    /// Its path.
    pub path: String,
    /// Its content.
    pub body: String,
    /// Its attributes (JSON text).
    pub attributes: String,
}

impl Stored {
    /// The attributes as a map (anything but an object reads as none).
    pub fn attribute_map(&self) -> Map<String, Value> {
        match serde_json::from_str(&self.attributes) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// The project's entry at `path` (a memory's current version, or a history entry).
pub fn current(
    conn: &mut Db,
    project_id: ProjectId,
    path: &str,
) -> Result<Option<Stored>, StoreError> {
    Ok(e::table
        .filter(e::scope.eq(Scope::Project(project_id).key()))
        .filter(e::path.eq(path))
        .select((e::id, e::path, e::body, e::attributes))
        .first(conn)
        .optional()?)
}

/// Writes a project memory as `w.provenance.writer`: a new one, a new version of one whose
/// content differs (the version before is archived, see the module doc), or nothing when it
/// already holds this content.
pub fn remember(
    conn: &mut Db,
    w: &MemoryWrite<'_>,
    at: WriteCtx,
) -> Result<Remembered, StoreError> {
    let scheme = scheme_of(w.path);
    if scheme.as_deref() != Some("memory") {
        return Err(StoreError::Invalid(format!(
            "{} is not a memory:// path",
            w.path
        )));
    }
    entries::admitted(w.path, scheme.as_deref(), w.provenance.writer)?;
    let scope = Scope::Project(w.project_id).key();
    let mut attributes = w.provenance.attributes();
    attributes.insert("validFrom".into(), Value::from(at.now.to_rfc3339()));
    let Some(before) = current(conn, w.project_id, w.path)? else {
        // A path whose memory was removed starts after its archived versions.
        let version = last_archived_version(conn, &scope, w.path)? + 1;
        attributes.insert("version".into(), Value::from(version));
        if let Some(summary) = w.summary {
            attributes.insert("summary".into(), Value::from(summary));
        }
        let id = insert(conn, &scope, w.path, "memory", w.body, &attributes, at)?;
        index(conn, id)?;
        return Ok(Remembered::Added);
    };
    let old = before.attribute_map();
    let old_summary = old.get("summary").and_then(Value::as_str);
    let summary = w.summary.or(old_summary);
    if before.body == w.body && summary == old_summary {
        return Ok(Remembered::Unchanged);
    }
    let version = old.get("version").and_then(Value::as_i64).unwrap_or(1);
    let archived_path = format!("{}@{version}", w.path);
    let mut archived = old.clone();
    archived.insert(
        "supersededBy".into(),
        json!({ "path": w.path, "version": version + 1 }),
    );
    archived.insert("validTo".into(), Value::from(at.now.to_rfc3339()));
    insert(
        conn,
        &scope,
        &archived_path,
        "memory",
        &before.body,
        &archived,
        at,
    )
    .map_err(|err| match err {
        StoreError::Db(ref db) if super::is_unique_violation(db) => {
            StoreError::Conflict(format!("{archived_path} is already stored"))
        }
        other => other,
    })?;
    attributes.insert("version".into(), Value::from(version + 1));
    attributes.insert("supersedes".into(), Value::from(archived_path.clone()));
    if let Some(summary) = summary {
        attributes.insert("summary".into(), Value::from(summary));
    }
    diesel::update(e::table.find(before.id))
        .set((
            e::body.eq(w.body),
            e::attributes.eq(Value::Object(attributes).to_string()),
            e::hash.eq(hex_sha256(w.body)),
            e::tokens.eq(tokens::estimate(w.body, at.divisor)),
            e::updated_at.eq(at.now.0),
        ))
        .execute(conn)?;
    index(conn, before.id)?;
    Ok(Remembered::Superseded {
        archived: archived_path,
        version: version + 1,
    })
}

/// What removing a memory did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forgotten {
    /// The memory's last version was archived at `archived`; the path holds nothing now, so
    /// recall no longer finds it.
    Removed {
        /// Where its last version is kept.
        archived: String,
    },
    /// The project holds no memory at the path.
    Absent,
}

/// Removes the project's memory at `path` as `provenance` says (consolidation's cleanup of
/// what only mattered for a task): its last version is archived at `<path>@<version>` with
/// `removedBy` (the provenance), `removedBecause` (`reason`) and `validTo`, like a superseded
/// one, and the path is freed. Nothing is lost: a later memory at the path continues the
/// version numbers.
pub fn forget(
    conn: &mut Db,
    project_id: ProjectId,
    path: &str,
    provenance: Provenance<'_>,
    reason: Option<&str>,
    at: WriteCtx,
) -> Result<Forgotten, StoreError> {
    if scheme_of(path).as_deref() != Some("memory") {
        return Err(StoreError::Invalid(format!(
            "{path} is not a memory:// path"
        )));
    }
    let Some(before) = current(conn, project_id, path)? else {
        return Ok(Forgotten::Absent);
    };
    let mut archived = before.attribute_map();
    let version = archived.get("version").and_then(Value::as_i64).unwrap_or(1);
    let archived_path = format!("{path}@{version}");
    archived.insert("removedBy".into(), Value::Object(provenance.attributes()));
    if let Some(reason) = reason {
        archived.insert("removedBecause".into(), Value::from(reason));
    }
    archived.insert("validTo".into(), Value::from(at.now.to_rfc3339()));
    diesel::update(e::table.find(before.id))
        .set((
            e::path.eq(&archived_path),
            e::attributes.eq(Value::Object(archived).to_string()),
            e::updated_at.eq(at.now.0),
        ))
        .execute(conn)
        .map_err(|err| {
            if super::is_unique_violation(&err) {
                StoreError::Conflict(format!("{archived_path} is already stored"))
            } else {
                StoreError::Db(err)
            }
        })?;
    cached::<Unindex>(&[Bind::Int(before.id)]).execute(conn)?;
    Ok(Forgotten::Removed {
        archived: archived_path,
    })
}

/// The highest version archived for the memory at `path` in `scope` (0 when none): the
/// `<path>@<n>` entries sort between `<path>@` and `<path>A`, `A` following `@`.
fn last_archived_version(conn: &mut Db, scope: &str, path: &str) -> Result<i64, StoreError> {
    let (low, high) = (format!("{path}@"), format!("{path}A"));
    let archived: Vec<String> = e::table
        .filter(e::scope.eq(scope))
        .filter(e::path.ge(&low))
        .filter(e::path.lt(&high))
        .select(e::path)
        .load(conn)?;
    Ok(archived
        .iter()
        .filter_map(|p| p[low.len()..].parse::<i64>().ok())
        .max()
        .unwrap_or(0))
}

/// Inserts a project entry with no view; answers its id.
fn insert(
    conn: &mut Db,
    scope: &str,
    path: &str,
    scheme: &str,
    body: &str,
    attributes: &Map<String, Value>,
    at: WriteCtx,
) -> Result<i32, StoreError> {
    diesel::insert_into(e::table)
        .values((
            e::scope.eq(scope),
            e::path.eq(path),
            e::scheme.eq(scheme),
            e::body.eq(body),
            e::attributes.eq(Value::Object(attributes.clone()).to_string()),
            e::hash.eq(hex_sha256(body)),
            e::tokens.eq(tokens::estimate(body, at.divisor)),
            e::created_at.eq(at.now.0),
            e::updated_at.eq(at.now.0),
        ))
        .execute(conn)?;
    Ok(e::table
        .filter(e::scope.eq(scope))
        .filter(e::path.eq(path))
        .select(e::id)
        .first(conn)?)
}

/// Writes a `history://` entry of the project at `base` (`history://<date>/<run>/<loop>`), or
/// at `base_2`, `base_3`, … when a run of the same alias already recorded that loop that day
/// (a renamed run's old alias taken again): a history entry is never rewritten. Answers its
/// path. The entry is indexed for recall.
pub fn record_history(
    conn: &mut Db,
    project_id: ProjectId,
    base: &str,
    body: &str,
    attributes: &Map<String, Value>,
    at: WriteCtx,
) -> Result<String, StoreError> {
    let (path, id) = insert_history(conn, project_id, base, body, attributes, at)?;
    index(conn, id)?;
    Ok(path)
}

/// [`record_history`] without indexing the entry: the loop's finishing write indexes it with the
/// loop's facts ([`index_loop`]). Answers its path and id.
pub fn insert_history(
    conn: &mut Db,
    project_id: ProjectId,
    base: &str,
    body: &str,
    attributes: &Map<String, Value>,
    at: WriteCtx,
) -> Result<(String, i32), StoreError> {
    entries::admitted(base, Some("history"), Writer::Plugin)?;
    let scope = Scope::Project(project_id).key();
    let mut path = base.to_owned();
    for k in 2..=1_000 {
        // In a savepoint: PostgreSQL aborts the whole transaction on a failed statement
        // unless the savepoint around it is rolled back.
        match conn.transaction(|c| insert(c, &scope, &path, "history", body, attributes, at)) {
            Ok(id) => return Ok((path, id)),
            // The path is taken (rare): the next one is tried; the failed statement changed
            // nothing.
            Err(StoreError::Db(e)) if super::is_unique_violation(&e) => {
                path = format!("{base}_{k}");
            }
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Conflict(format!("no free path after {base}")))
}

/// An entry as [`list`] reads it: id, path, scheme, body, attributes, tokens, last change.
type ListedRow = (i32, String, Option<String>, String, String, i32, i64);

/// A page of the project's `memory` or `history` entries (what `getEntries` lists for those
/// schemes, which no run has views of), oldest first, as rows a view would give: resolved,
/// visible — archived for a superseded or removed memory — at the turn of their provenance.
pub fn list(
    conn: &mut Db,
    project_id: ProjectId,
    scheme: &str,
    pattern: Option<&str>,
    body_filter: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<Vec<ViewRow>, StoreError> {
    let mut query = e::table
        .filter(e::scope.eq(Scope::Project(project_id).key()))
        .filter(e::scheme.eq(scheme.to_owned()))
        .into_boxed();
    let in_sql = entries::patterns_in_sql(conn);
    if in_sql {
        if let Some(pattern) = pattern {
            query = query.filter(
                sql::<Bool>("hedmatch(")
                    .bind::<Text, _>(pattern.to_owned())
                    .sql(", entries.path)"),
            );
        }
        if let Some(body) = body_filter {
            query = query.filter(
                sql::<Bool>("hedsearch(")
                    .bind::<Text, _>(body.to_owned())
                    .sql(", entries.body)"),
            );
        }
    }
    let query = query.order(e::id.asc()).select((
        e::id,
        e::path,
        e::scheme,
        e::body,
        e::attributes,
        e::tokens,
        e::updated_at,
    ));
    let rows: Vec<ListedRow> = if in_sql || (pattern.is_none() && body_filter.is_none()) {
        query
            .limit(limit)
            .offset(offset)
            .load(conn)
            .map_err(entries::filter_error)?
    } else {
        let rows: Vec<ListedRow> = query.load(conn)?;
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            if entries::passes(pattern, body_filter, &row.1, &row.3)? {
                kept.push(row);
            }
        }
        entries::page(kept, limit, offset)
    };
    Ok(rows
        .into_iter()
        .map(|(id, path, scheme, body, attributes, tokens, updated_at)| {
            let parsed: Value = serde_json::from_str(&attributes).unwrap_or(Value::Null);
            let superseded =
                parsed.get("supersededBy").is_some() || parsed.get("removedBy").is_some();
            let turn = parsed
                .get("turn")
                .and_then(Value::as_i64)
                .and_then(|t| i32::try_from(t).ok())
                .unwrap_or(0);
            ViewRow {
                view_id: id,
                path,
                scheme,
                body,
                attributes,
                tokens,
                state: State::Resolved,
                outcome: None,
                visibility: if superseded {
                    Visibility::Archived
                } else {
                    Visibility::Visible
                },
                turn,
                rev: 0,
                updated_at,
            }
        })
        .collect())
}

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
struct Unindex;
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

/// One entry the full-text index matched, with its bm25 score (lower is better).
#[derive(Debug, Clone, Copy, PartialEq, QueryableByName)]
pub struct Scored {
    /// The entry's id.
    #[diesel(sql_type = Integer)]
    pub id: i32,
    /// bm25 over the indexed path (weight 2) and body (weight 1); negative, lower is better.
    #[diesel(sql_type = Double)]
    pub bm25: f64,
}

/// Length from which a term also matches the words it is the beginning of (`listen` finds
/// `listens`), in the index and in recall's reading of a candidate alike.
pub const PREFIX_MIN: usize = 4;

/// What recall searches the index for: entries of `project_id` holding any of `terms` (a term
/// of [`PREFIX_MIN`] characters or more also matches the words it begins), leaving out
/// `except_run`'s own entries and history lines.
#[derive(Debug, Clone, Copy)]
pub struct RecallQuery<'a> {
    /// Words, lower-cased, letters and digits only (`memory::terms::query_terms`).
    pub terms: &'a [String],
    /// The project searched.
    pub project_id: ProjectId,
    /// The run whose own entries are not recalled to it.
    pub except_run: Option<RunId>,
}

/// The best `limit` entries for an FTS5 `MATCH` expression, best first.
struct MatchRecall;
impl StaticSql for MatchRecall {
    // The owner column carries no weight: every candidate matches it.
    const SQL: &'static str = "SELECT rowid AS id, bm25(recall_index, 0.0, 2.0, 1.0) AS bm25 \
        FROM recall_index WHERE recall_index MATCH ? ORDER BY bm25 LIMIT ?";
}

/// The best `limit` entries for a `tsquery`, in a project, except a run's (PostgreSQL). The
/// body counts half the path and summary, as bm25's weights above; `ts_rank` has no term
/// rarity, so ranks differ from bm25's while the matches are the same. Negated: lower is
/// better, as with bm25.
struct MatchRecallPg;
impl StaticSql for MatchRecallPg {
    const SQL: &'static str = "SELECT id, \
        CAST(-ts_rank('{0.5, 0, 0, 1}', document, query, 1) AS DOUBLE PRECISION) AS bm25 \
        FROM recall_index, to_tsquery('simple', ?) AS query \
        WHERE project_id = ? AND run_id IS DISTINCT FROM ? AND document @@ query \
        ORDER BY bm25, id LIMIT ?";
}

/// The best `limit` entries the full-text index finds for `query`, best first; none without
/// terms.
pub fn recall_matches(
    conn: &mut Db,
    query: &RecallQuery<'_>,
    limit: i32,
) -> Result<Vec<Scored>, StoreError> {
    if query.terms.is_empty() {
        return Ok(Vec::new());
    }
    Ok(match conn {
        Db::Sqlite(_) => {
            let expression = fts5_expression(query);
            cached::<MatchRecall>(&[Bind::Text(&expression), Bind::Int(limit)]).load(conn)?
        }
        Db::Pg(_) => {
            let tsquery = query
                .terms
                .iter()
                .map(|t| tsquery_term(t, t.chars().count() >= PREFIX_MIN))
                .collect::<Vec<_>>()
                .join(" | ");
            cached::<MatchRecallPg>(&[
                Bind::Text(&tsquery),
                Bind::Int(query.project_id.0),
                // Ids start at 1: 0 leaves no run out.
                Bind::Int(query.except_run.map_or(0, |r| r.0)),
                Bind::Int(limit),
            ])
            .load(conn)?
        }
    })
}

/// The FTS5 expression of `query`: its terms quoted (so nothing a prompt holds — quotes, `*`,
/// `NEAR`, `column:` — reaches `MATCH` as FTS5 syntax), within the project's owner token
/// (`p<project>`), without the run's (`r<run>`; migration 000040).
fn fts5_expression(query: &RecallQuery<'_>) -> String {
    let any: Vec<String> = query
        .terms
        .iter()
        .map(|term| {
            let mut out = format!("\"{}\"", term.replace('"', "\"\""));
            if term.chars().count() >= PREFIX_MIN {
                out.push_str(" *");
            }
            out
        })
        .collect();
    let within = format!(
        "owner : \"p{}\" AND ({})",
        query.project_id,
        any.join(" OR ")
    );
    match query.except_run {
        Some(run) => format!("({within}) NOT owner : \"r{run}\""),
        None => within,
    }
}

/// One term for PostgreSQL's `to_tsquery`: quoted (nothing in it read as an operator), `:*`
/// for a `prefix` term.
fn tsquery_term(term: &str, prefix: bool) -> String {
    let mut out = format!("'{}'", term.replace('\\', "\\\\").replace('\'', "''"));
    if prefix {
        out.push_str(":*");
    }
    out
}

/// How many indexed entries hold `term` (for a prefix term, the words it begins): an
/// estimate, which is all choosing the rarest terms needs (SQLite sums over the words a prefix
/// begins; PostgreSQL counts each entry once).
pub fn term_frequency(conn: &mut Db, term: &str, prefix: bool) -> Result<i64, StoreError> {
    let frequency = match conn {
        Db::Sqlite(_) if prefix => {
            let upper = format!("{term}{}", char::MAX);
            cached::<TermsFrom>(&[Bind::Text(term), Bind::Text(&upper)])
                .get_result::<Frequency>(conn)?
        }
        Db::Sqlite(_) => cached::<TermIs>(&[Bind::Text(term)]).get_result::<Frequency>(conn)?,
        Db::Pg(_) => cached::<TermDocs>(&[Bind::Text(&tsquery_term(term, prefix))])
            .get_result::<Frequency>(conn)?,
    };
    Ok(frequency.doc)
}

#[derive(QueryableByName)]
struct Frequency {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    doc: i64,
}

/// Entries holding one term (`recall_terms`, the index's vocabulary, looked up by term).
struct TermIs;
impl StaticSql for TermIs {
    const SQL: &'static str =
        "SELECT coalesce(sum(doc), 0) AS doc FROM recall_terms WHERE term = ?";
}

/// Entries holding the words a prefix begins (a range of the vocabulary).
struct TermsFrom;
impl StaticSql for TermsFrom {
    const SQL: &'static str =
        "SELECT coalesce(sum(doc), 0) AS doc FROM recall_terms WHERE term >= ? AND term < ?";
}

/// Entries holding one `tsquery` term (PostgreSQL: counted through the GIN index).
struct TermDocs;
impl StaticSql for TermDocs {
    const SQL: &'static str =
        "SELECT count(*) AS doc FROM recall_index WHERE document @@ to_tsquery('simple', ?)";
}

/// A candidate entry of recall, as read for scoring.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct CandidateRow {
    /// The entry's id.
    pub id: i32,
    /// Its scope key (`project:<id>` or `run:<id>`).
    pub scope: String,
    /// Its path.
    pub path: String,
    /// Its scheme.
    pub scheme: Option<String>,
    /// Its content.
    pub body: String,
    /// Its attributes (JSON text).
    pub attributes: String,
    /// The hash of its content.
    pub hash: String,
    /// When it last changed.
    pub updated_at: i64,
}

/// The entries `ids` (in no particular order).
pub fn candidate_rows(conn: &mut Db, ids: &[i32]) -> Result<Vec<CandidateRow>, StoreError> {
    Ok(e::table
        .filter(e::id.eq_any(ids))
        .select((
            e::id,
            e::scope,
            e::path,
            e::scheme,
            e::body,
            e::attributes,
            e::hash,
            e::updated_at,
        ))
        .load(conn)?)
}

/// The aliases of the runs `ids`: (id, alias).
pub fn run_aliases(conn: &mut Db, ids: &[i32]) -> Result<Vec<(i32, String)>, StoreError> {
    Ok(runs::table
        .filter(runs::id.eq_any(ids))
        .select((runs::id, runs::alias))
        .load(conn)?)
}

/// Which of `paths` the run holds in its own scope with the same content as given: (path,
/// hash) pairs it has (a fork's copies of its parent's facts, which it sees already).
pub fn held_by_run(
    conn: &mut Db,
    run_id: RunId,
    paths: &[&str],
) -> Result<Vec<(String, String)>, StoreError> {
    Ok(e::table
        .filter(e::scope.eq(Scope::Run(run_id).key()))
        .filter(e::path.eq_any(paths))
        .select((e::path, e::hash))
        .load(conn)?)
}

/// The run's `recall://<loop>` of its current loop (the last one not queued): its body and
/// attributes, when that loop recalled anything.
pub fn recall_of_current_loop(
    conn: &mut Db,
    run_id: RunId,
) -> Result<Option<(String, String, String)>, StoreError> {
    let sequence: Option<i32> = loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.ne(super::loops::QUEUED))
        .order(loops::sequence.desc())
        .select(loops::sequence)
        .first(conn)
        .optional()?;
    let Some(sequence) = sequence else {
        return Ok(None);
    };
    Ok(e::table
        .filter(e::scope.eq(Scope::Run(run_id).key()))
        .filter(e::path.eq(format!("recall://{sequence}")))
        .select((e::path, e::body, e::attributes))
        .first(conn)
        .optional()?)
}

/// The run's `known://` facts, newest first, at most `limit`: (path, body).
pub fn run_facts(
    conn: &mut Db,
    run_id: RunId,
    limit: i64,
) -> Result<Vec<(String, String)>, StoreError> {
    Ok(e::table
        .filter(e::scope.eq(Scope::Run(run_id).key()))
        .filter(e::scheme.eq("known"))
        .order((e::updated_at.desc(), e::id.desc()))
        .limit(limit)
        .select((e::path, e::body))
        .load(conn)?)
}

/// The body of the last `update://` the loop `loop_id` of the run wrote, if any: what a
/// history entry says the loop ended with.
pub fn last_update_of_loop(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
) -> Result<Option<String>, StoreError> {
    Ok(run_views::table
        .inner_join(e::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::loop_id.eq(loop_id))
        .filter(e::scope.eq(Scope::Run(run_id).key()))
        .filter(e::scheme.eq("update"))
        .order(e::id.desc())
        .select(e::body)
        .first(conn)
        .optional()?)
}

/// The run's view of its loop `loop_number`'s `recall://` entry while the model still sees it:
/// archived when the loop ends (a recall is context for its own loop only).
pub fn visible_recall_of_loop(
    conn: &mut Db,
    run_id: RunId,
    loop_number: i32,
) -> Result<Option<i32>, StoreError> {
    Ok(e::table
        .inner_join(run_views::table)
        .filter(e::scope.eq(Scope::Run(run_id).key()))
        .filter(e::path.eq(format!("recall://{loop_number}")))
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::visibility.ne(Visibility::Archived.as_str()))
        .select(run_views::id)
        .first(conn)
        .optional()?)
}

#[cfg(test)]
mod tests;
