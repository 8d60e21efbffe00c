//! End: the post-dispatch budget (Turn Demotion when the turn's additions overflow), the healer's verdict, the turn's end and its `run/state`, and — for a turn that continues — the next turn allocated and its context read ahead in that same write.
//!
//! A turn whose commands waited for nothing, and whose context surely still fits, ends in its
//! last batch's write ([`fits_after_dispatch`], then [`end_turn`] there); otherwise
//! [`after_dispatch`] checks the budget and ends it in a write of its own.

use super::context::{budget_for, materialise, put_kept, read_ahead, take_kept, Assembled};
use super::{failure, summary};
use crate::clock::now;
use crate::services::Services;
use crate::turn::{Allocated, Decision, TurnEnd, TurnFailure, TurnJob};
use rummy_core::turn::batch::Commands;
use rummy_core::turn::budget::{self, Budget};
use rummy_core::turn::dispatch::{dispatch, DispatchCtx};
use rummy_core::turn::healer::{Healer, TurnFacts, Verdict};
use rummy_core::turn::summary as summary_store;
use rummy_core::turn::{record, state, TurnRef};
use rummy_store::context::KeptContext;
use rummy_store::entries::WriteCtx;
use rummy_store::ids::TurnId;
use rummy_store::notifications::Recorded;
use rummy_store::run::RunStatus;
use rummy_store::{turns, StoreError};
use rummy_text::parse::{ToolCall, ToolName};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tracing::Instrument;

/// A context that does not fit: the turn ends 413 without dispatching anything.
pub(super) struct Full {
    /// The warning the model reads.
    pub message: String,
    /// When the budget's ceiling was the cause: how many tokens past it, and the budget.
    pub ceiling: Option<(i32, Budget)>,
}

/// What ending a turn needs inside a store write: the facts the healer judges and what the
/// turn-end push carries (the turn is `ctx.t`).
#[derive(Clone)]
pub(super) struct EndInput {
    turn_id: TurnId,
    healer: Healer,
    prose: String,
    telemetry: Value,
    ctx: DispatchCtx,
    /// Whether the loop may run another turn after this one.
    next_allowed: bool,
    /// The loop's kept context rows, which the write that allocates the next turn brings up to
    /// date for it.
    context: Arc<Mutex<Option<KeptContext>>>,
}

impl EndInput {
    /// The end of the job's turn `turn_id`, dispatched with `ctx`: `prose` is the reply's text
    /// outside commands, `telemetry` what the turn-end push carries.
    pub fn new(
        job: &TurnJob,
        turn_id: TurnId,
        prose: String,
        telemetry: Value,
        ctx: DispatchCtx,
    ) -> EndInput {
        EndInput {
            turn_id,
            healer: job.healer.clone(),
            prose,
            telemetry,
            ctx,
            next_allowed: job.next_allowed,
            context: Arc::clone(&job.context),
        }
    }
}

/// A turn that ended: the healer's verdict, the healer as it is after judging, and the
/// turn-end `run/state` to publish once committed.
pub(super) struct Ended {
    verdict: Verdict,
    healer: Healer,
    params: Recorded,
    next: Option<Allocated>,
    /// The next turn's context rows as this write left them, for the loop's slot once it
    /// committed.
    context: Option<KeptContext>,
}

/// After the last batch, when the turn did not end in it: the post-dispatch budget — Turn
/// Demotion when this turn's additions overflow (what it summarizes first folded into the
/// run's summary when the run summarises); when the assembled prompt plus everything written
/// since fits for certain, nothing is reassembled — then the turn's end.
pub(super) async fn after_dispatch(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    mut end: EndInput,
    commands: Commands,
    assembled: Option<Assembled>,
) -> Result<TurnEnd, TurnFailure> {
    if let Some(b) = budget_for(svc, job).await? {
        let bound = match assembled {
            Some(a) => {
                let run_id = t.run.run_id;
                let growth = svc
                    .store
                    .read(move |c| budget::growth_since(c, run_id, a.rev))
                    .await
                    .map_err(failure)?;
                Some(a.tokens + growth)
            }
            None => None,
        };
        let over = match bound {
            Some(bound) if b.overflow(b.calibrate(bound)) == 0 => 0,
            _ => {
                let prompt = materialise(svc, job, None).await?;
                b.overflow(b.calibrate(prompt.messages.tokens))
            }
        };
        if over > 0 {
            // With summarisation on, what Turn Demotion takes out of view is folded into the
            // run's summary first.
            let mut folded = None;
            if summary::summarizing(svc, job) {
                let charge;
                (folded, charge) = summary::fold_turn(svc, job, t).await?;
                if let Some(records) = charge.telemetry() {
                    end.telemetry["sidecar"] = records;
                }
            }
            let divisor = svc.config.limits.token_divisor;
            svc.store
                .write(move |c| {
                    if let Some(text) = &folded {
                        summary_store::store(c, t, text, crate::clock::write_ctx(divisor))?;
                    }
                    let demoted = budget::demote_turn(c, t, now())?;
                    budget::record_overflow(
                        c,
                        t,
                        over,
                        &b,
                        demoted,
                        crate::clock::write_ctx(divisor),
                    )
                })
                .await
                .map_err(failure)?;
        }
    }
    let ended = svc
        .store
        .write(move |c| end_turn(c, end, &commands))
        .instrument(tracing::info_span!("commit"))
        .await
        .map_err(failure)?;
    Ok(published_end(svc, job, t, ended))
}

