//! The database's lock: one server at a time uses a database, and a second one (another
//! `rummy serve`, or a command run with `--local`) learns which server holds it and where.
//!
//! The lock is an exclusive `flock` on `<database>.lock`, which the kernel releases when the
//! holder exits however it exits, so a crashed server never leaves a stale lock. The file
//! holds the holder's pid and port, read by whoever finds it locked.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The database is held by another server.
#[derive(Debug, Error)]
#[error("another rummy server (pid {pid}) is using {db}{}", .port.map(|p| format!(" and listens on ws://127.0.0.1:{p}/ws")).unwrap_or_default())]
pub struct Held {
    /// The database.
    pub db: String,
    /// The holder's pid, as it wrote it (0 when unreadable).
    pub pid: u32,
    /// The holder's port, once it wrote one.
    pub port: Option<u16>,
}

/// A held lock on a database; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DbLock {
    file: File,
    path: PathBuf,
}

/// The lock file of the database at `db`.
pub fn path_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl DbLock {
    /// Takes the lock of the database at `db`, or says who holds it.
    pub fn take(db: &Path) -> Result<DbLock, crate::ServeError> {
        let path = path_of(db);
        let failed = |source: std::io::Error| crate::ServeError::Lock {
            path: path.display().to_string(),
            source,
        };
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(crate::modes::FILE_MODE)
            .open(&path)
            .map_err(failed)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let mut words = text.split_whitespace();
                let pid = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let port = words.next().and_then(|w| w.parse().ok());
                return Err(Held {
                    db: db.display().to_string(),
                    pid,
                    port,
                }
                .into());
            }
            Err(e) => return Err(failed(e.into())),
        }
        let mut lock = DbLock { file, path };
        lock.write(&std::process::id().to_string())?;
        Ok(lock)
    }

    /// Records the port the holder listens on, for whoever finds the database locked.
    pub fn record(&mut self, port: u16) -> Result<(), crate::ServeError> {
        self.write(&format!("{} {port}", std::process::id()))
    }

    fn write(&mut self, text: &str) -> Result<(), crate::ServeError> {
        let path = self.path.display().to_string();
        let file = &mut self.file;
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{text}"))
            .map_err(|source| crate::ServeError::Lock { path, source })
    }
}

/// Who holds the database at `db`, if anyone (without taking it).
pub fn holder(db: &Path) -> Option<Held> {
    match DbLock::take(db) {
        Err(crate::ServeError::Locked(held)) => Some(held),
        _ => None,
    }
}
