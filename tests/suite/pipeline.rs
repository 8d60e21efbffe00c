//! The turn pipeline end to end: proposals (accept, reject, readonly, sh/env streams, ask_user), cancel mid-proposal, and the budget.

use crate::support::{self, accept, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::path::Path;
use tempfile::TempDir;

const EDIT: &str = "<set path=\"src/app.txt\"><<<<<<< SEARCH\nport = 3000\n=======\nport = 8080\n>>>>>>> REPLACE</set>";

fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.txt"), "name = demo\nport = 3000\n").unwrap();
    dir
}

async fn hello(server: &TestServer, root: &Path) -> RpcClient {
    let mut client = server.client().await;
    client
        .call(
            "rummy/hello",
            json!({ "name": "pipe", "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    client
}

async fn start(client: &mut RpcClient, alias: &str, mode: &str) {
    client
        .call("set", json!({ "path": format!("run://{alias}"), "body": "Change the port", "attributes": { "model": "fast", "mode": mode } }))
        .await
        .unwrap();
}

async fn proposal(client: &mut RpcClient) -> Value {
    let params = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal");
    params["proposed"][0].clone()
}

/// The path of the next proposal.
async fn proposal_path(client: &mut RpcClient) -> String {
    proposal(client).await["path"]
        .as_str()
        .expect("a proposal has a path")
        .to_owned()
}

async fn entry(client: &mut RpcClient, run: &str, path: &str) -> Value {
    support::entry(client, run, path)
        .await
        .unwrap_or(Value::Null)
}

fn system_message(server: &TestServer, index: usize) -> String {
    server.provider.chat_requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn user_message(server: &TestServer, index: usize) -> String {
    server.provider.chat_requests()[index].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A file edit becomes a proposal with the diff and new content; accepting it writes the file and the turn resumes.
#[actix_rt::test]
async fn accepted_edit_writes_the_file() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "{EDIT}\n<update status=\"102\">edited</update>"
    )));
    server.provider.push(Reply::content(
        "<update status=\"200\">port changed</update>",
    ));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "edit", "act").await;
    let proposed = proposal(&mut client).await;
    assert_eq!(proposed["attributes"]["kind"], json!("edit"));
    assert_eq!(
        proposed["attributes"]["content"],
        json!("name = demo\nport = 8080\n")
    );
    assert!(proposed["attributes"]["patch"]
        .as_str()
        .unwrap()
        .contains("-port = 3000\n+port = 8080"));
    let run = client
        .call("getRun", json!({ "run": "edit" }))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(202));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/app.txt")).unwrap(),
        "name = demo\nport = 3000\n",
        "nothing changes before accept"
    );

    let path = proposed["path"].as_str().unwrap();
    let accepted = accept(&mut client, "edit", path).await;
    assert_eq!(accepted["state"], json!("resolved"));
    let last = wait_status(&mut client, "edit", 200).await;
    assert_eq!(last["summary"], json!("port changed"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/app.txt")).unwrap(),
        "name = demo\nport = 8080\n"
    );
    assert_eq!(
        entry(&mut client, "edit", "src/app.txt").await["body"],
        json!("name = demo\nport = 8080\n")
    );
    assert_eq!(server.provider.chat_requests().len(), 2);
    let err = client
        .call_err(
            "set",
            json!({ "run": "edit", "path": path, "state": "resolved" }),
        )
        .await;
    assert_eq!(
        err.code, -32005,
        "a resolved proposal cannot be resolved again"
    );
    server.stop().await;
}

