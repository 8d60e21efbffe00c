//! What one sandboxed command is and may do, as the server hands it to the helper (JSON on the
//! helper's stdin: a command line has no length limit there, unlike an argument).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One command to run confined, or a probe of what confinement this machine allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// The shell command, run as `/bin/sh -c <command>`; ignored by a probe.
    pub command: String,
    /// Where the command starts: the project root.
    pub cwd: PathBuf,
    /// The command's whole environment (nothing of the helper's is passed).
    pub env: Vec<(String, String)>,
    /// Directories (or files) the command may read and execute, mounted read-only where they
    /// are on the host: the system's trees, the admin's extra paths, and in ask mode or for
    /// `env` the project root and its `HOME`.
    pub read: Vec<PathBuf>,
    /// Directories the command may write, mounted read-write where they are: the project root
    /// and its `HOME` for an accepted `sh`.
    pub write: Vec<PathBuf>,
    /// The server's own files (its home, database, key): hidden even where they lie under a
    /// read or write path.
    pub hide: Vec<PathBuf>,
    /// Size of the private `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// Memory and process limits.
    pub limits: Limits,
    /// Whether the command reaches the network.
    pub network: Network,
    /// cgroup directories (made by the server for this command) the command joins before it
    /// starts, so their limits hold for everything it forks.
    pub cgroups: Vec<PathBuf>,
    /// The server's process id: the helper gives up if its parent is already another (the
    /// server died before the helper could tie its life to it).
    pub parent: u32,
    /// A probe: set everything up, report the layers on stdout as JSON ([`crate::Report`]),
    /// run nothing.
    #[serde(default)]
    pub probe: bool,
}

/// Per-command limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Bytes of data (heap and private mappings, not address space: Node and Go reserve far
    /// more address space than they use) per process; also the cgroup's memory limit where
    /// one is joined.
    pub memory_bytes: u64,
    /// Processes and threads the command may have at once.
    pub pids: u64,
}

/// The command's network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Network {
    /// A network namespace of its own with nothing in it: no address, no route, and no TCP
    /// through Landlock either.
    Off,
    /// The host's network, but TCP only to these ports (Landlock), so that the host's
    /// loopback services (the server's port, a local database) stay out of reach.
    Ports {
        /// The TCP ports a command may connect to.
        ports: Vec<u16>,
    },
}

/// The system trees every command reads, when they exist.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc",
];

/// Whether `path` is `dir` or lies inside it (component-wise: `/srv/a` is not inside `/srv/ab`).
pub fn within(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A spec travels as JSON and comes back whole.
    #[test]
    fn a_spec_round_trips_through_json() {
        let spec = Spec {
            command: "make test".into(),
            cwd: "/srv/p".into(),
            env: vec![("PATH".into(), "/usr/bin".into())],
            read: vec!["/usr".into()],
            write: vec!["/srv/p".into()],
            hide: vec!["/var/lib/rummy".into()],
            tmp_bytes: 1 << 30,
            limits: Limits {
                memory_bytes: 2 << 30,
                pids: 512,
            },
            network: Network::Ports {
                ports: vec![80, 443],
            },
            cgroups: vec![],
            parent: 42,
            probe: false,
        };
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<Spec>(&text).unwrap(), spec);
    }

    /// Containment is by whole components.
    #[test]
    fn within_compares_components() {
        assert_eq!(
            [
                within(Path::new("/srv/a/b"), Path::new("/srv/a")),
                within(Path::new("/srv/a"), Path::new("/srv/a")),
                within(Path::new("/srv/ab"), Path::new("/srv/a")),
            ],
            [true, true, false]
        );
    }
}
