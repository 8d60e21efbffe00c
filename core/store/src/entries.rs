//! Entries and run views: the keyed store every turn's context is rebuilt from.
//!
//! Content lives in `entries` (one row per scope and path); each run sees it
//! through its own `run_views` row (state, outcome, visibility, turn). Every
//! view write takes the run's next revision so pushes can be incremental.

use super::audit::{FullBody, Stored, FULL_BODY_SQL};
use super::cached::{cached, Bind, StaticSql};
use super::{audit, runs, StoreError};
use crate::db::Db;
use crate::entry::{Category, Scope, State, Visibility, Writer};
use crate::ids::{LoopId, ProjectId, RunId};
use crate::schema::{entries, run_views};
use crate::schemes;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use rummy_provider::time::Millis;
use rummy_text::path::scheme_of;
use rummy_text::tokens;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The run a write belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRef {
    /// The run's id.
    pub run_id: RunId,
    /// Its project's id (for project-scoped file entries).
    pub project_id: ProjectId,
}

/// Where a turn writes: its run, loop and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRef {
    /// The run and its project.
    pub run: RunRef,
    /// The active loop.
    pub loop_id: LoopId,
    /// The turn number (per run).
    pub turn: i32,
}

/// What every write takes beside what it writes: the token divisor a body's size is estimated
/// with (`RUMMY_TOKEN_DIVISOR`) and the time it is written at, passed down as one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteCtx {
    /// Characters per estimated token.
    pub divisor: u32,
    /// The write's timestamp.
    pub now: Millis,
}

/// One write of an entry's content and of the run's view of it.
#[derive(Debug, Clone)]
pub struct EntryWrite<'a> {
    /// The run writing.
    pub run: RunRef,
    /// A normalised path (`path::normalize`).
    pub path: &'a str,
    /// The new body.
    pub body: &'a str,
    /// Attributes; must be a JSON object.
    pub attributes: &'a Value,
    /// The view's state.
    pub state: State,
    /// Why it failed or was cancelled.
    pub outcome: Option<&'a str>,
    /// How much of it the model sees.
    pub visibility: Visibility,
    /// The loop it was written in.
    pub loop_id: Option<LoopId>,
    /// The turn it was written in (0 outside turns).
    pub turn: i32,
    /// Who writes; checked against the scheme's tiers.
    pub writer: Writer,
}

impl<'a> EntryWrite<'a> {
    /// A visible entry the server writes as a plugin in turn `t` (resolved unless changed).
    pub fn plugin(
        t: TurnRef,
        path: &'a str,
        body: &'a str,
        attributes: &'a Value,
    ) -> EntryWrite<'a> {
        EntryWrite {
            run: t.run,
            path,
            body,
            attributes,
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: Some(t.loop_id),
            turn: t.turn,
            writer: Writer::Plugin,
        }
    }
}

/// What a write stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The entry's id.
    pub entry_id: i32,
    /// The view revision this write took.
    pub rev: i32,
}

/// Writes an entry and the run's view of it in one step, after checking the writer's tier.
pub fn write(conn: &mut Db, w: &EntryWrite<'_>, at: WriteCtx) -> Result<Written, StoreError> {
    write_at(conn, w, at, None)
}

/// [`write`], with the view at revision `rev` when given — several writes that form one
/// change (a turn's audit entries) share one revision, as they are pushed together — else at
/// the run's next revision.
pub fn write_at(
    conn: &mut Db,
    w: &EntryWrite<'_>,
    at: WriteCtx,
    rev: Option<i32>,
) -> Result<Written, StoreError> {
    let scheme = scheme_of(w.path);
    let spec = admitted(w.path, scheme.as_deref(), w.writer)?;
    let scope = spec.default_scope.scope(w.run.project_id, w.run.run_id);
    write_in(conn, w, scope, at, rev)
}

