//! The editor's MCP servers, run by `rummy acp` — never by the rummy server, which starts no
//! command a client names. Each stdio server is a child process of this one, spoken to in MCP's
//! JSON-RPC (a message per line on its stdin and stdout): `initialize`, then `tools/list`, and
//! `tools/call` for each call a person accepted. A session's servers live as long as the
//! session: dropping [`Servers`] kills them.

use super::wire::McpServer;
use futures_util::future::join_all;
use rummy_client::params::OfferedTool;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, Mutex};

/// The MCP version `rummy acp` asks for (a server may answer an older one it speaks).
const PROTOCOL_VERSION: &str = "2025-06-18";
/// How long a server may stay silent while it starts and lists its tools.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);
/// How long a server may stay silent while a tool works: a tool may build or search for a
/// while, but one that never answers must not hold its server's later calls for ever.
const CALL_WITHIN: Duration = Duration::from_secs(600);
/// How long a session's servers may take, together, to start: a session waits for them
/// before it answers the editor, and one slower than this is given up (its tools not offered).
const START_WITHIN: Duration = Duration::from_secs(30);

/// An MCP server as the editor describes it (`session/new`'s `mcpServers`): stdio ones only
/// (`rummy acp` advertises neither HTTP nor SSE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Its name: the prefix of its tools.
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment, added to `rummy acp`'s.
    pub env: Vec<(String, String)>,
}

impl Spec {
    /// The server the editor names, if `rummy acp` can start it: a stdio one, with a command.
    pub fn of(server: &McpServer) -> Result<Spec, String> {
        let name = &server.name;
        match (server.transport.as_deref(), &server.command) {
            (None | Some("stdio"), Some(command)) => Ok(Spec {
                name: name.clone(),
                command: command.clone(),
                args: server.args.clone(),
                env: server
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
            }),
            (None | Some("stdio"), None) => Err(format!(
                "the MCP server {name} is not started: it names no command"
            )),
            (Some(other), _) => Err(format!(
                "the MCP server {name} is not started: rummy acp starts stdio servers only, \
                 not {other} ones"
            )),
        }
    }
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Its name on its server.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Its arguments' JSON Schema.
    #[serde(default)]
    pub input_schema: Option<Value>,
}

/// What a call answered, as the run records it: its content as text, and whether it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The text.
    pub text: String,
    /// The tool said it failed, or the call did not reach it.
    pub is_error: bool,
}

impl Answer {
    /// A `tools/call` result as text: its text parts joined by newlines, any other part
    /// described in a line (`[image: image/png, 120 bytes]`), and its `structuredContent` as
    /// JSON when no part is text; `isError` as the tool said.
    pub fn of(result: &Value) -> Answer {
        let parts = result["content"].as_array().map_or(&[][..], Vec::as_slice);
        let mut lines: Vec<String> = parts.iter().map(part).collect();
        let texts = parts.iter().any(|p| {
            p["type"] == "text" || (p["type"] == "resource" && p["resource"]["text"].is_string())
        });
        match result.get("structuredContent") {
            Some(structured) if !texts && !structured.is_null() => {
                lines.push(structured.to_string());
            }
            _ => {}
        }
        Answer {
            text: lines.join("\n"),
            is_error: result["isError"].as_bool().unwrap_or(false),
        }
    }

    /// A call that got no answer from its tool, for `why`.
    pub fn failed(why: impl Into<String>) -> Answer {
        Answer {
            text: why.into(),
            is_error: true,
        }
    }
}

/// One part of a call's content, as a line of text.
fn part(part: &Value) -> String {
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let kind = part["type"].as_str().unwrap_or_default();
    match kind {
        "text" => str_of(&part["text"]),
        "image" | "audio" => format!(
            "[{kind}: {}, {} bytes]",
            str_of(&part["mimeType"]),
            decoded_len(&part["data"])
        ),
        "resource_link" => format!("[resource link: {}]", str_of(&part["uri"])),
        "resource" => {
            let resource = &part["resource"];
            let uri = str_of(&resource["uri"]);
            match resource["text"].as_str() {
                Some(text) => format!("[resource: {uri}]\n{text}"),
                None => format!(
                    "[resource: {uri}, {}, {} bytes]",
                    str_of(&resource["mimeType"]),
                    decoded_len(&resource["blob"])
                ),
            }
        }
        other => format!("[{other} content]"),
    }
}

/// How many bytes a base64 string holds.
fn decoded_len(data: &Value) -> usize {
    let data = data.as_str().unwrap_or_default().trim_end_matches('=');
    data.len() * 3 / 4
}

