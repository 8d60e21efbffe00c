//! Which database a test's server uses: the SQLite file in its home, or — with
//! `RUMMY_TEST_BACKEND=postgres` (the end-to-end suite on PostgreSQL, which the `needs` binary
//! runs) — a fresh PostgreSQL database of its own on `RUMMY_TEST_POSTGRES_URL`, made the first
//! time the home asks, so a restart on the same home finds the same data.

use diesel::connection::SimpleConnection;
use diesel::Connection;
use rummy::config::Config;
use rummy_store::db::Db;
use rummy_store::location::Location;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The variable that sends the suite's servers to PostgreSQL.
pub const BACKEND_VAR: &str = "RUMMY_TEST_BACKEND";

/// The server the PostgreSQL suites create their databases on.
pub const POSTGRES_URL_VAR: &str = "RUMMY_TEST_POSTGRES_URL";

/// Whether this test process runs its servers on PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var(BACKEND_VAR).as_deref() == Ok("postgres")
}

/// The prefix of every database the test process `pid` creates: the driver drops them after.
pub fn database_prefix(pid: u32) -> String {
    format!("rummy_e{pid}_")
}

/// The database of the server whose home is `home`: `home/rummy.db`, or on PostgreSQL the
/// home's own database (created, migrated, on first use).
pub fn of_home(home: &Path) -> Location {
    if !on_postgres() {
        return Location::Sqlite(home.join("rummy.db"));
    }
    static HOMES: Mutex<Option<HashMap<PathBuf, Location>>> = Mutex::new(None);
    let mut homes = HOMES.lock().unwrap_or_else(PoisonError::into_inner);
    homes
        .get_or_insert_with(HashMap::new)
        .entry(home.to_path_buf())
        .or_insert_with(fresh_postgres)
        .clone()
}

/// `config` with its database set to its home's ([`of_home`]).
pub fn on_home_database(mut config: Config) -> Config {
    if on_postgres() {
        config.database_url = Some(of_home(&config.home));
    }
    config
}

/// What a `rummy` child process on `home` needs in its environment to use the home's
/// database: `RUMMY_DATABASE_URL` on PostgreSQL, nothing on SQLite (the home says it).
pub fn vars(home: &Path) -> Vec<(&'static str, String)> {
    match of_home(home) {
        Location::Postgres(url) => vec![("RUMMY_DATABASE_URL", url)],
        Location::Sqlite(_) => Vec::new(),
    }
}

/// A connection to the database at `location` that may write, as it is (no migration): what a
/// test uses to look under the server, or to change what it finds there.
pub fn connect(location: &Location) -> Db {
    match location {
        Location::Sqlite(path) => {
            let mut conn = Db::establish(path.to_str().unwrap()).unwrap();
            conn.batch_execute("PRAGMA busy_timeout = 5000;").unwrap();
            conn
        }
        Location::Postgres(url) => Db::establish(url).unwrap(),
    }
}

/// Every stored byte of the database at `location` as text, for a test that must find no
/// secret anywhere in it: SQLite's file and its log as they are on disk; every row of every
/// table on PostgreSQL.
pub fn all_text(location: &Location) -> String {
    match location {
        Location::Sqlite(path) => {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            [path.as_os_str().to_owned(), wal]
                .iter()
                .filter_map(|p| std::fs::read(p).ok())
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .collect()
        }
        Location::Postgres(_) => {
            use diesel::RunQueryDsl;
            #[derive(diesel::QueryableByName)]
            struct Text {
                #[diesel(sql_type = diesel::sql_types::Text)]
                text: String,
            }
            let mut conn = connect(location);
            let tables: Vec<Text> = diesel::sql_query(
                "SELECT tablename::text AS text FROM pg_tables WHERE schemaname = 'public'",
            )
            .load(&mut conn)
            .unwrap();
            tables
                .iter()
                .flat_map(|table| {
                    diesel::sql_query(format!("SELECT t::text AS text FROM \"{}\" t", table.text))
                        .load::<Text>(&mut conn)
                        .unwrap()
                })
                .map(|row| row.text + "\n")
                .collect()
        }
    }
}

/// A fresh database on `RUMMY_TEST_POSTGRES_URL`: a copy of this process's migrated template
/// (made on first use), so each server pays for a copy, not for the migrations.
fn fresh_postgres() -> Location {
    static COPIES: rummy_pg::admin::TemplateCopies = rummy_pg::admin::TemplateCopies::new();
    let url = std::env::var(POSTGRES_URL_VAR).expect("RUMMY_TEST_POSTGRES_URL names the server");
    let prefix = database_prefix(std::process::id());
    let fresh = COPIES
        .fresh(&url, &prefix, |template| {
            let location = Location::Postgres(template.to_owned());
            drop(rummy_store::database::open(&location).unwrap());
        })
        .unwrap();
    Location::Postgres(fresh)
}
