//! The command sandbox against every escape a member could try from an accepted command, on
//! the real binary, with the server running as root and as an unprivileged user: another
//! project's root, the server's home and database, the server's environment through /proc,
//! signals and ptrace to the server, processes that outlive the command, a write from `env`,
//! the server's port (network off, and on), a fork bomb, and an allocation past the limit.
//!
//! On a machine where a sandbox cannot be made (a user namespace refused, no Landlock) or a
//! variant cannot run (not root) the harness skips them, saying why, unless
//! `RUMMY_REQUIRE_SANDBOX=1` (as `.ci/run` sets): then they fail.

use crate::parts::Parts;
use crate::support::process::ServerProcess;
use crate::support::procs::{marked, unique_sleep};
use crate::support::{self, accept, wait_status, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The provider key the server holds: no command may see it.
const KEY: &str = "sk-sandbox-secret";

/// The unprivileged user the second variant runs the server as.
pub const NOBODY: (u32, u32) = (65534, 65534);

/// The sandbox's tests, each with what it needs: a sandbox for a server running as this user,
/// as root, or as `nobody`; the demo's, root (it puts the demo in a user namespace).
pub fn register(suites: &mut crate::Suites, parts: &Parts) {
    suites.add_async(
        "sandbox::every_escape_is_refused_with_the_server_as_root",
        &parts.sandbox_as_root,
        every_escape_is_refused_with_the_server_as_root,
    );
    let unprivileged = if is_root() {
        &parts.sandbox_as_nobody
    } else {
        &parts.sandbox
    };
    suites.add_async(
        "sandbox::every_escape_is_refused_with_the_server_unprivileged",
        unprivileged,
        every_escape_is_refused_with_the_server_unprivileged,
    );
    suites.add_async(
        "sandbox::a_command_with_network_cannot_reach_the_servers_port",
        &parts.sandbox,
        a_command_with_network_cannot_reach_the_servers_port,
    );
    suites.add_async(
        "sandbox::nothing_a_command_started_outlives_a_killed_server",
        &parts.sandbox,
        nothing_a_command_started_outlives_a_killed_server,
    );
    suites.add_async(
        "sandbox::the_demo_without_a_sandbox_says_why_its_check_did_not_run",
        &parts.root,
        the_demo_without_a_sandbox_says_why_its_check_did_not_run,
    );
}

/// Why a server running as `ids` (this user when `None`) makes no command sandbox here, from
/// its start-up log; `None` when it makes one.
pub fn no_sandbox(ids: Option<(u32, u32)>) -> Option<String> {
    let f = Fixture::start(ids, &[]);
    if f.confined() {
        return None;
    }
    let who = if ids.is_some() { "nobody" } else { "this user" };
    let log = f.log();
    let why = log
        .lines()
        .find_map(|l| l.split_once("missing=").map(|(_, m)| m.trim().to_owned()))
        .unwrap_or_else(|| "its start-up log says nothing of a sandbox".to_owned());
    Some(format!(
        "no command sandbox for a server running as {who}: {why}"
    ))
}

/// Asserts the server `f` confines its commands: the harness found a sandbox before.
fn assert_confined(f: &Fixture) {
    assert!(
        f.confined(),
        "a sandbox was found before the tests, yet this server has none:\n{}",
        f.log()
    );
}

/// A server (the real binary) with a project and another project's root beside it.
struct Fixture {
    server: ServerProcess,
    provider: FakeProvider,
    home: TempDir,
    project: TempDir,
    /// A directory commands may read (`RUMMY_COMMAND_READ_PATHS`) holding another project's root.
    shared: TempDir,
    runs: usize,
}

impl Fixture {
    /// Starts the server as `ids` (root when `None`) with `vars` besides the model's.
    fn start(ids: Option<(u32, u32)>, vars: &[(&str, &str)]) -> Fixture {
        let provider = FakeProvider::start().unwrap();
        let home = TempDir::new().unwrap();
        let project = TempDir::new().unwrap();
        let shared = TempDir::new().unwrap();
        let other = shared.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("secret.txt"), "another project's secret\n").unwrap();
        std::fs::write(project.path().join("f.txt"), "mine\n").unwrap();
        if let Some((uid, gid)) = ids {
            for dir in [home.path(), project.path()] {
                std::os::unix::fs::chown(dir, Some(uid), Some(gid)).unwrap();
            }
            std::os::unix::fs::chown(project.path().join("f.txt"), Some(uid), Some(gid)).unwrap();
        }
        // The other project is readable to anyone on the host: only the sandbox keeps it out.
        use std::os::unix::fs::PermissionsExt;
        for dir in [shared.path(), other.as_path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let shared_path = shared.path().display().to_string();
        let base_url = provider.base_url();
        let mut all = vec![
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", KEY),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_LOG", "info"),
            ("RUMMY_COMMAND_READ_PATHS", shared_path.as_str()),
        ];
        all.extend_from_slice(vars);
        let log = std::fs::File::create(home.path().join("server.log")).unwrap();
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(home.path().join("server.log"), Some(uid), Some(gid)).unwrap();
        }
        let binary = binary_for(ids, home.path());
        let server = ServerProcess::start_as(&binary, home.path(), &all, Stdio::from(log), ids);
        Fixture {
            server,
            provider,
            home,
            project,
            shared,
            runs: 0,
        }
    }

    /// The server's log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("server.log")).unwrap_or_default()
    }

    /// Whether the server could make a sandbox (its start-up log says so).
    fn confined(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if log.contains("accepted commands run in a sandbox") {
                return true;
            }
            if log.contains("runs no accepted command itself") || Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The project root (its real path).
    fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    /// Starts a new act run whose model proposes `tag` (`<sh>…</sh>` or `<env>…</env>`) and
    /// accepts it: the client, the run and the proposal's path.
    async fn accepted(&mut self, tag: &str) -> (RpcClient, String, String) {
        self.runs += 1;
        let run = format!("esc{}", self.runs);
        self.provider.push(Reply::content(format!(
            "{tag}\n<update status=\"102\">running it</update>"
        )));
        self.provider
            .push(Reply::content("<update status=\"200\">done</update>"));
        let mut client = RpcClient::connect(&format!("ws://127.0.0.1:{}/", self.server.port))
            .await
            .unwrap();
        client.set_timeout(WAIT);
        client
            .call(
                "rummy/hello",
                json!({ "name": "escapes", "projectRoot": self.root().display().to_string() }),
            )
            .await
            .unwrap();
        client
            .call(
                "set",
                json!({ "path": format!("run://{run}"), "body": "Try it", "attributes": { "model": "fast", "mode": "act" } }),
            )
            .await
            .unwrap();
        let proposed = match client.next_notification("run/proposal", WAIT).await {
            Ok(p) => p["proposed"][0]["path"].as_str().unwrap().to_owned(),
            Err(e) => {
                let run = client.call("getRun", json!({ "run": run })).await;
                panic!(
                    "no proposal ({e:?}): {run:?}\nthe server's log:\n{}",
                    self.log()
                );
            }
        };
        accept(&mut client, &run, &proposed).await;
        (client, run, proposed)
    }

    /// Runs `tag` as the model's proposal in a new act run, accepts it, and answers (stdout,
    /// stderr) once the loop ended.
    async fn run(&mut self, tag: &str) -> (String, String) {
        let (mut client, run, proposed) = self.accepted(tag).await;
        wait_status(&mut client, &run, 200).await;
        let out = support::entry(&mut client, &run, &format!("{proposed}_1")).await;
        let err = support::entry(&mut client, &run, &format!("{proposed}_2")).await;
        let text = |e: Option<serde_json::Value>| {
            e.and_then(|e| e["body"].as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        (text(out), text(err))
    }
}

/// The `ptrace(2)` syscall number of this architecture.
fn ptrace_number() -> u32 {
    if cfg!(target_arch = "aarch64") {
        117
    } else {
        101
    }
}

/// Every escape, tried from accepted commands of a server running as `ids`; each refused.
async fn every_escape_is_refused(ids: Option<(u32, u32)>) {
    let mut f = Fixture::start(
        ids,
        &[
            ("RUMMY_COMMAND_PIDS", "64"),
            ("RUMMY_COMMAND_MEMORY", "256M"),
            ("RUMMY_COMMAND_TMP", "2M"),
        ],
    );
    assert_confined(&f);
    // The other directory is a project too: its root is covered though commands may read
    // the directory that holds it.
    let other = f.shared.path().join("other").canonicalize().unwrap();
    let mut owner = RpcClient::connect(&format!("ws://127.0.0.1:{}/", f.server.port))
        .await
        .unwrap();
    owner
        .call(
            "rummy/hello",
            json!({ "name": "other", "projectRoot": other.display().to_string() }),
        )
        .await
        .unwrap();
    let home = f.home.path().canonicalize().unwrap();
    let server_pid = f.server.child.id();
    let port = f.server.port;
    let tries = [
        ("another project's file", format!("cat {}/secret.txt", other.display())),
        ("another project's root", format!("ls {}", other.display())),
        ("the server's home", format!("ls {}", home.display())),
        ("the database", format!("cat {}/rummy.db", home.display())),
        ("a write to the database", format!("echo x >> {}/rummy.db", home.display())),
        ("the server's environment", format!("cat /proc/{server_pid}/environ /proc/*/environ | grep -q {KEY}")),
        ("a signal to the server", format!("kill -0 {server_pid}")),
        ("ptrace of the server", format!("perl -e 'syscall({}, 16, {server_pid}, 0, 0) == 0 or exit 1'", ptrace_number())),
        ("the server's port", format!("perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => \"127.0.0.1:{port}\", Timeout => 3) or exit 1'")),
        ("the host's /home", "ls /home".to_owned()),
        ("the host's /run", "ls /run".to_owned()),
        (
            "a capability or new privileges",
            "grep -Eq '^(CapEff|CapPrm|CapBnd|CapAmb):.*[1-9a-f]|^NoNewPrivs:.0' /proc/self/status"
                .to_owned(),
        ),
    ];
    // One attempt per command: a command is at most 512 characters.
    for chunk in tries.chunks(1) {
        let script: String = chunk
            .iter()
            .map(|(label, attempt)| {
                format!("if ( {attempt} ) >/dev/null 2>&1; then echo \"{label}: ESCAPED\"; else echo \"{label}: refused\"; fi; ")
            })
            .collect::<String>()
            + "kill -9 -1; echo 'killed what it could'";
        let (out, _) = f.run(&format!("<sh>{script}</sh>")).await;
        let expected: String = chunk
            .iter()
            .map(|(label, _)| format!("{label}: refused\n"))
            .collect::<String>()
            + "killed what it could\n";
        assert_eq!(out, expected);
    }
    assert_eq!(f.server.child.try_wait().unwrap(), None, "the server died");

    // Nothing outlives the command: not a setsid child, not a double fork.
    let marks = [unique_sleep(), unique_sleep(), unique_sleep()];
    let (out, _) = f
        .run(&format!(
            "<sh>setsid sleep {} & (sleep {} &) ; sh -c 'sleep {} &'; echo started</sh>",
            marks[0], marks[1], marks[2]
        ))
        .await;
    assert_eq!(out, "started\n");
    let deadline = Instant::now() + Duration::from_secs(3);
    let left = |m: &u64| !marked(&format!("sleep {m}")).is_empty();
    while marks.iter().any(left) && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let survivors: Vec<&u64> = marks.iter().filter(|m| left(m)).collect();
    assert_eq!(survivors, Vec::<&u64>::new(), "outlived their command");

    // `env` writes nowhere but its private /tmp, in act mode too.
    let (out, _) = f
        .run("<env>echo x > written.txt && echo wrote; echo y > /tmp/t && cat /tmp/t</env>")
        .await;
    assert_eq!(out, "y\n");
    assert!(!f.root().join("written.txt").exists());

    // A fork bomb stops at the process limit (64): of 200 background processes asked for,
    // fewer than 64 start (the shell and the sandbox's init count too) before a fork fails;
    // the command goes on, and the server stays up.
    let (out, _) = f
        .run("<sh>(i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); echo $i > started; done) 2>/dev/null; echo stopped</sh>")
        .await;
    assert_eq!(out, "stopped\n");
    let started: u32 = std::fs::read_to_string(f.root().join("started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!((30..64).contains(&started), "{started} processes started");
    // An allocation past the memory limit (256 MiB) fails; the server stays up.
    let (out, _) = f
        .run("<sh>perl -e '$x = \"a\" x (512 * 1024 * 1024); print \"allocated\\n\"' 2>/dev/null || echo refused</sh>")
        .await;
    assert_eq!(out, "refused\n");
    // The private /tmp holds 2 MiB (RUMMY_COMMAND_TMP): a write past it fails, and the sandbox
    // says why.
    let (_, err) = f.run("<sh>head -c 3000000 /dev/zero > /tmp/big</sh>").await;
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("rummy sandbox: the private /tmp is full (2 MiB)"),
        "{err}"
    );
    // The project itself stays writable.
    let (out, _) = f.run("<sh>echo more >> f.txt && cat f.txt</sh>").await;
    assert_eq!(out, "mine\nmore\n");
    assert_eq!(f.server.child.try_wait().unwrap(), None, "the server died");
}

/// With the server running as root, every escape from an accepted command is refused.
async fn every_escape_is_refused_with_the_server_as_root() {
    every_escape_is_refused(None).await;
}

/// With the server running as an unprivileged user, every escape is refused too.
async fn every_escape_is_refused_with_the_server_unprivileged() {
    if !is_root() {
        // Already unprivileged: the server runs as this user.
        every_escape_is_refused(None).await;
        return;
    }
    every_escape_is_refused(Some(NOBODY)).await;
}

/// With network on, a command still cannot connect to the host's loopback (the server's
/// port): only the listed ports are open, and the server's is not one.
async fn a_command_with_network_cannot_reach_the_servers_port() {
    let mut f = Fixture::start(None, &[("RUMMY_COMMAND_NETWORK", "1")]);
    assert_confined(&f);
    let port = f.server.port;
    let (out, _) = f
        .run(&format!(
            "<sh>perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => \"127.0.0.1:{port}\", Timeout => 3) or exit 1' && echo connected || echo refused; grep -c : /proc/net/dev</sh>"
        ))
        .await;
    // Refused, and on the host's network (more interfaces than a lone loopback).
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "refused");
    assert!(lines[1].parse::<u32>().unwrap() > 1, "{out}");
}

/// Whether this test process is root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Uid:")
                    .map(|v| v.split_whitespace().next() == Some("0"))
            })
        })
        .unwrap_or(false)
}

