//! Project-level behaviour: files as entries, file constraints, skills, personas, the RPC log, limits and health.

use crate::support::{start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use tempfile::TempDir;

fn project_dir() -> TempDir {
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("README.md"), "# demo\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/build.txt"), "artifact").unwrap();
    std::fs::write(root.join(".env"), "OPENAI_API_KEY=sk-live").unwrap();
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

fn system(server: &TestServer, index: usize) -> String {
    server.provider.chat_requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn file_entries(client: &mut RpcClient, run: &str) -> Vec<(String, String, String)> {
    let list = client
        .call(
            "getEntries",
            json!({ "run": run, "scheme": "file", "withBody": true }),
        )
        .await
        .unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (s("path"), s("visibility"), s("body"))
        })
        .collect()
}

/// hello turns the project's text files into entries (not ignored, hidden or built files); runs see them summarized, and edits on disk reach the next loop.
#[actix_rt::test]
async fn project_files_become_entries() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let dir = project_dir();
    let mut client = hello(&server, "files", dir.path()).await;
    let alias = start_run(&mut client, "run://f", "What is here?").await;
    wait_status(&mut client, &alias, 200).await;
    assert_eq!(
        file_entries(&mut client, &alias).await,
        vec![
            (
                "README.md".to_owned(),
                "summarized".to_owned(),
                "# demo\n".to_owned()
            ),
            (
                "src/main.rs".to_owned(),
                "summarized".to_owned(),
                "fn main() {}\n".to_owned()
            ),
        ]
    );
    let first = system(&server, 0);
    assert!(first.contains("<file path=\"README.md\" status=\"200\" summary=\"\" visibility=\"summarized\" tokens=\"4\"/>"), "{first}");
    assert!(
        !first.contains("path=\".env\"")
            && !first.contains("sk-live")
            && !first.contains("path=\"target/"),
        "{first}"
    );

    std::fs::write(dir.path().join("README.md"), "# demo, renamed\n").unwrap();
    let files = next_loop(&mut client, &alias, 2).await;
    assert_eq!(files[0].2, "# demo, renamed\n");
    server.stop().await;
}

/// Runs one more loop of `run` (one turn, ending turn `turn`) and returns its file entries.
async fn next_loop(client: &mut RpcClient, run: &str, turn: i64) -> Vec<(String, String, String)> {
    client
        .call(
            "set",
            json!({ "path": format!("run://{run}"), "body": "And now?" }),
        )
        .await
        .unwrap();
    client
        .wait_for_notification("run/state", crate::support::WAIT, |p| {
            p["status"] == json!(200) && p["turn"] == json!(turn)
        })
        .await
        .unwrap();
    file_entries(client, run).await
}

/// Path and body of each file entry, by path.
fn paths_and_bodies(files: &[(String, String, String)]) -> Vec<(&str, &str)> {
    let mut files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, _, b)| (p.as_str(), b.as_str()))
        .collect();
    files.sort_unstable();
    files
}

/// Whatever happens to the project's files between loops — an edit, a new file in a new
/// directory, an edit inside that directory, a removal, a rename — the next loop's entries
/// show it, whether the server watches the project's directories (`RUMMY_WATCH_FILES`) or walks
/// them at every loop start.
async fn changes_reach_the_next_loop(watch_files: bool) {
    let server = TestServer::start_with(move |c| c.watch_files = watch_files).await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let dir = project_dir();
    let root = dir.path();
    let mut client = hello(&server, "changes", root).await;
    let alias = start_run(&mut client, "run://c", "Look").await;
    wait_status(&mut client, &alias, 200).await;
    let unchanged = vec![("README.md", "# demo\n"), ("src/main.rs", "fn main() {}\n")];
    assert_eq!(
        paths_and_bodies(&file_entries(&mut client, &alias).await),
        unchanged
    );
    assert_eq!(
        paths_and_bodies(&next_loop(&mut client, &alias, 2).await),
        unchanged
    );

    std::fs::write(root.join("src/main.rs"), "fn main() { run() }\n").unwrap();
    assert_eq!(
        paths_and_bodies(&next_loop(&mut client, &alias, 3).await),
        vec![
            ("README.md", "# demo\n"),
            ("src/main.rs", "fn main() { run() }\n")
        ]
    );

    std::fs::create_dir_all(root.join("docs/guide")).unwrap();
    std::fs::write(root.join("docs/guide/intro.md"), "Hello\n").unwrap();
    assert_eq!(
        paths_and_bodies(&next_loop(&mut client, &alias, 4).await),
        vec![
            ("README.md", "# demo\n"),
            ("docs/guide/intro.md", "Hello\n"),
            ("src/main.rs", "fn main() { run() }\n")
        ]
    );

    std::fs::write(root.join("docs/guide/intro.md"), "Hello again\n").unwrap();
    let files = next_loop(&mut client, &alias, 5).await;
    assert_eq!(
        paths_and_bodies(&files)[1],
        ("docs/guide/intro.md", "Hello again\n")
    );

    std::fs::remove_file(root.join("README.md")).unwrap();
    std::fs::rename(root.join("src/main.rs"), root.join("src/lib.rs")).unwrap();
    assert_eq!(
        paths_and_bodies(&next_loop(&mut client, &alias, 6).await),
        vec![
            ("docs/guide/intro.md", "Hello again\n"),
            ("src/lib.rs", "fn main() { run() }\n")
        ]
    );
    server.stop().await;
}

