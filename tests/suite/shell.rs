//! Accepted `sh`/`env` end to end: the server runs them in the project root with a clean environment and streams their output into the channels; timeout, `stream/cancel`, a run's cancel and shutdown kill their process group; the output is capped; the turn waits for the output (or `RUMMY_STREAM_WAIT`), also across a restart; with `RUMMY_COMMAND_RUNNER=client` the accepting client runs them.

use crate::support::process::ServerProcess;
use crate::support::procs::{running, sleeper, wait_marked};
use crate::support::{self, accept, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::{Config, ShellRunner};
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The model's second reply in every script: it concludes.
const CONCLUDE: &str = "<update status=\"200\">done</update>";

/// A project directory (its real path, as the server stores it).
pub(super) fn project() -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// Scripts the model to propose `tag` then conclude, and starts run `cmd` in act mode on a
/// client bound to `root`.
pub(super) async fn proposing(
    url: &str,
    provider: &FakeProvider,
    root: &Path,
    tag: &str,
) -> RpcClient {
    provider.push(Reply::content(format!(
        "{tag}\n<update status=\"102\">running it</update>"
    )));
    provider.push(Reply::content(CONCLUDE));
    let mut client = RpcClient::connect(url).await.unwrap();
    client.set_timeout(Duration::from_secs(20));
    client
        .call(
            "rummy/hello",
            json!({ "name": "cmds", "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    client
        .call(
            "set",
            json!({ "path": "run://cmd", "body": "Run it", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    client
}

/// Accepts the next proposal, checking that it and the accept's answer say who runs it; its path.
pub(super) async fn accept_next(client: &mut RpcClient, runner: &str) -> String {
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal")["proposed"][0]
        .clone();
    assert_eq!(proposed["attributes"]["runner"], json!(runner));
    let path = proposed["path"].as_str().unwrap().to_owned();
    let answer = accept(client, "cmd", &path).await;
    assert_eq!(
        answer,
        json!({
            "ok": true, "path": path, "state": "resolved", "outcome": null, "runner": runner,
            "channels": [format!("{path}_1"), format!("{path}_2")],
        })
    );
    path
}

/// (state, outcome, body) of channel `n` of the command at `path`.
async fn channel(client: &mut RpcClient, path: &str, n: u32) -> (Value, Value, Value) {
    let row = support::entry(client, "cmd", &format!("{path}_{n}"))
        .await
        .unwrap_or_else(|| panic!("no channel {n} of {path}"));
    (
        row["state"].clone(),
        row["outcome"].clone(),
        row["body"].clone(),
    )
}

/// The user message of the model's request `index`.
fn user_message(provider: &FakeProvider, index: usize) -> String {
    provider.chat_requests()[index].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits up to 3 s for every process of `pids` to be gone; whether they are.
async fn all_gone(pids: &[i32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|pid| running(*pid)) {
        if Instant::now() > deadline {
            return false;
        }
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Starts an in-process server adjusted by `adjust`.
async fn server_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start_with(adjust).await
}

/// An accepted command runs in the project root on the server; its stdout and stderr land in
/// the channels, a non-zero exit fails them with the code, the run stays 102 with
/// `run/progress` `streaming` meanwhile, and the model's next request holds the output.
#[actix_rt::test]
async fn an_accepted_command_runs_on_the_server() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let command = "echo hi; echo err >&2; pwd >&2; exit 3";
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        &format!("<sh>{command}</sh>"),
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    let progress = client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("streaming"))
        .await
        .unwrap();
    assert_eq!(
        progress,
        json!({ "run": "cmd", "turn": 1, "status": "streaming", "path": path })
    );
    wait_status(&mut client, "cmd", 200).await;

    let exit_3 = |body: String| (json!("failed"), json!("exit:3"), json!(body));
    assert_eq!(
        channel(&mut client, &path, 1).await,
        exit_3("hi\n".to_owned())
    );
    assert_eq!(
        channel(&mut client, &path, 2).await,
        exit_3(format!("err\n{}\n", root.display()))
    );
    let log = support::entry(&mut client, "cmd", &path).await.unwrap();
    assert_eq!(
        (
            log["state"].clone(),
            log["attributes"]["exitCode"].clone(),
            log["attributes"].get("awaiting")
        ),
        (json!("resolved"), json!(3), None)
    );
    assert!(
        log["body"]
            .as_str()
            .unwrap()
            .starts_with(&format!("ran '{command}', exit=3 (")),
        "{log}"
    );
    assert_eq!(server.provider.chat_requests().len(), 2);
    let next = user_message(&server.provider, 1);
    for seen in [
        "hi\n",
        "err\n",
        &root.display().to_string(),
        "status=\"500\"",
    ] {
        assert!(next.contains(seen), "the model reads {seen:?}: {next}");
    }
    server.stop().await;
}

/// Output reaches the channels while the command still runs, with a `run/state` push.
#[actix_rt::test]
async fn output_streams_while_the_command_runs() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        "<sh>echo first; sleep 1; echo second</sh>",
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    let stdout = format!("{path}_1");
    let pushed = client
        .wait_for_notification("run/state", WAIT, |p| {
            p["history"].as_array().is_some_and(|h| {
                h.iter()
                    .any(|e| e["path"] == json!(stdout.clone()) && e["body"] == json!("first\n"))
            })
        })
        .await
        .unwrap();
    let item = pushed["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == json!(stdout))
        .unwrap()
        .clone();
    assert_eq!(
        (
            pushed["status"].clone(),
            item["state"].clone(),
            item["status"].clone()
        ),
        (json!(102), json!("streaming"), json!(102))
    );
    wait_status(&mut client, "cmd", 200).await;
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (json!("resolved"), Value::Null, json!("first\nsecond\n"))
    );
    server.stop().await;
}

/// A command's environment holds none of the server's secrets — not the provider key set in
/// its environment or in `$RUMMY_HOME/.env`, not a `RUMMY_*` variable — only the plain
/// variables it passes on (the real binary, whose whole environment the test sets).
#[actix_rt::test]
async fn a_command_gets_no_server_secret() {
    let provider = FakeProvider::start().unwrap();
    let home = TempDir::new().unwrap();
    let user_home = TempDir::new().unwrap();
    std::fs::write(
        home.path().join(".env"),
        "XAI_API_KEY=xai-dotenv-secret\nRUMMY_FROM_DOTENV=dotenv-value\n",
    )
    .unwrap();
    let base_url = provider.base_url();
    let user_home_path = user_home.path().display().to_string();
    let server = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", "sk-test-secret"),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_TOKEN", "rummy-token-secret"),
            ("DEPLOY_API_KEY", "deploy-secret"),
            ("HOME", &user_home_path),
        ],
        Stdio::null(),
    );
    let (_dir, root) = project();
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let mut client = proposing(&url, &provider, &root, "<env>env</env>").await;
    let path = accept_next(&mut client, "server").await;
    client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
        .await
        .unwrap();
    let (state, _, body) = channel(&mut client, &path, 1).await;
    assert_eq!(state, json!("resolved"));
    let body = body.as_str().unwrap().to_owned();
    for secret in ["secret", "sk-test", "RUMMY_", "dotenv", "OPENAI", "API_KEY"] {
        assert!(
            !body.contains(secret),
            "{secret} reached the command:\n{body}"
        );
    }
    let mut names: Vec<&str> = body
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    names.sort_unstable();
    // What `sh` adds itself (PWD, and SHLVL or OLDPWD depending on the shell) aside.
    names.retain(|n| !["PWD", "SHLVL", "OLDPWD", "_"].contains(n));
    assert_eq!(names, ["GIT_TERMINAL_PROMPT", "HOME", "PATH", "TMPDIR"]);
    // Not the server's HOME: the project's own, beside the server's home.
    let project_home = format!("{}-homes/", home.path().canonicalize().unwrap().display());
    assert!(body.contains(&format!("HOME={project_home}")), "{body}");
    assert!(!body.contains(&user_home_path), "{body}");
    assert!(body.contains("TMPDIR=/tmp\n"), "{body}");
    assert!(
        body.contains("PATH=/usr/local/bin:/usr/bin:/bin\n"),
        "{body}"
    );
    drop(server);
}

/// `stream/cancel` of a running command ends it at once: its whole process group (the shell
/// and the `sleep` it started) is killed, the channels are cancelled, and the turn goes on.
#[actix_rt::test]
async fn stream_cancel_kills_the_process_group() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let (sleeper, mark) = sleeper();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        &format!("<sh>{sleeper}</sh>"),
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    let pids = wait_marked(&mark, 2).await;
    assert!(pids.iter().all(|p| running(*p)));
    let asked = Instant::now();
    client
        .call(
            "stream/cancel",
            json!({ "run": "cmd", "path": path, "reason": "too slow" }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 200).await;
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert!(all_gone(&pids).await, "{pids:?} still run");
    assert_eq!(
        (
            channel(&mut client, &path, 1).await.0,
            channel(&mut client, &path, 1).await.1
        ),
        (json!("cancelled"), json!("too slow"))
    );
    assert_eq!(
        client
            .next_notification("stream/cancelled", WAIT)
            .await
            .unwrap(),
        json!({ "run": "cmd", "path": path, "reason": "too slow" })
    );
    server.stop().await;
}

/// Cancelling the run while it waits for a command kills the command's process group, cancels
/// its channels ("run cancelled", with `stream/cancelled`) and ends the loop 499.
#[actix_rt::test]
async fn run_cancel_kills_the_command() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let (sleeper, mark) = sleeper();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        &format!("<sh>{sleeper}</sh>"),
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    let pids = wait_marked(&mark, 2).await;
    client
        .call("set", json!({ "path": "run://cmd", "state": "cancelled" }))
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 499).await;
    assert!(all_gone(&pids).await, "{pids:?} still run");
    assert_eq!(
        client
            .next_notification("stream/cancelled", WAIT)
            .await
            .unwrap(),
        json!({ "run": "cmd", "path": path, "reason": "run cancelled" })
    );
    let (state, outcome, body) = channel(&mut client, &path, 1).await;
    assert_eq!(
        (state, outcome, body),
        (
            json!("cancelled"),
            json!("run cancelled"),
            json!("started\n")
        )
    );
    assert_eq!(
        server.provider.chat_requests().len(),
        1,
        "the loop did not go on"
    );
    server.stop().await;
}

/// A command past `RUMMY_COMMAND_TIMEOUT` is killed with its group; its channels fail saying
/// so, and the model reads why.
#[actix_rt::test]
async fn a_command_past_its_timeout_is_killed() {
    let server = server_with(|c| c.shell.timeout = Duration::from_millis(1500)).await;
    let (_dir, root) = project();
    let (sleeper, mark) = sleeper();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        &format!("<sh>{sleeper}</sh>"),
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    let pids = wait_marked(&mark, 2).await;
    wait_status(&mut client, "cmd", 200).await;
    assert!(all_gone(&pids).await, "{pids:?} still run");
    let reason = "timed out after 1.5 s (RUMMY_COMMAND_TIMEOUT); its processes were killed";
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (json!("failed"), json!(reason), json!("started\n"))
    );
    let next = user_message(&server.provider, 1);
    assert!(next.contains(reason), "{next}");
    server.stop().await;
}

