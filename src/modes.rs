//! The server's files are its user's alone: `RUMMY_HOME` is made `0700` and the SQLite
//! database with its `-wal`, `-shm`, `-journal` and `.lock` files `0600`. The database holds
//! every token's hash, every prompt and every file a run read; the home holds the database.
//! Wider modes found at start-up (a home made by hand, files from an older server) are
//! tightened, each with a log line.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of the server's home.
pub const HOME_MODE: u32 = 0o700;

/// The mode of the database's files.
pub const FILE_MODE: u32 = 0o600;

/// Makes `dir` (and the directories above it that are missing) with mode `0700`.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(HOME_MODE)
        .create(dir)
}

/// Makes the home `0700` if it is missing, and tightens it to `0700` if it is wider.
pub fn secure_home(home: &Path) -> std::io::Result<()> {
    create_private_dir(home)?;
    tighten(home, HOME_MODE)
}

/// The files of the SQLite database at `db`: itself, its `-wal`, `-shm`, `-journal` and
/// `.lock`.
pub fn database_files(db: &Path) -> Vec<PathBuf> {
    let with = |suffix: &str| {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    vec![
        db.to_path_buf(),
        with("-wal"),
        with("-shm"),
        with("-journal"),
        // the lock's file (`crate::lock`), named here so that module may use this one's modes
        with(".lock"),
    ]
}

/// Makes the database file `0600` before SQLite opens it — SQLite gives its `-wal` and `-shm`
/// the database's own mode — and tightens every one of its files that exists to `0600`.
pub fn secure_database(db: &Path) -> std::io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(db)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    for file in database_files(db) {
        match tighten(&file, FILE_MODE) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(())
}

/// Sets `path` to `mode` when its mode grants anything `mode` does not, saying so.
fn tighten(path: &Path, mode: u32) -> std::io::Result<()> {
    let was = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if was & !mode != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(mode))?;
        // Info, not a warning: once tightened nothing is wrong (a home made with `mkdir` under the
        // usual umask is 0755), and a setup with nothing to fix logs no warning.
        tracing::info!(
            path = %path.display(),
            was = %format!("{was:o}"),
            now = %format!("{mode:o}"),
            "tightened the mode of the server's own file"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// A missing home is made 0700, a wider one tightened; a narrower one is left alone.
    #[test]
    fn the_home_is_made_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("a/home");
        secure_home(&home).unwrap();
        assert_eq!((mode(&home), mode(&dir.path().join("a"))), (0o700, 0o700));
        std::fs::set_permissions(&home, Permissions::from_mode(0o755)).unwrap();
        secure_home(&home).unwrap();
        assert_eq!(mode(&home), 0o700);
        std::fs::set_permissions(&home, Permissions::from_mode(0o500)).unwrap();
        secure_home(&home).unwrap();
        assert_eq!(mode(&home), 0o500);
    }

    /// A missing database file is made 0600; every existing file of the database is tightened.
    #[test]
    fn the_database_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("rummy.db");
        std::fs::write(dir.path().join("rummy.db-wal"), "").unwrap();
        std::fs::set_permissions(
            dir.path().join("rummy.db-wal"),
            Permissions::from_mode(0o666),
        )
        .unwrap();
        secure_database(&db).unwrap();
        assert_eq!(
            (mode(&db), mode(&dir.path().join("rummy.db-wal"))),
            (0o600, 0o600)
        );
        assert!(!dir.path().join("rummy.db-shm").exists());
    }
}
