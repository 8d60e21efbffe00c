//! Tools a client offers a run (an editor's MCP servers, run by the editor's client): the model
//! sees them in act mode and calls them with `<call>`, each call a proposal any client may
//! answer; once accepted the call goes to the connection that offered the tool (`tool/call`),
//! whose `tool/result` fills the call's channel for the model's next turn. A call whose client
//! has gone fails with a reason the model reads.

use crate::support::{accept, entry, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;

const DONE: &str = "<update status=\"200\">done</update>";

const ECHO: &str = "<call server=\"everything\" tool=\"echo\">{\"message\": \"hi\"}</call>\n<update status=\"102\">calling</update>";

/// The tools the editor offers: an echo that requires `message`.
fn tools() -> Value {
    json!([{
        "server": "everything",
        "name": "echo",
        "description": "Echoes back the input.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    }])
}

/// Starts run `alias` in `mode` with a prompt.
async fn start(client: &mut RpcClient, alias: &str, mode: &str) {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "echo hi",
                    "attributes": { "model": "fast", "mode": mode } }),
        )
        .await
        .unwrap();
}

/// The path of the proposal `run/proposal` announces, and its `proposed` item.
async fn proposed(client: &mut RpcClient) -> (String, Value) {
    let proposal = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let item = proposal["proposed"][0].clone();
    (item["path"].as_str().unwrap_or_default().to_owned(), item)
}

/// The text of every message of the model's `n`th request (0-based).
fn request_text(server: &TestServer, n: usize) -> String {
    let requests = server.provider.chat_requests();
    requests[n].body["messages"].to_string()
}

/// The editor offers its tool before the run exists; the model reads it in its tool docs and
/// calls it; the page accepts; the call goes to the editor alone (not the accepting page,
/// whose answer is refused), and its answer is the model's next turn.
#[actix_rt::test]
async fn an_offered_tool_is_called_by_the_client_that_offered_it() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(ECHO));
    server.provider.push(Reply::content(DONE));
    let mut editor = server.project_client("tools").await;
    let mut page = server.project_client("tools").await;
    let offered = editor
        .call("tools/offer", json!({ "run": "t", "tools": tools() }))
        .await
        .unwrap();
    assert_eq!(offered, json!({ "ok": true }));
    start(&mut editor, "t", "act").await;
    let (path, item) = proposed(&mut page).await;
    assert_eq!(
        (
            path.as_str(),
            item["proposal"].clone(),
            item["attributes"].clone()
        ),
        (
            "call://turn_1/everything%2Fecho",
            json!("call"),
            json!({"kind": "call", "server": "everything", "tool": "echo",
                   "arguments": {"message": "hi"}, "summary": "everything/echo {\"message\":\"hi\"}",
                   "runner": "client", "commandIndex": 0}),
        )
    );
    let accepted = accept(&mut page, "t", &path).await;
    assert_eq!(
        (accepted["channels"].clone(), accepted.get("runner")),
        (json!([format!("{path}_1")]), None)
    );
    let call = editor.next_notification("tool/call", WAIT).await.unwrap();
    assert_eq!(
        call,
        json!({ "arguments": {"message": "hi"}, "path": path, "run": "t",
                "server": "everything", "tool": "echo" })
    );
    assert!(
        page.expect_no_notification("tool/call", Duration::from_millis(200))
            .await
    );
    let refused = page
        .call_err(
            "tool/result",
            json!({ "run": "t", "path": path, "content": "forged" }),
        )
        .await;
    assert_eq!(
        (refused.code, refused.message),
        (
            -32003,
            format!("permission denied: the call at {path} was sent to the connection that offered its tool; only it answers")
        )
    );
    let answered = editor
        .call(
            "tool/result",
            json!({ "run": "t", "path": path, "content": "Echo: hi" }),
        )
        .await
        .unwrap();
    assert_eq!(
        answered,
        json!({ "ok": true, "channels": [format!("{path}_1")] })
    );
    wait_status(&mut editor, "t", 200).await;
    let answer = entry(&mut editor, "t", &format!("{path}_1")).await.unwrap();
    assert_eq!(
        (answer["state"].clone(), answer["body"].clone()),
        (json!("resolved"), json!("Echo: hi"))
    );
    let first = request_text(&server, 0);
    assert!(
        first.contains("- everything/echo: Echoes back the input. Arguments: "),
        "{first}"
    );
    assert!(request_text(&server, 1).contains("Echo: hi"));
    let again = editor
        .call_err(
            "tool/result",
            json!({ "run": "t", "path": path, "content": "again" }),
        )
        .await;
    assert_eq!(
        (again.code, again.message),
        (
            -32005,
            format!("no call at {path} waits for an answer (answered already, cancelled, or never sent)")
        )
    );
    server.stop().await;
}

