//! How the domain's types are stored: the entry model's enums as their names in `TEXT` columns, row ids as `INTEGER`s — written and read through diesel.
//!
//! [`State`] and [`Visibility`] are bound, compared and loaded as themselves (`ToSql`,
//! `AsExpression`, `FromSql` and `Queryable` for `Text`), so the store writes no name by hand
//! and reads none by hand. A stored name that is not one of theirs is an error of the read
//! (`StoreError::Db`), never taken for a default: the tables' `CHECK`s keep such a name out,
//! so meeting one means the database is not what the server wrote.

use crate::entry::{State, Visibility};
use crate::ids::{LoopId, ProjectId, RunId, TurnId};
use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, Queryable};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{Integer, Nullable, Text};

/// The text expression a stored name is bound as.
type TextExpression = <&'static str as AsExpression<Text>>::Expression;

/// Stores an enum of the entry model as its name in a `TEXT` column.
macro_rules! stored_as_name {
    ($ty:ty, $what:literal, $parse:expr) => {
        impl<DB: Backend> ToSql<Text, DB> for $ty
        where
            str: ToSql<Text, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                self.as_str().to_sql(out)
            }
        }

        impl<DB: Backend> FromSql<Text, DB> for $ty
        where
            String: FromSql<Text, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                let name = String::from_sql(value)?;
                let parse: fn(&str) -> Option<$ty> = $parse;
                parse(&name)
                    .ok_or_else(|| format!(concat!("unknown ", $what, " {:?}"), name).into())
            }
        }

        impl<DB: Backend> Queryable<Text, DB> for $ty
        where
            $ty: FromSql<Text, DB>,
        {
            type Row = Self;

            fn build(row: Self) -> deserialize::Result<Self> {
                Ok(row)
            }
        }

        impl AsExpression<Text> for $ty {
            type Expression = TextExpression;

            fn as_expression(self) -> TextExpression {
                <&'static str as AsExpression<Text>>::as_expression(self.as_str())
            }
        }

        impl AsExpression<Text> for &$ty {
            type Expression = TextExpression;

            fn as_expression(self) -> TextExpression {
                <&'static str as AsExpression<Text>>::as_expression(self.as_str())
            }
        }
    };
}

stored_as_name!(State, "state", State::parse);
stored_as_name!(Visibility, "visibility", Visibility::stored);

/// The integer expressions an id is bound as, in a column that is or is not nullable.
type IntExpression = <i32 as AsExpression<Integer>>::Expression;
type NullableIntExpression = <i32 as AsExpression<Nullable<Integer>>>::Expression;

/// Stores a row id newtype as the `INTEGER` it wraps: what `#[derive(AsExpression,
/// FromSqlRow)]` would give, written out here so that `ids` stays free of diesel.
macro_rules! stored_as_integer {
    ($($ty:ident),*) => {$(
        impl<DB: Backend> ToSql<Integer, DB> for $ty
        where
            i32: ToSql<Integer, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                self.0.to_sql(out)
            }
        }

        impl<DB: Backend> FromSql<Integer, DB> for $ty
        where
            i32: FromSql<Integer, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                i32::from_sql(value).map($ty)
            }
        }

        impl<DB: Backend> Queryable<Integer, DB> for $ty
        where
            $ty: FromSql<Integer, DB>,
        {
            type Row = Self;

            fn build(row: Self) -> deserialize::Result<Self> {
                Ok(row)
            }
        }

        impl AsExpression<Integer> for $ty {
            type Expression = IntExpression;

            fn as_expression(self) -> IntExpression {
                <i32 as AsExpression<Integer>>::as_expression(self.0)
            }
        }

        impl AsExpression<Integer> for &$ty {
            type Expression = IntExpression;

            fn as_expression(self) -> IntExpression {
                <i32 as AsExpression<Integer>>::as_expression(self.0)
            }
        }

        impl AsExpression<Nullable<Integer>> for $ty {
            type Expression = NullableIntExpression;

            fn as_expression(self) -> NullableIntExpression {
                <i32 as AsExpression<Nullable<Integer>>>::as_expression(self.0)
            }
        }

        impl AsExpression<Nullable<Integer>> for &$ty {
            type Expression = NullableIntExpression;

            fn as_expression(self) -> NullableIntExpression {
                <i32 as AsExpression<Nullable<Integer>>>::as_expression(self.0)
            }
        }
    )*};
}

