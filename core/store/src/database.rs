//! Opening the store's database ([`Location`] says which): the single writing connection
//! (SQLite: WAL, migrations), the read-only pool, SQLite's checkpoints and backups.

use crate::db::Db;
use crate::location::Location;
use crate::StoreError;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ManageConnection, Pool, R2D2Connection};
use diesel::sqlite::SqliteConnection;
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use std::path::Path;

/// The SQLite migrations in `migrations/sqlite/`, embedded in the binary and run at start-up.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// The PostgreSQL migrations in `migrations/postgres/`: the same versions and the same schema
/// as [`MIGRATIONS`], in PostgreSQL's SQL.
pub const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// A pool of read-only connections.
pub type ReadPool = Pool<Readers>;

/// Settings every SQLite connection gets: foreign keys on, and a busy timeout so a
/// reader never fails while the writer checkpoints.
const COMMON_PRAGMAS: &str =
    "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000; PRAGMA temp_store = MEMORY;";

fn path_str(path: &Path) -> Result<&str, StoreError> {
    path.to_str()
        .ok_or_else(|| StoreError::Invalid(format!("database path {path:?} is not UTF-8")))
}

/// Opens the one writing connection and runs pending migrations. SQLite: creates the file if
/// missing, turns on WAL with `synchronous=NORMAL`, registers hedberg's SQL functions.
pub fn open(location: &Location) -> Result<Db, StoreError> {
    match location {
        Location::Sqlite(path) => open_writer(path),
        Location::Postgres(url) => {
            let mut conn = Db::Pg(rummy_pg::PgConn::connect(url)?);
            run_migrations(&mut conn)?;
            Ok(conn)
        }
    }
}

/// Opens the one writing connection to the SQLite file at `path` (see [`open`]).
pub fn open_writer(path: &Path) -> Result<Db, StoreError> {
    let mut conn = SqliteConnection::establish(path_str(path)?)?;
    conn.batch_execute(COMMON_PRAGMAS)?;
    conn.batch_execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    let mut conn = Db::Sqlite(conn);
    crate::hedberg_sql::register(&mut conn)?;
    run_migrations(&mut conn)?;
    Ok(conn)
}

/// The migrations of the connection's backend.
pub fn migrations_of(conn: &Db) -> EmbeddedMigrations {
    match conn {
        Db::Sqlite(_) => MIGRATIONS,
        Db::Pg(_) => PG_MIGRATIONS,
    }
}

/// Runs every pending migration of the connection's backend.
pub fn run_migrations(conn: &mut Db) -> Result<(), StoreError> {
    match conn {
        Db::Sqlite(c) => c.run_pending_migrations(MIGRATIONS).map(drop),
        Db::Pg(c) => c.run_pending_migrations(PG_MIGRATIONS).map(drop),
    }
    .map_err(StoreError::Migration)
}

/// Opens the read-only connections of a pool: SQLite ones with the common settings, read-only
/// and with hedberg's functions; PostgreSQL ones in read-only transactions.
#[derive(Debug)]
pub struct Readers(Location);

impl ManageConnection for Readers {
    type Connection = Db;
    type Error = StoreError;

    fn connect(&self) -> Result<Db, StoreError> {
        match &self.0 {
            Location::Sqlite(path) => {
                let mut conn = SqliteConnection::establish(path_str(path)?)?;
                conn.batch_execute(COMMON_PRAGMAS)?;
                conn.batch_execute("PRAGMA query_only = ON;")?;
                let mut conn = Db::Sqlite(conn);
                crate::hedberg_sql::register(&mut conn)?;
                Ok(conn)
            }
            Location::Postgres(url) => {
                let mut conn = rummy_pg::PgConn::connect(url)?;
                conn.batch_execute("SET default_transaction_read_only = on")?;
                Ok(Db::Pg(conn))
            }
        }
    }

    fn is_valid(&self, conn: &mut Db) -> Result<(), StoreError> {
        Ok(conn.ping()?)
    }

    fn has_broken(&self, conn: &mut Db) -> bool {
        conn.is_broken()
    }
}

/// Opens a pool of `size` read-only connections to a database the writer has already created.
pub fn open_read_pool(location: &Location, size: u32) -> Result<ReadPool, StoreError> {
    Pool::builder()
        .max_size(size.max(1))
        // No `SELECT 1` before every checkout: a round trip per read. A PostgreSQL connection
        // that went stale (a restarted server) fails its read, is then marked broken and
        // replaced (`has_broken`).
        .test_on_check_out(false)
        .build(Readers(location.clone()))
        .map_err(StoreError::Pool)
}

/// Hands WAL checkpoints to another connection: the writer stops checkpointing on its own
/// commits, so copying the log into the database (and its fsync) is off the path of every
/// write. Whoever calls this must run [`checkpoint`] regularly, or the log grows without end.
/// PostgreSQL checkpoints by itself: nothing to hand off.
pub fn hand_off_checkpoints(writer: &mut Db) -> Result<(), StoreError> {
    if let Db::Sqlite(conn) = writer {
        conn.batch_execute("PRAGMA wal_autocheckpoint = 0;")?;
    }
    Ok(())
}