/// Output past `RUMMY_COMMAND_OUTPUT_BYTES` is dropped behind a marker; the command runs to
/// its end and the other channel keeps its own output.
#[actix_rt::test]
async fn output_past_the_cap_is_dropped() {
    let server = server_with(|c| c.shell.output_bytes = 100).await;
    let (_dir, root) = project();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        "<sh>head -c 5000 /dev/zero | tr '\\0' x; echo end >&2</sh>",
    )
    .await;
    let path = accept_next(&mut client, "server").await;
    wait_status(&mut client, "cmd", 200).await;
    let marker = rummy_core::shell::output::capped_marker(100);
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (
            json!("resolved"),
            Value::Null,
            json!(format!("{}{marker}", "x".repeat(100)))
        )
    );
    assert_eq!(
        channel(&mut client, &path, 2).await,
        (json!("resolved"), Value::Null, json!("end\n"))
    );
    server.stop().await;
}

/// With `RUMMY_COMMAND_RUNNER=client` the server runs nothing: the turn waits, at 102, until
/// the accepting client streams the output and completes it; then the model reads it.
#[actix_rt::test]
async fn a_client_runner_streams_the_output_back() {
    let server = server_with(|c| c.shell.runner = ShellRunner::Client).await;
    let (_dir, root) = project();
    let mut client = proposing(
        &server.url(),
        &server.provider,
        &root,
        "<sh>touch server-ran; echo out</sh>",
    )
    .await;
    let path = accept_next(&mut client, "client").await;
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    let run = client
        .call("getRun", json!({ "run": "cmd" }))
        .await
        .unwrap();
    assert_eq!(
        (
            run["status"].clone(),
            server.provider.chat_requests().len(),
            root.join("server-ran").exists()
        ),
        (json!(102), 1, false),
        "the turn waits and the server ran nothing"
    );
    client
        .call(
            "stream",
            json!({ "run": "cmd", "path": path, "channel": 1, "chunk": "out\n" }),
        )
        .await
        .unwrap();
    client
        .call(
            "stream/completed",
            json!({ "run": "cmd", "path": path, "exitCode": 0 }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 200).await;
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (json!("resolved"), Value::Null, json!("out\n"))
    );
    assert!(user_message(&server.provider, 1).contains("out\n"));
    assert!(!root.join("server-ran").exists());
    server.stop().await;
}

