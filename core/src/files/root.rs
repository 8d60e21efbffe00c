//! A project root on disk, openat-style: every file read, written or removed for a proposal resolves inside the root, with no symlink followed at any component, checked by the kernel at the moment of use.
//!
//! The root is opened once as a directory descriptor; each directory on a
//! path is opened relative to the one before with `O_NOFOLLOW`, so a symlink
//! anywhere on the way (however recently planted) is refused, never
//! followed, and `..` never reaches past the root (paths are normalised
//! first). A write creates its temporary file in the final directory
//! exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, a fresh short name each time, so
//! a file whose name takes all 255 bytes a name may have is written too), syncs
//! it, checks that the target is absent or a regular file, and renames it
//! over the target within that directory: a planted symlink can neither
//! redirect the temporary file nor be written through, and only regular
//! files are replaced or removed. Reads open with `O_NONBLOCK` and refuse
//! anything but a regular file, so a FIFO or a device never blocks the
//! caller.

use rummy_text::path::{normalize, scheme_of};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use thiserror::Error;

/// How many fresh temporary names a write tries before giving up (each taken name was there
/// before: someone else's file, or a planted link).
const TEMP_ATTEMPTS: usize = 16;

/// Why a file of the project could not be read, written or removed.
#[derive(Debug, Error)]
pub enum RootError {
    /// The path is no project path: absolute, through `..`, a scheme path, empty.
    #[error("refused: {0} escapes the project root")]
    Escapes(String),
    /// A directory on the path is a symlink: following it could leave the root.
    #[error("refused: {path} escapes the project root ({through} is a symlink)")]
    Symlink {
        /// The path asked for.
        path: String,
        /// The symlinked directory on it.
        through: String,
    },
    /// A component that should be a directory is some other file.
    #[error("refused: {path} is not inside a directory ({through} is not a directory)")]
    NotDirectory {
        /// The path asked for.
        path: String,
        /// The component that is not a directory.
        through: String,
    },
    /// The file is a symlink, a directory, a FIFO, a socket or a device: only regular files are
    /// read, written or removed.
    #[error("refused: {path} is not a regular file (it is {kind})")]
    NotRegular {
        /// The path asked for.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The disk failed (permissions, space, the root itself missing).
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path asked for.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
}

impl RootError {
    /// Whether the path itself is refused (403: outside the root or not a regular file), rather
    /// than the disk having failed.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, RootError::Io { .. })
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// No file was there before: the write created it.
    pub created: bool,
}

/// A project root, open as a directory.
#[derive(Debug)]
pub struct Root {
    dir: OwnedFd,
}

impl Root {
    /// Opens the project root (the root's own path may pass through symlinks: the client named
    /// it, within the roots the server allows).
    pub fn open(root: &Path) -> Result<Root, RootError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rustix::fs::open(root, flags, Mode::empty())
            .map(|dir| Root { dir })
            .map_err(|e| RootError::Io {
                action: "open the project root",
                path: root.display().to_string(),
                source: e.into(),
            })
    }