#[actix_rt::test]
async fn changes_on_disk_reach_the_next_loop_when_watched() {
    changes_reach_the_next_loop(true).await;
}

#[actix_rt::test]
async fn changes_on_disk_reach_the_next_loop_when_walked() {
    changes_reach_the_next_loop(false).await;
}

/// Constraints make files start visible or keep them out; absolute patterns are made relative; escapes and bad kinds are refused.
#[actix_rt::test]
async fn constraints_shape_what_runs_see() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let dir = project_dir();
    let mut client = hello(&server, "cons", dir.path()).await;
    let abs = format!("{}/src/*.rs", dir.path().display());
    let set = client
        .call(
            "file/constraint",
            json!({ "pattern": abs, "visibility": "active" }),
        )
        .await
        .unwrap();
    assert_eq!(set, json!({ "ok": true, "pattern": "src/*.rs" }));
    client
        .call(
            "file/constraint",
            json!({ "pattern": "README.md", "visibility": "ignore" }),
        )
        .await
        .unwrap();
    assert_eq!(
        client.call("getConstraints", json!({})).await.unwrap(),
        json!([{ "pattern": "src/*.rs", "visibility": "active" }, { "pattern": "README.md", "visibility": "ignore" }])
    );
    let err = client
        .call_err(
            "file/constraint",
            json!({ "pattern": "../outside", "visibility": "active" }),
        )
        .await;
    assert_eq!(err.code, -32602);
    let err = client
        .call_err(
            "file/constraint",
            json!({ "pattern": "/etc/passwd", "visibility": "active" }),
        )
        .await;
    assert_eq!(err.code, -32602);
    let err = client
        .call_err(
            "file/constraint",
            json!({ "pattern": "x", "visibility": "hidden" }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: visibility: expected active, readonly or ignore"
        )
    );

    let alias = start_run(&mut client, "run://c", "Look").await;
    wait_status(&mut client, &alias, 200).await;
    assert_eq!(
        file_entries(&mut client, &alias).await,
        vec![(
            "src/main.rs".to_owned(),
            "visible".to_owned(),
            "fn main() {}\n".to_owned()
        )]
    );
    assert!(system(&server, 0).contains(">fn main() {}\n</file>"));

    client
        .call("file/drop", json!({ "pattern": "README.md" }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call_err("file/drop", json!({ "pattern": "README.md" }))
            .await
            .code,
        -32004
    );
    server.stop().await;
}

/// A noRepo run gets no file entries.
#[actix_rt::test]
async fn no_repo_runs_skip_files() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let dir = project_dir();
    let mut client = hello(&server, "norepo", dir.path()).await;
    client
        .call("set", json!({ "path": "run://n", "body": "Hi", "attributes": { "model": "fast", "noRepo": true } }))
        .await
        .unwrap();
    wait_status(&mut client, "n", 200).await;
    assert_eq!(file_entries(&mut client, "n").await, vec![]);
    assert!(!system(&server, 0).contains("<file "));
    server.stop().await;
}