/// With the client runner, each chunk a client streams reaches the project's other clients at
/// once as `run/state` (the channel, still streaming, with what was appended and where), as the
/// server runner's output does: a watcher sees the output grow, not only when it completes.
#[actix_rt::test]
async fn a_client_runners_chunks_reach_the_other_clients_as_they_come() {
    let server = server_with(|c| c.shell.runner = ShellRunner::Client).await;
    let (_dir, root) = project();
    let mut client = proposing(&server.url(), &server.provider, &root, "<sh>make</sh>").await;
    let path = accept_next(&mut client, "client").await;
    let mut watcher = RpcClient::connect(&server.url()).await.unwrap();
    watcher
        .call(
            "rummy/hello",
            json!({ "name": "cmds", "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    let stdout = format!("{path}_1");
    for (chunk, offset) in [("one\n", 0), ("two\n", 4)] {
        client
            .call(
                "stream",
                json!({ "run": "cmd", "path": path, "channel": 1, "chunk": chunk }),
            )
            .await
            .unwrap();
        let pushed = watcher
            .wait_for_notification("run/state", WAIT, |p| {
                p["history"]
                    .as_array()
                    .is_some_and(|h| h.iter().any(|e| e["path"] == json!(stdout)))
            })
            .await
            .unwrap();
        let channel = pushed["history"]
            .as_array()
            .and_then(|h| h.iter().find(|e| e["path"] == json!(stdout)))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (
                pushed["status"].clone(),
                channel["state"].clone(),
                channel["body"].clone(),
                channel["append"].clone(),
                channel["offset"].clone()
            ),
            (
                json!(102),
                json!("streaming"),
                json!(chunk),
                json!(true),
                json!(offset)
            )
        );
    }
    client
        .call(
            "stream/completed",
            json!({ "run": "cmd", "path": path, "exitCode": 0 }),
        )
        .await
        .unwrap();
    wait_status(&mut watcher, "cmd", 200).await;
    server.stop().await;
}

/// With the client runner, cancelling the run while it waits for the client's output cancels
/// the channels ("run cancelled") and tells the client to stop with `stream/cancelled`.
#[actix_rt::test]
async fn run_cancel_stops_a_client_command() {
    let server = server_with(|c| c.shell.runner = ShellRunner::Client).await;
    let (_dir, root) = project();
    let mut client = proposing(&server.url(), &server.provider, &root, "<sh>make</sh>").await;
    let path = accept_next(&mut client, "client").await;
    client
        .call("set", json!({ "path": "run://cmd", "state": "cancelled" }))
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 499).await;
    assert_eq!(
        client
            .next_notification("stream/cancelled", WAIT)
            .await
            .unwrap(),
        json!({ "run": "cmd", "path": path, "reason": "run cancelled" })
    );
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (json!("cancelled"), json!("run cancelled"), json!(""))
    );
    server.stop().await;
}

