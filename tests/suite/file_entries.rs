//! A project file's entry changes with the disk and through accepted proposals, never by a
//! client's write (the "first hour" issue, item 1): a client's body or state change of a file
//! entry is refused -32003 whatever form it takes, the entry keeps the disk's content, and the
//! run's proposal on that file is still pending and still applies.

use crate::support::{accept, entry, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::path::Path;
use tempfile::TempDir;

/// The model's edit of `f.txt` (`from` → `to`), then a status.
fn edit(from: &str, to: &str) -> String {
    format!(
        "<set path=\"f.txt\"><<<<<<< SEARCH\n{from}\n=======\n{to}\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>"
    )
}

const DONE: &str = "<update status=\"200\">done</update>";

/// Starts run `alias` in act mode on the bound project and answers its first proposal's path.
async fn proposed(client: &mut RpcClient, alias: &str) -> String {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "Edit f.txt", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let params = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal");
    params["proposed"][0]["path"]
        .as_str()
        .expect("a proposal has a path")
        .to_owned()
}

/// `f.txt` as run `run` holds it: its body and state.
async fn file_entry(client: &mut RpcClient, run: &str) -> (Value, Value) {
    let e = entry(client, run, "f.txt")
        .await
        .expect("f.txt is an entry");
    (e["body"].clone(), e["state"].clone())
}

fn read(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("f.txt")).unwrap()
}

/// The probe: a run waits on its edit of `f.txt`, and a client sends what `rummy reject RUN
/// f.txt --reason …` once sent (`set {path: "f.txt", state: "cancelled", body: reason}`), then
/// every other way of writing the file's entry: each is refused -32003 naming the file, the
/// entry keeps the disk's content, the proposal stays pending. Its visibility is still the
/// client's. The proposal then resolves by its own path and applies, and a later run edits the
/// file as the disk has it (no 409).
#[actix_rt::test]
async fn a_client_cannot_change_a_file_entrys_body_or_state() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(edit("real", "new")));
    server.provider.push(Reply::content(DONE));
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("f.txt"), "real\n").unwrap();
    let mut client = server.client().await;
    client
        .call(
            "rummy/hello",
            json!({ "name": "files", "projectRoot": dir.path().canonicalize().unwrap().display().to_string() }),
        )
        .await
        .unwrap();
    let proposal = proposed(&mut client, "r").await;
    client
        .call(
            "set",
            json!({ "run": "r", "path": "known://k", "body": "a fact" }),
        )
        .await
        .unwrap();

    let attempts = [
        (
            "set",
            json!({ "run": "r", "path": "f.txt", "state": "cancelled", "body": "not yet" }),
        ),
        (
            "set",
            json!({ "run": "r", "path": "f.txt", "state": "resolved" }),
        ),
        ("set", json!({ "run": "r", "path": "./f.txt", "body": "x" })),
        (
            "set",
            json!({ "run": "r", "path": "f.txt", "body": "x", "append": true }),
        ),
        (
            "set",
            json!({ "run": "r", "path": "*.txt", "pattern": true, "body": "x" }),
        ),
        (
            "set",
            json!({ "run": "r", "path": "*.txt", "pattern": true, "state": "failed" }),
        ),
        (
            "set",
            json!({ "run": "r", "path": "new.txt", "body": "not on disk" }),
        ),
        (
            "cp",
            json!({ "run": "r", "from": "known://k", "to": "f.txt" }),
        ),
        (
            "mv",
            json!({ "run": "r", "from": "known://k", "to": "f.txt" }),
        ),
    ];
    let mut refusals = Vec::new();
    for (method, params) in &attempts {
        let err = client.call_err(method, params.clone()).await;
        refusals.push((
            err.code,
            err.message.contains(".txt, a project file"),
            err.data.map(|d| d["kind"].clone()),
        ));
    }

    assert_eq!(
        refusals,
        vec![(-32003, true, Some(json!("permission"))); attempts.len()],
        "{attempts:?}"
    );
    assert_eq!(
        file_entry(&mut client, "r").await,
        (json!("real\n"), json!("resolved"))
    );
    assert!(entry(&mut client, "r", "new.txt").await.is_none());
    assert!(
        entry(&mut client, "r", "known://k").await.is_some(),
        "mv moved nothing"
    );
    let pending = entry(&mut client, "r", &proposal).await.unwrap();
    assert_eq!(pending["state"], json!("proposed"));
    for visibility in ["summarized", "visible"] {
        client
            .call(
                "set",
                json!({ "run": "r", "path": "f.txt", "visibility": visibility }),
            )
            .await
            .unwrap();
    }

    let answer = accept(&mut client, "r", &proposal).await;
    wait_status(&mut client, "r", 200).await;
    assert_eq!(
        (
            answer["state"].clone(),
            answer["outcome"].clone(),
            read(dir.path())
        ),
        (json!("resolved"), Value::Null, "new\n".to_owned())
    );
    assert_eq!(
        file_entry(&mut client, "r").await,
        (json!("new\n"), json!("resolved"))
    );

    server.provider.push(Reply::content(edit("new", "newer")));
    server.provider.push(Reply::content(DONE));
    let later = proposed(&mut client, "later").await;
    let answer = accept(&mut client, "later", &later).await;
    wait_status(&mut client, "later", 200).await;
    assert_eq!(
        (
            answer["state"].clone(),
            answer["outcome"].clone(),
            read(dir.path())
        ),
        (json!("resolved"), Value::Null, "newer\n".to_owned())
    );
    server.stop().await;
}
