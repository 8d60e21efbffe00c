//! Recall's look-ups: the entries of a project the full-text index matches, their bm25 score,
//! how often a term occurs, and the rows, runs and loop facts recall reads back.

use crate::cached::{cached, Bind, StaticSql};
use crate::db::Db;
use crate::entry::{Scope, Visibility};
use crate::ids::{LoopId, ProjectId, RunId};
use crate::schema::{entries as e, loops, run_views, runs};
use crate::StoreError;
use diesel::prelude::*;
use diesel::sql_types::{Double, Integer};

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
pub(super) fn fts5_expression(query: &RecallQuery<'_>) -> String {
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
pub(super) fn tsquery_term(term: &str, prefix: bool) -> String {
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
        .filter(loops::status.ne(crate::loops::QUEUED))
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
