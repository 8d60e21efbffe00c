//! Two server processes on one PostgreSQL database: a client of one process watches and steers
//! a run the other runs (resolves, injects, continues, renames, cancels), a process killed (-9)
//! has its runs taken over by the other, which finishes them, no loop run twice, and the first
//! token closes anonymous connections on both.
//! They need PostgreSQL (`RUMMY_TEST_POSTGRES_URL`).

use crate::parts::{Need, POSTGRES_URL_VAR};
use crate::support::process::{project_client, ServerProcess};
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a process's hold on its runs lasts here: short, so a takeover comes quickly.
const LEASE_MS: &str = "1500";

/// The two-process tests: each needs PostgreSQL.
pub fn register(suites: &mut crate::Suites, postgres: &Need) {
    suites.add_async(
        "cluster::a_client_of_one_process_watches_and_steers_a_run_on_another",
        postgres,
        a_client_of_one_process_watches_and_steers_a_run_on_another,
    );
    suites.add_async(
        "cluster::a_killed_process_has_its_runs_finished_by_another",
        postgres,
        a_killed_process_has_its_runs_finished_by_another,
    );
    suites.add_async(
        "cluster::an_inject_and_a_cancel_through_one_process_reach_a_run_on_another",
        postgres,
        an_inject_and_a_cancel_through_one_process_reach_a_run_on_another,
    );
    suites.add_async(
        "cluster::a_continuation_and_a_rename_through_one_process_reach_a_run_on_another",
        postgres,
        a_continuation_and_a_rename_through_one_process_reach_a_run_on_another,
    );
    suites.add_async(
        "cluster::two_processes_share_a_providers_concurrency",
        postgres,
        two_processes_share_a_providers_concurrency,
    );
    suites.add_async(
        "cluster::the_first_token_closes_the_owners_connections_on_every_process",
        postgres,
        the_first_token_closes_the_owners_connections_on_every_process,
    );
}

/// Waits this long for what crosses processes (a notification, a call, a takeover).
const WAIT: Duration = Duration::from_secs(20);

/// A fresh database on the test server, dropped with it.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    fn create(tag: &str) -> Database {
        let admin = std::env::var(POSTGRES_URL_VAR).expect("the harness saw PostgreSQL");
        let name = format!("rummy_c{}_{tag}", std::process::id());
        rummy_pg::admin::drop_database(&admin, &name).unwrap();
        rummy_pg::admin::create_database(&admin, &name, None).unwrap();
        let url = rummy_pg::admin::with_database(&admin, &name);
        Database { admin, name, url }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = rummy_pg::admin::drop_database(&self.admin, &self.name);
    }
}

/// Two `rummy serve` processes A and B on the shared database and provider, each with its own
/// home, and a client of each bound to the same project.
struct Pair {
    a: ServerProcess,
    b: ServerProcess,
    on_a: RpcClient,
    on_b: RpcClient,
    root: tempfile::TempDir,
    _homes: (tempfile::TempDir, tempfile::TempDir),
}

impl Pair {
    /// Starts both with `extra` settings beside the shared ones.
    async fn start(db: &Database, provider: &FakeProvider, extra: &[(&str, &str)]) -> Pair {
        let base_url = provider.base_url();
        let mut vars = vec![
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_DATABASE_URL", db.url.as_str()),
            ("RUMMY_LEASE_MS", LEASE_MS),
            ("RUMMY_MAX_TURNS", "6"),
        ];
        vars.extend_from_slice(extra);
        let homes = (
            tempfile::TempDir::new().unwrap(),
            tempfile::TempDir::new().unwrap(),
        );
        let root = tempfile::TempDir::new().unwrap();
        let a = ServerProcess::start(homes.0.path(), &vars, Stdio::null());
        let b = ServerProcess::start(homes.1.path(), &vars, Stdio::null());
        let on_a = project_client(a.port, "shared", root.path(), WAIT).await;
        let on_b = project_client(b.port, "shared", root.path(), WAIT).await;
        Pair {
            a,
            b,
            on_a,
            on_b,
            root,
            _homes: homes,
        }
    }
}

