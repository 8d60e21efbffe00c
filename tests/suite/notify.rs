//! `ui/notify`: the server tells every client of a project, in one line, what a person should
//! hear of wherever they look — a run waits for their decision (info, once per proposal a turn
//! pauses on), a loop failed (error, 500) or was abandoned by the referee (warn, 508) — and
//! tells every connected client the server is stopping (warn) before it closes the connection.

use crate::support::{accept, scheme_entries, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;

/// Starts run `alias` in act mode with a prompt.
async fn start(client: &mut RpcClient, alias: &str) {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "go",
                    "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
}

/// The path of the next proposal `run/proposal` announces.
async fn proposed(client: &mut RpcClient) -> String {
    let proposal = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    proposal["proposed"][0]["path"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The next `ui/notify`'s params.
async fn notice(client: &mut RpcClient) -> Value {
    client.next_notification("ui/notify", WAIT).await.unwrap()
}

/// A turn that pauses twice, on a question and then on an edit, tells every client of the
/// project once per wait, naming the run, the proposal's kind and its target; a client of
/// another project hears nothing.
#[actix_rt::test]
async fn each_wait_for_a_decision_is_told_to_every_client_of_the_project() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<set path=\"b.txt\">new</set>\n<update status=\"102\">asking</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut owner = server.project_client("team").await;
    let mut page = server.project_client("team").await;
    let mut other = server.project_client("other").await;
    start(&mut owner, "notify").await;
    let question = proposed(&mut owner).await;
    let asked = json!({
        "level": "info",
        "run": "notify",
        "text": "run notify waits for your decision: ask_user Which database?",
    });
    assert_eq!(notice(&mut owner).await, asked);
    assert_eq!(notice(&mut page).await, asked);
    owner
        .call(
            "set",
            json!({ "run": "notify", "path": question, "state": "resolved", "body": "SQLite" }),
        )
        .await
        .unwrap();
    let edit = proposed(&mut owner).await;
    let edited = json!({
        "level": "info",
        "run": "notify",
        "text": "run notify waits for your decision: edit b.txt",
    });
    assert_eq!(notice(&mut owner).await, edited);
    assert_eq!(notice(&mut page).await, edited);
    accept(&mut owner, "notify", &edit).await;
    wait_status(&mut owner, "notify", 200).await;
    assert!(
        owner
            .expect_no_notification("ui/notify", Duration::from_millis(300))
            .await,
        "a loop that concluded is not a notice"
    );
    assert!(
        other
            .expect_no_notification("ui/notify", Duration::from_millis(100))
            .await,
        "another project's client hears nothing"
    );
    server.stop().await;
}

/// A provider failure ends the loop 500: every client of the project gets an error naming the
/// run and the reason its loop records (its last `error://` entry).
#[actix_rt::test]
async fn a_failed_loop_is_an_error_notice() {
    let server = TestServer::start().await;
    // A 400 is not retried.
    server.provider.push(Reply::status(
        400,
        json!({ "error": { "message": "invalid request" } }),
    ));
    let mut client = server.project_client("demo").await;
    start(&mut client, "flaky").await;
    let ended = wait_status(&mut client, "flaky", 500).await;
    assert_eq!(ended["stopReason"], json!("failed"));
    let reason = "openai API error: 400 - {\"error\":{\"message\":\"invalid request\"}}";
    let errors = scheme_entries(&mut client, "flaky", "error").await;
    assert_eq!(
        errors.last().map(|e| e["body"].clone()),
        Some(json!(reason))
    );
    assert_eq!(
        notice(&mut client).await,
        json!({ "level": "error", "run": "flaky", "text": format!("run flaky failed: {reason}") })
    );
    server.stop().await;
}

/// Turns that repeat themselves make the referee abandon the loop (508): a warning names the
/// run and the reason its loop records (its last `error://` entry).
#[actix_rt::test]
async fn an_abandoned_loop_is_a_warning_notice() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<set path=\"known://same\">again</set>"));
    let mut client = server.project_client("strikes").await;
    start(&mut client, "s").await;
    wait_status(&mut client, "s", 508).await;
    let reason = "Cyclic tool pattern (period 1, 3 repetitions)";
    let errors = scheme_entries(&mut client, "s", "error").await;
    assert_eq!(
        errors.last().map(|e| e["body"].clone()),
        Some(json!(reason))
    );
    assert_eq!(
        notice(&mut client).await,
        json!({ "level": "warn", "run": "s", "text": format!("run s was abandoned: {reason}") })
    );
    server.stop().await;
}

/// As the server stops, each client of a project reads that it is stopping, and what that does
/// to its runs, before the close frame (1001); a connection bound to no project is only closed.
#[actix_rt::test]
async fn a_stopping_server_says_so_before_it_closes() {
    let server = TestServer::start().await;
    let mut client = server.project_client("demo").await;
    let mut unbound = server.client().await;
    let stopping = actix_rt::spawn(server.stop());
    assert_eq!(
        unbound.close_reason(WAIT).await,
        Some((1001, "server shutting down".to_owned()))
    );
    assert_eq!(unbound.drain_notifications(), Vec::<Value>::new());
    assert_eq!(
        client.close_reason(WAIT).await,
        Some((1001, "server shutting down".to_owned()))
    );
    assert_eq!(
        client.drain_notifications(),
        vec![json!({
            "jsonrpc": "2.0",
            "method": "ui/notify",
            "params": {
                "level": "warn",
                "text": "the server is stopping: a proposal waiting for you still waits when it is back; a loop in flight ends as interrupted",
            },
        })]
    );
    stopping.await.unwrap();
}
