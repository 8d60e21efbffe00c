//! The SQL functions on real SQLite connections: filtering in a WHERE clause, NULLs, and registration by `db`.

use crate::db::Db;
use diesel::connection::SimpleConnection;
use diesel::sql_types::{Integer, Nullable, Text};
use diesel::{sql_query, Connection, QueryableByName, RunQueryDsl};
use pretty_assertions::assert_eq;

use super::{hedmatch, hedreplace, hedsearch, register};

/// One text column.
#[derive(QueryableByName, Debug, PartialEq)]
struct Row {
    #[diesel(sql_type = Text)]
    path: String,
}

/// Three results of hedmatch/hedsearch/hedreplace on NULL-able arguments.
#[derive(QueryableByName, Debug, PartialEq)]
struct Nulls {
    #[diesel(sql_type = Integer)]
    m: i32,
    #[diesel(sql_type = Integer)]
    s: i32,
    #[diesel(sql_type = Nullable<Text>)]
    r: Option<String>,
}

/// An in-memory database with the functions and a few paths.
fn database() -> Db {
    let mut conn = Db::establish(":memory:").expect("in-memory database");
    register(&mut conn).expect("functions register");
    conn.batch_execute(
        "CREATE TABLE entries (path TEXT NOT NULL, body TEXT);
         INSERT INTO entries VALUES
           ('src/app.js', 'import x from \"./auth.js\";'), ('src/lib/util.js', 'TODO: fix'),
           ('README.md', '# readme'), ('known://people', 'x'), ('known://people/ada', 'born 1815'),
           ('known://people/ada/notes', NULL), ('/home/guy', 'home');",
    )
    .expect("schema and rows");
    conn
}

/// The paths whose `column` satisfies `function(?, column)`, in order.
fn select(conn: &mut Db, function: &str, column: &str, pattern: &str) -> Vec<String> {
    sql_query(format!(
        "SELECT path FROM entries WHERE {function}(?, {column}) ORDER BY path"
    ))
    .bind::<Text, _>(pattern)
    .load::<Row>(conn)
    .expect("query runs")
    .into_iter()
    .map(|r| r.path)
    .collect()
}

/// `WHERE hedmatch(?, path)` and `WHERE hedsearch(?, body)` filter rows in SQL by every pattern kind.
#[test]
fn filters_in_sql() {
    let mut conn = database();
    let cases: Vec<(&str, &str, &str, Vec<&str>)> = vec![
        (
            "hedmatch",
            "path",
            "src/**/*.js",
            vec!["src/app.js", "src/lib/util.js"],
        ),
        ("hedmatch", "path", "src/*.js", vec!["src/app.js"]),
        (
            "hedmatch",
            "path",
            "known://people/*",
            vec!["known://people/ada", "known://people/ada/notes"],
        ),
        ("hedmatch", "path", "/home/guy", vec!["/home/guy"]),
        ("hedmatch", "path", "/\\.md$/", vec!["README.md"]),
        ("hedsearch", "body", "TODO", vec!["src/lib/util.js"]),
        ("hedsearch", "body", "*.js", vec!["src/app.js"]),
        ("hedsearch", "body", "/\\d{4}/", vec!["known://people/ada"]),
    ];
    let got: Vec<(&str, &str, Vec<String>)> = cases
        .iter()
        .map(|(f, c, p, _)| (*f, *p, select(&mut conn, f, c, p)))
        .collect();
    let want: Vec<(&str, &str, Vec<String>)> = cases
        .iter()
        .map(|(f, _, p, w)| (*f, *p, w.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
    assert_eq!(got, want);
}

/// NULL in gives 0 from hedmatch/hedsearch and NULL from hedreplace; hedreplace rewrites in SQL.
#[test]
fn nulls_and_replace() {
    let mut conn = database();
    let query = |sql: &str, conn: &mut Db| {
        sql_query(sql)
            .get_result::<Nulls>(conn)
            .expect("query runs")
    };
    let got = vec![
        query("SELECT hedmatch(NULL, 'a') AS m, hedsearch('a', NULL) AS s, hedreplace('a', 'b', NULL) AS r", &mut conn),
        query("SELECT hedmatch('*.js', 'a.js') AS m, hedsearch('b', 'abc') AS s, hedreplace('s/o+/0/g', '', 'foo boo') AS r", &mut conn),
    ];
    let want = vec![
        Nulls {
            m: 0,
            s: 0,
            r: None,
        },
        Nulls {
            m: 1,
            s: 1,
            r: Some("f0 b0".to_owned()),
        },
    ];
    assert_eq!(got, want);
    let dsl: (i32, i32, Option<String>) = diesel::select((
        hedmatch(Some("*.md"), Some("README.md")),
        hedsearch(Some("z"), Some("abc")),
        hedreplace(Some("x"), Some("y"), Some("axa")),
    ))
    .get_result(&mut conn)
    .expect("dsl query runs");
    assert_eq!(dsl, (1, 0, Some("aya".to_owned())));
}

/// `db::open_writer` and the read pool register the functions on every connection they open.
#[test]
fn every_connection_has_the_functions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.db");
    let mut writer = crate::database::open_writer(&path).expect("writer opens");
    let pool = crate::database::open_read_pool(&crate::location::Location::Sqlite(path.clone()), 2)
        .expect("pool opens");
    let mut reader = pool.get().expect("reader");
    let probe = "SELECT hedmatch('known://*', 'known://a/b') AS m, hedsearch('x', 'x') AS s, hedreplace('a', 'b', 'a') AS r";
    let got = (
        sql_query(probe)
            .get_result::<Nulls>(&mut writer)
            .expect("writer query"),
        sql_query(probe)
            .get_result::<Nulls>(&mut *reader)
            .expect("reader query"),
    );
    let want = Nulls {
        m: 1,
        s: 1,
        r: Some("b".to_owned()),
    };
    assert_eq!(
        got,
        (
            want,
            Nulls {
                m: 1,
                s: 1,
                r: Some("b".to_owned())
            }
        )
    );
}

/// `WHERE hedsearch(?, body)` over a body past the filter's limits fails the whole query, and
/// the error tells the refusal apart from other database errors.
#[test]
fn refused_body_fails_the_query() {
    let mut conn = database();
    let deep = format!("{}{}", "<a>".repeat(20_000), "</a>".repeat(20_000));
    sql_query("INSERT INTO entries VALUES ('deep.xml', ?)")
        .bind::<Text, _>(&deep)
        .execute(&mut conn)
        .expect("deep row");
    let err = sql_query("SELECT path FROM entries WHERE hedsearch(?, body)")
        .bind::<Text, _>("//a")
        .load::<Row>(&mut conn)
        .expect_err("the query is refused");
    assert_eq!(
        super::refusal(&err),
        Some(rummy_text::hedberg::Refused::TooDeep)
    );
    let other = sql_query("SELECT nope FROM entries")
        .load::<Row>(&mut conn)
        .expect_err("no such column");
    assert_eq!(super::refusal(&other), None);
}
