//! Several server processes on one database (PostgreSQL): the processes alive, the runs each
//! holds (leases), the calls one process makes for a run another holds, and the pushes too
//! large to ride a notification's payload.
//!
//! A process row lives while its process renews it ([`renew`]); every lease the process holds
//! is valid until the row's `expires_at`, so one write renews them all. A run is leased by the
//! process that runs its loops ([`take`]): claimed with `SELECT … FOR UPDATE SKIP LOCKED`, so
//! two processes asking at once never both get it; a lease whose holder expired is taken over,
//! and the taker recovers the run as a restart would before running it. On SQLite there is one
//! process (the database file's lock says so) and none of this is used.

use super::cached::{cached, Bind, StaticSql};
use super::StoreError;
use crate::db::Db;
use crate::ids::RunId;
use crate::schema::{processes, relayed_pushes, run_calls, run_leases, runs};
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// Registers this process, alive until `now + lease` unless renewed.
pub fn register(conn: &mut Db, id: &str, now: Millis, lease: i64) -> Result<(), StoreError> {
    diesel::insert_into(processes::table)
        .values((
            processes::id.eq(id),
            processes::started_at.eq(now.0),
            processes::expires_at.eq(now.0 + lease),
        ))
        .execute(conn)?;
    Ok(())
}

/// Renews this process's row, and with it every lease it holds, until `now + lease`; false
/// when the row is gone or had expired (another process may have taken its runs over: this
/// one must not go on running them).
pub fn renew(conn: &mut Db, id: &str, now: Millis, lease: i64) -> Result<bool, StoreError> {
    let renewed = diesel::update(
        processes::table
            .filter(processes::id.eq(id))
            .filter(processes::expires_at.gt(now.0)),
    )
    .set(processes::expires_at.eq(now.0 + lease))
    .execute(conn)?;
    Ok(renewed == 1)
}

/// Takes this process out (a graceful stop): its leases end at once, so the others take its
/// runs over without waiting for them to expire.
pub fn retire(conn: &mut Db, id: &str) -> Result<(), StoreError> {
    diesel::delete(run_leases::table.filter(run_leases::owner.eq(id))).execute(conn)?;
    diesel::delete(processes::table.filter(processes::id.eq(id))).execute(conn)?;
    Ok(())
}

/// Ends the processes `ids` now (known gone): their runs are anyone's to take over.
pub fn expire(conn: &mut Db, ids: &[String]) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::update(processes::table.filter(processes::id.eq_any(ids)))
        .set(processes::expires_at.eq(0))
        .execute(conn)?;
    Ok(())
}

/// The processes alive at `now`, oldest first.
pub fn alive(conn: &mut Db, now: Millis) -> Result<Vec<String>, StoreError> {
    Ok(processes::table
        .filter(processes::expires_at.gt(now.0))
        .order((processes::started_at.asc(), processes::id.asc()))
        .select(processes::id)
        .load(conn)?)
}

/// Removes the rows of processes expired before `before` and the calls answered before it:
/// nothing reads them any more.
pub fn sweep(conn: &mut Db, before: Millis) -> Result<(), StoreError> {
    diesel::delete(processes::table.filter(processes::expires_at.lt(before.0))).execute(conn)?;
    diesel::delete(run_calls::table.filter(run_calls::done_at.lt(before.0))).execute(conn)?;
    diesel::delete(relayed_pushes::table.filter(relayed_pushes::created_at.lt(before.0)))
        .execute(conn)?;
    Ok(())
}

/// Who holds a run after [`take`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// This process held it already, or it was free: this process runs it.
    Mine,
    /// Its holder had expired: this process holds it now, and must recover it first.
    TakenOver,
    /// Another live process holds it: calls for it go there.
    Held(String),
}

/// The run's lease row, locked for this transaction (PostgreSQL: `FOR UPDATE`, waiting for a
/// process taking it at the same moment).
struct LeaseOf;
impl StaticSql for LeaseOf {
    const SQL: &'static str = "SELECT l.owner AS owner, \
        CASE WHEN p.expires_at > ? THEN 1 ELSE 0 END AS alive \
        FROM run_leases l LEFT JOIN processes p ON p.id = l.owner WHERE l.run_id = ?";
    const PG: &'static str = "SELECT l.owner AS owner, \
        CASE WHEN p.expires_at > ? THEN 1 ELSE 0 END AS alive \
        FROM run_leases l LEFT JOIN processes p ON p.id = l.owner WHERE l.run_id = ? \
        FOR UPDATE OF l";
}

#[derive(QueryableByName)]
struct Holder {
    #[diesel(sql_type = diesel::sql_types::Text)]
    owner: String,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    alive: i32,
}