/// Rejecting a proposal aborts the rest of the turn; the model reads the rejection and its reason.
#[actix_rt::test]
async fn rejected_proposal_aborts_the_rest() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "{EDIT}\n<set path=\"known://after\">x</set>\n<update status=\"200\">done</update>"
    )));
    server
        .provider
        .push(Reply::content("<update status=\"200\">left as is</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "rej", "act").await;
    let proposed = proposal(&mut client).await;
    let path = proposed["path"].as_str().unwrap().to_owned();
    let answer = client
        .call(
            "set",
            json!({ "run": "rej", "path": path, "state": "cancelled", "body": "not now" }),
        )
        .await
        .unwrap();
    assert_eq!(
        state_and_outcome(&answer),
        (json!("cancelled"), json!("not now"))
    );
    let last = wait_status(&mut client, "rej", 200).await;
    assert_eq!(last["summary"], json!("left as is"));
    assert_eq!(
        entry(&mut client, "rej", "known://after").await,
        Value::Null,
        "the aborted set never wrote its fact"
    );
    let second = user_message(&server, 1);
    assert!(second.contains("status=\"499\""), "{second}");
    assert!(second.contains("not now"), "{second}");
    assert!(second.contains("Aborted"), "{second}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/app.txt")).unwrap(),
        "name = demo\nport = 3000\n"
    );
    server.stop().await;
}

/// Accepting an edit of a readonly file answers ok, and the proposal ends failed/readonly (the model sees 403).
#[actix_rt::test]
async fn readonly_files_refuse_accepted_edits() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "{EDIT}\n<update status=\"102\">edited</update>"
    )));
    server
        .provider
        .push(Reply::content("<update status=\"200\">cannot</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    client
        .call(
            "file/constraint",
            json!({ "pattern": "src/app.txt", "visibility": "readonly" }),
        )
        .await
        .unwrap();
    start(&mut client, "ro", "act").await;
    let path = proposal_path(&mut client).await;
    let answer = accept(&mut client, "ro", &path).await;
    assert_eq!(
        (
            answer["ok"].clone(),
            answer["state"].clone(),
            answer["outcome"].clone()
        ),
        (json!(true), json!("failed"), json!("readonly"))
    );
    wait_status(&mut client, "ro", 200).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/app.txt")).unwrap(),
        "name = demo\nport = 3000\n"
    );
    assert!(user_message(&server, 1).contains("status=\"403\""));
    server.stop().await;
}

/// With `RUMMY_COMMAND_RUNNER=client`, accepting sh opens stdout/stderr channels that the client's stream fills and stream/completed settles; stream/cancel notifies clients.
#[actix_rt::test]
async fn sh_streams_its_output() {
    let server = TestServer::start_with(|c| {
        c.shell.runner = rummy::config::ShellRunner::Client;
    })
    .await;
    server.provider.push(Reply::content(
        "<sh>make test</sh>\n<update status=\"102\">running tests</update>",
    ));
    server.provider.push(Reply::content(
        "<env>git status</env>\n<update status=\"102\">checking</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">tests pass</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "sh", "act").await;
    let proposed = proposal(&mut client).await;
    assert_eq!(proposed["attributes"]["kind"], json!("sh"));
    assert_eq!(proposed["attributes"]["command"], json!("make test"));
    let path = proposed["path"].as_str().unwrap().to_owned();
    accept(&mut client, "sh", &path).await;
    client
        .call(
            "stream",
            json!({ "run": "sh", "path": path, "channel": 1, "chunk": "ok 1\n" }),
        )
        .await
        .unwrap();
    client
        .call(
            "stream",
            json!({ "run": "sh", "path": path, "channel": 1, "chunk": "ok 2\n" }),
        )
        .await
        .unwrap();
    let done = client
        .call(
            "stream/completed",
            json!({ "run": "sh", "path": path, "exitCode": 0, "duration": "2s" }),
        )
        .await
        .unwrap();
    assert_eq!(
        done["channels"],
        json!([format!("{path}_1"), format!("{path}_2")])
    );
    let stdout = entry(&mut client, "sh", &format!("{path}_1")).await;
    assert_eq!(
        (stdout["body"].clone(), stdout["state"].clone()),
        (json!("ok 1\nok 2\n"), json!("resolved"))
    );
    assert!(entry(&mut client, "sh", &path).await["body"]
        .as_str()
        .unwrap()
        .starts_with("ran 'make test', exit=0 (2s). Output:"));
    assert_eq!(
        client
            .call_err(
                "stream",
                json!({ "run": "sh", "path": path, "channel": 1, "chunk": "late" })
            )
            .await
            .code,
        -32005
    );

    let env = proposal(&mut client).await;
    let env_path = env["path"].as_str().unwrap().to_owned();
    accept(&mut client, "sh", &env_path).await;
    client
        .call(
            "stream/cancel",
            json!({ "run": "sh", "path": env_path, "reason": "user stopped it" }),
        )
        .await
        .unwrap();
    let cancelled = client
        .next_notification("stream/cancelled", WAIT)
        .await
        .unwrap();
    assert_eq!(
        cancelled,
        json!({ "run": "sh", "path": env_path, "reason": "user stopped it" })
    );
    wait_status(&mut client, "sh", 200).await;
    server.stop().await;
}

/// ask_user proposes the question; the client's answer is stored with it and the model reads it.
#[actix_rt::test]
async fn ask_user_gets_the_answer() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content("<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<update status=\"102\">asking</update>"));
    server.provider.push(Reply::content(
        "<update status=\"200\">SQLite it is</update>",
    ));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "ask", "ask").await;
    let proposed = proposal(&mut client).await;
    assert_eq!(
        proposed["attributes"]["options"],
        json!(["PostgreSQL", "SQLite"])
    );
    let path = proposed["path"].as_str().unwrap().to_owned();
    client
        .call(
            "set",
            json!({ "run": "ask", "path": path, "state": "resolved", "body": "SQLite" }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "ask", 200).await;
    assert_eq!(
        entry(&mut client, "ask", &path).await["attributes"]["answer"],
        json!("SQLite")
    );
    assert!(user_message(&server, 1).contains("SQLite"));
    server.stop().await;
}

