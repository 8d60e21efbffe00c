//! Where a project root may be. `RUMMY_PROJECT_ROOTS` bounds it when set; without
//! it any directory is allowed but the filesystem root and the system's own trees, so `rummy
//! act` works in any checkout and no client can open `/etc` as a project (whose files, `shadow`
//! among them, would become entries any run can read).
//!
//! The bound is checked on the path as written (made absolute and free of `.`/`..` by text
//! alone) before anything on disk is looked at, so a refusal says nothing about paths outside
//! it; then on the real path, after symlinks, so a link inside the bound cannot point out.

use super::server_state::ServerState;
use std::path::{Component, Path, PathBuf};

/// Where project roots may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootBound {
    /// `RUMMY_PROJECT_ROOTS`: one of these directories or inside one.
    Listed(Vec<PathBuf>),
    /// Unset: anywhere but `/` and the system trees; `/root` too when `home` (the server's own
    /// `RUMMY_HOME`) is under it.
    System {
        /// The server's home.
        home: PathBuf,
    },
}

/// Why a project root is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootRefusal {
    /// Not an absolute path (a `-32602`).
    #[error("must be an absolute path")]
    Relative,
    /// Outside the bound, as written or after symlinks (a `-32003`: says nothing of the disk).
    #[error("project root {0} is not allowed here: {1}")]
    Outside(String, &'static str),
    /// Inside the bound, but nothing is there (a `-32602`).
    #[error("{0} does not exist")]
    Missing(String),
    /// Inside the bound, but not a directory or not readable (a `-32602`).
    #[error("{0} is not a directory")]
    NotDirectory(String),
    /// Holds the server's own state, holds another project's root or lies inside one (a
    /// `-32003`): says why, never which other project.
    #[error("project root {0} is not allowed: {1}")]
    Overlaps(String, &'static str),
}

/// Why the real path `root` may not be a project's beside the other projects' roots (real
/// paths as stored): it is one of them, holds one, or lies inside one.
pub fn overlap<'a>(
    root: &Path,
    others: impl IntoIterator<Item = &'a Path>,
) -> Option<&'static str> {
    others.into_iter().find_map(|other| {
        if other == root {
            Some("it is another project's root")
        } else if other.starts_with(root) {
            Some("it holds another project's root")
        } else if root.starts_with(other) {
            Some("it lies inside another project's root")
        } else {
            None
        }
    })
}

/// Top-level trees that are never a project root without `RUMMY_PROJECT_ROOTS`. `/run` holds
/// sockets and the runtime state of services and of every logged-in user (`/run/user/<uid>`).
const SYSTEM_TREES: [&str; 10] = [
    "etc", "usr", "proc", "sys", "dev", "boot", "var", "bin", "sbin", "run",
];

