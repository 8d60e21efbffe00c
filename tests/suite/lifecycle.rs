//! Run lifecycle through `run://`: continue (FIFO), inject, configure, fork, and cancel with queued loops.

use crate::support::{prompt_element, scheme_entries, start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;

fn user_message(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn system_message(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn entries(client: &mut RpcClient, run: &str, scheme: &str) -> Vec<(String, String)> {
    scheme_entries(client, run, scheme)
        .await
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["body"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A server whose model answers `first` after 300 ms, then `second`; a client of its project
/// with run `alias` started, once its first turn waits on the model.
async fn run_waiting_on_the_model(
    alias: &str,
    first: &str,
    second: &str,
) -> (TestServer, RpcClient, String) {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content(first).delay(Duration::from_millis(300)));
    server.provider.push(Reply::content(second));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, &format!("run://{alias}"), "Do the thing").await;
    client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("thinking"))
        .await
        .unwrap();
    (server, client, alias)
}

/// Injects `body` into run `alias`; answers whether it was folded into the active loop.
async fn inject(client: &mut RpcClient, alias: &str, body: &str) -> Value {
    let params =
        json!({ "path": format!("run://{alias}"), "body": body, "attributes": { "inject": true } });
    client.call("set", params).await.unwrap()["injected"].clone()
}

/// Prompts sent to a busy run queue behind it and run in order, each as its own loop.
#[actix_rt::test]
async fn continuations_run_fifo() {
    let server = TestServer::start().await;
    server.provider.push(
        Reply::content("<update status=\"200\">one</update>").delay(Duration::from_millis(300)),
    );
    server
        .provider
        .push(Reply::content("<update status=\"200\">two</update>"));
    server
        .provider
        .push(Reply::content("<update status=\"200\">three</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://fifo", "first").await;
    for prompt in ["second", "third"] {
        client
            .call("set", json!({ "path": "run://fifo", "body": prompt }))
            .await
            .unwrap();
    }
    client
        .wait_for_notification("run/state", WAIT, |p| {
            p["status"] == json!(200) && p["summary"] == json!("three")
        })
        .await
        .unwrap();
    let prompts: Vec<String> = server
        .provider
        .chat_requests()
        .iter()
        .map(|r| prompt_element(&user_message(&r.body)))
        .collect();
    assert_eq!(
        prompts,
        ["first", "second", "third"].map(|p| format!(
            "<prompt mode=\"ask\" warn=\"File editing disallowed.\">{p}</prompt>"
        ))
    );
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(
        (run["status"].clone(), run["turn"].clone()),
        (json!(200), json!(3))
    );
    let third = system_message(&server.provider.chat_requests()[2].body);
    assert!(
        third.contains("<previous>"),
        "earlier loops move to <previous>: {third}"
    );
    server.stop().await;
}

/// An injected prompt is folded into the active loop: the model sees it on its next turn.
#[actix_rt::test]
async fn inject_folds_into_the_active_loop() {
    let (server, mut client, alias) = run_waiting_on_the_model(
        "inj",
        "<update status=\"102\">working</update>",
        "<update status=\"200\">adjusted</update>",
    )
    .await;
    assert_eq!(
        inject(&mut client, &alias, "Also check the tests").await,
        json!(true)
    );
    wait_status(&mut client, &alias, 200).await;
    let requests = server.provider.chat_requests();
    assert_eq!(requests.len(), 2, "one loop, two turns");
    assert_eq!(
        prompt_element(&user_message(&requests[1].body)),
        "<prompt mode=\"ask\" warn=\"File editing disallowed.\">Also check the tests</prompt>"
    );
    assert_eq!(
        inject(&mut client, &alias, "New work").await,
        json!(false),
        "with no active loop an inject is a new loop"
    );
    server.stop().await;
}

/// A prompt injected while the loop's last turn waits on the model is not lost when that turn
/// concludes the loop: it runs as a loop of its own, right after.
#[actix_rt::test]
async fn an_inject_the_concluding_turn_never_saw_runs_as_a_loop_of_its_own() {
    let (server, mut client, alias) = run_waiting_on_the_model(
        "late",
        "<update status=\"200\">done</update>",
        "<update status=\"200\">tests checked</update>",
    )
    .await;
    assert_eq!(
        inject(&mut client, &alias, "Also check the tests").await,
        json!(true)
    );
    client
        .wait_for_notification("run/state", WAIT, |p| {
            p["status"] == json!(200) && p["summary"] == json!("tests checked")
        })
        .await
        .unwrap();
    let requests = server.provider.chat_requests();
    assert_eq!(
        requests.len(),
        2,
        "the concluded loop, then the injected prompt's"
    );
    assert_eq!(
        prompt_element(&user_message(&requests[1].body)),
        "<prompt mode=\"ask\" warn=\"File editing disallowed.\">Also check the tests</prompt>"
    );
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(
        (run["status"].clone(), run["turn"].clone()),
        (json!(200), json!(2))
    );
    server.stop().await;
}

/// Two prompts injected before the model's next turn both reach it, in the order they came.
#[actix_rt::test]
async fn injects_for_the_same_turn_are_joined_in_order() {
    let (server, mut client, alias) = run_waiting_on_the_model(
        "twice",
        "<update status=\"102\">working</update>",
        "<update status=\"200\">adjusted</update>",
    )
    .await;
    for body in ["Also check the tests", "And the docs"] {
        assert_eq!(inject(&mut client, &alias, body).await, json!(true));
    }
    wait_status(&mut client, &alias, 200).await;
    let requests = server.provider.chat_requests();
    assert_eq!(requests.len(), 2, "one loop, two turns");
    assert_eq!(
        prompt_element(&user_message(&requests[1].body)),
        "<prompt mode=\"ask\" warn=\"File editing disallowed.\">Also check the tests\n\nAnd the docs</prompt>"
    );
    server.stop().await;
}

/// Configure changes the settings later loops use; an unknown model is refused.
#[actix_rt::test]
async fn configure_changes_later_loops() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://conf", "One").await;
    wait_status(&mut client, &alias, 200).await;
    client
        .call("set", json!({ "path": "run://conf", "attributes": { "temperature": 1.5, "persona": "Be terse." } }))
        .await
        .unwrap();
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://conf", "attributes": { "model": "ghost" } }),
        )
        .await;
    assert_eq!(err.code, -32004);
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://conf", "attributes": { "contextLimit": 10 } }),
        )
        .await;
    assert_eq!(err.code, -32602);
    client
        .call("set", json!({ "path": "run://conf", "body": "Two" }))
        .await
        .unwrap();
    client
        .wait_for_notification("run/state", WAIT, |p| {
            p["status"] == json!(200) && p["turn"] == json!(2)
        })
        .await
        .unwrap();
    let second = &server.provider.chat_requests()[1].body;
    assert_eq!(second["temperature"], json!(1.5));
    assert!(
        system_message(second).contains("## Persona\n\nBe terse.\n\n<previous>"),
        "{}",
        system_message(second)
    );
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(
        (run["temperature"].clone(), run["persona"].clone()),
        (json!(1.5), json!("Be terse."))
    );
    server.stop().await;
}

