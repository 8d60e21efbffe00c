//! The command sandbox as the server holds it: the helper that confines each accepted command
//! (`rummy __sandbox run`), what a probe at start-up found of its layers, the per-project
//! `HOME`s, and the per-command cgroups where the server may make them.
//!
//! Without a required layer the server runs no command itself (the client runner still
//! works), unless an admin set `RUMMY_UNSANDBOXED_COMMANDS=1`: then commands run as plain
//! `sh -c` in the project root, as they would without rummy.

use rummy_core::config::Config;
use rummy_core::shell::env::DEFAULT_PATH;
use rummy_sandbox::cgroup::{CgroupRoot, CommandCgroups};
use rummy_sandbox::{Limits, Network, Report, Spec};
use rummy_store::ids::ProjectId;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the server runs the commands it runs.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The executable that confines a command.
    helper: PathBuf,
    /// What the probe found.
    report: Report,
    /// Whether commands run confined (every required layer is there), unconfined (an admin
    /// allowed it), or not at all (why).
    mode: Mode,
    /// Where each project's `HOME` is made.
    homes: PathBuf,
    /// The server's own files, hidden from commands wherever they lie.
    hidden: Vec<PathBuf>,
    /// Per-command cgroups, where the server may make them.
    cgroups: Option<CgroupRoot>,
}

/// Numbers the commands' cgroups (one count per process: several servers may share one, as
/// tests do).
static NEXT_CGROUP: AtomicU64 = AtomicU64::new(0);

/// What the server does with an accepted command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Runs it in the sandbox.
    Confined,
    /// Runs it unconfined: a required layer is missing and `RUMMY_UNSANDBOXED_COMMANDS=1`.
    Unconfined(String),
    /// Refuses to run it: a required layer is missing (the layers, with their reasons).
    Refused(String),
}

/// One command as the sandbox is asked to run it.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Its project.
    pub project: ProjectId,
    /// The project root.
    pub root: &'a Path,
    /// The shell command.
    pub command: &'a str,
    /// Its environment (from the server's, without secrets); `HOME` and `TMPDIR` are set here.
    pub env: Vec<(String, String)>,
    /// Whether it may write the project root and its `HOME` (an accepted `sh` in act mode);
    /// otherwise it writes nowhere but its private `/tmp`.
    pub writes: bool,
    /// Whether it reaches the network.
    pub network: bool,
    /// The other projects' roots: covered wherever they lie under a path it may read.
    pub others: Vec<PathBuf>,
}

/// A command ready to start: the helper's command line, its spec, and its cgroups (removed
/// once it ended).
pub struct Prepared {
    /// `<helper> __sandbox run`, spec on stdin.
    pub program: PathBuf,
    /// The arguments.
    pub args: Vec<String>,
    /// What to write on the helper's stdin.
    pub stdin: Vec<u8>,
    /// The command's cgroups.
    pub cgroups: CommandCgroups,
}

impl Sandbox {
    /// Finds the helper, makes the homes directory, sweeps stale cgroups and probes the layers;
    /// blocking (a few milliseconds). Logs what it found.
    pub fn start(config: &Config) -> Sandbox {
        let settings = &config.shell.sandbox;
        let helper = settings.helper.clone().unwrap_or_else(find_helper);
        let cgroups = CgroupRoot::detect();
        if let Some(root) = &cgroups {
            root.sweep(|pid| Path::new(&format!("/proc/{pid}")).exists());
        }
        // The server's own state (home, database and its companions, TLS key): the one list
        // no project root may hold, hidden from commands wherever else it lies. The command
        // homes are bound one project at a time, so the others stay out.
        let homes = config.command_homes();
        let hidden: Vec<PathBuf> = config
            .server_state()
            .held()
            .iter()
            .map(|held| held.path.clone())
            .filter(|p| *p != homes)
            .collect();
        let hidden: Vec<PathBuf> = hidden
            .into_iter()
            .map(|p| p.canonicalize().unwrap_or(p))
            .collect();
        let report = probe(&helper, config, cgroups.as_ref());
        let missing = report.missing_line();
        let mode = if missing.is_empty() {
            Mode::Confined
        } else if settings.unsandboxed {
            Mode::Unconfined(missing)
        } else {
            Mode::Refused(missing)
        };
        let sandbox = Sandbox {
            inner: Arc::new(Inner {
                helper,
                report,
                mode,
                homes,
                hidden,
                cgroups,
            }),
        };
        sandbox.log();
        sandbox
    }

    /// What the server does with commands.
    pub fn mode(&self) -> &Mode {
        &self.inner.mode
    }

    /// What the probe found, layer by layer.
    pub fn report(&self) -> &Report {
        &self.inner.report
    }

