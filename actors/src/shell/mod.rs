//! Accepted `sh`/`env` commands (docs/design/clients.md): the server's runner (with
//! `RUMMY_COMMAND_RUNNER=server`) and the turns waiting for a command's output.
//!
//! [`ShellRegistry`] (`services::shell`) is shared through `Services`. It knows every command
//! the server runs — keyed by run and log path, with a way to stop it and its process group —
//! and every turn waiting for a command's output; [`ShellRegistry::start`], here, runs one.
//! Whoever settles a command's channels (the runner, a client's `stream/completed`,
//! `stream/aborted` or `stream/cancel`) calls [`ShellRegistry::settled`]: the waiting turn wakes,
//! and a command the server still runs is killed (its output is no longer wanted). A run's
//! cancel stops the run's commands ([`ShellRegistry::stop_run`]); a server's shutdown kills every
//! process group at once and writes nothing ([`ShellRegistry::shutdown`]): recovery at the next
//! start fails those channels "interrupted by restart".

mod runner;

use crate::clock::now;
use crate::services::shell::ShellRegistry;
use crate::services::Services;
use rummy_core::turn::state;
use rummy_core::turn::streams::{self, StreamEnd, StreamWrite};
use rummy_store::entries::RunRef;
use rummy_store::notifications::Recorded;
use rummy_store::{runs, StoreError};
use std::path::PathBuf;

/// An accepted command to run.
#[derive(Debug, Clone)]
pub struct ShellJob {
    /// Its run.
    pub run: RunRef,
    /// Its log entry (the accepted proposal), whose channels it fills.
    pub path: String,
    /// The shell command.
    pub command: String,
    /// The project root: where it runs.
    pub root: PathBuf,
    /// Whether it may write the project root and its `HOME` (an accepted `sh`); an `env`
    /// writes nowhere but its private `/tmp`, in every mode.
    pub writes: bool,
    /// Whether it reaches the network (the project's `commandNetwork`, else the server's
    /// `RUMMY_COMMAND_NETWORK`).
    pub network: bool,
}

/// Starting a command needs the `Services` the registry is part of, so it is defined here,
/// above them, rather than with the registry.
impl ShellRegistry {
    /// Runs `job` on the server: `sh -c` in the project root, its output streamed into the
    /// channels until it ends, is stopped, or times out. Nothing starts once the server stops.
    pub fn start(&self, svc: &Services, job: ShellJob) {
        let Some(stop) = self.register((job.run.run_id, job.path.clone())) else {
            return;
        };
        actix_rt::spawn(runner::run(svc.clone(), self.clone(), job, stop));
    }
}

/// One write of an accepted command's (or call's) output: the chunks appended — each kept
/// within `cap` bytes per channel when given (output a client produced; the server's runner
/// caps its own) — then the channels settled if `end`, then `run/state` pushed with the run's
/// status as it stands. Answers the channels settled.
pub(crate) async fn write_output(
    svc: &Services,
    run: RunRef,
    path: String,
    chunks: Vec<(u32, String)>,
    end: Option<StreamEnd>,
    cap: Option<usize>,
) -> Result<Vec<String>, StoreError> {
    let divisor = svc.config.limits.token_divisor;
    let bounds = svc.store.bounds();
    let (alias, pushed, settled): (String, Recorded, Vec<String>) =
        svc.store
            .write(move |c| {
                let at = StreamWrite {
                    run,
                    ctx: crate::clock::write_ctx(divisor),
                };
                let mut appended = Vec::new();
                for (channel, text) in &chunks {
                    match cap {
                        Some(cap) => appended
                            .extend(streams::append_capped(c, at, &path, *channel, text, cap)?),
                        None => appended.push(streams::append(c, at, &path, *channel, text)?),
                    }
                }
                let mut settled = Vec::new();
                if let Some(end) = &end {
                    settled = streams::settle(c, at, &path, end)?;
                    // A settled channel's body is what was pushed already: only its state goes out
                    // (with what this write appended to it, if anything).
                    for unchanged in streams::unchanged(c, run.run_id, &settled)? {
                        if !appended.iter().any(|a| a.path == unchanged.path) {
                            appended.push(unchanged);
                        }
                    }
                }
                let stored = runs::by_id(c, run.run_id)?;
                let pushed = state::push_appended(
                    c,
                    stored.id,
                    stored.last_turn(),
                    stored.status,
                    bounds,
                    &appended,
                    now(),
                )?;
                Ok((stored.alias, pushed, settled))
            })
            .await?;
    svc.publish_state(run.project_id, &alias, &pushed);
    Ok(settled)
}