/// Whether `name` may name a server or a tool to the rummy server: letters, digits, `_`, `-`
/// and `.`, 1 to 64 of them.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The most tools the rummy server takes in one offer.
const MAX_OFFERED: usize = 128;
/// The largest `inputSchema` the rummy server takes, in bytes of JSON.
const MAX_SCHEMA_BYTES: usize = 16 * 1024;

/// The tools as the rummy server takes them in an offer, and why each other is left out: the
/// server refuses a whole offer for one bad tool (a name it does not take, a schema that is
/// not an object or is over 16 KiB, more than 128 tools), so those are left out here.
pub fn offerable<'a>(
    tools: impl Iterator<Item = (&'a str, &'a Tool)>,
) -> (Vec<OfferedTool>, Vec<String>) {
    let mut offered = Vec::new();
    let mut problems = Vec::new();
    for (server, tool) in tools {
        let name = format!("{server}/{}", tool.name);
        let schema = tool.input_schema.as_ref().filter(|s| !s.is_null());
        let why = if !valid_name(&tool.name) {
            Some("its name is not letters, digits, `_`, `-` and `.` (at most 64)".to_owned())
        } else if schema.is_some_and(|s| !s.is_object()) {
            Some("its inputSchema is not an object".to_owned())
        } else if let Some(bytes) = schema
            .map(|s| s.to_string().len())
            .filter(|b| *b > MAX_SCHEMA_BYTES)
        {
            Some(format!(
                "its inputSchema has {bytes} bytes (at most {MAX_SCHEMA_BYTES})"
            ))
        } else if offered.len() == MAX_OFFERED {
            Some(format!("a run takes at most {MAX_OFFERED} tools"))
        } else {
            None
        };
        match why {
            Some(why) => problems.push(format!("the MCP tool {name} is not offered: {why}")),
            None => offered.push(OfferedTool {
                server: server.to_owned(),
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: schema.cloned(),
            }),
        }
    }
    (offered, problems)
}

/// A running MCP server: dropping it kills its process.
pub struct Server {
    /// Its name.
    pub name: String,
    /// Its tools.
    pub tools: Vec<Tool>,
    /// Its process, held only to be killed when the server is dropped.
    _process: Child,
    io: Arc<Mutex<Io>>,
}

/// A server's stdin and stdout: one request at a time.
struct Io {
    name: String,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Server {
    /// Starts the server `spec` describes, in `cwd`, and reads its tools.
    pub async fn start(spec: &Spec, cwd: &Path) -> Result<Server, String> {
        let mut command = Command::new(&spec.command);
        command
            .args(&spec.args)
            .envs(spec.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its log is the agent's log: the editor keeps rummy acp's stderr.
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if cwd.is_dir() {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            format!(
                "the MCP server {} did not start ({}: {e})",
                spec.name, spec.command
            )
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("the MCP server {} has no stdio", spec.name));
        };
        let io = Io {
            name: spec.name.clone(),
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        let server = Server {
            name: spec.name.clone(),
            tools: Vec::new(),
            _process: child,
            io: Arc::new(Mutex::new(io)),
        };
        server.handshake().await
    }

    /// `initialize`, then the tools listed.
    async fn handshake(mut self) -> Result<Server, String> {
        let mut io = self.io.lock().await;
        let hello = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "rummy", "version": env!("CARGO_PKG_VERSION") },
        });
        io.request("initialize", hello, ANSWER_WITHIN).await?;
        io.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        let listed = io.request("tools/list", json!({}), ANSWER_WITHIN).await?;
        drop(io);
        self.tools = serde_json::from_value(listed["tools"].clone())
            .map_err(|e| format!("the MCP server {}'s tools/list: {e}", self.name))?;
        Ok(self)
    }

    /// What calls its tools, from any task.
    pub fn caller(&self) -> Caller {
        Caller {
            io: self.io.clone(),
        }
    }
}

/// Calls a server's tools; calls wait for each other (a server answers one at a time here).
#[derive(Clone)]
pub struct Caller {
    io: Arc<Mutex<Io>>,
}

