//! The server's own state on disk — its home, its SQLite database and the files beside it, its
//! TLS key, the homes of its commands — which is never a project's file: no project root may
//! hold any of it, and no scan of a project opens it, whatever it is called there.
//!
//! Why it matters beyond secrecy: a process that opens and closes a file of SQLite's loses
//! every POSIX lock it holds on that file (SQLite's documented hazard), so a server that read
//! its own `rummy.db` or `rummy.db-wal` as a project file would let the next process that
//! closes the database take itself for the last user and remove the live write-ahead log.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// One path of the server's state and what it is, as a refusal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The path as configured (made absolute against the server's working directory when the
    /// real path is looked up).
    pub path: PathBuf,
    /// Why a root that holds it is refused: what it is, with the setting that places it ("it
    /// holds the server's home (RUMMY_HOME)").
    pub why: &'static str,
}

/// The paths of the server's state that no project root may contain, built from the
/// configuration in one place (`Config::server_state`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerState {
    held: Vec<Held>,
}

impl ServerState {
    /// The state made of these paths (the configuration lists them: `Config::server_state`).
    pub fn new(held: Vec<Held>) -> ServerState {
        ServerState { held }
    }

    /// Every path of the state.
    pub fn held(&self) -> &[Held] {
        &self.held
    }

    /// Why the directory `root` (a real path) may not be a project's, if it holds any of the
    /// server's state: a path of
    /// the state whose real path is `root` or under it, or under a directory that is `root`
    /// itself by another name (a bind mount or a hard-linked directory).
    pub fn within(&self, root: &Path) -> Option<&'static str> {
        let root_id = identity(root);
        self.held.iter().find_map(|held| {
            let real = real_path(&held.path)?;
            let inside = real.starts_with(root)
                || root_id.is_some_and(|id| real.ancestors().any(|dir| identity(dir) == Some(id)));
            inside.then_some(held.why)
        })
    }

    /// The state as it is on disk now, for a scan to keep out of.
    pub fn on_disk(&self) -> StateOnDisk {
        let mut state = StateOnDisk::default();
        for held in &self.held {
            if let Some(real) = real_path(&held.path) {
                if let Ok(meta) = std::fs::metadata(&real) {
                    state.ids.insert((meta.dev(), meta.ino()));
                }
                state.paths.push(real);
            }
        }
        state
    }
}

/// The server's state as a scan meets it: the real paths, and the identities (device and
/// inode) of what exists, so a hard link or a bind mount of it inside a project is known
/// under any name. A walk that meets one of its directories does not go in; a walk that
/// starts inside one (a project under the home) reads the project's files, never the home's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateOnDisk {
    paths: Vec<PathBuf>,
    ids: HashSet<(u64, u64)>,
}

impl StateOnDisk {
    /// Whether the file or directory at `path`, whose own metadata (not followed through a
    /// symlink) is `meta`, is the server's: one of its paths, or the same file or directory
    /// by another name.
    pub fn holds(&self, path: &Path, meta: &std::fs::Metadata) -> bool {
        self.ids.contains(&(meta.dev(), meta.ino())) || self.paths.iter().any(|held| held == path)
    }
}

/// `path` made absolute (against the working directory) with its directories' symlinks
/// resolved: the real path when it exists, the real parent and the name when only the parent
/// does (a log not created yet), `None` when neither does.
fn real_path(path: &Path) -> Option<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let plain = super::roots::lexical(&absolute)?;
    if let Ok(real) = plain.canonicalize() {
        return Some(real);
    }
    let name = plain.file_name()?;
    Some(plain.parent()?.canonicalize().ok()?.join(name))
}

/// The device and inode of what `path` names, following symlinks.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const HOME: &str = "it holds the server's home (RUMMY_HOME)";
    const DB: &str = "it holds the server's database (RUMMY_DB_PATH)";

    /// A home and a database file, as the configuration lists them.
    fn state(home: &Path, db: &Path) -> ServerState {
        ServerState::new(vec![
            Held {
                path: home.to_path_buf(),
                why: HOME,
            },
            Held {
                path: db.to_path_buf(),
                why: DB,
            },
        ])
    }

    /// A directory holds the state when the state is in it, however deep, or it is the state
    /// itself; a sibling, a directory inside the home and a log not written yet are told
    /// apart by their real paths.
    #[test]
    fn a_directory_holds_what_is_under_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("srv/home");
        std::fs::create_dir_all(home.join("projects/p")).unwrap();
        std::fs::create_dir_all(base.join("srv/other")).unwrap();
        std::fs::create_dir_all(base.join("data")).unwrap();
        let state = state(&home, &base.join("data/rummy.db-wal"));
        assert_eq!(state.within(&base.join("srv")), Some(HOME));
        assert_eq!(state.within(&home), Some(HOME));
        assert_eq!(state.within(&base), Some(HOME));
        assert_eq!(state.within(&base.join("srv/other")), None);
        assert_eq!(state.within(&home.join("projects/p")), None);
        // No file at the log's path yet: its directory holds it all the same.
        assert_eq!(state.within(&base.join("data")), Some(DB));
    }

    /// The state on disk is known by path and by identity: a hard link to the log elsewhere is
    /// the log, a file of the same name elsewhere is not, nor is a directory inside the home.
    #[test]
    fn the_state_on_disk_is_known_under_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        let project = base.join("project");
        std::fs::create_dir_all(home.join("projects")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(home.join("rummy.db-wal"), "log").unwrap();
        std::fs::hard_link(home.join("rummy.db-wal"), project.join("linked")).unwrap();
        std::fs::write(project.join("rummy.db-wal"), "the project's own").unwrap();
        let state = state(&home, &home.join("rummy.db-wal")).on_disk();
        let holds = |path: &Path| state.holds(path, &std::fs::symlink_metadata(path).unwrap());
        assert!(holds(&project.join("linked")));
        assert!(holds(&home.join("rummy.db-wal")));
        assert!(holds(&home));
        assert!(!holds(&project.join("rummy.db-wal")));
        assert!(!holds(&project));
        // A directory in the home is not the home: a project may lie there.
        assert!(!holds(&home.join("projects")));
    }
}