/// The notification `method` about run `run` that `matches`.
async fn heard(
    client: &mut RpcClient,
    method: &str,
    run: &str,
    matches: impl Fn(&Value) -> bool + Send + 'static,
) -> Value {
    let wanted = run.to_owned();
    client
        .wait_for_notification(method, WAIT, move |p| {
            p["run"] == json!(wanted) && matches(p)
        })
        .await
        .unwrap_or_else(|e| panic!("no {method} of {run}: {e:?}"))
}

/// A run started on B proposes a file; a client of A sees the proposal as it is raised,
/// accepts it through A, the file changes on disk, and A's client sees the run end, its
/// states numbered without a gap, as `getRun {sinceSeq}` on A replays them.
async fn a_client_of_one_process_watches_and_steers_a_run_on_another() {
    let db = Database::create("steer");
    let provider = FakeProvider::start().unwrap();
    let turn = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&turn);
    provider.set_responder(move |_| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::content("<set path=\"out/a.txt\">from B\n</set>")
        } else {
            Reply::content("<update status=\"200\">written</update>")
        }
    });
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root,
        _homes,
    } = Pair::start(&db, &provider, &[]).await;

    let started = on_b
        .call(
            "set",
            json!({ "path": "run://steered", "body": "write a file", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    assert_eq!(started["alias"], json!("steered"));
    let proposal = heard(&mut on_a, "run/proposal", "steered", |_| true).await;
    let path = proposal["proposed"][0]["path"].as_str().unwrap().to_owned();
    let accepted = on_a
        .call(
            "set",
            json!({ "run": "steered", "path": path, "state": "resolved" }),
        )
        .await
        .unwrap();
    assert_eq!(accepted["state"], json!("resolved"));
    heard(&mut on_a, "run/state", "steered", |p| {
        p["status"] == json!(200)
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(root.path().join("out/a.txt")).unwrap(),
        "from B\n"
    );
    // Every state B stored reached A's client, in order and without a gap.
    let mut seen: Vec<i64> = on_a
        .drain_notifications()
        .iter()
        .filter(|n| n["method"] == json!("run/state") && n["params"]["run"] == json!("steered"))
        .filter_map(|n| n["params"]["seq"].as_i64())
        .collect();
    let replayed = on_a
        .call("getRun", json!({ "run": "steered", "sinceSeq": 0 }))
        .await
        .unwrap();
    let stored: Vec<i64> = replayed["missed"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["params"]["seq"].as_i64())
                .collect()
        })
        .unwrap_or_default();
    assert!(!stored.is_empty(), "{replayed}");
    assert_eq!(stored, (1..=stored.len() as i64).collect::<Vec<_>>());
    // What A's client heard live is what was stored, from the first state it could hear.
    seen.dedup();
    assert!(stored.ends_with(&seen), "heard {seen:?} of {stored:?}");
    drop((a, b));
}

/// B is killed (-9) while its run waits on the model with a second loop queued: A takes the
/// run over once B's hold expires — the interrupted loop ends 500, as at a restart, and the
/// queued loop runs on A to the end. The interrupted loop's prompt reached the model once:
/// no process ran it again.
async fn a_killed_process_has_its_runs_finished_by_another() {
    let db = Database::create("kill");
    let provider = FakeProvider::start().unwrap();
    provider.set_responder(|body| {
        let text = body.to_string();
        if text.contains("first task") && !text.contains("second task") {
            // B holds this call until it is killed.
            Reply::content("<update status=\"200\">too late</update>")
                .delay(Duration::from_secs(30))
        } else {
            Reply::content("<update status=\"200\">second done</update>")
        }
    });
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root: _root,
        _homes,
    } = Pair::start(&db, &provider, &[]).await;
    on_b.call(
        "set",
        json!({ "path": "run://taken", "body": "first task", "attributes": { "model": "fast", "mode": "ask" } }),
    )
    .await
    .unwrap();
    provider.wait_for_chat_requests(1, WAIT).await;
    on_b.call(
        "set",
        json!({ "path": "run://taken", "body": "second task" }),
    )
    .await
    .unwrap();
    b.kill();
    heard(&mut on_a, "run/state", "taken", |p| {
        p["status"] == json!(200)
    })
    .await;
    let run = on_a
        .call("getRun", json!({ "run": "taken" }))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(200), "{run}");
    let firsts = provider
        .chat_requests()
        .iter()
        .filter(|r| r.raw_body.contains("first task") && !r.raw_body.contains("second task"))
        .count();
    assert_eq!(firsts, 1, "the interrupted loop was not run again");
    drop(a);
}

