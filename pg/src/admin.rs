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

/// Drops every database on the server whose name begins with `prefix` (what a test run made).
///
/// # Errors
/// The server's refusal, in its words.
pub fn drop_databases_named(url: &str, prefix: &str) -> Result<(), String> {
    for name in databases_named(url, prefix)? {
        drop_database(url, &name)?;
    }
    Ok(())
}

/// Fresh databases that are each a copy of one template, prepared once (migrations are paid
/// for once, each copy costs a file copy): what a test suite wants per test. PostgreSQL copies
/// a template for one `CREATE DATABASE` at a time, so copies are made one after another.
#[derive(Debug)]
pub struct TemplateCopies {
    template: std::sync::OnceLock<String>,
    copying: std::sync::Mutex<()>,
    next: std::sync::atomic::AtomicU32,
}

impl Default for TemplateCopies {
    fn default() -> Self {
        TemplateCopies::new()
    }
}

impl TemplateCopies {
    /// No template yet (usable in a `static`).
    pub const fn new() -> TemplateCopies {
        TemplateCopies {
            template: std::sync::OnceLock::new(),
            copying: std::sync::Mutex::new(()),
            next: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The URL of a new database on the server `url` names, `<prefix><n>`: a copy of the
    /// template `<prefix>template`, which `prepare` (given its URL) readies on first use.
    ///
    /// # Errors
    /// The server's refusal, in its words.
    pub fn fresh(
        &self,
        url: &str,
        prefix: &str,
        prepare: impl FnOnce(&str),
    ) -> Result<String, String> {
        // One at a time: the first caller makes the template, and PostgreSQL copies a
        // template for one CREATE DATABASE at a time anyway.
        let _one = self
            .copying
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let template = match self.template.get() {
            Some(template) => template,
            None => {
                let name = format!("{prefix}template");
                create_database(url, &name, None)?;
                prepare(&with_database(url, &name));
                self.template.get_or_init(|| name)
            }
        };
        let name = format!(
            "{prefix}{}",
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        create_database(url, &name, Some(template))?;
        Ok(with_database(url, &name))
    }
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
