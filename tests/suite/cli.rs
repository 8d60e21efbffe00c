//! The `rummy` command line driven as a person drives it: the built binary, run in a project
//! directory against the real server and the fake provider, answered on stdin, its output and
//! exit codes asserted. The terminal view is checked under a pseudo-terminal (`script`).

use crate::support::process::ServerProcess;
use crate::support::{entry, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;
use tempfile::TempDir;

pub(super) const EDIT_A: &str = "<set path=\"a.txt\" search=\"old\" replace=\"new\"/>\n<update status=\"102\">editing a.txt</update>";
pub(super) const DONE: &str = "<update status=\"200\">a.txt now says new</update>";

/// A project directory holding `a.txt` = "old\n".
pub(super) fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    dir
}

/// The project's name as the CLI gives it: its directory's name.
pub(super) fn name_of(dir: &Path) -> String {
    dir.canonicalize()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Runs `rummy <args>` in `dir` with only `vars` in its environment (plus `RUMMY_URL` when
/// given), `stdin` as its input, and waits (at most 30 s) for it to end.
pub(super) async fn rummy(
    dir: &Path,
    url: Option<&str>,
    args: &[&str],
    vars: &[(&str, &str)],
    stdin: &str,
) -> Output {
    let mut command = command(dir, args, vars);
    command.stderr(Stdio::piped());
    if let Some(url) = url {
        command.env("RUMMY_URL", url);
    }
    let child = command.spawn().unwrap();
    finish(child, stdin).await
}

/// `rummy <args>` in `dir` with only `vars` (and `PATH`) in its environment, stdin and stdout
/// piped, killed when dropped.
pub(super) fn command(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"));
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Feeds `stdin` to a child and waits (at most 30 s) for it to end; a child still running
/// then is killed, and the test fails with what it printed so far.
pub(super) async fn finish(mut child: tokio::process::Child, stdin: &str) -> Output {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).await.unwrap();
    }
    let read = |pipe: Option<tokio::process::ChildStdout>| async move {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes).await;
        }
        bytes
    };
    let out = actix_rt::spawn(read(child.stdout.take()));
    let mut err_pipe = child.stderr.take();
    let err = actix_rt::spawn(async move {
        let mut bytes = Vec::new();
        if let Some(pipe) = err_pipe.as_mut() {
            let _ = pipe.read_to_end(&mut bytes).await;
        }
        bytes
    });
    let status = match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = child.kill().await;
            let (out, err) = (out.await.unwrap(), err.await.unwrap());
            panic!(
                "rummy still running after 30 s; it printed:\n{}\nand on stderr:\n{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            );
        }
    };
    Output {
        status,
        stdout: out.await.unwrap(),
        stderr: err.await.unwrap(),
    }
}

pub(super) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(super) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub(super) fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

/// Asserts each of `wanted` appears in `text`, in that order.
pub(super) fn assert_in_order(text: &str, wanted: &[&str]) {
    let mut from = 0;
    for piece in wanted {
        match text[from..].find(piece) {
            Some(at) => from += at + piece.len(),
            None => panic!("{piece:?} missing (in order) from:\n{text}"),
        }
    }
}

/// `rummy act` with an edit proposal answered `y` on stdin: the server's notice of the wait and
/// the diff are shown, the file is edited, the answer and a summary line close it, and it exits
/// 0; piped, no escape codes.
#[actix_rt::test]
async fn act_shows_the_diff_and_applies_an_edit_accepted_on_stdin() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "Make a.txt say new"],
        &[],
        "y\n",
    )
    .await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "new\n"
    );
    let text = stdout(&out);
    assert_in_order(
        &text,
        &[
            "rummy act",
            "? edit a.txt",
            "-old",
            "+new",
            "[y]es  [n]o (+reason)  [a]ll for this run  [q]uit",
            "✓ accepted",
            "» editing a.txt",
            "a.txt now says new",
            "✔ done · 2 turns",
            "1 file changed: a.txt",
        ],
    );
    assert!(!text.contains('\x1b'), "escape codes when piped:\n{text}");
    // The server's notice that the run waits is one line, marked as information.
    let notice = text
        .lines()
        .filter(|l| l.starts_with("i run ") && l.ends_with(" waits for your decision: edit a.txt"))
        .count();
    assert_eq!(notice, 1, "{text}");
    server.stop().await;
}

