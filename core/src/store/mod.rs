//! Store queries as plain functions over a connection passed in; the `StoreActor` owns the writing connection and calls them.

pub mod cached;
pub mod constraints;
pub mod context;
pub mod entries;
pub mod files;
pub mod loops;
pub mod models;
pub mod notifications;
pub mod ops;
pub mod projects;
pub mod rpc_log;
pub mod runs;
pub mod schemes;
pub mod skills;
pub mod tokens;
pub mod turns;
pub mod views;

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use crate::entry::Writer;
use thiserror::Error;

/// Why a store call failed; each variant maps to one client-facing error.
#[derive(Debug, Error)]
pub enum StoreError {
    /// SQLite or diesel failed; the caller reports an internal error.
    #[error("database error: {0}")]
    Db(#[from] diesel::result::Error),
    /// The database could not be opened.
    #[error("cannot open database: {0}")]
    Connection(#[from] diesel::ConnectionError),
    /// A migration failed at start-up.
    #[error("migration failed: {0}")]
    Migration(String),
    /// The read pool could not be built or hand out a connection.
    #[error("read pool: {0}")]
    Pool(String),
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
    /// The named thing does not exist (-32004).
    #[error("{0}")]
    NotFound(String),
    /// The write conflicts with what is stored (-32005).
    #[error("{0}")]
    Conflict(String),
    /// The input is not acceptable (-32602).
    #[error("{0}")]
    Invalid(String),
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
