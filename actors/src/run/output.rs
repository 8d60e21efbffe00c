//! The run's wait for an accepted command's output: the command started on the server (with
//! `RUMMY_COMMAND_RUNNER=server`), `run/progress` `streaming`, the turn resumed once the
//! channels are settled or `RUMMY_STREAM_WAIT` passed, and the commands stopped on a cancel.

use super::RunActor;
use crate::services::Services;
use crate::shell::ShellJob;
use crate::turn::Start;
use actix::prelude::*;
use rummy_core::orchestration::Input;
use rummy_core::shell::RUN_CANCELLED;
use rummy_core::turn::streams::{self, Awaited, StreamEnd, StreamWrite};
use rummy_core::wire::notifications::{RunProgress, StreamCancelled};
use rummy_store::entry::State;
use rummy_store::StoreError;
use std::sync::Arc;

/// The wait for an accepted command's output, as the run's machine carries it.
pub(crate) struct OutputWait {
    /// The command awaited.
    pub(super) awaited: Awaited,
    /// Notified when its channels settle; taken before they existed, so a settling in between
    /// is not missed.
    pub(super) waiter: Arc<tokio::sync::Notify>,
    /// The command to start on the server, if the server runs it.
    pub(super) job: Option<ShellJob>,
}

impl RunActor {
    /// Waits for the output of the accepted command (starting it on the server when it has a
    /// job), then resumes its turn after it.
    pub(super) fn await_output(&mut self, wait: OutputWait, ctx: &mut Context<Self>) {
        let OutputWait {
            awaited,
            waiter,
            job,
        } = wait;
        if let Some(job) = job {
            self.svc.shell.start(&self.svc, job);
        }
        let streaming = RunProgress {
            path: Some(awaited.path.clone()),
            ..RunProgress::new(
                &self.alias,
                i64::from(awaited.turn),
                rummy_core::wire::methods::progress::STREAMING,
            )
        };
        self.svc.push(self.run.project_id, &self.alias, &streaming);
        let (svc, run_id, path) = (self.svc.clone(), self.run.run_id, awaited.path.clone());
        let wait = self.svc.config.shell.stream_wait;
        let states = move |svc: Services, path: String| async move {
            svc.store
                .read(move |c| streams::channel_states(c, run_id, &path))
                .await
        };
        let waited = async move {
            let now = states(svc.clone(), path.clone()).await;
            let settled = now.is_ok_and(|s| !s.contains(&State::Streaming));
            let in_time = settled || tokio::time::timeout(wait, waiter.notified()).await.is_ok();
            svc.shell.forget_waiter(run_id, &path);
            (in_time, states(svc, path).await)
        };
        let handle = ctx.spawn(
            waited
                .into_actor(self)
                .map(move |(in_time, states), act, ctx| {
                    act.output_done(awaited, in_time, states, ctx)
                }),
        );
        self.output_wait = Some(handle);
    }

    /// The wait for `awaited`'s output is over (`in_time`: its channels were settled; else
    /// `RUMMY_STREAM_WAIT` passed): its turn goes on after it, the rest aborted when it failed.
    fn output_done(
        &mut self,
        awaited: Awaited,
        in_time: bool,
        states: Result<Vec<State>, StoreError>,
        ctx: &mut Context<Self>,
    ) {
        self.output_wait = None;
        let states = states.unwrap_or_else(|e| {
            tracing::error!(run = %self.alias, error = %e, "cannot read a command's channels");
            Vec::new()
        });
        if !in_time {
            tracing::info!(run = %self.alias, path = %awaited.path, "the turn goes on without the command's end (RUMMY_STREAM_WAIT)");
        }
        let failed = states
            .iter()
            .any(|s| matches!(s, State::Failed | State::Cancelled));
        let path = awaited.path.clone();
        let start = Start::Resume {
            turn: awaited.turn,
            next_index: awaited.command_index + 1,
            aborted_by: failed.then_some(awaited.tool),
            awaited: Some(awaited.path),
        };
        self.step(Input::OutputDone { path, start }, ctx);
    }

    /// Stops what the run's commands are doing on a cancel: the server's are killed (their
    /// channels cancelled by their runner); the output a client was producing for the loop's
    /// turn (`awaiting`) is cancelled here, and the client told with `stream/cancelled`.
    pub(super) fn stop_commands(&self, awaiting: Option<String>) {
        let stopped = self.svc.shell.stop_run(self.run.run_id, RUN_CANCELLED);
        let Some(path) = awaiting else {
            return;
        };
        // The wait itself is dropped with the loop.
        self.svc.shell.forget_waiter(self.run.run_id, &path);
        if stopped == 0 {
            self.cancel_output(path);
        }
    }

    /// Cancels the channels of the accepted command at `path` ("run cancelled"), telling
    /// clients with `stream/cancelled`; channels settled already are left as they are.
    pub(super) fn cancel_output(&self, path: String) {
        let (svc, run, alias) = (self.svc.clone(), self.run, Arc::clone(&self.alias));
        let divisor = svc.config.limits.token_divisor;
        actix_rt::spawn(async move {
            let settling = path.clone();
            let settled = svc
                .store
                .write(move |c| {
                    let at = StreamWrite {
                        run,
                        ctx: crate::clock::write_ctx(divisor),
                    };
                    let end = StreamEnd::Cancelled {
                        reason: Some(RUN_CANCELLED.to_owned()),
                    };
                    streams::settle(c, at, &settling, &end)
                })
                .await;
            // Settled already (the client completed it meanwhile): nothing to tell.
            if settled.is_ok() {
                let cancelled = StreamCancelled {
                    path,
                    reason: Some(RUN_CANCELLED.to_owned()),
                    run: alias.to_string(),
                };
                svc.push(run.project_id, &alias, &cancelled);
            }
        });
    }
}
