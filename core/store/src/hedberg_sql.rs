//! The SQLite functions `hedmatch`, `hedsearch` and `hedreplace`, so queries filter by pattern in SQL.
//!
//! PostgreSQL has no such functions (and its regex dialect is not Rust's): there the store
//! selects the candidate rows and evaluates the pattern in Rust: its regex dialect is not Rust's.
//!
//! NULL in, no match out: `hedmatch`/`hedsearch` give 0 and `hedreplace`
//! gives NULL. Compiled patterns come from the shared cache, so a pattern
//! compiles once however many rows it is matched against.
//!
//! `hedsearch` is the body filter: a body over the filter's [`limits`](rummy_text::hedberg::limits) makes
//! the function raise an SQL error whose message is the [`Refused`] one, so the whole query
//! fails and [`refusal`] tells the caller why.

use crate::db::Db;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{Integer, Nullable, Text};
use diesel::sqlite::Sqlite;
use diesel::QueryResult;
use rummy_text::hedberg::limits::Refused;

diesel::define_sql_function! {
    /// `hedmatch(pattern, text)`: 1 when `text` matches `pattern` (see the hedberg module doc), else 0.
    fn hedmatch(pattern: Nullable<Text>, text: Nullable<Text>) -> Integer;
}

diesel::define_sql_function! {
    /// `hedsearch(pattern, text)`: 1 when `pattern` occurs inside `text`, else 0.
    fn hedsearch(pattern: Nullable<Text>, text: Nullable<Text>) -> Integer;
}

diesel::define_sql_function! {
    /// `hedreplace(pattern, replacement, text)`: `text` with the pattern's matches replaced, or NULL when none.
    fn hedreplace(pattern: Nullable<Text>, replacement: Nullable<Text>, text: Nullable<Text>) -> Nullable<Text>;
}

/// Registers the three functions on an SQLite `conn`; call it on every connection opened.
/// Nothing to do on PostgreSQL.
pub fn register(conn: &mut Db) -> QueryResult<()> {
    let Db::Sqlite(conn) = conn else {
        return Ok(());
    };
    hedmatch_utils::register_impl(
        conn,
        |pattern: Option<String>, text: Option<String>| match (pattern, text) {
            (Some(pattern), Some(text)) => {
                i32::from(rummy_text::hedberg::hedmatch(&pattern, &text))
            }
            _ => 0,
        },
    )?;
    hedsearch_utils::register_impl(
        conn,
        |pattern: Option<String>, text: Option<String>| match (pattern, text) {
            (Some(pattern), Some(text)) => match rummy_text::hedberg::hedfilter(&pattern, &text) {
                Ok(found) => Verdict::Hit(i32::from(found.is_some())),
                Err(refused) => Verdict::Refused(refused),
            },
            _ => Verdict::Hit(0),
        },
    )?;
    hedreplace_utils::register_impl(
        conn,
        |pattern: Option<String>, replacement: Option<String>, text: Option<String>| match (
            pattern,
            replacement,
            text,
        ) {
            (Some(pattern), Some(replacement), Some(text)) => {
                rummy_text::hedberg::hedreplace(&pattern, &replacement, &text)
            }
            _ => None,
        },
    )
}

/// What `hedsearch` answers for one row: 1 or 0, or a refusal raised as an SQL error.
#[derive(Debug)]
enum Verdict {
    /// Whether the filter occurs in the body.
    Hit(i32),
    /// The body is over the filter's limits.
    Refused(Refused),
}

impl ToSql<Integer, Sqlite> for Verdict {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        match self {
            Verdict::Hit(hit) => <i32 as ToSql<Integer, Sqlite>>::to_sql(hit, out),
            // diesel raises a serialisation error as the function's SQL error, message intact.
            Verdict::Refused(refused) => Err(Box::new(*refused)),
        }
    }
}

/// The filter refusal that made a query fail, when that is why it failed.
pub fn refusal(err: &diesel::result::Error) -> Option<Refused> {
    match err {
        diesel::result::Error::DatabaseError(_, info) => Refused::from_message(info.message()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
