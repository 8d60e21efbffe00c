//! `rummy acp` driven by an editor: the built binary, started by a small ACP client written on
//! the official TypeScript SDK's client side (`tests/acp/editor.mjs`, which needs Node.js and
//! `npm ci --prefix tests/acp`), against the real server on loopback and the fake provider.

use crate::parts::Need;
use crate::support::{TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::ShellRunner;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The `rummy acp` tests: they need Node.js and the test editor's SDK.
pub fn register(suites: &mut crate::Suites, need: &Need) {
    suites.add_async(
        "acp::an_editor_prompts_a_run_and_accepts_its_edit",
        need,
        an_editor_prompts_a_run_and_accepts_its_edit,
    );
    suites.add_async(
        "acp::initialize_states_what_rummy_can_do",
        need,
        initialize_states_what_rummy_can_do,
    );
    suites.add_async(
        "acp::a_rejected_edit_reaches_the_model_with_the_editors_reason",
        need,
        a_rejected_edit_reaches_the_model_with_the_editors_reason,
    );
    suites.add_async(
        "acp::allow_always_accepts_the_next_edit_without_asking",
        need,
        allow_always_accepts_the_next_edit_without_asking,
    );
    suites.add_async(
        "acp::a_run_started_elsewhere_loads_with_its_loops_and_goes_on",
        need,
        a_run_started_elsewhere_loads_with_its_loops_and_goes_on,
    );
    suites.add_async(
        "acp::a_proposal_answered_on_another_client_is_withdrawn_from_the_editor",
        need,
        a_proposal_answered_on_another_client_is_withdrawn_from_the_editor,
    );
    suites.add_async(
        "acp::loops_end_with_acp_stop_reasons",
        need,
        loops_end_with_acp_stop_reasons,
    );
    suites.add_async(
        "acp::a_question_ends_the_prompt_and_the_next_prompt_answers_it",
        need,
        a_question_ends_the_prompt_and_the_next_prompt_answers_it,
    );
    suites.add_async(
        "acp::mode_and_model_are_session_options",
        need,
        mode_and_model_are_session_options,
    );
    suites.add_async(
        "acp::a_command_the_server_runs_streams_into_its_tool_call",
        need,
        a_command_the_server_runs_streams_into_its_tool_call,
    );
    suites.add_async(
        "acp::a_command_for_the_client_runs_in_the_editors_terminal",
        need,
        a_command_for_the_client_runs_in_the_editors_terminal,
    );
    suites.add_async(
        "acp::without_a_terminal_rummy_acp_runs_the_command_itself",
        need,
        without_a_terminal_rummy_acp_runs_the_command_itself,
    );
    suites.add_async(
        "acp::a_session_goes_on_after_the_server_restarts",
        need,
        a_session_goes_on_after_the_server_restarts,
    );
    suites.add_async(
        "acp::an_mcp_server_that_does_not_start_leaves_the_session_open",
        need,
        an_mcp_server_that_does_not_start_leaves_the_session_open,
    );
    suites.add_async(
        "acp::the_editors_mcp_tool_is_called_by_rummy_acp_once_allowed",
        need,
        the_editors_mcp_tool_is_called_by_rummy_acp_once_allowed,
    );
    suites.add_async(
        "acp::a_dead_mcp_server_fails_its_calls_and_allow_always_allows_the_same_tool",
        need,
        a_dead_mcp_server_fails_its_calls_and_allow_always_allows_the_same_tool,
    );
    suites.add_async(
        "acp::a_loaded_session_runs_the_editors_mcp_servers_once",
        need,
        a_loaded_session_runs_the_editors_mcp_servers_once,
    );
    suites.add_async(
        "acp::a_cancelled_call_frees_its_mcp_server_for_the_next",
        need,
        a_cancelled_call_frees_its_mcp_server_for_the_next,
    );
    suites.add_async(
        "acp::the_editors_tools_are_offered_again_after_the_server_restarts",
        need,
        the_editors_tools_are_offered_again_after_the_server_restarts,
    );
}

/// Where the test editor is.
fn editor_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp")
}

/// Why the test editor cannot run here, if it cannot.
pub fn missing() -> Option<String> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !node.is_ok_and(|s| s.success()) {
        return Some("no Node.js: `node` is not on PATH (apt-get install nodejs npm)".to_owned());
    }
    let sdk = editor_dir().join("node_modules/@agentclientprotocol/sdk/package.json");
    (!sdk.is_file() || !everything().is_file()).then(|| {
        "the test editor's ACP SDK or its MCP server is not installed: run \
         `npm ci --prefix tests/acp`"
            .to_owned()
    })
}