/// `n` with words after it rejects the proposal with that reason: the file stays, the model
/// reads the reason next turn, and the line says so.
#[actix_rt::test]
async fn act_rejects_a_proposal_with_the_reason_typed_after_n() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "Make a.txt say new"],
        &[],
        "n keep the old word\n",
    )
    .await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "old\n"
    );
    assert_in_order(
        &stdout(&out),
        &[
            "? edit a.txt",
            "✗ rejected: keep the old word",
            "no file changed",
        ],
    );
    let second = server.provider.chat_requests()[1].body.to_string();
    assert!(second.contains("keep the old word"), "{second}");
    server.stop().await;
}

/// Stdin that ends before an answer leaves the run waiting on its proposal: exit 10, with how
/// to answer it later.
#[actix_rt::test]
async fn act_leaves_the_proposal_waiting_when_stdin_ends() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    let dir = project();

    let out = rummy(dir.path(), Some(&server.url()), &["act", "Edit"], &[], "").await;

    assert_eq!(code(&out), 10, "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("rummy approve"), "{}", stdout(&out));
    server.stop().await;
}

/// `--yes` accepts every proposal: an accepted command runs (where the server says) and its
/// output is shown and recorded in the command's channel.
#[actix_rt::test]
async fn act_yes_accepts_and_shows_a_commands_output() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<sh>echo hello from sh</sh>\n<update status=\"102\">running</update>",
    ));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--yes", "Say hello"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_in_order(
        &stdout(&out),
        &[
            "? sh $ echo hello from sh",
            "✓ accepted",
            "│ hello from sh",
            "✓ exit 0",
        ],
    );
    let mut client = RpcClient::connect(&server.url()).await.unwrap();
    let root = dir.path().canonicalize().unwrap().display().to_string();
    client
        .call(
            "rummy/hello",
            json!({"name": name_of(dir.path()), "projectRoot": root}),
        )
        .await
        .unwrap();
    let runs = client.call("getRuns", json!({})).await.unwrap();
    let run = runs[0]["run"].as_str().unwrap().to_owned();
    let channel =
        crate::support::entry(&mut client, &run, "sh://turn_1/echo%20hello%20from%20sh_1")
            .await
            .unwrap();
    assert_eq!(channel["body"], json!("hello from sh\n"));
    server.stop().await;
}

/// `--json` prints every notification of the run as one JSON object per line (the notice that
/// it waits for a decision included); the last `run/state` is the run's end.
#[actix_rt::test]
async fn act_json_prints_the_notifications_as_ndjson() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--json", "--yes", "Edit"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    let messages: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let methods: std::collections::BTreeSet<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "run/progress",
            "run/proposal",
            "run/state",
            "ui/notify",
            "ui/render"
        ]
        .into_iter()
        .collect()
    );
    let last_state = messages
        .iter()
        .rev()
        .find(|m| m["method"] == "run/state")
        .unwrap();
    assert_eq!(last_state["params"]["status"], json!(200));
    server.stop().await;
}

/// Exit codes: a run whose context is full exits 7; an unknown flag is a usage error (2); an
/// unreachable server is 3, with what to do about it.
#[actix_rt::test]
async fn exit_codes_say_how_it_ended() {
    let server = TestServer::start_with(|c| c.models[0].context_length = Some(600)).await;
    let dir = project();

    let full = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--yes", "Edit"],
        &[],
        "",
    )
    .await;
    let unknown = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--frobnicate", "x"],
        &[],
        "",
    )
    .await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("ws://127.0.0.1:{}/ws", taken.local_addr().unwrap().port());
    drop(taken);
    let unreachable = rummy(dir.path(), Some(&closed), &["runs"], &[], "").await;

    assert_eq!((code(&full), code(&unknown), code(&unreachable)), (7, 2, 3));
    assert!(
        stdout(&full).contains("✗ context full"),
        "{}",
        stdout(&full)
    );
    assert!(
        stderr(&unknown).contains("--frobnicate"),
        "{}",
        stderr(&unknown)
    );
    assert!(
        stderr(&unreachable).contains("start one with `rummy serve`"),
        "{}",
        stderr(&unreachable)
    );
    server.stop().await;
}