/// A prompt injected and a cancel sent through A reach the run B runs: the injection folds
/// into B's active loop (the model's next request on B carries it), and the cancel ends that
/// loop 499.
async fn an_inject_and_a_cancel_through_one_process_reach_a_run_on_another() {
    let db = Database::create("inject");
    let provider = FakeProvider::start().unwrap();
    provider.set_responder(|body| {
        if body.to_string().contains("also mind the tests") {
            // The injected prompt arrived: hold the turn until the cancel.
            Reply::content("<update status=\"200\">never</update>").delay(Duration::from_secs(30))
        } else {
            Reply::content("<known path=\"known://step\">one step</known>")
                .delay(Duration::from_millis(300))
        }
    });
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root: _root,
        _homes,
    } = Pair::start(&db, &provider, &[]).await;
    on_b.call(
        "set",
        json!({ "path": "run://steady", "body": "keep going", "attributes": { "model": "fast" } }),
    )
    .await
    .unwrap();
    provider.wait_for_chat_requests(1, WAIT).await;
    let injected = on_a
        .call(
            "set",
            json!({ "path": "run://steady", "body": "also mind the tests", "attributes": { "inject": true } }),
        )
        .await
        .unwrap();
    assert_eq!(injected["injected"], json!(true), "{injected}");
    let deadline = std::time::Instant::now() + WAIT;
    while !provider
        .chat_requests()
        .iter()
        .any(|r| r.raw_body.contains("also mind the tests"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the injection reached no request"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    on_a.call(
        "set",
        json!({ "path": "run://steady", "state": "cancelled" }),
    )
    .await
    .unwrap();
    let run = loop {
        let run = on_a
            .call("getRun", json!({ "run": "steady" }))
            .await
            .unwrap();
        if run["status"] != json!(102) {
            break run;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        (&run["status"], &run["stopReason"]),
        (&json!(499), &json!("cancelled")),
        "{run}"
    );
    drop((a, b));
}

/// A continuation and a rename sent through A reach the run B runs: the continuation queues a
/// loop, which B runs once its first loop ends, and B's actor goes on under the new alias —
/// the first loop's second turn, started after the rename, is heard on A under it.
async fn a_continuation_and_a_rename_through_one_process_reach_a_run_on_another() {
    let db = Database::create("rename");
    let provider = FakeProvider::start().unwrap();
    provider.set_responder(|body| {
        let text = body.to_string();
        if text.contains("second task") {
            Reply::content("<update status=\"200\">second done</update>")
        } else if text.contains("one step") {
            Reply::content("<update status=\"200\">first done</update>")
        } else {
            // B holds the first turn's call while A continues and renames the run.
            Reply::content("<known path=\"known://step\">one step</known>")
                .delay(Duration::from_secs(3))
        }
    });
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root: _root,
        _homes,
    } = Pair::start(&db, &provider, &[]).await;
    on_b.call(
        "set",
        json!({ "path": "run://steady", "body": "first task", "attributes": { "model": "fast", "mode": "ask" } }),
    )
    .await
    .unwrap();
    provider.wait_for_chat_requests(1, WAIT).await;
    let continued = on_a
        .call(
            "set",
            json!({ "path": "run://steady", "body": "second task" }),
        )
        .await
        .unwrap();
    assert_eq!(continued, json!({ "ok": true, "alias": "steady" }));
    let moved = on_a
        .call(
            "mv",
            json!({ "run": "steady", "from": "run://steady", "to": "run://moved" }),
        )
        .await
        .unwrap();
    assert_eq!(moved, json!({ "ok": true, "path": "run://moved" }));
    // The continuation ran after the first loop, on B, to the end.
    heard(&mut on_a, "run/state", "moved", |p| {
        p["status"] == json!(200) && p["summary"] == json!("second done")
    })
    .await;
    let asked: Vec<bool> = provider
        .chat_requests()
        .iter()
        .map(|r| r.raw_body.contains("second task"))
        .collect();
    assert_eq!(asked, [false, false, true]);
    let heard_on_a = on_a.drain_notifications();
    // What a turn pushes (its progress and its text) names the run as its actor knows it: the
    // turn in flight at the rename keeps the alias it started with, the next ones have the new.
    let turns_under = |alias: &str| -> BTreeSet<i64> {
        heard_on_a
            .iter()
            .filter(|n| matches!(n["method"].as_str(), Some("run/progress" | "ui/render")))
            .filter(|n| n["params"]["run"] == json!(alias))
            .filter_map(|n| n["params"]["turn"].as_i64())
            .collect()
    };
    assert_eq!(turns_under("steady"), BTreeSet::from([1]));
    assert_eq!(turns_under("moved"), BTreeSet::from([2, 3]));
    drop((a, b));
}