/// The MCP server the test editor names: server-everything's entry point.
fn everything() -> PathBuf {
    editor_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The ACP client on the SDK, with `rummy acp` as its agent, driven a line at a time.
struct Editor {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: mpsc::UnboundedReceiver<Value>,
    /// Every line the editor printed, in order, and whether a wait took it.
    log: Vec<(Value, bool)>,
    next_id: u64,
}

impl Editor {
    /// Starts the editor, which starts `rummy acp <args>` against `url`.
    async fn start(url: &str, args: &[&str], vars: &[(&str, &str)]) -> Editor {
        Editor::start_with(url, args, vars, false).await
    }

    /// [`Editor::start`]; with `terminal`, the editor offers a terminal.
    async fn start_with(url: &str, args: &[&str], vars: &[(&str, &str)], terminal: bool) -> Editor {
        let mut command = tokio::process::Command::new("node");
        command.arg(editor_dir().join("editor.mjs"));
        if terminal {
            command.arg("--terminal");
        }
        command
            .arg(env!("CARGO_BIN_EXE_rummy"))
            .arg("acp")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUMMY_URL", url)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("node starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        actix_rt::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the editor printed {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Editor {
            child,
            stdin,
            lines,
            log: Vec::new(),
            next_id: 1,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends request `method`; answers its id (see [`Editor::result`]).
    async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "id": id, "request": method, "params": params }))
            .await;
        id
    }

    /// Calls `method` and waits for its answer.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.request(method, params).await;
        self.result(id).await
    }

    /// The answer to request `id`: its result, or its error.
    async fn result(&mut self, id: u64) -> Result<Value, Value> {
        let line = self
            .wait_for(&format!("the answer to request {id}"), |l| {
                l["id"].as_u64() == Some(id)
            })
            .await;
        match line.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(line["result"].clone()),
        }
    }

    /// The first line not taken yet that `wanted` matches, read as it comes (at most [`WAIT`]).
    async fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut checked = 0;
        loop {
            while checked < self.log.len() {
                let (line, taken) = &mut self.log[checked];
                if !*taken && wanted(line) {
                    *taken = true;
                    return line.clone();
                }
                checked += 1;
            }
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => self.log.push((line, false)),
                Ok(None) => panic!(
                    "the editor ended waiting for {what}; it printed:\n{}",
                    self.dump()
                ),
                Err(_) => panic!(
                    "no {what} within {WAIT:?}; the editor printed:\n{}",
                    self.dump()
                ),
            }
        }
    }

    /// The next `session/update` of kind `kind` (`tool_call`, `agent_message_chunk`, …).
    async fn update(&mut self, kind: &str) -> Value {
        let line = self
            .wait_for(&format!("a {kind} update"), |l| {
                l["update"]["update"]["sessionUpdate"] == kind
            })
            .await;
        line["update"]["update"].clone()
    }

    /// How prompt request `id` ended: its `stopReason` (an error fails the test).
    async fn stop_reason(&mut self, id: u64) -> String {
        let result = self
            .result(id)
            .await
            .expect("the prompt ends without an error");
        result["stopReason"].as_str().unwrap_or_default().to_owned()
    }

    /// Waits for the next permission request and answers it with `option`: its params.
    async fn answer_next(&mut self, option: &str) -> Value {
        let (k, asked) = self.permission().await;
        self.choose(k, option).await;
        asked
    }

    /// The next permission request: its number and params.
    async fn permission(&mut self) -> (u64, Value) {
        let line = self
            .wait_for("a permission request", |l| l.get("permission").is_some())
            .await;
        (line["permission"].as_u64().unwrap(), line["params"].clone())
    }

    /// Answers permission request `k` with option `option`.
    async fn choose(&mut self, k: u64, option: &str) {
        self.send(json!({ "answer": k, "result": { "outcome": { "outcome": "selected", "optionId": option } } }))
            .await;
    }

    /// Every update seen so far of kind `kind`.
    fn updates(&self, kind: &str) -> Vec<Value> {
        self.log
            .iter()
            .map(|(l, _)| &l["update"]["update"])
            .filter(|u| u["sessionUpdate"] == kind)
            .cloned()
            .collect()
    }

    /// The agent's message so far: its `agent_message_chunk`s, joined.
    fn agent_text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn dump(&self) -> String {
        self.log
            .iter()
            .map(|(l, _)| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `initialize`, then `session/new` at `cwd`: the session's id.
    async fn open(&mut self, cwd: &Path) -> String {
        self.initialize().await;
        let session = self
            .call("session/new", json!({ "cwd": cwd, "mcpServers": [] }))
            .await
            .expect("session/new");
        session["sessionId"].as_str().unwrap().to_owned()
    }

    async fn initialize(&mut self) -> Value {
        self.call(
            "initialize",
            json!({ "protocolVersion": 1, "clientCapabilities": {} }),
        )
        .await
        .expect("initialize")
    }

    /// Sends a text prompt; answers the request's id.
    async fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({ "sessionId": session, "prompt": [{ "type": "text", "text": text }] }),
        )
        .await
    }

    /// Closes the editor's side and waits for `rummy acp` to end: it must end by itself.
    async fn close(mut self) {
        drop(self.stdin);
        let exited = tokio::time::timeout(WAIT, async {
            loop {
                match self.lines.recv().await {
                    Some(line) if line.get("exited").is_some() => return line,
                    Some(_) => {}
                    None => return Value::Null,
                }
            }
        })
        .await
        .expect("rummy acp ends when the editor closes its stdin");
        assert_eq!(exited["exited"], 0, "rummy acp's exit");
        let _ = self.child.wait().await;
    }
}

const EDIT_A: &str =
    "Changing it.\n<set path=\"a.txt\" search=\"old\" replace=\"new\"/>\n<update status=\"102\">editing a.txt</update>";
const DONE: &str = "<update status=\"200\">a.txt now says new</update>";

