//! What is approved is what is applied: a pending proposal is fixed once `run/proposal` announces
//! it (a client's change of its body, attributes or state other than resolving it is refused
//! -32003), `run/proposal` and the entry views carry its hash, an accept whose `approves` is not
//! that hash is refused -32005, and a command the server runs takes no client's output, exit or
//! accept body.

use crate::support::{self, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_store::approval::hash;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tempfile::TempDir;

/// The model's edit of `b.txt` (`old` → `new`), then a status.
const EDIT_B: &str = "<set path=\"b.txt\"><<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>";
const DONE: &str = "<update status=\"200\">done</update>";

/// A project holding `b.txt` = "old\n" (its real path, as the server stores it).
fn project() -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("b.txt"), "old\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// A client bound to `root` that starts run `alias` in act mode; answers it with the first
/// proposal `run/proposal` announces.
async fn proposing(
    server: &TestServer,
    root: &Path,
    alias: &str,
    prompt: &str,
) -> (RpcClient, Value) {
    let mut client = RpcClient::connect(&server.url()).await.unwrap();
    client.set_timeout(Duration::from_secs(20));
    client
        .call(
            "rummy/hello",
            json!({ "name": "approvals", "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": prompt, "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal")["proposed"][0]
        .clone();
    (client, proposed)
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The probe: with an edit of `b.txt` pending, a client rewrites what it would write every way
/// a `set` (or a `cp` onto its path) can — its attributes' `content`, its body, an accept that
/// carries attributes, a pattern's state — and each is refused -32003 (`permission`). The
/// proposal still shows `-old +new` with the hash `run/proposal` announced, and the accept
/// writes `new`, not `BACKDOOR`.
#[actix_rt::test]
async fn a_client_cannot_change_a_pending_proposal() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "edit", "Edit b.txt").await;
    let path = text(&proposed["path"]);
    client
        .call(
            "set",
            json!({ "run": "edit", "path": "known://payload", "body": "BACKDOOR\n" }),
        )
        .await
        .unwrap();

    let backdoor = json!({ "content": "BACKDOOR\n", "patch": "-old\n+new\n" });
    let attempts = [
        json!({ "run": "edit", "path": path, "attributes": backdoor }),
        json!({ "run": "edit", "path": path, "body": "-old\n+new\n", "attributes": { "kind": "edit", "path": "b.txt", "content": "BACKDOOR\n", "commandIndex": 0 } }),
        json!({ "run": "edit", "path": path, "body": "-old\n+BACKDOOR\n" }),
        json!({ "run": "edit", "path": path, "body": "\n", "append": true }),
        json!({ "run": "edit", "path": path, "state": "resolved", "attributes": backdoor }),
        json!({ "run": "edit", "path": path, "pattern": true, "attributes": backdoor }),
        json!({ "run": "edit", "path": path, "pattern": true, "state": "resolved" }),
    ];
    let mut refusals = Vec::new();
    for params in &attempts {
        let err = client.call_err("set", params.clone()).await;
        refusals.push((err.code, err.data.map(|d| d["kind"].clone())));
    }
    let copy = client
        .call_err(
            "cp",
            json!({ "run": "edit", "from": "known://payload", "to": path }),
        )
        .await;
    refusals.push((copy.code, copy.data.map(|d| d["kind"].clone())));

    assert_eq!(
        refusals,
        vec![(-32003, Some(json!("permission"))); attempts.len() + 1]
    );
    let stored = support::entry(&mut client, "edit", &path).await.unwrap();
    assert_eq!(
        (
            stored["state"].clone(),
            stored["body"].clone(),
            stored["attributes"]["content"].clone(),
            stored["hash"].clone(),
        ),
        (
            json!("proposed"),
            proposed["body"].clone(),
            json!("new\n"),
            proposed["hash"].clone()
        )
    );
    accept_applies_the_edit(&mut client, "edit", &path, &proposed["hash"], &root).await;
    server.stop().await;
}

/// Accepts `path` of `run` approving `hash`, waits for the loop's end, and checks that the
/// proposed edit of b.txt (`new`) was applied.
async fn accept_applies_the_edit(
    client: &mut RpcClient,
    run: &str,
    path: &str,
    hash: &Value,
    root: &Path,
) {
    let answer = client
        .call(
            "set",
            json!({ "run": run, "path": path, "state": "resolved", "approves": hash }),
        )
        .await
        .unwrap();
    wait_status(client, run, 200).await;
    assert_eq!(
        (
            answer["state"].clone(),
            std::fs::read_to_string(root.join("b.txt")).unwrap()
        ),
        (json!("resolved"), "new\n".to_owned())
    );
}

/// An accept whose `approves` is not the proposal's hash is refused -32005 (`conflict`), naming
/// both hashes, and nothing is applied; `approves` on an entry that is no proposal is refused
/// -32602; the accept that approves the right hash applies the edit.
#[actix_rt::test]
async fn an_accept_applies_only_the_proposal_it_approves() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "approve", "Edit b.txt").await;
    let (path, right) = (text(&proposed["path"]), text(&proposed["hash"]));
    let wrong = "0".repeat(64);

    let refused = client
        .call_err(
            "set",
            json!({ "run": "approve", "path": path, "state": "resolved", "approves": wrong }),
        )
        .await;
    let elsewhere = client
        .call_err(
            "set",
            json!({ "run": "approve", "path": "known://note", "body": "x", "approves": right }),
        )
        .await;

    assert_eq!(
        (
            refused.code,
            refused.data.map(|d| d["kind"].clone()),
            refused.message.contains(&right) && refused.message.contains(&wrong),
            elsewhere.code,
        ),
        (-32005, Some(json!("conflict")), true, -32602)
    );
    let stored = support::entry(&mut client, "approve", &path).await.unwrap();
    assert_eq!(
        (
            stored["state"].clone(),
            std::fs::read_to_string(root.join("b.txt")).unwrap()
        ),
        (json!("proposed"), "old\n".to_owned())
    );
    accept_applies_the_edit(&mut client, "approve", &path, &json!(right), &root).await;
    server.stop().await;
}

