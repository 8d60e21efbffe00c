//! Opening a session: the connection, the project's hello (the editor's directory, else
//! `--project`), the models, and for `session/load` the run replayed and followed.

use super::MODES;
use super::{Inbox, Opening, Session, Start};
use crate::cli::acp::connection::Connection;
use crate::cli::acp::convert;
use crate::cli::acp::mcp;
use crate::cli::acp::prose::Prose;
use crate::cli::acp::replay;
use crate::cli::acp::wire::{self as acp, code, Error as AcpError};
use crate::cli::exit::Exit;
use crate::cli::session::{unreachable, Failure};
use rummy_client::bodies::Bodies;
use rummy_client::params::{HelloParams, Page};
use rummy_client::{CallError, Client, ClientOptions};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use tokio::sync::mpsc;

impl Start {
    /// Answers `session/new` or `session/load` with why the session could not open.
    fn refuse(self, error: AcpError) {
        match self {
            Start::New(_, responder) => responder.respond_with_error(error),
            Start::Load(_, responder) => responder.respond_with_error(error),
        }
    }
}

/// Opens the session's project and answers `session/new` or `session/load`; `None` when it
/// could not be opened (the editor was told why).
pub(super) async fn begin(
    id: String,
    start: Start,
    opening: Opening,
    cx: Connection,
    inbox: mpsc::UnboundedSender<Inbox>,
) -> Option<Session> {
    let (cwd, servers) = match &start {
        Start::New(request, _) => (request.cwd.clone(), request.mcp_servers.clone()),
        Start::Load(request, _) => (request.cwd.clone(), request.mcp_servers.clone()),
    };
    let opened = open(&opening, &cwd).await;
    let (client, root) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            start.refuse(e);
            return None;
        }
    };
    let mut session = Session {
        id,
        cx,
        client,
        root,
        run_exists: false,
        mode: "act".to_owned(),
        model: String::new(),
        models: Vec::new(),
        prompt: None,
        seq_floor: 0,
        calls: HashMap::new(),
        channels: Bodies::default(),
        asking: HashMap::new(),
        rules: HashSet::new(),
        question: None,
        prose: Prose::new(),
        plan: Vec::new(),
        inbox,
        opening,
        running: HashMap::new(),
        down: false,
        mcp: mcp::Servers::default(),
        offer: Vec::new(),
        offered_on: None,
        calling: HashMap::new(),
    };
    if let Err(e) = session.load_models().await {
        start.refuse(e);
        return None;
    }
    // Before the answer: the session's first prompt sees the editor's tools.
    let problems = session.start_tools(&servers, &cwd).await;
    match start {
        Start::New(_, responder) => {
            responder.respond(acp::NewSessionResponse {
                session_id: session.id.clone(),
                modes: session.modes(),
                config_options: session.config_options(),
            });
        }
        Start::Load(_, responder) => match session.load().await {
            Ok(()) => {
                responder.respond(acp::LoadSessionResponse {
                    modes: session.modes(),
                    config_options: session.config_options(),
                });
            }
            Err(e) => {
                responder.respond_with_error(e);
                return None;
            }
        },
    }
    for problem in problems {
        session.say(&format!("{}\n", sentence(&problem)));
    }
    Some(session)
}

/// Connects and says hello for the project at `cwd`: named after its directory and rooted
/// there, else (where the server refuses that) the one `--project` names.
async fn open(opening: &Opening, cwd: &Path) -> Result<(Client, String), AcpError> {
    let mut options = ClientOptions::new(&opening.url);
    options.token = opening.token.clone();
    let mut client = Client::connect(options)
        .await
        .map_err(|e| failure(unreachable(&opening.url, opening.token.is_some(), &e)))?;
    let (name, root) = crate::cli::session::project_of(cwd, None);
    let here = HelloParams {
        name,
        project_root: Some(root),
        client_version: Some("2.1.0".into()),
        ..HelloParams::default()
    };
    let refused = match client.hello(here).await {
        Ok(hello) => return Ok((client, hello.project_root)),
        Err(CallError::Rpc(e)) if matches!(e.code, -32005 | -32003) => e,
        Err(e) => return Err(call_error("opening the project", e)),
    };
    let Some(project) = opening.project.clone() else {
        return Err(AcpError::new(
            code::INVALID_PARAMS,
            format!(
                "the server refused {} as a project ({}); start rummy acp with --project NAME \
                 to open a project of that server instead",
                cwd.display(),
                refused.message
            ),
        ));
    };
    let named = HelloParams {
        name: project,
        client_version: Some("2.1.0".into()),
        ..HelloParams::default()
    };
    match client.hello(named).await {
        Ok(hello) => Ok((client, hello.project_root)),
        Err(e) => Err(call_error("opening the --project project", e)),
    }
}

/// `problem` as a sentence: capitalised, ending with a full stop.
fn sentence(problem: &str) -> String {
    let mut chars = problem.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    format!("{first}{}.", chars.as_str())
}

