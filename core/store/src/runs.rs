//! Runs: one conversation with one model about one project, addressed by an alias unique in its project.

use super::cached::{cached, Bind, StaticSql};
use super::flags::RunFlags;
use super::{is_unique_violation, StoreError};
use crate::db::Db;
use crate::ids::RunRef;
use crate::ids::{ProjectId, RunId};
use crate::run::{alias_stem, valid_alias, Mode, RunStatus};
use crate::schema::runs;
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// A stored run.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = runs, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Run {
    /// Primary key.
    pub id: RunId,
    /// Owning project.
    pub project_id: ProjectId,
    /// The run it was forked from.
    pub parent_run_id: Option<RunId>,
    /// Alias, unique in the project.
    pub alias: String,
    /// Model alias.
    pub model: String,
    /// HTTP-code status.
    pub status: i32,
    /// Sampling temperature, if set for the run.
    pub temperature: Option<f64>,
    /// Persona text appended to the instructions.
    pub persona: Option<String>,
    /// The run's own context limit in tokens.
    pub context_limit: Option<i32>,
    /// Loop flags new loops start with, as a JSON object.
    pub flags: String,
    /// Next turn number (per run, across loops).
    pub next_turn: i32,
    /// Next loop sequence number.
    pub next_loop: i32,
    /// Next notification sequence number.
    pub next_seq: i32,
    /// Next view revision.
    pub next_rev: i32,
    /// Highest view revision already pushed in `run/state`.
    pub pushed_rev: i32,
    /// Creation time.
    pub created_at: i64,
    /// Last change.
    pub updated_at: i64,
    /// `ask` or `act`: the mode a continuation without one runs in.
    pub mode: String,
    /// Who started it, when a token named them (the owner has no user): the runs in flight
    /// of each user are counted by it.
    pub user: Option<String>,
}

impl Run {
    /// The run's mode (`ask` when the stored value is unreadable, the safe choice).
    pub fn mode(&self) -> Mode {
        Mode::parse(&self.mode).unwrap_or(Mode::Ask)
    }

    /// The run's loop flags.
    pub fn flags(&self) -> RunFlags {
        RunFlags::parse(&self.flags)
    }

    /// The status as an enum; an unknown code (only by hand-edited data) reads as failed.
    pub fn run_status(&self) -> RunStatus {
        RunStatus::try_from(self.status).unwrap_or(RunStatus::Failed)
    }

    /// The last turn number used (0 before the first turn).
    pub fn last_turn(&self) -> i32 {
        self.next_turn - 1
    }

    /// The run as a write names it: its id and its project's.
    pub fn run_ref(&self) -> RunRef {
        RunRef {
            run_id: self.id,
            project_id: self.project_id,
        }
    }
}

/// What a new run is made of.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewRun {
    /// Owning project.
    pub project_id: ProjectId,
    /// The requested alias; `None` lets the server choose one.
    pub alias: Option<String>,
    /// Model alias.
    pub model: String,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Persona text.
    pub persona: Option<String>,
    /// Context limit in tokens.
    pub context_limit: Option<i32>,
    /// Loop flags.
    pub flags: RunFlags,
    /// The run it is forked from.
    pub parent_run_id: Option<RunId>,
    /// The mode its loops run in unless a continuation names another.
    pub mode: Mode,
    /// Who starts it, when a token names them.
    pub user: Option<String>,
}

/// Creates a run. A requested alias that is taken is a conflict; a server-made
/// alias is `<model stem>_<n>` with the first free `n`, which cannot collide
/// because this runs on the single writer.
pub fn create(conn: &mut Db, new: &NewRun, now: Millis) -> Result<Run, StoreError> {
    let alias = match &new.alias {
        Some(alias) if !valid_alias(alias) => {
            return Err(StoreError::Invalid(format!(
                "run alias \"{alias}\" must be 1-128 characters of [A-Za-z0-9_]"
            )))
        }
        Some(alias) => alias.clone(),
        None => free_alias(conn, new.project_id, &alias_stem(&new.model))?,
    };
    let inserted = crate::on_backend!(conn, c => diesel::insert_into(runs::table)
        .values((
            runs::project_id.eq(new.project_id),
            runs::alias.eq(&alias),
            runs::model.eq(&new.model),
            runs::status.eq(RunStatus::Queued.code()),
            runs::temperature.eq(new.temperature),
            runs::persona.eq(&new.persona),
            runs::context_limit.eq(new.context_limit),
            runs::flags.eq(new.flags.to_text()),
            runs::parent_run_id.eq(new.parent_run_id),
            runs::mode.eq(new.mode.as_str()),
            runs::user.eq(&new.user),
            runs::created_at.eq(now.0),
            runs::updated_at.eq(now.0),
        ))
        .returning(Run::as_returning())
        .get_result(c));
    match inserted {
        Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict(format!(
            "run alias \"{alias}\" is taken in this project"
        ))),
        other => Ok(other?),
    }
}

