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

use super::cached::{cached, Bind};
use super::entries::{self, hex_sha256, ViewRow};
use super::StoreError;
use crate::db::Db;
use crate::entries::WriteCtx;
use crate::entry::{Scope, State, Visibility, Writer};
use crate::ids::ProjectId;
use crate::schema::entries as e;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use rummy_text::path::scheme_of;
use rummy_text::token_estimate;
use serde_json::{json, Map, Value};

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
            e::tokens.eq(token_estimate::estimate(w.body, at.divisor)),
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
            e::tokens.eq(token_estimate::estimate(body, at.divisor)),
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

mod indexing;
mod recall;

use indexing::Unindex;

pub use indexing::{index, index_loop};
pub use recall::{
    candidate_rows, held_by_run, last_update_of_loop, recall_matches, recall_of_current_loop,
    run_aliases, run_facts, term_frequency, visible_recall_of_loop, CandidateRow, RecallQuery,
    Scored, PREFIX_MIN,
};

#[cfg(test)]
mod tests;
