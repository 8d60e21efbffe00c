//! Reading entries through run views: a view row, a run's context, filtered lists, changes since
//! a revision, history, unknowns, the latest summary, an entry by path, and forking a run's views.

use super::RunRef;
use crate::audit::{FullBody, FULL_BODY_SQL};
use crate::db::Db;
use crate::entry::{Category, Scope, State, Visibility};
use crate::ids::{ProjectId, RunId};
use crate::schema::{entries, run_views};
use crate::schemes;
use crate::{runs, StoreError};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use rummy_protocol::ProposalKind;
use rummy_provider::time::Millis;
use rummy_text::path::scheme_of;
use serde_json::Value;
use std::collections::HashMap;

/// An entry as one run sees it.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct ViewRow {
    /// The view's id.
    pub view_id: i32,
    /// The entry's path.
    pub path: String,
    /// Its scheme (`None` for files).
    pub scheme: Option<String>,
    /// The body.
    pub body: String,
    /// Attributes as JSON text.
    pub attributes: String,
    /// What promoting the body costs.
    pub tokens: i32,
    /// The view's state.
    pub state: State,
    /// The outcome.
    pub outcome: Option<String>,
    /// The view's visibility.
    pub visibility: Visibility,
    /// Turn of the last write.
    pub turn: i32,
    /// Revision of the last write.
    pub rev: i32,
    /// Last content change.
    pub updated_at: i64,
}

/// The column tuple behind [`ViewRow`].
pub type ViewColumns = (
    run_views::id,
    entries::path,
    entries::scheme,
    FullBody,
    entries::attributes,
    entries::tokens,
    run_views::state,
    run_views::outcome,
    run_views::visibility,
    run_views::turn,
    run_views::rev,
    entries::updated_at,
);

/// The columns of a [`ViewRow`], for queries in other store modules.
pub const VIEW_COLUMNS: ViewColumns = (
    run_views::id,
    entries::path,
    entries::scheme,
    FullBody,
    entries::attributes,
    entries::tokens,
    run_views::state,
    run_views::outcome,
    run_views::visibility,
    run_views::turn,
    run_views::rev,
    entries::updated_at,
);

impl ViewRow {
    /// The attributes as a JSON object.
    pub fn attributes(&self) -> Value {
        serde_json::from_str(&self.attributes).unwrap_or_else(|_| Value::Object(Default::default()))
    }

    /// The attributes as a map (they are written as an object; anything else reads as none).
    pub fn attribute_map(&self) -> serde_json::Map<String, Value> {
        match self.attributes() {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }

    /// When it is (or was) a tool's proposal, its kind ([`ProposalKind::of`]: its attributes
    /// hold the index of the command that made it). An entry a client marked `proposed` is none.
    pub fn proposal(&self) -> Option<ProposalKind> {
        // Most entries are no proposal: their text says so without being parsed.
        if !self.attributes.contains(ProposalKind::MARK) {
            return None;
        }
        ProposalKind::of(&self.attribute_map())
    }

    /// Whether it is a tool's proposal waiting for a decision.
    pub fn is_pending_proposal(&self) -> bool {
        self.state == State::Proposed && self.proposal().is_some()
    }

    /// The hash a client approves ([`crate::approval::hash`]), while it is a pending
    /// proposal.
    pub fn proposal_hash(&self) -> Option<String> {
        self.is_pending_proposal()
            .then(|| crate::approval::hash(&self.attributes(), &self.body))
    }

    /// The mode a `prompt://` entry was written in (its `mode` attribute), if it names one.
    pub fn prompt_mode(&self) -> Option<crate::run::Mode> {
        self.attributes()
            .get("mode")
            .and_then(Value::as_str)
            .and_then(crate::run::Mode::parse)
    }

    /// The entry's category from the scheme registry (`None` for an unregistered scheme).
    pub fn category(&self) -> Option<Category> {
        schemes::lookup(self.scheme.as_deref()).map(|s| s.category)
    }

    /// The scheme name used for rendering: `file` for bare paths.
    pub fn tag(&self) -> &str {
        self.scheme.as_deref().unwrap_or("file")
    }
}

/// The rows the model may see this turn, in context order: category, skills
/// first, summarized before visible, then by turn and age.
pub fn context_rows(conn: &mut Db, run_id: RunId) -> Result<Vec<ViewRow>, StoreError> {
    let mut rows: Vec<ViewRow> = crate::on_backend!(conn, c => run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::visibility.ne(Visibility::Archived))
        .select(VIEW_COLUMNS)
        .load(c))?;
    rows.retain(in_context);
    in_context_order(&mut rows);
    Ok(rows)
}

