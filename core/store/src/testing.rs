//! Test support shared by the store's and its callers' unit tests: a migrated in-memory store,
//! runs and entry writes with everything but what a test varies left at its plain value.
//! Built for the store's own tests and, with the `testing` feature, for the domain's.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed set-up fails the test that asked for it"
)]

use super::entries::{self, EntryWrite, RunRef, WriteCtx, Written};
use super::{projects, runs, schemes, StoreError};
use crate::database::run_migrations;
use crate::db::Db;
use crate::entry::{State, Visibility, Writer};
use crate::ids::ProjectId;
use diesel::connection::SimpleConnection;
use diesel::Connection;
use rummy_provider::time::Millis;
use serde_json::json;

/// The instant test writes are stamped with.
pub const NOW: Millis = Millis(1_700_000_000_000);

/// The variable that sends the store's tests to PostgreSQL: the store suite on PostgreSQL
/// (the workspace's `needs` test binary, `postgres::the_store_suite_passes_on_postgres`) runs
/// this test binary again with it.
pub const BACKEND_VAR: &str = "RUMMY_TEST_BACKEND";

/// The server the PostgreSQL suites create their databases on.
pub const POSTGRES_URL_VAR: &str = "RUMMY_TEST_POSTGRES_URL";

/// Whether this test process runs the store's tests on PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var(BACKEND_VAR).as_deref() == Ok("postgres")
}

/// A migrated store of its own with the scheme registry seeded (and, on SQLite, foreign keys
/// on and hedberg's functions): in memory, or — with `RUMMY_TEST_BACKEND=postgres` — a fresh
/// PostgreSQL database.
pub fn memory() -> Db {
    if on_postgres() {
        return postgres();
    }
    let mut conn = Db::establish(":memory:").unwrap();
    conn.batch_execute("PRAGMA foreign_keys = ON;").unwrap();
    crate::hedberg_sql::register(&mut conn).unwrap();
    run_migrations(&mut conn).unwrap();
    schemes::write_registry(&mut conn).unwrap();
    conn
}

/// The prefix of every database this process creates: the suite's driver drops them after.
pub fn database_prefix(pid: u32) -> String {
    format!("rummy_t{pid}_")
}

/// A fresh database on `RUMMY_TEST_POSTGRES_URL`: a copy of this process's migrated and
/// seeded template (made on first use), so each test pays for a copy, not for the migrations.
fn postgres() -> Db {
    static COPIES: rummy_pg::admin::TemplateCopies = rummy_pg::admin::TemplateCopies::new();
    let url = std::env::var(POSTGRES_URL_VAR).expect("RUMMY_TEST_POSTGRES_URL names the server");
    let prefix = database_prefix(std::process::id());
    let fresh = COPIES
        .fresh(&url, &prefix, |template| {
            let mut conn = Db::establish(template).unwrap();
            run_migrations(&mut conn).unwrap();
            schemes::write_registry(&mut conn).unwrap();
        })
        .unwrap();
    Db::establish(&fresh).unwrap()
}

/// Project `name` (rooted at `/<name>`).
pub fn project(conn: &mut Db, name: &str) -> projects::Project {
    projects::hello(conn, name, &format!("/{name}"), None, NOW).unwrap()
}

/// A new run `alias` of the project, on model `m`.
pub fn run(conn: &mut Db, project_id: ProjectId, alias: &str) -> RunRef {
    let new = runs::NewRun {
        project_id,
        alias: Some(alias.into()),
        model: "m".into(),
        ..Default::default()
    };
    let r = runs::create(conn, &new, NOW).unwrap();
    RunRef {
        run_id: r.id,
        project_id,
    }
}

/// Writes `body` at `path` for `run` as `writer`, resolved, at turn 1, with no attributes.
pub fn write(
    conn: &mut Db,
    run: RunRef,
    path: &str,
    body: &str,
    visibility: Visibility,
    writer: Writer,
) -> Result<Written, StoreError> {
    let w = EntryWrite {
        run,
        path,
        body,
        attributes: &json!({}),
        state: State::Resolved,
        outcome: None,
        visibility,
        loop_id: None,
        turn: 1,
        writer,
    };
    entries::write(
        conn,
        &w,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
}

/// Stores an entry of any scheme — one the registry does not know yet, such as another
/// feature's `session://` — in `scope`, with no view, and indexes it for recall as a loop's end
/// would: what recall must cope with.
pub fn insert_entry(conn: &mut Db, scope: &str, path: &str, body: &str, at: Millis) {
    use crate::schema::entries as e;
    use diesel::{ExpressionMethods, QueryDsl, RunQueryDsl};
    diesel::insert_into(e::table)
        .values((
            e::scope.eq(scope),
            e::path.eq(path),
            e::scheme.eq(rummy_text::path::scheme_of(path)),
            e::body.eq(body),
            e::hash.eq(entries::hex_sha256(body)),
            e::created_at.eq(at.0),
            e::updated_at.eq(at.0),
        ))
        .execute(conn)
        .unwrap();
    let id: i32 = e::table
        .filter(e::scope.eq(scope))
        .filter(e::path.eq(path))
        .select(e::id)
        .first(conn)
        .unwrap();
    super::memory::index(conn, id).unwrap();
}

/// Writes a run's fact as [`write`] does, and indexes it for recall as its loop's end would.
pub fn fact(conn: &mut Db, run: RunRef, path: &str, body: &str) -> Written {
    let written = write(conn, run, path, body, Visibility::Visible, Writer::Model).unwrap();
    super::memory::index(conn, written.entry_id).unwrap();
    written
}
