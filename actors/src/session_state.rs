//! Session state kept through the sidecar (docs/design/memory.md): after a loop (once the thresholds
//! passed), before a fork, and before a summarisation, the sidecar model is given the run's
//! `session://state` and what happened since, and its answer becomes the new state.
//!
//! ```text
//! // a summarisation, before it folds a run's history away, within its own time limit:
//! session_state::before_summary(&svc, &charge, limit_ms).await;
//! ```
//!
//! A refresh never fails what asked for it: a run that keeps no session state, whose active
//! skills withhold it (`memoryScope`), or that did nothing since its last update is left as
//! it is; a sidecar that fails or answers something unreadable leaves the last stored state
//! (and a run that had none gets the empty one, so it has one from then on). Its call is
//! charged to the run's last turn, like any side task.

use crate::services::Services;
use crate::sidecar::{self, Charge};
use rummy_core::session_state::stored::{self, Stored};
use rummy_core::session_state::{self as state, due, Occasion, Progress, SessionState};
use rummy_core::sidecar::SideTask;
use rummy_core::turn::TurnRef;
use rummy_store::entries::RunRef;
use rummy_store::{runs, StoreError};

/// The side task's name, as telemetry and `sidecar_calls` show it.
pub const TASK: &str = "session_state";

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// The sidecar's answer is the run's new state.
    Updated,
    /// Nothing was asked: the run keeps no session state, its skills withhold it, it has no
    /// turn yet, or not enough happened since the last update.
    Skipped(&'static str),
    /// The sidecar failed (or could not be read): the last stored state stays.
    Kept(String),
}

/// What a refresh reads before it decides.
struct Before {
    stored: Option<Stored>,
    progress: Progress,
    events: Vec<state::Event>,
    last: Option<(rummy_store::ids::LoopId, i32)>,
    enabled: bool,
    allowed: bool,
}

/// Refreshes the run's session state for `occasion` (a loop's end, a fork), through the
/// sidecar on the model of the loop that caused it (`model`, unless `RUMMY_SIDECAR_MODEL`
/// names another), charged to the run's last turn.
pub async fn refresh(svc: &Services, run: RunRef, occasion: Occasion, model: &str) -> Refreshed {
    let asked = Asked {
        run,
        occasion,
        model,
        charge: None,
        within_ms: None,
    };
    logged(asked, try_refresh(svc, asked).await)
}

/// Refreshes the run's session state before a summarisation folds its history away, charged
/// to the turn summarising (`charge`: its records join the turn's telemetry) and within
/// `within_ms`, the summarisation's own time limit: what it leaves is the summary's.
pub async fn before_summary(svc: &Services, charge: &Charge, within_ms: u64) -> Refreshed {
    let asked = Asked {
        run: charge.turn.run,
        occasion: Occasion::Summary,
        model: &charge.model,
        charge: Some(charge),
        within_ms: Some(within_ms),
    };
    logged(asked, try_refresh(svc, asked).await)
}

/// What a refresh was asked for.
#[derive(Clone, Copy)]
struct Asked<'a> {
    run: RunRef,
    occasion: Occasion,
    model: &'a str,
    /// The turn to charge; `None`: the run's last.
    charge: Option<&'a Charge>,
    /// A time limit shorter than the sidecar's.
    within_ms: Option<u64>,
}

/// The refresh's outcome; a store failure is logged and read as the last state kept.
fn logged(asked: Asked<'_>, result: Result<Refreshed, StoreError>) -> Refreshed {
    result.unwrap_or_else(|e| {
        tracing::warn!(run = asked.run.run_id.0, occasion = asked.occasion.as_str(), error = %e, "cannot refresh the session state; the last one stays");
        Refreshed::Kept(e.to_string())
    })
}

async fn try_refresh(svc: &Services, asked: Asked<'_>) -> Result<Refreshed, StoreError> {
    let Asked {
        run,
        occasion,
        model,
        ..
    } = asked;
    let default = svc.config.session_state.enabled;
    let before = svc
        .store
        .read(move |c| {
            let enabled = runs::by_id(c, run.run_id)?
                .flags()
                .session_state
                .unwrap_or(default);
            if !enabled {
                return Ok(Before {
                    stored: None,
                    progress: Progress::default(),
                    events: Vec::new(),
                    last: None,
                    enabled,
                    allowed: false,
                });
            }
            let stored = stored::current(c, run.run_id)?;
            let since = stored.as_ref().map_or(0, |s| s.covered);
            let (progress, rows) = stored::progress(c, run.run_id, since)?;
            Ok(Before {
                allowed: stored::allowed(c, run.run_id)?,
                last: stored::last_turn(c, run.run_id)?,
                events: stored::events(&rows),
                stored,
                progress,
                enabled,
            })
        })
        .await?;
    if !before.enabled {
        return Ok(Refreshed::Skipped("the run keeps no session state"));
    }
    if !before.allowed {
        return Ok(Refreshed::Skipped(
            "an active skill's memoryScope withholds session state",
        ));
    }
    let Some((loop_id, turn)) = before.last else {
        return Ok(Refreshed::Skipped("the run has no turn yet"));
    };
    if !due(
        occasion,
        before.progress,
        svc.config.session_state.thresholds,
    ) {
        return Ok(Refreshed::Skipped(
            "not enough happened since the last update",
        ));
    }
    let had_state = before.stored.is_some();
    let prior = before.stored.map_or_else(SessionState::empty, |s| s.state);
    let input = state::update_input(&prior, &before.events);
    let base = prior.clone();
    let mut task = SideTask::new(TASK, state::update_prompt(), input, move |reply| {
        base.updated(reply)
    });
    if occasion == Occasion::Fork {
        // A fork's start is a call the client waits on: the refresh leaves it time to answer.
        task = task.within_ms(svc.config.limits.rpc_timeout_ms / 2);
    }
    if let Some(ms) = asked.within_ms {
        task = task.within_ms(ms);
    }
    let charge = match asked.charge {
        Some(charge) => charge.clone(),
        None => Charge::new(TurnRef { run, loop_id, turn }, model),
    };
    // Mid-turn (a summary), the turn under way is not covered yet: what it does next is the
    // next update's.
    let covered = if occasion == Occasion::Summary {
        turn - 1
    } else {
        turn
    };
    let divisor = svc.config.limits.token_divisor;
    match sidecar::run(svc, &charge, task).await {
        Ok(next) => {
            svc.store
                .write(move |c| {
                    stored::write(c, run, &next, covered, crate::clock::write_ctx(divisor))
                })
                .await?;
            tracing::info!(
                run = run.run_id.0,
                occasion = occasion.as_str(),
                covered,
                "session state updated"
            );
            Ok(Refreshed::Updated)
        }
        Err(failure) => {
            if !had_state {
                // The run has a state from now on, if only the empty one.
                svc.store
                    .write(move |c| {
                        stored::ensure(c, run, crate::clock::write_ctx(divisor)).map(drop)
                    })
                    .await?;
            }
            Ok(Refreshed::Kept(failure.to_string()))
        }
    }
}