/// Another process steers a run this test started: `runs` lists it, `show` shows its pending
/// edit, `reject` refuses it with a reason, `approve` accepts the next one, and `cancel`
/// cancels another run.
#[actix_rt::test]
async fn runs_show_reject_approve_and_cancel_from_another_process() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    server.provider.push(Reply::content(DONE).held(&gate));
    let dir = project();
    let url = server.url();
    let mut client = RpcClient::connect(&url).await.unwrap();
    let root = dir.path().canonicalize().unwrap().display().to_string();
    client
        .call(
            "rummy/hello",
            json!({"name": name_of(dir.path()), "projectRoot": root}),
        )
        .await
        .unwrap();
    client
        .call("set", json!({"path": "run://steered", "body": "Edit a.txt", "attributes": {"model": "fast", "mode": "act"}}))
        .await
        .unwrap();
    let first = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = first["proposed"][0]["path"].as_str().unwrap().to_owned();

    let runs = rummy(dir.path(), Some(&url), &["runs"], &[], "").await;
    let show = rummy(dir.path(), Some(&url), &["show", "steered"], &[], "").await;
    let reject = rummy(
        dir.path(),
        Some(&url),
        &["reject", "steered", &path, "--reason", "not yet"],
        &[],
        "",
    )
    .await;
    client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let approve = rummy(dir.path(), Some(&url), &["approve", "steered"], &[], "").await;
    wait_status(&mut client, "steered", 200).await;
    client
        .call(
            "set",
            json!({"path": "run://other", "body": "Wait", "attributes": {"model": "fast"}}),
        )
        .await
        .unwrap();
    let cancel = rummy(dir.path(), Some(&url), &["cancel", "other"], &[], "").await;
    wait_status(&mut client, "other", 499).await;
    gate.open();

    assert_eq!(
        [&runs, &show, &reject, &approve, &cancel].map(code),
        [0, 0, 0, 0, 0],
        "{}{}{}{}{}",
        stderr(&runs),
        stderr(&show),
        stderr(&reject),
        stderr(&approve),
        stderr(&cancel)
    );
    assert_in_order(&stdout(&runs), &["RUN", "STATUS", "steered", "waiting"]);
    assert_in_order(
        &stdout(&show),
        &["run steered", "pending proposals", "? edit a.txt", "+new"],
    );
    assert_eq!(stdout(&reject).trim(), format!("{path}: rejected: not yet"));
    assert!(
        stdout(&approve).contains(": resolved"),
        "{}",
        stdout(&approve)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(stdout(&cancel).trim(), "run other cancelled");
    let requests = server.provider.chat_requests();
    assert!(requests[1].body.to_string().contains("not yet"));
    server.stop().await;
}

/// A client bound to `dir`'s project (named as the CLI names it), with run `alias` started in
/// act mode and waiting on its first proposal; with that proposal's path.
async fn waiting_on_a_proposal(url: &str, dir: &Path, alias: &str) -> (RpcClient, String) {
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
        .call("set", json!({"path": format!("run://{alias}"), "body": "Edit a.txt", "attributes": {"model": "fast", "mode": "act"}}))
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    (client, path)
}

/// `a.txt`'s entry in run `run` and the proposal's: (body, state) and state.
async fn file_and_proposal(client: &mut RpcClient, run: &str, proposal: &str) -> (Value, Value) {
    let file = entry(client, run, "a.txt")
        .await
        .expect("a.txt is an entry");
    let proposal = entry(client, run, proposal).await.expect("the proposal");
    (
        json!([file["body"], file["state"]]),
        proposal["state"].clone(),
    )
}

