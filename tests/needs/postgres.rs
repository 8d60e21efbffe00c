//! The suites on PostgreSQL: the store's (every test of `rummy-store` and `rummy-core`), the listener's (the
//! `rummy-pg` tests that need a server, ignored in its own run) and the end-to-end suite (the
//! `all` binary), each run again from here against `RUMMY_TEST_POSTGRES_URL`, every server or
//! test on a fresh database of its own, the databases dropped after.

use crate::parts::{Need, POSTGRES_URL_VAR};
use crate::support::database::{database_prefix, BACKEND_VAR};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

/// How many tests the end-to-end run on PostgreSQL has going at once: its heavy tests — 200
/// runs stopped by SIGTERM mid-work, a thousand starts at once — must finish within their
/// deadlines (5 s of shutdown grace) beside this binary's other suites on a 2-core machine.
const THREADS: &str = "2";

/// What the end-to-end run on PostgreSQL leaves out of the `all` binary (`--skip` filters).
/// Nothing today: what does not belong there (this driver, the browser, which covers no
/// backend behaviour `web::page` and `web::paging` do not) lives in this binary instead.
const SKIPPED: [&str; 0] = [];

/// The three suites: each needs PostgreSQL.
pub fn register(suites: &mut crate::Suites, postgres: &Need) {
    suites.add(
        "postgres::the_store_suite_passes_on_postgres",
        postgres,
        the_store_suite_passes_on_postgres,
    );
    suites.add(
        "postgres::the_listener_suite_passes_on_postgres",
        postgres,
        the_listener_suite_passes_on_postgres,
    );
    suites.add(
        "postgres::the_end_to_end_suite_passes_on_postgres",
        postgres,
        the_end_to_end_suite_passes_on_postgres,
    );
}

/// The store's suite — every test of `rummy-store` and of `rummy-core` (the domain's tests
/// store through it), each on a fresh database of its own (`rummy_store::testing`) — passes on
/// PostgreSQL too.
fn the_store_suite_passes_on_postgres() {
    for stem in ["rummy_store", "rummy_core"] {
        let mut command = Command::new(sibling(stem));
        command
            .args(["--test-threads", "4"])
            .env(BACKEND_VAR, "postgres");
        // The prefix of `rummy_store::testing::database_prefix`.
        rerun(command, |pid| format!("rummy_t{pid}_"));
    }
}

/// The `rummy-pg` tests that need a server (LISTEN/NOTIFY, reconnection) pass: its own run
/// ignores them, this one runs only them.
fn the_listener_suite_passes_on_postgres() {
    let mut command = Command::new(sibling("rummy_pg"));
    command.arg("--ignored");
    rerun(command, |pid| format!("t{pid}_"));
}

/// The end-to-end suite passes on PostgreSQL: the `all` binary again with
/// `RUMMY_TEST_BACKEND=postgres`, every server on a fresh database (`support::database`).
fn the_end_to_end_suite_passes_on_postgres() {
    let mut command = Command::new(sibling("all"));
    command.args(["--test-threads", THREADS]);
    for skipped in SKIPPED {
        command.args(["--skip", skipped]);
    }
    command.env(BACKEND_VAR, "postgres");
    rerun(command, database_prefix);
}

/// Runs `command` (a test binary), drops the databases whose names start with `prefix(its
/// pid)`, and asserts that it passed, naming the tests that failed.
fn rerun(mut command: Command, prefix: impl Fn(u32) -> String) {
    let url = std::env::var(POSTGRES_URL_VAR).unwrap();
    let started = Instant::now();
    let child = command
        .env(POSTGRES_URL_VAR, &url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let prefix = prefix(child.id());
    let output = child.wait_with_output().unwrap();
    rummy_pg::admin::drop_databases_named(&url, &prefix).unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("test ") && l.ends_with("FAILED"))
        .collect();
    assert!(
        output.status.success(),
        "{:?} on PostgreSQL, after {:?}: {failures:#?}\n{stdout}\n{}",
        command.get_program(),
        started.elapsed(),
        String::from_utf8_lossy(&output.stderr)
    );
    let result = stdout
        .lines()
        .find(|l| l.starts_with("test result: ok"))
        .unwrap_or_else(|| panic!("no test result: {stdout}"));
    assert!(!result.contains(" 0 passed"), "ran no test: {result}");
}

/// The newest test binary `<stem>-<hash>` beside this one: cargo builds every test binary of a
/// `cargo test` before it runs any, so the newest is this build's (after `cargo test --test
/// needs` alone, the one an earlier build left).
fn sibling(stem: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    newest_binary(dir, stem).unwrap_or_else(|| {
        panic!(
            "no test binary {stem}-<hash> in {}: build it with `cargo test --workspace --no-run`",
            dir.display()
        )
    })
}

/// The newest executable `<stem>-<16 hex digits>` in `dir`.
fn newest_binary(dir: &Path, stem: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_hash = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(stem)?.strip_prefix('-'))
                .is_some_and(is_hash)
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let runnable = meta.is_file() && meta.permissions().mode() & 0o111 != 0;
            runnable.then(|| (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), e.path()))
        })
        .max()
        .map(|(_, path)| path)
}
