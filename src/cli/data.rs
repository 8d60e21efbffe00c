//! `rummy backup` and `rummy export` (docs/design/operations.md): the database is all of rummy's state,
//! so both work on it directly — the one `rummy serve` would use (`$RUMMY_DATABASE_URL`, else
//! `$RUMMY_DB_PATH`, else `$RUMMY_HOME/rummy.db`, resolved by the same [`rummy::env::load`]) —
//! with or without a server running. SQLite's write-ahead log (PostgreSQL's snapshots) lets them
//! read a consistent snapshot while the server writes; neither takes the server's lock nor
//! writes to the database, which they open read-only at the file, so closing it can never
//! remove the server's live log. A PostgreSQL database is backed up with PostgreSQL's own
//! tools; a backup is never written inside a project's root.
//!
//! Why not ask the server: a backup is most wanted when the server is down or being moved, and
//! an export of a finished run needs nothing only the server has. Like `rummy token`, they are
//! the operator's commands, run on the server's machine by whoever may read its database.

use super::args::{BackupArgs, ExportArgs};
use super::exit::Exit;
use rummy_store::location::Location;
use rummy_store::{export, StoreError};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

/// Copies the database to a new file as one snapshot (`VACUUM INTO`); on PostgreSQL, says to
/// use pg_dump.
pub fn backup(args: &BackupArgs) -> Exit {
    let db = match database() {
        Ok(Location::Sqlite(path)) => path,
        Ok(postgres @ Location::Postgres(_)) => {
            let message = format!(
                "{} is a PostgreSQL database: rummy backup copies an SQLite file; back \
                 PostgreSQL up with its own tools (pg_dump --format=custom --file=FILE \
                 DATABASE_URL)",
                postgres.display()
            );
            return fail(Exit::Failure, &message);
        }
        Err(exit) => return exit,
    };
    // Read-only at the file, without `query_only` (which refuses VACUUM INTO too): all it runs
    // is that, which only reads this database.
    let mut conn = match rummy_store::database::open_existing(&db) {
        Ok(conn) => conn,
        Err(e @ StoreError::NotFound(_)) => {
            return fail(Exit::Failure, &format!("nothing to back up: {e}"))
        }
        Err(e) => return fail(Exit::Failure, &format!("{}: {e}", db.display())),
    };
    let target = &args.path;
    match inside_a_project(&mut conn, target) {
        Ok(false) => {}
        Ok(true) => {
            let message = format!(
                "{} is inside a project's root: a backup there would be one of the project's \
                 files, which its runs read; write it outside every project",
                target.display()
            );
            return fail(Exit::Refused, &message);
        }
        Err(e) => return fail(Exit::Failure, &format!("{}: {e}", db.display())),
    }
    // Claimed atomically, so a file that appears meanwhile is not overwritten either; SQLite
    // writes into an empty file as it would into a new one.
    // 0600: a backup holds all the database holds (tokens' hashes, prompts, files read).
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(target)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return fail(
                Exit::Failure,
                &format!(
                    "{} already exists: a backup never overwrites a file; name a new one",
                    target.display()
                ),
            )
        }
        Err(e) => {
            return fail(
                Exit::Failure,
                &format!("cannot create {}: {e}", target.display()),
            )
        }
    }
    if let Err(e) = rummy_store::database::backup_into(&mut conn, target) {
        // The file is the one made above, empty or half-written: not a backup.
        let _ = std::fs::remove_file(target);
        return fail(
            Exit::Failure,
            &format!("backing up {} to {}: {e}", db.display(), target.display()),
        );
    }
    let size = std::fs::metadata(target).map_or(0, |m| m.len());
    say(&format!(
        "backed up {} to {} ({size} bytes)",
        db.display(),
        target.display()
    ));
    Exit::Ok
}

/// Whether the file `target` would be (its directory's real path, then its name) inside a
/// project's root, as the database records the roots (their real paths).
fn inside_a_project(
    conn: &mut rummy_store::db::Db,
    target: &std::path::Path,
) -> Result<bool, StoreError> {
    let roots = rummy_store::projects::roots(conn)?;
    let absolute =
        std::env::current_dir().map_or_else(|_| target.to_path_buf(), |cwd| cwd.join(target));
    let Some(plain) = rummy_core::access::roots::lexical(&absolute) else {
        return Ok(false);
    };
    // A directory that does not exist makes the file's creation fail, saying so.
    let real = match (
        plain.parent().map(std::path::Path::canonicalize),
        plain.file_name(),
    ) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => plain,
    };
    Ok(roots.iter().any(|(_, root)| real.starts_with(root)))
}

/// Prints a run of a project as one JSON document.
pub fn export(args: &ExportArgs) -> Exit {
    let db = match database() {
        Ok(db) => db,
        Err(exit) => return exit,
    };
    let project = match &args.project {
        Some(name) => name.clone(),
        None => match std::env::current_dir() {
            Ok(cwd) => super::session::project_of(&cwd, None).0,
            Err(e) => return fail(Exit::Failure, &format!("current directory: {e}")),
        },
    };
    let mut conn = match rummy_store::database::open_reader(&db) {
        Ok(conn) => conn,
        Err(e) => return fail(Exit::Failure, &e.to_string()),
    };
    match rummy_store::database::needs_migration(&mut conn) {
        Ok(false) => {}
        Ok(true) => {
            let message = format!(
                "{} was written by an older rummy: start `rummy serve` on it once, which \
                 migrates it, then export",
                db.display()
            );
            return fail(Exit::Failure, &message);
        }
        Err(e) => return fail(Exit::Failure, &format!("{}: {e}", db.display())),
    }
    match export::run(&mut conn, &project, &args.run) {
        Ok(document) => {
            let mut out = std::io::stdout().lock();
            let written = serde_json::to_writer(&mut out, &document)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush());
            match written {
                Ok(()) => Exit::Ok,
                Err(e) => fail(Exit::Failure, &format!("writing the export: {e}")),
            }
        }
        Err(StoreError::NotFound(what)) => fail(
            Exit::Refused,
            &format!(
                "{what} (database {}; `rummy runs` lists a project's runs)",
                db.display()
            ),
        ),
        Err(e) => fail(Exit::Failure, &e.to_string()),
    }
}

/// The database the server of this environment uses.
fn database() -> Result<Location, Exit> {
    let process: BTreeMap<String, String> = std::env::vars().collect();
    match rummy::env::load(process) {
        Ok(config) => Ok(config.database()),
        Err(e) => Err(fail(Exit::Usage, &e.to_string())),
    }
}

fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "rummy: {message}");
}

fn fail(exit: Exit, message: &str) -> Exit {
    say(message);
    exit
}