/// `reject RUN a.txt` — the file name `rummy show` labels the proposal with (`edit a.txt`) —
/// rejects that proposal: it says which, the proposal is cancelled, the model reads the reason,
/// and the file's entry keeps the disk's content (it once took the reason as its body, in state
/// cancelled, and the file read as that text until it changed on disk).
#[actix_rt::test]
async fn reject_by_the_file_name_rejects_its_proposal() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let (mut client, path) = waiting_on_a_proposal(&url, dir.path(), "named").await;

    let reject = rummy(
        dir.path(),
        Some(&url),
        &["reject", "named", "a.txt", "--reason", "keep the old word"],
        &[],
        "",
    )
    .await;
    wait_status(&mut client, "named", 200).await;

    assert_eq!(
        (code(&reject), stdout(&reject).trim().to_owned()),
        (0, format!("{path}: rejected: keep the old word")),
        "{}",
        stderr(&reject)
    );
    assert_eq!(
        file_and_proposal(&mut client, "named", &path).await,
        (json!(["old\n", "resolved"]), json!("cancelled"))
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "old\n"
    );
    let requests = server.provider.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.to_string().contains("keep the old word"),
        "{}",
        requests[1].body
    );
    server.stop().await;
}

/// `approve` and `reject` given a name no pending proposal has (a file nothing acts on, or the
/// proposal once it is resolved) resolve nothing: exit 4 with a message on stderr naming the
/// run and what is pending, and the proposal, the file's entry and the disk stay as they were.
/// Named by its file, the proposal is then accepted.
#[actix_rt::test]
async fn approve_by_a_name_that_matches_nothing_exits_4_and_changes_nothing() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let (mut client, path) = waiting_on_a_proposal(&url, dir.path(), "named").await;

    let approve = rummy(
        dir.path(),
        Some(&url),
        &["approve", "named", "b.txt"],
        &[],
        "",
    )
    .await;
    let partly = rummy(
        dir.path(),
        Some(&url),
        &["approve", "named", "a.txt", "./a.txt"],
        &[],
        "",
    )
    .await;
    let reject = rummy(
        dir.path(),
        Some(&url),
        &["reject", "named", "b.txt", "--reason", "no"],
        &[],
        "",
    )
    .await;

    assert_eq!([&approve, &partly, &reject].map(code), [4, 4, 4]);
    assert_eq!(
        [&approve, &partly, &reject].map(stdout),
        ["", "", ""].map(str::to_owned)
    );
    assert_eq!(
        stderr(&approve),
        format!(
            "rummy: no pending proposal of run named is b.txt or acts on it; nothing was resolved\n  pending: {path} (edit a.txt)\n"
        )
    );
    assert!(
        stderr(&partly).contains("is ./a.txt or acts on it"),
        "{}",
        stderr(&partly)
    );
    assert!(
        stderr(&reject).contains("of run named is b.txt"),
        "{}",
        stderr(&reject)
    );
    assert_eq!(
        file_and_proposal(&mut client, "named", &path).await,
        (json!(["old\n", "resolved"]), json!("proposed"))
    );
    assert_eq!(server.provider.chat_requests().len(), 1);

    let by_file = rummy(
        dir.path(),
        Some(&url),
        &["approve", "named", "a.txt"],
        &[],
        "",
    )
    .await;
    wait_status(&mut client, "named", 200).await;
    let again = rummy(
        dir.path(),
        Some(&url),
        &["approve", "named", "a.txt"],
        &[],
        "",
    )
    .await;

    assert_eq!(
        (code(&by_file), stdout(&by_file).trim().to_owned()),
        (0, format!("{path}: resolved")),
        "{}",
        stderr(&by_file)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        (code(&again), stderr(&again)),
        (
            4,
            "rummy: run named has no pending proposal (nothing is a.txt); nothing was resolved\n"
                .to_owned()
        )
    );
    server.stop().await;
}