/// Opens a connection that only checkpoints the database's write-ahead log.
pub fn open_checkpointer(path: &Path) -> Result<SqliteConnection, StoreError> {
    let mut conn = SqliteConnection::establish(path_str(path)?)?;
    conn.batch_execute(COMMON_PRAGMAS)?;
    Ok(conn)
}

/// What one checkpoint did: the frames in the log, and how many of them are now in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, diesel::QueryableByName)]
pub struct Checkpointed {
    /// Frames in the write-ahead log.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub log: i32,
    /// Frames copied into the database so far.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub checkpointed: i32,
}

/// Copies what it can of the log into the database without waiting for readers or the writer
/// (a passive checkpoint). The log starts over from its beginning at the next write that
/// begins with all of it copied: one committed while this ran keeps it growing.
pub fn checkpoint(conn: &mut SqliteConnection) -> Result<Checkpointed, StoreError> {
    Ok(diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)").get_result(conn)?)
}

/// Opens an SQLite database that must already exist, as it is and read-only (SQLite's
/// `mode=ro`: no migration, nothing written): for the commands that read or copy it beside a
/// running server (`rummy export`, `rummy backup`). SQLite's write-ahead log lets them read
/// while the server writes.
///
/// Read-only at the file, not only `query_only`: a connection that closes as the database's
/// last user (as far as the locks say) checkpoints the log and removes it — and a server whose
/// locks were lost would go on writing into the removed file. Holding the database file open
/// for reading only, this connection can never take the lock that removal needs.
pub fn open_existing(path: &Path) -> Result<Db, StoreError> {
    if !path.is_file() {
        return Err(StoreError::NotFound(format!(
            "no database at {}",
            path.display()
        )));
    }
    let mut conn = SqliteConnection::establish(&read_only_uri(path_str(path)?))?;
    conn.batch_execute(COMMON_PRAGMAS)?;
    Ok(Db::Sqlite(conn))
}

/// The SQLite URI that opens the file at `path` read-only: `file:` with the path's `%`, `?`
/// and `#` escaped (SQLite decodes `%HH`; `?` and `#` would end the path), an absolute path
/// behind an empty authority so a leading `//` is not read as a host.
fn read_only_uri(path: &str) -> String {
    let mut uri = String::from(if path.starts_with('/') {
        "file://"
    } else {
        "file:"
    });
    for c in path.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro");
    uri
}

/// Opens a database that must already exist for reading only (SQLite's `PRAGMA query_only`,
/// PostgreSQL's read-only transactions): nothing done on it can change the server's data.
pub fn open_reader(location: &Location) -> Result<Db, StoreError> {
    match location {
        Location::Sqlite(path) => {
            let mut conn = open_existing(path)?;
            conn.batch_execute("PRAGMA query_only = ON;")?;
            Ok(conn)
        }
        Location::Postgres(_) => Readers(location.clone()).connect(),
    }
}

/// Whether the database lacks migrations this build has (a server of an older version wrote
/// it last): reading it with this build's queries would fail on the missing columns. Only
/// reads (diesel's own check first creates its table, which a read-only PostgreSQL
/// connection refuses).
pub fn needs_migration(conn: &mut Db) -> Result<bool, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    let known: Vec<String> = match conn {
        Db::Sqlite(_) => versions::<diesel::sqlite::Sqlite>(&MIGRATIONS)?,
        Db::Pg(_) => versions::<diesel::pg::Pg>(&PG_MIGRATIONS)?,
    };
    let applied: std::collections::BTreeSet<String> =
        diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
            .load::<Applied>(conn)?
            .into_iter()
            .map(|a| a.version)
            .collect();
    Ok(known.iter().any(|v| !applied.contains(v)))
}

/// The versions of the migrations in `source`, as diesel records them once run.
fn versions<DB: diesel::backend::Backend>(
    source: &impl diesel::migration::MigrationSource<DB>,
) -> Result<Vec<String>, StoreError> {
    Ok(source
        .migrations()
        .map_err(StoreError::Migration)?
        .iter()
        .map(|m| m.name().version().to_string())
        .collect())
}