fn free_alias(conn: &mut Db, project_id: ProjectId, stem: &str) -> Result<String, StoreError> {
    let taken: i64 = runs::table
        .filter(runs::project_id.eq(project_id))
        .count()
        .get_result(conn)?;
    let mut n = taken + 1;
    loop {
        let candidate = format!("{stem}_{n}");
        if by_alias(conn, project_id, &candidate)?.is_none() {
            return Ok(candidate);
        }
        n += 1;
    }
}

/// The run with that alias in the project.
pub fn by_alias(
    conn: &mut Db,
    project_id: ProjectId,
    alias: &str,
) -> Result<Option<Run>, StoreError> {
    Ok(runs::table
        .filter(runs::project_id.eq(project_id))
        .filter(runs::alias.eq(alias))
        .select(Run::as_select())
        .first(conn)
        .optional()?)
}

/// The run with that id.
pub fn by_id(conn: &mut Db, run_id: RunId) -> Result<Run, StoreError> {
    runs::table
        .find(run_id)
        .select(Run::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("run {run_id} not found")))
}

/// What a `run/state` push needs of its run: the alias and the revision marks.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct PushMarks {
    /// The run's alias.
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub alias: String,
    /// The run's project (whose shared questions the push lists with the run's own).
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub project_id: i32,
    /// Views up to this revision have been pushed.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub pushed_rev: i32,
    /// The revision the next view write takes.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub next_rev: i32,
    /// The routing decision of the run's current loop (the last one not queued), as stored
    /// (JSON), if it was routed.
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub routed: Option<String>,
    /// Why the run's current loop ended (`stopReason` of its result), if it has.
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub stop_reason: Option<String>,
    /// How many of the run's loops are queued.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub queued_loops: i32,
    /// How many questions its project shares (`store::shared`): the push lists the run's view
    /// of them only when there are any.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub project_questions: i32,
}

/// The run's alias, revision marks, current routing, stop reason and queued loops (a push runs
/// this after every command, so it reads what it needs through one prepared statement rather
/// than the run's and the loop's whole rows).
pub fn push_marks(conn: &mut Db, run_id: RunId) -> Result<PushMarks, StoreError> {
    cached::<ReadPushMarks>(&[
        Bind::Int(run_id.0),
        Bind::Int(run_id.0),
        Bind::Int(run_id.0),
    ])
    .get_result::<PushMarks>(conn)
    .optional()?
    .ok_or_else(|| StoreError::NotFound(format!("run {run_id} not found")))
}

struct ReadPushMarks;
impl StaticSql for ReadPushMarks {
    // `status <> 100`: not queued (`loops::QUEUED`); the count reads the `loops_queue` index.
    const SQL: &'static str = "SELECT alias, project_id, pushed_rev, next_rev, \
        current.routed AS routed, current.stop_reason AS stop_reason, \
        (SELECT count(*) FROM loops WHERE run_id = ? AND status = 100) AS queued_loops, \
        (SELECT count(*) FROM entries WHERE scope = 'project:' || runs.project_id \
        AND scheme = 'unknown') AS project_questions \
        FROM runs LEFT JOIN (SELECT json_extract(config, '$.routed') AS routed, \
        json_extract(result, '$.stopReason') AS stop_reason FROM loops \
        WHERE run_id = ? AND status <> 100 ORDER BY sequence DESC LIMIT 1) AS current \
        WHERE runs.id = ?";
    // Counts are bigint there; the loop's JSON is read through `json` (its text as written).
    const PG: &'static str = "SELECT alias, project_id, pushed_rev, next_rev, \
        current.routed AS routed, current.stop_reason AS stop_reason, \
        (SELECT CAST(count(*) AS INTEGER) FROM loops WHERE run_id = ? AND status = 100) \
        AS queued_loops, \
        (SELECT CAST(count(*) AS INTEGER) FROM entries \
        WHERE scope = 'project:' || runs.project_id AND scheme = 'unknown') AS project_questions \
        FROM runs LEFT JOIN (SELECT config::json ->> 'routed' AS routed, \
        result::json ->> 'stopReason' AS stop_reason FROM loops \
        WHERE run_id = ? AND status <> 100 ORDER BY sequence DESC LIMIT 1) AS current ON true \
        WHERE runs.id = ?";
}

