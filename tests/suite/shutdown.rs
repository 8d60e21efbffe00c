//! Graceful shutdown under load, with the real binary: SIGTERM while 200 runs
//! are mid-turn, waiting on a slow model, ten more wait on a proposal and ten on a command the
//! server runs; the server exits cleanly and at once, killing the commands, and after the
//! restart every run is where start-up recovery puts it (`core/src/turn/recovery.rs`):
//! an interrupted loop ended 500 (`interrupted`, with its `error://` entry) and the run usable,
//! a loop queued behind it run, a pending proposal still pending and resumed by its answer, a
//! turn that waited on a command gone on after it with its channels failed by the restart.

use crate::support::process::ServerProcess;
use crate::support::procs::{running, sleeper, wait_marked};
use pretty_assertions::assert_eq;
use rummy_testkit::{CallError, FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);
/// Runs mid-turn when the server is stopped.
const BUSY: usize = 200;
/// Of those, the runs with a second loop queued behind the interrupted one.
const QUEUED: usize = 20;
/// Runs waiting on a proposal when the server is stopped.
const PROPOSING: usize = 10;
/// Runs whose turn waits on a command the server runs when it is stopped.
const COMMANDS: usize = 10;

/// Starts the server on `home` with its log in `home/<log>`.
fn spawn(home: &Path, provider: &FakeProvider, log: &str) -> ServerProcess {
    let log = std::fs::File::create(home.join(log)).unwrap();
    let base_url = provider.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        // A setup with nothing to warn about: the fake provider does not say the context length.
        ("RUMMY_CONTEXT_fast", "131072"),
        // Every busy run's call reaches the model, none waits in the limiter.
        ("RUMMY_OPENAI_CONCURRENCY", "512"),
    ];
    ServerProcess::start(home, &vars, Stdio::from(log))
}

async fn connect(port: u16, root: &Path) -> RpcClient {
    crate::support::process::project_client(port, "load", root, WAIT).await
}

/// The lines of the server's log at `home/<log>` that report a warning, an error or a panic.
fn troubles(home: &Path, log: &str) -> Vec<String> {
    std::fs::read_to_string(home.join(log))
        .unwrap()
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("panicked"))
        .map(str::to_owned)
        .collect()
}

/// Sends every `(method, params)` at once, then reads the answers; each must be ok.
async fn all_ok(client: &mut RpcClient, calls: Vec<(&str, Value)>) -> Vec<Value> {
    let mut ids = Vec::new();
    for (method, params) in calls {
        ids.push((
            client.send_request(method, params.clone()).await.unwrap(),
            params,
        ));
    }
    let mut answers = Vec::new();
    for (id, params) in ids {
        let answer = client
            .response_for(id)
            .await
            .unwrap_or_else(|e| panic!("{params}: {e:?}"));
        answers.push(answer);
    }
    answers
}

fn start(alias: &str, body: &str, mode: &str) -> (&'static str, Value) {
    (
        "set",
        json!({ "path": format!("run://{alias}"), "body": body, "attributes": { "model": "fast", "mode": mode } }),
    )
}

