//! What a pattern call with a body filter selects, chosen so the filter never runs on the
//! store's writer.
//!
//! A client's call (`get`, `rm`, `set` on every match): [`choose`] judges the filter on a read
//! connection, [`rows`] reads the chosen views fresh inside the write. The model's `get`, `set`
//! and `rm` in a turn's dispatch: the handler finds no [`Judged`] for its (pattern, filter) in
//! the dispatch's [`Judgements`] — or one whose candidates changed since — and fails with
//! [`StoreError::Unjudged`] before it writes anything; the batch stops before that command,
//! the executor reads the [`candidates`] on a read connection, [`judge`]s them on a blocking
//! thread, and dispatches on from that command with the judgement.

use super::audit::FULL_BODY_SQL;
use super::entries::{self, ViewRow};
use super::StoreError;
use crate::db::Db;
use crate::ids::RunId;
use crate::schema::{entries as e, run_views as v};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use rummy_text::path::normalize;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// How many times one turn judges a (pattern, filter) again because its candidates changed
/// between the judgement and the write, before that command fails as a conflict.
pub const MAX_REJUDGED: u32 = 3;

/// The views a pattern call changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every view whose path matches this normalised pattern, matched inside the write
    /// (a path pattern is cheap and judges only short paths).
    Pattern(String),
    /// These views, chosen by a body filter before the write; one removed since is left out.
    Views(Vec<i32>),
}

impl Selection {
    /// Every match of `pattern`, without a body filter.
    pub fn pattern(pattern: &str) -> Result<Selection, StoreError> {
        normalize(pattern)
            .map(Selection::Pattern)
            .map_err(|err| StoreError::Invalid(err.to_string()))
    }
}

/// Chooses the run's views that `pattern` and `body_filter` select. With a body filter the
/// filter runs here, on `conn`: call it on a read connection, off the writer, so a slow or
/// refused filter delays only its own call.
pub fn choose(
    conn: &mut Db,
    run_id: RunId,
    pattern: &str,
    body_filter: Option<&str>,
) -> Result<Selection, StoreError> {
    let selection = Selection::pattern(pattern)?;
    let (Selection::Pattern(pattern), Some(filter)) = (&selection, body_filter) else {
        return Ok(selection);
    };
    let rows = matching(conn, run_id, pattern, Some(filter))?;
    Ok(Selection::Views(
        rows.into_iter().map(|r| r.view_id).collect(),
    ))
}

/// The run's views `selection` names, as they are now on `conn`, oldest first.
pub fn rows(
    conn: &mut Db,
    run_id: RunId,
    selection: &Selection,
) -> Result<Vec<ViewRow>, StoreError> {
    match selection {
        Selection::Pattern(pattern) => matching(conn, run_id, pattern, None),
        Selection::Views(ids) => Ok(v::table
            .inner_join(e::table)
            .filter(v::run_id.eq(run_id))
            .filter(v::id.eq_any(ids))
            .order(v::id.asc())
            .select(entries::VIEW_COLUMNS)
            .load(conn)?),
    }
}

/// A path pattern and the body filter that narrows what it matches: what a command needs judged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FilterCall {
    /// The normalised path pattern.
    pub pattern: String,
    /// The body filter (XPath, JSONPath, regex, glob or literal).
    pub filter: String,
}

/// Why a judgement selects nothing to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unjudgeable {
    /// The filter refused a candidate's body (over a limit): the command fails with this.
    Refused(String),
    /// The candidates kept changing between judgement and write ([`MAX_REJUDGED`] times).
    Moving,
}

/// A body filter judged off the writer: the candidates as they were judged (each view and a
/// fingerprint of its body) and the views that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    candidates: Vec<(i32, u64)>,
    passed: Result<HashSet<i32>, Unjudgeable>,
}

impl Judged {
    /// Whether `rows` — the pattern's matches as the write reads them — are the candidates as
    /// judged: the same views with the same bodies.
    pub fn fits(&self, rows: &[ViewRow]) -> bool {
        matches!(self.passed, Err(Unjudgeable::Moving))
            || (rows.len() == self.candidates.len()
                && rows
                    .iter()
                    .zip(&self.candidates)
                    .all(|(r, (id, print))| r.view_id == *id && fingerprint(&r.body) == *print))
    }

