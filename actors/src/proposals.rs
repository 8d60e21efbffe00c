//! Resolving a proposal off the store's writer: a read, the disk work on the blocking pool, one write — under the locks that keep two resolutions of one proposal, or of one file, in order.
//!
//! The store's writer serialises every write of every project, so nothing that
//! touches the disk may run on it: a slow disk, or a FIFO planted where a file
//! is expected, would stall every run. [`resolve`] therefore reads the proposal
//! (still pending, with its `readonly` constraints), applies it on the blocking
//! pool (`rummy_core::turn::proposals::apply`: the base check, the writes and
//! removals), and records the outcome in one write — for an accepted `sh`/`env`, with
//! the mark that its turn waits for the output and who runs it
//! (`rummy_core::turn::streams::await_output`); a command the server runs takes no output from
//! the accepting client (its body is ignored: the server's runner writes the output). The resolution locks (`services::locks`) hold a
//! run's resolutions to one at a time (a proposal accepted twice at once is
//! applied once: the second reads it resolved and is answered 409) and each
//! file of a project root to one acceptance at a time (the second checks the
//! disk after the first wrote it, and sees the change as a conflict).

use crate::clock::now;
use crate::errors::{from_store, internal};
use crate::services::locks::LockKey;
use crate::services::Services;
use rummy_core::config::ShellRunner;
use rummy_core::turn::proposals::{self, Decision, Effect, Proposed, Recorded, Resolved, Verdict};
use rummy_core::turn::state;
use rummy_core::turn::streams::{self, StreamWrite};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::RunRef;
use rummy_store::entry::State;
use rummy_store::notifications::Recorded as Push;
use rummy_store::run::RunStatus;
use rummy_store::runs;
use rummy_text::parse::ToolName;
use serde_json::Value;
use std::path::PathBuf;

/// What a resolution did: the proposal as resolved, the `run/state` push to publish, and for an
/// accepted `sh`/`env`, the command, whose output its turn now waits for.
pub struct Resolution {
    /// The proposal as resolved.
    pub resolved: Resolved,
    /// The `run/state` push to publish.
    pub push: Push,
    /// The accepted shell command, when the turn waits for its output.
    pub command: Option<String>,
    /// The accepted call of a client's tool (`Proposed::Call`) or fetch of a page
    /// (`Proposed::Fetch`), when the turn waits for its answer.
    pub call: Option<Proposed>,
}

/// Whether a resolution accepted a command, or a call of a client's tool, whose output its
/// turn waits for.
pub fn awaits_output(resolved: &Resolved) -> bool {
    let fetch = resolved.tool == ToolName::Get;
    (matches!(resolved.tool, ToolName::Sh | ToolName::Env | ToolName::Call) || fetch)
        && resolved.state == State::Resolved
}

/// Logs what an acceptance did on disk: each file written or removed at INFO, a refusal or a
/// failed write at WARN.
fn log_disk_work(run: RunRef, proposal: &str, resolution: &proposals::Resolution) {
    let proposals::Resolution::Accepted { applied, .. } = resolution else {
        return;
    };
    let run = run.run_id.0;
    for effect in &applied.effects {
        match effect {
            Effect::Wrote {
                path,
                content,
                created,
            } => tracing::info!(
                run,
                proposal,
                file = %path,
                bytes = content.len(),
                created,
                "file written"
            ),
            Effect::Forget(path) => tracing::info!(run, proposal, file = %path, "file removed"),
            Effect::Refresh(path, _) => tracing::info!(
                run,
                proposal,
                file = %path,
                "file changed on disk since the model read it"
            ),
        }
    }
    match &applied.verdict {
        Verdict::Done => {}
        Verdict::Readonly(why) | Verdict::Refused(why) => {
            tracing::warn!(run, proposal, reason = %why, "file write refused")
        }
        Verdict::Conflict(why, _) => {
            tracing::warn!(run, proposal, reason = %why, "file write refused: changed on disk")
        }
        Verdict::Failed(why) => tracing::warn!(run, proposal, error = %why, "file write failed"),
    }
}

