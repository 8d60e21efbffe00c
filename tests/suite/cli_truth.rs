//! The command line tells the truth: a lost server, a refused token, a run that ended or does
//! not exist, a rejection and its reason are said as they are, each with its exit code; the
//! commands that only read change nothing; `serve` starts (or fails) cleanly. Driven through
//! the built binary, as `cli` does.

use super::cli::{assert_in_order, code, finish, name_of, project, rummy, stderr, stdout};
use super::cli::{DONE, EDIT_A};
use crate::support::process::ServerProcess;
use crate::support::{wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A client bound to `dir`'s project as the CLI names it (creating it).
async fn bound(url: &str, dir: &Path) -> RpcClient {
    let mut client = RpcClient::connect(url).await.unwrap();
    let root = dir.canonicalize().unwrap().display().to_string();
    client
        .call(
            "rummy/hello",
            json!({"name": name_of(dir), "projectRoot": root}),
        )
        .await
        .unwrap();
    client
}

/// `rummy act --run <run> <prompt>` started in `dir` against `url`, its output piped.
fn act(dir: &Path, url: &str, run: &str) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(["act", "--yes", "--run", run, "Wait"])
        .current_dir(dir)
        .env_clear()
        .env("RUMMY_URL", url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// When the server goes away, a following command says so at once and retries: Ctrl-C then
/// leaves at once (130); left alone it gives up within seconds with "connection lost" (3).
#[actix_rt::test]
async fn a_lost_server_is_said_at_once_then_exit_3_and_ctrl_c_leaves_meanwhile() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(DONE).held(&gate));
    server.provider.push(Reply::content(DONE).held(&gate));
    let dir = project();
    let url = server.url();
    let mut watcher = bound(&url, dir.path()).await;
    let left = act(dir.path(), &url, "left");
    let stays = act(dir.path(), &url, "stays");
    for _ in 0..2 {
        watcher
            .wait_for_notification("run/progress", WAIT, |p| p["status"] == "thinking")
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let stopped = Instant::now();
    let stopping = actix_rt::spawn(server.stop());
    gate.open();
    stopping.await.unwrap();
    // The retrying line is out well before the retries end; Ctrl-C leaves at once then.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = left.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let interrupted = Instant::now();
    let left = finish(left, "").await;
    let left_after = interrupted.elapsed();
    let stays = finish(stays, "").await;
    let gave_up_after = stopped.elapsed();

    assert_eq!(
        (code(&left), code(&stays)),
        (130, 3),
        "{}{}\n{}{}",
        stdout(&left),
        stderr(&left),
        stdout(&stays),
        stderr(&stays)
    );
    assert_in_order(
        &stdout(&left),
        &[
            "the connection to the server was lost",
            "retrying (Ctrl-C leaves)",
            "left while reconnecting",
        ],
    );
    assert!(left_after < Duration::from_secs(2), "{left_after:?}");
    assert!(
        stdout(&stays).contains("retrying (Ctrl-C leaves)"),
        "{}",
        stdout(&stays)
    );
    assert!(
        stderr(&stays).starts_with("rummy: connection lost: the server did not come back in "),
        "{}",
        stderr(&stays)
    );
    assert!(gave_up_after < Duration::from_secs(25), "{gave_up_after:?}");
}

/// A token the server refuses is "not allowed" (11), not "unreachable" (3); a server that needs
/// a token when none is set says to set RUMMY_TOKEN.
#[actix_rt::test]
async fn a_refused_token_is_not_allowed_11_and_a_missing_one_says_set_rummy_token() {
    let server = TestServer::start().await;
    let mut owner = server.client().await;
    owner
        .call("token/create", json!({"user": "ada", "admin": true}))
        .await
        .unwrap();
    let dir = project();
    let url = server.url();

    let bad = rummy(
        dir.path(),
        Some(&url),
        &["runs"],
        &[("RUMMY_TOKEN", "rmy_not_a_token")],
        "",
    )
    .await;
    let missing = rummy(dir.path(), Some(&url), &["runs"], &[], "").await;

    assert_eq!((code(&bad), code(&missing)), (11, 11));
    assert!(
        stderr(&bad).starts_with(&format!(
            "rummy: not allowed: the server at {url} refused the token in RUMMY_TOKEN"
        )),
        "{}",
        stderr(&bad)
    );
    assert!(
        stderr(&missing).contains("needs a token, and RUMMY_TOKEN is not set")
            && stderr(&missing).contains("set RUMMY_TOKEN to a valid token"),
        "{}",
        stderr(&missing)
    );
    server.stop().await;
}

/// `cancel` of a run that had ended says so and exits 12; `inject` into a run that does not
/// exist says so, naming the project, and starts nothing (4); statuses read as words.
#[actix_rt::test]
async fn cancel_of_an_ended_run_and_inject_into_no_run_say_so() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let mut client = bound(&url, dir.path()).await;
    client
        .call(
            "set",
            json!({"path": "run://ended", "body": "Go", "attributes": {"model": "fast"}}),
        )
        .await
        .unwrap();
    wait_status(&mut client, "ended", 200).await;
    let project_name = name_of(dir.path());

    let cancel = rummy(dir.path(), Some(&url), &["cancel", "ended"], &[], "").await;
    let inject = rummy(
        dir.path(),
        Some(&url),
        &["inject", "nobody", "more"],
        &[],
        "",
    )
    .await;
    let show = rummy(dir.path(), Some(&url), &["show", "ended"], &[], "").await;

    assert_eq!(
        (code(&cancel), stderr(&cancel)),
        (
            12,
            "rummy: run ended had already ended (done): nothing to cancel\n".to_owned()
        )
    );
    assert_eq!(code(&inject), 4, "{}", stderr(&inject));
    assert!(
        stderr(&inject).starts_with(&format!(
            "rummy: run nobody not found in project {project_name}\n"
        )),
        "{}",
        stderr(&inject)
    );
    let runs = client.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert!(
        stdout(&show).starts_with("run ended · done · 1 turn · model fast"),
        "{}",
        stdout(&show)
    );
    server.stop().await;
}