/// A project directory holding `a.txt` = "old\n", and its real path.
fn project() -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// A client of the server bound to the project the editor opened at `root` (named after it).
async fn project_client(server: &TestServer, root: &Path) -> RpcClient {
    let mut client = server.client().await;
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    client
        .call("rummy/hello", json!({ "name": name, "projectRoot": root }))
        .await
        .unwrap();
    client
}

/// The editor's first prompt starts a run named after the session, in act mode with the
/// server's only model: the reply's prose streams as the agent's message without its tool
/// tags (its reasoning and `<think>` as the agent's thought), the edit is a pending tool call
/// with its diff, asked with three options; allowed
/// once, the file changes, the tool call completes, the status report is said, and the prompt
/// ends `end_turn`. The run is an ordinary run: another client reads it by the session's id.
async fn an_editor_prompts_a_run_and_accepts_its_edit() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(
        Reply::content(format!("<think>old must go</think>{EDIT_A}"))
            .reasoning("reading the request"),
    );
    server.provider.push(Reply::content(DONE));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    assert!(session.starts_with("acp_"), "{session}");
    let prompt = editor.prompt(&session, "Change old to new in a.txt").await;

    let call = editor.update("tool_call").await;
    assert_eq!(call["kind"], "edit");
    // Pending is ACP's default status, left out.
    assert_eq!(call["status"].as_str().unwrap_or("pending"), "pending");
    assert_eq!(call["title"], "Edit a.txt");
    assert_eq!(
        call["content"][0],
        json!({ "type": "diff", "path": root.join("a.txt"), "oldText": "old\n", "newText": "new\n" })
    );
    let (k, asked) = editor.permission().await;
    assert_eq!(asked["sessionId"], session);
    assert_eq!(asked["toolCall"]["toolCallId"], call["toolCallId"]);
    let options: Vec<(&str, &str)> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        vec![
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject", "reject_once")
        ]
    );
    assert_eq!(
        asked["options"][1]["name"],
        "Always allow edits in this session"
    );
    editor.choose(k, "allow_once").await;

    assert_eq!(
        editor.result(prompt).await.unwrap(),
        json!({ "stopReason": "end_turn" })
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "new\n"
    );
    let text = editor.agent_text();
    assert!(text.starts_with("Changing it.\n"), "{text:?}");
    assert!(
        !text.contains('<'),
        "no tool tag reaches the editor: {text:?}"
    );
    assert!(text.contains("editing a.txt\n"), "{text:?}");
    assert!(text.ends_with("a.txt now says new\n"), "{text:?}");
    // The provider's reasoning and the reply's <think> are the agent's thought, not its message.
    let thought: String = editor
        .updates("agent_thought_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(thought, "reading the requestold must go");
    let completed = editor
        .updates("tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == call["toolCallId"])
        .expect("the edit's tool call is updated");
    assert_eq!(completed["status"], "completed");

    let mut page = project_client(&server, &root).await;
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    assert_eq!(
        (
            run["status"].clone(),
            run["mode"].clone(),
            run["model"].clone()
        ),
        (json!(200), json!("act"), json!("fast"))
    );
    editor.close().await;
}

/// `initialize` says what rummy does and does not: sessions load, images and audio are not
/// taken, resources are; the token comes from `RUMMY_TOKEN`. A new session lists ask and act
/// as its modes and as a config option beside the model.
async fn initialize_states_what_rummy_can_do() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let init = editor.initialize().await;
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"],
        json!({ "image": false, "audio": false, "embeddedContext": true })
    );
    assert_eq!(init["authMethods"][0]["id"], "rummy_token");
    assert_eq!(init["authMethods"][0]["name"], "RUMMY_TOKEN");
    assert_eq!(init["agentInfo"]["name"], "rummy");
    // Without a token in its environment, authenticating says where it comes from.
    let refused = editor
        .call("authenticate", json!({ "methodId": "rummy_token" }))
        .await
        .unwrap_err();
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("RUMMY_TOKEN is not set"),
        "{refused}"
    );

    let session = editor
        .call("session/new", json!({ "cwd": root, "mcpServers": [] }))
        .await
        .unwrap();
    assert_eq!(session["modes"]["currentModeId"], "act");
    let modes: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, vec!["ask", "act"]);
    let options: Vec<(&str, &str)> = session["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap(),
                o["currentValue"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(options, vec![("mode", "act"), ("model", "fast")]);

    // An image is refused with what to do; nothing is started.
    let id = session["sessionId"].as_str().unwrap();
    let image = editor
        .call(
            "session/prompt",
            json!({ "sessionId": id, "prompt": [{ "type": "image", "data": "aGk=", "mimeType": "image/png" }] }),
        )
        .await
        .unwrap_err();
    assert_eq!(image["code"], -32602);
    assert!(
        image["message"]
            .as_str()
            .unwrap()
            .starts_with("rummy does not support images"),
        "{image}"
    );
    let mut page = project_client(&server, &root).await;
    let runs = page.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs, json!([]));
    editor.close().await;
}