/// Asks `getRun` for every run until `done` holds for each, or the wait ends; the last answers.
async fn settle(
    client: &mut RpcClient,
    runs: &[String],
    done: impl Fn(&str, &Value) -> bool,
) -> BTreeMap<String, Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let answers = all_ok(
            client,
            runs.iter()
                .map(|r| ("getRun", json!({ "run": r })))
                .collect(),
        )
        .await;
        let states: BTreeMap<String, Value> = runs.iter().cloned().zip(answers).collect();
        if states.iter().all(|(r, s)| done(r, s)) || Instant::now() > deadline {
            return states;
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a test can say of a run: its status, why its loop stopped, and the paths and bodies of
/// its `error://` entries.
fn outcome(state: &Value) -> (Value, Value, Vec<(String, String)>) {
    let errors = state["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("error://"))
        })
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["body"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (state["status"].clone(), state["stopReason"].clone(), errors)
}

/// SIGTERM with 200 runs mid-turn (20 of them with a loop queued), 10 waiting on a proposal and
/// 10 on a command: the server exits 0 within 10 s, telling its client (1001), logging nothing
/// above INFO and leaving no command running; after a restart every interrupted run ended 500
/// `interrupted` with one `error://` entry saying so and takes a continuation, every queued loop
/// ran to its end, every command's turn went on and concluded, and every proposal is still
/// pending, its acceptance finishing the run.
#[actix_rt::test]
async fn sigterm_with_200_runs_mid_turn_leaves_each_as_recovery_says() {
    let busy = FakeProvider::start().unwrap();
    for k in 0..PROPOSING {
        busy.push(Reply::content(format!(
            "<set path=\"notes{k}.txt\">from proposal {k}\n</set>\n<update status=\"102\">wrote notes</update>"
        )));
    }
    let marks: Vec<String> = (0..COMMANDS)
        .map(|_| {
            let (command, mark) = sleeper();
            busy.push(Reply::content(format!(
                "<sh>{command}</sh>\n<update status=\"102\">running it</update>"
            )));
            mark
        })
        .collect();
    // Every later call is answered only after a minute: the model is slow, the turns are mid-call.
    busy.set_responder(|_| {
        Reply::content("<update status=\"200\">too late</update>").delay(Duration::from_secs(60))
    });
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    let mut first = spawn(home.path(), &busy, "first.log");
    let mut client = connect(first.port, project.path()).await;

    let proposing: Vec<String> = (0..PROPOSING).map(|k| format!("p{k}")).collect();
    for run in &proposing {
        all_ok(&mut client, vec![start(run, "Write notes", "act")]).await;
        client
            .wait_for_notification("run/proposal", WAIT, |p| p["run"] == json!(run))
            .await
            .unwrap();
    }
    let commanding: Vec<String> = (0..COMMANDS).map(|k| format!("c{k}")).collect();
    let mut pids = Vec::new();
    for (k, run) in commanding.iter().enumerate() {
        all_ok(&mut client, vec![start(run, "Run it", "act")]).await;
        let proposed = client
            .wait_for_notification("run/proposal", WAIT, |p| p["run"] == json!(run))
            .await
            .unwrap();
        let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
        crate::support::accept(&mut client, run, &path).await;
        pids.extend(wait_marked(&marks[k], 2).await);
    }
    let runs: Vec<String> = (0..BUSY).map(|k| format!("r{k}")).collect();
    all_ok(
        &mut client,
        runs.iter()
            .map(|r| start(r, "Take your time", "ask"))
            .collect(),
    )
    .await;
    let queued: Vec<String> = runs[..QUEUED].to_vec();
    all_ok(
        &mut client,
        queued
            .iter()
            .map(|r| {
                (
                    "set",
                    json!({ "path": format!("run://{r}"), "body": "And then this" }),
                )
            })
            .collect(),
    )
    .await;
    let deadline = Instant::now() + WAIT;
    while busy.in_flight() < BUSY {
        assert!(
            Instant::now() < deadline,
            "only {} of {BUSY} calls reached the model",
            busy.in_flight()
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }

    let stopped_at = Instant::now();
    let exit = first.terminate();
    assert!(exit.success(), "exit status {exit:?}");
    eprintln!(
        "shutdown test: {BUSY} runs mid-turn stopped in {:?}",
        stopped_at.elapsed()
    );
    assert_eq!(
        client
            .close_reason(Duration::from_secs(5))
            .await
            .map(|(code, _)| code),
        Some(1001),
        "the client was told the server is going away"
    );
    assert_eq!(troubles(home.path(), "first.log"), Vec::<String>::new());
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|p| running(*p)) && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let alive: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
    assert_eq!(alive, Vec::<i32>::new(), "commands outlived the server");

    let after = FakeProvider::start().unwrap();
    after.set_responder(|_| Reply::content("<update status=\"200\">done</update>"));
    let second = spawn(home.path(), &after, "second.log");
    let mut client = connect(second.port, project.path()).await;

    // The turns that waited on a command went on after it, its channels failed by the restart,
    // and concluded.
    let resumed = settle(&mut client, &commanding, |_, s| s["status"] == json!(200)).await;
    for (run, state) in &resumed {
        assert_eq!(
            outcome(state),
            (json!(200), json!("concluded"), vec![]),
            "{run}: {state}"
        );
        let interrupted_channels = state["history"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["outcome"] == json!("interrupted by restart"))
            .count();
        assert_eq!(interrupted_channels, 2, "{run}: stdout and stderr: {state}");
    }

    // The interrupted loops: ended 500 `interrupted` with one error entry each. The queued ones
    // then ran, and concluded.
    let interrupted = "interrupted by restart".to_owned();
    let states = settle(&mut client, &runs, |r, s| {
        let queued = queued.iter().any(|q| q == r);
        s["status"] == json!(if queued { 200 } else { 500 })
    })
    .await;
    let mut seen = BTreeMap::new();
    for (run, state) in &states {
        let (status, stop, errors) = outcome(state);
        let expected = if queued.contains(run) {
            (json!(200), json!("concluded"))
        } else {
            (json!(500), json!("interrupted"))
        };
        assert_eq!((status, stop), expected, "{run}: {state}");
        assert_eq!(
            errors.iter().map(|(_, body)| body).collect::<Vec<_>>(),
            vec![&interrupted],
            "{run}: one error entry, for the interrupted turn"
        );
        *seen.entry(expected.1.to_string()).or_insert(0) += 1;
    }
    assert_eq!(
        seen,
        BTreeMap::from([
            ("\"concluded\"".to_owned(), QUEUED),
            ("\"interrupted\"".to_owned(), BUSY - QUEUED)
        ])
    );
    // The queued loops and the resumed turns asked the model once each, and nothing else did.
    assert_eq!(after.chat_requests().len(), QUEUED + COMMANDS);

    // The proposals wait as they did; accepting each finishes its run on the new server.
    let pending = settle(&mut client, &proposing, |_, s| s["status"] == json!(202)).await;
    assert!(
        pending.values().all(|s| s["status"] == json!(202)),
        "{pending:?}"
    );
    for run in &proposing {
        let entries = client
            .call("getEntries", json!({ "run": run, "state": "proposed" }))
            .await
            .unwrap();
        let paths: Vec<&str> = entries
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["path"].as_str())
            .collect();
        assert_eq!(paths.len(), 1, "{run}: {entries}");
        crate::support::accept(&mut client, run, paths[0]).await;
    }
    let finished = settle(&mut client, &proposing, |_, s| s["status"] == json!(200)).await;
    assert!(
        finished.values().all(|s| s["status"] == json!(200)),
        "{finished:?}"
    );
    for k in 0..PROPOSING {
        assert_eq!(
            std::fs::read_to_string(project.path().join(format!("notes{k}.txt"))).ok(),
            Some(format!("from proposal {k}\n"))
        );
    }

    // An interrupted run is usable: a continuation runs and concludes.
    let again: Vec<String> = runs[QUEUED..QUEUED + 5].to_vec();
    assert_each_concludes_again(&mut client, &again, "Try again").await;
    drop(client);
    drop(second);
    assert_eq!(unsettled(home.path()), (0, 0));
}

