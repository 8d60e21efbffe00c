//! `rummy acp`: rummy in the editor, through the Agent Client Protocol. The editor starts
//! `rummy acp` and speaks ACP (JSON-RPC 2.0, a message per line) on its stdin and stdout;
//! `rummy acp` speaks rummy's own protocol to a server, as the CLI does.
//!
//! - This module: the router — `initialize` and `authenticate` answered here, each session's
//!   requests handed to the session's task.
//! - [`connection`]: the line-delimited JSON-RPC on stdin and stdout; [`wire`]: ACP's messages.
//! - [`session`]: one ACP session — its rummy connection, bound to its project, and its run.
//! - [`convert`]: a run's entries as tool calls, a loop's end as a stop reason, proposals'
//!   permission options; [`prose`]: the model's streamed reply without its tool tags;
//!   [`replay`]: `session/load`'s replay of a run's newest loops.
//! - [`commands`]: accepted commands the server asks its client to run, in the editor's
//!   terminal or here.
//! - [`mcp`]: the editor's stdio MCP servers, run here for a session, whose tools the session
//!   offers its run and calls when a person accepts a call.
//!
//! Stdout carries ACP and nothing else: the log goes to stderr.
//!
//! *Why not the official Rust SDK (`agent-client-protocol`):* its schema crate turns on
//! `serde_json`'s `preserve_order` for every crate built beside it, which would change the key
//! order of every JSON object the server stores and sends, and the size of every JSON map, for
//! the sake of one client command; the few messages rummy speaks are typed in [`wire`], and the
//! tests check them against the official TypeScript SDK's client, which validates every
//! message it reads.

mod commands;
mod connection;
mod convert;
mod mcp;
mod prose;
mod replay;
mod session;
mod wire;

use super::args::AcpArgs;
use super::exit::Exit;
use super::out;
use super::session::Failure;
use connection::{Connection, Incoming, Responder};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use session::{Inbox, Opening, Start};
use std::collections::HashMap;
use tokio::sync::mpsc;
use wire::{code, Error};

/// The authentication method `initialize` lists: the token is `RUMMY_TOKEN`'s.
const TOKEN_METHOD: &str = "rummy_token";

/// `rummy acp`: serves the editor on stdin and stdout until it closes them.
pub fn run(args: AcpArgs) -> Exit {
    super::serve::init_log("warn");
    let result = actix_rt::System::new().block_on(serve(args));
    match result {
        Ok(()) => Exit::Ok,
        Err(failure) => {
            out::eprintln_failure(&failure);
            failure.exit
        }
    }
}

async fn serve(args: AcpArgs) -> Result<(), Failure> {
    let reach = super::session::reach(&args.connect).await?;
    let opening = Opening {
        url: reach.url,
        token: reach.token,
        project: args.connect.project.clone(),
        model: args.model.clone(),
        terminal: false,
    };
    let (connection, incoming) = Connection::stdio();
    Router {
        connection: connection.clone(),
        opening,
        sessions: HashMap::new(),
    }
    .run(incoming)
    .await;
    // What was answered before the editor closed stdin still reaches it.
    connection.flush().await;
    if let Some(server) = reach.server {
        server.stop().await;
    }
    Ok(())
}

/// Gives each session's requests to its task.
struct Router {
    connection: Connection,
    opening: Opening,
    sessions: HashMap<String, mpsc::UnboundedSender<Inbox>>,
}

impl Router {
    /// Routes the editor's messages until it closes stdin; then each session's task ends with
    /// its inbox.
    async fn run(mut self, mut incoming: mpsc::UnboundedReceiver<Incoming>) {
        while let Some(message) = incoming.recv().await {
            self.route(message);
        }
    }

