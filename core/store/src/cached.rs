//! Hand-written statements that diesel keeps prepared.
//!
//! diesel prepares every `UPDATE` and every `INSERT … ON CONFLICT DO UPDATE` anew on each call
//! (their builders mark themselves unsafe to cache), and the hot write path — an entry, its
//! view and the run's revision counter on every write — spent more time in `sqlite3_prepare`
//! than in executing. A [`Cached`] statement is identified by its [`StaticSql`] marker type, so
//! diesel's statement cache prepares it once per connection.
//!
//! The SQL is fixed text with one `?` per bind, in order; it must hold no other `?`. Each bind
//! is rendered as its backend writes one (`?` on SQLite, `$1`, `$2`… on PostgreSQL); a
//! statement whose SQL differs on PostgreSQL says so in [`StaticSql::PG`].

use crate::db::Db;
use crate::entry::{State, Visibility};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text, Untyped};
use diesel::sqlite::Sqlite;
use diesel::QueryableByName;
use diesel::{QueryResult, RunQueryDsl};
use std::marker::PhantomData;

/// The SQL of one cached statement, named by a marker type.
pub trait StaticSql: 'static {
    /// The statement, with `?` for each bind.
    const SQL: &'static str;
    /// The statement on PostgreSQL, where its SQL differs; the same binds in the same order.
    const PG: &'static str = Self::SQL;
}

/// One bound value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bind<'a> {
    /// An `INTEGER`.
    Int(i32),
    /// An `INTEGER` or `NULL`.
    OptInt(Option<i32>),
    /// A `BIGINT`.
    Big(i64),
    /// `TEXT`.
    Text(&'a str),
    /// `TEXT` or `NULL`.
    OptText(Option<&'a str>),
    /// A `DOUBLE`.
    Double(f64),
    /// An entry's state, stored as its name (`TEXT`).
    State(State),
    /// An entry's visibility, stored as its name (`TEXT`).
    Visibility(Visibility),
}

/// A statement of fixed SQL `S` with its binds, run through diesel and cached by it.
#[derive(Debug)]
pub struct Cached<'a, S> {
    binds: &'a [Bind<'a>],
    sql: PhantomData<S>,
}

/// The statement `S` with `binds`, in the order of the `?`s in its SQL.
pub fn cached<'a, S: StaticSql>(binds: &'a [Bind<'a>]) -> Cached<'a, S> {
    Cached {
        binds,
        sql: PhantomData,
    }
}

impl<S: StaticSql> QueryId for Cached<'_, S> {
    type QueryId = S;
    const HAS_STATIC_QUERY_ID: bool = true;
}

/// Writes the statement for one backend: its SQL with a bind for each `?`.
macro_rules! walk_for {
    ($backend:ty, $sql:ident) => {
        impl<S: StaticSql> QueryFragment<$backend> for Cached<'_, S> {
            fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, $backend>) -> QueryResult<()> {
                let sql = S::$sql;
                let mut parts = sql.split('?');
                out.push_sql(parts.next().unwrap_or_default());
                let mut binds = self.binds.iter();
                for part in parts {
                    let bind = binds.next().ok_or_else(|| {
                        diesel::result::Error::QueryBuilderError(
                            format!("too few binds for: {sql}").into(),
                        )
                    })?;
                    match bind {
                        Bind::Int(v) => out.push_bind_param::<Integer, _>(v)?,
                        Bind::OptInt(v) => out.push_bind_param::<Nullable<Integer>, _>(v)?,
                        Bind::Big(v) => out.push_bind_param::<BigInt, _>(v)?,
                        Bind::Text(v) => out.push_bind_param::<Text, _>(*v)?,
                        Bind::OptText(v) => out.push_bind_param::<Nullable<Text>, _>(v)?,
                        Bind::Double(v) => out.push_bind_param::<Double, _>(v)?,
                        Bind::State(v) => out.push_bind_param::<Text, str>(v.as_str())?,
                        Bind::Visibility(v) => out.push_bind_param::<Text, str>(v.as_str())?,
                    }
                    out.push_sql(part);
                }
                if binds.next().is_some() {
                    return Err(diesel::result::Error::QueryBuilderError(
                        format!("too many binds for: {sql}").into(),
                    ));
                }
                Ok(())
            }
        }
    };
}

walk_for!(Sqlite, SQL);
walk_for!(Pg, PG);

/// Runs a statement on the backend's own connection: diesel's `MultiBackend` would write its
/// SQL out again at every execution, which the statement cache exists to avoid.
impl<S: StaticSql> Cached<'_, S> {
    /// Executes it; answers the rows changed.
    pub fn execute(self, conn: &mut Db) -> QueryResult<usize> {
        match conn {
            Db::Sqlite(c) => RunQueryDsl::execute(self, c),
            Db::Pg(c) => RunQueryDsl::execute(self, c),
        }
    }

    /// Its one row (`NotFound` without one).
    pub fn get_result<T>(self, conn: &mut Db) -> QueryResult<T>
    where
        T: QueryableByName<Sqlite> + QueryableByName<Pg> + 'static,
    {
        match conn {
            Db::Sqlite(c) => RunQueryDsl::get_result(self, c),
            Db::Pg(c) => RunQueryDsl::get_result(self, c),
        }
    }

    /// Its rows.
    pub fn load<T>(self, conn: &mut Db) -> QueryResult<Vec<T>>
    where
        T: QueryableByName<Sqlite> + QueryableByName<Pg> + 'static,
    {
        match conn {
            Db::Sqlite(c) => RunQueryDsl::load(self, c),
            Db::Pg(c) => RunQueryDsl::load(self, c),
        }
    }
}

impl<S> Query for Cached<'_, S> {
    type SqlType = Untyped;
}

impl<S, Conn> RunQueryDsl<Conn> for Cached<'_, S> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, QueryableByName};

    struct Insert;
    impl StaticSql for Insert {
        const SQL: &'static str = "INSERT INTO t (n, s, b) VALUES (?, ?, ?) RETURNING n + 1 AS n";
    }

    #[derive(QueryableByName, Debug, PartialEq)]
    struct N {
        #[diesel(sql_type = Integer)]
        n: i32,
    }

    /// Binds land in order, RETURNING rows load, and a wrong bind count is an error, not a panic.
    #[test]
    fn binds_in_order_and_counts_checked() {
        let mut conn = Db::establish(":memory:").unwrap();
        conn.batch_execute("CREATE TABLE t (n INTEGER, s TEXT, b BIGINT)")
            .unwrap();
        let binds = [Bind::Int(41), Bind::OptText(Some("x")), Bind::Big(1 << 40)];
        let got: N = cached::<Insert>(&binds).get_result(&mut conn).unwrap();
        assert_eq!(got, N { n: 42 });
        let again: N = cached::<Insert>(&[Bind::Int(1), Bind::OptText(None), Bind::Big(0)])
            .get_result(&mut conn)
            .unwrap();
        assert_eq!(again, N { n: 2 });
        assert!(cached::<Insert>(&[Bind::Int(1)])
            .execute(&mut conn)
            .is_err());
        assert!(
            cached::<Insert>(&[Bind::Int(1), Bind::Text("a"), Bind::Big(1), Bind::Int(2)])
                .execute(&mut conn)
                .is_err()
        );
    }
}
