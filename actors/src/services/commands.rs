//! The server's running commands and the turns waiting for commands' output: the registry every actor shares through `Services`.
//!
//! It knows every command the server runs — keyed by run and log path, with a way to stop it
//! and its process group — and every turn waiting for a command's output. Starting a command
//! is `commands`' (`Commands::start`, defined there: it spawns the runner with the
//! `Services` this registry is part of); the runner reports here as the command starts and
//! ends.

use rummy_store::ids::RunId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{oneshot, Notify};

/// A command: its run and its log entry's path.
pub(crate) type Key = (RunId, String);

/// Why a running command is stopped.
#[derive(Debug)]
pub(crate) enum Stop {
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

impl Commands {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the command `key` as running, until the runner reports it [`finished`](Self::finished);
    /// how it is told to stop. `None` once the server stops: then nothing starts.
    pub(crate) fn register(&self, key: Key) -> Option<oneshot::Receiver<Stop>> {
        let (tx, rx) = oneshot::channel();
        let mut registry = self.registry();
        if registry.shutting_down {
            return None;
        }
        registry.running.insert(
            key,
            Running {
                stop: Some(tx),
                group: None,
            },
        );
        Some(rx)
    }

    /// What a turn waiting for the command at `path` of `run_id` waits on: notified once its
    /// channels are settled. Taken before the channels exist, so no settling is missed.
    pub fn waiter(&self, run_id: RunId, path: &str) -> Arc<Notify> {
        Arc::clone(
            self.registry()
                .waits
                .entry((run_id, path.to_owned()))
                .or_default(),
        )
    }

    /// Nobody waits for the command at `path` any more.
    pub fn forget_waiter(&self, run_id: RunId, path: &str) {
        self.registry().waits.remove(&(run_id, path.to_owned()));
    }

    /// The channels of the command at `path` were settled (by a client or the runner): the
    /// waiting turn goes on, and a command still running is killed.
    pub fn settled(&self, run_id: RunId, path: &str) {
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
    pub fn stop_run(&self, run_id: RunId, reason: &str) -> usize {
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
                kill_group(group);
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
    pub(crate) fn set_group(&self, key: &Key, group: Option<i32>) {
        if let Some(running) = self.registry().running.get_mut(key) {
            running.group = group;
        }
    }

    /// The runner is done with the command: its channels are settled (`wake`: the turn waiting
    /// goes on), or left streaming for recovery at the next start (the server stops: the turn
    /// must not go on now).
    pub(crate) fn finished(&self, key: &Key, wake: bool) {
        let mut registry = self.registry();
        registry.running.remove(key);
        if wake {
            if let Some(waiter) = registry.waits.remove(key) {
                waiter.notify_one();
            }
        }
    }
}

/// Kills process group `group` with SIGKILL; one already gone is no error.
pub(crate) fn kill_group(group: i32) {
    let Some(pid) = rustix::process::Pid::from_raw(group) else {
        return;
    };
    match rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => {}
        Err(e) => tracing::warn!(group, error = %e, "cannot kill a command's process group"),
    }
}