/// A failure as the CLI says it, for the editor: what went wrong, then what to do; a token
/// refused is an authentication error.
fn failure(failure: Failure) -> AcpError {
    let code = match failure.exit {
        Exit::NotAllowed => code::AUTH_REQUIRED,
        _ => code::INTERNAL_ERROR,
    };
    let message = match failure.hint {
        Some(hint) => format!("{} ({hint})", failure.message),
        None => failure.message,
    };
    AcpError::new(code, message)
}

/// A call the server refused or could not take, as the editor reads it.
pub(super) fn call_error(what: &str, error: CallError) -> AcpError {
    match error {
        CallError::Rpc(e) if matches!(e.kind(), Some("unauthorized" | "permission")) => {
            AcpError::new(
                code::AUTH_REQUIRED,
                format!("{what}: not allowed: {} (set RUMMY_TOKEN)", e.message),
            )
        }
        CallError::Rpc(e) => AcpError::new(code::INVALID_PARAMS, format!("{what}: {}", e.message)),
        CallError::Client(e) => AcpError::new(
            code::INTERNAL_ERROR,
            format!("{what}: the connection to the server was lost ({e})"),
        ),
    }
}

impl Session {
    /// The server's models, and the session's: `--model`, else the server's only (or first).
    pub(super) async fn load_models(&mut self) -> Result<(), AcpError> {
        let models = self
            .client
            .get_models(Page::default())
            .await
            .map_err(|e| call_error("listing the models", e))?;
        self.models = models.into_iter().map(|m| m.alias).collect();
        self.model = match (&self.opening.model, self.models.first()) {
            (Some(model), _) => model.clone(),
            (None, Some(first)) => first.clone(),
            (None, None) => {
                return Err(AcpError::new(
                    code::INTERNAL_ERROR,
                    "the rummy server has no model configured (RUMMY_MODEL_<alias>, see its \
                     README)",
                ))
            }
        };
        Ok(())
    }

    /// `session/load`: the run whose alias is the session id, replayed, then followed.
    pub(super) async fn load(&mut self) -> Result<(), AcpError> {
        // The newest entries only: a long run's whole history may not fit one answer, and the
        // replay, the pending proposals and the open tool calls are all recent.
        let snapshot = match self
            .client
            .get_run_page(&self.id, replay::ENTRIES_READ, 0)
            .await
        {
            Ok(snapshot) => snapshot,
            Err(CallError::Rpc(e)) if e.kind() == Some("not_found") => {
                return Err(AcpError::new(
                    code::RESOURCE_NOT_FOUND,
                    format!("no run {} in this project: {}", self.id, e.message),
                ))
            }
            Err(e) => return Err(call_error("reading the run", e)),
        };
        self.run_exists = true;
        if let Some(mode) = snapshot.mode.clone() {
            self.mode = mode;
        }
        if let Some(model) = snapshot.model.clone() {
            self.model = model;
        }
        for update in replay::of_history(&snapshot.history, &self.root) {
            self.send(update);
        }
        for item in &snapshot.history {
            self.calls.entry(item.path.clone()).or_default().item = Some(item.clone());
        }
        self.plan = snapshot.unknowns.iter().map(|u| u.body.clone()).collect();
        self.seq_floor = snapshot.last_seq;
        self.client.follow(&self.id, snapshot.last_seq);
        // Its pending proposals are asked now, and a question waiting for its answer is said.
        for item in snapshot.history.iter().filter(|i| i.is_pending_proposal()) {
            self.proposed(item).await;
        }
        if let Some(question) = self.question.clone() {
            self.say(&convert::question(&question));
        }
        Ok(())
    }

    pub(super) fn modes(&self) -> acp::ModeState {
        let available_modes = MODES
            .iter()
            .map(|&(id, name, description)| acp::Mode {
                id,
                name,
                description,
            })
            .collect();
        acp::ModeState {
            current_mode_id: self.mode.clone(),
            available_modes,
        }
    }

    pub(super) fn config_options(&self) -> Vec<acp::ConfigOption> {
        let modes = MODES
            .iter()
            .map(|(id, name, description)| acp::SelectOption {
                value: (*id).to_owned(),
                name: (*name).to_owned(),
                description: Some((*description).to_owned()),
            })
            .collect();
        let mut names = self.models.clone();
        if !names.contains(&self.model) {
            names.push(self.model.clone());
        }
        let models = names
            .into_iter()
            .map(|m| acp::SelectOption {
                value: m.clone(),
                name: m,
                description: None,
            })
            .collect();
        vec![
            acp::ConfigOption {
                id: "mode",
                name: "Mode",
                category: "mode",
                kind: "select",
                current_value: self.mode.clone(),
                options: modes,
            },
            acp::ConfigOption {
                id: "model",
                name: "Model",
                category: "model",
                kind: "select",
                current_value: self.model.clone(),
                options: models,
            },
        ]
    }
}
