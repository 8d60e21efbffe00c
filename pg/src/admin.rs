//! Creating and dropping databases on a server: what a fresh database per test, or a set-up
//! step, needs. `CREATE DATABASE` runs outside any transaction, on a connection of its own.

use crate::PgConn;
use diesel::connection::SimpleConnection;

/// `url` with its database replaced by `name` (the path after the host; the options stay).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `name` quoted as an SQL identifier.
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the database `name` on the server `url` points at (a copy of `template` when given,
/// which nobody may be connected to); the role of `url` needs `CREATEDB`.
///
/// # Errors
/// The server's refusal, in its words.
pub fn create_database(url: &str, name: &str, template: Option<&str>) -> Result<(), String> {
    let mut admin = PgConn::connect(url).map_err(|e| e.to_string())?;
    let sql = match template {
        Some(template) => format!(
            "CREATE DATABASE {} TEMPLATE {}",
            quoted(name),
            quoted(template)
        ),
        None => format!("CREATE DATABASE {}", quoted(name)),
    };
    admin.batch_execute(&sql).map_err(|e| e.to_string())
}

/// Drops the database `name` if it exists, closing any connection still open to it.
///
/// `WITH (FORCE)` ends the sessions of the role of `url`, but a role that is not a superuser
/// may not end an autovacuum worker busy in the database (PostgreSQL 15 refuses the whole
/// drop); a plain `DROP DATABASE` cancels that worker itself. So each is tried in turn.
///
/// # Errors
/// The server's refusal, in its words.
pub fn drop_database(url: &str, name: &str) -> Result<(), String> {
    let mut admin = PgConn::connect(url).map_err(|e| e.to_string())?;
    let forced = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quoted(name));
    let plain = format!("DROP DATABASE IF EXISTS {}", quoted(name));
    let mut refused = String::new();
    for sql in [&forced, &plain, &forced] {
        match admin.batch_execute(sql) {
            Ok(()) => return Ok(()),
            Err(e) => refused = e.to_string(),
        }
    }
    Err(refused)
}

/// The databases on the server whose names begin with `prefix`.
///
/// # Errors
/// The server's refusal, in its words.
pub fn databases_named(url: &str, prefix: &str) -> Result<Vec<String>, String> {
    use diesel::RunQueryDsl;

    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        datname: String,
    }
    let mut admin = PgConn::connect(url).map_err(|e| e.to_string())?;
    let names: Vec<Name> = diesel::sql_query(
        "SELECT datname::text AS datname FROM pg_database WHERE starts_with(datname, $1)",
    )
    .bind::<diesel::sql_types::Text, _>(prefix)
    .load(&mut admin)
    .map_err(|e| e.to_string())?;
    Ok(names.into_iter().map(|n| n.datname).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The database part is replaced; user, host, port and options stay.
    #[test]
    fn another_database_on_the_same_server() {
        assert_eq!(
            with_database(
                "postgres://u:p@127.0.0.1:5432/rummy_test?sslmode=disable",
                "t1"
            ),
            "postgres://u:p@127.0.0.1:5432/t1?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "t2"), "postgres://h/t2");
        assert_eq!(
            with_database("postgresql://u@h:1/x/y", "t3"),
            "postgresql://u@h:1/t3"
        );
    }
}