/// Whether the model may see a row: not archived, of a scheme the model sees.
pub(crate) fn in_context(row: &ViewRow) -> bool {
    row.visibility != Visibility::Archived
        && schemes::lookup(row.scheme.as_deref()).is_some_and(|s| s.model_visible)
}

/// Sorts rows into context order; the view id last, so the order is total.
pub(crate) fn in_context_order(rows: &mut [ViewRow]) {
    // The key looks the scheme up in the registry: once per row, not twice per comparison.
    rows.sort_by_cached_key(|r| {
        (
            r.category().map_or(9, Category::rank),
            r.scheme.as_deref() != Some("skill"),
            r.visibility != Visibility::Summarized,
            r.turn,
            r.updated_at,
            r.view_id,
        )
    });
}

/// Filters for listing a run's entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryFilter {
    /// Only this scheme (`file` for bare paths).
    pub scheme: Option<String>,
    /// Only this state.
    pub state: Option<State>,
    /// Only this visibility.
    pub visibility: Option<Visibility>,
    /// Only paths matching this hedberg pattern.
    pub pattern: Option<String>,
    /// Only bodies matching this hedberg pattern.
    pub body_filter: Option<String>,
}

/// A page of the run's entries in the order they were first seen.
pub fn list(
    conn: &mut Db,
    run_id: RunId,
    filter: &EntryFilter,
    limit: i64,
    offset: i64,
) -> Result<Vec<ViewRow>, StoreError> {
    let mut query = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .into_boxed();
    match filter.scheme.as_deref() {
        Some("file") => query = query.filter(entries::scheme.is_null()),
        Some(s) => query = query.filter(entries::scheme.eq(s.to_owned())),
        None => {}
    }
    if let Some(state) = filter.state {
        query = query.filter(run_views::state.eq(state));
    }
    if let Some(v) = filter.visibility {
        query = query.filter(run_views::visibility.eq(v));
    }
    let in_sql = patterns_in_sql(conn);
    if in_sql {
        if let Some(pattern) = &filter.pattern {
            query = query.filter(
                sql::<Bool>("hedmatch(")
                    .bind::<Text, _>(pattern.clone())
                    .sql(", entries.path)"),
            );
        }
        if let Some(body) = &filter.body_filter {
            query = query.filter(
                sql::<Bool>("hedsearch(")
                    .bind::<Text, _>(body.clone())
                    .sql(", ")
                    .sql(FULL_BODY_SQL)
                    .sql(")"),
            );
        }
    }
    let query = query.order(run_views::id.asc()).select(VIEW_COLUMNS);
    if in_sql || (filter.pattern.is_none() && filter.body_filter.is_none()) {
        return query
            .limit(limit)
            .offset(offset)
            .load(conn)
            .map_err(filter_error);
    }
    let rows: Vec<ViewRow> = query.load(conn)?;
    let mut kept = Vec::with_capacity(rows.len());
    for r in rows {
        let (pattern, body_filter) = (filter.pattern.as_deref(), filter.body_filter.as_deref());
        if passes(pattern, body_filter, &r.path, &r.body)? {
            kept.push(r);
        }
    }
    Ok(page(kept, limit, offset))
}

/// Whether hedberg patterns filter rows in SQL on `conn`: on SQLite, through the functions
/// registered on every connection; PostgreSQL has none (and its regex dialect is not Rust's),
/// so there the rows are read and [`passes`] judges them.
pub(crate) fn patterns_in_sql(conn: &Db) -> bool {
    matches!(conn, Db::Sqlite(_))
}

