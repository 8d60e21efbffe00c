//! Walking a project root: which files become entries, with their text and hash.

use crate::store::entries::hex_sha256;
use std::io::Read as _;
use std::path::Path;

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

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Text files, in path order.
    pub files: Vec<ScannedFile>,
    /// Files skipped as binary (NUL byte or not UTF-8).
    pub binary: usize,
    /// Files skipped as over the size cap.
    pub too_large: usize,
    /// Whether the file limit cut the scan short (then nothing may be removed on sync).
    pub truncated: bool,
}

/// Scans `root`; a root that does not exist or is not a directory gives an empty scan.
pub fn scan(root: &Path, limits: ScanLimits) -> Scan {
    let mut out = Scan::default();
    if !root.is_dir() {
        return out;
    }
    let walker = ignore::WalkBuilder::new(root)
        .follow_links(false)
        .require_git(false)
        .hidden(true)
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if out.files.len() >= limits.max_files {
            out.truncated = true;
            break;
        }
        let Some(path) = relative(root, entry.path()) else {
            continue;
        };
        match read_text(entry.path(), limits.max_file_bytes) {
            Outcome::Text(body) => {
                let hash = hex_sha256(&body);
                out.files.push(ScannedFile { path, body, hash });
            }
            Outcome::Binary => out.binary += 1,
            Outcome::TooLarge => out.too_large += 1,
            Outcome::Unreadable => {}
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
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

enum Outcome {
    Text(String),
    Binary,
    TooLarge,
    Unreadable,
}

fn read_text(path: &Path, max: u64) -> Outcome {
    let Ok(file) = std::fs::File::open(path) else {
        return Outcome::Unreadable;
    };
    let mut bytes = Vec::new();
    // Read one byte past the cap so an oversized file is noticed without reading all of it.
    if file.take(max + 1).read_to_end(&mut bytes).is_err() {
        return Outcome::Unreadable;
    }
    if bytes.len() as u64 > max {
        return Outcome::TooLarge;
    }
    if bytes.contains(&0) {
        return Outcome::Binary;
    }
    String::from_utf8(bytes).map_or(Outcome::Binary, Outcome::Text)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        );
        let paths: Vec<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["README.md", "src/main.rs"]);
        assert_eq!((scan.binary, scan.too_large, scan.truncated), (1, 1, false));
        assert_eq!(scan.files[1].body, "fn main() {}\n");
        assert_eq!(scan.files[1].hash, hex_sha256("fn main() {}\n"));
    }

    /// A missing root scans as empty, and the file cap marks the scan incomplete.
    #[test]
    fn missing_roots_and_caps() {
        assert_eq!(
            scan(Path::new("/nonexistent/rummy/root"), ScanLimits::default()),
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
        );
        assert_eq!((capped.files.len(), capped.truncated), (3, true));
    }
}