/// A reject in the editor rejects the proposal with the fixed reason the model reads, and the
/// file stays as it was.
async fn a_rejected_edit_reaches_the_model_with_the_editors_reason() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(
        "<update status=\"200\">left a.txt alone</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Change a.txt").await;
    let asked = editor.answer_next("reject").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "old\n"
    );
    let mut page = project_client(&server, &root).await;
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap();
    let proposal = run["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == path)
        .unwrap()
        .clone();
    assert_eq!(
        (proposal["state"].clone(), proposal["outcome"].clone()),
        (json!("cancelled"), json!("rejected in the editor"))
    );
    let rejected = editor
        .updates("tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == path)
        .unwrap();
    assert_eq!(rejected["status"], "failed");
    assert_eq!(
        rejected["content"][1]["content"]["text"],
        "Rejected: rejected in the editor"
    );
    editor.close().await;
}

/// "Always allow edits" accepts that edit and every later one of the session without asking.
async fn allow_always_accepts_the_next_edit_without_asking() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    std::fs::write(root.join("b.txt"), "old\n").unwrap();
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(
        "<set path=\"b.txt\" search=\"old\" replace=\"new\"/>\n<update status=\"102\">b too</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">both say new</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Change both files").await;
    editor.answer_next("allow_always").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    for file in ["a.txt", "b.txt"] {
        assert_eq!(std::fs::read_to_string(root.join(file)).unwrap(), "new\n");
    }
    let asked = editor
        .log
        .iter()
        .filter(|(l, _)| l.get("permission").is_some())
        .count();
    assert_eq!(asked, 1, "the second edit is not asked");
    editor.close().await;
}

/// A run another client started opens in the editor by its alias: its loops replay — the
/// prompt as the user's message, the status report as the agent's, its commands as finished
/// tool calls — and the editor's next prompt continues it.
async fn a_run_started_elsewhere_loads_with_its_loops_and_goes_on() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut cli = project_client(&server, &root).await;
    server.provider.push(Reply::content(
        "<get path=\"a.txt\"/>\n<update status=\"102\">reading</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">a.txt says old</update>",
    ));
    cli.call(
        "set",
        json!({ "path": "run://fix", "body": "What does a.txt say?", "attributes": { "model": "fast", "mode": "ask" } }),
    )
    .await
    .unwrap();
    crate::support::wait_status(&mut cli, "fix", 200).await;

    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    editor.initialize().await;
    let loaded = editor
        .call(
            "session/load",
            json!({ "sessionId": "fix", "cwd": root, "mcpServers": [] }),
        )
        .await
        .unwrap();
    assert_eq!(loaded["modes"]["currentModeId"], "ask");
    let replay: Vec<String> = editor
        .log
        .iter()
        .map(|(l, _)| &l["update"]["update"])
        .filter(|u| u.is_object())
        .map(|u| match u["sessionUpdate"].as_str().unwrap() {
            "user_message_chunk" => format!("user: {}", u["content"]["text"].as_str().unwrap()),
            "agent_message_chunk" => {
                format!("agent: {}", u["content"]["text"].as_str().unwrap().trim())
            }
            "tool_call" => format!("{}: {} ({})", u["kind"], u["title"], u["status"]),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        replay,
        vec![
            "user: What does a.txt say?".to_owned(),
            "\"read\": \"get a.txt\" (\"completed\")".to_owned(),
            "agent: reading".to_owned(),
            "agent: a.txt says old".to_owned(),
        ]
    );
    server
        .provider
        .push(Reply::content("<update status=\"200\">still old</update>"));
    let prompt = editor.prompt("fix", "And now?").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    assert!(editor.agent_text().ends_with("still old\n"));
    let run = cli.call("getRun", json!({ "run": "fix" })).await.unwrap();
    assert_eq!(run["status"], 200);
    editor.close().await;
}

/// A proposal the page (or the CLI) answers first is withdrawn from the editor — its dialog
/// cancelled — and its tool call says it was answered elsewhere.
async fn a_proposal_answered_on_another_client_is_withdrawn_from_the_editor() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(EDIT_A));
    server.provider.push(Reply::content(DONE));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Change a.txt").await;
    let (k, asked) = editor.permission().await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    let mut page = project_client(&server, &root).await;
    crate::support::accept(&mut page, &session, &path).await;
    let withdrawn = editor
        .wait_for("the permission request withdrawn", |l| {
            l["permissionCancelled"].as_u64() == Some(k)
        })
        .await;
    assert_eq!(withdrawn["permissionCancelled"], k);
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let shown = editor
        .updates("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == path.as_str())
        .map(|u| u.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        shown.contains("Accepted elsewhere (the page or the CLI)"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "new\n"
    );
    editor.close().await;
}

/// A loop at the turn limit ends `max_turn_requests`; `session/cancel` cancels the loop, which
/// ends `cancelled`; a failed loop answers the prompt with an error carrying its reason.
async fn loops_end_with_acp_stop_reasons() {
    let server = TestServer::start_with(|c| c.limits.max_turns = 1).await;
    let (_dir, root) = project();
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;

    server.provider.push(Reply::content(
        "<update status=\"102\">still reading</update>",
    ));
    let prompt = editor.prompt(&session, "Read everything").await;
    assert_eq!(editor.stop_reason(prompt).await, "max_turn_requests");

    let gate = Gate::new();
    server
        .provider
        .push(Reply::content("<update status=\"200\">late</update>").held(&gate));
    let mut page = project_client(&server, &root).await;
    let prompt = editor.prompt(&session, "Again").await;
    let run = session.clone();
    page.wait_for_notification("run/progress", WAIT, move |p| {
        p["run"] == run.as_str() && p["status"] == "thinking"
    })
    .await
    .expect("the loop calls the model");
    editor
        .send(json!({ "notify": "session/cancel", "params": { "sessionId": session } }))
        .await;
    assert_eq!(editor.stop_reason(prompt).await, "cancelled");
    gate.open();

    server.provider.push(Reply::status(
        400,
        "{\"error\":{\"message\":\"the model is gone\"}}",
    ));
    let prompt = editor.prompt(&session, "Once more").await;
    let failed = editor.result(prompt).await.unwrap_err();
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("the run's loop ended 500 (failed): "),
        "{failed}"
    );
    editor.close().await;
}

