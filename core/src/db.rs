//! Opening SQLite: the single writing connection (WAL, migrations) and the read-only pool.

use crate::store::StoreError;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::sqlite::SqliteConnection;
use diesel::Connection;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use std::path::Path;

/// The migrations in `migrations/`, embedded in the binary and run at start-up.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations");

/// A pool of read-only connections.
pub type ReadPool = Pool<ConnectionManager<SqliteConnection>>;

/// Settings every connection gets: foreign keys on, and a busy timeout so a
/// reader never fails while the writer checkpoints.
const COMMON_PRAGMAS: &str =
    "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000; PRAGMA temp_store = MEMORY;";

fn path_str(path: &Path) -> Result<&str, StoreError> {
    path.to_str()
        .ok_or_else(|| StoreError::Invalid(format!("database path {path:?} is not UTF-8")))
}

/// Opens the one writing connection: creates the file if missing, turns on WAL
/// with `synchronous=NORMAL`, and runs pending migrations.
pub fn open_writer(path: &Path) -> Result<SqliteConnection, StoreError> {
    let mut conn = SqliteConnection::establish(path_str(path)?)?;
    conn.batch_execute(COMMON_PRAGMAS)?;
    conn.batch_execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    crate::hedberg::sql::register(&mut conn)?;
    run_migrations(&mut conn)?;
    Ok(conn)
}

/// Runs every pending migration.
pub fn run_migrations(conn: &mut SqliteConnection) -> Result<(), StoreError> {
    conn.run_pending_migrations(MIGRATIONS)
        .map_err(|e| StoreError::Migration(e.to_string()))?;
    Ok(())
}

#[derive(Debug)]
struct ReadOnly;

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for ReadOnly {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute(COMMON_PRAGMAS)
            .and_then(|()| conn.batch_execute("PRAGMA query_only = ON;"))
            .and_then(|()| crate::hedberg::sql::register(conn))
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// Opens a pool of `size` read-only connections to a database the writer has already created.
pub fn open_read_pool(path: &Path, size: u32) -> Result<ReadPool, StoreError> {
    let manager = ConnectionManager::<SqliteConnection>::new(path_str(path)?);
    Pool::builder()
        .max_size(size.max(1))
        .connection_customizer(Box::new(ReadOnly))
        .build(manager)
        .map_err(|e| StoreError::Pool(e.to_string()))
}
