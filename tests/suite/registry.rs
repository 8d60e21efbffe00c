//! Run actors: a run has one only while it has something to do — an idle actor retires and the registry forgets it — and a run whose actor retired answers as before.

use crate::support::{accept, start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const DONE: &str = "<update status=\"200\">done</update>";

/// The number of run actors once it has become `expected`, or what it still is after [`WAIT`]
/// (an actor retires just after its run's last `run/state`, not before it).
async fn actors_settle_at(server: &TestServer, expected: usize) -> usize {
    let handle = server.handle.as_ref().expect("the server runs");
    let deadline = Instant::now() + WAIT;
    loop {
        let count = handle.run_actors().await;
        if count == expected || Instant::now() > deadline {
            return count;
        }
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until every run of `aliases` has pushed its `run/state` 200.
async fn all_concluded(client: &mut RpcClient, aliases: &[String]) {
    let mut left: BTreeSet<&str> = aliases.iter().map(String::as_str).collect();
    while !left.is_empty() {
        let state = client
            .next_notification("run/state", WAIT)
            .await
            .expect("run/state arrives");
        if state["status"] == json!(200) {
            left.remove(state["run"].as_str().unwrap_or_default());
        }
    }
}

/// Starts run `alias` in act mode, whose model proposes a new file, and answers the proposal's
/// path once it was announced.
async fn start_proposing(client: &mut RpcClient, alias: &str) -> String {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "Write it", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let params = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal");
    params["proposed"][0]["path"].as_str().unwrap().to_owned()
}

/// Many short runs leave no actor behind: once each has finished, the registry holds none.
#[actix_rt::test]
async fn finished_runs_hold_no_actor() {
    const RUNS: usize = 40;
    let server = TestServer::start().await;
    for _ in 0..RUNS {
        server.provider.push(Reply::content(DONE));
    }
    let mut client = server.project_client("many").await;
    let mut aliases = Vec::new();
    for n in 0..RUNS {
        aliases.push(start_run(&mut client, &format!("run://short{n}"), "Go").await);
    }
    all_concluded(&mut client, &aliases).await;
    assert_eq!(actors_settle_at(&server, 0).await, 0);
}

/// The registry's count returns to the number of busy runs: a run waiting on its proposal
/// keeps its actor (which the answer then reaches) while finished runs' actors retire; once
/// that run has finished too, none is left.
#[actix_rt::test]
async fn only_busy_runs_keep_their_actor() {
    const SHORT: usize = 10;
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<set path=\"new.txt\">hello\n</set>"));
    for _ in 0..SHORT {
        server.provider.push(Reply::content(DONE));
    }
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("busy").await;
    let proposal = start_proposing(&mut client, "waits").await;
    let mut aliases = Vec::new();
    for n in 0..SHORT {
        aliases.push(start_run(&mut client, &format!("run://short{n}"), "Go").await);
    }
    all_concluded(&mut client, &aliases).await;
    assert_eq!(actors_settle_at(&server, 1).await, 1);

    let answer = accept(&mut client, "waits", &proposal).await;
    assert_eq!(answer["state"], json!("resolved"));
    wait_status(&mut client, "waits", 200).await;
    assert_eq!(actors_settle_at(&server, 0).await, 0);
}

/// A run whose actor retired is served by a fresh one: a continuation runs its loop, a cancel
/// with nothing to stop answers as it always did, and the run holds no actor afterwards.
#[actix_rt::test]
async fn a_run_whose_actor_retired_goes_on() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(DONE));
    server
        .provider
        .push(Reply::content("<update status=\"200\">again</update>"));
    let mut client = server.project_client("again").await;
    let alias = start_run(&mut client, "run://again", "First").await;
    wait_status(&mut client, &alias, 200).await;
    assert_eq!(actors_settle_at(&server, 0).await, 0);

    client
        .call("set", json!({ "path": "run://again", "body": "Second" }))
        .await
        .unwrap();
    let state = wait_status(&mut client, &alias, 200).await;
    assert_eq!(state["summary"], json!("again"));
    assert_eq!(actors_settle_at(&server, 0).await, 0);

    let cancelled = client
        .call(
            "set",
            json!({ "path": "run://again", "state": "cancelled" }),
        )
        .await
        .unwrap();
    assert_eq!(actors_settle_at(&server, 0).await, 0);
    let run = client
        .call("getRun", json!({ "run": "again" }))
        .await
        .unwrap();
    assert_eq!(
        (cancelled["ok"].clone(), run["status"].clone()),
        (json!(true), json!(200))
    );
}
