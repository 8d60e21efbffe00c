//! Supervision: a run actor that fails (it cannot record its loop's end) is restarted from the database, and a turn that panics ends only its loop; the server and the run go on. A turn that fails with an error is `suite::runs::provider_failure_fails_the_loop_not_the_run`.

use crate::support::{start_run, wait_status, TestServer};
use diesel::connection::SimpleConnection;
use diesel::Connection;
use pretty_assertions::assert_eq;
use rummy_testkit::Reply;
use serde_json::json;
use std::time::{Duration, Instant};

/// Longer than a write waits for the database's lock (5 s) plus the recovery after it.
const RECOVERY_WAIT: Duration = Duration::from_secs(40);

/// Holds the SQLite database at `path` locked for writing (`BEGIN EXCLUSIVE`) for `hold`, on a
/// thread of its own; returns once the lock is taken. The server's writes meanwhile fail after
/// their busy wait, as on a database another program holds.
fn hold_write_lock(path: std::path::PathBuf, hold: Duration) -> std::thread::JoinHandle<()> {
    let (locked, taken) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let url = path.to_string_lossy().into_owned();
        let mut c = diesel::SqliteConnection::establish(&url).expect("the database opens");
        c.batch_execute("BEGIN EXCLUSIVE")
            .expect("the write lock is taken");
        locked.send(()).expect("the test waits");
        std::thread::sleep(hold);
        c.batch_execute("COMMIT").expect("the write lock is let go");
    });
    taken.recv().expect("the lock is taken");
    holder
}

/// The statuses of the run's `run/state`s a client received, up to the first with `last`.
async fn statuses_until(client: &mut rummy_testkit::RpcClient, last: i64) -> Vec<i64> {
    let mut statuses = Vec::new();
    loop {
        let state = client
            .next_notification("run/state", RECOVERY_WAIT)
            .await
            .expect("run/state arrives");
        let status = state["status"].as_i64().unwrap_or(0);
        statuses.push(status);
        if status == last {
            return statuses;
        }
    }
}

/// A run actor whose loop's end cannot be written (the database is locked by another program
/// past the writes' busy wait) fails and is restarted by its supervisor: its run is recovered
/// from the database — the loop ends 500 "interrupted by restart", pushed to the client — and
/// the next prompt runs on the same server.
#[actix_rt::test]
async fn a_run_actor_that_cannot_record_its_loop_is_restarted_from_the_database() {
    if crate::support::database::on_postgres() {
        // The failure is provoked through SQLite's file lock.
        return;
    }
    let server = TestServer::start().await;
    server.provider.push(
        Reply::content("<update status=\"200\">first done</update>")
            .delay(Duration::from_millis(1500)),
    );
    let mut client = server.project_client("held").await;
    start_run(&mut client, "run://held", "Do the first thing").await;
    let asked = Instant::now();
    while server.provider.chat_requests().is_empty() {
        assert!(asked.elapsed() < RECOVERY_WAIT, "the model is called");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The turn's write of the reply fails after its busy wait (5 s), and so does the loop's
    // end written after it (by about 12 s); the lock is let go a while later, when the
    // restarted actor's recovery — tried again every second — goes through.
    let rummy_store::location::Location::Sqlite(path) = server.database() else {
        unreachable!("SQLite, checked above");
    };
    let holder = hold_write_lock(path, Duration::from_secs(18));
    let statuses = statuses_until(&mut client, 500).await;
    holder.join().expect("the lock holder ends");
    assert_eq!(statuses.last(), Some(&500), "{statuses:?}");
    let error = client
        .call(
            "getEntries",
            json!({ "run": "held", "scheme": "error", "withBody": true }),
        )
        .await
        .expect("entries");
    let bodies: Vec<&str> = error
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["body"].as_str())
        .collect();
    assert!(
        bodies.contains(&rummy_core::turn::recovery::INTERRUPTED),
        "{bodies:?}"
    );

    // The run goes on: its next prompt is a loop that completes.
    server.provider.push(Reply::content(
        "<update status=\"200\">second done</update>",
    ));
    let next = client
        .call(
            "set",
            json!({ "path": "run://held", "body": "Do the next thing" }),
        )
        .await
        .expect("the prompt is taken");
    assert_eq!(next["ok"], json!(true));
    let done = wait_status(&mut client, "held", 200).await;
    assert_eq!(done["summary"], json!("second done"));
    server.stop().await;
}

/// A turn that panics once begun (a fault injected into its pipeline) ends its loop 500 with an
/// internal error as the loop's `error://` entry, and nothing more: the run's next prompt
/// completes, and a run beside it on the same server is untouched.
#[actix_rt::test]
async fn a_turn_that_panics_ends_its_loop_not_its_run() {
    let marker = "fault:turn-panics:supervision";
    rummy_actors::faults::panic_turns_of(marker);
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">steady</update>"));
    server
        .provider
        .push(Reply::content("<update status=\"200\">recovered</update>"));
    let mut client = server.project_client("demo").await;
    let fragile = start_run(&mut client, "run://fragile", &format!("Break {marker}")).await;
    wait_status(&mut client, &fragile, 500).await;
    let errors = client
        .call(
            "getEntries",
            json!({ "run": fragile, "scheme": "error", "withBody": true }),
        )
        .await
        .expect("getEntries answers");
    assert_eq!(
        errors[0]["body"],
        json!("the turn stopped unexpectedly (internal error); the loop was ended")
    );

    let steady = start_run(&mut client, "run://steady", "Carry on").await;
    let last = wait_status(&mut client, &steady, 200).await;
    assert_eq!(last["summary"], json!("steady"));

    client
        .call(
            "set",
            json!({ "path": format!("run://{fragile}"), "body": "Again, calmly?" }),
        )
        .await
        .expect("the run takes its next prompt");
    let last = wait_status(&mut client, &fragile, 200).await;
    assert_eq!(last["summary"], json!("recovered"));
    server.stop().await;
}