/// A project name another directory already has is refused with the hint to pass --project.
#[actix_rt::test]
async fn a_taken_project_name_points_to_project() {
    let server = TestServer::start().await;
    let mut client = server.project_client("taken").await;
    client.call("ping", json!({})).await.unwrap();
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--project", "taken", "x"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 4);
    assert!(
        stderr(&out).contains("pass --project NAME"),
        "{}",
        stderr(&out)
    );
    server.stop().await;
}

/// `--local` runs a server in the process on the home's database; while that home's server
/// runs, it refuses and points to the running server instead.
#[actix_rt::test]
async fn local_runs_in_process_and_refuses_a_home_in_use() {
    let home = TempDir::new().unwrap();
    let home_path = home.path().display().to_string();
    let database = crate::support::database::vars(home.path());
    let mut vars = vec![
        ("RUMMY_HOME", home_path.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9"),
    ];
    vars.extend(database.iter().map(|(name, value)| (*name, value.as_str())));
    let dir = project();

    let alone = rummy(dir.path(), None, &["models", "--local"], &vars, "").await;
    assert_eq!(code(&alone), 0, "{}", stderr(&alone));
    assert_in_order(&stdout(&alone), &["ALIAS", "fast", "openai", "fake-model"]);
    if crate::support::database::on_postgres() {
        return; // the SQLite file's lock: a PostgreSQL database is shared by every server
    }
    let served = ServerProcess::start(home.path(), &vars, Stdio::null());
    let refused = rummy(dir.path(), None, &["models", "--local"], &vars, "").await;
    drop(served);

    assert_eq!(code(&refused), 4, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!(
            "RUMMY_URL=ws://127.0.0.1:{}/ws",
            served_port(&refused)
        )),
        "{}",
        stderr(&refused)
    );
}

