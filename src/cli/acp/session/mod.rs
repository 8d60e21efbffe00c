//! One ACP session: a connection to the rummy server bound to the session's project, and the
//! run that is the session (its alias is the session id), created at the first prompt.
//!
//! The session is a task of its own: it owns its connection, takes the editor's requests from
//! its inbox, and turns the run's pushes into `session/update`s — the reply's prose and
//! thought, each command as a tool call, the open questions as the plan — and each proposal
//! into a `session/request_permission`. A prompt is answered when its loop ends. The editor's
//! MCP servers live as long as the session ([`tools`]).

mod entries;
mod open;
mod prompt;
mod tools;

use super::commands::{self, Ran};
use super::convert::{self, Ending, Rule};
use super::mcp;
use super::prose::{Piece, Prose};
use crate::cli::acp::connection::{Connection, Responder};
use crate::cli::acp::wire::{self as acp, code, Error as AcpError};
use open::{begin, call_error};
use prompt::read_prompt;
use rummy_client::bodies::Bodies;
use rummy_client::notifications::RunState;
use rummy_client::params::{GetParams, RunAttributes};
use rummy_client::results::HistoryItem;
use rummy_client::{Client, ClientError, Decision, Notification};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::mpsc;

/// How `rummy acp` reaches the server.
#[derive(Debug, Clone)]
pub struct Opening {
    /// The server's WebSocket URL.
    pub url: String,
    /// `RUMMY_TOKEN`.
    pub token: Option<String>,
    /// `--project`: the project opened where the editor's directory is refused.
    pub project: Option<String>,
    /// `--model`: the model of new runs.
    pub model: Option<String>,
    /// Whether the editor offers a terminal (`clientCapabilities.terminal`): commands the
    /// server asks this client to run run there.
    pub terminal: bool,
}

/// How the session begins.
pub enum Start {
    /// `session/new`: a new session, whose run is made at its first prompt.
    New(acp::NewSessionRequest, Responder<acp::NewSessionResponse>),
    /// `session/load`: an existing run, replayed.
    Load(acp::LoadSessionRequest, Responder<acp::LoadSessionResponse>),
}

/// What the session is asked, by the editor or by its own helpers.
pub enum Inbox {
    /// `session/prompt`.
    Prompt(acp::PromptRequest, Responder<acp::PromptResponse>),
    /// `session/cancel`.
    Cancel,
    /// `session/set_mode`.
    SetMode(acp::SetModeRequest, Responder<acp::Empty>),
    /// `session/set_config_option`.
    SetConfig(
        acp::SetConfigOptionRequest,
        Responder<acp::SetConfigOptionResponse>,
    ),
    /// The editor's answer to a permission request for the proposal at `path`.
    Answer {
        /// The proposal's path.
        path: String,
        /// The answer, or why there is none.
        outcome: Result<acp::PermissionOutcome, String>,
    },
    /// What a command this session runs did.
    Ran {
        /// The proposal's path.
        path: String,
        /// What it did.
        ran: Ran,
    },
    /// The session ends: a load of the same session replaced it.
    Close,
    /// What an editor's tool answered a call the server asked for.
    Called {
        /// The call's path.
        path: String,
        /// The answer.
        answer: mcp::Answer,
    },
}

impl Inbox {
    /// Answers a request that cannot be taken with `error`; anything else is dropped.
    pub fn refuse(self, error: AcpError) {
        match self {
            Inbox::Prompt(_, responder) => responder.respond_with_error(error),
            Inbox::SetMode(_, responder) => responder.respond_with_error(error),
            Inbox::SetConfig(_, responder) => responder.respond_with_error(error),
            Inbox::Cancel
            | Inbox::Close
            | Inbox::Answer { .. }
            | Inbox::Ran { .. }
            | Inbox::Called { .. } => {}
        }
    }
}

/// The two modes, as the editor lists them.
const MODES: [(&str, &str, &str); 2] = [
    (
        "ask",
        "Ask",
        "The model reads the project and answers; it changes no file",
    ),
    (
        "act",
        "Act",
        "The model edits files and runs commands, each proposed for your permission",
    ),
];

/// The longest wait between two tries at reaching a server that went away.
const RECONNECT_EVERY: Duration = Duration::from_secs(2);
/// How many times a prompt tries to reach a server found gone before it fails (about 8 s).
const REVIVE_TRIES: u32 = 6;

/// A proposal whose permission request waits for the editor's answer.
struct Asked {
    hash: Option<String>,
    rule: Option<Rule>,
    request: u64,
}