/// Takes the run's lease for process `me` (see [`Lease`]); `taken_at` marks this taking, so a
/// release of an earlier one ([`release`]) leaves it alone.
pub fn take(conn: &mut Db, run_id: RunId, me: &str, now: Millis) -> Result<Lease, StoreError> {
    let holder = cached::<LeaseOf>(&[Bind::Big(now.0), Bind::Int(run_id.0)])
        .get_result::<Holder>(conn)
        .optional()?;
    let lease = match holder {
        None => {
            let inserted = crate::on_backend!(conn, c => diesel::insert_into(run_leases::table)
                .values((
                    run_leases::run_id.eq(run_id),
                    run_leases::owner.eq(me),
                    run_leases::taken_at.eq(now.0),
                ))
                .on_conflict_do_nothing()
                .execute(c))?;
            if inserted == 0 {
                // Taken between the look-up and the insert: ask again, now that it exists.
                return take(conn, run_id, me, now);
            }
            return Ok(Lease::Mine);
        }
        Some(h) if h.owner == me => Lease::Mine,
        Some(h) if h.alive == 1 => return Ok(Lease::Held(h.owner)),
        Some(_) => Lease::TakenOver,
    };
    diesel::update(run_leases::table.find(run_id))
        .set((run_leases::owner.eq(me), run_leases::taken_at.eq(now.0)))
        .execute(conn)?;
    Ok(lease)
}

/// Gives the run's lease up, if `me` still holds it from the taking at `taken_at`.
pub fn release(conn: &mut Db, run_id: RunId, me: &str, taken_at: Millis) -> Result<(), StoreError> {
    diesel::delete(
        run_leases::table
            .filter(run_leases::run_id.eq(run_id))
            .filter(run_leases::owner.eq(me))
            .filter(run_leases::taken_at.le(taken_at.0)),
    )
    .execute(conn)?;
    Ok(())
}

/// Whether `me` holds the run's lease (a claim checks it: a process whose lease was taken
/// over must not start another loop of the run).
pub fn holds(conn: &mut Db, run_id: RunId, me: &str) -> Result<bool, StoreError> {
    Ok(diesel::select(diesel::dsl::exists(
        run_leases::table
            .filter(run_leases::run_id.eq(run_id))
            .filter(run_leases::owner.eq(me)),
    ))
    .get_result(conn)?)
}

/// Unfinished runs (queued, running, waiting on a proposal) no live process holds — never one
/// the asking process holds itself: its own hold it renews, or re-registers if it lapsed — at
/// most `limit`, locked for this transaction and skipping those another process is taking right
/// now (`FOR UPDATE SKIP LOCKED`): what a process may take over.
struct Orphans;
impl StaticSql for Orphans {
    const SQL: &'static str = "SELECT r.id AS id FROM runs r \
        LEFT JOIN run_leases l ON l.run_id = r.id \
        LEFT JOIN processes p ON p.id = l.owner \
        WHERE r.status IN (100, 102, 202) AND (l.owner IS NULL OR p.expires_at IS NULL \
        OR p.expires_at <= ?) AND (l.owner IS NULL OR l.owner <> ?) ORDER BY r.id LIMIT ?";
    const PG: &'static str = "SELECT r.id AS id FROM runs r \
        LEFT JOIN run_leases l ON l.run_id = r.id \
        LEFT JOIN processes p ON p.id = l.owner \
        WHERE r.status IN (100, 102, 202) AND (l.owner IS NULL OR p.expires_at IS NULL \
        OR p.expires_at <= ?) AND (l.owner IS NULL OR l.owner <> ?) ORDER BY r.id LIMIT ? \
        FOR UPDATE OF r SKIP LOCKED";
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    id: i32,
}

/// Takes for `me` the leases of up to `limit` unfinished runs no live process holds (see
/// [`Orphans`]); answers them. The caller recovers them, in the same transaction.
pub fn take_orphans(
    conn: &mut Db,
    me: &str,
    now: Millis,
    limit: i32,
) -> Result<Vec<RunId>, StoreError> {
    let ids: Vec<RunId> = cached::<Orphans>(&[Bind::Big(now.0), Bind::Text(me), Bind::Int(limit)])
        .load::<Id>(conn)?
        .into_iter()
        .map(|r| RunId(r.id))
        .collect();
    for &run_id in &ids {
        crate::on_backend!(conn, c => diesel::insert_into(run_leases::table)
            .values((
                run_leases::run_id.eq(run_id),
                run_leases::owner.eq(me),
                run_leases::taken_at.eq(now.0),
            ))
            .on_conflict(run_leases::run_id)
            .do_update()
            .set((run_leases::owner.eq(me), run_leases::taken_at.eq(now.0)))
            .execute(c))?;
    }
    Ok(ids)
}