/// A page of the project's runs, newest first.
pub fn list(
    conn: &mut Db,
    project_id: ProjectId,
    limit: i64,
    offset: i64,
) -> Result<Vec<Run>, StoreError> {
    Ok(runs::table
        .filter(runs::project_id.eq(project_id))
        .order(runs::id.desc())
        .limit(limit)
        .offset(offset)
        .select(Run::as_select())
        .load(conn)?)
}

/// Runs that a crash may have left mid-loop (running, waiting on a proposal, or queued).
pub fn unfinished(conn: &mut Db) -> Result<Vec<Run>, StoreError> {
    Ok(runs::table
        .filter(runs::status.eq_any([100, 102, 202]))
        .order(runs::id.asc())
        .select(Run::as_select())
        .load(conn)?)
}

/// Moves the run to `status`; the database refuses a transition the run-status table does not allow.
pub fn set_status(
    conn: &mut Db,
    run_id: RunId,
    status: RunStatus,
    now: Millis,
) -> Result<(), StoreError> {
    cached::<SetStatus>(&[
        Bind::Int(status.code()),
        Bind::Big(now.0),
        Bind::Int(run_id.0),
    ])
    .execute(conn)?;
    Ok(())
}

/// Takes the run's next turn number.
pub fn take_turn_number(conn: &mut Db, run_id: RunId) -> Result<i32, StoreError> {
    take::<TurnCounter>(conn, run_id)
}

/// Takes the run's next loop sequence number.
pub fn take_loop_number(conn: &mut Db, run_id: RunId) -> Result<i32, StoreError> {
    take::<LoopCounter>(conn, run_id)
}

/// Takes the run's next view revision.
pub fn take_rev(conn: &mut Db, run_id: RunId) -> Result<i32, StoreError> {
    take::<RevCounter>(conn, run_id)
}

/// Records that views up to `rev` were pushed and takes the run's next notification sequence
/// number for that push: both in one bump of the run's row.
pub fn take_push(conn: &mut Db, run_id: RunId, rev: i32) -> Result<i32, StoreError> {
    if cached::<BumpPush>(&[Bind::Int(rev), Bind::Int(run_id.0)]).execute(conn)? == 0 {
        return Err(diesel::result::Error::NotFound.into());
    }
    Ok(cached::<ReadSeq>(&[Bind::Int(run_id.0)])
        .get_result::<Rev>(conn)?
        .rev)
}

struct BumpPush;
impl StaticSql for BumpPush {
    const SQL: &'static str =
        "UPDATE runs SET pushed_rev = ?, next_seq = next_seq + 1 WHERE id = ?";
}

struct ReadSeq;
impl StaticSql for ReadSeq {
    const SQL: &'static str = "SELECT next_seq - 1 AS rev FROM runs WHERE id = ?";
}

struct SetStatus;
impl StaticSql for SetStatus {
    const SQL: &'static str = "UPDATE runs SET status = ?, updated_at = ? WHERE id = ?";
}

/// One of a run's counters: the statement that bumps it and the one that reads what it was.
/// Two prepared statements rather than `UPDATE … RETURNING`, for which SQLite builds and drops
/// a temporary b-tree on every call — a third of the cost of an audit entry's write.
trait Counter {
    type Bump: StaticSql;
    type Read: StaticSql;
}

/// Bumps counter `C` of the run and returns the value it had.
fn take<C: Counter>(conn: &mut Db, run_id: RunId) -> Result<i32, StoreError> {
    if cached::<C::Bump>(&[Bind::Int(run_id.0)]).execute(conn)? == 0 {
        return Err(diesel::result::Error::NotFound.into());
    }
    Ok(cached::<C::Read>(&[Bind::Int(run_id.0)])
        .get_result::<Rev>(conn)?
        .rev)
}

macro_rules! counter {
    ($name:ident, $bump:ident, $read:ident, $column:literal) => {
        struct $name;
        struct $bump;
        struct $read;
        impl StaticSql for $bump {
            const SQL: &'static str = concat!(
                "UPDATE runs SET ",
                $column,
                " = ",
                $column,
                " + 1 WHERE id = ?"
            );
        }
        impl StaticSql for $read {
            const SQL: &'static str =
                concat!("SELECT ", $column, " - 1 AS rev FROM runs WHERE id = ?");
        }
        impl Counter for $name {
            type Bump = $bump;
            type Read = $read;
        }
    };
}