/// A tool call as last shown.
#[derive(Default)]
struct Call {
    item: Option<HistoryItem>,
    /// The file before an edit (`None`: the edit creates it).
    old: Option<String>,
    /// The editor's terminal it runs in, when it does.
    terminal: Option<String>,
}

/// An ACP session, at work.
struct Session {
    id: String,
    cx: Connection,
    client: Client,
    opening: Opening,
    root: String,
    run_exists: bool,
    mode: String,
    model: String,
    models: Vec<String>,
    prompt: Option<Responder<acp::PromptResponse>>,
    /// Pushes numbered up to this one came before the prompt in flight.
    seq_floor: i64,
    calls: HashMap<String, Call>,
    /// Commands' output channels, as the pushes left them.
    channels: Bodies,
    asking: HashMap<String, Asked>,
    rules: HashSet<Rule>,
    question: Option<HistoryItem>,
    prose: Prose,
    plan: Vec<String>,
    inbox: mpsc::UnboundedSender<Inbox>,
    /// The commands this session runs for the server, by proposal path.
    running: HashMap<String, commands::Command>,
    /// The server cannot be reached: tried again every [`RECONNECT_EVERY`].
    down: bool,
    /// The editor's MCP servers, which this process runs for the session.
    mcp: mcp::Servers,
    /// Their tools as offered to the run.
    offer: Vec<rummy_client::params::OfferedTool>,
    /// The connection (counted by the client's reconnects) that holds the offer of their tools.
    offered_on: Option<u32>,
    /// The tool calls under way, by path: sending gives one up.
    calling: HashMap<String, tokio::sync::oneshot::Sender<()>>,
}

/// Runs an ACP session until the editor goes or its inbox closes.
pub async fn run(
    id: String,
    start: Start,
    opening: Opening,
    cx: Connection,
    inbox_tx: mpsc::UnboundedSender<Inbox>,
    mut inbox: mpsc::UnboundedReceiver<Inbox>,
) {
    let Some(mut session) = begin(id, start, opening, cx, inbox_tx).await else {
        return;
    };
    loop {
        let down = session.down;
        tokio::select! {
            message = inbox.recv() => match message {
                Some(Inbox::Close) | None => break,
                Some(message) => session.handle(message).await,
            },
            note = session.client.next_message(None), if !down => match note {
                Ok((note, _)) => session.note(note).await,
                Err(e) => session.lost(e),
            },
            () = tokio::time::sleep(RECONNECT_EVERY), if down => {
                session.down = session.client.reconnect().await.is_err();
            }
        }
        session.offer_again().await;
    }
    if session.prompt.is_some() && session.run_exists {
        // The editor went with a prompt in flight: its loop is the run's, and goes on.
        tracing::info!(run = %session.id, "the editor left while the run worked");
    }
    session.client.close().await;
}

impl Session {
    fn send(&self, update: acp::SessionUpdate) {
        let notification = acp::SessionNotification {
            session_id: self.id.clone(),
            update,
        };
        self.cx.notify("session/update", &notification);
    }

    /// Says `text` as the agent.
    fn say(&self, text: &str) {
        self.send(acp::SessionUpdate::message(text));
    }

    async fn handle(&mut self, message: Inbox) {
        match message {
            Inbox::Prompt(request, responder) => self.prompt(request, responder).await,
            Inbox::Cancel => {
                if self.prompt.is_some() {
                    if let Err(e) = self.client.cancel_run(&self.id).await {
                        tracing::warn!(run = %self.id, "cancel: {e}");
                    }
                }
            }
            Inbox::SetMode(request, responder) => match self.set_mode(&request.mode_id).await {
                Ok(()) => {
                    responder.respond(acp::Empty {});
                    self.send(acp::SessionUpdate::ConfigOptionUpdate {
                        config_options: self.config_options(),
                    });
                }
                Err(e) => {
                    responder.respond_with_error(e);
                }
            },
            Inbox::SetConfig(request, responder) => {
                let value = request.value.as_str().unwrap_or_default().to_owned();
                let done = match request.config_id.as_str() {
                    "mode" => self.set_mode(&value).await.map(|()| true),
                    "model" => self.set_model(&value).await,
                    other => Err(AcpError::new(
                        code::INVALID_PARAMS,
                        format!("no configuration option {other}: rummy's are mode and model"),
                    )),
                };
                match done {
                    Ok(mode_changed) => {
                        responder.respond(acp::SetConfigOptionResponse {
                            config_options: self.config_options(),
                        });
                        if mode_changed && request.config_id == "mode" {
                            self.send(acp::SessionUpdate::CurrentModeUpdate {
                                current_mode_id: self.mode.clone(),
                            });
                        }
                    }
                    Err(e) => {
                        responder.respond_with_error(e);
                    }
                }
            }
            Inbox::Answer { path, outcome } => self.answer(&path, outcome).await,
            Inbox::Ran { path, ran } => self.ran(&path, ran).await,
            Inbox::Called { path, answer } => self.called(&path, answer).await,
            // Taken by the session's loop, which ends.
            Inbox::Close => {}
        }
    }