/// [`write_at`] of an audit text (`system://N`, `user://N`, …): stored as a delta from the
/// keyframe of `previous` (the previous turn's entry of its scheme) when that is worth it
/// ([`audit`](super::audit)), else whole; with no hash (`""`), an audit text being never
/// compared.
pub fn write_audit(
    conn: &mut Db,
    w: &EntryWrite<'_>,
    previous: &str,
    at: WriteCtx,
    rev: Option<i32>,
) -> Result<Written, StoreError> {
    let scheme = scheme_of(w.path);
    let spec = admitted(w.path, scheme.as_deref(), w.writer)?;
    let scope = spec.default_scope.scope(w.run.project_id, w.run.run_id);
    let stored = audit::storage(conn, &scope.key(), previous, w.body)?;
    write_stored(conn, w, scope, at, rev, stored, Hashed::No)
}

/// [`write_at`] into `scope` rather than the scheme's own: a shared `unknown://` is the
/// project's (`store::shared`). The tier is checked here too.
pub fn write_in(
    conn: &mut Db,
    w: &EntryWrite<'_>,
    scope: Scope,
    at: WriteCtx,
    rev: Option<i32>,
) -> Result<Written, StoreError> {
    write_stored(conn, w, scope, at, rev, Stored::Whole, Hashed::Yes)
}

/// Whether a write keeps its body's SHA-256 in `entries.hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hashed {
    /// Kept: the content may be compared later (a file with the disk, a fact with its next write).
    Yes,
    /// Not (`""`): an audit text is written once, read whole and never compared, and hashing
    /// the whole prompt every turn was a fifth of a turn's instructions.
    No,
}

/// [`write_in`] with the body stored as `stored` says.
fn write_stored(
    conn: &mut Db,
    w: &EntryWrite<'_>,
    scope: Scope,
    at: WriteCtx,
    rev: Option<i32>,
    stored: Stored<'_>,
    hashed: Hashed,
) -> Result<Written, StoreError> {
    let WriteCtx {
        divisor: token_divisor,
        now,
    } = at;
    let scheme = scheme_of(w.path);
    admitted(w.path, scheme.as_deref(), w.writer)?;
    if super::memory::is_viewless(scheme.as_deref()) {
        return Err(StoreError::Invalid(viewless_refused(w.path)));
    }
    if !w.attributes.is_object() {
        return Err(StoreError::Invalid(
            "attributes must be a JSON object".into(),
        ));
    }
    let hash = match hashed {
        Hashed::Yes => hex_sha256(w.body),
        Hashed::No => String::new(),
    };
    let tokens = tokens::estimate(w.body, token_divisor);
    let attributes = w.attributes.to_string();
    let scope_key = scope.key();
    let [body, base_id, prefix_chars, suffix_chars] = stored.binds(w.body);
    cached::<UpsertEntry>(&[
        Bind::Text(&scope_key),
        Bind::Text(w.path),
        Bind::OptText(scheme.as_deref()),
        body,
        Bind::Text(&attributes),
        Bind::Text(&hash),
        Bind::Int(tokens),
        Bind::Big(now.0),
        Bind::Big(now.0),
        base_id,
        prefix_chars,
        suffix_chars,
    ])
    .execute(conn)?;
    let entry_id = cached::<EntryId>(&[Bind::Text(&scope_key), Bind::Text(w.path)])
        .get_result::<Id>(conn)?
        .id;
    let rev = match rev {
        Some(rev) => rev,
        None => runs::take_rev(conn, w.run.run_id)?,
    };
    cached::<UpsertView>(&[
        Bind::Int(w.run.run_id.0),
        Bind::Int(entry_id),
        Bind::OptInt(w.loop_id.map(|l| l.0)),
        Bind::Int(w.turn),
        Bind::State(w.state),
        Bind::OptText(w.outcome),
        Bind::Visibility(w.visibility),
        Bind::Int(rev),
        Bind::Big(now.0),
        Bind::Big(now.0),
    ])
    .execute(conn)?;
    Ok(Written { entry_id, rev })
}