/// A rejection reads "rejected", with its reason, in `reject` and `show`.
#[actix_rt::test]
async fn a_rejection_reads_rejected_with_its_reason() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let mut client = bound(&url, dir.path()).await;
    client
        .call("set", json!({"path": "run://r", "body": "Edit a.txt", "attributes": {"model": "fast", "mode": "act"}}))
        .await
        .unwrap();
    client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();

    let reject = rummy(
        dir.path(),
        Some(&url),
        &["reject", "r", "a.txt", "--reason", "keep it old"],
        &[],
        "",
    )
    .await;
    wait_status(&mut client, "r", 200).await;
    let show = rummy(dir.path(), Some(&url), &["show", "r"], &[], "").await;

    assert_eq!(code(&reject), 0, "{}", stderr(&reject));
    assert!(
        stdout(&reject).ends_with(": rejected: keep it old\n"),
        "{}",
        stdout(&reject)
    );
    assert!(
        stdout(&show).contains("✗ edit a.txt (rejected: keep it old)"),
        "{}",
        stdout(&show)
    );
    server.stop().await;
}

/// `runs`, `show` and `watch` in a directory that is no project say so (4) and create none;
/// `models` needs no project and opens none.
#[actix_rt::test]
async fn read_only_commands_in_a_directory_that_is_not_a_project_change_nothing() {
    let server = TestServer::start().await;
    let dir = project();
    let url = server.url();

    let runs = rummy(dir.path(), Some(&url), &["runs"], &[], "").await;
    let show = rummy(dir.path(), Some(&url), &["show", "x"], &[], "").await;
    let watch = rummy(dir.path(), Some(&url), &["watch", "x"], &[], "").await;
    let models = rummy(dir.path(), Some(&url), &["models"], &[], "").await;

    let root = dir.path().canonicalize().unwrap().display().to_string();
    for out in [&runs, &show, &watch] {
        assert_eq!(code(out), 4, "{}", stderr(out));
        assert!(
            stderr(out).starts_with(&format!(
                "rummy: {root} is not a rummy project on this server (nothing changed)"
            )),
            "{}",
            stderr(out)
        );
    }
    assert_eq!(code(&models), 0, "{}", stderr(&models));
    let mut client = server.client().await;
    let projects = client.call("getProjects", json!({})).await.unwrap();
    assert_eq!(projects, json!([]));
    server.stop().await;
}

