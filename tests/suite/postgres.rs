//! The end-to-end suite on PostgreSQL (SCALE.md §3): this test binary again, every server on a
//! fresh PostgreSQL database of its own (`support::database`).

use crate::support::database::{database_prefix, on_postgres, BACKEND_VAR, POSTGRES_URL_VAR};

/// How many tests the PostgreSQL run has going at once. It runs beside the rest of this binary
/// (two more on a 2-core machine), and its heavy tests — 200 runs stopped by SIGTERM mid-work,
/// a thousand starts at once — must finish within their deadlines (5 s of shutdown grace):
/// with four at once beside the SQLite suite on a busy 2-core machine they did not.
const THREADS: &str = "2";

/// What the PostgreSQL run leaves out: this test, and the web page in a real browser, which
/// drives the page's own behaviour (its rendering, clicks and keys) through the same calls the
/// rest of the suite makes; it is the suite's heaviest test, and nothing in it depends on the
/// backend that `web::page` and `web::paging` do not cover.
const SKIPPED: [&str; 2] = [
    "suite::postgres::the_end_to_end_suite_passes_on_postgres",
    "suite::web::browser::",
];

/// The suite passes on PostgreSQL: this test runs the binary again with
/// `RUMMY_TEST_BACKEND=postgres` against the server `RUMMY_TEST_POSTGRES_URL` names, drops the
/// databases the run created, and names the tests that failed. Without that server it does
/// nothing: the store's suite already says in one line that the PostgreSQL suites did not run.
#[test]
fn the_end_to_end_suite_passes_on_postgres() {
    if on_postgres() {
        return; // the run this test started
    }
    let Ok(url) = std::env::var(POSTGRES_URL_VAR) else {
        return;
    };
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--test-threads", THREADS]);
    for skipped in SKIPPED {
        command.args(["--skip", skipped]);
    }
    let started = std::time::Instant::now();
    let child = command
        .env(BACKEND_VAR, "postgres")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let prefix = database_prefix(child.id());
    let output = child.wait_with_output().unwrap();
    rummy_pg::admin::drop_databases_named(&url, &prefix).unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("test ") && l.ends_with("FAILED"))
        .collect();
    assert!(
        output.status.success(),
        "on PostgreSQL, after {:?}: {failures:#?}\n{stdout}\n{}",
        started.elapsed(),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("test result: ok"), "{stdout}");
}