/// A fork starts with copies of the parent's facts; what either writes afterwards stays its own.
#[actix_rt::test]
async fn fork_copies_and_isolates() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<set path=\"known://a\">1</set><update status=\"200\">parent done</update>",
    ));
    server.provider.push(Reply::content("<set path=\"known://a\">2</set><set path=\"known://b\">x</set><update status=\"200\">child done</update>"));
    let mut client = server.project_client("demo").await;
    start_run(&mut client, "run://parent", "Start").await;
    wait_status(&mut client, "parent", 200).await;
    let child = client
        .call(
            "set",
            json!({ "path": "run://child", "body": "Go on", "attributes": { "fork": "parent" } }),
        )
        .await
        .unwrap();
    assert_eq!(child["alias"], json!("child"));
    wait_status(&mut client, "child", 200).await;
    let child_request = &server.provider.chat_requests()[1].body;
    assert!(
        system_message(child_request).contains("<known path=\"known://a\" turn=\"1\""),
        "the child sees the parent's fact"
    );
    assert_eq!(
        entries(&mut client, "parent", "known").await,
        vec![("known://a".to_owned(), "1".to_owned())]
    );
    assert_eq!(
        entries(&mut client, "child", "known").await,
        vec![
            ("known://a".to_owned(), "2".to_owned()),
            ("known://b".to_owned(), "x".to_owned())
        ]
    );
    let run = client
        .call("getRun", json!({ "run": "child" }))
        .await
        .unwrap();
    assert_eq!(
        run["turn"],
        json!(2),
        "turn numbers continue from the parent"
    );
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://orphan", "body": "x", "attributes": { "fork": "nobody" } }),
        )
        .await;
    assert_eq!(err.code, -32004);
    server.stop().await;
}

/// Cancel stops only the active loop; a loop queued behind it runs next.
#[actix_rt::test]
async fn cancel_keeps_queued_loops() {
    let server = TestServer::start().await;
    server.provider.push(Reply::hang());
    server
        .provider
        .push(Reply::content("<update status=\"200\">second ran</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://cq", "Hang").await;
    client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("thinking"))
        .await
        .unwrap();
    // "thinking" is pushed before the call leaves: on a busy machine a cancel could overtake it,
    // and the next loop would then take the hanging reply. Cancel once the model has it.
    server.provider.wait_for_chat_requests(1, WAIT).await;
    client
        .call("set", json!({ "path": "run://cq", "body": "Next" }))
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://cq", "state": "cancelled" }))
        .await
        .unwrap();
    wait_status(&mut client, &alias, 499).await;
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("second ran"));
    server.stop().await;
}