/// The port named in a refusal.
fn served_port(output: &Output) -> String {
    let text = stderr(output);
    text.split("ws://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_owned()
}

/// Runs `rummy <args>` under a pseudo-terminal (`script`), with `vars`, and answers its output.
async fn on_a_terminal(dir: &Path, url: &str, args: &str, vars: &[(&str, &str)]) -> String {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_rummy"));
    let mut script = tokio::process::Command::new("script");
    script
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .env("RUMMY_URL", url)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(30), script.output())
        .await
        .expect("ends within 30 s")
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

/// On a terminal the view has colours and a status line at the bottom (turn, tokens, cost);
/// with NO_COLOR the status line stays but no colour code is written; piped, neither.
#[actix_rt::test]
async fn the_terminal_view_has_colour_and_a_status_line_unless_piped_or_no_color() {
    let server = TestServer::start().await;
    for _ in 0..3 {
        server.provider.push(Reply::content(EDIT_A));
        server.provider.push(Reply::content(DONE));
    }
    let (a, b, c) = (project(), project(), project());
    let url = server.url();

    let tty = on_a_terminal(a.path(), &url, "act --yes Edit", &[]).await;
    let no_color = on_a_terminal(b.path(), &url, "act --yes Edit", &[("NO_COLOR", "1")]).await;
    let piped = rummy(c.path(), Some(&url), &["act", "--yes", "Edit"], &[], "").await;
    let piped = stdout(&piped);

    let colour = ["\x1b[31m", "\x1b[32m", "\x1b[7m"];
    let status = " tok · $";
    assert!(colour.iter().all(|c| tty.contains(c)), "{tty:?}");
    assert!(tty.contains(status), "{tty:?}");
    assert!(no_color.contains(status), "{no_color:?}");
    assert!(
        !no_color.contains("\x1b[3") && !no_color.contains("\x1b[7m"),
        "{no_color:?}"
    );
    assert!(
        !piped.contains(status) && !piped.contains('\x1b'),
        "{piped:?}"
    );
    server.stop().await;
}

/// `rummy demo` runs its whole scripted task in seconds with no key and exits 0: files read,
/// facts recorded, an edit accepted, a command run, the answer, and how to go on.
#[actix_rt::test]
async fn demo_runs_a_whole_task_in_seconds() {
    let home = TempDir::new().unwrap();
    let home_path = home.path().display().to_string();
    let started = std::time::Instant::now();

    let out = rummy(home.path(), None, &["demo"], &[("HOME", &home_path)], "").await;

    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_in_order(
        &stdout(&out),
        &[
            "✓ get README.md",
            "✓ set unknown://greeting/typo",
            "✓ set known://greeting/typo",
            "? edit greet.sh",
            "+echo \"Hello, ${1:-world}!\"",
            "✓ accepted",
            "? sh $ sh check.sh",
            "│ ok: greet.sh says \"Hello, rummy!\"",
            "✔ done · 4 turns",
            "1 file changed: greet.sh",
            "export OPENAI_BASE_URL",
            "rummy act",
        ],
    );
    assert!(
        !home.path().join(".rummy").exists(),
        "the demo leaves the real home alone"
    );
}

/// `--help` documents every command and the exit codes; `--version` says the version; a
/// command's help reads like a man page (its answers, its flags).
#[actix_rt::test]
async fn help_documents_the_exit_codes_and_every_command() {
    let dir = project();
    let out = rummy(dir.path(), None, &["--help"], &[], "").await;
    let version = rummy(dir.path(), None, &["--version"], &[], "").await;
    let act_help = rummy(dir.path(), None, &["act", "--help"], &[], "").await;

    assert_eq!((code(&out), code(&version), code(&act_help)), (0, 0, 0));
    assert_in_order(
        &stdout(&out),
        &[
            "serve",
            "demo",
            "ask",
            "act",
            "runs",
            "show",
            "watch",
            "approve",
            "reject",
            "inject",
            "cancel",
            "fork",
            "models",
            "routes",
            "route",
            "Exit codes:",
            "130",
        ],
    );
    assert_eq!(
        stdout(&version).trim(),
        format!("rummy {}", env!("CARGO_PKG_VERSION"))
    );
    assert_in_order(
        &stdout(&act_help),
        &[
            "[y]es",
            "[n]o",
            "[a]ll",
            "[q]uit",
            "--model",
            "--route",
            "--no-fallback",
            "--yes",
            "--no",
            "--json",
            "--local",
            "Exit codes:",
            "130",
        ],
    );
}

/// Ctrl-C while the model works cancels the run: the server ends it 499 and `rummy` exits 8.
#[actix_rt::test]
async fn ctrl_c_cancels_the_run() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(DONE).held(&gate));
    let dir = project();
    let url = server.url();
    let mut watcher = RpcClient::connect(&url).await.unwrap();
    let root = dir.path().canonicalize().unwrap().display().to_string();
    watcher
        .call(
            "rummy/hello",
            json!({"name": name_of(dir.path()), "projectRoot": root}),
        )
        .await
        .unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(["act", "--run", "stopped", "Wait"])
        .current_dir(dir.path())
        .env_clear()
        .env("RUMMY_URL", &url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    watcher
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == "thinking")
        .await
        .unwrap();
    // The model call is out: rummy waits in its loop, with its Ctrl-C handler installed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = finish(child, "").await;
    gate.open();

    assert_eq!(code(&out), 8, "{}{}", stdout(&out), stderr(&out));
    assert_in_order(&stdout(&out), &["cancelling the run", "✗ cancelled"]);
    let run = watcher
        .call("getRun", json!({"run": "stopped"}))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(499));
    server.stop().await;
}

/// A run that reaches `RUMMY_MAX_TURNS` without concluding exits 9 (the server says why a
/// loop stopped in `stopReason`).
#[actix_rt::test]
async fn a_run_stopped_at_the_turn_limit_exits_9() {
    let server = TestServer::start_with(|c| c.limits.max_turns = 2).await;
    for n in 0..3 {
        server.provider.push(Reply::content(format!(
            "<set path=\"known://n{n}\">{n}</set>\n<update status=\"102\">step {n}</update>"
        )));
    }
    let dir = project();

    let out = rummy(dir.path(), Some(&server.url()), &["act", "Count"], &[], "").await;

    assert_eq!(code(&out), 9, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("stopped at the turn limit"));
    server.stop().await;
}