/// `run/proposal` carries each proposal's hash: the core's hash of what it announces (its
/// attributes and body), the same `getEntries` and `getRun` show while it is pending; once
/// resolved, the entry carries none.
#[actix_rt::test]
async fn run_proposal_carries_the_hash_of_what_it_does() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "hashed", "Edit b.txt").await;
    let path = text(&proposed["path"]);
    let computed = hash(&proposed["attributes"], proposed["body"].as_str().unwrap());

    let listed = support::entry(&mut client, "hashed", &path).await.unwrap();
    let snapshot = client
        .call("getRun", json!({ "run": "hashed" }))
        .await
        .unwrap();
    let item = snapshot["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == json!(path))
        .cloned()
        .unwrap();
    assert_eq!(
        (
            proposed["hash"].clone(),
            listed["hash"].clone(),
            item["hash"].clone()
        ),
        (json!(computed), json!(computed), json!(computed))
    );
    support::accept(&mut client, "hashed", &path).await;
    wait_status(&mut client, "hashed", 200).await;
    let resolved = support::entry(&mut client, "hashed", &path).await.unwrap();
    assert_eq!(resolved.get("hash"), None);
    server.stop().await;
}

/// A command the server runs speaks for itself: while it runs, a client's `stream` into its
/// channel, `stream/completed {exitCode: 0}` and `stream/aborted` are refused -32003
/// (`permission`), and the accept's body is ignored; the channels hold the real output and
/// the real exit (3), the model reads them, and nothing the client sent.
#[actix_rt::test]
async fn a_client_cannot_speak_for_a_command_the_server_runs() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<sh>echo real; sleep 1; exit 3</sh>\n<update status=\"102\">running it</update>",
    ));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "cmd", "Run it").await;
    let path = text(&proposed["path"]);
    assert_eq!(proposed["attributes"]["runner"], json!("server"));
    client
        .call(
            "set",
            json!({ "run": "cmd", "path": path, "state": "resolved", "body": "FAKE OUTPUT", "approves": proposed["hash"] }),
        )
        .await
        .unwrap();

    let attempts = [
        (
            "stream",
            json!({ "run": "cmd", "path": path, "channel": 1, "chunk": "all tests pass\n" }),
        ),
        (
            "stream/completed",
            json!({ "run": "cmd", "path": path, "exitCode": 0 }),
        ),
        (
            "stream/aborted",
            json!({ "run": "cmd", "path": path, "reason": "fake" }),
        ),
    ];
    let mut refusals = Vec::new();
    for (method, params) in &attempts {
        let err = client.call_err(method, params.clone()).await;
        refusals.push((err.code, err.data.map(|d| d["kind"].clone())));
    }
    wait_status(&mut client, "cmd", 200).await;

    assert_eq!(
        refusals,
        vec![(-32003, Some(json!("permission"))); attempts.len()]
    );
    let channel = support::entry(&mut client, "cmd", &format!("{path}_1"))
        .await
        .unwrap();
    assert_eq!(
        (
            channel["state"].clone(),
            channel["outcome"].clone(),
            channel["body"].clone()
        ),
        (json!("failed"), json!("exit:3"), json!("real\n"))
    );
    let log = support::entry(&mut client, "cmd", &path).await.unwrap();
    assert_eq!(log["attributes"]["exitCode"], json!(3));
    assert!(
        !log["body"].as_str().unwrap().contains("FAKE"),
        "the accept's body is no output: {log}"
    );
    let next = server.provider.chat_requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        next.contains("real\n") && !next.contains("FAKE") && !next.contains("all tests pass"),
        "{next}"
    );
    server.stop().await;
}