    /// Sets the mode of the next loops (the run's too, once it exists).
    async fn set_mode(&mut self, mode: &str) -> Result<(), AcpError> {
        if !MODES.iter().any(|(id, _, _)| *id == mode) {
            return Err(AcpError::new(
                code::INVALID_PARAMS,
                format!("no mode {mode}: rummy's are ask and act"),
            ));
        }
        self.mode = mode.to_owned();
        self.configure(RunAttributes {
            mode: Some(mode.to_owned()),
            ..RunAttributes::default()
        })
        .await
    }

    /// Sets the model of the next loops; answers whether it was one of the server's.
    async fn set_model(&mut self, model: &str) -> Result<bool, AcpError> {
        if !self.models.iter().any(|m| m == model) {
            return Err(AcpError::new(
                code::INVALID_PARAMS,
                format!(
                    "no model {model} on this server: it has {}",
                    self.models.join(", ")
                ),
            ));
        }
        self.model = model.to_owned();
        self.configure(RunAttributes {
            model: Some(model.to_owned()),
            ..RunAttributes::default()
        })
        .await?;
        Ok(true)
    }

    /// Configures the run, when it exists, as the page and the CLI see it.
    async fn configure(&mut self, attributes: RunAttributes) -> Result<(), AcpError> {
        if !self.run_exists {
            return Ok(());
        }
        let params = rummy_client::params::SetParams {
            path: format!("run://{}", self.id),
            attributes: Some(attributes.to_map()),
            ..Default::default()
        };
        self.client
            .set(&params)
            .await
            .map(|_| ())
            .map_err(|e| call_error("configuring the run", e))
    }

    /// `session/prompt`: a loop of the run (its first makes the run), or the answer to the
    /// question the run waits on.
    async fn prompt(
        &mut self,
        request: acp::PromptRequest,
        responder: Responder<acp::PromptResponse>,
    ) {
        if self.prompt.is_some() {
            responder.respond_with_error(AcpError::new(
                code::INVALID_REQUEST,
                "a prompt of this session is still running: cancel it or wait for its end",
            ));
            return;
        }
        let (text, files) = match read_prompt(&request.prompt, &self.root) {
            Ok(read) => read,
            Err(e) => {
                responder.respond_with_error(e);
                return;
            }
        };
        if let Err(e) = self.revive().await {
            responder.respond_with_error(e);
            return;
        }
        // A new connection holds no offer yet: the loop must see the editor's tools.
        self.offer_again().await;
        let attributes = RunAttributes {
            model: Some(self.model.clone()),
            mode: Some(self.mode.clone()),
            ..RunAttributes::default()
        };
        let started = if let Some(question) = self.question.take() {
            self.client
                .resolve(
                    &self.id,
                    &question.path,
                    Decision::Accept(Some(text)),
                    question.hash.as_deref(),
                )
                .await
                .map(|_| ())
        } else if self.run_exists {
            // The server's newest seq, not the pushes this client has read: a push of the last
            // loop still on its way (a loop-end refresh) must not end this prompt.
            match self.client.get_run_page(&self.id, 1, 0).await {
                Ok(snapshot) => self.seq_floor = snapshot.last_seq,
                Err(e) => {
                    responder.respond_with_error(call_error("reading the run", e));
                    return;
                }
            }
            self.client
                .continue_run(&self.id, &text, &attributes)
                .await
                .map(|_| ())
        } else {
            self.seq_floor = 0;
            self.client
                .start_run(Some(&self.id), &text, &attributes)
                .await
                .map(|_| ())
        };
        if let Err(e) = started {
            responder.respond_with_error(call_error("starting the loop", e));
            return;
        }
        self.run_exists = true;
        self.prose = Prose::new();
        for file in files {
            let params = GetParams {
                run: self.id.clone(),
                path: file.clone(),
                ..GetParams::default()
            };
            if let Err(e) = self.client.get(&params).await {
                tracing::warn!(run = %self.id, "promoting {file}: {e}");
            }
        }
        self.prompt = Some(responder);
    }

