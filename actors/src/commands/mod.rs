//! Accepted `sh`/`env` commands (CLIENTS.md §2a): the server's runner (with
//! `RUMMY_COMMAND_RUNNER=server`) and the turns waiting for a command's output.
//!
//! [`Commands`] is shared through `Services`. It knows every command the server runs — keyed
//! by run and log path, with a way to stop it and its process group — and every turn waiting
//! for a command's output. Whoever settles a command's channels (the runner, a client's
//! `stream/completed`, `stream/aborted` or `stream/cancel`) calls [`Commands::settled`]: the
//! waiting turn wakes, and a command the server still runs is killed (its output is no longer
//! wanted). A run's cancel stops the run's commands ([`Commands::stop_run`]); a server's
//! shutdown kills every process group at once and writes nothing ([`Commands::shutdown`]):
//! recovery at the next start fails those channels "interrupted by restart".

mod runner;

use crate::services::Services;
use rummy_core::store::entries::RunRef;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{oneshot, Notify};

/// A command: its run and its log entry's path.
type Key = (i32, String);

/// Why a running command is stopped.
#[derive(Debug)]
enum Stop {
    /// Kill it and settle its channels as cancelled with this reason (a run's cancel).
    Cancel(String),
    /// Someone else settled its channels: kill it and write nothing more.
    Settled,
    /// The server is stopping: kill it and write nothing (recovery settles it at the next start).
    Shutdown,
}

/// A command the server runs.
struct Running {
    stop: Option<oneshot::Sender<Stop>>,
    /// Its process group, once started (to kill at shutdown without waiting for its task).
    group: Option<i32>,
}

#[derive(Default)]
struct Registry {
    running: HashMap<Key, Running>,
    waits: HashMap<Key, Arc<Notify>>,
    shutting_down: bool,
}

/// The server's running commands and the turns waiting for commands' output; cheap to clone.
#[derive(Clone, Default)]
pub struct Commands(Arc<Mutex<Registry>>);

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
}

impl Commands {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on the server: `sh -c` in the project root, its output streamed into the
    /// channels until it ends, is stopped, or times out. Nothing starts once the server stops.
    pub fn start(&self, svc: &Services, job: CommandJob) {
        let (tx, rx) = oneshot::channel();
        {
            let mut registry = self.registry();
            if registry.shutting_down {
                return;
            }
            registry.running.insert(
                (job.run.run_id, job.path.clone()),
                Running {
                    stop: Some(tx),
                    group: None,
                },
            );
        }
        actix_rt::spawn(runner::run(svc.clone(), self.clone(), job, rx));
    }

    /// What a turn waiting for the command at `path` of `run_id` waits on: notified once its
    /// channels are settled. Taken before the channels exist, so no settling is missed.
    pub fn waiter(&self, run_id: i32, path: &str) -> Arc<Notify> {
        Arc::clone(
            self.registry()
                .waits
                .entry((run_id, path.to_owned()))
                .or_default(),
        )
    }

    /// Nobody waits for the command at `path` any more.
    pub fn forget_waiter(&self, run_id: i32, path: &str) {
        self.registry().waits.remove(&(run_id, path.to_owned()));
    }

    /// The channels of the command at `path` were settled (by a client or the runner): the
    /// waiting turn goes on, and a command still running is killed.
    pub fn settled(&self, run_id: i32, path: &str) {
        let key = (run_id, path.to_owned());
        let mut registry = self.registry();
        if let Some(waiter) = registry.waits.remove(&key) {
            waiter.notify_one();
        }
        if let Some(stop) = registry.running.get_mut(&key).and_then(|r| r.stop.take()) {
            let _ = stop.send(Stop::Settled);
        }
    }

    /// Stops every command the server runs for `run_id`, their channels cancelled with
    /// `reason`; answers how many.
    pub fn stop_run(&self, run_id: i32, reason: &str) -> usize {
        let mut registry = self.registry();
        let mut stopped = 0;
        for (_, running) in registry.running.iter_mut().filter(|(k, _)| k.0 == run_id) {
            if let Some(stop) = running.stop.take() {
                let _ = stop.send(Stop::Cancel(reason.to_owned()));
                stopped += 1;
            }
        }
        stopped
    }

    /// The server stops: every running command's process group is killed now, and nothing
    /// more is written for them.
    pub fn shutdown(&self) {
        let mut registry = self.registry();
        registry.shutting_down = true;
        for running in registry.running.values_mut() {
            if let Some(group) = running.group {
                runner::kill_group(group);
            }
            if let Some(stop) = running.stop.take() {
                let _ = stop.send(Stop::Shutdown);
            }
        }
    }

    /// How many commands the server runs now.
    pub fn running(&self) -> usize {
        self.registry().running.len()
    }

    /// The command's process group: set once it started, cleared once its shell was reaped
    /// (its id may then be reused).
    fn set_group(&self, key: &Key, group: Option<i32>) {
        if let Some(running) = self.registry().running.get_mut(key) {
            running.group = group;
        }
    }

    /// The runner is done with the command: its channels are settled (`wake`: the turn waiting
    /// goes on), or left streaming for recovery at the next start (the server stops: the turn
    /// must not go on now).
    fn finished(&self, key: &Key, wake: bool) {
        let mut registry = self.registry();
        registry.running.remove(key);
        if wake {
            if let Some(waiter) = registry.waits.remove(key) {
                waiter.notify_one();
            }
        }
    }
}