    /// `rows` narrowed to those that passed the filter, or why none can be acted on.
    pub fn apply(&self, mut rows: Vec<ViewRow>) -> Result<Vec<ViewRow>, StoreError> {
        match &self.passed {
            Ok(passed) => {
                rows.retain(|r| passed.contains(&r.view_id));
                Ok(rows)
            }
            Err(Unjudgeable::Refused(message)) => Err(StoreError::Invalid(message.clone())),
            Err(Unjudgeable::Moving) => Err(StoreError::Conflict(
                "the entries the body filter reads kept changing while it was judged; send the \
                 command again"
                    .to_owned(),
            )),
        }
    }
}

/// The judgements a turn's dispatch reads, and how often each was judged anew.
#[derive(Debug, Clone, Default)]
pub struct Judgements {
    judged: HashMap<FilterCall, Judged>,
    rejudged: HashMap<FilterCall, u32>,
}

impl Judgements {
    /// The judgement of `call`, if one was made.
    pub fn get(&self, call: &FilterCall) -> Option<&Judged> {
        self.judged.get(call)
    }

    /// Whether `call` was judged, and judged anew [`MAX_REJUDGED`] times already: its
    /// candidates keep changing, so the command should fail rather than be judged again.
    pub fn exhausted(&self, call: &FilterCall) -> bool {
        self.rejudged.get(call).copied().unwrap_or(0) >= MAX_REJUDGED
    }

    /// Keeps `judged` for `call` (a judgement made before counts as judged anew).
    pub fn insert(&mut self, call: FilterCall, judged: Judged) {
        if let Some(before) = self.judged.insert(call.clone(), judged) {
            if before.passed != Err(Unjudgeable::Moving) {
                *self.rejudged.entry(call).or_default() += 1;
            }
        }
    }

    /// Gives up judging `call`: the command fails as a conflict.
    pub fn give_up(&mut self, call: FilterCall) {
        self.judged.insert(
            call,
            Judged {
                candidates: Vec::new(),
                passed: Err(Unjudgeable::Moving),
            },
        );
    }
}

/// The views of the run whose path matches `call`'s pattern, with their bodies, oldest first:
/// what [`judge`] reads. Call it on a read connection.
pub fn candidates(
    conn: &mut Db,
    run_id: RunId,
    call: &FilterCall,
) -> Result<Vec<(i32, String)>, StoreError> {
    Ok(matching(conn, run_id, &call.pattern, None)?
        .into_iter()
        .map(|r| (r.view_id, r.body))
        .collect())
}

/// Runs `call`'s body filter over `candidates` (each body checked against the filter limits
/// first): pure work that may take long, for a blocking thread, never the writer.
pub fn judge(call: &FilterCall, candidates: &[(i32, String)]) -> Judged {
    let mut passed = HashSet::new();
    let mut refused = None;
    for (view_id, body) in candidates {
        match rummy_text::hedberg::hedfilter(&call.filter, body) {
            Ok(Some(_)) => {
                passed.insert(*view_id);
            }
            Ok(None) => {}
            Err(refusal) => {
                refused = Some(entries::refused_filter(refusal).to_string());
                break;
            }
        }
    }
    Judged {
        candidates: candidates
            .iter()
            .map(|(id, body)| (*id, fingerprint(body)))
            .collect(),
        passed: refused.map_or(Ok(passed), |m| Err(Unjudgeable::Refused(m))),
    }
}

/// A body's fingerprint: a change between judgement and write shows as another value.
fn fingerprint(body: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish()
}

/// The run's entries whose path matches `pattern` (and whose body contains `body_filter`), oldest view first.
pub fn matching(
    conn: &mut Db,
    run_id: RunId,
    pattern: &str,
    body_filter: Option<&str>,
) -> Result<Vec<ViewRow>, StoreError> {
    let mut query = v::table
        .inner_join(e::table)
        .filter(v::run_id.eq(run_id))
        .into_boxed();
    let in_sql = entries::patterns_in_sql(conn);
    if in_sql {
        query = query.filter(
            sql::<Bool>("hedmatch(")
                .bind::<Text, _>(pattern.to_owned())
                .sql(", entries.path)"),
        );
        if let Some(filter) = body_filter {
            query = query.filter(
                sql::<Bool>("hedsearch(")
                    .bind::<Text, _>(filter.to_owned())
                    .sql(", ")
                    .sql(FULL_BODY_SQL)
                    .sql(")"),
            );
        }
    }
    let rows: Vec<ViewRow> = query
        .order(v::id.asc())
        .select(entries::VIEW_COLUMNS)
        .load(conn)
        .map_err(entries::filter_error)?;
    if in_sql {
        return Ok(rows);
    }
    let mut kept = Vec::with_capacity(rows.len());
    for r in rows {
        if entries::passes(Some(pattern), body_filter, &r.path, &r.body)? {
            kept.push(r);
        }
    }
    Ok(kept)
}