    /// The start-up lines: every layer, then what that means for commands.
    fn log(&self) {
        for layer in &self.inner.report.layers {
            if layer.ok {
                tracing::info!(layer = layer.name.label(), detail = %layer.detail, "command sandbox layer");
            } else {
                tracing::warn!(layer = layer.name.label(), detail = %layer.detail, "command sandbox layer missing");
            }
        }
        if let Some(root) = &self.inner.cgroups {
            tracing::info!(cgroups = %root.describe(), "command limits kept in cgroups");
        }
        match &self.inner.mode {
            Mode::Confined => tracing::info!("accepted commands run in a sandbox"),
            Mode::Unconfined(missing) => tracing::warn!(
                missing = %missing,
                "accepted commands run UNCONFINED (RUMMY_UNSANDBOXED_COMMANDS=1)"
            ),
            Mode::Refused(missing) => tracing::warn!(
                missing = %missing,
                "the server runs no accepted command itself: a required sandbox layer is missing \
                 (a client runner still works; RUMMY_UNSANDBOXED_COMMANDS=1 runs them unconfined)"
            ),
        }
    }

    /// The project's `HOME` for commands (its real path), made 0700 if need be, as is the
    /// directory of homes.
    pub fn home_of(&self, project: ProjectId) -> std::io::Result<PathBuf> {
        make_private_dir(&self.inner.homes)?;
        let dir = self.inner.homes.join(project.0.to_string());
        make_private_dir(&dir)?;
        dir.canonicalize()
    }

    /// Everything to start `request` confined: the spec, and its cgroups made.
    pub fn prepare(&self, config: &Config, request: Request<'_>) -> std::io::Result<Prepared> {
        let home = self.home_of(request.project)?;
        let limits = limits_of(config);
        let cgroups = match &self.inner.cgroups {
            Some(root) => {
                let n = NEXT_CGROUP.fetch_add(1, Ordering::Relaxed);
                root.make(&format!("{}-{n}", std::process::id()), limits)?
            }
            None => CommandCgroups::default(),
        };
        let mut hidden = self.inner.hidden.clone();
        hidden.extend(request.others.iter().cloned());
        let spec = spec_for(
            config,
            &request,
            &home,
            &hidden,
            cgroups.dirs().to_vec(),
            false,
        );
        Ok(Prepared {
            program: self.inner.helper.clone(),
            args: vec![rummy_sandbox::HELPER_ARG.to_owned(), "run".to_owned()],
            stdin: serde_json::to_vec(&spec).map_err(std::io::Error::other)?,
            cgroups,
        })
    }
}

/// The environment of a command: the clean one given, with `HOME` its project's and `TMPDIR`
/// its private `/tmp`.
fn command_env(mut env: Vec<(String, String)>, home: &Path) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != "HOME" && k != "TMPDIR");
    env.push(("HOME".to_owned(), home.display().to_string()));
    env.push(("TMPDIR".to_owned(), "/tmp".to_owned()));
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".to_owned(), DEFAULT_PATH.to_owned()));
    }
    env.sort();
    env
}

/// The spec of one command (or of a probe).
fn spec_for(
    config: &Config,
    request: &Request<'_>,
    home: &Path,
    hidden: &[PathBuf],
    cgroups: Vec<PathBuf>,
    probe: bool,
) -> Spec {
    let settings = &config.shell.sandbox;
    let mut own = vec![request.root.to_path_buf(), home.to_path_buf()];
    own.dedup();
    let (read, write) = if request.writes {
        (settings.read_paths.clone(), own)
    } else {
        let mut read = settings.read_paths.clone();
        read.extend(own);
        (read, Vec::new())
    };
    Spec {
        command: request.command.to_owned(),
        cwd: request.root.to_path_buf(),
        env: command_env(request.env.clone(), home),
        read,
        write,
        hide: hidden.to_vec(),
        tmp_bytes: settings.tmp_bytes,
        limits: limits_of(config),
        network: if request.network {
            Network::Ports {
                ports: settings.network_ports.clone(),
            }
        } else {
            Network::Off
        },
        cgroups,
        parent: std::process::id(),
        probe,
    }
}

/// The `rummy` executable: the running one, or one beside it when this process is another
/// (a test or benchmark binary, `target/<profile>/deps/<name>` or `target/<profile>/<name>`),
/// else `rummy` on `PATH`.
fn find_helper() -> PathBuf {
    std::env::current_exe().map_or_else(|_| PathBuf::from(HELPER), |exe| helper_for(&exe))
}

/// The helper's name: the binary that knows `__sandbox`.
const HELPER: &str = "rummy";