/// A run keeps its context rows between turns; a file another run edits between two of them
/// (a shared entry, changed without touching the first run's views) still reaches its next turn.
#[actix_rt::test]
async fn a_file_edited_by_another_run_between_turns_reaches_the_next_one() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server
        .provider
        .push(Reply::content("<update status=\"102\">looking</update>").held(&gate));
    server.provider.push(Reply::content(format!(
        "{EDIT}\n<update status=\"102\">edited</update>"
    )));
    server.provider.push(Reply::content(
        "<update status=\"200\">port changed</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">seen</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    client
        .call(
            "file/constraint",
            json!({ "pattern": "src/*", "visibility": "active" }),
        )
        .await
        .unwrap();
    start(&mut client, "reader", "act").await;
    // The reader's first turn has read its context and waits for the model's answer.
    assert_eq!(
        server.provider.wait_for_chat_requests(1, WAIT).await.len(),
        1
    );
    start(&mut client, "editor", "act").await;
    let edit = proposal_path(&mut client).await;
    accept(&mut client, "editor", &edit).await;
    wait_status(&mut client, "editor", 200).await;
    gate.open();
    wait_status(&mut client, "reader", 200).await;

    // Requests: the reader's first turn, the editor's two, the reader's second.
    let file = |body: &str| format!(">{body}</file>");
    assert!(system_message(&server, 0).contains(&file(APP)));
    let after = system_message(&server, 3);
    assert!(
        after.contains(&file("name = demo\nport = 8080\n")),
        "{after}"
    );
    assert!(!after.contains(&file(APP)), "{after}");
    server.stop().await;
}

/// Cancelling a run that waits on a proposal ends the loop 499 and cancels the proposal.
#[actix_rt::test]
async fn cancel_mid_proposal() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "{EDIT}\n<update status=\"102\">edited</update>"
    )));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "cm", "act").await;
    let path = proposal_path(&mut client).await;
    client
        .call("set", json!({ "path": "run://cm", "state": "cancelled" }))
        .await
        .unwrap();
    wait_status(&mut client, "cm", 499).await;
    assert_eq!(
        entry(&mut client, "cm", &path).await["state"],
        json!("cancelled")
    );
    assert_eq!(
        client
            .call_err(
                "set",
                json!({ "run": "cm", "path": path, "state": "resolved" })
            )
            .await
            .code,
        -32005
    );
    server.stop().await;
}