/// Whether a row at `path` holding `body` passes `pattern` and `body_filter`, judged as the
/// SQL functions `hedmatch` and `hedsearch` judge them: a body over the filter's limits
/// fails the whole query, as it does in SQL.
pub(crate) fn passes(
    pattern: Option<&str>,
    body_filter: Option<&str>,
    path: &str,
    body: &str,
) -> Result<bool, StoreError> {
    if !pattern.is_none_or(|p| rummy_text::hedberg::hedmatch(p, path)) {
        return Ok(false);
    }
    match body_filter {
        Some(f) => rummy_text::hedberg::hedfilter(f, body)
            .map(|found| found.is_some())
            .map_err(refused_filter),
        None => Ok(true),
    }
}

/// A body filter's refusal, as the caller's error: the call (or the model's command) fails,
/// nothing else does.
pub(crate) fn refused_filter(refused: rummy_text::hedberg::Refused) -> StoreError {
    StoreError::Invalid(format!("body filter: {refused}"))
}

/// A failed query's error: a body filter's refusal raised by `hedsearch` in SQL is the
/// caller's ([`refused_filter`]); anything else is the database's.
pub(crate) fn filter_error(err: diesel::result::Error) -> StoreError {
    match crate::hedberg_sql::refusal(&err) {
        Some(refused) => refused_filter(refused),
        None => StoreError::Db(err),
    }
}

/// `limit` rows of `rows` after the first `offset`, as SQL's `LIMIT`/`OFFSET` page them.
pub(crate) fn page<T>(rows: Vec<T>, limit: i64, offset: i64) -> Vec<T> {
    let skip = usize::try_from(offset).unwrap_or(0);
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    rows.into_iter().skip(skip).take(take).collect()
}

/// Views of the run written after revision `rev`, oldest first, audit, `run://` and files no
/// turn has touched left out.
pub fn changed_since(conn: &mut Db, run_id: RunId, rev: i32) -> Result<Vec<ViewRow>, StoreError> {
    let mut rows: Vec<ViewRow> = crate::on_backend!(conn, c => run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::rev.gt(rev))
        // Project files the run was given at loop start are context, not history, until a
        // turn touches them (`getEntries` lists them). Audit entries are never history: leaving
        // them out here spares reading the whole prompt back on every push. One comparison per
        // scheme: a name list or a subselect would make SQLite build a temporary table on
        // every push (and a list would make diesel prepare the statement anew).
        .filter(not_history().or(entries::scheme.is_null().and(run_views::turn.gt(0))))
        .order(run_views::rev.asc())
        .select(VIEW_COLUMNS)
        .load(c))?;
    rows.retain(is_history);
    Ok(rows)
}

/// Every history row of the run (what `getRun` returns), oldest first.
pub fn history(conn: &mut Db, run_id: RunId) -> Result<Vec<ViewRow>, StoreError> {
    changed_since(conn, run_id, -1)
}

fn is_history(row: &ViewRow) -> bool {
    row.scheme.as_deref() != Some("run") && !matches!(row.category(), Some(Category::Audit) | None)
}

/// The run's open questions: `unknown://` entries not archived — its own, and, with `shared`
/// (its project shares questions), the project's it sees.
pub fn unknowns(conn: &mut Db, run: RunRef, shared: bool) -> Result<Vec<ViewRow>, StoreError> {
    let mut rows = unknowns_in(conn, run.run_id, Scope::Run(run.run_id))?;
    if shared {
        rows.extend(unknowns_in(
            conn,
            run.run_id,
            Scope::Project(run.project_id),
        )?);
        rows.sort_by_key(|r| r.view_id);
    }
    Ok(rows)
}