counter!(TurnCounter, BumpTurn, ReadTurn, "next_turn");
counter!(LoopCounter, BumpLoop, ReadLoop, "next_loop");
counter!(RevCounter, BumpRev, ReadRev, "next_rev");

/// Deletes the runs that finished before `cutoff` with no loop queued or running, and all
/// they own: loops, turns, views and notifications go by cascade, the run-scoped entries
/// explicitly (an entry's scope is a key, not a reference). Answers the deleted runs' ids.
///
/// A run's `updated_at` moves with every status change, so this is "untouched since".
pub fn purge_finished_before(conn: &mut Db, cutoff: Millis) -> Result<Vec<RunId>, StoreError> {
    use crate::schema::{entries, loops};
    let finished: Vec<i32> = RunStatus::ALL
        .into_iter()
        .filter(|s| !s.is_active())
        .map(RunStatus::code)
        .collect();
    let live = [RunStatus::Queued.code(), RunStatus::Running.code()];
    let ids: Vec<RunId> = runs::table
        .filter(runs::status.eq_any(&finished))
        .filter(runs::updated_at.lt(cutoff.0))
        .filter(diesel::dsl::not(diesel::dsl::exists(
            loops::table
                .filter(loops::run_id.eq(runs::id))
                .filter(loops::status.eq_any(live)),
        )))
        .select(runs::id)
        .load(conn)?;
    // One run at a time: a list of ids as binds would hit SQLite's limit on variables.
    for id in &ids {
        let scope = crate::entry::Scope::Run(*id).key();
        diesel::delete(entries::table.filter(entries::scope.eq(scope))).execute(conn)?;
        diesel::delete(runs::table.filter(runs::id.eq(id))).execute(conn)?;
    }
    Ok(ids)
}

#[derive(QueryableByName)]
struct Rev {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    rev: i32,
}

/// What `set run://<alias> {attributes}` may change; `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSettings {
    /// Mode of the run's next loops.
    pub mode: Option<Mode>,
    /// Model alias.
    pub model: Option<String>,
    /// Temperature.
    pub temperature: Option<f64>,
    /// Persona text (`Some("")` clears it).
    pub persona: Option<String>,
    /// Context limit.
    pub context_limit: Option<i32>,
    /// Flags laid over the current ones.
    pub flags: Option<RunFlags>,
}

/// Changes a run's settings; later loops use them.
pub fn configure(
    conn: &mut Db,
    run_id: RunId,
    settings: &RunSettings,
    now: Millis,
) -> Result<Run, StoreError> {
    let run = by_id(conn, run_id)?;
    let flags = match &settings.flags {
        Some(changes) => run.flags().overlaid(changes),
        None => run.flags(),
    };
    let persona = match &settings.persona {
        Some(p) if p.trim().is_empty() => None,
        Some(p) => Some(p.clone()),
        None => run.persona.clone(),
    };
    Ok(
        crate::on_backend!(conn, c => diesel::update(runs::table.find(run_id))
        .set((
            runs::model.eq(settings.model.as_ref().unwrap_or(&run.model)),
            runs::temperature.eq(settings.temperature.or(run.temperature)),
            runs::persona.eq(persona),
            runs::context_limit.eq(settings.context_limit.or(run.context_limit)),
            runs::flags.eq(flags.to_text()),
            runs::mode.eq(settings.mode.unwrap_or(run.mode()).as_str()),
            runs::updated_at.eq(now.0),
        ))
        .returning(Run::as_returning())
        .get_result(c))?,
    )
}

/// Renames a run within its project; the new alias must be valid and free.
pub fn rename(conn: &mut Db, run_id: RunId, alias: &str, now: Millis) -> Result<Run, StoreError> {
    if !valid_alias(alias) {
        return Err(StoreError::Invalid(format!(
            "run alias \"{alias}\" must be 1-128 characters of [A-Za-z0-9_]"
        )));
    }
    let renamed = crate::on_backend!(conn, c => diesel::update(runs::table.find(run_id))
        .set((runs::alias.eq(alias), runs::updated_at.eq(now.0)))
        .returning(Run::as_returning())
        .get_result(c));
    match renamed {
        Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict(format!(
            "run alias \"{alias}\" is taken in this project"
        ))),
        other => Ok(other?),
    }
}

/// Starts the child's turn numbering where the parent's is, so copied entries keep their turns.
pub fn continue_numbering(conn: &mut Db, child_id: RunId, parent: &Run) -> Result<(), StoreError> {
    diesel::update(runs::table.find(child_id))
        .set(runs::next_turn.eq(parent.next_turn))
        .execute(conn)?;
    Ok(())
}
