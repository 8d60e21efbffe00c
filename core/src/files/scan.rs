//! Walking a project root: which files become entries, with their text and hash.

use super::root::{kind_name, read_flags};
use crate::access::server_state::StateOnDisk;
use rummy_provider::time::Millis;
use rummy_store::entries::hex_sha256;
use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How much a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Larger files are skipped.
    pub max_file_bytes: u64,
    /// At most this many files; a scan that hits it is marked incomplete.
    pub max_files: usize,
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits {
            max_file_bytes: 512 * 1024,
            max_files: 20_000,
        }
    }
}

/// One file read from disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedFile {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// Its text.
    pub body: String,
    /// SHA-256 of the text.
    pub hash: String,
}

/// What a scan saw of a file on disk without reading it: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: SystemTime,
}

/// The stamps of the text files a scan read, by path: given to the next scan, a file whose
/// stamp is unchanged is not read again.
pub type Stamps = HashMap<String, Stamp>;

/// A file modified this recently may change again within the clock's grain without its stamp
/// changing ("racy" stamps, as git calls them), so it is not remembered and is read next time.
const RACY: Duration = Duration::from_secs(2);

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Text files read from disk, in path order.
    pub files: Vec<ScannedFile>,
    /// Files not read because their stamp matches the one given to the scan: unchanged since
    /// the scan that read them.
    pub unchanged: Vec<String>,
    /// The stamps to give the next scan: every text file read or found unchanged, except those
    /// modified too recently to trust.
    pub stamps: Stamps,
    /// Files skipped as binary (NUL byte or not UTF-8).
    pub binary: usize,
    /// Files skipped as over the size cap.
    pub too_large: usize,
    /// Whether the file limit cut the scan short (then nothing may be removed on sync).
    pub truncated: bool,
    /// The directories the walk went through, the root first: where a change to the files it
    /// takes could happen (ignored and hidden directories are not among them).
    pub dirs: Vec<PathBuf>,
}

/// Scans `root` at `now`, reading every file but the server's (`server`); a root that does not
/// exist, is not a directory or is the server's gives an empty scan.
pub fn scan(root: &Path, limits: ScanLimits, server: &StateOnDisk, now: Millis) -> Scan {
    scan_since(root, limits, &Stamps::new(), server, now)
}