/// The run's open questions in one scope: naming the scope lets SQLite start from the few
/// unknowns (`entries_scope_scheme`) instead of every view of the run — an `OR` of the two
/// scopes made it walk the run's views on every push.
fn unknowns_in(conn: &mut Db, run_id: RunId, scope: Scope) -> Result<Vec<ViewRow>, StoreError> {
    Ok(crate::on_backend!(conn, c => run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(entries::scope.eq(scope.key()))
        .filter(entries::scheme.eq("unknown"))
        .filter(run_views::visibility.ne(Visibility::Archived))
        .order(entries::id.asc())
        .select(VIEW_COLUMNS)
        .load(c))?)
}

diesel::define_sql_function! {
    /// `json_extract(attributes, '$.status')`: an entry's numeric status attribute.
    #[sql_name = "json_extract"]
    fn json_status(attributes: Text, path: Text) -> Nullable<Integer>;
}

fn status_of<E>(attributes: E) -> json_status<E, &'static str>
where
    E: diesel::expression::AsExpression<Text>,
{
    json_status(attributes, "$.status")
}

/// The schemes whose entries are never history: the audit trail and the run's own `run://`.
/// (`schemes` tests that these are exactly the audit schemes and `run`.)
pub const NOT_HISTORY: [&str; 8] = [
    "instructions",
    "system",
    "user",
    "assistant",
    "reasoning",
    "model",
    "content",
    "run",
];

/// `entries.scheme` is set and none of [`NOT_HISTORY`], as eight comparisons.
#[diesel::dsl::auto_type]
fn not_history() -> _ {
    let s: entries::scheme = entries::scheme;
    let a: &'static str = NOT_HISTORY[0];
    let b: &'static str = NOT_HISTORY[1];
    let c: &'static str = NOT_HISTORY[2];
    let d: &'static str = NOT_HISTORY[3];
    let e: &'static str = NOT_HISTORY[4];
    let f: &'static str = NOT_HISTORY[5];
    let g: &'static str = NOT_HISTORY[6];
    let h: &'static str = NOT_HISTORY[7];
    s.ne(a)
        .and(s.ne(b))
        .and(s.ne(c))
        .and(s.ne(d))
        .and(s.ne(e))
        .and(s.ne(f))
        .and(s.ne(g))
        .and(s.ne(h))
}

/// The body of the run's latest concluding update (status 200, 204 or 422), or "".
pub fn latest_summary(conn: &mut Db, run_id: RunId) -> Result<String, StoreError> {
    let updates = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        // Run-scoped, one entry per update: newest entry first, found through entries_scope_scheme.
        .filter(entries::scope.eq(Scope::Run(run_id).key()))
        .filter(entries::scheme.eq("update"))
        .order(entries::id.desc())
        .select(entries::body);
    // A numeric status attribute of 200, 204 or 422 (a string "200" is not one).
    let body: Option<String> = match conn {
        Db::Sqlite(c) => updates
            .filter(
                status_of(entries::attributes)
                    .eq(200)
                    .or(status_of(entries::attributes).eq(204))
                    .or(status_of(entries::attributes).eq(422)),
            )
            .first(c)
            .optional()?,
        Db::Pg(c) => updates
            .filter(sql::<Bool>(
                "(entries.attributes::jsonb -> 'status') IN ('200', '204', '422')",
            ))
            .first(c)
            .optional()?,
    };
    Ok(body.unwrap_or_default())
}

/// One entry of the run by exact (normalised) path.
///
/// The entry is looked up by its key, `(scope, path)` — the scope is the one its scheme keeps
/// entries in, as [`write`] files them — then joined to the run's view: no walk over all of the
/// run's views, which for a large project are thousands.
pub fn by_path(conn: &mut Db, run_id: RunId, path: &str) -> Result<Option<ViewRow>, StoreError> {
    use crate::schema::runs as runs_table;
    let Some(project_id) = crate::on_backend!(conn, c => runs_table::table
        .find(run_id)
        .select(runs_table::project_id)
        .first::<ProjectId>(c))
    .optional()?
    else {
        return Ok(None);
    };
    let Some(spec) = schemes::lookup(scheme_of(path).as_deref()) else {
        return Ok(None);
    };
    if spec.name == "unknown" {
        // A shared question is the project's (`store::shared`), seen through the run's view; it
        // took the place of the run's own question at that path, if there was one.
        let shared = view_at(conn, run_id, &Scope::Project(project_id).key(), path)?;
        if shared.is_some() {
            return Ok(shared);
        }
    }
    let scope = spec.default_scope.scope(project_id, run_id).key();
    view_at(conn, run_id, &scope, path)
}

