//! Summarisation on eviction, the turn's side: the sidecar asked to fold what History Demotion archives or Turn Demotion summarizes into the run's `summary://run`, within one time limit, before the demotion is written.
//!
//! The pure parts — which fold, its prompt, the answer's reading, the update flow, the plan that
//! leaves room for the summary — are `rummy_core::turn::summary`. Before a fold, the run's
//! session state is refreshed (`session_state::before_summary`) within the fold's time limit.
//! A fold that fails leaves the summary as it was, and the demotion goes on plainly: the turn never fails for it.

use super::failure;
use crate::services::Services;
use crate::session_state;
use crate::sidecar::{self, Charge};
use crate::turn::{TurnFailure, TurnJob};
use rummy_core::sidecar::SidecarFailure;
use rummy_core::turn::summary::{self, next, render_evicted, Fold, Step};
use rummy_core::turn::TurnRef;
use rummy_store::views;
use std::time::Instant;

/// Whether the job's loop summarises on eviction: the run's `summarize` attribute, else
/// `RUMMY_SUMMARIZE`.
pub(super) fn summarizing(svc: &Services, job: &TurnJob) -> bool {
    job.flags.summarize.unwrap_or(svc.config.summary.enabled)
}

/// The new summary with `evicted` (rendered entries) folded into `prior`, or `None` when the
/// sidecar could not make one (the caller demotes plainly). A summary past
/// `RUMMY_SUMMARY_MAX_CHARS` is compressed within the same time limit: the turn never waits
/// longer than `RUMMY_SIDECAR_TIMEOUT` for its summary.
pub(super) async fn fold(
    svc: &Services,
    charge: &Charge,
    prior: Option<String>,
    evicted: Option<String>,
) -> Option<String> {
    let max_chars = svc.config.summary.max_chars;
    let limit_ms = svc.config.sidecar.timeout_ms;
    let mut fold = Fold::of(prior.as_deref(), evicted.as_deref())?;
    // What is about to leave the context goes into the session state first (when the run
    // keeps one), within the same time limit: the turn waits no longer for both. A refresh
    // that asked nothing (the run keeps no state, or nothing is due) took a read, not a model
    // call, and leaves the summary its whole limit.
    let asked = Instant::now();
    let refreshed = session_state::before_summary(svc, charge, limit_ms).await;
    tracing::debug!(?refreshed, "session state before a summary");
    let started = match refreshed {
        session_state::Refreshed::Skipped(_) => Instant::now(),
        _ => asked,
    };
    loop {
        let spent = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let answer = match limit_ms.saturating_sub(spent) {
            0 => Err(SidecarFailure::Timeout { ms: limit_ms }),
            left => sidecar::run(svc, charge, fold.task(max_chars).within_ms(left)).await,
        };
        match next(fold, answer, max_chars) {
            Step::Ask(again) => fold = again,
            Step::Done(text) => return Some(text),
            Step::Fallback => return None,
        }
    }
}

/// Before Turn Demotion summarizes turn `t`'s entries: the run's summary with them folded in,
/// or `None` (nothing to fold, or the sidecar failed), and the sidecar's records for the
/// turn's telemetry.
pub(super) async fn fold_turn(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
) -> Result<(Option<String>, Charge), TurnFailure> {
    let charge = Charge::new(t, job.model_alias.clone());
    let (run_id, turn) = (t.run.run_id, t.turn);
    let (prior, rows) = svc
        .store
        .read(move |c| {
            let prior = summary::current(c, run_id)?;
            Ok((prior, views::demotable_rows_in_turn(c, run_id, turn)?))
        })
        .await
        .map_err(failure)?;
    let Some(evicted) = render_evicted(&rows) else {
        return Ok((None, charge));
    };
    let folded = fold(svc, &charge, prior, Some(evicted)).await;
    Ok((folded, charge))
}