stored_as_integer!(ProjectId, RunId, LoopId, TurnId);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::StoreError;
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    use pretty_assertions::assert_eq;

    diesel::table! {
        t (id) {
            id -> Integer,
            state -> Text,
            visibility -> Text,
        }
    }

    diesel::table! {
        ids (id) {
            id -> Integer,
            run_id -> Integer,
            loop_id -> Nullable<Integer>,
        }
    }

    /// Ids are stored as the integers they wrap, compared as themselves (in a nullable column
    /// too), and loaded back as their own types.
    #[test]
    fn ids_are_stored_as_their_integers() {
        let mut conn = Db::establish(":memory:").unwrap();
        conn.batch_execute(
            "CREATE TABLE ids (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, loop_id INTEGER)",
        )
        .unwrap();
        for (id, run, looped) in [(1, RunId(7), Some(LoopId(3))), (2, RunId(8), None)] {
            diesel::insert_into(ids::table)
                .values((ids::id.eq(id), ids::run_id.eq(run), ids::loop_id.eq(looped)))
                .execute(&mut conn)
                .unwrap();
        }
        let stored: Vec<(i32, i32, Option<i32>)> =
            ids::table.order(ids::id).load(&mut conn).unwrap();
        assert_eq!(stored, vec![(1, 7, Some(3)), (2, 8, None)]);
        let read: Vec<(RunId, Option<LoopId>)> = ids::table
            .filter(ids::loop_id.eq(LoopId(3)).or(ids::run_id.eq(&RunId(8))))
            .select((ids::run_id, ids::loop_id))
            .order(ids::id)
            .load(&mut conn)
            .unwrap();
        assert_eq!(read, vec![(RunId(7), Some(LoopId(3))), (RunId(8), None)]);
    }

    /// Both enums are written as their names, read back as themselves, compared as values; a
    /// name that is none of theirs fails the read, with no default taken.
    #[test]
    fn names_round_trip_and_unknown_names_fail() {
        let mut conn = Db::establish(":memory:").unwrap();
        conn.batch_execute("CREATE TABLE t (id INTEGER PRIMARY KEY, state TEXT, visibility TEXT)")
            .unwrap();
        for (id, (state, visibility)) in State::ALL
            .into_iter()
            .zip(
                [
                    Visibility::Visible,
                    Visibility::Summarized,
                    Visibility::Archived,
                ]
                .repeat(2),
            )
            .enumerate()
        {
            diesel::insert_into(t::table)
                .values((
                    t::id.eq(i32::try_from(id).unwrap()),
                    t::state.eq(state),
                    t::visibility.eq(&visibility),
                ))
                .execute(&mut conn)
                .unwrap();
        }
        let stored: Vec<(String, String)> = t::table
            .select((t::state, t::visibility))
            .order(t::id)
            .load::<(String, String)>(&mut conn)
            .unwrap();
        assert_eq!(
            stored,
            [
                ("proposed", "visible"),
                ("streaming", "summarized"),
                ("resolved", "archived"),
                ("failed", "visible"),
                ("cancelled", "summarized"),
            ]
            .map(|(s, v)| (s.to_owned(), v.to_owned()))
        );
        let failed: Vec<i32> = t::table
            .filter(t::state.eq(State::Failed))
            .select(t::id)
            .load(&mut conn)
            .unwrap();
        assert_eq!(failed, vec![3]);
        let read: Vec<(State, Visibility)> = t::table
            .select((t::state, t::visibility))
            .order(t::id)
            .load(&mut conn)
            .unwrap();
        assert_eq!(
            read,
            vec![
                (State::Proposed, Visibility::Visible),
                (State::Streaming, Visibility::Summarized),
                (State::Resolved, Visibility::Archived),
                (State::Failed, Visibility::Visible),
                (State::Cancelled, Visibility::Summarized),
            ]
        );
        conn.batch_execute("UPDATE t SET visibility = 'full' WHERE id = 1")
            .unwrap();
        let unknown = t::table
            .select((t::state, t::visibility))
            .load::<(State, Visibility)>(&mut conn)
            .map_err(StoreError::from)
            .map_err(|e| {
                let mut chain = vec![e.to_string()];
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    chain.push(cause.to_string());
                    source = cause.source();
                }
                chain
            });
        assert_eq!(
            unknown,
            Err(vec![
                "database error: Error deserializing field 'visibility'".to_owned(),
                "Error deserializing field 'visibility'".to_owned(),
                "unknown visibility \"full\"".to_owned(),
            ])
        );
    }
}