/// `--project NAME` opens an existing project by its name alone, from any directory.
#[actix_rt::test]
async fn project_opens_an_existing_project_by_name_from_elsewhere() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("named").await;
    crate::support::start_run(&mut client, "run://far", "Hi").await;
    wait_status(&mut client, "far", 200).await;
    let elsewhere = TempDir::new().unwrap();

    let out = rummy(
        elsewhere.path(),
        Some(&server.url()),
        &["runs", "--project", "named"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_in_order(&stdout(&out), &["RUN", "far", "done"]);
    server.stop().await;
}

/// `--no` rejects every proposal without asking (a dry run): the file stays as it was.
#[actix_rt::test]
async fn act_no_is_a_dry_run() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(
        dir.path(),
        Some(&server.url()),
        &["act", "--no", "Edit"],
        &[],
        "",
    )
    .await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "old\n"
    );
    assert_in_order(
        &stdout(&out),
        &[
            "? edit a.txt",
            "✗ rejected: rejected without asking",
            "no file changed",
        ],
    );
    server.stop().await;
}

/// `rummy ask` starts the run in ask mode: an edit the model tries is refused (403), shown as
/// a failed command, and nothing is proposed.
#[actix_rt::test]
async fn ask_mode_changes_no_file() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();

    let out = rummy(dir.path(), Some(&server.url()), &["ask", "Edit"], &[], "").await;

    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert_in_order(
        &text,
        &["rummy ask", "✗ set a.txt  403 permission", "✔ done"],
    );
    assert!(!text.contains("[y]es"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "old\n"
    );
    server.stop().await;
}

/// `rummy watch` attaches to a run started elsewhere: its pending proposal is asked here,
/// accepted, and the run is followed to its end.
#[actix_rt::test]
async fn watch_attaches_and_answers_a_pending_proposal() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let mut client = RpcClient::connect(&url).await.unwrap();
    let root = dir.path().canonicalize().unwrap().display().to_string();
    client
        .call(
            "rummy/hello",
            json!({"name": name_of(dir.path()), "projectRoot": root}),
        )
        .await
        .unwrap();
    client
        .call(
            "set",
            json!({"path": "run://watched", "body": "Edit a.txt", "attributes": {"model": "fast", "mode": "act"}}),
        )
        .await
        .unwrap();
    client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();

    let out = rummy(dir.path(), Some(&url), &["watch", "watched"], &[], "y\n").await;

    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_in_order(
        &stdout(&out),
        &[
            "rummy watching watched · waiting",
            "? edit a.txt",
            "+new",
            "✓ accepted",
            "a.txt now says new",
            "✔ done",
            "1 file changed: a.txt",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "new\n"
    );
    server.stop().await;
}

/// Adds `deep` (another model on the fake provider) with code prompts routed to it, and
/// `backup` (on a second fake provider) as `fast`'s fallback.
fn routes_and_fallback(config: &mut rummy::config::Config, backup_url: String) {
    config.models[0].fallback = Some("backup".into());
    for (alias, actual) in [("deep", "openai/deep-model"), ("backup", "ollama/small")] {
        config.models.push(rummy_store::models::ModelSeed {
            alias: alias.into(),
            actual: actual.into(),
            context_length: Some(32_768),
            fallback: None,
        });
    }
    config.providers.ollama = Some(rummy::config::OllamaConfig {
        base_url: backup_url,
    });
    config
        .providers
        .routing
        .classes
        .insert(rummy_provider::routing::PromptClass::Code, "deep".into());
}