    /// A push of the server.
    async fn note(&mut self, note: Notification) {
        if note.run() != Some(self.id.as_str()) {
            return;
        }
        match note {
            // Reasoning a provider streams apart is thought as it is; the text is filtered, in
            // its own sequence (the two streams interleave).
            Notification::UiRender(render) if render.reasoning => {
                self.send(acp::SessionUpdate::AgentThoughtChunk {
                    content: acp::ContentBlock::text(render.text),
                });
            }
            Notification::UiRender(render) => {
                if !render.append {
                    self.prose = Prose::new();
                }
                for piece in self.prose.push(&render.text) {
                    let update = match piece {
                        Piece::Text(text) => acp::SessionUpdate::message(text),
                        Piece::Thought(text) => acp::SessionUpdate::AgentThoughtChunk {
                            content: acp::ContentBlock::text(text),
                        },
                    };
                    self.send(update);
                }
            }
            Notification::RunState(state) => self.state(state).await,
            Notification::ToolCall(call) => self.call_tool(call),
            Notification::StreamCancelled(cancelled) => {
                if let Some(command) = self.running.remove(&cancelled.path) {
                    let _ = command.stop.send(());
                }
                self.give_up(&cancelled.path);
            }
            _ => {}
        }
    }

    async fn state(&mut self, state: RunState) {
        for item in &state.history {
            self.item(item).await;
        }
        let unknowns: Vec<String> = state.unknowns.iter().map(|u| u.body.clone()).collect();
        if unknowns != self.plan {
            self.plan = unknowns;
            let entries = self
                .plan
                .iter()
                .map(|q| acp::PlanEntry {
                    content: q.clone(),
                    priority: "medium",
                    status: "pending",
                })
                .collect();
            self.send(acp::SessionUpdate::Plan { entries });
        }
        let fresh = state.seq.is_none_or(|seq| seq > self.seq_floor);
        if !fresh || self.prompt.is_none() {
            return;
        }
        let idle = !matches!(state.status, 100 | 102 | 202) && state.queued.is_none();
        if idle {
            let ending = convert::ending(state.status, state.stop_reason);
            self.finish(ending).await;
        } else if state.status == 202 && self.asking.is_empty() {
            if let Some(question) = self.question.clone() {
                self.say(&convert::question(&question));
                self.finish(Ending::Stop(acp::StopReason::EndTurn)).await;
            }
        }
    }

    /// Answers the prompt in flight.
    async fn finish(&mut self, ending: Ending) {
        let Some(responder) = self.prompt.take() else {
            return;
        };
        match ending {
            Ending::Stop(reason) => {
                responder.respond(acp::PromptResponse {
                    stop_reason: reason,
                });
            }
            Ending::Error(what) => {
                let why = self.reason().await;
                let message = match why {
                    Some(why) => format!("{what}: {why}"),
                    None => what,
                };
                responder.respond_with_error(AcpError::new(code::INTERNAL_ERROR, message));
            }
        }
    }

    /// Why the run's last loop failed: its newest `error://` entry.
    async fn reason(&mut self) -> Option<String> {
        let snapshot = self.client.get_run(&self.id, None).await.ok()?;
        snapshot
            .history
            .iter()
            .rev()
            .find(|i| i.tool == "error")
            .and_then(|i| i.body.clone())
    }

    /// The connection was lost and the client's own reconnection gave up: the prompt in
    /// flight is answered with the error, and the server is tried again every
    /// [`RECONNECT_EVERY`] until it is back (then the client replays what the run pushed).
    fn lost(&mut self, error: ClientError) {
        if let Some(responder) = self.prompt.take() {
            responder.respond_with_error(AcpError::new(
                code::INTERNAL_ERROR,
                format!(
                    "the connection to the rummy server was lost ({error}); the run goes on \
                     there, and this session follows it again once the server is back"
                ),
            ));
        }
        self.down = true;
    }

    /// Makes sure the connection is up before a prompt: one found lost (a server restarted
    /// since the last push, or still down) is tried again a few times over some seconds.
    async fn revive(&mut self) -> Result<(), AcpError> {
        if !self.down && self.client.ping().await.is_ok() {
            return Ok(());
        }
        let mut delay = Duration::from_millis(100);
        let mut last = None;
        for _ in 0..REVIVE_TRIES {
            match self.client.reconnect().await {
                Ok(()) => {
                    self.down = false;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(RECONNECT_EVERY);
        }
        self.down = true;
        let why = last.map(|e| e.to_string()).unwrap_or_default();
        Err(AcpError::new(
            code::INTERNAL_ERROR,
            format!(
                "the rummy server cannot be reached ({why}); this session reconnects by itself: \
                 try again once it is back"
            ),
        ))
    }
}
