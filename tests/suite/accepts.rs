//! Accepting proposals against a hostile disk: writes stay inside the project root, a FIFO stalls neither the accept nor the store's writer, and a proposal accepted twice at once is applied once.

use crate::support::{self, accept, start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The model's edit of `b.txt` (`old` → `new`), then a status.
const EDIT_B: &str = "<set path=\"b.txt\"><<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>";
const DONE: &str = "<update status=\"200\">done</update>";

/// A project holding `b.txt` = "old\n".
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("b.txt"), "old\n").unwrap();
    dir
}

async fn hello(server: &TestServer, name: &str, root: &Path) -> RpcClient {
    let mut client = server.client().await;
    client
        .call(
            "rummy/hello",
            json!({ "name": name, "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    client
}

/// Starts run `alias` in act mode and answers the path of its first proposal.
async fn proposed(client: &mut RpcClient, alias: &str) -> String {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "Edit b.txt", "attributes": { "model": "fast", "mode": "act" } }),
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

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}

/// The probe: a symlink planted at the temporary name the server once used (`.b.txt.rummy-tmp`
/// → a file outside the project) does not redirect an accepted edit of `b.txt`. The edit is
/// applied (its temporary file has a fresh name and is created exclusively, so a planted name
/// can never be followed), the outside file keeps its content, and the planted link stays.
#[actix_rt::test]
async fn a_planted_temporary_symlink_does_not_redirect_an_accepted_edit() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let (dir, outside) = (project(), TempDir::new().unwrap());
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "victim\n").unwrap();
    let planted = dir.path().join(".b.txt.rummy-tmp");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let mut client = hello(&server, "probe", dir.path()).await;
    let path = proposed(&mut client, "probe").await;

    let answer = accept(&mut client, "probe", &path).await;
    wait_status(&mut client, "probe", 200).await;

    assert_eq!(
        (answer["state"].clone(), answer["outcome"].clone()),
        (json!("resolved"), Value::Null)
    );
    assert_eq!(
        (
            read(dir.path(), "b.txt"),
            read(outside.path(), "victim.txt"),
            std::fs::read_link(&planted).unwrap()
        ),
        ("new\n".to_owned(), "victim\n".to_owned(), victim.clone())
    );
    server.stop().await;
}

/// A FIFO where the edit lands is refused at once (403 `permission`, "is not a regular file")
/// and left alone; while that accept is answered, a run starts in another project, which needs
/// the store's writer: no file I/O blocks the writer.
#[actix_rt::test]
async fn a_fifo_target_fails_at_once_and_blocks_no_other_write() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    let dir = project();
    let mut client = hello(&server, "fifo", dir.path()).await;
    let path = proposed(&mut client, "fifo").await;
    // The resumed turn and the other project's first turn, in either order.
    server.provider.push(Reply::content(DONE));
    server.provider.push(Reply::content(DONE));
    let other_dir = project();
    let mut other = hello(&server, "elsewhere", other_dir.path()).await;
    let fifo = dir.path().join("b.txt");
    std::fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    let started = Instant::now();
    let id = client
        .send_request(
            "set",
            json!({ "run": "fifo", "path": path, "state": "resolved" }),
        )
        .await
        .unwrap();
    let other_alias = start_run(&mut other, "run://other", "Say hi").await;
    let other_started = started.elapsed();
    let answer = client.response_for(id).await.unwrap();
    let answered = started.elapsed();

    assert!(
        answered < Duration::from_secs(1) && other_started < Duration::from_secs(1),
        "accept answered after {answered:?}, the other run started after {other_started:?}"
    );
    assert_eq!(
        (answer["state"].clone(), answer["outcome"].clone()),
        (json!("failed"), json!("permission"))
    );
    wait_status(&mut client, "fifo", 200).await;
    wait_status(&mut other, &other_alias, 200).await;
    let stored = support::entry(&mut client, "fifo", &path).await.unwrap();
    assert_eq!(
        (stored["state"].clone(), stored["body"].clone()),
        (
            json!("failed"),
            json!("refused: b.txt is not a regular file (it is a FIFO)")
        )
    );
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    server.stop().await;
}

/// Two accepts of one proposal sent at once: it is applied once (the turn resumes once, the
/// file is written), and the second is answered 409 "already resolved".
#[actix_rt::test]
async fn a_proposal_accepted_twice_at_once_is_applied_once() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_B));
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let mut client = hello(&server, "twice", dir.path()).await;
    let path = proposed(&mut client, "twice").await;
    let params = json!({ "run": "twice", "path": path, "state": "resolved" });

    let first = client.send_request("set", params.clone()).await.unwrap();
    let second = client.send_request("set", params).await.unwrap();
    let answers = [
        client.response_for(first).await,
        client.response_for(second).await,
    ];
    wait_status(&mut client, "twice", 200).await;

    let mut resolved = Vec::new();
    let mut refused = Vec::new();
    for answer in answers {
        match answer {
            Ok(result) => resolved.push(result["state"].clone()),
            Err(err) => {
                let err = err.into_rpc();
                refused.push((err.code, err.message.contains("already resolved")));
            }
        }
    }
    assert_eq!(
        (resolved, refused),
        (vec![json!("resolved")], vec![(-32005, true)])
    );
    assert_eq!(
        (
            server.provider.chat_requests().len(),
            read(dir.path(), "b.txt")
        ),
        (2, "new\n".to_owned()),
        "the turn resumed once"
    );
    server.stop().await;
}

/// A client that accepts a proposal the moment its `run/proposal` arrives is answered with the
/// resolution, never "not a pending proposal": the announcement leaves the turn before the
/// turn's end reaches the run, so an accept in between waits for that end. Twenty runs, each
/// accepted at once (the window is narrow: under load the CLI's tests fell into it, 2 of 4 full
/// runs, before the accept waited).
#[actix_rt::test]
async fn a_proposal_accepted_the_moment_it_is_announced_is_applied() {
    let server = TestServer::start().await;
    for i in 0..20 {
        server.provider.push(Reply::content(EDIT_B));
        server.provider.push(Reply::content(DONE));
        let dir = project();
        let alias = format!("quick{i}");
        let mut client = hello(&server, &alias, dir.path()).await;
        let path = proposed(&mut client, &alias).await;

        let answer = accept(&mut client, &alias, &path).await;
        wait_status(&mut client, &alias, 200).await;

        assert_eq!(
            (answer["state"].clone(), read(dir.path(), "b.txt")),
            (json!("resolved"), "new\n".to_owned()),
            "run {alias}"
        );
    }
}

/// A file whose name takes all 255 bytes a name may have is edited: the model's proposal is
/// accepted and applied (the temporary file beside it has a short name of its own; one named
/// after the file would pass the limit), and nothing else is left in the project.
#[actix_rt::test]
async fn an_edit_of_a_file_with_a_255_byte_name_is_applied() {
    let name = format!("{}.txt", "n".repeat(251));
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "<set path=\"{name}\"><<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>"
    )));
    server.provider.push(Reply::content(DONE));
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join(&name), "old\n").unwrap();
    let mut client = hello(&server, "long", dir.path()).await;
    let path = proposed(&mut client, "long").await;

    let answer = accept(&mut client, "long", &path).await;
    wait_status(&mut client, "long", 200).await;

    let files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        (
            name.len(),
            answer["state"].clone(),
            answer["outcome"].clone(),
            read(dir.path(), &name),
            files
        ),
        (
            255,
            json!("resolved"),
            Value::Null,
            "new\n".to_owned(),
            vec![name.clone()]
        )
    );
    server.stop().await;
}
