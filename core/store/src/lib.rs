//! rummy's store: the diesel schema, the stored model and the queries, as plain functions over a
//! connection passed in; the actors' `StoreActor` owns the writing connection and calls them.
//!
//! The crate sits on `rummy-text` and `rummy-provider` and under the domain (`rummy-core`), so
//! cargo keeps SQL out of both. Besides the queries (one module per table or concern:
//! [`entries`], [`runs`], [`loops`], [`turns`], …) it holds what they read and write, each here
//! for the reason given:
//!
//! - [`schema`], [`db`] and [`database`]: the tables, the connection over SQLite or PostgreSQL,
//!   the migrations embedded and run when the pool is built (here: only the store opens one);
//! - [`hedberg_sql`]: the pattern functions registered on every SQLite connection (here, not
//!   in `rummy-text`: they need a diesel connection, and text knows no database);
//! - [`entry`], [`ids`] and [`schemes`]: the entry model, row ids as types and the scheme
//!   registry the `schemes` table is seeded from (here: every entry query reads and writes them);
//! - [`run`]: run statuses, stop reasons, modes and aliases (here: stored in `runs` and `loops`
//!   and checked by the run queries);
//! - [`skill`]: skill files' frontmatter and what a run's active skills allow (here: a skill
//!   entry is validated when written, and a run's memory scope is read from its stored skills);
//! - [`approval`]: the hash of a pending proposal (here: an entry row reports the hash a client
//!   approves);
//! - [`principal`]: who a connection acts for (here: bearer tokens are stored with theirs; the
//!   rest of access stays in the domain);
//! - [`period`]: the calendar period a project's spending is summed over (here: stored with the
//!   project; the rest of fair use stays in the domain);
//! - [`location`]: where the database is, SQLite file or PostgreSQL URL (here: the store opens
//!   it; the configuration reads it from the environment);
//! - [`models::ModelSeed`]: a model alias from the environment (here: seeded into `models`).
//!
//! Invariant: no actor system, no clock (timestamps are passed in); SQL is written only here
//! and in `rummy-pg` (the layering tests check both).

pub mod approval;
pub mod audit;
pub mod cached;
pub mod cluster;
pub mod constraints;
pub mod context;
pub mod database;
pub mod db;
pub mod entries;
pub mod entry;
pub mod export;
pub mod files;
pub mod flags;
pub mod health;
pub mod hedberg_sql;
pub mod ids;
pub mod location;
pub mod loops;
pub mod memory;
pub mod models;
pub mod notifications;
pub mod ops;
pub mod period;
pub mod principal;
pub mod projects;
pub mod rpc_log;
pub mod run;
pub mod runs;
pub mod schema;
pub mod schemes;
pub mod selection;
pub mod session_state;
pub mod shared;
pub mod sidecar_calls;
pub mod skill;
pub mod skills;
pub mod stats;
pub mod tokens;
pub mod turns;
pub mod types;
mod usage;
pub mod views;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use crate::entry::Writer;
use std::sync::Arc;
use thiserror::Error;

/// Why a store call failed. Returned by every store function and by the actors' `Store`
/// handle (which adds the kinds of its own machinery: a writer that stopped, a unit that
/// panicked, a group that did not commit, a blocking task that did not finish).
///
/// The caller reacts by kind, never by text: the session maps each variant to one wire error
/// (`rummy_actors::errors`), a turn ends its loop 500 with the message as its `error://` entry,
/// start-up gives up. Only `Permission`, `Refused`, `NotFound`, `Conflict`, `Invalid`, `TooLarge` and `TooMany` are
/// the client's doing and reach it with their message; every other variant is the server's
/// failure: logged, and answered -32603 with no detail.
#[derive(Debug, Error)]
pub enum StoreError {
    /// SQLite or diesel failed (-32603).
    #[error("database error: {0}")]
    Db(#[from] diesel::result::Error),
    /// The database could not be opened (start-up gives up).
    #[error("cannot open database: {0}")]
    Connection(#[from] diesel::ConnectionError),
    /// A migration failed at start-up (start-up gives up).
    #[error("migration failed: {0}")]
    Migration(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The read pool could not be built, or could not hand out a connection in time (-32603).
    #[error("read pool: {0}")]
    Pool(#[from] diesel::r2d2::PoolError),
    /// A value the server built could not be turned into JSON or read back from it (-32603).
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The unit of work panicked; its savepoint (or transaction) was rolled back and the
    /// writer goes on (-32603: a bug, never the client's doing).
    #[error("a store unit panicked; it was rolled back")]
    Panicked,
    /// The actor that serialises this store work (named) stopped, or never answered: nothing
    /// of it was written (-32603; the server is stopping).
    #[error("{0} stopped before the work was done")]
    Stopped(&'static str),
    /// The unit's own work succeeded but its group's transaction did not commit: nothing of it
    /// was written (-32603).
    #[error("the write did not commit: {0}")]
    Uncommitted(#[source] Arc<StoreError>),
    /// Work handed to the blocking pool (a read, a project scan) panicked or was cancelled
    /// (-32603).
    #[error("a blocking task did not finish: {0}")]
    Task(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A thread the store needs (its checkpoint thread) could not be started (start-up gives up).
    #[error("cannot start a store thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// A writer tier wrote a scheme it may not write (-32003).
    #[error("permission denied: writer \"{writer}\" may not write scheme \"{scheme}\" (allowed: {allowed})")]
    Permission {
        /// The refused writer.
        writer: &'static str,
        /// The scheme.
        scheme: String,
        /// The tiers that may.
        allowed: String,
    },
    /// The writer may write the scheme but not this change of it (-32003): a client's change
    /// of a project file's body or state. The message says what is refused and why.
    #[error("{0}")]
    Refused(String),
    /// The named thing does not exist (-32004).
    #[error("{0}")]
    NotFound(String),
    /// The write conflicts with what is stored (-32005).
    #[error("{0}")]
    Conflict(String),
    /// The client's input is not acceptable (-32602); never a failure of the server's own.
    #[error("{0}")]
    Invalid(String),
    /// A model's command needs its body filter judged off the writer first
    /// ([`selection::Judgements`]): the dispatch stops before it, writing nothing of it, and
    /// goes on once the filter is judged. Never reaches a client (-32603 if it did).
    #[error("the body filter {} on {} is not judged yet", .0.filter, .0.pattern)]
    Unjudged(Box<selection::FilterCall>),
    /// A body over a size limit (-32007): the message says the limit and what to do.
    #[error("{message}")]
    TooLarge {
        /// What the writer reads.
        message: String,
        /// The body's size in estimated tokens.
        tokens: i32,
        /// The limit in tokens.
        limit: i32,
    },
    /// A list whose answer would pass the message limit (-32007): `limit` is how many of its
    /// items fit, a page size that is answered.
    #[error("{message}")]
    TooMany {
        /// What the caller reads.
        message: String,
        /// How many items fit one message.
        limit: usize,
    },
}

impl StoreError {
    /// A permission error naming the writer and scheme.
    pub fn permission(writer: Writer, scheme: &crate::schemes::SchemeSpec) -> StoreError {
        StoreError::Permission {
            writer: writer.as_str(),
            scheme: scheme.name.to_owned(),
            allowed: scheme.writable_by().join(", "),
        }
    }
}

/// Whether a diesel error is a UNIQUE constraint violation.
pub(crate) fn is_unique_violation(err: &diesel::result::Error) -> bool {
    matches!(
        err,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}