/// Skills come from $RUMMY_HOME/skills into skill://<name>; personas from $RUMMY_HOME/personas or as text.
#[actix_rt::test]
async fn skills_and_personas() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    std::fs::create_dir_all(server.home().join("skills")).unwrap();
    std::fs::write(server.home().join("skills/rust.md"), "Prefer iterators.").unwrap();
    std::fs::create_dir_all(server.home().join("personas")).unwrap();
    std::fs::write(
        server.home().join("personas/terse.md"),
        "Answer in one line.",
    )
    .unwrap();
    let mut client = server.project_client("sk").await;
    let skills = client.call("listSkills", json!({})).await.unwrap();
    assert_eq!(skills[0]["name"], json!("rust"));
    assert_eq!(
        client.call("listPersonas", json!({})).await.unwrap()[0]["name"],
        json!("terse")
    );

    let alias = start_run(&mut client, "run://s", "One").await;
    wait_status(&mut client, &alias, 200).await;
    client
        .call("skill/add", json!({ "run": alias, "name": "rust" }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call("getSkills", json!({ "run": alias }))
            .await
            .unwrap(),
        json!([{ "name": "rust", "state": "resolved", "active": true, "description": null,
                 "whenToUse": null, "allowedTools": null, "paths": [], "memoryScope": null }])
    );
    client
        .call("persona/set", json!({ "run": alias, "name": "terse" }))
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://s", "body": "Two" }))
        .await
        .unwrap();
    client
        .wait_for_notification("run/state", crate::support::WAIT, |p| {
            p["status"] == json!(200) && p["turn"] == json!(2)
        })
        .await
        .unwrap();
    let second = system(&server, 1);
    assert!(second.contains("<skill path=\"skill://rust\""), "{second}");
    assert!(
        second.contains("## Persona\n\nAnswer in one line."),
        "{second}"
    );

    assert_eq!(
        client
            .call_err("skill/add", json!({ "run": alias, "name": "missing" }))
            .await
            .code,
        -32004
    );
    assert_eq!(
        client
            .call_err(
                "skill/add",
                json!({ "run": alias, "name": "../etc/passwd" })
            )
            .await
            .code,
        -32602
    );
    client
        .call("skill/remove", json!({ "run": alias, "name": "rust" }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call("getSkills", json!({ "run": alias }))
            .await
            .unwrap(),
        json!([])
    );
    assert_eq!(
        client
            .call_err("skill/remove", json!({ "run": alias, "name": "rust" }))
            .await
            .code,
        -32004
    );
    client
        .call("persona/set", json!({ "run": alias, "text": "Be kind." }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call("getRun", json!({ "run": alias }))
            .await
            .unwrap()["persona"],
        json!("Be kind.")
    );
    client
        .call("persona/set", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call("getRun", json!({ "run": alias }))
            .await
            .unwrap()["persona"],
        json!(null)
    );
    server.stop().await;
}

/// Every call is recorded in rpc_log with its outcome; secrets are redacted.
#[actix_rt::test]
async fn rpc_log_records_calls_without_secrets() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .call(
            "rummy/hello",
            json!({ "name": "log", "projectRoot": server.project_root("log") }),
        )
        .await
        .unwrap();
    // Entry attributes are free-form: the one place a client may send a field named like a
    // secret (every params object refuses fields its method does not know).
    client
        .call(
            "update",
            json!({ "run": "nope", "body": "x", "attributes": { "token": "tok-secret-1" } }),
        )
        .await
        .unwrap_err();
    let _ = client.call_err("getRun", json!({ "run": "nope" })).await;
    client.call("ping", json!({})).await.unwrap();
    // The log is written off the response path: wait for the three rows.
    let db = rummy_store::database::open_read_pool(&server.database(), 1).unwrap();
    use diesel::prelude::*;
    use rummy_store::schema::rpc_log::dsl as l;
    let deadline = std::time::Instant::now() + crate::support::WAIT;
    type Row = (String, Option<String>, Option<String>, Option<String>);
    let rows: Vec<Row> = loop {
        let mut conn = db.get().unwrap();
        let rows = l::rpc_log
            .order(l::id.asc())
            .select((l::method, l::params, l::result, l::error))
            .load(&mut *conn)
            .unwrap();
        if rows.len() >= 4 || std::time::Instant::now() > deadline {
            break rows;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    server.stop().await;
    let methods: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(methods, vec!["rummy/hello", "update", "getRun", "ping"]);
    let update_params: Value = serde_json::from_str(rows[1].1.as_deref().unwrap()).unwrap();
    assert_eq!(update_params["attributes"]["token"], json!("[redacted]"));
    assert!(rows
        .iter()
        .all(|r| !r.1.as_deref().unwrap_or_default().contains("tok-secret-1")));
    assert_eq!(
        rows[2].3.as_deref(),
        Some("-32004: run \"nope\" not found in project \"log\"")
    );
    assert_eq!(rows[3].2.as_deref(), Some("{}"));
}

/// A frame under both limits is served; one over RUMMY_MAX_MESSAGE_BYTES (though under
/// RUMMY_MAX_FRAME_BYTES) closes the connection 1009, as does one over RUMMY_MAX_FRAME_BYTES
/// when that is the smaller.
#[actix_rt::test]
async fn size_limits() {
    let server = TestServer::start_with(|c| {
        c.limits.max_message_bytes = 1024;
        c.limits.max_frame_bytes = 8192;
    })
    .await;
    let mut client = server.client().await;
    let small = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping"}}{}"#,
        " ".repeat(900)
    );
    client.send_text(&small).await.unwrap();
    assert_eq!(client.next_response().await.unwrap()["result"], json!({}));
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"ping"}}{}"#,
        " ".repeat(2000)
    );
    client.send_text(&big).await.unwrap();
    let closed = client.close_reason(crate::support::WAIT).await;
    assert_eq!(
        closed,
        Some((
            1009,
            format!(
                "a frame of {} bytes announced; the limit is 1024",
                big.len()
            )
        ))
    );
    let server = {
        server.stop().await;
        TestServer::start_with(|c| {
            c.limits.max_message_bytes = 8192;
            c.limits.max_frame_bytes = 1024;
        })
        .await
    };
    let mut client = server.client().await;
    client.send_text(&"y".repeat(2000)).await.unwrap();
    let closed = client.close_reason(crate::support::WAIT).await;
    assert_eq!(
        closed,
        Some((
            1009,
            "a frame of 2000 bytes announced; the limit is 1024".to_owned()
        ))
    );
    server.stop().await;
}