/// A call accepted after the connection that offered its tool closed fails at once, and one
/// whose connection closes before answering fails then: the model reads why, the loop goes on.
#[actix_rt::test]
async fn a_call_whose_client_has_gone_fails_with_a_reason_the_model_reads() {
    let server = TestServer::start().await;
    for _ in 0..2 {
        server.provider.push(Reply::content(ECHO));
        server.provider.push(Reply::content(DONE));
    }
    let mut page = server.project_client("gone").await;
    let cases = [("before", false), ("during", true)];
    let mut bodies = Vec::new();
    for (alias, sent) in cases {
        let mut editor = server.project_client("gone").await;
        editor
            .call("tools/offer", json!({ "run": alias, "tools": tools() }))
            .await
            .unwrap();
        start(&mut page, alias, "act").await;
        let (path, _) = proposed(&mut page).await;
        if sent {
            accept(&mut page, alias, &path).await;
            editor.next_notification("tool/call", WAIT).await.unwrap();
            editor.close().await;
        } else {
            editor.close().await;
            // The server has seen the close once the editor's offer is gone from a new turn's
            // docs; here it is enough that the close was sent before the accept.
            tokio::time::sleep(Duration::from_millis(200)).await;
            accept(&mut page, alias, &path).await;
        }
        wait_status(&mut page, alias, 200).await;
        let log = entry(&mut page, alias, &path).await.unwrap();
        bodies.push((
            log["body"].clone(),
            entry(&mut page, alias, &format!("{path}_1")).await.unwrap()["state"].clone(),
        ));
    }
    assert_eq!(
        bodies,
        vec![
            (
                json!("failed 'everything/echo' (no client offers everything/echo any more (the connection that offered it closed); it was not called). Output: call://turn_1/everything%2Fecho_1 (empty)"),
                json!("failed")
            ),
            (
                json!("failed 'everything/echo' (the client that offered everything/echo disconnected before answering; it was not called or its answer was lost). Output: call://turn_1/everything%2Fecho_1 (empty)"),
                json!("failed")
            ),
        ]
    );
    assert!(request_text(&server, 1).contains("no client offers everything/echo any more"));
    server.stop().await;
}

/// Ask mode offers no client tools: the model's docs say nothing of `call`, and a call it
/// writes anyway is refused with the reason.
#[actix_rt::test]
async fn ask_mode_offers_no_client_tools() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(ECHO));
    server.provider.push(Reply::content(DONE));
    let mut editor = server.project_client("ask").await;
    editor
        .call("tools/offer", json!({ "run": "q", "tools": tools() }))
        .await
        .unwrap();
    start(&mut editor, "q", "ask").await;
    wait_status(&mut editor, "q", 200).await;
    let call = entry(&mut editor, "q", "call://turn_1/everything%2Fecho")
        .await
        .unwrap();
    assert_eq!(
        (
            call["state"].clone(),
            call["outcome"].clone(),
            call["body"].clone()
        ),
        (
            json!("failed"),
            json!("permission"),
            json!(
                "Rejected <call> in ask mode: the tools clients offer are called only in act mode"
            )
        )
    );
    assert!(!request_text(&server, 0).contains("<call"));
    server.stop().await;
}

/// An offer with a tool whose name the model could not write back, a schema that is not an
/// object, or the same tool twice is refused whole, naming the problem.
#[actix_rt::test]
async fn a_bad_offer_is_refused_whole() {
    let server = TestServer::start().await;
    let mut editor = server.project_client("bad").await;
    let offers = [
        json!([{ "server": "my server", "name": "echo" }]),
        json!([{ "server": "s", "name": "echo", "inputSchema": ["not", "an", "object"] }]),
        json!([{ "server": "s", "name": "echo" }, { "server": "s", "name": "echo" }]),
    ];
    let mut refusals = Vec::new();
    for tools in offers {
        let e = editor
            .call_err("tools/offer", json!({ "run": "b", "tools": tools }))
            .await;
        refusals.push((e.code, e.message));
    }
    assert_eq!(
        refusals,
        vec![
            (
                -32602,
                "server \"my server\" is not a name: 1 to 64 letters, digits, '_', '-' or '.'"
                    .to_owned()
            ),
            (
                -32602,
                "the inputSchema of s/echo is not a JSON Schema object".to_owned()
            ),
            (-32602, "s/echo is offered twice".to_owned()),
        ]
    );
    server.stop().await;
}