    /// The first `max + 1` bytes of the regular file at `path` (enough to tell an oversized
    /// file), or `None` when there is no file there. Never blocks on a FIFO or a device: they
    /// are refused without being read.
    pub fn read(&self, path: &str, max: u64) -> Result<Option<Vec<u8>>, RootError> {
        let rel = relative(path)?;
        let Some((dir, name)) = self.parent(&rel, false)? else {
            return Ok(None);
        };
        if existing(&dir, &rel, name)?.is_none() {
            return Ok(None);
        }
        let fd = match rustix::fs::openat(&dir, name, read_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(not_regular(&rel, FileType::Symlink)),
            Err(e) => return Err(io("read", &rel, e)),
        };
        let kind = rustix::fs::fstat(&fd)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| io("read", &rel, e))?;
        if kind != FileType::RegularFile {
            return Err(not_regular(&rel, kind));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| RootError::Io {
                action: "read",
                path: rel.clone(),
                source: e,
            })?;
        Ok(Some(bytes))
    }

    /// Puts `content` at `path` atomically and durably, creating missing directories: through a
    /// temporary file created exclusively beside it, synced, then renamed over it. A file that
    /// was there keeps its permissions (an edited script stays executable).
    pub fn write(&self, path: &str, content: &[u8]) -> Result<Written, RootError> {
        self.write_named(path, content, &mut temp_name)
    }

    /// [`Root::write`] with the temporary names drawn from `names` (tests plant files at them).
    fn write_named(
        &self,
        path: &str,
        content: &[u8],
        names: &mut dyn FnMut() -> String,
    ) -> Result<Written, RootError> {
        let rel = relative(path)?;
        let (dir, name) = self
            .parent(&rel, true)?
            .ok_or_else(|| RootError::Escapes(rel.clone()))?;
        let before = existing(&dir, &rel, name)?;
        let (tmp, file) = create_temp(&dir, &rel, before, names)?;
        let finished = fill(file, content, before)
            .map_err(|e| RootError::Io {
                action: "write",
                path: rel.clone(),
                source: e,
            })
            // Checked again just before the rename: what was planted since is refused, not
            // replaced (the rename itself never follows a link, so nothing outside is touched
            // even by a later swap).
            .and_then(|()| existing(&dir, &rel, name).map(|_| ()))
            .and_then(|()| {
                rustix::fs::renameat(&dir, tmp.as_str(), &dir, name)
                    .map_err(|e| io("write", &rel, e))
            });
        if let Err(e) = finished {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err(e);
        }
        // The rename is durable once its directory is; a filesystem that cannot sync a
        // directory still has the file.
        let _ = rustix::fs::fsync(&dir);
        Ok(Written {
            created: before.is_none(),
        })
    }

    /// Removes the regular file at `path`; answers whether there was one. A symlink or any
    /// other kind of file is refused, not removed.
    pub fn remove(&self, path: &str) -> Result<bool, RootError> {
        let rel = relative(path)?;
        let Some((dir, name)) = self.parent(&rel, false)? else {
            return Ok(false);
        };
        if existing(&dir, &rel, name)?.is_none() {
            return Ok(false);
        }
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) => {
                let _ = rustix::fs::fsync(&dir);
                Ok(true)
            }
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(io("remove", &rel, e)),
        }
    }

    /// The directory holding `rel`, open, and the file's name in it; `None` when a directory on
    /// the way is missing and `create` is false. Each directory is opened from the one before
    /// without following a symlink.
    fn parent<'a>(
        &self,
        rel: &'a str,
        create: bool,
    ) -> Result<Option<(OwnedFd, &'a str)>, RootError> {
        let (dirs, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let mut dir = rustix::fs::openat(&self.dir, ".", dir_flags(), Mode::empty())
            .map_err(|e| io("open the project root for", rel, e))?;
        let mut walked = 0;
        for component in dirs.split('/').filter(|c| !c.is_empty()) {
            walked += component.len() + 1;
            let through = &rel[..walked - 1];
            dir = match open_dir(&dir, component, rel, through, create)? {
                Some(next) => next,
                None => return Ok(None),
            };
        }
        Ok(Some((dir, name)))
    }
}

/// Opens the directory `component` of `dir` without following a link, creating it when asked;
/// `None` when it is missing and not to be created.
fn open_dir(
    dir: &OwnedFd,
    component: &str,
    rel: &str,
    through: &str,
    create: bool,
) -> Result<Option<OwnedFd>, RootError> {
    // Twice at most: once, and once more after creating it.
    for _ in 0..2 {
        match rustix::fs::openat(dir, component, dir_flags(), Mode::empty()) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(dir, component, Mode::from_raw_mode(0o777)) {
                    // Made by someone else meanwhile: open whatever it is, without following.
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io("create the directory of", rel, e)),
                }
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let symlink = rustix::fs::statat(dir, component, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                let (path, through) = (rel.to_owned(), through.to_owned());
                return Err(if symlink {
                    RootError::Symlink { path, through }
                } else {
                    RootError::NotDirectory { path, through }
                });
            }
            Err(e) => return Err(io("open the directory of", rel, e)),
        }
    }
    Err(io("create the directory of", rel, Errno::NOENT))
}

/// The mode of the regular file `name` in `dir`, `None` when there is none; anything else there
/// is refused. Looks without following a link or opening the file.
fn existing(dir: &OwnedFd, rel: &str, name: &str) -> Result<Option<u32>, RootError> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(Some(st.st_mode & 0o7777)),
            kind => Err(not_regular(rel, kind)),
        },
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(io("look at", rel, e)),
    }
}

