//! The audit trail stored as deltas: each turn keeps exactly what the model
//! was sent and answered, but a long text is stored as its difference from a keyframe.
//!
//! Every turn sends the whole context again, so a run's `system://N` and `user://N` texts are
//! mostly the same from one turn to the next; stored whole, they were 99.8 % of what a long run
//! stored. A text of [`MIN_DELTA_CHARS`] or more is compared with the *keyframe* of the
//! previous turn's entry of the same scheme — that entry if it is stored whole, else the
//! keyframe it refers to — and, when what differs is at most [`MAX_MIDDLE_SHARE`] of it, stored
//! as a [`Delta`]: `body` holds the middle that differs, `base_id` the keyframe, and the text is
//! the keyframe's first `prefix_chars` characters, the middle, and its last `suffix_chars`
//! characters. Otherwise it is stored whole and becomes the next turns' keyframe. A delta is
//! never based on another delta, so a text is read back with one look-up.
//!
//! Every read of a body that may be an audit text selects [`FullBody`] instead of
//! `entries.body`: the expression rebuilds a delta in SQL (the same text on SQLite and
//! PostgreSQL: `substr`, `length` and `||` count characters on both). Invariants: a keyframe is
//! an audit entry of an earlier turn of the same run, which no later write rewrites (audit paths
//! hold their turn's number and only the system writes them), and entries are deleted only a
//! run at a time, keyframes with their deltas. A text holding a NUL character is stored whole
//! (SQLite's `length` stops at the first one). An audit entry keeps no hash (`entries.hash` is
//! `""`): it is never compared, and hashing every turn's whole prompt was a fifth of a turn's
//! instructions.

use super::cached::{cached, Bind, StaticSql};
use crate::db::Db;
use crate::schema::entries;
use diesel::backend::Backend;
use diesel::expression::{
    is_aggregate, AppearsOnTable, Expression, SelectableExpression, ValidGrouping,
};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Integer, Text};

/// Texts shorter than this (in characters) are stored whole: a delta would save little.
pub const MIN_DELTA_CHARS: usize = 2_048;

/// The largest share of a text the differing middle may be for the text to be stored as a
/// delta; past it the text is stored whole and becomes the keyframe. With a context that grows
/// by `g` characters a turn, keyframes of a text of `T` characters come about every `T / 8g`
/// turns: a keyframe's cost spread over them, plus the growing middle, stays a small part of
/// `T` a turn.
pub const MAX_MIDDLE_SHARE: f64 = 0.125;

/// The SQL of an entry's whole text: its body, or the delta rebuilt from its keyframe.
pub const FULL_BODY_SQL: &str = "(CASE WHEN entries.base_id IS NULL THEN entries.body ELSE \
    (SELECT substr(k.body, 1, entries.prefix_chars) || entries.body \
     || substr(k.body, length(k.body) - entries.suffix_chars + 1) \
     FROM entries AS k WHERE k.id = entries.base_id) END)";

/// An entry's whole text, as a selectable expression (see the module doc): use it wherever
/// `entries.body` is read. A unit type, so a query selecting it stays in diesel's statement
/// cache.
#[derive(Debug, Clone, Copy, Default, QueryId)]
pub struct FullBody;

impl Expression for FullBody {
    type SqlType = Text;
}

impl<DB: Backend> QueryFragment<DB> for FullBody {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql(FULL_BODY_SQL);
        Ok(())
    }
}

impl<QS> AppearsOnTable<QS> for FullBody where entries::body: AppearsOnTable<QS> {}

impl<QS> SelectableExpression<QS> for FullBody where entries::body: SelectableExpression<QS> {}

impl ValidGrouping<()> for FullBody {
    type IsAggregate = is_aggregate::No;
}

/// A text stored as the difference from a keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delta<'a> {
    /// The keyframe's entry id.
    pub base_id: i32,
    /// How many of the keyframe's first characters the text begins with.
    pub prefix_chars: i32,
    /// What differs.
    pub middle: &'a str,
    /// How many of the keyframe's last characters the text ends with.
    pub suffix_chars: i32,
}

/// How a body is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored<'a> {
    /// Whole, in `body`.
    Whole,
    /// As a delta.
    Delta(Delta<'a>),
}