/// The live process holding the run, if one does.
pub fn holder(conn: &mut Db, run_id: RunId, now: Millis) -> Result<Option<String>, StoreError> {
    Ok(run_leases::table
        .inner_join(processes::table.on(processes::id.eq(run_leases::owner)))
        .filter(run_leases::run_id.eq(run_id))
        .filter(processes::expires_at.gt(now.0))
        .select(run_leases::owner)
        .first(conn)
        .optional()?)
}

/// The runs `me` holds.
pub fn held(conn: &mut Db, me: &str) -> Result<Vec<RunId>, StoreError> {
    Ok(run_leases::table
        .filter(run_leases::owner.eq(me))
        .order(run_leases::run_id.asc())
        .select(run_leases::run_id)
        .load(conn)?)
}

/// A call for a run another process holds.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = run_calls, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Call {
    /// Its id.
    pub id: i32,
    /// The run.
    pub run_id: RunId,
    /// The process asked (the run's holder when it was sent).
    pub target: String,
    /// The process asking.
    pub origin: String,
    /// What is asked (the forwarded message's name).
    pub method: String,
    /// Its parameters (JSON).
    pub params: String,
    /// The answer (JSON), once given.
    pub result: Option<String>,
}

/// Records a call for `run_id` to process `target`; answers its id. (PostgreSQL tells the
/// other processes at commit: `rummy_calls`, `c<id>`.)
pub fn send_call(
    conn: &mut Db,
    run_id: RunId,
    target: &str,
    origin: &str,
    method: &str,
    params: &str,
    now: Millis,
) -> Result<i32, StoreError> {
    Ok(
        crate::on_backend!(conn, c => diesel::insert_into(run_calls::table)
        .values((
            run_calls::run_id.eq(run_id),
            run_calls::target.eq(target),
            run_calls::origin.eq(origin),
            run_calls::method.eq(method),
            run_calls::params.eq(params),
            run_calls::created_at.eq(now.0),
        ))
        .returning(run_calls::id)
        .get_result(c))?,
    )
}

/// The call `id`.
pub fn call(conn: &mut Db, id: i32) -> Result<Option<Call>, StoreError> {
    Ok(run_calls::table
        .find(id)
        .select(Call::as_select())
        .first(conn)
        .optional()?)
}

/// The calls addressed to `me` that have no answer yet, oldest first.
pub fn pending_calls(conn: &mut Db, me: &str) -> Result<Vec<i32>, StoreError> {
    Ok(run_calls::table
        .filter(run_calls::target.eq(me))
        .filter(run_calls::result.is_null())
        .order(run_calls::id.asc())
        .select(run_calls::id)
        .load(conn)?)
}

/// Answers call `id` with `result` (JSON), unless it has an answer already (the asker gave
/// up on it first); true when this answer is the one it has.
pub fn answer_call(conn: &mut Db, id: i32, result: &str, now: Millis) -> Result<bool, StoreError> {
    let answered = diesel::update(
        run_calls::table
            .filter(run_calls::id.eq(id))
            .filter(run_calls::result.is_null()),
    )
    .set((run_calls::result.eq(result), run_calls::done_at.eq(now.0)))
    .execute(conn)?;
    Ok(answered == 1)
}

/// Records a push too large for a notification's payload; answers its id. (PostgreSQL tells
/// the other processes at commit: `rummy_push`, `r<id>`.)
pub fn relay_push(
    conn: &mut Db,
    origin: &str,
    project_id: i32,
    run: &str,
    text: &str,
    now: Millis,
) -> Result<i32, StoreError> {
    Ok(
        crate::on_backend!(conn, c => diesel::insert_into(relayed_pushes::table)
        .values((
            relayed_pushes::origin.eq(origin),
            relayed_pushes::project_id.eq(project_id),
            relayed_pushes::run.eq(run),
            relayed_pushes::text.eq(text),
            relayed_pushes::created_at.eq(now.0),
        ))
        .returning(relayed_pushes::id)
        .get_result(c))?,
    )
}

/// A relayed push: (origin, project, run alias, notification text).
pub fn relayed(
    conn: &mut Db,
    id: i32,
) -> Result<Option<(String, i32, String, String)>, StoreError> {
    Ok(relayed_pushes::table
        .find(id)
        .select((
            relayed_pushes::origin,
            relayed_pushes::project_id,
            relayed_pushes::run,
            relayed_pushes::text,
        ))
        .first(conn)
        .optional()?)
}

