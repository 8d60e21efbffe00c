//! Accepted `sh`/`env` commands (docs/design/clients.md): the server's runner (with
//! `RUMMY_COMMAND_RUNNER=server`) and the turns waiting for a command's output.
//!
//! [`Commands`] (`services::commands`) is shared through `Services`. It knows every command
//! the server runs — keyed by run and log path, with a way to stop it and its process group —
//! and every turn waiting for a command's output; [`Commands::start`], here, runs one.
//! Whoever settles a command's channels (the runner, a client's `stream/completed`,
//! `stream/aborted` or `stream/cancel`) calls [`Commands::settled`]: the waiting turn wakes,
//! and a command the server still runs is killed (its output is no longer wanted). A run's
//! cancel stops the run's commands ([`Commands::stop_run`]); a server's shutdown kills every
//! process group at once and writes nothing ([`Commands::shutdown`]): recovery at the next
//! start fails those channels "interrupted by restart".

mod runner;

use crate::services::commands::Commands;
use crate::services::Services;
use rummy_store::entries::RunRef;
use std::path::PathBuf;

/// An accepted command to run.
#[derive(Debug, Clone)]
pub struct CommandJob {
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
impl Commands {
    /// Runs `job` on the server: `sh -c` in the project root, its output streamed into the
    /// channels until it ends, is stopped, or times out. Nothing starts once the server stops.
    pub fn start(&self, svc: &Services, job: CommandJob) {
        let Some(stop) = self.register((job.run.run_id, job.path.clone())) else {
            return;
        };
        actix_rt::spawn(runner::run(svc.clone(), self.clone(), job, stop));
    }
}