/// Ask mode refuses sh and file edits at dispatch with a visible 403, and never proposes them.
#[actix_rt::test]
async fn ask_mode_refuses_side_effects() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(format!(
        "<sh>rm -rf /</sh>\n{EDIT}\n<update status=\"102\">trying</update>"
    )));
    server
        .provider
        .push(Reply::content("<update status=\"200\">refused</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    start(&mut client, "am", "ask").await;
    wait_status(&mut client, "am", 200).await;
    let second = user_message(&server, 1);
    assert!(second.contains("status=\"403\""), "{second}");
    assert!(
        client
            .expect_no_notification("run/proposal", std::time::Duration::from_millis(50))
            .await
    );
    server.stop().await;
}

/// A first turn that cannot fit even after Prompt Demotion ends 413 without calling the model.
#[actix_rt::test]
async fn first_turn_overflow_never_calls_the_model() {
    let server = TestServer::start().await;
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    client
        .call("set", json!({ "path": "run://tiny", "body": "x", "attributes": { "model": "fast", "contextLimit": 1024 } }))
        .await
        .unwrap();
    wait_status(&mut client, "tiny", 413).await;
    assert_eq!(server.provider.chat_requests().len(), 0);
    let budget = client
        .call(
            "getEntries",
            json!({ "run": "tiny", "scheme": "budget", "withBody": true }),
        )
        .await
        .unwrap();
    assert!(budget[0]["body"]
        .as_str()
        .unwrap()
        .starts_with("Token budget overflow"));
    server.stop().await;
}

/// A long prompt is demoted (truncated) on the loop's first turn so the model can still be called; tokensFree/tokenUsage are on <prompt>.
#[actix_rt::test]
async fn prompt_demotion_makes_room() {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">read it</update>"));
    let dir = project();
    let mut client = hello(&server, dir.path()).await;
    let long = "word ".repeat(6000);
    client
        .call("set", json!({ "path": "run://long", "body": long, "attributes": { "model": "fast", "contextLimit": 8192 } }))
        .await
        .unwrap();
    wait_status(&mut client, "long", 200).await;
    let user = user_message(&server, 0);
    assert!(
        user.contains("[truncated — promote to see the complete prompt]"),
        "{}",
        &user[user.len().saturating_sub(300)..]
    );
    assert!(
        user.contains("tokensFree=\"") && user.contains("tokenUsage=\""),
        "{}",
        &user[user.len().saturating_sub(300)..]
    );
    server.stop().await;
}

/// Promoting more than fits after dispatch demotes the turn's promotions and writes a budget:// entry the model reads.
#[actix_rt::test]
async fn turn_demotion_after_dispatch() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<get path=\"big.txt\"/>\n<update status=\"102\">reading</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">too big</update>"));
    let dir = project();
    std::fs::write(dir.path().join("big.txt"), "lorem ipsum ".repeat(2000)).unwrap();
    let mut client = hello(&server, dir.path()).await;
    client
        .call("set", json!({ "path": "run://big", "body": "Read big.txt", "attributes": { "model": "fast", "contextLimit": 8192 } }))
        .await
        .unwrap();
    wait_status(&mut client, "big", 200).await;
    let budget = client
        .call(
            "getEntries",
            json!({ "run": "big", "scheme": "budget", "withBody": true }),
        )
        .await
        .unwrap();
    assert_eq!(budget.as_array().map(Vec::len), Some(1), "{budget}");
    assert_eq!(
        entry(&mut client, "big", "big.txt").await["visibility"],
        json!("summarized")
    );
    assert!(user_message(&server, 1).contains("<budget "));
    server.stop().await;
}

/// A project, a client on it, and a run `alias` in act mode whose turns answer `replies` in order.
async fn scripted(server: &TestServer, alias: &str, replies: &[&str]) -> (TempDir, RpcClient) {
    for reply in replies {
        server.provider.push(Reply::content(*reply));
    }
    let dir = project();
    let mut client = hello(server, dir.path()).await;
    start(&mut client, alias, "act").await;
    (dir, client)
}