/// Two processes share a provider's limit: with `RUMMY_OPENAI_CONCURRENCY=2`, six runs started
/// three through each process never have more than two requests in flight at the provider.
async fn two_processes_share_a_providers_concurrency() {
    let db = Database::create("share");
    let provider = FakeProvider::start().unwrap();
    provider.set_responder(|_| {
        Reply::content("<update status=\"200\">done</update>").delay(Duration::from_millis(200))
    });
    // A renewal of A's hold sees B (every third of the lease); B took its share joining.
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root: _root,
        _homes,
    } = Pair::start(&db, &provider, &[("RUMMY_OPENAI_CONCURRENCY", "2")]).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    for i in 0..6 {
        let c = if i % 2 == 0 { &mut on_a } else { &mut on_b };
        c.call(
            "set",
            json!({ "path": format!("run://r{i}"), "body": "go", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    }
    // Every run's end, in whatever order they come (waiting for one run's would drop the
    // others' that came first).
    let mut ended = std::collections::BTreeSet::new();
    while ended.len() < 6 {
        let state = on_a
            .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
            .await
            .unwrap_or_else(|e| panic!("ended so far {ended:?}: {e:?}"));
        ended.insert(state["run"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(provider.chat_requests().len(), 6);
    assert!(
        provider.max_in_flight() <= 2,
        "{} in flight",
        provider.max_in_flight()
    );
    drop((a, b));
}

/// The first token, made on the shared database itself (as `rummy token create` makes it, no
/// server involved), closes the connections opened without one on both processes (1008)
/// within half a second.
async fn the_first_token_closes_the_owners_connections_on_every_process() {
    let db = Database::create("first_token");
    let provider = FakeProvider::start().unwrap();
    let Pair {
        a,
        b,
        mut on_a,
        mut on_b,
        root: _root,
        _homes,
    } = Pair::start(&db, &provider, &[]).await;
    let location = rummy_store::location::Location::Postgres(db.url.clone());
    let mut conn = rummy_store::database::open(&location).unwrap();
    let ops = rummy_store::tokens::NewToken {
        user: "ops".into(),
        admin: true,
        projects: Vec::new(),
        expires_at: None,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let made = std::time::Instant::now();
    rummy_store::tokens::create(&mut conn, &ops, &[3; 32], rummy_provider::time::Millis(now))
        .unwrap();
    let reason = "this server now has tokens: reconnect with one (Authorization: Bearer, or rummy/hello {token})";
    for client in [&mut on_a, &mut on_b] {
        assert_eq!(
            client.close_reason(WAIT).await,
            Some((1008, reason.to_owned()))
        );
        let within = made.elapsed();
        assert!(within < Duration::from_millis(500), "{within:?}");
    }
    drop((a, b));
}