/// The run's view of the entry `(scope, path)`, if it has one.
fn view_at(
    conn: &mut Db,
    run_id: RunId,
    scope: &str,
    path: &str,
) -> Result<Option<ViewRow>, StoreError> {
    Ok(crate::on_backend!(conn, c => run_views::table
        .inner_join(entries::table)
        .filter(entries::scope.eq(scope))
        .filter(entries::path.eq(path))
        .filter(run_views::run_id.eq(run_id))
        .select(VIEW_COLUMNS)
        .first(c))
    .optional()?)
}

/// Gives a forked run its own copies of the parent's run-scoped entries and
/// views, and views of the shared (project, global) entries, as they are now.
/// Nothing the child writes afterwards reaches the parent.
pub fn fork(
    conn: &mut Db,
    parent: RunRef,
    child: RunRef,
    now: Millis,
) -> Result<usize, StoreError> {
    let parent_scope = Scope::Run(parent.run_id).key();
    let child_scope = Scope::Run(child.run_id).key();
    type Source = (
        (i32, String, String, Option<String>),
        (String, String, Option<i32>, i32, i32),
        (String, String, i32),
        (i32, State, Option<String>, Visibility),
    );
    let sources: Vec<Source> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(parent.run_id))
        .order(run_views::id.asc())
        .select((
            (entries::id, entries::scope, entries::path, entries::scheme),
            (
                entries::body,
                FullBody,
                entries::base_id,
                entries::prefix_chars,
                entries::suffix_chars,
            ),
            (entries::attributes, entries::hash, entries::tokens),
            (
                run_views::turn,
                run_views::state,
                run_views::outcome,
                run_views::visibility,
            ),
        ))
        .load(conn)?;
    let count = sources.len();
    // The parent's run-scoped entries are copied; an audit delta keeps referring to its
    // keyframe's copy (written before it, views being read in order), else it is copied whole.
    let mut copies: HashMap<i32, i32> = HashMap::new();
    for (
        (entry_id, scope, path, scheme),
        (stored, whole, base_id, prefix_chars, suffix_chars),
        (attributes, hash, tokens),
        (turn, state, outcome, visibility),
    ) in sources
    {
        let target = if scope == parent_scope {
            let (body, base_id, prefix_chars, suffix_chars) =
                match base_id.and_then(|b| copies.get(&b)) {
                    Some(&copied) => (stored, Some(copied), prefix_chars, suffix_chars),
                    None => (whole, None, 0, 0),
                };
            let copy = diesel::insert_into(entries::table)
                .values((
                    entries::scope.eq(&child_scope),
                    entries::path.eq(&path),
                    entries::scheme.eq(&scheme),
                    entries::body.eq(&body),
                    entries::attributes.eq(&attributes),
                    entries::hash.eq(&hash),
                    entries::tokens.eq(tokens),
                    entries::created_at.eq(now.0),
                    entries::updated_at.eq(now.0),
                    entries::base_id.eq(base_id),
                    entries::prefix_chars.eq(prefix_chars),
                    entries::suffix_chars.eq(suffix_chars),
                ))
                .returning(entries::id)
                .get_result::<i32>(conn)?;
            copies.insert(entry_id, copy);
            copy
        } else {
            entry_id
        };
        let rev = runs::take_rev(conn, child.run_id)?;
        diesel::insert_into(run_views::table)
            .values((
                run_views::run_id.eq(child.run_id),
                run_views::entry_id.eq(target),
                run_views::turn.eq(turn),
                run_views::state.eq(state),
                run_views::outcome.eq(&outcome),
                run_views::visibility.eq(visibility),
                run_views::rev.eq(rev),
                run_views::created_at.eq(now.0),
                run_views::updated_at.eq(now.0),
            ))
            .execute(conn)?;
    }
    Ok(count)
}