/// Copies the whole database into `target` as one consistent snapshot (`VACUUM INTO`, in one
/// read transaction: a server writing meanwhile is neither blocked nor half-copied). `target`
/// must not exist or be an empty file; SQLite refuses anything else.
pub fn backup_into(conn: &mut Db, target: &Path) -> Result<(), StoreError> {
    let Db::Sqlite(conn) = conn else {
        return Err(StoreError::Invalid(
            "rummy backup copies an SQLite database; back PostgreSQL up with pg_dump".into(),
        ));
    };
    diesel::sql_query("VACUUM INTO ?")
        .bind::<diesel::sql_types::Text, _>(path_str(target)?)
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database with every migration needs none; one whose newest migration is not recorded
    /// (an older server wrote it) does — found by reading alone, on either backend.
    #[test]
    fn a_database_missing_a_migration_needs_one() {
        let mut conn = crate::testing::memory();
        assert!(!needs_migration(&mut conn).unwrap());
        let newest = match &conn {
            Db::Sqlite(_) => versions::<diesel::sqlite::Sqlite>(&MIGRATIONS),
            Db::Pg(_) => versions::<diesel::pg::Pg>(&PG_MIGRATIONS),
        }
        .unwrap()
        .into_iter()
        .max()
        .unwrap();
        diesel::sql_query(format!(
            "DELETE FROM __diesel_schema_migrations WHERE version = '{newest}'"
        ))
        .execute(&mut conn)
        .unwrap();
        assert!(needs_migration(&mut conn).unwrap());
    }

    /// With checkpoints handed off, commits leave the log alone until the checkpointer copies
    /// all of it.
    #[test]
    fn a_handed_off_log_is_checkpointed_by_the_other_connection() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("rummy.db");
        let mut writer = open_writer(&path).unwrap();
        hand_off_checkpoints(&mut writer).unwrap();
        let mut checkpointer = open_checkpointer(&path).unwrap();
        checkpoint(&mut checkpointer).unwrap();
        for i in 0..50 {
            writer
                .batch_execute(&format!(
                    "INSERT INTO projects (name, project_root, created_at) VALUES ('p{i}', '/p', 0)"
                ))
                .unwrap();
        }
        let done = checkpoint(&mut checkpointer).unwrap();
        assert!(done.log >= 50, "every commit stayed in the log: {done:?}");
        assert_eq!(done.checkpointed, done.log);
    }

    /// A path becomes a read-only URI whatever characters it holds.
    #[test]
    fn read_only_uris_escape_the_path() {
        let table = [
            (
                "/var/lib/rummy/rummy.db",
                "file:///var/lib/rummy/rummy.db?mode=ro",
            ),
            ("//srv/r.db", "file:////srv/r.db?mode=ro"),
            ("data/r.db", "file:data/r.db?mode=ro"),
            ("/a b/100%?#.db", "file:///a b/100%25%3f%23.db?mode=ro"),
        ];
        for (path, uri) in table {
            assert_eq!(read_only_uri(path), uri, "{path}");
        }
    }

    /// The reader of the commands beside a server cannot write, even without `query_only`,
    /// and closing it while the server's connection is open leaves the log in place; a
    /// database at a path with URI characters in it opens all the same.
    #[test]
    fn the_commands_reader_is_read_only_at_the_file() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("odd ?#%.db");
        let mut writer = open_writer(&path).unwrap();
        writer
            .batch_execute(
                "INSERT INTO projects (name, project_root, created_at) VALUES ('web', '/w', 0)",
            )
            .unwrap();
        let mut reader = open_existing(&path).unwrap();
        let refused = reader
            .batch_execute(
                "INSERT INTO projects (name, project_root, created_at) VALUES ('x', '/x', 0)",
            )
            .unwrap_err();
        assert!(refused.to_string().contains("readonly"), "{refused}");
        assert!(!needs_migration(&mut reader).unwrap());
        drop(reader);
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        assert!(std::path::Path::new(&wal).exists());
    }

    /// A backup is the database's rows in a file of its own, without a log beside it; an
    /// existing file that is not empty is refused, and a missing database is named.
    #[test]
    fn a_backup_copies_every_row_and_refuses_a_file_with_content() {
        #[derive(diesel::QueryableByName)]
        struct Name {
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
        }
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("rummy.db");
        let mut writer = open_writer(&path).unwrap();
        writer
            .batch_execute(
                "INSERT INTO projects (name, project_root, created_at) VALUES ('web', '/w', 0)",
            )
            .unwrap();
        let mut reader = open_existing(&path).unwrap();
        let copy = dir.path().join("copy.db");
        backup_into(&mut reader, &copy).unwrap();
        let mut copied = open_existing(&copy).unwrap();
        let names: Vec<String> = diesel::sql_query("SELECT name FROM projects")
            .load::<Name>(&mut copied)
            .unwrap()
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(names, vec!["web".to_owned()]);
        assert!(!needs_migration(&mut copied).unwrap());
        assert!(
            !dir.path().join("copy.db-wal").exists(),
            "the copy is one file"
        );

        let taken = dir.path().join("taken.db");
        std::fs::write(&taken, "keep me").unwrap();
        assert!(backup_into(&mut reader, &taken).is_err());
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "keep me");
        let missing = dir.path().join("missing.db");
        assert_eq!(
            open_existing(&missing).err().map(|e| e.to_string()),
            Some(format!("no database at {}", missing.display()))
        );
    }
}