/// A text frame that is not UTF-8 closes the connection with 1007; the server stays up.
#[actix_rt::test]
async fn invalid_utf8_closes_1007() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .send_raw_text_frame(vec![0x7b, 0xff, 0xfe, 0x7d])
        .await
        .unwrap();
    let closed = client.close_reason(crate::support::WAIT).await;
    assert_eq!(closed.map(|c| c.0), Some(1007));
    let mut again = server.client().await;
    assert_eq!(again.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// GET /health answers plain HTTP 200 with the version, the database writable and the
/// providers configured, by name only.
#[actix_rt::test]
async fn health_answers_plain_http() {
    let server = TestServer::start().await;
    let port = server.port();
    let response = actix_rt::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(body).unwrap(),
        json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "database": { "writable": true, "backend": server.database().backend() },
            "providers": ["openai"],
        }),
        "{response}"
    );
    assert!(!response.contains("sk-test-secret"), "{response}");
    server.stop().await;
}

/// A database that refuses the health probe's write makes /health answer 503, still with the
/// version and the providers' names.
#[actix_rt::test]
async fn health_is_503_when_the_database_refuses_a_write() {
    use diesel::RunQueryDsl;
    let server = TestServer::start().await;
    let mut db = crate::support::database::connect(&server.database());
    // The probe's own table gone: its write fails as a full disk's or a read-only file's would.
    diesel::sql_query("DROP TABLE health_probe")
        .execute(&mut db)
        .unwrap();
    drop(db);
    let response = reqwest::get(format!("http://127.0.0.1:{}/health", server.port()))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({
            "status": "unavailable",
            "version": env!("CARGO_PKG_VERSION"),
            "database": { "writable": false, "backend": server.database().backend() },
            "providers": ["openai"],
        })
    );
    server.stop().await;
}