/// `stream/cancel` still stops a command the server runs: its channels are cancelled with the
/// reason, and the loop goes on.
#[actix_rt::test]
async fn stream_cancel_still_stops_a_command_the_server_runs() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<sh>echo started; sleep 30</sh>\n<update status=\"102\">running it</update>",
    ));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "cmd", "Run it").await;
    let path = text(&proposed["path"]);
    support::accept(&mut client, "cmd", &path).await;

    let answer = client
        .call(
            "stream/cancel",
            json!({ "run": "cmd", "path": path, "reason": "too slow" }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 200).await;

    let channel = support::entry(&mut client, "cmd", &format!("{path}_1"))
        .await
        .unwrap();
    assert_eq!(
        (
            answer["channels"].clone(),
            channel["state"].clone(),
            channel["outcome"].clone()
        ),
        (
            json!([format!("{path}_1"), format!("{path}_2")]),
            json!("cancelled"),
            json!("too slow")
        )
    );
    server.stop().await;
}

/// A tool's proposal says its kind in `proposal` — in `run/proposal`, `getEntries` and
/// `getRun` — beside the `commandIndex` attribute that marks it, and keeps both once resolved;
/// no other entry has a `proposal`. A state or visibility word the server does not know in a
/// call's params is refused -32602 naming the param, and nothing changes.
#[actix_rt::test]
async fn a_proposal_says_its_kind_and_unknown_words_in_params_are_refused() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let (_dir, root) = project();
    let (mut client, proposed) = proposing(&server, &root, "kind", "Edit b.txt").await;
    let path = text(&proposed["path"]);
    let refused =
        |e: rummy_testkit::RpcError| (e.code, e.data.unwrap_or_default()["param"].clone());
    let state = client
        .call_err(
            "set",
            json!({ "run": "kind", "path": path, "state": "pondering" }),
        )
        .await;
    let visibility = client
        .call_err(
            "getEntries",
            json!({ "run": "kind", "visibility": "hidden" }),
        )
        .await;
    // The proposal's kind, and how many other entries claim one.
    let kinds = |entries: &Value| {
        let entries = entries.as_array().cloned().unwrap_or_default();
        let mine: Vec<(Value, Value, Value)> = entries
            .iter()
            .filter(|e| e["path"] == json!(path))
            .map(|e| {
                (
                    e["state"].clone(),
                    e["proposal"].clone(),
                    e["attributes"]["commandIndex"].clone(),
                )
            })
            .collect();
        let others = entries
            .iter()
            .filter(|e| e["path"] != json!(path) && e.get("proposal").is_some())
            .count();
        (mine, others)
    };
    let pending = client
        .call("getEntries", json!({ "run": "kind" }))
        .await
        .unwrap();
    accept_applies_the_edit(&mut client, "kind", &path, &proposed["hash"], &root).await;
    let snapshot = client
        .call("getRun", json!({ "run": "kind" }))
        .await
        .unwrap();
    assert_eq!(
        (
            proposed["proposal"].clone(),
            proposed["attributes"]["commandIndex"].clone(),
            refused(state),
            refused(visibility),
            kinds(&pending),
            kinds(&snapshot["history"]),
        ),
        (
            json!("edit"),
            json!(0),
            (-32602, json!("state")),
            (-32602, json!("visibility")),
            (vec![(json!("proposed"), json!("edit"), json!(0))], 0),
            (vec![(json!("resolved"), json!("edit"), json!(0))], 0),
        )
    );
    server.stop().await;
}