/// Past `RUMMY_STREAM_WAIT` the turn goes on: the model reads the channel still streaming with
/// what arrived so far.
#[actix_rt::test]
async fn the_turn_goes_on_after_the_stream_wait() {
    let server = server_with(|c| {
        c.shell.runner = ShellRunner::Client;
        c.shell.stream_wait = Duration::from_secs(2);
    })
    .await;
    let (_dir, root) = project();
    let mut client = proposing(&server.url(), &server.provider, &root, "<sh>make</sh>").await;
    let path = accept_next(&mut client, "client").await;
    client
        .call(
            "stream",
            json!({ "run": "cmd", "path": path, "channel": 1, "chunk": "partial\n" }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "cmd", 200).await;
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (json!("streaming"), Value::Null, json!("partial\n"))
    );
    let next = user_message(&server.provider, 1);
    assert!(
        next.contains("status=\"102\" state=\"streaming\" summary=\"make\" visibility=\"visible\" tokens=\"4\">partial\n</sh>"),
        "{next}"
    );
    server.stop().await;
}

/// A server stopped while a turn waits for a command kills the command's group; after the
/// restart its channels are failed "interrupted by restart" and the loop goes on to its end
/// (the real binary).
#[actix_rt::test]
async fn a_restart_fails_the_channels_and_the_loop_goes_on() {
    let provider = FakeProvider::start().unwrap();
    let home = TempDir::new().unwrap();
    let base_url = provider.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
    ];
    let (_dir, root) = project();
    let mut first = ServerProcess::start(home.path(), &vars, Stdio::null());
    let url = format!("ws://127.0.0.1:{}/", first.port);
    let (sleeper, mark) = sleeper();
    let mut client = proposing(&url, &provider, &root, &format!("<sh>{sleeper}</sh>")).await;
    let path = accept_next(&mut client, "server").await;
    let pids = wait_marked(&mark, 2).await;
    let stdout = format!("{path}_1");
    client
        .wait_for_notification("run/state", WAIT, |p| {
            p["history"].as_array().is_some_and(|h| {
                h.iter()
                    .any(|e| e["path"] == json!(stdout.clone()) && e["body"] == json!("started\n"))
            })
        })
        .await
        .unwrap();
    assert!(first.terminate().success());
    assert!(all_gone(&pids).await, "{pids:?} outlived the server");

    let second = ServerProcess::start(home.path(), &vars, Stdio::null());
    let mut client = RpcClient::connect(&format!("ws://127.0.0.1:{}/", second.port))
        .await
        .unwrap();
    client
        .call(
            "rummy/hello",
            json!({ "name": "cmds", "projectRoot": root.display().to_string() }),
        )
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let run = client
            .call("getRun", json!({ "run": "cmd" }))
            .await
            .unwrap();
        if run["status"] == json!(200) {
            break;
        }
        assert!(Instant::now() < deadline, "the loop never ended: {run}");
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        channel(&mut client, &path, 1).await,
        (
            json!("failed"),
            json!("interrupted by restart"),
            json!("started\n")
        )
    );
    assert_eq!(provider.chat_requests().len(), 2);
    let next = user_message(&provider, 1);
    assert!(next.contains("interrupted by restart"), "{next}");
    drop(second);
}

