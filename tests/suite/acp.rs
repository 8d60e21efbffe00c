//! `rummy acp`'s side of the line, driven with raw JSON-RPC lines (the editor's side, on the
//! official ACP SDK, is in `tests/needs/acp.rs`): what an editor sends wrong is answered with
//! an error and the agent goes on; with `--local` it runs a server of its own.

use super::cli::{code, command, rummy, stdout};
use crate::support::WAIT;
use pretty_assertions::assert_eq;
use rummy_testkit::{FakeProvider, Reply};
use serde_json::{json, Value};
use std::process::Stdio;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A line that is not JSON (-32700, id null), an unknown method (-32601), params that do not
/// read (-32602, naming the field) and a prompt for a session it does not have (-32002) are
/// each answered; a notification it does not know is ignored; a good `initialize` after them
/// is answered as usual, and when the editor closes stdin `rummy acp` ends 0 with every answer
/// written.
#[actix_rt::test]
async fn an_editors_mistakes_are_answered_and_rummy_acp_goes_on() {
    let dir = TempDir::new().unwrap();
    let input = [
        "not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"session/fly","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"one"}}"#,
        r#"{"jsonrpc":"2.0","method":"nobody/listens","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"acp_none","prompt":[{"type":"text","text":"hi"}]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":7}}"#,
    ]
    .join("\n")
        + "\n";
    let out = rummy(
        dir.path(),
        Some("ws://127.0.0.1:9/ws"),
        &["acp"],
        &[],
        &input,
    )
    .await;
    assert_eq!(code(&out), 0);
    let answers: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 5, "{answers:#?}");
    assert_eq!(
        (
            answers[0]["id"].clone(),
            answers[0]["error"]["code"].clone()
        ),
        (Value::Null, json!(-32700))
    );
    assert_eq!(
        answers[1],
        json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32601, "message": "rummy acp does not serve session/fly" } })
    );
    assert_eq!(answers[2]["error"]["code"], -32602);
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params: protocolVersion: "),
        "{}",
        answers[2]
    );
    assert_eq!(
        answers[3]["error"],
        json!({ "code": -32002, "message": "no session acp_none here: open it with session/new or session/load" })
    );
    assert_eq!(answers[4]["id"], 4);
    assert_eq!(answers[4]["result"]["protocolVersion"], 1);
}

/// `rummy acp` driven a line at a time.
struct Agent {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Agent {
    fn start(dir: &std::path::Path, args: &[&str], vars: &[(&str, &str)]) -> Agent {
        let args: Vec<&str> = std::iter::once("acp").chain(args.iter().copied()).collect();
        let mut child = command(dir, &args, vars)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Agent {
            child,
            stdin,
            lines,
        }
    }

    /// `session/new` at `cwd`: the session's id.
    async fn session(&mut self, cwd: &std::path::Path) -> String {
        let answer = self
            .call(1, "session/new", json!({ "cwd": cwd, "mcpServers": [] }))
            .await;
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new: {answer}"))
            .to_owned()
    }

    /// A text prompt to `session`: its answer.
    async fn prompt(&mut self, session: &str, text: &str) -> Value {
        let params = json!({ "sessionId": session, "prompt": [{ "type": "text", "text": text }] });
        self.call(2, "session/prompt", params).await
    }

    /// Sends request `id` and answers its answer, skipping the notifications before it.
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("rummy acp still writes");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

/// A server that cannot be reached is said so when a session opens, with what to do; with
/// `--local`, `rummy acp` runs a server in its own process on `$RUMMY_HOME`, and a prompt
/// goes through it to the model and back.
#[actix_rt::test]
async fn with_local_rummy_acp_runs_its_own_server() {
    let dir = TempDir::new().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut unreachable = Agent::start(&cwd, &[], &[("RUMMY_URL", "ws://127.0.0.1:9/ws")]);
    let refused = unreachable
        .call(1, "session/new", json!({ "cwd": cwd, "mcpServers": [] }))
        .await;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("cannot reach the rummy server at ws://127.0.0.1:9/ws: ")
            && message.ends_with("or add --local to run one in this process)"),
        "{refused}"
    );

    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content(
        "<update status=\"200\">answered in process</update>",
    ));
    let home = TempDir::new().unwrap();
    let home_path = home.path().display().to_string();
    let base_url = provider.base_url();
    let database = crate::support::database::vars(home.path());
    let mut vars = vec![
        ("RUMMY_HOME", home_path.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        ("OPENAI_BASE_URL", base_url.as_str()),
    ];
    vars.extend(database.iter().map(|(name, value)| (*name, value.as_str())));
    let mut agent = Agent::start(&cwd, &["--local"], &vars);
    let session = agent.session(&cwd).await;
    let answer = agent.prompt(&session, "Hello?").await;
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    drop(agent.stdin);
    let status = tokio::time::timeout(WAIT, agent.child.wait())
        .await
        .expect("rummy acp ends with its stdin")
        .unwrap();
    assert!(status.success());
}

/// Where the server refuses the editor's directory as a project (its name is taken by a
/// project rooted elsewhere), opening a session says to name one with `--project`; started with
/// `--project NAME`, the session opens that project instead, and its run is there.
#[actix_rt::test]
async fn a_refused_directory_opens_the_project_named_by_project() {
    let server = crate::support::TestServer::start().await;
    let url = server.url();
    let mut owner = server.project_client("shared").await;
    let parent = TempDir::new().unwrap();
    let cwd = parent.path().join("shared");
    std::fs::create_dir(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();

    let mut refused = Agent::start(&cwd, &[], &[("RUMMY_URL", url.as_str())]);
    let answer = refused
        .call(1, "session/new", json!({ "cwd": cwd, "mcpServers": [] }))
        .await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("start rummy acp with --project NAME"),
        "{answer}"
    );

    server.provider.push(Reply::content(
        "<update status=\"200\">in the shared project</update>",
    ));
    let mut agent = Agent::start(
        &cwd,
        &["--project", "shared"],
        &[("RUMMY_URL", url.as_str())],
    );
    let session = agent.session(&cwd).await;
    let answer = agent.prompt(&session, "Hello?").await;
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let run = owner
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    assert_eq!(run["status"], 200);
}