/// An entry's (or a resolution answer's) state and outcome.
fn state_and_outcome(answer: &Value) -> (Value, Value) {
    (answer["state"].clone(), answer["outcome"].clone())
}

/// Resolves the next proposal of `run` as `state` (with the body "not this"); its path and the
/// answer's state and outcome.
async fn resolve_next(client: &mut RpcClient, run: &str, state: &str) -> (String, (Value, Value)) {
    let path = proposal(client).await["path"].as_str().unwrap().to_owned();
    let answer = client
        .call(
            "set",
            json!({ "run": run, "path": path, "state": state, "body": "not this" }),
        )
        .await
        .unwrap();
    (path, state_and_outcome(&answer))
}

/// Resolves the next proposal of `run` as `state`; the answer's state and outcome.
async fn resolved_as(client: &mut RpcClient, run: &str, state: &str) -> (Value, Value) {
    resolve_next(client, run, state).await.1
}

fn read(dir: &TempDir, path: &str) -> Option<String> {
    std::fs::read_to_string(dir.path().join(path)).ok()
}

const APP: &str = "name = demo\nport = 3000\n";

/// Accepted file cp, mv and rm proposals copy, move and delete on disk and in the project's entries.
#[actix_rt::test]
async fn accepted_cp_mv_rm_change_the_files() {
    let server = TestServer::start().await;
    let (dir, mut client) = scripted(
        &server,
        "files",
        &[
            "<cp path=\"src/app.txt\">src/copy.txt</cp>\n<update status=\"102\">copied</update>",
            "<mv path=\"src/copy.txt\">src/moved.txt</mv>\n<update status=\"102\">moved</update>",
            "<rm path=\"src/moved.txt\"/>\n<update status=\"102\">removed</update>",
            "<set path=\"known://note\">remember this</set>\n<mv path=\"known://note\">src/note.txt</mv>\n<update status=\"102\">noted</update>",
            "<update status=\"200\">done</update>",
        ],
    )
    .await;
    let app = Some(APP.to_owned());
    let ok = (json!("resolved"), Value::Null);
    assert_eq!(resolved_as(&mut client, "files", "resolved").await, ok);
    assert_eq!(read(&dir, "src/copy.txt"), app, "cp wrote the copy");
    assert_eq!(resolved_as(&mut client, "files", "resolved").await, ok);
    assert_eq!(
        (read(&dir, "src/copy.txt"), read(&dir, "src/moved.txt")),
        (None, app.clone()),
        "mv moved it"
    );
    assert_eq!(resolved_as(&mut client, "files", "resolved").await, ok);
    assert_eq!(read(&dir, "src/moved.txt"), None, "rm deleted it");
    assert_eq!(resolved_as(&mut client, "files", "resolved").await, ok);
    wait_status(&mut client, "files", 200).await;
    assert_eq!(read(&dir, "src/note.txt"), Some("remember this".to_owned()));
    let mut stored = Vec::new();
    for path in [
        "known://note",
        "src/app.txt",
        "src/copy.txt",
        "src/moved.txt",
        "src/note.txt",
    ] {
        stored.push((
            path,
            entry(&mut client, "files", path).await["body"].clone(),
        ));
    }
    assert_eq!(
        stored,
        vec![
            ("known://note", Value::Null),
            ("src/app.txt", json!(APP)),
            ("src/copy.txt", Value::Null),
            ("src/moved.txt", Value::Null),
            ("src/note.txt", json!("remember this")),
        ],
        "an entry moved into a file leaves the run; the files' entries follow the disk"
    );
    server.stop().await;
}

