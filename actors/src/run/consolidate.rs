//! Consolidation at a loop's end (`RUMMY_CONSOLIDATE`, off; a run's `consolidate` attribute): before the loop's end is recorded, the sidecar turns the run's facts (and session state) into project memories, written at once.
//!
//! The pure parts — what the sidecar reads, its answer, the writes — are
//! `rummy_core::memory::consolidate`. It runs for a loop that concluded or reached its turn
//! limit, within `RUMMY_SIDECAR_TIMEOUT`; the call is charged to the loop's last turn. Nothing
//! of it can fail the loop: a failed read, call or write is logged and the loop ends as it
//! would have.

use crate::services::Services;
use crate::sidecar::{self, Charge};
use rummy_core::memory::consolidate::{self, Applied};
use rummy_core::turn::TurnRef;
use rummy_store::entries::RunRef;
use rummy_store::loops::Loop;
use rummy_store::runs;

/// Consolidates what run `run` learned in its loop `ended` into the project's memory.
pub(super) async fn consolidate(svc: Services, run: RunRef, ended: Loop) {
    let prompt = ended.prompt.clone();
    let read = svc
        .store
        .read(move |c| {
            let input = consolidate::gather(c, run, &prompt)?;
            Ok((input, runs::by_id(c, run.run_id)?.last_turn()))
        })
        .await;
    let (input, last_turn) = match read {
        Ok((Some(input), last_turn)) => (input, last_turn),
        Ok((None, _)) => return,
        Err(e) => {
            tracing::warn!(run = run.run_id.0, error = %e, "cannot read what to consolidate");
            return;
        }
    };
    let turn = TurnRef {
        run,
        loop_id: ended.id,
        turn: last_turn.max(1),
    };
    let charge = Charge::new(turn, ended.model.clone());
    let Ok(proposals) = sidecar::run(&svc, &charge, consolidate::task(&input)).await else {
        return;
    };
    if proposals.is_empty() {
        return;
    }
    let limits = &svc.config.limits;
    let (divisor, max_tokens) = (limits.token_divisor, limits.max_entry_tokens);
    let written = svc
        .store
        .write(move |c| {
            consolidate::apply(
                c,
                run,
                &proposals,
                max_tokens,
                crate::clock::write_ctx(divisor),
            )
        })
        .await;
    match written {
        Ok(applied) => {
            for a in applied {
                match a {
                    Applied::Written(path, how) => {
                        tracing::info!(run = run.run_id.0, %path, ?how, "consolidated into memory")
                    }
                    Applied::Removed(path, archived) => {
                        tracing::info!(run = run.run_id.0, %path, %archived, "removed from memory")
                    }
                    Applied::Skipped(path, why) => {
                        tracing::warn!(run = run.run_id.0, %path, %why, "a consolidated memory was left out")
                    }
                }
            }
        }
        Err(e) => {
            tracing::warn!(run = run.run_id.0, error = %e, "cannot write the consolidated memories")
        }
    }
}