/// The model's question ends the prompt with the question and its options as the agent's
/// message; the next prompt is its answer, and the loop goes on with it.
async fn a_question_ends_the_prompt_and_the_next_prompt_answers_it() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(
        "<ask_user question=\"Which word?\">new; newer</ask_user>\n<update status=\"102\">asking</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">you said newer</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Change a.txt").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let text = editor.agent_text();
    assert!(
        text.contains("Which word?\n\nOptions:\n- new\n- newer"),
        "{text:?}"
    );
    let prompt = editor.prompt(&session, "newer").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    assert!(editor.agent_text().ends_with("you said newer\n"));
    let mut page = project_client(&server, &root).await;
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    let question = run["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["proposal"] == "ask_user")
        .unwrap()
        .clone();
    assert_eq!(question["state"], "resolved");
    assert_eq!(question["body"], "newer");
    editor.close().await;
}

/// The mode and the model are set as config options (and the mode as a mode): the run, once
/// it exists, is configured so, as the page sees it.
async fn mode_and_model_are_session_options() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let set = editor
        .call(
            "session/set_config_option",
            json!({ "sessionId": session, "configId": "mode", "value": "ask" }),
        )
        .await
        .unwrap();
    assert_eq!(set["configOptions"][0]["currentValue"], "ask");
    let unknown = editor
        .call(
            "session/set_config_option",
            json!({ "sessionId": session, "configId": "model", "value": "nope" }),
        )
        .await
        .unwrap_err();
    assert_eq!(
        unknown["message"],
        "no model nope on this server: it has fast"
    );
    server
        .provider
        .push(Reply::content("<update status=\"200\">asked</update>"));
    let prompt = editor.prompt(&session, "What is a.txt?").await;
    editor.result(prompt).await.unwrap();
    let mut page = project_client(&server, &root).await;
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    assert_eq!(run["mode"], "ask");
    editor
        .call(
            "session/set_mode",
            json!({ "sessionId": session, "modeId": "act" }),
        )
        .await
        .unwrap();
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    assert_eq!(run["mode"], "act");
    editor.close().await;
}

const ECHO: &str =
    "<sh>echo hello from the command</sh>\n<update status=\"102\">running it</update>";
const RAN: &str = "<update status=\"200\">it said hello</update>";

/// The proposal of a run's history at `path`, as another client reads it.
async fn history_item(page: &mut RpcClient, run: &str, path: &str) -> Value {
    let run = page.call("getRun", json!({ "run": run })).await.unwrap();
    run["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == path)
        .cloned()
        .unwrap_or(Value::Null)
}

/// With the server's runner (the default), an accepted command runs on the server: its tool
/// call is an `execute` one with its line, and its output shows in its content as it streams;
/// it completes with its exit code.
async fn a_command_the_server_runs_streams_into_its_tool_call() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(ECHO));
    server.provider.push(Reply::content(RAN));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Say hello").await;
    let call = editor.update("tool_call").await;
    assert_eq!(
        (call["kind"].clone(), call["title"].clone()),
        (json!("execute"), json!("echo hello from the command"))
    );
    let (k, asked) = editor.permission().await;
    assert_eq!(
        asked["options"][1]["name"],
        "Always allow `echo hello from the command` in this session"
    );
    editor.choose(k, "allow_once").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let updates = editor
        .updates("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == call["toolCallId"])
        .collect::<Vec<_>>();
    let shown = updates
        .iter()
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .next_back()
        .unwrap();
    assert_eq!(
        shown,
        "$ echo hello from the command\nhello from the command\n"
    );
    assert_eq!(updates.last().unwrap()["status"], "completed");
    editor.close().await;
}

