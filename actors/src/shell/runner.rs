//! One accepted command run by the server: `sh -c <command>` in the project root, in a process
//! group of its own, stdin closed, the clean environment of `rummy_core::shell::env`; its
//! output read as it arrives (on the async runtime: no thread blocks on a pipe), capped per
//! channel, written in batches through the store with a `run/state` push each, and its end
//! settling the channels as `stream/completed` would.
//!
//! When the shell exits, whatever it left running in its group is killed (nothing a command
//! starts outlives it) and the pipes are read to their end, for at most [`DRAIN`] (a process
//! that left the group may hold them). On timeout or a run's cancel the whole group is killed
//! with SIGKILL: the command cannot delay its end.

use super::ShellJob;
use crate::services::sandbox::{Mode, Request};
use crate::services::shell::{kill_group, Key, ShellRegistry, Stop};
use crate::services::Services;
use rummy_core::shell::env::command_env;
use rummy_core::shell::output::{ChannelText, Pending};
use rummy_core::shell::{end_of, Finish};
use rummy_core::turn::streams::StreamEnd;
use rummy_core::wire::notifications::StreamCancelled;
use rummy_sandbox::cgroup::CommandCgroups;
use rummy_store::entries::RunRef;
use rummy_store::ids::RunId;
use rummy_store::{projects, runs, StoreError};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};

/// How long the pipes are still read after the shell exited and its group was killed.
const DRAIN: Duration = Duration::from_secs(2);

/// Bytes read from a pipe at a time.
const READ_BYTES: usize = 8 * 1024;

/// The command's process group while it may still hold processes; killed when dropped, so a
/// task that ends early (the runtime stopping) leaves nothing running.
struct Group(Option<i32>);