/// Scans `root` at `now`, reading only the files whose stamp differs from `known` (see
/// [`Scan::unchanged`]); a file modified less than 2 s before `now` gets no stamp. The server's
/// own state (`server`: its home, database, locks, key), found under any name, is neither
/// opened nor walked into: opening and closing a database file would drop the server's locks
/// on it.
pub fn scan_since(
    root: &Path,
    limits: ScanLimits,
    known: &Stamps,
    server: &StateOnDisk,
    now: Millis,
) -> Scan {
    let mut out = Scan::default();
    let now = now.to_system_time();
    let Ok(meta) = std::fs::metadata(root) else {
        return out;
    };
    if !meta.is_dir() || server.holds(root, &meta) {
        return out;
    }
    let server = server.clone();
    // Decided from the entry's own metadata (an lstat, never an open), before the walk yields
    // the file or goes into the directory.
    let walker = ignore::WalkBuilder::new(root)
        .follow_links(false)
        .require_git(false)
        .hidden(true)
        .filter_entry(move |entry| {
            entry
                .metadata()
                .map_or(true, |meta| !server.holds(entry.path(), &meta))
        })
        .build();
    for entry in walker.flatten() {
        match entry.file_type() {
            Some(t) if t.is_file() => {}
            Some(t) if t.is_dir() => {
                out.dirs.push(entry.into_path());
                continue;
            }
            _ => continue,
        }
        if out.files.len() >= limits.max_files {
            out.truncated = true;
            break;
        }
        let Some(path) = relative(root, entry.path()) else {
            continue;
        };
        let stamp = entry.metadata().ok().and_then(|m| {
            let modified = m.modified().ok()?;
            let settled = now.duration_since(modified).is_ok_and(|age| age >= RACY);
            settled.then_some(Stamp {
                len: m.len(),
                modified,
            })
        });
        if let Some(stamp) = stamp {
            if known.get(&path) == Some(&stamp) {
                out.stamps.insert(path.clone(), stamp);
                out.unchanged.push(path);
                continue;
            }
        }
        match read_text(entry.path(), limits.max_file_bytes) {
            Outcome::Text(body) => {
                let hash = hex_sha256(&body);
                if let Some(stamp) = stamp {
                    out.stamps.insert(path.clone(), stamp);
                }
                out.files.push(ScannedFile { path, body, hash });
            }
            Outcome::Binary => out.binary += 1,
            Outcome::TooLarge => out.too_large += 1,
            Outcome::Unreadable => {}
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.unchanged.sort();
    out
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<&str> = rel
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// What a file on disk is to a scan.
pub(crate) enum Outcome {
    /// Text a scan takes as an entry.
    Text(String),
    /// Holds a NUL or is not UTF-8.
    Binary,
    /// Over the size cap.
    TooLarge,
    /// Could not be opened or read.
    Unreadable,
}

/// The first `max + 1` bytes of the regular file at `path`: enough to tell an oversized file
/// without reading all of it. The walk only hands over regular files, but one may be swapped
/// for a FIFO, a device or a symlink before it is opened: the open neither follows a link nor
/// waits on a FIFO, and anything but a regular file is refused unread.
pub(crate) fn read_capped(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let fd = rustix::fs::open(path, read_flags(), rustix::fs::Mode::empty())?;
    let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    if kind != rustix::fs::FileType::RegularFile {
        return Err(std::io::Error::other(format!(
            "{} is {}",
            path.display(),
            kind_name(kind)
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What `bytes` (as [`read_capped`] gives them) are to a scan.
pub(crate) fn classify(bytes: Vec<u8>, max: u64) -> Outcome {
    if bytes.len() as u64 > max {
        return Outcome::TooLarge;
    }
    if bytes.contains(&0) {
        return Outcome::Binary;
    }
    String::from_utf8(bytes).map_or(Outcome::Binary, Outcome::Text)
}

fn read_text(path: &Path, max: u64) -> Outcome {
    read_capped(path, max).map_or(Outcome::Unreadable, |bytes| classify(bytes, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::server_state::{Held, ServerState};
    use pretty_assertions::assert_eq;

    /// Text files are read; .gitignore'd, hidden, binary, oversized and symlinked files are not.
    #[test]
    fn scans_what_a_user_expects() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("README.md"), "# demo\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.txt"), "built").unwrap();
        std::fs::write(root.join("debug.log"), "noise").unwrap();
        std::fs::write(root.join(".env"), "OPENAI_API_KEY=secret").unwrap();
        std::fs::write(root.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
        std::fs::write(root.join("big.txt"), "x".repeat(2048)).unwrap();
        let outside = tempfile::TempDir::new().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "outside").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt"))
            .unwrap();

        let scan = scan(
            root,
            ScanLimits {
                max_file_bytes: 1024,
                max_files: 100,
            },
            &StateOnDisk::default(),
            now(),
        );
        let paths: Vec<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["README.md", "src/main.rs"]);
        let mut dirs = scan.dirs.clone();
        dirs.sort();
        assert_eq!(dirs, vec![root.to_path_buf(), root.join("src")]);
        assert_eq!((scan.binary, scan.too_large, scan.truncated), (1, 1, false));
        assert_eq!(scan.files[1].body, "fn main() {}\n");
        assert_eq!(scan.files[1].hash, hex_sha256("fn main() {}\n"));
    }

    /// A FIFO in the project is skipped by its type without being opened (the scan does not
    /// wait on it), and reading one that replaced a file is refused at once.
    #[test]
    fn fifos_are_never_waited_on() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let fd = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        rustix::fs::mknodat(
            &fd,
            "pipe",
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();

        let scan = scan(
            dir.path(),
            ScanLimits::default(),
            &StateOnDisk::default(),
            now(),
        );
        let read = read_capped(&dir.path().join("pipe"), 1024).unwrap_err();

        assert!(started.elapsed() < Duration::from_secs(1));
        let paths: Vec<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["a.txt"]);
        assert_eq!(
            read.to_string(),
            format!("{} is a FIFO", dir.path().join("pipe").display())
        );
    }

    /// The server's files are never opened or walked into, whatever they are called in the
    /// project: a hard link to its log is skipped and a symlink to its home is not followed,
    /// while the project's own file named like the log is read.
    #[test]
    fn the_servers_own_files_are_never_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (home, root) = (base.join("home"), base.join("project"));
        std::fs::create_dir_all(home.join("skills")).unwrap();
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::write(home.join("rummy.db-wal"), "the server's log").unwrap();
        std::fs::write(home.join("skills/s.md"), "a skill").unwrap();
        std::fs::hard_link(home.join("rummy.db-wal"), root.join("state/log")).unwrap();
        std::fs::write(root.join("rummy.db-wal"), "the project's notes").unwrap();
        std::os::unix::fs::symlink(&home, root.join("home")).unwrap();
        let server = ServerState::new(
            ["", "rummy.db", "rummy.db-wal"]
                .iter()
                .map(|name| Held {
                    path: home.join(name),
                    why: "it holds the server's state",
                })
                .collect(),
        )
        .on_disk();

        let scanned = scan(&root, ScanLimits::default(), &server, now());
        let read: Vec<(&str, &str)> = scanned
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.body.as_str()))
            .collect();
        assert_eq!(read, vec![("rummy.db-wal", "the project's notes")]);
        // The whole home, walked as a root by mistake, gives nothing of itself.
        let walked = scan(&home, ScanLimits::default(), &server, now());
        assert_eq!(walked, Scan::default());
    }

    /// A missing root scans as empty, and the file cap marks the scan incomplete.
    #[test]
    fn missing_roots_and_caps() {
        assert_eq!(
            scan(
                Path::new("/nonexistent/rummy/root"),
                ScanLimits::default(),
                &StateOnDisk::default(),
                now()
            ),
            Scan::default()
        );
        let dir = tempfile::TempDir::new().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "x").unwrap();
        }
        let capped = scan(
            dir.path(),
            ScanLimits {
                max_file_bytes: 1024,
                max_files: 3,
            },
            &StateOnDisk::default(),
            now(),
        );
        assert_eq!((capped.files.len(), capped.truncated), (3, true));
    }

    /// The wall clock: the files' times are real.
    fn now() -> Millis {
        Millis::from_system_time(SystemTime::now())
    }

    fn age(path: &Path, secs: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    /// A file whose size and modification time are as the last scan saw them is not read again;
    /// a changed one is, and so is one modified too recently to trust its stamp.
    #[test]
    fn unchanged_files_are_not_read_again() {
        let dir = tempfile::TempDir::new().unwrap();
        let (old, edited, fresh) = (
            dir.path().join("old.txt"),
            dir.path().join("edited.txt"),
            dir.path().join("fresh.txt"),
        );
        for p in [&old, &edited, &fresh] {
            std::fs::write(p, "one").unwrap();
        }
        age(&old, 60);
        age(&edited, 60);
        let first = scan(
            dir.path(),
            ScanLimits::default(),
            &StateOnDisk::default(),
            now(),
        );
        assert_eq!(first.files.len(), 3);
        let mut remembered: Vec<&str> = first.stamps.keys().map(String::as_str).collect();
        remembered.sort_unstable();
        assert_eq!(remembered, vec!["edited.txt", "old.txt"]);

        std::fs::write(&edited, "two!").unwrap();
        age(&edited, 30);
        let second = scan_since(
            dir.path(),
            ScanLimits::default(),
            &first.stamps,
            &StateOnDisk::default(),
            now(),
        );
        let read: Vec<(&str, &str)> = second
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.body.as_str()))
            .collect();
        assert_eq!(read, vec![("edited.txt", "two!"), ("fresh.txt", "one")]);
        assert_eq!(second.unchanged, vec!["old.txt".to_owned()]);
        assert!(second.stamps.contains_key("old.txt") && second.stamps.contains_key("edited.txt"));
    }
}