/// Creates a temporary file in `dir`, beside the file `rel` names, that did not exist before
/// (never following or reusing what is there), readable by no more than the file it replaces.
fn create_temp(
    dir: &OwnedFd,
    rel: &str,
    before: Option<u32>,
    names: &mut dyn FnMut() -> String,
) -> Result<(String, std::fs::File), RootError> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(before.map_or(0o666, |m| m & 0o777));
    for _ in 0..TEMP_ATTEMPTS {
        let tmp = names();
        match rustix::fs::openat(dir, tmp.as_str(), flags, mode) {
            Ok(fd) => return Ok((tmp, std::fs::File::from(fd))),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(io("create a temporary file for", rel, e)),
        }
    }
    Err(RootError::Io {
        action: "create a temporary file for",
        path: rel.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{TEMP_ATTEMPTS} fresh names were all taken"),
        ),
    })
}

/// Writes the content, gives the file the permissions of the one it replaces, and syncs it, so
/// a crash after the rename leaves the new file whole, never an empty one.
fn fill(mut file: std::fs::File, content: &[u8], before: Option<u32>) -> std::io::Result<()> {
    file.write_all(content)?;
    if let Some(mode) = before {
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
    }
    file.sync_all()
}

/// A fresh temporary name: hidden (scans skip it), unguessable enough that a name planted in
/// advance is almost never met (and skipped when it is), and 23 bytes whatever the file's own
/// name, so the longest name a file may have (255 bytes) is written through it too.
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // `RandomState` is seeded randomly per process and moves on with every instance.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!(".rummy-{:016x}", hasher.finish())
}

/// `path` as a relative file path inside the root.
fn relative(path: &str) -> Result<String, RootError> {
    match normalize(path) {
        Ok(rel) if scheme_of(&rel).is_none() => Ok(rel),
        _ => Err(RootError::Escapes(path.to_owned())),
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// How a file is opened for reading: never through a link, never waiting on a FIFO's writer,
/// never becoming the controlling terminal.
pub(crate) fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC
}

fn not_regular(rel: &str, kind: FileType) -> RootError {
    RootError::NotRegular {
        path: rel.to_owned(),
        kind: kind_name(kind),
    }
}

/// What a file that is not a regular file is, for the message.
pub(crate) fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    }
}

