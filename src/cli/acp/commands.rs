//! Accepted commands the server asks its client to run (`RUMMY_COMMAND_RUNNER=client`): in the
//! editor's terminal (`terminal/*`) when the editor offers one, otherwise here with `sh -c` as
//! the CLI runs them. Each runs in a task of its own, which reports to the session's inbox
//! ([`Ran`]); the session streams it to the server.

use super::connection::Connection;
use super::session::Inbox;
use super::wire as acp;
use crate::cli::runner::{self, Running};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How often a command in the editor's terminal is asked for its output.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// The most output the editor's terminal keeps of one command.
const TERMINAL_OUTPUT_BYTES: u64 = 4 * 1024 * 1024;

/// What a command run for the session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// It runs in the editor's terminal of this id.
    Terminal(String),
    /// Output on a channel (1 stdout, 2 stderr; a terminal's is all 1).
    Chunk {
        /// The channel.
        channel: u32,
        /// The text.
        text: String,
    },
    /// It ended: its exit code (`None`: killed by a signal), or why it could not run.
    Exited(Result<Option<i32>, String>),
}

/// A command the session runs: dropping (or sending on) `stop` stops it.
pub struct Command {
    /// Stops the command.
    pub stop: oneshot::Sender<()>,
    /// When it started.
    pub started: std::time::Instant,
}

/// What a command needs to run.
pub struct Job {
    /// The session (for `terminal/*`).
    pub session: String,
    /// The proposal's path: the stream's key.
    pub path: String,
    /// The command line.
    pub command: String,
    /// The project root, where it runs.
    pub root: String,
}

/// Starts `job` in the editor's terminal (`terminal`) or here; what it does goes to `inbox`.
pub fn start(
    job: Job,
    terminal: Option<Connection>,
    inbox: mpsc::UnboundedSender<Inbox>,
) -> Command {
    let (stop, stopped) = oneshot::channel();
    let path = job.path.clone();
    let report = move |ran: Ran| {
        let _ = inbox.send(Inbox::Ran {
            path: path.clone(),
            ran,
        });
    };
    match terminal {
        Some(cx) => {
            actix_rt::spawn(in_terminal(cx, job, report, stopped));
        }
        None => {
            actix_rt::spawn(here(job, report, stopped));
        }
    }
    Command {
        stop,
        started: std::time::Instant::now(),
    }
}

/// Runs the job here, as the CLI does.
async fn here(job: Job, report: impl Fn(Ran), mut stopped: oneshot::Receiver<()>) {
    let mut running = Running::start(&job.session, &job.path, &job.command, &job.root);
    let mut stopping = false;
    loop {
        tokio::select! {
            out = running.output.recv() => match out {
                Some(runner::Output::Chunk { channel, text }) => report(Ran::Chunk { channel, text }),
                Some(runner::Output::Exited(end)) => {
                    report(Ran::Exited(end));
                    return;
                }
                None => {
                    report(Ran::Exited(Err("the command's output ended without an exit".into())));
                    return;
                }
            },
            _ = &mut stopped, if !stopping => {
                stopping = true;
                running.stop();
            }
        }
    }
}

/// Runs the job in the editor's terminal: its output is read every [`POLL_EVERY`] until it
/// exits, then the terminal is released.
async fn in_terminal(
    cx: Connection,
    job: Job,
    report: impl Fn(Ran),
    mut stopped: oneshot::Receiver<()>,
) {
    let create = acp::CreateTerminalRequest {
        session_id: job.session.clone(),
        command: "sh".to_owned(),
        args: vec!["-c".to_owned(), job.command.clone()],
        cwd: PathBuf::from(&job.root),
        output_byte_limit: TERMINAL_OUTPUT_BYTES,
    };
    let (_, created) = cx.request::<acp::CreateTerminalResponse>("terminal/create", &create);
    let id = match created.await {
        Ok(created) => created.terminal_id,
        Err(e) => {
            report(Ran::Exited(Err(format!(
                "the editor's terminal did not start it: {}",
                e.message
            ))));
            return;
        }
    };
    report(Ran::Terminal(id.clone()));
    let terminal = acp::TerminalRequest {
        session_id: job.session.clone(),
        terminal_id: id,
    };
    let (_, wait) = cx.request::<acp::ExitStatus>("terminal/wait_for_exit", &terminal);
    tokio::pin!(wait);
    let mut taken = 0;
    let mut stopping = false;
    let exit = loop {
        tokio::select! {
            exit = &mut wait => break exit,
            () = tokio::time::sleep(POLL_EVERY) => {
                taken = forward(&cx, &terminal, taken, &report).await;
            }
            _ = &mut stopped, if !stopping => {
                stopping = true;
                let (_, killed) = cx.request::<serde_json::Value>("terminal/kill", &terminal);
                let _ = killed.await;
            }
        }
    };
    forward(&cx, &terminal, taken, &report).await;
    let (_, released) = cx.request::<serde_json::Value>("terminal/release", &terminal);
    let _ = released.await;
    report(Ran::Exited(match exit {
        Ok(exit) => Ok(exit.exit_code.and_then(|c| i32::try_from(c).ok())),
        Err(e) => Err(format!(
            "the editor's terminal lost the command: {}",
            e.message
        )),
    }));
}

/// Reports the terminal's output past byte `taken`; answers how much is taken now.
async fn forward(
    cx: &Connection,
    terminal: &acp::TerminalRequest,
    taken: usize,
    report: &impl Fn(Ran),
) -> usize {
    let (_, output) = cx.request::<acp::TerminalOutputResponse>("terminal/output", terminal);
    let Ok(output) = output.await else {
        return taken;
    };
    let text = output.output;
    // A terminal that dropped its beginning (over its limit) is read from what it kept.
    let from = if text.len() < taken || !text.is_char_boundary(taken) {
        text.len()
    } else {
        taken
    };
    if from < text.len() {
        report(Ran::Chunk {
            channel: 1,
            text: text[from..].to_owned(),
        });
    }
    text.len()
}