/// `rummy routes` prints the class → model map; `rummy route check` the class, the model and
/// why, with `--run` as that run decides (routing off, saying so), and `--json` the answer
/// itself; a run that does not exist is a refused call (4).
#[actix_rt::test]
async fn routes_and_route_check_show_the_map_and_the_decision() {
    let backup = rummy_testkit::FakeProvider::start().unwrap();
    let backup_url = backup.base_url();
    let server = TestServer::start_with(move |c| routes_and_fallback(c, backup_url)).await;
    server.provider.set_fallback(Reply::content(DONE));
    let dir = project();
    let url = server.url();
    let plain = rummy(
        dir.path(),
        Some(&url),
        &["ask", "--model", "fast", "--run", "plain", "hello"],
        &[],
        "",
    )
    .await;

    let routes = rummy(dir.path(), Some(&url), &["routes"], &[], "").await;
    let check = rummy(
        dir.path(),
        Some(&url),
        &[
            "route",
            "check",
            "why",
            "does",
            "./src/main.rs:42",
            "panic?",
        ],
        &[],
        "",
    )
    .await;
    let off = rummy(
        dir.path(),
        Some(&url),
        &[
            "route",
            "check",
            "--run",
            "plain",
            "--json",
            "see ./src/main.rs",
        ],
        &[],
        "",
    )
    .await;
    let missing = rummy(
        dir.path(),
        Some(&url),
        &["route", "check", "--run", "nobody", "x"],
        &[],
        "",
    )
    .await;

    assert_eq!(
        [&plain, &routes, &check, &off, &missing].map(code),
        [0, 0, 0, 0, 4],
        "{}{}{}{}",
        stderr(&plain),
        stderr(&routes),
        stderr(&check),
        stderr(&off)
    );
    assert_eq!(
        stdout(&routes),
        "CLASS      MODEL            SETTING\n\
         code       deep             RUMMY_ROUTE_CODE\n\
         reasoning  -                RUMMY_ROUTE_REASONING\n\
         default    -                RUMMY_ROUTE_DEFAULT\n\
         runs started with --route send each loop to its class's model; `-` keeps the run's own\n"
    );
    assert_eq!(
        stdout(&check),
        "class    code\n\
         model    deep\n\
         routing  on\n\
         why      a run with route: true sends code prompts to deep: RUMMY_ROUTE_CODE\n"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&off)).unwrap(),
        json!({ "class": "code", "mapped": "deep", "run": "plain", "routing": false, "model": "fast",
                "reason": "routing is off for run plain (its route setting is not true): its own model fast answers; with route: true it would go to deep (RUMMY_ROUTE_CODE)" })
    );
    assert!(
        stderr(&missing).contains("run \"nobody\" not found"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(backup.chat_requests().len(), 0);
    server.stop().await;
}

/// `ask --route` sends a code prompt to the model its class maps to; `ask --no-fallback` keeps
/// a failing call off the fallback: the run fails (5) and the backup is never asked.
#[actix_rt::test]
async fn ask_route_and_no_fallback_switch_the_run() {
    let backup = rummy_testkit::FakeProvider::start().unwrap();
    backup.set_fallback(Reply::content(DONE));
    let backup_url = backup.base_url();
    let server = TestServer::start_with(move |c| routes_and_fallback(c, backup_url)).await;
    server.provider.push(Reply::content(DONE));
    server.provider.push(Reply::status(
        404,
        json!({"error": {"code": "model_not_found", "message": "The model `fake-model` does not exist"}}),
    ));
    let dir = project();
    let url = server.url();

    let routed = rummy(
        dir.path(),
        Some(&url),
        &[
            "ask",
            "--model",
            "fast",
            "--route",
            "look",
            "at",
            "./src/main.rs",
        ],
        &[],
        "",
    )
    .await;
    let strict = rummy(
        dir.path(),
        Some(&url),
        &["ask", "--model", "fast", "--no-fallback", "hello"],
        &[],
        "",
    )
    .await;

    assert_eq!(
        (code(&routed), code(&strict)),
        (0, 5),
        "{}{}",
        stderr(&routed),
        stdout(&strict)
    );
    let models: Vec<Value> = server
        .provider
        .chat_requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, vec![json!("deep-model"), json!("fake-model")]);
    assert_eq!(backup.chat_requests().len(), 0);
    server.stop().await;
}