/// A stored notification as another process relays it: the process that recorded it, the
/// run's project and alias, the method and the params.
pub type Stored = (
    Option<String>,
    crate::ids::ProjectId,
    String,
    String,
    String,
);

/// The notification `seq` of run `run_id`, as another process relays it.
pub fn notification(conn: &mut Db, run_id: RunId, seq: i32) -> Result<Option<Stored>, StoreError> {
    use crate::schema::notifications as n;
    Ok(n::table
        .inner_join(runs::table)
        .filter(n::run_id.eq(run_id))
        .filter(n::seq.eq(seq))
        .select((
            n::origin,
            runs::project_id,
            runs::alias,
            n::method,
            n::params,
        ))
        .first(conn)
        .optional()?)
}

/// Names this process on `conn` (PostgreSQL's `application_name`): the notifications the
/// connection stores carry it as their `origin`, so this process does not relay them to itself.
pub fn name_connection(conn: &mut Db, me: &str) -> Result<(), StoreError> {
    use diesel::connection::SimpleConnection;
    if let Db::Pg(c) = conn {
        c.batch_execute(&format!("SET application_name = {}", literal(me)))?;
    }
    Ok(())
}

/// The channel stored and relayed pushes ride (migration 000060's triggers notify it).
pub const PUSH_CHANNEL: &str = "rummy_push";

/// The channel calls and their answers ride.
pub const CALL_CHANNEL: &str = "rummy_calls";

/// The most bytes a push travels in a notification's payload (PostgreSQL allows 7,999); a
/// larger one goes through `relayed_pushes`, its id in the payload.
const INLINE_BYTES: usize = 7_800;

/// A push on its way to the other processes: the project, the run's alias, the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    /// The run's project.
    pub project_id: i32,
    /// The run's alias.
    pub run: String,
    /// The whole notification text.
    pub text: String,
}

/// `text` as an SQL string literal (`standard_conforming_strings`, on since PostgreSQL 9.1:
/// only the quote is doubled).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The statement that relays one push: in the payload (`e<origin>\n<project>\n<run>\n<text>`)
/// or, too large for it, through its row.
fn relay_statement(me: &str, push: &Push, now: Millis) -> String {
    let inline = format!("e{me}\n{}\n{}\n{}", push.project_id, push.run, push.text);
    if inline.len() <= INLINE_BYTES {
        return format!("SELECT pg_notify('{PUSH_CHANNEL}', {});", literal(&inline));
    }
    format!(
        "INSERT INTO relayed_pushes (origin, project_id, run, text, created_at) \
         VALUES ({}, {}, {}, {}, {});",
        literal(me),
        push.project_id,
        literal(&push.run),
        literal(&push.text),
        now.0
    )
}