/// `path` made absolute-and-plain by text alone: `.` dropped, `..` removes the component
/// before it (never above `/`). `None` for a relative path.
pub fn lexical(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

impl RootBound {
    /// Why `path` (absolute and plain) is outside the bound, if it is.
    fn outside(&self, path: &Path) -> Option<&'static str> {
        match self {
            RootBound::Listed(dirs) => {
                let inside = dirs.iter().any(|dir| {
                    path.starts_with(dir)
                        || dir.canonicalize().is_ok_and(|real| path.starts_with(real))
                });
                (!inside).then_some("it is outside RUMMY_PROJECT_ROOTS")
            }
            RootBound::System { home } => {
                let Some(Component::Normal(top)) = path.components().nth(1) else {
                    return Some("the filesystem root is not a project");
                };
                let top = top.to_string_lossy();
                if top == "home" && path.components().count() == 2 {
                    return Some("/home holds every user's home; it is not a project (RUMMY_PROJECT_ROOTS names where projects may be)");
                }
                let system = SYSTEM_TREES.contains(&top.as_ref())
                    || top.starts_with("lib")
                    || (top == "root" && !home.starts_with("/root"));
                system.then_some("system directories are not projects (RUMMY_PROJECT_ROOTS names where projects may be)")
            }
        }
    }

    /// The real path of a requested project root: absolute, inside the bound as written
    /// (checked before the disk is looked at), an existing directory, and inside the bound
    /// after symlinks too.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, RootRefusal> {
        let plain = lexical(Path::new(requested)).ok_or(RootRefusal::Relative)?;
        if let Some(why) = self.outside(&plain) {
            return Err(RootRefusal::Outside(requested.to_owned(), why));
        }
        let real = plain.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RootRefusal::Missing(requested.to_owned()),
            _ => RootRefusal::NotDirectory(requested.to_owned()),
        })?;
        if let Some(why) = self.outside(&real) {
            return Err(RootRefusal::Outside(requested.to_owned(), why));
        }
        if !real.is_dir() {
            return Err(RootRefusal::NotDirectory(requested.to_owned()));
        }
        Ok(real)
    }

    /// [`RootBound::resolve`], and a root that holds any of the server's own state (its home,
    /// its database, ...) is refused, saying what it holds.
    pub fn resolve_clear_of(
        &self,
        requested: &str,
        server: &ServerState,
    ) -> Result<PathBuf, RootRefusal> {
        let real = self.resolve(requested)?;
        match server.within(&real) {
            Some(what) => Err(RootRefusal::Overlaps(requested.to_owned(), what)),
            None => Ok(real),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// `.` and `..` are resolved by text, never above `/`; a relative path has no plain form.
    #[test]
    fn plain_paths_by_text() {
        let table = [
            ("/a/./b/../c", Some("/a/c")),
            ("/../../etc", Some("/etc")),
            ("/srv/x/", Some("/srv/x")),
            ("a/b", None),
        ];
        for (input, expected) in table {
            assert_eq!(
                lexical(Path::new(input)),
                expected.map(PathBuf::from),
                "{input}"
            );
        }
    }

    /// Without a list, system trees (`/run` and all under it among them), `/home` itself and
    /// `/` are refused however they are spelled; `/root` only when the server's home is
    /// elsewhere; a directory inside `/home` is not.
    #[test]
    fn system_trees_are_never_projects() {
        let bound = RootBound::System {
            home: PathBuf::from("/home/u/.rummy"),
        };
        for path in [
            "/",
            "/etc",
            "/etc/ssh",
            "/usr/share",
            "/lib64",
            "/root/x",
            "/home/u/../../var/log",
            "/proc/self",
            "/run",
            "/run/user/1000",
            "/home",
            "/home/",
            "/home/u/..",
        ] {
            assert!(
                matches!(bound.resolve(path), Err(RootRefusal::Outside(..))),
                "{path}"
            );
        }
        let root_home = RootBound::System {
            home: PathBuf::from("/root/.rummy"),
        };
        assert!(!matches!(
            root_home.resolve("/root"),
            Err(RootRefusal::Outside(..))
        ));
        assert_eq!(
            bound.resolve("/home"),
            Err(RootRefusal::Outside(
                "/home".to_owned(),
                "/home holds every user's home; it is not a project (RUMMY_PROJECT_ROOTS names where projects may be)"
            ))
        );
        assert_eq!(
            bound.resolve("/run/user/1000"),
            Err(RootRefusal::Outside(
                "/run/user/1000".to_owned(),
                "system directories are not projects (RUMMY_PROJECT_ROOTS names where projects may be)"
            ))
        );
        assert!(!matches!(
            bound.resolve("/home/u/project"),
            Err(RootRefusal::Outside(..))
        ));
        assert!(!matches!(
            bound.resolve("/runs"),
            Err(RootRefusal::Outside(..))
        ));
    }

    /// Inside the bound, a missing path or a file is refused for what it is; a directory
    /// answers its real path; a symlink out of the bound is refused like a path outside.
    #[test]
    fn the_real_path_must_be_a_directory_inside_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(base.join("file"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", base.join("escape")).unwrap();
        let bound = RootBound::Listed(vec![base.clone()]);
        let at = |p: &str| base.join(p).display().to_string();
        assert_eq!(bound.resolve(&at("project")), Ok(project.clone()));
        assert_eq!(
            bound.resolve(&at("project/../project/.")),
            Ok(project.clone())
        );
        assert_eq!(
            bound.resolve(&at("nope")),
            Err(RootRefusal::Missing(at("nope")))
        );
        assert_eq!(
            bound.resolve(&at("file")),
            Err(RootRefusal::NotDirectory(at("file")))
        );
        assert!(matches!(
            bound.resolve(&at("escape")),
            Err(RootRefusal::Outside(..))
        ));
        assert_eq!(
            bound.resolve("/etc"),
            Err(RootRefusal::Outside(
                "/etc".to_owned(),
                "it is outside RUMMY_PROJECT_ROOTS"
            ))
        );
        assert_eq!(bound.resolve("relative"), Err(RootRefusal::Relative));
        let system = RootBound::System { home: base.clone() };
        assert!(matches!(
            system.resolve(&at("escape")),
            Err(RootRefusal::Outside(..))
        ));
        assert_eq!(system.resolve(&at("project")), Ok(project));
    }

    /// Project roots never nest: the same root, one holding another and one inside another
    /// are refused, each for what it is; siblings and a shared prefix of names are not.
    #[test]
    fn project_roots_never_nest() {
        let others = [Path::new("/srv/a"), Path::new("/srv/b/c")];
        let table = [
            ("/srv/a", Some("it is another project's root")),
            ("/srv", Some("it holds another project's root")),
            ("/srv/b", Some("it holds another project's root")),
            ("/srv/a/x", Some("it lies inside another project's root")),
            (
                "/srv/b/c/d/e",
                Some("it lies inside another project's root"),
            ),
            ("/srv/ab", None),
            ("/srv/b/cd", None),
            ("/srv/d", None),
        ];
        for (root, expected) in table {
            assert_eq!(overlap(Path::new(root), others), expected, "{root}");
        }
    }
}
