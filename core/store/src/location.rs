//! Where the store's database is: `RUMMY_DATABASE_URL`, or the SQLite file.

use std::path::PathBuf;

/// Where the store's database is: an SQLite file, or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The embedded SQLite database in this file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its `postgres://` URL.
    Postgres(String),
}

impl Location {
    /// Reads `RUMMY_DATABASE_URL`: `sqlite://PATH` (`sqlite:///abs/path` or a relative
    /// `sqlite://rel/path`) or `postgres://…` / `postgresql://…`.
    ///
    /// # Errors
    /// Why the URL names no database: another scheme, or an empty SQLite path.
    pub fn from_url(url: &str) -> Result<Location, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(
                    "sqlite:// needs a file path (sqlite:///var/lib/rummy/rummy.db)".into(),
                );
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Location::Postgres(url.to_string()));
        }
        Err(format!(
            "{} is neither sqlite://PATH nor postgres://…",
            without_credentials(url)
        ))
    }

    /// The location, as logs may show it: a PostgreSQL URL without its credentials.
    pub fn display(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => without_credentials(url),
        }
    }

    /// The backend's name, as `/health` and the start-up summary show it.
    pub fn backend(&self) -> &'static str {
        match self {
            Location::Sqlite(_) => "sqlite",
            Location::Postgres(_) => "postgres",
        }
    }
}

/// `url` without any `user:password@` in its authority: fit for a log line.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both schemes of PostgreSQL, SQLite files absolute and relative; anything else is named.
    #[test]
    fn a_database_url_names_sqlite_or_postgres() {
        assert_eq!(
            Location::from_url("sqlite:///var/lib/rummy/rummy.db"),
            Ok(Location::Sqlite(PathBuf::from("/var/lib/rummy/rummy.db")))
        );
        assert_eq!(
            Location::from_url("sqlite://data/rummy.db"),
            Ok(Location::Sqlite(PathBuf::from("data/rummy.db")))
        );
        let pg = "postgres://rummy:secret@db:5432/rummy";
        assert_eq!(
            Location::from_url(pg),
            Ok(Location::Postgres(pg.to_string()))
        );
        assert_eq!(
            Location::from_url("postgresql://db/rummy").map(|l| l.backend()),
            Ok("postgres")
        );
        assert_eq!(
            Location::from_url("sqlite://"),
            Err("sqlite:// needs a file path (sqlite:///var/lib/rummy/rummy.db)".to_string())
        );
        assert_eq!(
            Location::from_url("mysql://u:p@h/db"),
            Err("mysql://h/db is neither sqlite://PATH nor postgres://…".to_string())
        );
        assert_eq!(
            Location::Postgres(pg.to_string()).display(),
            "postgres://db:5432/rummy"
        );
    }
}