    fn route(&mut self, message: Incoming) {
        let Incoming { id, method, params } = message;
        let Some(id) = id else {
            // Notifications: `session/cancel`; any other is ignored, as JSON-RPC says.
            if method == "session/cancel" {
                if let Ok(cancel) = serde_json::from_value::<wire::CancelNotification>(params) {
                    // A cancel for a session not open here has nothing to cancel.
                    let _ = self.pass(&cancel.session_id, Inbox::Cancel);
                }
            }
            return;
        };
        let c = &self.connection;
        match method.as_str() {
            "initialize" => {
                let responder = c.responder(id);
                match read::<wire::InitializeRequest>(params) {
                    Ok(request) => {
                        self.opening.terminal = request.client_capabilities.terminal;
                        responder.respond(initialized(&request));
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            }
            "authenticate" => {
                let responder = c.responder::<wire::Empty>(id);
                match read::<wire::AuthenticateRequest>(params) {
                    Ok(request) if request.method_id != TOKEN_METHOD => responder
                        .respond_with_error(Error::new(
                            code::INVALID_PARAMS,
                            format!(
                                "no authentication method {}: rummy's is {TOKEN_METHOD}",
                                request.method_id
                            ),
                        )),
                    Ok(_) if self.opening.token.is_none() => responder
                        .respond_with_error(Error::new(
                        code::AUTH_REQUIRED,
                        "RUMMY_TOKEN is not set: put a token of the rummy server in the agent's \
                         environment (the editor's agent settings), then start it again",
                    )),
                    Ok(_) => responder.respond(wire::Empty {}),
                    Err(e) => responder.respond_with_error(e),
                }
            }
            "session/new" => {
                let responder = c.responder(id);
                match read::<wire::NewSessionRequest>(params) {
                    Ok(request) => self.open(new_session_id(), Start::New(request, responder)),
                    Err(e) => responder.respond_with_error(e),
                }
            }
            "session/load" => {
                let responder = c.responder(id);
                match read::<wire::LoadSessionRequest>(params) {
                    Ok(request) => {
                        let session = request.session_id.clone();
                        self.open(session, Start::Load(request, responder));
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            }
            "session/prompt" => {
                self.forward(
                    id,
                    params,
                    |r: &wire::PromptRequest| &r.session_id,
                    Inbox::Prompt,
                );
            }
            "session/set_mode" => {
                self.forward(
                    id,
                    params,
                    |r: &wire::SetModeRequest| &r.session_id,
                    Inbox::SetMode,
                );
            }
            "session/set_config_option" => self.forward(
                id,
                params,
                |r: &wire::SetConfigOptionRequest| &r.session_id,
                Inbox::SetConfig,
            ),
            other => c.responder::<Value>(id).respond_with_error(Error::new(
                code::METHOD_NOT_FOUND,
                format!("rummy acp does not serve {other}"),
            )),
        }
    }

    /// Starts the task of session `id` (a load of a session already open here replaces it:
    /// the one it replaces ends, its MCP servers with it).
    fn open(&mut self, id: String, start: Start) {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(replaced) = self.sessions.insert(id.clone(), tx.clone()) {
            let _ = replaced.send(Inbox::Close);
        }
        actix_rt::spawn(session::run(
            id,
            start,
            self.opening.clone(),
            self.connection.clone(),
            tx,
            rx,
        ));
    }

    /// Reads a session's request as `T` and gives it to the session `session_of` names, as
    /// `wrap` makes it; one for a session not open here is answered -32002.
    fn forward<T: DeserializeOwned, R: serde::Serialize>(
        &mut self,
        id: Value,
        params: Value,
        session_of: impl Fn(&T) -> &String,
        wrap: impl FnOnce(T, Responder<R>) -> Inbox,
    ) {
        let responder = self.connection.responder(id);
        match read::<T>(params) {
            Ok(request) => {
                let session = session_of(&request).clone();
                if let Some(message) = self.pass(&session, wrap(request, responder)) {
                    message.refuse(unknown_session(&session));
                }
            }
            Err(e) => responder.respond_with_error(e),
        }
    }

    /// Gives `message` to session `id`; hands it back when there is no such session.
    fn pass(&mut self, id: &str, message: Inbox) -> Option<Inbox> {
        let undelivered = match self.sessions.get(id) {
            Some(tx) => tx.send(message).err().map(|e| e.0),
            None => Some(message),
        };
        if undelivered.is_some() {
            self.sessions.remove(id);
        }
        undelivered
    }
}

/// A request's params as `T`; what does not read is -32602, naming the field.
fn read<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(params)
        .map_err(|e| Error::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

fn unknown_session(id: &str) -> Error {
    Error::new(
        code::RESOURCE_NOT_FOUND,
        format!("no session {id} here: open it with session/new or session/load"),
    )
}

/// `initialize`'s answer: what rummy can do, said honestly.
fn initialized(request: &wire::InitializeRequest) -> Value {
    json!({
        "protocolVersion": request.protocol_version.min(wire::PROTOCOL_VERSION),
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": { "image": false, "audio": false, "embeddedContext": true },
            "mcpCapabilities": { "http": false, "sse": false },
        },
        "authMethods": [{
            "id": TOKEN_METHOD,
            "name": "RUMMY_TOKEN",
            "description": "rummy acp reads the server's token from RUMMY_TOKEN in its \
                environment: set it in the editor's settings for this agent (a server without \
                tokens needs none)",
        }],
        "agentInfo": { "name": "rummy", "title": "rummy", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// A new session's id, which is also its run's alias: `acp_` and 12 random hex digits.
fn new_session_id() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the time still makes it unique enough for one server's runs.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes.copy_from_slice(&nanos.to_le_bytes()[..6]);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("acp_{hex}")
}
