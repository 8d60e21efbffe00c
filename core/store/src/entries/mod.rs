//! Entries and run views: the keyed store every turn's context is rebuilt from.
//!
//! Content lives in `entries` (one row per scope and path); each run sees it
//! through its own `run_views` row (state, outcome, visibility, turn). Every
//! view write takes the run's next revision so pushes can be incremental.

use super::audit::Stored;
use super::cached::{cached, Bind, StaticSql};
use super::{audit, runs, StoreError};
use crate::db::Db;
use crate::entry::{Scope, State, Visibility, Writer};
use crate::ids::{LoopId, RunId};
use crate::schema::{entries, run_views};
use crate::schemes;
use diesel::prelude::*;
use rummy_provider::time::Millis;
use rummy_text::path::scheme_of;
use rummy_text::token_estimate;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The schemes whose entries no run holds a view of: the project's memory and history,
/// written by `memory`'s functions, never by [`write`].
pub const VIEWLESS: [&str; 2] = ["memory", "history"];

/// Whether entries of `scheme` are the project's memory or history (written by `memory` alone).
pub fn is_viewless(scheme: Option<&str>) -> bool {
    scheme.is_some_and(|s| VIEWLESS.contains(&s))
}

/// The run a write belongs to (defined with the ids, so that `runs` need not name this module).
pub use crate::ids::RunRef;

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
    if is_viewless(scheme.as_deref()) {
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
    let tokens = token_estimate::estimate(w.body, token_divisor);
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

mod view;

pub(crate) use view::{
    filter_error, in_context, in_context_order, page, passes, patterns_in_sql, refused_filter,
};

pub use view::{
    by_path, changed_since, context_rows, fork, history, latest_summary, list, unknowns,
    EntryFilter, ViewColumns, ViewRow, NOT_HISTORY, VIEW_COLUMNS,
};

/// A prompt injected into the loop for `turn`, a turn the loop never ran: its
/// `prompt://<turn>` entry, when the loop's views hold one.
pub fn injected_for(
    conn: &mut Db,
    run_id: RunId,
    loop_id: LoopId,
    turn: i32,
) -> Result<Option<ViewRow>, StoreError> {
    Ok(run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::loop_id.eq(loop_id))
        .filter(entries::scope.eq(Scope::Run(run_id).key()))
        .filter(entries::path.eq(format!("prompt://{turn}")))
        .select(VIEW_COLUMNS)
        .first(conn)
        .optional()?)
}