impl Stored<'_> {
    /// The columns' binds: (body, base_id, prefix_chars, suffix_chars), `whole` being the text.
    pub fn binds<'a>(&'a self, whole: &'a str) -> [Bind<'a>; 4] {
        match self {
            Stored::Whole => [
                Bind::Text(whole),
                Bind::OptInt(None),
                Bind::Int(0),
                Bind::Int(0),
            ],
            Stored::Delta(d) => [
                Bind::Text(d.middle),
                Bind::OptInt(Some(d.base_id)),
                Bind::Int(d.prefix_chars),
                Bind::Int(d.suffix_chars),
            ],
        }
    }
}

/// `text` as a delta from keyframe `base_id` whose text is `keyframe`, when that is worth it:
/// the text is long enough, holds no NUL, and differs from the keyframe in at most
/// [`MAX_MIDDLE_SHARE`] of it.
pub fn delta<'a>(base_id: i32, keyframe: &str, text: &'a str) -> Option<Delta<'a>> {
    if text.len() < MIN_DELTA_CHARS || text.contains('\0') || keyframe.contains('\0') {
        return None;
    }
    let (old, new) = (keyframe.as_bytes(), text.as_bytes());
    let mut prefix_bytes = common_prefix(old, new);
    // Equal bytes end at the same place in a character in both texts (UTF-8 synchronises
    // itself), so a boundary of the one is a boundary of the other.
    while !text.is_char_boundary(prefix_bytes) {
        prefix_bytes -= 1;
    }
    let mut suffix_bytes = common_suffix(&old[prefix_bytes..], &new[prefix_bytes..]);
    while !text.is_char_boundary(text.len() - suffix_bytes) {
        suffix_bytes -= 1;
    }
    let prefix_chars = keyframe[..prefix_bytes].chars().count();
    let suffix_chars = keyframe[keyframe.len() - suffix_bytes..].chars().count();
    let middle = &text[prefix_bytes..text.len() - suffix_bytes];
    #[expect(
        clippy::cast_precision_loss,
        reason = "a share of lengths: precision past 2^52 bytes does not matter"
    )]
    let share = middle.len() as f64 / text.len() as f64;
    if share > MAX_MIDDLE_SHARE {
        return None;
    }
    Some(Delta {
        base_id,
        prefix_chars: i32::try_from(prefix_chars).ok()?,
        middle,
        suffix_chars: i32::try_from(suffix_chars).ok()?,
    })
}

/// How many bytes `a` and `b` begin with in common (compared a block at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// How many bytes `a` and `b` end with in common (compared a block at a time).
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let n = a.len().min(b.len());
    let (mut i, la, lb) = (0, a.len(), b.len());
    while i + BLOCK <= n && a[la - i - BLOCK..la - i] == b[lb - i - BLOCK..lb - i] {
        i += BLOCK;
    }
    while i < n && a[la - i - 1] == b[lb - i - 1] {
        i += 1;
    }
    i
}

/// How the audit text `text` at `path` of the run's `scope` is best stored: as a delta from the
/// keyframe of the entry at `previous` (the previous turn's text of the same scheme), or whole.
pub fn storage<'a>(
    conn: &mut Db,
    scope: &str,
    previous: &str,
    text: &'a str,
) -> Result<Stored<'a>, diesel::result::Error> {
    if text.len() < MIN_DELTA_CHARS {
        return Ok(Stored::Whole);
    }
    let keyframe = cached::<KeyframeOf>(&[Bind::Text(scope), Bind::Text(previous)])
        .get_result::<Keyframe>(conn)
        .optional()?;
    Ok(keyframe
        .and_then(|k| delta(k.id, &k.body, text))
        .map_or(Stored::Whole, Stored::Delta))
}

/// The keyframe of the entry at (scope, path): the entry itself when stored whole, else its base.
struct KeyframeOf;
impl StaticSql for KeyframeOf {
    const SQL: &'static str = "SELECT k.id AS id, k.body AS body FROM entries AS e \
        JOIN entries AS k ON k.id = coalesce(e.base_id, e.id) \
        WHERE e.scope = ? AND e.path = ? AND k.base_id IS NULL";
}

#[derive(QueryableByName)]
struct Keyframe {
    #[diesel(sql_type = Integer)]
    id: i32,
    #[diesel(sql_type = Text)]
    body: String,
}

#[cfg(test)]
mod tests;
