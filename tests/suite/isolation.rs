//! Isolation between projects: a connection reaches only its
//! project's runs, entries, proposals, streams and notifications, and another project's names
//! answer exactly as names that do not exist — no oracle.

use crate::support::{start_run, wait_status, TestServer};
use rummy_testkit::Reply;
use serde_json::{json, Value};
use std::time::Duration;

/// Every call naming a run, with `RUN` where the run's alias goes.
fn calls_naming_a_run() -> Vec<(&'static str, Value)> {
    vec![
        ("getRun", json!({ "run": "RUN" })),
        ("getRun", json!({ "run": "RUN", "sinceSeq": 0 })),
        ("getEntries", json!({ "run": "RUN" })),
        ("get", json!({ "run": "RUN", "path": "known://fact" })),
        (
            "set",
            json!({ "run": "RUN", "path": "known://fact", "body": "x" }),
        ),
        (
            "set",
            json!({ "run": "RUN", "path": "sh://1/1/ls", "state": "resolved" }),
        ),
        ("set", json!({ "path": "run://RUN", "state": "cancelled" })),
        (
            "set",
            json!({ "path": "run://RUN", "attributes": { "temperature": 0.1 } }),
        ),
        ("rm", json!({ "run": "RUN", "path": "known://fact" })),
        (
            "cp",
            json!({ "run": "RUN", "from": "known://fact", "to": "known://copy" }),
        ),
        (
            "mv",
            json!({ "run": "RUN", "from": "known://fact", "to": "known://moved" }),
        ),
        ("update", json!({ "run": "RUN", "body": "hello" })),
        (
            "stream",
            json!({ "run": "RUN", "path": "sh://1/1/ls_1", "channel": 1, "chunk": "x" }),
        ),
        (
            "stream/completed",
            json!({ "run": "RUN", "path": "sh://1/1/ls" }),
        ),
        (
            "stream/aborted",
            json!({ "run": "RUN", "path": "sh://1/1/ls" }),
        ),
        (
            "stream/cancel",
            json!({ "run": "RUN", "path": "sh://1/1/ls" }),
        ),
    ]
}

/// The code and message of an error answer, with `alias` replaced by a placeholder.
fn error_shape(error: &rummy_testkit::RpcError, alias: &str) -> (i64, String) {
    (error.code, error.message.replace(alias, "<run>"))
}

/// Project B naming project A's run gets, call for call, the very answer a name that exists
/// nowhere gets; and A's run is untouched by the attempts.
#[actix_rt::test]
async fn another_projects_run_answers_like_no_run() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<known path=\"known://fact\">a secret of A</known>\n<update status=\"200\">done</update>",
    ));
    let mut a = server.project_client("alpha").await;
    let run = start_run(&mut a, "run://theirs", "Remember something").await;
    wait_status(&mut a, &run, 200).await;
    let mut b = server.project_client("beta").await;
    for (method, template) in calls_naming_a_run() {
        let named = |alias: &str| -> Value {
            serde_json::from_str(&template.to_string().replace("RUN", alias)).unwrap()
        };
        let theirs = b.call_err(method, named(&run)).await;
        let nobody = b.call_err(method, named("nobody")).await;
        assert_eq!(
            error_shape(&theirs, &run),
            error_shape(&nobody, "nobody"),
            "{method} {template}"
        );
        assert_eq!(theirs.code, -32004, "{method} {template}");
    }
    let fact = a
        .call(
            "getEntries",
            json!({ "run": run, "scheme": "known", "withBody": true }),
        )
        .await
        .unwrap();
    assert_eq!(fact[0]["body"], json!("a secret of A"));
    let state = a.call("getRun", json!({ "run": run })).await.unwrap();
    assert_eq!(state["status"], json!(200));
    server.stop().await;
}

/// Forking another project's run is refused as if the parent did not exist, and the same
/// alias may be used in two projects without either seeing the other's.
#[actix_rt::test]
async fn forks_and_aliases_stay_in_their_project() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut a = server.project_client("alpha").await;
    let run = start_run(&mut a, "run://shared", "In alpha").await;
    wait_status(&mut a, &run, 200).await;
    let mut b = server.project_client("beta").await;
    let fork = |parent: &str| json!({ "path": "run://child", "body": "go", "attributes": { "model": "fast", "fork": parent } });
    let theirs = b.call_err("set", fork("shared")).await;
    let nobody = b.call_err("set", fork("nobody")).await;
    assert_eq!(
        error_shape(&theirs, "shared"),
        error_shape(&nobody, "nobody")
    );
    let mine = start_run(&mut b, "run://shared", "In beta").await;
    assert_eq!(mine, "shared");
    wait_status(&mut b, "shared", 200).await;
    let runs_b = b.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs_b.as_array().map(Vec::len), Some(1));
    // Nothing of beta's run reached alpha's client.
    let leaked = a
        .expect_no_notification("run/state", Duration::from_millis(200))
        .await;
    assert!(leaked, "alpha saw beta's run/state");
    server.stop().await;
}