impl Caller {
    /// Calls tool `tool` with `arguments`: its answer, or a failed one saying why there is
    /// none (the server refused the call, ended, or did not answer in time); `None` when
    /// `cancel` fired first — the server is told (`notifications/cancelled`), and its late
    /// answer is passed over.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        mut cancel: oneshot::Receiver<()>,
    ) -> Option<Answer> {
        let mut io = tokio::select! {
            io = self.io.lock() => io,
            Ok(()) = &mut cancel => return None,
        };
        let id = io.next_id;
        let params = json!({ "name": tool, "arguments": arguments });
        let answer = tokio::select! {
            answer = io.request("tools/call", params, CALL_WITHIN) => answer,
            Ok(()) = &mut cancel => {
                let cancelled = json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": { "requestId": id, "reason": "cancelled in rummy" },
                });
                // A server gone meanwhile has nothing to cancel.
                let _ = io.send(&cancelled).await;
                return None;
            }
        };
        Some(match answer {
            Ok(result) => Answer::of(&result),
            Err(why) => Answer::failed(why),
        })
    }
}

impl Io {
    async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => format!("the MCP server {} has ended", self.name),
                _ => format!("the MCP server {} cannot be written to: {e}", self.name),
            })
    }

    /// Sends request `method` and waits for its answer, the server silent at most `within`
    /// at a time; what the server asks meanwhile is refused (rummy offers it nothing: no
    /// sampling, no roots, no elicitation).
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        loop {
            let line = tokio::time::timeout(within, self.lines.next_line())
                .await
                .map_err(|_| {
                    format!(
                        "the MCP server {} did not answer {method} within {} s",
                        self.name,
                        within.as_secs()
                    )
                })?
                .map_err(|e| format!("the MCP server {} cannot be read: {e}", self.name))?
                .ok_or_else(|| format!("the MCP server {} has ended", self.name))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let Some(asked) = message.get("method").and(message.get("id")) {
                let refusal = json!({ "jsonrpc": "2.0", "id": asked, "error": { "code": -32601, "message": "rummy offers MCP servers no client features" } });
                self.send(&refusal).await?;
                continue;
            }
            if message["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                let why = error["message"].as_str().unwrap_or("an error");
                return Err(format!(
                    "the MCP server {} refused {method}: {why}",
                    self.name
                ));
            }
            return Ok(message["result"].clone());
        }
    }
}

/// A session's MCP servers, running: dropping them kills them.
#[derive(Default)]
pub struct Servers {
    servers: Vec<Server>,
}

impl Servers {
    /// Starts the servers `specs` describes, together, in `cwd`: the ones that started, and
    /// why each other did not (or why some of its tools are not offered).
    pub async fn start(specs: &[Spec], cwd: &Path) -> (Servers, Vec<String>) {
        let mut problems = Vec::new();
        let mut names = Vec::new();
        let mut starting = Vec::new();
        for spec in specs {
            if !valid_name(&spec.name) {
                problems.push(format!(
                    "the MCP server {:?} is not started: a server's name here is letters, digits, \
                     `_`, `-` and `.` (at most 64)",
                    spec.name
                ));
            } else if names.contains(&spec.name) {
                problems.push(format!(
                    "the MCP server {} is named twice: only the first is started",
                    spec.name
                ));
            } else {
                names.push(spec.name.clone());
                starting.push(async move {
                    match tokio::time::timeout(START_WITHIN, Server::start(spec, cwd)).await {
                        Ok(started) => started,
                        Err(_) => Err(format!(
                            "the MCP server {} did not start within {} s",
                            spec.name,
                            START_WITHIN.as_secs()
                        )),
                    }
                });
            }
        }
        let mut servers = Vec::new();
        for started in join_all(starting).await {
            match started {
                Ok(server) => servers.push(server),
                Err(why) => problems.push(why),
            }
        }
        (Servers { servers }, problems)
    }

