//! The turn's steps in order, one phase per module; each write step is one store transaction.
//!
//! A new turn goes [`begin`] (its row allocated; on a loop's first turn the project scanned,
//! the prompt recorded and the files attached) → [`context`] (the prompt materialised and
//! assembled, fitted to the budget by demotion) → [`call`] (the model called; its reply and the
//! prompt's audit recorded with the first commands) → [`dispatch`] (the commands, in batches up
//! to the first that waits) → [`end`] (post-dispatch budget, the referee, the turn's end and the
//! next turn allocated ahead). A turn resumed after its proposal starts at dispatch.
//!
//! Three pieces of performance work cross the phases, each explained where it lives: the loop
//! keeps its context rows between turns so a read fetches only what changed
//! ([`context::take_kept`]); the write before a turn — the loop's first, or the previous
//! turn's last — reads the turn's context on the writer's warm cache ([`context::read_ahead`]);
//! and a continuing turn allocates the next turn in its last write ([`end::end_turn`]).

mod begin;
mod call;
mod context;
mod dispatch;
mod end;
mod summary;

use super::{Allocated, Start, TurnEnd, TurnFailure, TurnJob};
use crate::services::Services;
use rummy_core::turn::dispatch::LoopFlags;
use tracing::{info_span, Instrument};

/// Runs a turn from its start.
pub async fn execute(svc: Services, job: TurnJob, start: Start) -> Result<TurnEnd, TurnFailure> {
    match start {
        Start::Fresh => fresh(svc, job, None).await,
        Start::Allocated(next) => fresh(svc, job, Some(next)).await,
        Start::Resume {
            turn,
            next_index,
            aborted_by,
            awaited,
        } => {
            tracing::Span::current().record("turn", turn);
            let resumed = dispatch::resumed(&svc, &job, turn, next_index, aborted_by, awaited);
            let resumed = resumed.instrument(info_span!("resume")).await?;
            dispatch::dispatch(&svc, &job, resumed)
                .instrument(info_span!("dispatch"))
                .await
        }
    }
}

/// A new turn, from its allocation (or the one the previous turn made) to its end.
async fn fresh(
    svc: Services,
    job: TurnJob,
    allocated: Option<Allocated>,
) -> Result<TurnEnd, TurnFailure> {
    let (begun, side_tasks) = begin::begin(&svc, &job, allocated)
        .instrument(info_span!("begin"))
        .await?;
    tracing::Span::current().record("turn", begun.t.turn);
    crate::faults::turn_begun(&job.prompt);
    let fitted = context::fit(&svc, &job, begun)
        .instrument(info_span!("assemble"))
        .await?;
    let mut prompt = match fitted {
        Ok(prompt) => prompt,
        Err(full) => return end::overflowed(&svc, job, begun, full).await,
    };
    // The recall's re-ranking, if it ran, comes first in the turn's side tasks.
    prompt.sidecar.splice(0..0, side_tasks);
    let called = call::call(&svc, &job, begun, prompt)
        .instrument(info_span!(
            "provider_call",
            provider = job.route.provider_name,
            model = %job.route.wire_model
        ))
        .await?;
    let replied = match called {
        Ok(replied) => replied,
        Err(full) => return end::overflowed(&svc, job, begun, full).await,
    };
    dispatch::dispatch(&svc, &job, replied)
        .instrument(info_span!("dispatch"))
        .await
}

/// The loop's flags as dispatch reads them.
fn loop_flags(job: &TurnJob) -> LoopFlags {
    LoopFlags::from(&job.flags)
}

/// A store or task error as the turn's failure.
fn failure(e: impl Into<TurnFailure>) -> TurnFailure {
    e.into()
}
