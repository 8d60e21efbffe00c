//! The SQLite functions `hedmatch`, `hedsearch` and `hedreplace`, so queries filter by pattern in SQL.
//!
//! PostgreSQL has no such functions (and its regex dialect is not Rust's): there the store
//! selects the candidate rows and evaluates the pattern in Rust (SCALE.md §1).
//!
//! NULL in, no match out: `hedmatch`/`hedsearch` give 0 and `hedreplace`
//! gives NULL. Compiled patterns come from the shared cache, so a pattern
//! compiles once however many rows it is matched against.

use crate::db::Db;
use diesel::sql_types::{Nullable, Text};
use diesel::QueryResult;

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
            (Some(pattern), Some(text)) => i32::from(super::hedmatch(&pattern, &text)),
            _ => 0,
        },
    )?;
    hedsearch_utils::register_impl(
        conn,
        |pattern: Option<String>, text: Option<String>| match (pattern, text) {
            (Some(pattern), Some(text)) => i32::from(super::hedsearch(&pattern, &text).is_some()),
            _ => 0,
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
                super::hedreplace(&pattern, &replacement, &text)
            }
            _ => None,
        },
    )
}
