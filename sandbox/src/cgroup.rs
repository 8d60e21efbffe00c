//! Per-command cgroups, where the server may make them: the process and memory limits then
//! hold for the command as a whole, also for root (whom the kernel exempts from
//! `RLIMIT_NPROC`). cgroup v1's `pids` and `memory` hierarchies are used when writable, else
//! cgroup v2 at `/sys/fs/cgroup` when writable; otherwise commands get rlimits only.
//!
//! The server makes one directory per command, named `<server pid>-<n>`, under `rummy/`
//! (v1) or `rummy-commands/` (v2); the helper joins them before it unshares; the server
//! removes them when the command ended, and at start-up sweeps those of servers that are
//! gone.

use crate::spec::Limits;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the per-command cgroups go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupRoot {
    /// cgroup v1: a `rummy` directory in the `pids` hierarchy, and in `memory` when writable.
    V1 {
        /// `…/pids/rummy`.
        pids: PathBuf,
        /// `…/memory/rummy`.
        memory: Option<PathBuf>,
    },
    /// cgroup v2: `rummy-commands` with `pids` and `memory` enabled for its children.
    V2 {
        /// `/sys/fs/cgroup/rummy-commands`.
        base: PathBuf,
    },
}

/// The cgroups of one command.
#[derive(Debug, Default)]
pub struct CommandCgroups {
    dirs: Vec<PathBuf>,
}

/// The cgroup file system's usual mount point.
const MOUNT: &str = "/sys/fs/cgroup";

impl CgroupRoot {
    /// Finds a writable hierarchy with a `pids` controller (and makes the server's directory
    /// there); `None` when there is none (commands then get rlimits only).
    pub fn detect() -> Option<CgroupRoot> {
        Self::detect_at(Path::new(MOUNT))
    }

    fn detect_at(mount: &Path) -> Option<CgroupRoot> {
        let v1 = mount.join("pids");
        if v1.join("cgroup.procs").exists() {
            let pids = v1.join("rummy");
            if std::fs::create_dir_all(&pids).is_ok() && writable(&pids) {
                let memory = mount.join("memory").join("rummy");
                let memory = (mount.join("memory/cgroup.procs").exists()
                    && std::fs::create_dir_all(&memory).is_ok()
                    && writable(&memory))
                .then_some(memory);
                return Some(CgroupRoot::V1 { pids, memory });
            }
        }
        let controllers = std::fs::read_to_string(mount.join("cgroup.controllers")).ok()?;
        if !controllers.split_whitespace().any(|c| c == "pids") {
            return None;
        }
        let base = mount.join("rummy-commands");
        std::fs::create_dir_all(&base).ok()?;
        let enable = if controllers.split_whitespace().any(|c| c == "memory") {
            "+pids +memory"
        } else {
            "+pids"
        };
        std::fs::write(mount.join("cgroup.subtree_control"), enable).ok()?;
        std::fs::write(base.join("cgroup.subtree_control"), enable).ok()?;
        Some(CgroupRoot::V2 { base })
    }

    /// In words, for the start-up log.
    pub fn describe(&self) -> String {
        match self {
            CgroupRoot::V1 { pids, memory } => format!(
                "cgroup v1 ({}{})",
                pids.display(),
                memory
                    .as_ref()
                    .map(|m| format!(", {}", m.display()))
                    .unwrap_or_default()
            ),
            CgroupRoot::V2 { base } => format!("cgroup v2 ({})", base.display()),
        }
    }

    /// Makes the cgroups of one command, `name`, with its limits.
    pub fn make(&self, name: &str, limits: Limits) -> std::io::Result<CommandCgroups> {
        let mut made = CommandCgroups::default();
        match self {
            CgroupRoot::V1 { pids, memory } => {
                let dir = pids.join(name);
                std::fs::create_dir(&dir)?;
                made.dirs.push(dir.clone());
                std::fs::write(dir.join("pids.max"), limits.pids.to_string())?;
                if let Some(memory) = memory {
                    let dir = memory.join(name);
                    std::fs::create_dir(&dir)?;
                    made.dirs.push(dir.clone());
                    std::fs::write(
                        dir.join("memory.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    )?;
                }
            }
            CgroupRoot::V2 { base } => {
                let dir = base.join(name);
                std::fs::create_dir(&dir)?;
                made.dirs.push(dir.clone());
                std::fs::write(dir.join("pids.max"), limits.pids.to_string())?;
                let _ = std::fs::write(dir.join("memory.max"), limits.memory_bytes.to_string());
            }
        }
        Ok(made)
    }

    /// Removes what servers that are gone left behind (`alive` says whether a pid runs).
    pub fn sweep(&self, alive: impl Fn(u32) -> bool) {
        let bases: Vec<&PathBuf> = match self {
            CgroupRoot::V1 { pids, memory } => std::iter::once(pids).chain(memory).collect(),
            CgroupRoot::V2 { base } => vec![base],
        };
        for base in bases {
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let owner = name
                    .to_str()
                    .and_then(|n| n.split_once('-'))
                    .and_then(|(pid, _)| pid.parse::<u32>().ok());
                if owner.is_some_and(|pid| !alive(pid)) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }
}

impl CommandCgroups {
    /// The directories the helper joins.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Removes them once their processes are gone (waits up to a second for the last to
    /// exit); blocking.
    pub fn remove(&self) {
        for dir in &self.dirs {
            for _ in 0..50 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

/// Whether this process may write in `dir`.
fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// The limits a finished command hit, in words for its output (read by the helper from the
/// cgroups it joined).
pub(crate) fn limits_hit(dirs: &[PathBuf], limits: Limits) -> Vec<String> {
    let mut notes = Vec::new();
    for dir in dirs {
        let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        let count = |text: &str, key: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(key)
                        .map(|n| n.trim().parse::<u64>().unwrap_or(0))
                })
                .unwrap_or(0)
        };
        if count(&read("pids.events"), "max ") > 0 {
            notes.push(format!(
                "the command reached its limit of {} processes: more were refused",
                limits.pids
            ));
        }
        let v1_failed = read("memory.failcnt").trim().parse::<u64>().unwrap_or(0) > 0;
        let v2_oom = count(&read("memory.events"), "oom_kill ") > 0;
        if v1_failed || v2_oom {
            notes.push(format!(
                "the command reached its memory limit of {} MiB",
                limits.memory_bytes / (1024 * 1024)
            ));
        }
    }
    notes
}