/// With `RUMMY_COMMAND_RUNNER=client`, an editor that offers a terminal runs the command the
/// editor accepted there (`terminal/create` in the project root); `rummy acp` streams its
/// output to the server, which records it, and the run goes on with it.
async fn a_command_for_the_client_runs_in_the_editors_terminal() {
    let server = TestServer::start_with(|c| c.shell.runner = ShellRunner::Client).await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(ECHO));
    server.provider.push(Reply::content(RAN));
    let mut editor = Editor::start_with(&server.url(), &[], &[], true).await;
    editor
        .call(
            "initialize",
            json!({ "protocolVersion": 1, "clientCapabilities": { "terminal": true } }),
        )
        .await
        .unwrap();
    let session = editor
        .call("session/new", json!({ "cwd": root, "mcpServers": [] }))
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let prompt = editor.prompt(&session, "Say hello").await;
    let asked = editor.answer_next("allow_once").await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    let created = editor
        .wait_for("a terminal/create", |l| l["terminal"] == "create")
        .await;
    assert_eq!(created["params"]["command"], "sh");
    assert_eq!(
        created["params"]["args"],
        json!(["-c", "echo hello from the command"])
    );
    assert_eq!(created["params"]["cwd"], json!(root));
    let terminal = editor
        .wait_for("the tool call showing the terminal", |l| {
            l["update"]["update"]["toolCallId"] == path.as_str()
                && l["update"]["update"]["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "terminal"))
        })
        .await;
    assert!(terminal.to_string().contains("term_0"), "{terminal}");
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let mut page = project_client(&server, &root).await;
    let proposal = history_item(&mut page, &session, &path).await;
    assert_eq!(proposal["attributes"]["exitCode"], 0);
    let output = history_item(&mut page, &session, &format!("{path}_1")).await;
    assert_eq!(output["body"], "hello from the command\n");
    editor.close().await;
}

/// Without a terminal from the editor, `rummy acp` runs a command for the client itself, in the
/// project root, as the CLI does.
async fn without_a_terminal_rummy_acp_runs_the_command_itself() {
    let server = TestServer::start_with(|c| c.shell.runner = ShellRunner::Client).await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(
        "<sh>pwd; echo to stderr >&2</sh>\n<update status=\"102\">running it</update>",
    ));
    server.provider.push(Reply::content(RAN));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "Where am I?").await;
    let asked = editor.answer_next("allow_once").await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let mut page = project_client(&server, &root).await;
    let stdout = history_item(&mut page, &session, &format!("{path}_1")).await;
    assert_eq!(stdout["body"], format!("{}\n", root.display()));
    let stderr = history_item(&mut page, &session, &format!("{path}_2")).await;
    assert_eq!(stderr["body"], "to stderr\n");
    assert_eq!(
        history_item(&mut page, &session, &path).await["attributes"]["exitCode"],
        0
    );
    assert!(
        !editor.log.iter().any(|(l, _)| l.get("terminal").is_some()),
        "no terminal was asked of an editor that offers none"
    );
    editor.close().await;
}