/// The helper for a server running as `exe`. Never another executable than `rummy`: one that
/// embeds the server but does not know `__sandbox` (a benchmark built without the `rummy`
/// binary beside it) would run its whole self again for the probe, and that copy would probe
/// in turn, without end. Without `rummy` beside it nor on `PATH` the probe fails, and says so.
fn helper_for(exe: &Path) -> PathBuf {
    if exe.file_name().is_some_and(|n| n == HELPER) {
        return exe.to_path_buf();
    }
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(HELPER))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(HELPER))
}

/// A command's limits from the settings.
fn limits_of(config: &Config) -> Limits {
    Limits {
        memory_bytes: config.shell.sandbox.memory_bytes,
        pids: config.shell.sandbox.pids,
    }
}

/// Makes `dir` and its parents; `dir` itself is 0700 (tightened if it was wider).
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Runs a probe of the sandbox (network off, a probe directory as the root) and reads its
/// report; a helper that cannot start or answers nonsense leaves every layer missing.
fn probe(helper: &Path, config: &Config, cgroups: Option<&CgroupRoot>) -> Report {
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let n = PROBES.fetch_add(1, Ordering::Relaxed);
    let dir = match new_probe_dir(n) {
        Ok(dir) => dir,
        Err(e) => return Report::failed(&format!("cannot make a probe directory: {e}")),
    };
    let root = dir
        .path()
        .canonicalize()
        .unwrap_or_else(|_| dir.path().to_path_buf());
    let made = cgroups.and_then(|c| {
        c.make(
            &format!("{}-probe{n}", std::process::id()),
            limits_of(config),
        )
        .ok()
    });
    let request = Request {
        project: ProjectId(0),
        root: &root,
        command: "",
        env: Vec::new(),
        writes: true,
        network: false,
        others: Vec::new(),
    };
    let dirs = made.as_ref().map(|m| m.dirs().to_vec()).unwrap_or_default();
    let spec = spec_for(config, &request, &root, &[], dirs, true);
    let report = run_probe(helper, &spec);
    if let Some(made) = made {
        made.remove();
    }
    // Dropping `dir` removes it with what the probe left in it.
    report
}

/// A new, empty, private (0700) directory under the temporary directory for probe `n`,
/// removed whole when dropped. Made exclusively under a random name (tempfile): a directory a
/// probe left behind (its process killed mid-probe) — perhaps another user's, under a process id
/// reused since — is never taken for this probe's own.
fn new_probe_dir(n: u64) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(&format!("rummy-probe-{}-{n}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

fn run_probe(helper: &Path, spec: &Spec) -> Report {
    let spawned = Command::new(helper)
        .args([rummy_sandbox::HELPER_ARG, "run"])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return Report::failed(&format!(
                "cannot start the sandbox helper {}: {e}",
                helper.display()
            ))
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&serde_json::to_vec(spec).unwrap_or_default());
    }
    match child.wait_with_output() {
        Ok(out) => serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            Report::failed(&format!(
                "the sandbox helper answered no report ({e}): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }),
        Err(e) => Report::failed(&format!("the sandbox helper failed: {e}")),
    }
}

#[cfg(test)]
mod helper_tests {
    use super::helper_for;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    /// The running `rummy` is its own helper; another binary takes the `rummy` beside it (or
    /// one level up, from `deps/`), and without one the `rummy` on `PATH` — never itself.
    #[test]
    fn the_helper_is_always_a_rummy() {
        let dir = tempfile::tempdir().unwrap();
        let deps = dir.path().join("deps");
        std::fs::create_dir(&deps).unwrap();
        let bench = dir.path().join("turn");
        let test = deps.join("all-0123");
        let alone = (helper_for(&bench), helper_for(&test));
        std::fs::write(dir.path().join("rummy"), "").unwrap();
        let beside = (helper_for(&bench), helper_for(&test));
        assert_eq!(
            (alone, beside, helper_for(&dir.path().join("rummy"))),
            (
                (PathBuf::from("rummy"), PathBuf::from("rummy")),
                (dir.path().join("rummy"), dir.path().join("rummy")),
                dir.path().join("rummy")
            )
        );
    }

    /// Each probe gets a directory of its own, new, empty and private, even when its process id
    /// and number repeat those of a directory some earlier probe left behind.
    #[test]
    fn a_probe_directory_is_new_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let first = super::new_probe_dir(0).unwrap();
        let second = super::new_probe_dir(0).unwrap();
        assert!(first.path() != second.path(), "{first:?} reused");
        for dir in [&first, &second] {
            let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        let kept = first.path().to_path_buf();
        drop(first);
        assert!(!kept.exists(), "a dropped probe directory is removed");
    }
}