/// A model the database keeps but the environment no longer names is listed `stored`, and
/// `rummy models --remove` removes it.
#[actix_rt::test]
async fn models_lists_the_stored_ones_and_removes_them() {
    let server = TestServer::start().await;
    let mut client = server.project_client("elsewhere").await;
    client
        .call(
            "addModel",
            json!({"alias": "old", "actual": "openai/old-model"}),
        )
        .await
        .unwrap();
    let dir = TempDir::new().unwrap();
    let url = server.url();

    let listed = rummy(dir.path(), Some(&url), &["models"], &[], "").await;
    let removed = rummy(
        dir.path(),
        Some(&url),
        &["models", "--remove", "old"],
        &[],
        "",
    )
    .await;
    let after = rummy(dir.path(), Some(&url), &["models"], &[], "").await;

    assert_eq!(
        (code(&listed), code(&removed), code(&after)),
        (0, 0, 0),
        "{}{}",
        stderr(&listed),
        stderr(&removed)
    );
    let lines: Vec<String> = stdout(&listed)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        lines,
        vec![
            "ALIAS PROVIDER MODEL CONTEXT FALLBACK SOURCE",
            "fast openai fake-model 33k environment",
            "old openai old-model - stored",
            "stored: not in the server's environment now (an earlier start's, or addModel); `rummy models --remove ALIAS` removes one (admin)",
        ]
    );
    assert_eq!(stdout(&removed), "model old removed\n");
    assert!(!stdout(&after).contains("old"), "{}", stdout(&after));
    server.stop().await;
}

/// `rummy act` follows a loop queued behind the one it started (a continuation sent while it
/// ran) until that one ends too, and counts the turns of both.
#[actix_rt::test]
async fn act_follows_a_loop_queued_while_it_ran() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(DONE).held(&gate));
    server.provider.push(Reply::content(
        "<update status=\"200\">the second answer</update>",
    ));
    let dir = project();
    let url = server.url();
    let mut watcher = bound(&url, dir.path()).await;
    let child = act(dir.path(), &url, "twice");
    watcher
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == "thinking")
        .await
        .unwrap();
    watcher
        .call("set", json!({"path": "run://twice", "body": "And then?"}))
        .await
        .unwrap();
    gate.open();

    let out = finish(child, "").await;

    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_in_order(
        &stdout(&out),
        &[
            "─ turn 1",
            "─ turn 2",
            "the second answer",
            "✔ done · 2 turns",
        ],
    );
    server.stop().await;
}

/// `serve` on a port in use says so in one line, without a panic, and exits 1; a network bind
/// without TLS warns, and its start-up line names the address bound (the real port of 0).
#[actix_rt::test]
async fn serve_starts_and_fails_cleanly() {
    let home = TempDir::new().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let home_path = home.path().display().to_string();
    let in_use = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("serve")
        .env_clear()
        .env("RUMMY_HOME", &home_path)
        .env("PORT", &port)
        .env("RUMMY_LOG", "off")
        .envs(crate::support::database::vars(home.path()))
        .output()
        .await
        .unwrap();
    drop(taken);

    assert_eq!(
        (code(&in_use), stderr(&in_use)),
        (
            1,
            format!(
                "rummy: cannot listen on 127.0.0.1:{port}: Address already in use (os error 98)\n"
            )
        )
    );

    let other = TempDir::new().unwrap();
    let mut networked = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("serve")
        .env_clear()
        .env("RUMMY_HOME", other.path())
        .env("PORT", "0")
        .env("RUMMY_BIND", "0.0.0.0")
        .env("RUMMY_INSECURE", "1")
        .envs(crate::support::database::vars(other.path()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout_pipe = networked.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout_pipe));
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    networked.start_kill().unwrap();
    let out = networked.wait_with_output().await.unwrap();

    let port = line
        .strip_prefix("rummy listening on ws://0.0.0.0:")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        line,
        format!(
            "rummy listening on ws://0.0.0.0:{port} (on this machine: ws://127.0.0.1:{port}/ws)"
        )
    );
    assert!(port.parse::<u16>().is_ok_and(|p| p != 0), "{line}");
    assert!(
        stderr(&out).contains("RUMMY_BIND=0.0.0.0 serves the network without TLS"),
        "{}",
        stderr(&out)
    );
}