/// The server restarts between two prompts: `rummy acp` reconnects by itself (the same hello,
/// then what the run pushed meanwhile), and the session's next prompt continues its run.
async fn a_session_goes_on_after_the_server_restarts() {
    let mut server = TestServer::start().await;
    let port = server.port();
    let (_dir, root) = project();
    server.provider.push(Reply::content(
        "<update status=\"200\">before the restart</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = editor.open(&root).await;
    let prompt = editor.prompt(&session, "First").await;
    editor.result(prompt).await.unwrap();
    server.restart_with(|c| c.port = port).await;
    server.provider.push(Reply::content(
        "<update status=\"200\">after the restart</update>",
    ));
    let prompt = editor.prompt(&session, "Second").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    assert!(
        editor.agent_text().ends_with("after the restart\n"),
        "{}",
        editor.agent_text()
    );
    let mut page = project_client(&server, &root).await;
    let run = page
        .call("getRun", json!({ "run": session }))
        .await
        .unwrap();
    assert_eq!(run["turn"], 2);
    editor.close().await;
}

/// The editor's MCP servers: server-everything, as `everything` (on stdio).
fn everything_server() -> Value {
    json!([{
        "name": "everything",
        "command": "node",
        "args": [everything(), "stdio"],
        "env": [],
    }])
}

/// `session/new` naming server-everything as its MCP server `everything` (on stdio): the
/// session's id.
async fn open_with_everything(editor: &mut Editor, root: &Path) -> String {
    editor.initialize().await;
    let servers = everything_server();
    let session = editor
        .call("session/new", json!({ "cwd": root, "mcpServers": servers }))
        .await
        .expect("session/new");
    session["sessionId"].as_str().unwrap().to_owned()
}

/// A process: its id, its parent's, and its command line.
#[derive(Debug, Clone)]
struct Process {
    pid: u32,
    parent: u32,
    cmdline: Vec<String>,
}

/// The processes running now (a zombie is not running), from `/proc`.
fn processes() -> Vec<Process> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (comm) state ppid …`: the command's name may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push(Process {
            pid,
            parent: fields[1].parse().unwrap(),
            cmdline: String::from_utf8_lossy(&cmdline)
                .split('\0')
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect(),
        });
    }
    found
}

/// `rummy acp`, the test editor's child, and the server-everything processes running now.
fn acp_and_its_mcp_servers(editor: &Editor) -> (Process, Vec<Process>) {
    let editor_pid = editor.child.id().unwrap();
    let all = processes();
    let acp = all
        .iter()
        .find(|p| p.parent == editor_pid)
        .expect("the editor's agent runs")
        .clone();
    let servers = all
        .into_iter()
        .filter(|p| p.cmdline.iter().any(|a| a.contains("server-everything")))
        .collect();
    (acp, servers)
}

/// How the tool call `id` was last shown: its status and its content, each as last updated.
fn last_shown(editor: &Editor, id: &str) -> (Value, Value) {
    let updates: Vec<Value> = editor
        .updates("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == id)
        .collect();
    let last = |field: &str| {
        updates
            .iter()
            .rev()
            .find_map(|u| u.get(field).cloned())
            .unwrap_or(Value::Null)
    };
    (last("status"), last("content"))
}

/// A tool call's content that is one text.
fn text_content(text: &str) -> Value {
    json!([{ "type": "content", "content": { "type": "text", "text": text } }])
}

const CALL_ECHO: &str = "<call server=\"everything\" tool=\"echo\">{\"message\":\"hi\"}</call>\n\
                         <update status=\"102\">calling echo</update>";

/// A server the editor names that cannot start leaves the session open, said in the session
/// as the agent's message; an HTTP server is left out (`initialize` said rummy acp connects to
/// none), said only in rummy acp's log.
async fn an_mcp_server_that_does_not_start_leaves_the_session_open() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let init = editor.initialize().await;
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"],
        json!({ "http": false, "sse": false })
    );
    let servers = json!([
        { "name": "missing", "command": "/nonexistent/mcp-server", "args": [], "env": [] },
        { "type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [] },
    ]);
    let session = editor
        .call("session/new", json!({ "cwd": root, "mcpServers": servers }))
        .await
        .expect("the session opens");
    assert!(session["sessionId"].as_str().unwrap().starts_with("acp_"));
    let said = "The MCP server missing did not start (/nonexistent/mcp-server: No such file or \
                directory (os error 2)).\n";
    let message = editor.update("agent_message_chunk").await;
    assert_eq!(message["content"]["text"], said);
    server
        .provider
        .push(Reply::content("<update status=\"200\">fine</update>"));
    let prompt = editor
        .prompt(session["sessionId"].as_str().unwrap(), "Go")
        .await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    assert_eq!(editor.agent_text(), format!("{said}fine\n"));
    editor.close().await;
}

/// The editor's stdio MCP server is started by `rummy acp` (its child, never the server's) when
/// the session opens, and its tools are offered to the run: the model's call of one is a
/// proposal the editor is asked about as an `everything/echo` tool call with its arguments;
/// allowed, `rummy acp` calls the tool, and its text is the call's result — in the run's result
/// channel and in the tool call, completed. When the editor leaves, the MCP server is stopped.
async fn the_editors_mcp_tool_is_called_by_rummy_acp_once_allowed() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(CALL_ECHO));
    server
        .provider
        .push(Reply::content("<update status=\"200\">it said hi</update>"));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = open_with_everything(&mut editor, &root).await;

    let (acp, servers) = acp_and_its_mcp_servers(&editor);
    assert_eq!(
        acp.cmdline,
        vec![env!("CARGO_BIN_EXE_rummy").to_owned(), "acp".to_owned()]
    );
    let mcp: Vec<&Process> = servers.iter().filter(|p| p.parent == acp.pid).collect();
    assert_eq!(
        mcp.len(),
        1,
        "one server-everything, rummy acp's child: {servers:?}"
    );
    assert!(
        servers.iter().all(|p| p.parent != std::process::id()),
        "the rummy server starts no MCP server: {servers:?}"
    );
    let mcp_pid = mcp[0].pid;

    let prompt = editor.prompt(&session, "Echo hi").await;
    let (k, asked) = editor.permission().await;
    let call = &asked["toolCall"];
    assert_eq!(
        (
            call["title"].clone(),
            call["kind"].clone(),
            call["rawInput"].clone()
        ),
        (
            json!("everything/echo"),
            json!("other"),
            json!({ "message": "hi" })
        )
    );
    assert_eq!(
        asked["options"][1]["name"],
        "Always allow the tool everything/echo in this session"
    );
    let path = call["toolCallId"].as_str().unwrap().to_owned();
    editor.choose(k, "allow_once").await;
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");

    let mut page = project_client(&server, &root).await;
    let result = history_item(&mut page, &session, &format!("{path}_1")).await;
    assert_eq!(result["body"], "Echo: hi");
    assert_eq!(
        last_shown(&editor, &path),
        (json!("completed"), text_content("Echo: hi"))
    );

    editor.close().await;
    let gone = tokio::time::timeout(WAIT, async {
        while processes().iter().any(|p| p.pid == mcp_pid) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the MCP server ends with rummy acp");
}

/// After the server restarts, `rummy acp` offers the editor's tools again on its new
/// connection: the model's call of one after the restart is asked and answered as before.
async fn the_editors_tools_are_offered_again_after_the_server_restarts() {
    let mut server = TestServer::start().await;
    let port = server.port();
    let (_dir, root) = project();
    server.provider.push(Reply::content(
        "<update status=\"200\">before the restart</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = open_with_everything(&mut editor, &root).await;
    let prompt = editor.prompt(&session, "First").await;
    editor.result(prompt).await.unwrap();
    server.restart_with(|c| c.port = port).await;
    server.provider.push(Reply::content(CALL_ECHO));
    server
        .provider
        .push(Reply::content("<update status=\"200\">it said hi</update>"));
    let prompt = editor.prompt(&session, "Echo hi").await;
    let asked = editor.answer_next("allow_once").await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let mut page = project_client(&server, &root).await;
    let result = history_item(&mut page, &session, &format!("{path}_1")).await;
    assert_eq!(result["body"], "Echo: hi");
    editor.close().await;
}

/// Calls of a server that has died fail, the run's result channel and the tool call saying
/// why, the tool call failed. Allowed always, the next call of the same tool of the same
/// server is accepted without asking.
async fn a_dead_mcp_server_fails_its_calls_and_allow_always_allows_the_same_tool() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(CALL_ECHO));
    server.provider.push(Reply::content(
        "<call server=\"everything\" tool=\"echo\">{\"message\":\"again\"}</call>\n\
         <update status=\"102\">calling again</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = open_with_everything(&mut editor, &root).await;
    let (acp, servers) = acp_and_its_mcp_servers(&editor);
    let mcp = servers.iter().find(|p| p.parent == acp.pid).unwrap().pid;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &mcp.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    let prompt = editor.prompt(&session, "Echo twice").await;
    let asked = editor.answer_next("allow_always").await;
    let first = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let permissions = editor
        .log
        .iter()
        .filter(|(l, _)| l.get("permission").is_some())
        .count();
    assert_eq!(permissions, 1, "the second call is not asked");
    let calls: Vec<String> = editor
        .updates("tool_call")
        .into_iter()
        .filter(|c| c["title"] == "everything/echo")
        .map(|c| c["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], first);

    let mut page = project_client(&server, &root).await;
    let why = "the MCP server everything has ended";
    for call in &calls {
        let result = history_item(&mut page, &session, &format!("{call}_1")).await;
        assert_eq!(result["body"], why);
        assert_eq!(
            last_shown(&editor, call),
            (json!("failed"), text_content(why))
        );
    }
    editor.close().await;
}

/// `session/load` starts the editor's MCP servers too, and offers their tools to the loaded
/// run; loading the same session again replaces it, its servers stopped with it, so one set
/// runs and the run's call reaches it.
async fn a_loaded_session_runs_the_editors_mcp_servers_once() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    let mut cli = project_client(&server, &root).await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">ready</update>"));
    cli.call(
        "set",
        json!({ "path": "run://tools", "body": "Get ready", "attributes": { "model": "fast", "mode": "act" } }),
    )
    .await
    .unwrap();
    crate::support::wait_status(&mut cli, "tools", 200).await;

    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    editor.initialize().await;
    let load = json!({ "sessionId": "tools", "cwd": root, "mcpServers": everything_server() });
    editor.call("session/load", load.clone()).await.unwrap();
    let (acp, servers) = acp_and_its_mcp_servers(&editor);
    let first: Vec<u32> = servers
        .iter()
        .filter(|p| p.parent == acp.pid)
        .map(|p| p.pid)
        .collect();
    assert_eq!(first.len(), 1, "{servers:?}");
    editor.call("session/load", load).await.unwrap();
    let stopped = tokio::time::timeout(WAIT, async {
        while processes().iter().any(|p| p.pid == first[0]) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(stopped.is_ok(), "the replaced session's MCP server stops");
    let (_, servers) = acp_and_its_mcp_servers(&editor);
    assert_eq!(
        servers.iter().filter(|p| p.parent == acp.pid).count(),
        1,
        "{servers:?}"
    );

    server.provider.push(Reply::content(CALL_ECHO));
    server
        .provider
        .push(Reply::content("<update status=\"200\">it said hi</update>"));
    let prompt = editor.prompt("tools", "Echo hi").await;
    let asked = editor.answer_next("allow_once").await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let result = history_item(&mut cli, "tools", &format!("{path}_1")).await;
    assert_eq!(result["body"], "Echo: hi");
    editor.close().await;
}

/// Cancelling the run while a tool works gives the call up (the MCP server is told): the
/// next call of the same server is answered at once, not after the first.
async fn a_cancelled_call_frees_its_mcp_server_for_the_next() {
    let server = TestServer::start().await;
    let (_dir, root) = project();
    server.provider.push(Reply::content(
        "<call server=\"everything\" tool=\"trigger-long-running-operation\">\
         {\"duration\": 600, \"steps\": 2}</call>\n<update status=\"102\">waiting</update>",
    ));
    let mut editor = Editor::start(&server.url(), &[], &[]).await;
    let session = open_with_everything(&mut editor, &root).await;
    let prompt = editor.prompt(&session, "Wait long").await;
    let asked = editor.answer_next("allow_once").await;
    let path = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    editor
        .wait_for("the call under way", |l| {
            l["update"]["update"]["toolCallId"] == path.as_str()
                && l["update"]["update"]["status"] == "in_progress"
        })
        .await;
    // The call reaches rummy acp and its MCP server right after the accept.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    editor
        .send(json!({ "notify": "session/cancel", "params": { "sessionId": session } }))
        .await;
    assert_eq!(editor.stop_reason(prompt).await, "cancelled");

    server.provider.push(Reply::content(CALL_ECHO));
    server
        .provider
        .push(Reply::content("<update status=\"200\">it said hi</update>"));
    let prompt = editor.prompt(&session, "Echo hi").await;
    let asked = editor.answer_next("allow_once").await;
    let echo = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(editor.stop_reason(prompt).await, "end_turn");
    let mut page = project_client(&server, &root).await;
    let result = history_item(&mut page, &session, &format!("{echo}_1")).await;
    assert_eq!(result["body"], "Echo: hi");
    editor.close().await;
}