/// Rejected proposals of every kind but the edit (tested above) change nothing: no file is
/// copied, moved or removed, no output channel opens, and the model reads each rejection with
/// its reason (499).
#[actix_rt::test]
async fn rejected_proposals_change_nothing() {
    let server = TestServer::start().await;
    let (dir, mut client) = scripted(
        &server,
        "keep",
        &[
            "<cp path=\"src/app.txt\">src/copy.txt</cp>\n<update status=\"102\">copying</update>",
            "<mv path=\"src/app.txt\">src/moved.txt</mv>\n<update status=\"102\">moving</update>",
            "<rm path=\"src/app.txt\"/>\n<update status=\"102\">removing</update>",
            "<sh>make deploy</sh>\n<update status=\"102\">deploying</update>",
            "<env>printenv</env>\n<update status=\"102\">looking</update>",
            "<ask_user question=\"Which region?\">eu; us</ask_user>\n<update status=\"102\">asking</update>",
            "<update status=\"200\">left alone</update>",
        ],
    )
    .await;
    let mut paths = Vec::new();
    for _ in 0..6 {
        let (path, answer) = resolve_next(&mut client, "keep", "cancelled").await;
        assert_eq!(answer, (json!("cancelled"), json!("not this")), "{path}");
        paths.push(path);
    }
    wait_status(&mut client, "keep", 200).await;
    assert_eq!(
        (
            read(&dir, "src/app.txt"),
            read(&dir, "src/copy.txt"),
            read(&dir, "src/moved.txt")
        ),
        (Some(APP.to_owned()), None, None)
    );
    for (turn, path) in paths.iter().enumerate().map(|(i, p)| (i + 1, p)) {
        let stored = entry(&mut client, "keep", path).await;
        assert_eq!(
            state_and_outcome(&stored),
            (json!("cancelled"), json!("not this")),
            "{path}"
        );
        assert_eq!(
            entry(&mut client, "keep", &format!("{path}_1")).await,
            Value::Null,
            "no channel for {path}"
        );
        let user = user_message(&server, turn);
        assert!(
            user.contains("status=\"499\"") && user.contains("not this"),
            "turn {turn}: {user}"
        );
    }
    server.stop().await;
}

/// An edit accepted after someone changed the file on disk is refused (409) and writes nothing:
/// the change on disk stays, the file's entry takes it, and the model reads why.
#[actix_rt::test]
async fn an_edit_of_a_file_changed_on_disk_is_refused() {
    let server = TestServer::start().await;
    let edit = format!("{EDIT}\n<update status=\"102\">edited</update>");
    let (dir, mut client) = scripted(
        &server,
        "race",
        &[&edit, "<update status=\"200\">will redo</update>"],
    )
    .await;
    let path = proposal_path(&mut client).await;
    let theirs = "name = demo\nport = 3000\ndebug = true\n";
    std::fs::write(dir.path().join("src/app.txt"), theirs).unwrap();
    let answer = accept(&mut client, "race", &path).await;
    assert_eq!(
        state_and_outcome(&answer),
        (json!("failed"), json!("conflict"))
    );
    wait_status(&mut client, "race", 200).await;
    assert_eq!(read(&dir, "src/app.txt"), Some(theirs.to_owned()));
    assert_eq!(
        entry(&mut client, "race", "src/app.txt").await["body"],
        json!(theirs)
    );
    let user = user_message(&server, 1);
    assert!(user.contains("status=\"409\""), "{user}");
    assert!(
        user.contains("src/app.txt changed on disk after you read it"),
        "{user}"
    );
    server.stop().await;
}