fn io(action: &'static str, rel: &str, e: Errno) -> RootError {
    RootError::Io {
        action,
        path: rel.to_owned(),
        source: e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::time::{Duration, Instant};
    use tempfile::TempDir;

    /// A project with `b.txt`, and a directory outside it with `victim.txt`.
    fn setup() -> (TempDir, TempDir, Root) {
        let project = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        std::fs::write(project.path().join("b.txt"), "old\n").unwrap();
        std::fs::write(outside.path().join("victim.txt"), "victim\n").unwrap();
        let root = Root::open(project.path()).unwrap();
        (project, outside, root)
    }

    fn victim(outside: &TempDir) -> String {
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap()
    }

    fn mkfifo(path: &Path) {
        let (dir, name) = (path.parent().unwrap(), path.file_name().unwrap());
        let dir = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        rustix::fs::mknodat(&dir, name, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
    }

    /// The temporary name the old writer used, planted as a symlink out of the project, is
    /// neither followed nor reused: the outside file stays as it was and the write succeeds.
    #[test]
    fn a_planted_temporary_symlink_is_not_followed() {
        let (project, outside, root) = setup();
        let planted = project.path().join(".b.txt.rummy-tmp");
        symlink(outside.path().join("victim.txt"), &planted).unwrap();

        let written = root.write("b.txt", b"new\n").unwrap();

        assert_eq!(
            (
                written,
                std::fs::read_to_string(project.path().join("b.txt")).unwrap(),
                victim(&outside),
                std::fs::read_link(&planted).unwrap(),
            ),
            (
                Written { created: false },
                "new\n".to_owned(),
                "victim\n".to_owned(),
                outside.path().join("victim.txt"),
            )
        );
    }

    /// A file whose name takes all 255 bytes a name may have is created and then replaced:
    /// the temporary file beside it has a short name of its own, and none is left behind.
    #[test]
    fn a_file_name_of_255_bytes_is_written() {
        let (project, _outside, root) = setup();
        let name = format!("{}.txt", "n".repeat(251));
        let path = format!("src/{name}");

        let created = root.write(&path, b"one\n").unwrap();
        let replaced = root.write(&path, b"two\n").unwrap();

        let in_src: Vec<String> = std::fs::read_dir(project.path().join("src"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            (
                name.len(),
                created,
                replaced,
                std::fs::read_to_string(project.path().join(&path)).unwrap(),
                in_src,
                temp_name().len(),
            ),
            (
                255,
                Written { created: true },
                Written { created: false },
                "two\n".to_owned(),
                vec![name.clone()],
                23,
            )
        );
    }

    /// Symlinks planted at the very names the writer draws are skipped (created exclusively):
    /// with a free name left the write succeeds, with none it is refused; the outside file is
    /// never touched and no temporary file is left behind.
    #[test]
    fn planted_symlinks_at_the_drawn_names_are_skipped() {
        let (project, outside, root) = setup();
        let names: Vec<String> = (0..TEMP_ATTEMPTS)
            .map(|i| format!(".b.txt.{i}.rummy-tmp"))
            .collect();
        for name in &names[..3] {
            symlink(outside.path().join("victim.txt"), project.path().join(name)).unwrap();
        }
        let mut drawn = names.clone().into_iter();
        let mut next = || drawn.next().unwrap_or_default();
        assert_eq!(
            root.write_named("b.txt", b"new\n", &mut next).unwrap(),
            Written { created: false }
        );
        assert_eq!(
            (
                std::fs::read_to_string(project.path().join("b.txt")).unwrap(),
                victim(&outside)
            ),
            ("new\n".to_owned(), "victim\n".to_owned())
        );

        for name in &names[3..] {
            symlink(outside.path().join("victim.txt"), project.path().join(name)).unwrap();
        }
        let mut drawn = names.clone().into_iter();
        let mut next = || drawn.next().unwrap_or_default();
        let err = root
            .write_named("b.txt", b"newer\n", &mut next)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot create a temporary file for b.txt: 16 fresh names were all taken"
        );
        let mut left: Vec<String> = std::fs::read_dir(project.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with(".b.txt.") || !names.contains(n))
            .collect();
        left.sort();
        assert_eq!(
            (
                left,
                std::fs::read_to_string(project.path().join("b.txt")).unwrap(),
                victim(&outside)
            ),
            (
                vec!["b.txt".to_owned()],
                "new\n".to_owned(),
                "victim\n".to_owned()
            )
        );
    }

    /// A directory on the path that is a symlink out of the project is refused, for writes
    /// (nothing is created outside), reads and removals.
    #[test]
    fn a_symlinked_directory_is_refused() {
        let (project, outside, root) = setup();
        std::fs::create_dir(project.path().join("src")).unwrap();
        symlink(outside.path(), project.path().join("src/out")).unwrap();
        let escapes = "refused: src/out/victim.txt escapes the project root (src/out is a symlink)";

        let write = root.write("src/out/victim.txt", b"owned\n").unwrap_err();
        let create = root.write("src/out/new/x.txt", b"owned\n").unwrap_err();
        let read = root.read("src/out/victim.txt", 1024).unwrap_err();
        let remove = root.remove("src/out/victim.txt").unwrap_err();

        assert_eq!(
            [write, read, remove].map(|e| (e.is_refusal(), e.to_string())),
            [true, true, true].map(|r| (r, escapes.to_owned()))
        );
        assert_eq!(
            create.to_string(),
            "refused: src/out/new/x.txt escapes the project root (src/out is a symlink)"
        );
        let mut outside_files: Vec<String> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        outside_files.sort();
        assert_eq!(
            (outside_files, victim(&outside)),
            (vec!["victim.txt".to_owned()], "victim\n".to_owned())
        );
    }

    /// A target that is a symlink is refused: not written through, not replaced, not read, not
    /// removed.
    #[test]
    fn a_symlinked_target_is_refused() {
        let (project, outside, root) = setup();
        let link = project.path().join("link.txt");
        symlink(outside.path().join("victim.txt"), &link).unwrap();
        let refused = "refused: link.txt is not a regular file (it is a symlink)";

        let errors = [
            root.write("link.txt", b"owned\n").unwrap_err(),
            root.read("link.txt", 1024).unwrap_err(),
            root.remove("link.txt").unwrap_err(),
        ];

        assert_eq!(
            errors.map(|e| e.to_string()),
            [refused, refused, refused].map(str::to_owned)
        );
        assert_eq!(
            (victim(&outside), std::fs::read_link(&link).unwrap()),
            ("victim\n".to_owned(), outside.path().join("victim.txt"))
        );
    }

    /// A FIFO is refused at once, for reads, writes and removals: nothing waits for a writer
    /// that never comes, and the FIFO stays.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (project, _outside, root) = setup();
        let fifo = project.path().join("pipe");
        mkfifo(&fifo);
        let started = Instant::now();

        let errors = [
            root.read("pipe", 1024).unwrap_err(),
            root.write("pipe", b"x").unwrap_err(),
            root.remove("pipe").unwrap_err(),
        ];

        assert!(started.elapsed() < Duration::from_secs(1));
        let refused = "refused: pipe is not a regular file (it is a FIFO)";
        assert_eq!(
            errors.map(|e| e.to_string()),
            [refused, refused, refused].map(str::to_owned)
        );
        assert!(std::fs::symlink_metadata(&fifo).is_ok());
    }

    /// A directory or a device at the target is refused too.
    #[test]
    fn directories_and_devices_are_refused() {
        let (project, _outside, root) = setup();
        std::fs::create_dir(project.path().join("dir")).unwrap();
        let dev = Root::open(Path::new("/dev")).unwrap();
        assert_eq!(
            [
                root.write("dir", b"x").unwrap_err().to_string(),
                root.read("dir", 10).unwrap_err().to_string(),
                dev.read("null", 10).unwrap_err().to_string(),
            ],
            [
                "refused: dir is not a regular file (it is a directory)",
                "refused: dir is not a regular file (it is a directory)",
                "refused: null is not a regular file (it is a character device)",
            ]
            .map(str::to_owned)
        );
    }

    /// An edited file keeps its permissions; a new one gets the usual ones and its directories
    /// are created.
    #[test]
    fn permissions_are_kept_and_directories_made() {
        let (project, _outside, root) = setup();
        let script = project.path().join("run.sh");
        std::fs::write(&script, "echo old\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();

        let edited = root.write("run.sh", b"echo new\n").unwrap();
        let created = root.write("a/b/new.txt", b"fresh\n").unwrap();

        let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777;
        assert_eq!(
            (
                edited,
                created,
                format!("{mode:o}"),
                std::fs::read_to_string(&script).unwrap(),
                std::fs::read_to_string(project.path().join("a/b/new.txt")).unwrap(),
            ),
            (
                Written { created: false },
                Written { created: true },
                "750".to_owned(),
                "echo new\n".to_owned(),
                "fresh\n".to_owned(),
            )
        );
    }

    /// Reads give the capped bytes, or nothing where no file (or no directory) is; removals
    /// say whether a file was there; paths out of the root are refused before any look.
    #[test]
    fn reads_removals_and_paths() {
        let (project, _outside, root) = setup();
        assert_eq!(
            (
                root.read("b.txt", 2).unwrap(),
                root.read("b.txt", 1024).unwrap(),
                root.read("none.txt", 1024).unwrap(),
                root.read("no/dir.txt", 1024).unwrap(),
            ),
            (Some(b"old".to_vec()), Some(b"old\n".to_vec()), None, None)
        );
        assert_eq!(
            (
                root.remove("b.txt").unwrap(),
                root.remove("b.txt").unwrap(),
                root.remove("no/dir.txt").unwrap(),
                project.path().join("b.txt").exists(),
            ),
            (true, false, false, false)
        );
        assert_eq!(
            ["../x.txt", "/etc/passwd", "known://note"]
                .map(|p| root.write(p, b"x").unwrap_err().to_string()),
            [
                "refused: ../x.txt escapes the project root",
                "refused: /etc/passwd escapes the project root",
                "refused: known://note escapes the project root",
            ]
            .map(str::to_owned)
        );
    }
}