/// The binary a server running as `ids` can execute: the built one when every directory
/// above it is open to others, else a copy in `home` (made by root, opened to `ids`).
fn binary_for(ids: Option<(u32, u32)>, home: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let built = Path::new(env!("CARGO_BIN_EXE_rummy"));
    let open = built
        .ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if ids.is_none() || open {
        return built.to_path_buf();
    }
    let copy = home.join("rummy");
    std::fs::copy(built, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// A server killed with `-9` while a command runs takes the command with it: its helper dies
/// with the server, its init with the helper, and everything the command started with its init.
async fn nothing_a_command_started_outlives_a_killed_server() {
    let mut f = Fixture::start(None, &[]);
    assert_confined(&f);
    let marks = [unique_sleep(), unique_sleep()];
    let _running = f
        .accepted(&format!(
            "<sh>setsid sleep {} & sleep {} & echo started; wait</sh>",
            marks[0], marks[1]
        ))
        .await;
    for mark in &marks {
        crate::support::procs::wait_marked(&format!("sleep {mark}"), 1).await;
    }
    f.server.child.kill().unwrap();
    f.server.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    let left = |m: &u64| !marked(&format!("sleep {m}")).is_empty();
    while marks.iter().any(left) && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let survivors: Vec<&u64> = marks.iter().filter(|m| left(m)).collect();
    assert_eq!(survivors, Vec::<&u64>::new(), "outlived the killed server");
}

/// On a machine where the server cannot make a sandbox (here: inside a user namespace whose
/// uid 1000 is root outside, which no nested namespace may map), `rummy demo` says why its
/// command did not run and which layers are missing, finishes the rest without claiming the
/// check passed, and exits 0.
async fn the_demo_without_a_sandbox_says_why_its_check_did_not_run() {
    let home = TempDir::new().unwrap();
    let out = tokio::process::Command::new("unshare")
        .args(["--user", "--map-user=1000", "--map-group=1000"])
        .arg(env!("CARGO_BIN_EXE_rummy"))
        .arg("demo")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    let refused = lines
        .iter()
        .find(|l| l.starts_with("✗ could not start:"))
        .unwrap_or_else(|| panic!("no line says why: {stdout}"));
    assert!(
        refused.contains(
            "its sandbox lacks file system (Landlock), processes (PID namespace), /proc \
             isolation, network (own namespace): cannot map the uid"
        ),
        "{refused}"
    );
    assert!(
        stdout.contains(
            "The check did not pass here (its outcome is above), so the fix is not confirmed."
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("check.sh passes"), "{stdout}");
    assert!(stdout.contains("✔ done · 4 turns"), "{stdout}");
}