/// A proposal whose files are already as proposed is accepted (a client may write an edit
/// itself, then accept it); an rm of a file changed since is refused and deletes nothing; a cp
/// of a file changed since is refused and copies nothing.
#[actix_rt::test]
async fn proposals_check_the_disk_not_the_clock() {
    let server = TestServer::start().await;
    let edit = format!("{EDIT}\n<update status=\"102\">edited</update>");
    let (dir, mut client) = scripted(
        &server,
        "disk",
        &[
            &edit,
            "<rm path=\"src/app.txt\"/>\n<update status=\"102\">removing</update>",
            "<cp path=\"src/app.txt\">src/copy.txt</cp>\n<update status=\"102\">copying</update>",
            "<update status=\"200\">kept</update>",
        ],
    )
    .await;
    let proposed = proposal(&mut client).await;
    let content = proposed["attributes"]["content"].as_str().unwrap();
    std::fs::write(dir.path().join("src/app.txt"), content).unwrap();
    let path = proposed["path"].as_str().unwrap().to_owned();
    assert_eq!(
        accept(&mut client, "disk", &path).await["state"],
        json!("resolved")
    );

    let conflict = (json!("failed"), json!("conflict"));
    for changed in ["port = 9090\n", "port = 9191\n"] {
        let path = proposal_path(&mut client).await;
        std::fs::write(dir.path().join("src/app.txt"), changed).unwrap();
        let answer = accept(&mut client, "disk", &path).await;
        assert_eq!(state_and_outcome(&answer), conflict, "{path}");
    }
    wait_status(&mut client, "disk", 200).await;
    assert_eq!(
        (read(&dir, "src/app.txt"), read(&dir, "src/copy.txt")),
        (Some("port = 9191\n".to_owned()), None)
    );
    server.stop().await;
}

/// An accepted edit replaces the file but keeps its permissions: an edited script stays
/// executable.
#[cfg(unix)]
#[actix_rt::test]
async fn an_accepted_edit_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let server = TestServer::start().await;
    let edit = format!("{EDIT}\n<update status=\"102\">edited</update>");
    let (dir, mut client) = scripted(
        &server,
        "mode",
        &[&edit, "<update status=\"200\">done</update>"],
    )
    .await;
    let file = dir.path().join("src/app.txt");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o750)).unwrap();
    let path = proposal_path(&mut client).await;
    assert_eq!(
        accept(&mut client, "mode", &path).await["state"],
        json!("resolved")
    );
    wait_status(&mut client, "mode", 200).await;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        (read(&dir, "src/app.txt"), format!("{mode:o}")),
        (
            Some("name = demo\nport = 8080\n".to_owned()),
            "750".to_owned()
        )
    );
    server.stop().await;
}

/// A new file that appeared on disk while its creation waited is not written over, and what it
/// holds stays out of the model's context; an edit of a file removed since is refused and does
/// not bring it back.
#[actix_rt::test]
async fn proposals_respect_files_that_appeared_or_went() {
    let server = TestServer::start().await;
    let edit = format!("{EDIT}\n<update status=\"102\">edited</update>");
    let (dir, mut client) = scripted(
        &server,
        "gone",
        &[
            "<set path=\"notes.txt\">hello</set>\n<update status=\"102\">noting</update>",
            &edit,
            "<update status=\"200\">stopped</update>",
        ],
    )
    .await;
    let conflict = (json!("failed"), json!("conflict"));
    let create = proposal_path(&mut client).await;
    std::fs::write(dir.path().join("notes.txt"), "API_TOKEN=hunter2\n").unwrap();
    let answer = accept(&mut client, "gone", &create).await;
    assert_eq!(state_and_outcome(&answer), conflict);

    let change = proposal_path(&mut client).await;
    std::fs::remove_file(dir.path().join("src/app.txt")).unwrap();
    let answer = accept(&mut client, "gone", &change).await;
    assert_eq!(state_and_outcome(&answer), conflict);
    wait_status(&mut client, "gone", 200).await;

    assert_eq!(
        (read(&dir, "notes.txt"), read(&dir, "src/app.txt")),
        (Some("API_TOKEN=hunter2\n".to_owned()), None)
    );
    assert_eq!(
        (
            entry(&mut client, "gone", "notes.txt").await,
            entry(&mut client, "gone", "src/app.txt").await
        ),
        (Value::Null, Value::Null)
    );
    let (second, third) = (user_message(&server, 1), user_message(&server, 2));
    assert!(
        second.contains("notes.txt exists on disk but was not in your context"),
        "{second}"
    );
    assert!(
        third.contains("src/app.txt was removed from disk after you read it"),
        "{third}"
    );
    let sent: Vec<String> = server
        .provider
        .chat_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        sent.iter().all(|body| !body.contains("hunter2")),
        "the file's content never reaches the model"
    );
    server.stop().await;
}
