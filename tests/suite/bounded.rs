//! Bounded answers and pushes: a long body is sent cut with its size and read whole with
//! `getBody`; a page that would pass `RUMMY_MAX_MESSAGE_BYTES` is refused -32007 with a count
//! that fits; a client's streamed output reaches watchers as appends, capped at
//! `RUMMY_COMMAND_OUTPUT_BYTES`, and the database grows by what was kept, not by each push.

use super::shell::{accept_next, project, proposing};
use crate::support::raw::RawSocket;
use crate::support::{self, database, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy::config::ShellRunner;
use rummy_store::location::Location;
use rummy_store::{notifications, runs};
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;

/// The default `RUMMY_INLINE_BODY_BYTES`.
const INLINE: usize = 256 * 1024;

/// A server with run `r` of project `p` concluded, and a client bound to the project.
async fn with_run(adjust: impl FnOnce(&mut rummy::config::Config)) -> (TestServer, RpcClient) {
    let server = TestServer::start_with(adjust).await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut client = server.project_client("p").await;
    client.set_timeout(Duration::from_secs(60));
    support::start_run(&mut client, "run://r", "hello").await;
    wait_status(&mut client, "r", 200).await;
    (server, client)
}

/// Writes `body` at `path` of run `r` as a client.
async fn write(client: &mut RpcClient, path: &str, body: &str) {
    client
        .call("set", json!({ "run": "r", "path": path, "body": body }))
        .await
        .unwrap();
}

/// A 1 MiB body is listed (getEntries) and shown (getRun) as its first 256 KiB, cut before the
/// character it would split, with `bodyBytes` and `bodyTruncated`; `getBody` reads it whole in
/// slices that never cut a character (and so does the client crate's `read_body`), and refuses an offset inside a character or past the
/// end (-32602) and an unknown path (-32004).
#[actix_rt::test]
async fn a_long_body_is_sent_cut_and_read_whole_in_slices() {
    let (server, mut client) = with_run(|_| {}).await;
    // "€" is three bytes: 256 KiB falls inside one, so the cut moves back to 262,143.
    let body = "€".repeat(1024 * 1024 / 3 + 1);
    assert_eq!(body.len(), 1_048_578);
    let path = "https://example.com/big";
    write(&mut client, path, &body).await;
    let cut = INLINE / 3 * 3;
    let listed = client
        .call(
            "getEntries",
            json!({ "run": "r", "pattern": path, "withBody": true }),
        )
        .await
        .unwrap();
    let item = &listed[0];
    assert_eq!(
        (
            item["body"].as_str().map(str::len),
            item["bodyBytes"].clone(),
            item["bodyTruncated"].clone()
        ),
        (Some(cut), json!(body.len()), json!(true))
    );
    let run = client.call("getRun", json!({ "run": "r" })).await.unwrap();
    let shown = run["history"]
        .as_array()
        .and_then(|h| h.iter().find(|e| e["path"] == json!(path)))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (
            shown["body"].as_str().map(str::len),
            shown["bodyBytes"].clone(),
            shown["bodyTruncated"].clone()
        ),
        (Some(cut), json!(body.len()), json!(true))
    );

    // Whole, in slices of at most 300,000 bytes, each ending on a character.
    let mut read = String::new();
    let mut slices = Vec::new();
    let mut next = Some(0_u64);
    while let Some(offset) = next {
        let slice = client
            .call(
                "getBody",
                json!({ "run": "r", "path": path, "offset": offset, "length": 300_000 }),
            )
            .await
            .unwrap();
        slices.push((slice["offset"].clone(), slice["bodyBytes"].clone()));
        read.push_str(slice["body"].as_str().unwrap());
        next = slice["next"].as_u64();
    }
    assert!(read == body, "the slices put together are the body");
    assert_eq!(
        slices,
        [0, 300_000, 600_000, 900_000].map(|o| (json!(o), json!(body.len())))
    );
    // The client crate reads it whole the same way.
    let mut typed = rummy_client::Client::connect(rummy_client::ClientOptions::new(server.url()))
        .await
        .unwrap();
    typed
        .hello(rummy_client::params::HelloParams {
            name: "p".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(typed.read_body("r", path).await.unwrap() == body);
    // A length shorter than a character still answers it whole.
    let one = client
        .call(
            "getBody",
            json!({ "run": "r", "path": path, "offset": 3, "length": 1 }),
        )
        .await
        .unwrap();
    assert_eq!(
        one,
        json!({ "path": path, "offset": 3, "body": "€", "bodyBytes": body.len(), "next": 6 })
    );
    let refused = [
        json!({ "run": "r", "path": path, "offset": 1 }),
        json!({ "run": "r", "path": path, "offset": body.len() + 1 }),
        json!({ "run": "r", "path": "https://example.com/none" }),
    ];
    let mut answers = Vec::new();
    for params in refused {
        let err = client.call_err("getBody", params).await;
        answers.push((err.code, err.message));
    }
    assert_eq!(
        answers,
        vec![
            (
                -32602,
                "invalid params: offset: 1 falls inside a character, which starts at byte 0"
                    .to_owned()
            ),
            (
                -32602,
                format!(
                    "invalid params: offset: {} is past the body's end: it has {} bytes",
                    body.len() + 1,
                    body.len()
                )
            ),
            (
                -32004,
                "no entry https://example.com/none in run \"r\"".to_owned()
            ),
        ]
    );
    server.stop().await;
}

/// A page of entries whose answer would pass `RUMMY_MAX_MESSAGE_BYTES` is refused -32007 with
/// `data.limit`, how many of them fit; asked with that limit, the page is answered.
#[actix_rt::test]
async fn a_page_over_the_message_limit_is_refused_with_a_count_that_fits() {
    let (server, mut client) = with_run(|c| c.limits.max_message_bytes = 1024 * 1024).await;
    for n in 0..8 {
        write(
            &mut client,
            &format!("https://example.com/{n}"),
            &"x".repeat(200_000),
        )
        .await;
    }
    let ask = |limit: Option<u64>| {
        let mut params = json!({ "run": "r", "scheme": "https", "withBody": true });
        if let Some(limit) = limit {
            params["limit"] = json!(limit);
        }
        params
    };
    let err = client.call_err("getEntries", ask(None)).await;
    let data = err.data.clone().unwrap_or_default();
    assert_eq!(
        (err.code, data["kind"].clone(), data["limit"].clone()),
        (-32007, json!("too_large"), json!(5))
    );
    let page = client.call("getEntries", ask(Some(5))).await.unwrap();
    assert_eq!(page.as_array().map(Vec::len), Some(5));
    // Without bodies the whole list fits.
    let bare = client
        .call("getEntries", json!({ "run": "r", "scheme": "https" }))
        .await
        .unwrap();
    assert_eq!(bare.as_array().map(Vec::len), Some(8));
    server.stop().await;
}

/// The SQLite database's file and log sizes in bytes; `None` on PostgreSQL.
fn database_bytes(location: &Location) -> Option<(u64, u64)> {
    let Location::Sqlite(path) = location else {
        return None;
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let size = |p: &std::ffi::OsStr| std::fs::metadata(p).map_or(0, |m| m.len());
    Some((size(path.as_os_str()), size(&wal)))
}

/// The bytes of every notification stored for run `cmd` of project `cmds`.
fn stored_notification_bytes(location: &Location) -> usize {
    let mut conn = database::connect(location);
    let project = rummy_store::projects::by_name(&mut conn, "cmds")
        .unwrap()
        .unwrap();
    let run = runs::by_alias(&mut conn, project.id, "cmd")
        .unwrap()
        .unwrap();
    notifications::since(&mut conn, run.id, 0, 100_000)
        .unwrap()
        .iter()
        .map(|n| n.params.len())
        .sum()
}

/// A raw watcher bound to project `cmds`: counts the bytes of every message it is sent. The
/// project's pushes may reach it as soon as the hello binds it, before the hello's answer (a
/// run of the project is streaming): those before the answer are passed over.
async fn watcher(port: u16) -> RawSocket {
    let mut socket = RawSocket::connect(port).await;
    socket
        .send_text(r#"{"jsonrpc":"2.0","id":1,"method":"rummy/hello","params":{"name":"cmds"}}"#)
        .await;
    let mut hello = socket.next_text().await;
    while hello.contains("\"method\"") {
        hello = socket.next_text().await;
    }
    assert!(hello.contains("\"result\""), "hello: {hello}");
    socket
}

/// The bytes of the text messages `socket` is sent until none comes for a second.
async fn bytes_until_quiet(socket: &mut RawSocket) -> (usize, Vec<Value>) {
    let mut total = 0;
    let mut states = Vec::new();
    while let Ok(text) = tokio::time::timeout(Duration::from_secs(1), socket.next_text()).await {
        total += text.len();
        let message: Value = serde_json::from_str(&text).unwrap_or_default();
        if message["method"] == json!("run/state") {
            states.push(message["params"].clone());
        }
    }
    (total, states)
}

/// 40 chunks of 100 KB streamed by the client running a command reach a watcher as appends
/// (`append: true`, `offset`, only the new text), the channel capped at
/// `RUMMY_COMMAND_OUTPUT_BYTES` (64 KiB) as a command the server runs is: the watcher is sent
/// about the cap once, not the growing body forty times, and the pushes stored for replay and
/// the database grow by about the cap too.
#[actix_rt::test]
async fn streamed_chunks_reach_a_watcher_as_appends_bounded_by_the_cap() {
    let server = TestServer::start_with(|c| c.shell.runner = ShellRunner::Client).await;
    let cap = 64 * 1024;
    let (_dir, root) = project();
    let mut client = proposing(&server.url(), &server.provider, &root, "<sh>make</sh>").await;
    let path = accept_next(&mut client, "client").await;
    let mut watch = watcher(server.port()).await;
    let _ = bytes_until_quiet(&mut watch).await;
    let location = server.database();
    let (db_before, stored_before) = (
        database_bytes(&location),
        stored_notification_bytes(&location),
    );
    let chunk = "x".repeat(100_000);
    for _ in 0..40 {
        client
            .call(
                "stream",
                json!({ "run": "cmd", "path": path, "channel": 1, "chunk": chunk }),
            )
            .await
            .unwrap();
    }
    client
        .call(
            "stream/completed",
            json!({ "run": "cmd", "path": path, "exitCode": 0 }),
        )
        .await
        .unwrap();
    let (sent, states) = bytes_until_quiet(&mut watch).await;
    let stdout = format!("{path}_1");
    let items: Vec<Value> = states
        .iter()
        .flat_map(|s| s["history"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["path"] == json!(stdout))
        .map(|e| {
            json!([
                e["append"],
                e["offset"],
                e["body"].as_str().map(str::len),
                e["state"]
            ])
        })
        .collect();
    let marker = rummy_core::shell::output::capped_marker(cap);
    assert_eq!(
        items,
        vec![
            json!([true, 0, cap + marker.len(), "streaming"]),
            json!([true, cap + marker.len(), 0, "resolved"]),
        ]
    );
    wait_status(&mut client, "cmd", 200).await;
    // The log copied into the file (the store checkpoints every 200 ms).
    actix_rt::time::sleep(Duration::from_secs(1)).await;
    let stored = stored_notification_bytes(&location) - stored_before;
    let after = database_bytes(&location);
    eprintln!(
        "bounded: 40 x 100 KB stream chunks: {sent} bytes sent to a watcher, {stored} bytes of \
         stored notifications; database file and log (bytes) before {db_before:?}, after \
         {after:?} (cap {cap})"
    );
    assert!(sent < 2 * cap, "a watcher was sent {sent} bytes");
    assert!(stored < 2 * cap, "{stored} bytes of notifications stored");
    if let (Some((file_before, _)), Some((file_after, _))) = (db_before, after) {
        // What the run keeps: the channel (the cap), its push, and the model's next request
        // and its audit, which read the output.
        let grown = file_after.saturating_sub(file_before);
        assert!(
            grown < 8 * cap as u64,
            "the database file grew {grown} bytes"
        );
    }
    server.stop().await;
}

/// The output of a command the server runs reaches watchers as appends too: put together at
/// their offsets, after the empty channel the accept opened, they are the output.
#[actix_rt::test]
async fn server_run_output_reaches_a_watcher_as_appends() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        "<sh>echo one; sleep 0.3; echo two</sh>",
    )
    .await;
    let mut watch = watcher(server.port()).await;
    let path = accept_next(&mut client, "server").await;
    wait_status(&mut client, "cmd", 200).await;
    let (_, states) = bytes_until_quiet(&mut watch).await;
    let stdout = format!("{path}_1");
    let mut kept = String::new();
    let mut appends = 0;
    for item in states
        .iter()
        .flat_map(|s| s["history"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["path"] == json!(stdout))
    {
        let body = item["body"].as_str().unwrap_or_default();
        if item["append"] == json!(true) {
            // Each append goes where the text held so far ends.
            assert_eq!(item["offset"], json!(kept.len()), "{item}");
            kept.push_str(body);
            appends += 1;
        } else {
            // The channel as the accept opened it: empty.
            kept = body.to_owned();
        }
    }
    assert_eq!((kept.as_str(), appends > 1), ("one\ntwo\n", true));
    server.stop().await;
}