/// Resolves the proposal at `path` of `run` as decided (`root`: the project root on disk, where
/// accepted file changes land), setting the run running again.
pub async fn resolve(
    svc: &Services,
    run: RunRef,
    path: String,
    decision: Decision,
    root: PathBuf,
    by: Option<String>,
) -> Result<Resolution, RpcError> {
    let by_name = by.clone();
    let locks = &svc.resolution_locks;
    let _run = locks.lock(LockKey::Run(run.run_id)).await;
    let lookup = path.clone();
    let proposal = svc
        .store
        .read(move |c| proposals::read(c, run, &lookup))
        .await
        .map_err(from_store)?;
    let runner = svc.config.shell.runner;
    // A command the server runs speaks for itself: an accept's body is no output of it.
    let server_runs = runner == ShellRunner::Server
        && proposal
            .kind
            .as_ref()
            .is_ok_and(|kind| kind.command().is_some());
    let decision = match decision {
        Decision::Accept(Some(_)) if server_runs => Decision::Accept(None),
        other => other,
    };
    let resolution = if matches!(decision, Decision::Accept(_)) {
        let mut files = Vec::new();
        for file in proposal.files() {
            files.push(locks.lock(LockKey::File(root.clone(), file)).await);
        }
        let on_disk = proposal.clone();
        actix_rt::task::spawn_blocking(move || proposals::apply(&on_disk, decision, &root))
            .await
            .map_err(|e| internal(&e))?
    } else {
        // A reject or an error touches no file.
        proposals::apply(&proposal, decision, &root)
    };
    log_disk_work(run, &path, &resolution);
    let divisor = svc.config.limits.token_divisor;
    let bounds = svc.store.bounds();
    let recorded = svc
        .store
        .write(move |c| {
            let resolved = match proposals::record(
                c,
                run,
                &proposal,
                &resolution,
                by.as_deref(),
                crate::clock::write_ctx(divisor),
            )? {
                Recorded::Resolved(resolved) => resolved,
                Recorded::Stale(state) => return Ok(Err(state)),
            };
            let kind = proposal.kind.as_ref().ok();
            let call = kind.filter(|k| matches!(k, Proposed::Call { .. } | Proposed::Fetch { .. }));
            let (command, call) = if awaits_output(&resolved) {
                let at = StreamWrite {
                    run,
                    ctx: crate::clock::write_ctx(divisor),
                };
                // A call is made by the client offering its tool and a page fetched by the
                // server, whoever runs commands.
                let runner = match call {
                    Some(Proposed::Call { .. }) => ShellRunner::Client,
                    Some(_) => ShellRunner::Server,
                    None => runner,
                };
                streams::await_output(c, at, &resolved.path, runner)?;
                (
                    kind.and_then(Proposed::command).map(str::to_owned),
                    call.cloned(),
                )
            } else {
                (None, None)
            };
            runs::set_status(c, run.run_id, RunStatus::Running, now())?;
            let push = state::push(
                c,
                run.run_id,
                resolved.turn,
                RunStatus::Running.code(),
                Value::Null,
                bounds,
                now(),
            )?;
            Ok(Ok(Resolution {
                resolved,
                push,
                command,
                call,
            }))
        })
        .await
        .map_err(from_store)?;
    match &recorded {
        Ok(done) => tracing::info!(
            run = run.run_id.0,
            path = %done.resolved.path,
            state = done.resolved.state.as_str(),
            outcome = done.resolved.outcome.as_deref(),
            by = by_name.as_deref(),
            "proposal resolved"
        ),
        Err(state) => tracing::warn!(
            run = run.run_id.0,
            %path,
            state = state.as_str(),
            "proposal stopped being pending while it was applied"
        ),
    }
    recorded.map_err(|state| {
        RpcError::new(
            ErrorKind::Conflict,
            format!(
                "{path} became {} while it was being applied (its loop ended); what was \
                 written on disk is recorded",
                state.as_str()
            ),
        )
    })
}