/// Continues each of `runs` with `prompt`: every one is usable again and concludes (200).
async fn assert_each_concludes_again(client: &mut RpcClient, runs: &[String], prompt: &str) {
    all_ok(
        client,
        runs.iter()
            .map(|r| {
                (
                    "set",
                    json!({ "path": format!("run://{r}"), "body": prompt }),
                )
            })
            .collect(),
    )
    .await;
    let resumed = settle(client, runs, |_, s| s["status"] == json!(200)).await;
    let statuses: BTreeSet<i64> = resumed
        .values()
        .filter_map(|s| s["status"].as_i64())
        .collect();
    assert_eq!(statuses, BTreeSet::from([200]));
}

/// Rows a stopped server left claimed: turns still running, loops still active or queued.
fn unsettled(home: &Path) -> (i64, i64) {
    use diesel::{QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = crate::support::database::connect(&crate::support::database::of_home(home));
    let mut count = |sql: &str| {
        diesel::sql_query(sql)
            .get_result::<Count>(&mut conn)
            .unwrap()
            .n
    };
    (
        count("SELECT count(*) AS n FROM turns WHERE status = 102"),
        count("SELECT count(*) AS n FROM loops WHERE status IN (100, 102)"),
    )
}

/// SIGTERM while 200 runs are in full swing — turns answered every 20–80 ms, writes in flight —
/// leaves each run either ended as it was told before the stop or, mid-loop, ended 500
/// `interrupted` with one `error://` entry at the restart; no turn or loop stays claimed, no
/// state a client was told is contradicted, and every interrupted run takes a continuation.
#[actix_rt::test]
async fn sigterm_mid_write_leaves_every_run_ended_or_interrupted() {
    let busy = FakeProvider::start().unwrap();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    busy.set_responder(move |_| {
        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Every fifth call concludes its loop; the others note a fact and go on.
        let text = if k % 5 == 4 {
            "<update status=\"200\">done</update>".to_owned()
        } else {
            format!(
                "<known path=\"known://n{k}\">fact {k}</known>\n<update status=\"102\">on</update>"
            )
        };
        Reply::content(text).delay(Duration::from_millis(20 + (k * 13) % 60))
    });
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    let mut first = spawn(home.path(), &busy, "first.log");
    let mut client = connect(first.port, project.path()).await;
    let runs: Vec<String> = (0..BUSY).map(|k| format!("r{k}")).collect();
    all_ok(
        &mut client,
        runs.iter().map(|r| start(r, "Go on", "ask")).collect(),
    )
    .await;
    while busy.chat_requests().len() < 2 * BUSY {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
    // What each run was last told before the stop.
    let mut told: BTreeMap<String, i64> = BTreeMap::new();
    for note in client.drain_notifications() {
        if note["method"] == json!("run/state") {
            let p = &note["params"];
            if let (Some(run), Some(status)) = (p["run"].as_str(), p["status"].as_i64()) {
                told.insert(run.to_owned(), status);
            }
        }
    }
    let exit = first.terminate();
    assert!(exit.success(), "exit status {exit:?}");
    drop(client);
    assert_eq!(troubles(home.path(), "first.log"), Vec::<String>::new());

    let after = FakeProvider::start().unwrap();
    after.set_responder(|_| Reply::content("<update status=\"200\">done</update>"));
    let second = spawn(home.path(), &after, "second.log");
    let mut client = connect(second.port, project.path()).await;
    let states = settle(&mut client, &runs, |_, s| s["status"] != json!(102)).await;
    let mut tally: BTreeMap<(i64, String), usize> = BTreeMap::new();
    for (run, state) in &states {
        let (status, stop, errors) = outcome(state);
        let status = status.as_i64().unwrap_or_default();
        let stop = stop.as_str().unwrap_or_default().to_owned();
        match (status, stop.as_str()) {
            (200, "concluded") => assert_eq!(errors, vec![], "{run}"),
            (500, "interrupted") => {
                assert_eq!(
                    errors
                        .iter()
                        .map(|(_, body)| body.as_str())
                        .collect::<Vec<_>>(),
                    vec!["interrupted by restart"],
                    "{run}"
                );
                assert_ne!(told.get(run), Some(&200), "{run} was told it had ended");
            }
            other => panic!("{run} ended {other:?}: {state}"),
        }
        *tally.entry((status, stop)).or_insert(0) += 1;
    }
    eprintln!("shutdown test: after the restart {tally:?}");
    assert_eq!(tally.values().sum::<usize>(), BUSY);
    assert!(
        tally.contains_key(&(500, "interrupted".to_owned())),
        "some runs were mid-loop: {tally:?}"
    );
    assert_eq!(
        after.chat_requests().len(),
        0,
        "nothing resumed a loop on its own"
    );

    let interrupted: Vec<String> = states
        .iter()
        .filter(|(_, s)| s["status"] == json!(500))
        .map(|(r, _)| r.clone())
        .collect();
    assert_each_concludes_again(&mut client, &interrupted, "Once more").await;
    drop(client);
    drop(second);
    assert_eq!(unsettled(home.path()), (0, 0));
}

/// SIGTERM while 200 acceptances of edits are on their way: every acceptance that took effect
/// was answered before the connection closed, and after the restart each proposal and its file
/// agree with what the client was told — answered accepted: resolved, the edit on disk;
/// refused -32006 (not started), or sent after the server stopped reading (never answered):
/// still pending, the file as it was.
#[actix_rt::test]
async fn sigterm_amid_acceptances_answers_each_and_leaves_each_edit_whole() {
    let busy = FakeProvider::start().unwrap();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    busy.set_responder(move |_| {
        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if k < BUSY {
            Reply::content(format!(
                "<set path=\"f{k}.txt\"><<<<<<< SEARCH\nv1\n=======\nv2\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>"
            ))
        } else {
            Reply::content("<update status=\"200\">done</update>").delay(Duration::from_millis(20))
        }
    });
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    for k in 0..BUSY {
        std::fs::write(project.path().join(format!("f{k}.txt")), "v1\n").unwrap();
    }
    let mut first = spawn(home.path(), &busy, "first.log");
    let mut client = connect(first.port, project.path()).await;
    let runs: Vec<String> = (0..BUSY).map(|k| format!("r{k}")).collect();
    all_ok(
        &mut client,
        runs.iter().map(|r| start(r, "Edit", "act")).collect(),
    )
    .await;
    let mut proposals = BTreeMap::new();
    while proposals.len() < BUSY {
        let proposed = client
            .next_notification("run/proposal", WAIT)
            .await
            .unwrap();
        let entry = &proposed["proposed"][0];
        proposals.insert(
            proposed["run"].as_str().unwrap().to_owned(),
            (
                entry["path"].as_str().unwrap().to_owned(),
                entry["attributes"]["path"].as_str().unwrap().to_owned(),
            ),
        );
    }
    let mut sent = Vec::new();
    for (run, (path, _)) in &proposals {
        let id = client
            .send_request(
                "set",
                json!({ "run": run, "path": path, "state": "resolved" }),
            )
            .await
            .unwrap();
        sent.push((id, run.clone()));
    }
    // Stopped while the acceptances are read and applied.
    let signalled = Command::new("kill")
        .arg("-TERM")
        .arg(first.child.id().to_string())
        .status()
        .unwrap();
    assert!(signalled.success());
    let mut answers: BTreeMap<String, String> = BTreeMap::new();
    for (id, run) in sent {
        let answer = match client.response_for(id).await {
            Ok(answer) => format!("accepted: {}", answer["state"]),
            Err(CallError::Rpc(e)) if e.code == -32006 => "refused: -32006".to_owned(),
            Err(e) => format!("unanswered: {e:?}"),
        };
        answers.insert(run, answer);
    }
    let exit = first.terminate();
    assert!(exit.success(), "exit status {exit:?}");
    assert_eq!(troubles(home.path(), "first.log"), Vec::<String>::new());

    let after = FakeProvider::start().unwrap();
    after.set_responder(|_| Reply::content("<update status=\"200\">done</update>"));
    let second = spawn(home.path(), &after, "second.log");
    let mut client = connect(second.port, project.path()).await;
    let mut found = BTreeMap::new();
    let mut expected = BTreeMap::new();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for (run, (path, file)) in &proposals {
        let listed = client
            .call("getEntries", json!({ "run": run, "pattern": path }))
            .await
            .unwrap();
        let on_disk = std::fs::read_to_string(project.path().join(file)).unwrap();
        found.insert(run.clone(), (listed[0]["state"].clone(), on_disk));
        let answer = &answers[run];
        let (state, content) = match answer.as_str() {
            "accepted: \"resolved\"" => ("resolved", "v2\n"),
            _ => ("proposed", "v1\n"),
        };
        expected.insert(run.clone(), (json!(state), content.to_owned()));
        *tally.entry(answer.clone()).or_insert(0) += 1;
    }
    eprintln!("shutdown test: the acceptances were answered {tally:?}");
    assert_eq!(found, expected, "{tally:?}");
    drop(second);
}
