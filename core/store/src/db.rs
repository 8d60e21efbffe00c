//! [`Db`]: a connection to the store's database, embedded SQLite or PostgreSQL; opening one is
//! `store::database`'s.

use diesel::connection::TransactionManager;
use diesel::Connection;

pub use connection::{Db, MultiBackend};

/// The connection type and the backend diesel derives for it.
mod connection {
    #![expect(
        missing_docs,
        reason = "diesel's MultiConnection derive generates the backend's undocumented items"
    )]
    use diesel::sqlite::SqliteConnection;

    /// A connection to the store's database. Every store function takes one: the query
    /// builder's SQL runs on either backend, and the few statements whose SQL differs match on
    /// the variant. (PostgreSQL comes first: diesel tries the variants in order when it opens
    /// one from a URL, and SQLite would take any string as a file name.)
    #[derive(diesel::MultiConnection)]
    pub enum Db {
        /// PostgreSQL, through the pure-Rust client of `rummy-pg`.
        Pg(rummy_pg::PgConn),
        /// Embedded SQLite.
        Sqlite(SqliteConnection),
    }
}

/// Runs `f` in a transaction that holds the right to write from its start (SQLite's
/// `BEGIN IMMEDIATE`: no other writer can commit between its reads and its writes);
/// PostgreSQL's row locks and constraints do that job, so there it is a plain transaction.
/// Commits when `f` succeeds, rolls back otherwise.
pub fn immediate_transaction<T, E, F>(conn: &mut Db, f: F) -> Result<T, E>
where
    F: FnOnce(&mut Db) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    type Manager = <Db as Connection>::TransactionManager;
    match conn {
        Db::Sqlite(c) => {
            diesel::connection::AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")?
        }
        Db::Pg(_) => Manager::begin_transaction(conn)?,
    }
    match f(conn) {
        Ok(value) => {
            Manager::commit_transaction(conn)?;
            Ok(value)
        }
        Err(e) => {
            Manager::rollback_transaction(conn)?;
            Err(e)
        }
    }
}

/// Runs `$body` with `$c` bound to the backend's own connection: for the builder's statements
/// that diesel's `MultiBackend` does not render (`ON CONFLICT`, `RETURNING` a whole row,
/// `FOR UPDATE`), written once and compiled for each backend.
#[macro_export]
macro_rules! on_backend {
    ($db:expr, $c:ident => $body:expr) => {
        match $db {
            $crate::db::Db::Pg($c) => $body,
            $crate::db::Db::Sqlite($c) => $body,
        }
    };
}