    /// Every tool of every server, with its server's name.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &Tool)> {
        self.servers
            .iter()
            .flat_map(|s| s.tools.iter().map(move |t| (s.name.as_str(), t)))
    }

    /// What calls the tools of server `name`, if it runs.
    pub fn caller(&self, name: &str) -> Option<Caller> {
        self.servers
            .iter()
            .find(|s| s.name == name)
            .map(Server::caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The messages a scripted server wrote to its `log`, one JSON value a line.
    fn logged(log: &Path) -> Vec<Value> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A scripted MCP server in `sh`: it answers in order, asks `roots/list` of its client
    /// before answering the call, and writes what it read to `log`.
    fn scripted(log: &Path) -> Spec {
        let script = format!(
            r#"
read l; echo "$l" >> {log}
echo '{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"fake","version":"1"}}}}}}'
read l; echo "$l" >> {log}
read l; echo "$l" >> {log}
echo '{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}'
echo '{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{{"name":"echo","description":"Echoes","inputSchema":{{"type":"object","required":["message"]}}}},{{"name":"no spaces"}}]}}}}'
read l; echo "$l" >> {log}
echo '{{"jsonrpc":"2.0","id":"r1","method":"roots/list"}}'
read l; echo "$l" >> {log}
echo '{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"Echo: hi"}}],"isError":false}}}}'
"#,
            log = log.display()
        );
        Spec {
            name: "fake".into(),
            command: "sh".into(),
            args: vec!["-c".into(), script],
            env: vec![],
        }
    }

    /// The handshake, the tools listed (one whose name the rummy server would refuse not
    /// offered, and said), a call answered; what the server asks meanwhile is refused and the call
    /// still ends; once it has ended, a call says so.
    #[actix_rt::test]
    async fn a_stdio_server_lists_its_tools_and_answers_a_call() {
        let dir = tempfile::TempDir::new().unwrap();
        let log = dir.path().join("read");
        let (servers, problems) = Servers::start(&[scripted(&log)], dir.path()).await;
        assert_eq!(problems, Vec::<String>::new());
        let names: Vec<(&str, &str)> = servers
            .tools()
            .map(|(server, tool)| (server, tool.name.as_str()))
            .collect();
        assert_eq!(names, vec![("fake", "echo"), ("fake", "no spaces")]);
        assert_eq!(
            offerable(servers.tools()),
            (
                vec![OfferedTool {
                    server: "fake".into(),
                    name: "echo".into(),
                    description: Some("Echoes".into()),
                    input_schema: Some(json!({"type": "object", "required": ["message"]})),
                }],
                vec![
                    "the MCP tool fake/no spaces is not offered: its name is not letters, \
                     digits, `_`, `-` and `.` (at most 64)"
                        .to_owned()
                ]
            )
        );
        let caller = servers.caller("fake").unwrap();
        let (_go_on, cancel) = oneshot::channel();
        let answer = caller.call("echo", json!({"message": "hi"}), cancel).await;
        assert_eq!(
            answer,
            Some(Answer {
                text: "Echo: hi".into(),
                is_error: false
            })
        );
        let read = logged(&log);
        let methods: Vec<&str> = read
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("(answer)"))
            .collect();
        assert_eq!(
            methods,
            vec![
                "initialize",
                "notifications/initialized",
                "tools/list",
                "tools/call",
                "(answer)"
            ]
        );
        assert_eq!(
            read[3]["params"],
            json!({"name": "echo", "arguments": {"message": "hi"}})
        );
        assert_eq!(read[4]["id"], "r1");
        assert_eq!(read[4]["error"]["code"], -32601);
        let (_go_on, cancel) = oneshot::channel();
        assert_eq!(
            caller
                .call("echo", json!({"message": "again"}), cancel)
                .await,
            Some(Answer::failed("the MCP server fake has ended"))
        );
        assert!(servers.caller("other").is_none());
    }

    /// A call cancelled while the tool works ends at once, and the server is told which
    /// request to give up; the server's later answer is passed over by the next call.
    #[actix_rt::test]
    async fn a_cancelled_call_is_given_up_and_the_server_told() {
        let dir = tempfile::TempDir::new().unwrap();
        let log = dir.path().join("read");
        let script = format!(
            r#"
read l
echo '{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"2025-06-18","capabilities":{{}}}}}}'
read l
read l
echo '{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{{"name":"slow"}}]}}}}'
read l; echo "$l" >> {log}
read l; echo "$l" >> {log}
read l; echo "$l" >> {log}
echo '{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"too late"}}]}}}}'
echo '{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"text","text":"in time"}}]}}}}'
"#,
            log = log.display()
        );
        let spec = Spec {
            name: "s".into(),
            command: "sh".into(),
            args: vec!["-c".into(), script],
            env: vec![],
        };
        let (servers, problems) = Servers::start(&[spec], dir.path()).await;
        assert_eq!(problems, Vec::<String>::new());
        let caller = servers.caller("s").unwrap();
        let (cancel, cancelled) = oneshot::channel();
        let slow = actix_rt::spawn({
            let caller = caller.clone();
            async move { caller.call("slow", json!({}), cancelled).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.send(()).unwrap();
        assert_eq!(slow.await.unwrap(), None);
        let (_go_on, cancel) = oneshot::channel();
        assert_eq!(
            caller.call("slow", json!({}), cancel).await,
            Some(Answer {
                text: "in time".into(),
                is_error: false
            })
        );
        let read = logged(&log);
        assert_eq!(
            (
                read[0]["id"].clone(),
                read[1].clone(),
                read[2]["id"].clone()
            ),
            (
                json!(3),
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 3, "reason": "cancelled in rummy"}}),
                json!(4)
            )
        );
    }

    /// A server that cannot start, one that ends before answering, and one misnamed: the
    /// session goes on without them, each said.
    #[actix_rt::test]
    async fn servers_that_do_not_start_are_said_and_left_out() {
        let dir = tempfile::TempDir::new().unwrap();
        let spec = |name: &str, command: &str, args: &[&str]| Spec {
            name: name.into(),
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: vec![],
        };
        let specs = [
            spec("missing", "/nonexistent/mcp-server", &[]),
            spec("quits", "sh", &["-c", "read l"]),
            spec("bad name", "sh", &[]),
            spec("quits", "sh", &[]),
        ];
        let (servers, problems) = Servers::start(&specs, dir.path()).await;
        assert_eq!(servers.tools().count(), 0);
        assert_eq!(
            problems,
            vec![
                "the MCP server \"bad name\" is not started: a server's name here is letters, \
                 digits, `_`, `-` and `.` (at most 64)"
                    .to_owned(),
                "the MCP server quits is named twice: only the first is started".to_owned(),
                "the MCP server missing did not start (/nonexistent/mcp-server: No such file or \
                 directory (os error 2))"
                    .to_owned(),
                "the MCP server quits has ended".to_owned(),
            ]
        );
    }

    /// What the rummy server would refuse of an offer is left out of it, each said.
    #[test]
    fn tools_the_server_would_refuse_are_not_offered() {
        let tool = |name: &str, schema: Value| Tool {
            name: name.into(),
            description: None,
            input_schema: Some(schema),
        };
        let tools = [
            tool("listed", json!(null)),
            tool("array", json!(["not", "an", "object"])),
            tool(
                "huge",
                json!({ "description": "x".repeat(MAX_SCHEMA_BYTES) }),
            ),
        ];
        let many: Vec<Tool> = (0..MAX_OFFERED)
            .map(|n| tool(&format!("t{n}"), json!({"type": "object"})))
            .collect();
        let all = tools.iter().chain(&many).map(|t| ("s", t));
        let (offered, problems) = offerable(all);
        assert_eq!(offered.len(), MAX_OFFERED);
        assert_eq!(
            (offered[0].name.as_str(), offered[0].input_schema.clone()),
            ("listed", None)
        );
        assert_eq!(
            problems,
            vec![
                "the MCP tool s/array is not offered: its inputSchema is not an object".to_owned(),
                format!(
                    "the MCP tool s/huge is not offered: its inputSchema has {} bytes (at most \
                     16384)",
                    MAX_SCHEMA_BYTES + 18
                ),
                "the MCP tool s/t127 is not offered: a run takes at most 128 tools".to_owned(),
            ]
        );
    }

    /// A call's result as the run records it: text parts joined by newlines, other parts
    /// described, structured content as JSON when no part is text, `isError` kept.
    #[test]
    fn a_call_result_reads_as_text() {
        let answer = |result: Value| Answer::of(&result);
        assert_eq!(
            answer(json!({"content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///p/a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "file:///p/b.txt", "text": "b says hi"}},
                {"type": "resource", "resource": {"uri": "file:///p/c.bin", "mimeType": "application/octet-stream", "blob": "AAE="}},
                {"type": "hologram"},
                {"type": "text", "text": "two"},
            ]})),
            Answer {
                text: "one\n[image: image/png, 8 bytes]\n[audio: audio/wav, 3 bytes]\n\
                       [resource link: file:///p/a.txt]\n[resource: file:///p/b.txt]\nb says hi\n\
                       [resource: file:///p/c.bin, application/octet-stream, 2 bytes]\n\
                       [hologram content]\ntwo"
                    .to_owned(),
                is_error: false,
            }
        );
        assert_eq!(
            answer(json!({"content": [], "structuredContent": {"sum": 3}})),
            Answer {
                text: "{\"sum\":3}".to_owned(),
                is_error: false
            }
        );
        assert_eq!(
            answer(
                json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": 3}})
            ),
            Answer {
                text: "3".to_owned(),
                is_error: false
            }
        );
        assert_eq!(
            answer(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})),
            Answer {
                text: "no such file".to_owned(),
                is_error: true
            }
        );
    }
}
