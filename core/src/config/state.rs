//! The server's own state on disk as the configuration places it: the one list of paths no
//! project root may hold and no scan may open.

use super::Config;
use crate::access::server_state::{Held, ServerState};
use rummy_store::location::Location;
use std::ffi::OsString;
use std::path::PathBuf;

/// The SQLite database's companions: its write-ahead log, the log's index, a rollback
/// journal, and the server's lock (the server names it `<database>.lock`).
const DATABASE_COMPANIONS: [&str; 4] = ["-wal", "-shm", "-journal", ".lock"];

impl Config {
    /// Where the homes of the server's commands are: `RUMMY_COMMAND_HOMES`, by default the
    /// server's home with `-homes` appended (`/var/lib/rummy` → `/var/lib/rummy-homes`).
    pub fn command_homes(&self) -> PathBuf {
        self.shell.sandbox.homes_for(&self.home)
    }

    /// The server's state: its home, the command homes, on SQLite the database file with its
    /// log, index, journal and lock, and the TLS key when one is configured.
    pub fn server_state(&self) -> ServerState {
        let mut held = vec![
            Held {
                path: self.home.clone(),
                why: "it holds the server's home (RUMMY_HOME)",
            },
            Held {
                path: self.command_homes(),
                why: "it holds the homes of the server's commands (RUMMY_COMMAND_HOMES)",
            },
        ];
        if let Location::Sqlite(db) = self.database() {
            let companions = DATABASE_COMPANIONS.iter().map(|suffix| {
                let mut name: OsString = db.as_os_str().to_owned();
                name.push(suffix);
                PathBuf::from(name)
            });
            held.extend(
                std::iter::once(db.clone())
                    .chain(companions)
                    .map(|path| Held {
                        path,
                        why: "it holds the server's database (RUMMY_DB_PATH)",
                    }),
            );
        }
        if let Some(tls) = &self.access.tls {
            held.push(Held {
                path: tls.key.clone(),
                why: "it holds the server's TLS key (RUMMY_TLS_KEY)",
            });
        }
        ServerState::new(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TlsFiles;
    use pretty_assertions::assert_eq;
    use std::path::Path;

    /// The paths of a state and why each is refused, as text.
    fn paths(state: &ServerState) -> Vec<(String, &'static str)> {
        state
            .held()
            .iter()
            .map(|h| (h.path.display().to_string(), h.why))
            .collect()
    }

    /// The home, the command homes and the SQLite database with its companions; the TLS key
    /// when configured; no database file on PostgreSQL.
    #[test]
    fn the_state_is_built_from_the_configuration() {
        let mut config = Config::with_home(Path::new("/var/lib/rummy").to_path_buf());
        config.db_path = PathBuf::from("/data/r.db");
        config.access.tls = Some(TlsFiles {
            cert: PathBuf::from("/etc/rummy/cert.pem"),
            key: PathBuf::from("/etc/rummy/key.pem"),
        });
        let home = "it holds the server's home (RUMMY_HOME)";
        let homes = "it holds the homes of the server's commands (RUMMY_COMMAND_HOMES)";
        let db = "it holds the server's database (RUMMY_DB_PATH)";
        assert_eq!(
            paths(&config.server_state()),
            vec![
                ("/var/lib/rummy".to_owned(), home),
                ("/var/lib/rummy-homes".to_owned(), homes),
                ("/data/r.db".to_owned(), db),
                ("/data/r.db-wal".to_owned(), db),
                ("/data/r.db-shm".to_owned(), db),
                ("/data/r.db-journal".to_owned(), db),
                ("/data/r.db.lock".to_owned(), db),
                (
                    "/etc/rummy/key.pem".to_owned(),
                    "it holds the server's TLS key (RUMMY_TLS_KEY)"
                ),
            ]
        );
        config.database_url = Some(Location::Postgres("postgres://db/rummy".into()));
        config.access.tls = None;
        assert_eq!(
            paths(&config.server_state()),
            vec![
                ("/var/lib/rummy".to_owned(), home),
                ("/var/lib/rummy-homes".to_owned(), homes),
            ]
        );
    }
}