/// `rummy serve` refuses to start (exit 2, one line naming the variable) when
/// RUMMY_COMMAND_ENV lists the database's credentials or a name containing a secret word.
#[test]
fn the_server_refuses_to_pass_secrets_to_commands() {
    let home = TempDir::new().unwrap();
    let mut outcomes = Vec::new();
    for name in ["DATABASE_URL", "PGPASSWORD", "GH_AUTH", "KEYBOARD"] {
        let list = format!("JAVA_HOME,{name}");
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
            .arg("serve")
            .env_clear()
            .env("RUMMY_HOME", home.path())
            .env("PORT", "0")
            .env("RUMMY_COMMAND_ENV", &list)
            .output()
            .unwrap();
        outcomes.push((
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    let refused = |name: &str| {
        (
            Some(2),
            format!(
                "rummy: RUMMY_COMMAND_ENV=\"JAVA_HOME,{name}\" is invalid: {name} looks like a \
                 secret (RUMMY_*, DATABASE_URL, PGPASSWORD, PGPASSFILE, or a name containing \
                 KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH): commands never get \
                 the server's secrets\n"
            ),
        )
    };
    assert_eq!(
        outcomes,
        vec![
            refused("DATABASE_URL"),
            refused("PGPASSWORD"),
            refused("GH_AUTH"),
            refused("KEYBOARD"),
        ]
    );
}