/// Why a `memory://` or `history://` path cannot be written like a run's entry.
fn viewless_refused(path: &str) -> String {
    format!(
        "{path} is the project's: a memory:// entry is written with set (a new content supersedes the old, which is kept), and history:// by the server alone"
    )
}

/// The registry's entry for `scheme` (that of `path`; `None` for a project file), once `writer`
/// is found allowed to write it: the tier check every write of an entry makes — [`write_at`],
/// the client's operations (`ops::check_writer`) and the project files' content
/// (`store::files`).
pub fn admitted(
    path: &str,
    scheme: Option<&str>,
    writer: Writer,
) -> Result<&'static schemes::SchemeSpec, StoreError> {
    let spec = schemes::lookup(scheme).ok_or_else(|| {
        StoreError::Invalid(format!(
            "unknown scheme \"{}\" in path {path}",
            scheme.unwrap_or("file"),
        ))
    })?;
    if spec.admits(writer) {
        Ok(spec)
    } else {
        Err(StoreError::permission(writer, spec))
    }
}

/// Inserts or rewrites an entry by (scope, path), its body whole or as a delta
/// ([`audit`](super::audit)); its id.
struct UpsertEntry;
impl StaticSql for UpsertEntry {
    const SQL: &'static str = "INSERT INTO entries \
        (scope, path, scheme, body, attributes, hash, tokens, created_at, updated_at, \
        base_id, prefix_chars, suffix_chars) \
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
        ON CONFLICT (scope, path) DO UPDATE SET body = excluded.body, \
        attributes = excluded.attributes, hash = excluded.hash, tokens = excluded.tokens, \
        updated_at = excluded.updated_at, base_id = excluded.base_id, \
        prefix_chars = excluded.prefix_chars, suffix_chars = excluded.suffix_chars";
}

/// The id of an entry by (scope, path): read after the upsert, because `RETURNING` makes
/// SQLite build and drop a temporary b-tree on every call.
struct EntryId;
impl StaticSql for EntryId {
    const SQL: &'static str = "SELECT id FROM entries WHERE scope = ? AND path = ?";
}

/// Inserts or rewrites the run's view of an entry, counting the writes.
struct UpsertView;
impl StaticSql for UpsertView {
    const SQL: &'static str = "INSERT INTO run_views \
        (run_id, entry_id, loop_id, turn, state, outcome, visibility, rev, created_at, updated_at) \
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
        ON CONFLICT (run_id, entry_id) DO UPDATE SET loop_id = excluded.loop_id, \
        turn = excluded.turn, state = excluded.state, outcome = excluded.outcome, \
        visibility = excluded.visibility, write_count = run_views.write_count + 1, \
        rev = excluded.rev, updated_at = excluded.updated_at";
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    id: i32,
}

/// SHA-256 of a body, lower-case hex.
pub fn hex_sha256(body: impl AsRef<[u8]>) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(body.as_ref()) {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// `base` if no entry of the run's scope has that path yet, else `base_2`, `base_3`, …
///
/// The counter is per run because run-scoped paths are unique per run.
pub fn unique_path(conn: &mut Db, run: RunRef, base: &str) -> Result<String, StoreError> {
    let scope = Scope::Run(run.run_id).key();
    let taken = |conn: &mut Db, path: &str| -> Result<bool, StoreError> {
        Ok(entries::table
            .filter(entries::scope.eq(&scope))
            .filter(entries::path.eq(path))
            .count()
            .get_result::<i64>(conn)?
            > 0)
    };
    if !taken(conn, base)? {
        return Ok(base.to_owned());
    }
    let mut k = 2;
    loop {
        let candidate = format!("{base}_{k}");
        if !taken(conn, &candidate)? {
            return Ok(candidate);
        }
        k += 1;
    }
}

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

    /// Whether it is a proposal waiting for a decision: `proposed`, with the index of the
    /// command that made it.
    pub fn is_pending_proposal(&self) -> bool {
        self.state == State::Proposed && self.attributes().get("commandIndex").is_some()
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