impl Group {
    fn kill(&self) {
        if let Some(group) = self.0 {
            kill_group(group);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What stopped the command from outside.
enum Quiet {
    /// Its channels were settled by someone else: nothing more to write.
    Settled,
    /// The server stops: nothing more to write.
    Shutdown,
}

/// The server's variables as text (a variable that is not UTF-8 is not passed on).
fn server_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// Reads `pipe` into `tx` as channel `channel` until its end (then `None`).
async fn read_pipe(
    channel: u32,
    mut pipe: impl AsyncRead + Unpin,
    tx: mpsc::Sender<(u32, Option<Vec<u8>>)>,
) {
    let mut buf = vec![0; READ_BYTES];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((channel, Some(buf[..n].to_vec()))).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send((channel, None)).await;
}

/// Runs the command until it ends, then settles its channels (unless `stop` said otherwise).
pub(super) async fn run(
    svc: Services,
    commands: ShellRegistry,
    job: ShellJob,
    mut stop: oneshot::Receiver<Stop>,
) {
    let key: Key = (job.run.run_id, job.path.clone());
    let settings = svc.config.shell.clone();
    let started = Instant::now();
    tracing::info!(run_id = job.run.run_id.0, path = %job.path, "command started");
    // Other projects' roots are covered in the command's root wherever they lie under a path it
    // may read (an admin's RUMMY_COMMAND_READ_PATHS, /opt): one read, before it starts.
    let others = if *svc.sandbox.mode() == Mode::Confined {
        other_roots(&svc, &job.root).await
    } else {
        Vec::new()
    };
    let spawned = match spawn(&svc, &job, others) {
        Ok(spawned) => spawned,
        Err(why) => {
            tracing::warn!(path = %job.path, reason = %why, "command not run");
            let end = end_of(&Finish::NotStarted(why), started.elapsed());
            settle(&svc, &job, Vec::new(), end, None).await;
            commands.finished(&key, true);
            return;
        }
    };
    let Spawned { mut child, cgroups } = spawned;
    let mut group = Group(child.id().and_then(|id| i32::try_from(id).ok()));
    commands.set_group(&key, group.0);

    let (tx, mut rx) = mpsc::channel(8);
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(actix_rt::spawn(read_pipe(1, out, tx.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(actix_rt::spawn(read_pipe(2, err, tx.clone())));
    }
    drop(tx);

    let cap = settings.output_bytes;
    let mut texts = [ChannelText::new(cap), ChannelText::new(cap)];
    let mut pending = Pending::default();
    let deadline = tokio::time::Instant::now() + settings.timeout;
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let mut open = readers.len();
    let mut finish: Option<Finish> = None;
    let mut exited = false;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut stop_open = true;
    let mut quiet: Option<Quiet> = None;
    let mut cancelled: Option<String> = None;
    while !(exited && open == 0) {
        let flush_at = pending.due().map(tokio::time::Instant::from_std);
        tokio::select! {
            stopped = &mut stop, if stop_open => {
                stop_open = false;
                group.kill();
                match stopped {
                    // A command that already ended keeps its own end.
                    Ok(Stop::Cancel(reason)) if finish.is_none() => {
                        cancelled = Some(reason.clone());
                        finish = Some(Finish::Stopped(reason));
                    }
                    Ok(Stop::Cancel(_)) => {}
                    Ok(Stop::Settled) => quiet = Some(Quiet::Settled),
                    Ok(Stop::Shutdown) | Err(_) => quiet = Some(Quiet::Shutdown),
                }
            }
            read = rx.recv(), if open > 0 => match read {
                Some((channel, bytes)) => {
                    let text = &mut texts[usize::from(channel == 2)];
                    let text = match bytes {
                        Some(bytes) => text.push(&bytes),
                        None => {
                            open -= 1;
                            text.finish()
                        }
                    };
                    pending.push(channel, &text, Instant::now());
                }
                None => open = 0,
            },
            status = child.wait(), if !exited => {
                exited = true;
                // What the shell left running in its group goes with it.
                group.kill();
                group.0 = None;
                commands.set_group(&key, None);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
                let ended = match status {
                    Ok(status) => match (status.code(), status.signal()) {
                        (Some(code), _) => Finish::Exited(code),
                        (None, signal) => Finish::Signalled(signal.unwrap_or(0)),
                    },
                    Err(e) => Finish::Lost(e.to_string()),
                };
                finish.get_or_insert(ended);
            }
            () = tokio::time::sleep_until(deadline), if !exited && finish.is_none() => {
                group.kill();
                finish = Some(Finish::TimedOut(settings.timeout));
            }
            () = tokio::time::sleep_until(flush_at.unwrap_or(far)), if flush_at.is_some() => {}
            () = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() => {
                tracing::warn!(path = %job.path, "a process outside the command's group holds its output open; stopped reading");
                break;
            }
        }
        if quiet.is_some() {
            break;
        }
        if pending.ready(Instant::now()) {
            if let Err(e) = append(&svc, job.run, &job.path, pending.take()).await {
                // The channels are gone or settled by someone else: the output is not wanted.
                tracing::info!(path = %job.path, error = %e, "command output no longer taken");
                group.kill();
                quiet = Some(Quiet::Settled);
                break;
            }
        }
    }
    for reader in readers {
        reader.abort();
    }
    match quiet {
        Some(Quiet::Shutdown) => {
            tracing::info!(path = %job.path, "command killed: the server stops");
        }
        Some(Quiet::Settled) => {
            tracing::info!(path = %job.path, "command killed: its channels were settled");
        }
        None => {
            let end = end_of(
                &finish.unwrap_or_else(|| Finish::Lost("no exit status".to_owned())),
                started.elapsed(),
            );
            tracing::info!(path = %job.path, end = ?end, "command ended");
            settle(&svc, &job, pending.take(), end, cancelled).await;
        }
    }
    commands.finished(&key, !matches!(quiet, Some(Quiet::Shutdown)));
    // The cgroups empty once the namespace's processes are gone: removing them may wait a little.
    let _ = actix_rt::task::spawn_blocking(move || cgroups.remove()).await;
}

/// Every project's root but `root`; none, with a warning, when they cannot be read (the
/// server's own files stay covered, and other roots lie outside the read paths unless an admin
/// put them there).
async fn other_roots(svc: &Services, root: &std::path::Path) -> Vec<PathBuf> {
    let root = root.to_path_buf();
    svc.store
        .read(projects::roots)
        .await
        .map(|roots| {
            roots
                .into_iter()
                .map(|(_, other)| PathBuf::from(other))
                .filter(|other| *other != root)
                .collect()
        })
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the other projects' roots to cover them");
            Vec::new()
        })
}

/// A command started: its process (the sandbox's helper, or the shell itself when commands
/// run unconfined) and its cgroups.
struct Spawned {
    child: tokio::process::Child,
    cgroups: CommandCgroups,
}

/// Starts the command as the sandbox's mode says: confined, unconfined, or not at all (why).
fn spawn(svc: &Services, job: &ShellJob, others: Vec<PathBuf>) -> Result<Spawned, String> {
    let settings = &svc.config.shell;
    let env = command_env(server_vars(), &settings.pass_env);
    let mut command = match svc.sandbox.mode() {
        Mode::Refused(missing) => {
            return Err(format!(
                "the server runs no command itself here: its sandbox lacks {missing} (an admin \
                 may set RUMMY_UNSANDBOXED_COMMANDS=1, or use a client runner)"
            ))
        }
        Mode::Unconfined(_) => {
            let mut command = tokio::process::Command::new("sh");
            command
                .arg("-c")
                .arg(&job.command)
                .current_dir(&job.root)
                .env_clear()
                .envs(env)
                .stdin(Stdio::null());
            (command, None)
        }
        Mode::Confined => {
            let request = Request {
                project: job.run.project_id,
                root: &job.root,
                command: &job.command,
                env,
                writes: job.writes,
                network: job.network,
                others,
            };
            let prepared = svc
                .sandbox
                .prepare(&svc.config, request)
                .map_err(|e| format!("cannot prepare the sandbox: {e}"))?;
            let mut command = tokio::process::Command::new(&prepared.program);
            command
                .args(&prepared.args)
                .env_clear()
                .stdin(Stdio::piped());
            (command, Some(prepared))
        }
    };
    let (command, prepared) = (&mut command.0, command.1);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let cgroups = match prepared {
        Some(prepared) => {
            // The spec is small and the helper reads it at once: written without waiting.
            if let Some(stdin) = child.stdin.take() {
                actix_rt::spawn(write_spec(stdin, prepared.stdin));
            }
            prepared.cgroups
        }
        None => CommandCgroups::default(),
    };
    Ok(Spawned { child, cgroups })
}

/// Hands the helper its spec and closes its stdin.
async fn write_spec(mut stdin: tokio::process::ChildStdin, spec: Vec<u8>) {
    use tokio::io::AsyncWriteExt;
    if let Err(e) = stdin.write_all(&spec).await {
        tracing::warn!(error = %e, "cannot hand the sandbox its command");
    }
}

/// Appends a batch of output and pushes `run/state`.
async fn append(
    svc: &Services,
    run: RunRef,
    path: &str,
    chunks: Vec<(u32, String)>,
) -> Result<(), StoreError> {
    if chunks.is_empty() {
        return Ok(());
    }
    super::write_output(svc, run, path.to_owned(), chunks, None, None)
        .await
        .map(|_| ())
}

/// Writes the last output and settles the channels as `end` says; with `cancelled`, clients
/// also get `stream/cancelled`. A failure is logged: a restart's recovery settles the channels.
async fn settle(
    svc: &Services,
    job: &ShellJob,
    chunks: Vec<(u32, String)>,
    end: StreamEnd,
    cancelled: Option<String>,
) {
    let path = job.path.clone();
    if let Err(e) = super::write_output(svc, job.run, path, chunks, Some(end), None).await {
        tracing::warn!(path = %job.path, error = %e, "cannot settle a command's channels");
        return;
    }
    if let Some(reason) = cancelled {
        let alias = alias_of(svc, job.run.run_id).await;
        let cancelled = StreamCancelled {
            path: job.path.clone(),
            reason: Some(reason),
            run: alias,
        };
        svc.push(job.run.project_id, &cancelled.run, &cancelled);
    }
}

/// The run's alias now (it may have been renamed while the command ran).
async fn alias_of(svc: &Services, run_id: RunId) -> String {
    svc.store
        .read(move |c| runs::by_id(c, run_id))
        .await
        .map(|run| run.alias)
        .unwrap_or_default()
}