/// Whether the prompt assembled at `assembled` plus everything written since fits the budget
/// for certain, read inside the write that would end the turn: an upper bound of what the turn
/// wrote (see `budget::growth_since`), so the end needs no reassembly.
pub(super) fn fits_after_dispatch(
    c: &mut rummy_store::db::Db,
    t: TurnRef,
    assembled: Assembled,
    context_size: Option<i32>,
    ceiling: f64,
) -> Result<bool, StoreError> {
    let ratio = budget::last_ratio(c, t.run.run_id)?;
    let Some(b) = Budget::new(context_size, None, ceiling, ratio) else {
        return Ok(true);
    };
    let bound = assembled.tokens + budget::growth_since(c, t.run.run_id, assembled.rev)?;
    Ok(b.overflow(b.calibrate(bound)) == 0)
}

/// Judges the turn and writes its end: the healer's warnings, an answer given as prose
/// recorded as the concluding update, the turn's status, and the turn-end `run/state`.
///
/// A turn that continues allocates the next turn here — one writer round trip fewer per turn
/// (if the loop ends before it runs, by cancel or crash, the loop's end or recovery marks it
/// like any interrupted turn) — and reads its context ahead after everything this turn wrote
/// ([`read_ahead`]).
pub(super) fn end_turn(
    c: &mut rummy_store::db::Db,
    input: EndInput,
    dispatched: &Commands,
) -> Result<Ended, StoreError> {
    let EndInput {
        turn_id,
        mut healer,
        prose,
        telemetry,
        ctx,
        next_allowed,
        context: slot,
    } = input;
    let t = ctx.t;
    let commands = dispatched.calls();
    let verdict = healer.assess(TurnFacts {
        commands,
        any_failed: dispatched.any_failed(),
        update: dispatched.update(),
        prose: &prose,
    });
    let now = now();
    for w in verdict.warnings() {
        record::warning(
            c,
            t,
            w,
            WriteCtx {
                divisor: ctx.limits.token_divisor,
                now,
            },
        )?;
    }
    if let Verdict::Conclude {
        prose_answer: Some(answer),
        ..
    } = &verdict
    {
        let call = ToolCall {
            name: ToolName::Update,
            attributes: vec![("status".into(), "200".into())],
            body: answer.clone(),
        };
        let ctx = DispatchCtx {
            command_index: commands.len(),
            ..ctx
        };
        dispatch(c, &ctx, &call, None, now)?;
    }
    turns::finish(c, turn_id, turns::DONE, now)?;
    let next = match &verdict {
        Verdict::Continue { .. } if next_allowed => {
            let next = turns::begin(c, t.run.run_id, t.loop_id, now)?;
            Some(Allocated {
                turn: next.sequence,
                turn_id: next.id,
                read: None,
            })
        }
        _ => None,
    };
    let params = state::push(
        c,
        t.run.run_id,
        t.turn,
        RunStatus::Running.code(),
        telemetry,
        ctx.limits.bounds,
        now,
    )?;
    let context = next.and_then(|_| read_ahead(c, t.run.run_id, take_kept(&slot)));
    let next = next.map(|next| Allocated {
        read: context.as_ref().map(|(_, read)| *read),
        ..next
    });
    let context = context.map(|(rows, _)| rows);
    Ok(Ended {
        verdict,
        healer,
        params,
        next,
        context,
    })
}

/// Publishes the turn-end `run/state` of a committed end, keeps the next turn's context rows
/// in the loop's slot, and tells the run what follows.
pub(super) fn published_end(svc: &Services, job: &TurnJob, t: TurnRef, ended: Ended) -> TurnEnd {
    svc.publish_state(t.run.project_id, &job.alias, &ended.params);
    if let Some(context) = ended.context {
        put_kept(&job.context, context);
    }
    let decision = match ended.verdict {
        Verdict::Continue { .. } => Decision::Continue,
        Verdict::Conclude { status, .. } => Decision::Conclude(status),
        Verdict::Abandon { reason, .. } => Decision::Abandon(reason),
    };
    TurnEnd {
        decision,
        healer: ended.healer,
        next: ended.next,
    }
}

/// Ends the turn 413 without dispatching anything: the warning the model reads is `full`'s
/// message, after the budget figures when the budget's ceiling was the cause.
pub(super) async fn overflowed(
    svc: &Services,
    job: TurnJob,
    begun: super::begin::Begun,
    full: Full,
) -> Result<TurnEnd, TurnFailure> {
    let (t, turn_id) = (begun.t, begun.turn_id);
    let divisor = svc.config.limits.token_divisor;
    let Full { message, ceiling } = full;
    svc.store
        .write(move |c| {
            if let Some((over, b)) = ceiling {
                budget::record_overflow(c, t, over, &b, (0, 0), crate::clock::write_ctx(divisor))?;
            }
            record::warning(c, t, &message, crate::clock::write_ctx(divisor))?;
            turns::finish(c, turn_id, 413, now())
        })
        .await
        .map_err(failure)?;
    Ok(TurnEnd {
        decision: Decision::Overflow,
        healer: job.healer,
        next: None,
    })
}