/// Sends `pushes` to the other processes in one round trip, in order (PostgreSQL; nothing to
/// do on SQLite, where there are no others).
pub fn relay(conn: &mut Db, me: &str, pushes: &[Push], now: Millis) -> Result<(), StoreError> {
    use diesel::connection::SimpleConnection;
    let Db::Pg(c) = conn else { return Ok(()) };
    let sql: String = pushes.iter().map(|p| relay_statement(me, p, now)).collect();
    c.batch_execute(&sql)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory, project, run};
    use pretty_assertions::assert_eq;

    const LEASE: i64 = 15_000;

    /// A free run is taken; its holder keeps it while alive and others are sent to it; once
    /// the holder stops renewing, the next taker takes it over; a release gives up only the
    /// taking it names.
    #[test]
    fn a_run_is_held_by_one_live_process_at_a_time() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let r = run(&mut conn, p.id, "a").run_id;
        let t0 = Millis(1_000);
        register(&mut conn, "a", t0, LEASE).unwrap();
        register(&mut conn, "b", t0, LEASE).unwrap();
        assert_eq!(take(&mut conn, r, "a", t0).unwrap(), Lease::Mine);
        assert_eq!(take(&mut conn, r, "a", t0).unwrap(), Lease::Mine);
        assert_eq!(
            take(&mut conn, r, "b", t0).unwrap(),
            Lease::Held("a".into())
        );
        assert_eq!(holder(&mut conn, r, t0).unwrap(), Some("a".into()));
        // "a" renews; "b" still finds it held later on.
        let t1 = Millis(t0.0 + LEASE - 1);
        assert!(renew(&mut conn, "a", t1, LEASE).unwrap());
        assert!(renew(&mut conn, "b", t1, LEASE).unwrap());
        let t2 = Millis(t0.0 + LEASE + 1);
        assert_eq!(
            take(&mut conn, r, "b", t2).unwrap(),
            Lease::Held("a".into())
        );
        // "a" stops renewing: past its expiry "b" takes the run over, and "a" cannot renew.
        let t3 = Millis(t1.0 + LEASE + 1);
        assert!(renew(&mut conn, "b", Millis(t3.0 - 2), LEASE).unwrap());
        assert_eq!(holder(&mut conn, r, t3).unwrap(), None);
        assert_eq!(take(&mut conn, r, "b", t3).unwrap(), Lease::TakenOver);
        assert!(!renew(&mut conn, "a", t3, LEASE).unwrap());
        assert_eq!(held(&mut conn, "b").unwrap(), vec![r]);
        // A release of an earlier taking leaves a later one alone.
        release(&mut conn, r, "b", t2).unwrap();
        assert_eq!(held(&mut conn, "b").unwrap(), vec![r]);
        release(&mut conn, r, "b", t3).unwrap();
        assert_eq!(held(&mut conn, "b").unwrap(), Vec::<RunId>::new());
    }

    /// Only unfinished runs no live process holds are taken over; a retired process's runs
    /// are free at once.
    #[test]
    fn orphans_are_unfinished_runs_no_live_process_holds() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let (a, b, c) = (
            run(&mut conn, p.id, "a").run_id,
            run(&mut conn, p.id, "b").run_id,
            run(&mut conn, p.id, "c").run_id,
        );
        let t0 = Millis(1_000);
        for id in [a, b, c] {
            diesel::update(runs::table.find(id))
                .set(runs::status.eq(102))
                .execute(&mut conn)
                .unwrap();
        }
        diesel::update(runs::table.find(c))
            .set(runs::status.eq(200))
            .execute(&mut conn)
            .unwrap();
        register(&mut conn, "x", t0, LEASE).unwrap();
        register(&mut conn, "y", t0, LEASE).unwrap();
        take(&mut conn, a, "x", t0).unwrap();
        take(&mut conn, b, "y", t0).unwrap();
        assert_eq!(
            take_orphans(&mut conn, "z", t0, 10).unwrap(),
            Vec::<RunId>::new()
        );
        retire(&mut conn, "y").unwrap();
        assert_eq!(take_orphans(&mut conn, "z", t0, 10).unwrap(), vec![b]);
        assert_eq!(held(&mut conn, "z").unwrap(), vec![b]);
        assert_eq!(alive(&mut conn, t0).unwrap(), vec!["x".to_owned()]);
        // A process never takes over from itself, even past its own expiry ("z", alive
        // then, keeps its run).
        let late = Millis(t0.0 + LEASE + 1);
        register(&mut conn, "z", late, LEASE).unwrap();
        assert_eq!(
            take_orphans(&mut conn, "x", late, 10).unwrap(),
            Vec::<RunId>::new()
        );
    }

    /// A small push rides the payload, its quotes doubled; a large one goes through the table.
    #[test]
    fn small_pushes_ride_the_payload_and_large_ones_the_table() {
        let small = Push {
            project_id: 3,
            run: "r".into(),
            text: r#"{"it's":1}"#.into(),
        };
        assert_eq!(
            relay_statement("p1", &small, Millis(5)),
            "SELECT pg_notify('rummy_push', 'ep1\n3\nr\n{\"it''s\":1}');"
        );
        let large = Push {
            text: "x".repeat(INLINE_BYTES),
            ..small
        };
        assert!(relay_statement("p1", &large, Millis(5)).starts_with(
            "INSERT INTO relayed_pushes (origin, project_id, run, text, created_at) VALUES ('p1', 3, 'r', 'xxx"
        ));
        assert!(relay_statement("p1", &large, Millis(5)).ends_with("', 5);"));
    }

    /// A call waits for its one answer: a second answer (the asker withdrew it first) is
    /// refused, and the addressee finds it among its pending calls until it is answered.
    #[test]
    fn a_call_has_one_answer() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let r = run(&mut conn, p.id, "a").run_id;
        let id = send_call(&mut conn, r, "b", "a", "cancel", "{}", Millis(1)).unwrap();
        assert_eq!(pending_calls(&mut conn, "b").unwrap(), vec![id]);
        assert!(answer_call(&mut conn, id, r#"{"ok":null}"#, Millis(2)).unwrap());
        assert!(!answer_call(&mut conn, id, r#"{"error":{}}"#, Millis(3)).unwrap());
        let call = call(&mut conn, id).unwrap().unwrap();
        assert_eq!(call.result.as_deref(), Some(r#"{"ok":null}"#));
        assert_eq!(pending_calls(&mut conn, "b").unwrap(), Vec::<i32>::new());
    }
}