/// An `http://` server URL is refused (2) with its `ws://` form to use.
#[actix_rt::test]
async fn an_http_url_suggests_ws() {
    let dir = project();
    let out = rummy(
        dir.path(),
        Some("http://127.0.0.1:3044"),
        &["runs"],
        &[],
        "",
    )
    .await;
    assert_eq!(
        (code(&out), stderr(&out)),
        (
            2,
            "rummy: http://127.0.0.1:3044 is not a WebSocket URL: rummy's clients speak WebSocket\n  use ws://127.0.0.1:3044/ws (RUMMY_URL or --url)\n".to_owned()
        )
    );
}

/// `doctor --health` asks the server RUMMY_URL names.
#[actix_rt::test]
async fn doctor_health_asks_the_server_rummy_url_names() {
    let provider = rummy_testkit::FakeProvider::start().unwrap();
    let home = TempDir::new().unwrap();
    let base = provider.base_url();
    let served = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", base.as_str()),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
        ],
        Stdio::null(),
    );
    let url = format!("ws://127.0.0.1:{}/ws", served.port);
    let dir = TempDir::new().unwrap();

    let out = rummy(dir.path(), Some(&url), &["doctor", "--health"], &[], "").await;

    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).ends_with(&format!("(http://127.0.0.1:{}/health)\n", served.port)),
        "{}",
        stdout(&out)
    );
}

/// `fork` shows the new run's work, in order: not the parent's history again.
#[actix_rt::test]
async fn fork_shows_the_new_runs_work_in_order() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<get path=\"a.txt\"/>\n<update status=\"102\">parent reads</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">the parent's answer</update>",
    ));
    server.provider.push(Reply::content(
        "<set path=\"known://fork/fact\">forked</set>\n<update status=\"102\">child works</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">the child's answer</update>",
    ));
    let dir = project();
    let url = server.url();
    let mut client = bound(&url, dir.path()).await;
    client
        .call(
            "set",
            json!({"path": "run://parent", "body": "Read", "attributes": {"model": "fast"}}),
        )
        .await
        .unwrap();
    wait_status(&mut client, "parent", 200).await;

    let out = rummy(
        dir.path(),
        Some(&url),
        &["fork", "--ask", "parent", "child", "Go on"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert_in_order(
        &text,
        &[
            "rummy fork of parent · child",
            "» child works",
            "the child's answer",
            "✔ done · 2 turns",
        ],
    );
    assert!(
        !text.contains("parent reads") && !text.contains("✓ get a.txt"),
        "{text}"
    );
}

/// An inject folded into a loop whose turn then concludes it is reported as the new loop it
/// becomes, and that loop runs.
#[actix_rt::test]
async fn an_inject_that_becomes_a_new_loop_is_reported_as_that() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(DONE).held(&gate));
    server.provider.push(Reply::content(
        "<update status=\"200\">read the inject</update>",
    ));
    let dir = project();
    let url = server.url();
    let mut client = bound(&url, dir.path()).await;
    client
        .call(
            "set",
            json!({"path": "run://busy", "body": "Go", "attributes": {"model": "fast"}}),
        )
        .await
        .unwrap();
    client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == "thinking")
        .await
        .unwrap();
    let inject = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(["inject", "busy", "and", "more"])
        .current_dir(dir.path())
        .env_clear()
        .env("RUMMY_URL", &url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The prompt is in (it waits for turn 2) before the turn in flight concludes the loop.
    let deadline = Instant::now() + WAIT;
    loop {
        let prompt = client
            .call(
                "getEntries",
                json!({"run": "busy", "pattern": "prompt://*"}),
            )
            .await
            .unwrap();
        if prompt.as_array().map_or(0, Vec::len) > 1 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gate.open();

    let out = finish(inject, "").await;

    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "run busy's loop concluded at turn 1 before reading it: the prompt starts a new loop of the run (`rummy watch busy` follows it)\n"
    );
    let run = wait_status(&mut client, "busy", 200).await;
    let deadline = Instant::now() + WAIT;
    let mut turn = run["turn"].clone();
    while turn != json!(2) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        turn = client.call("getRun", json!({"run": "busy"})).await.unwrap()["turn"].clone();
    }
    assert_eq!(turn, json!(2));
    server.stop().await;
}
