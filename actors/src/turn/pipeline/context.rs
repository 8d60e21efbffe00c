//! Context: the turn's prompt materialised from the run's context rows, assembled into the two messages, and fitted to the budget (History Demotion — what it archives first folded into the run's summary when the run summarises — then Prompt Demotion; 413 only when nothing fits).
//!
//! The rows a loop read last are kept in its slot ([`TurnJob::context`]) between turns, so a
//! read fetches only the views written since ([`take_kept`]); and the write that begins a turn
//! reads them ahead, on the writer's warm cache ([`read_ahead`]).

use super::begin::Begun;
use super::end::Full;
use super::{failure, loop_flags, summary};
use crate::clock::now;
use crate::services::sandbox::Mode as SandboxMode;
use crate::services::Services;
use crate::sidecar::Charge;
use crate::turn::events::distribution;
use crate::turn::{ContextRead, TurnFailure, TurnJob};
use rummy_core::config::ShellRunner;
use rummy_core::sidecar::SidecarRecord;
use rummy_core::tools;
use rummy_core::tools::context::SkillTools;
use rummy_core::tools::CommandReach;
use rummy_core::turn::assemble::{assemble, AssemblyInput, Messages};
use rummy_core::turn::budget::{self, Budget};
use rummy_core::turn::dispatch::LoopFlags;
use rummy_core::turn::summary::{self as summary_store, render_evicted, HistoryPlan};
use rummy_core::wire::params::OfferedTool;
use rummy_store::context::{context_since, KeptContext};
use rummy_store::entries::ViewRow;
use rummy_store::ids::RunId;
use rummy_store::run::Mode;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tracing::Instrument;

/// A turn's prompt as assembled, with what telemetry and the budget checks need of it.
pub(super) struct Prompt {
    /// The context's distribution by category (telemetry).
    pub spread: Value,
    /// The system and user messages.
    pub messages: Messages,
    /// The revision views written after this assembly get (see [`budget::growth_since`]).
    pub rev: i32,
    /// The run's budget, when its context size is known.
    pub budget: Option<Budget>,
    /// The loop's flags with the tools its run's active skills allow, as the instructions
    /// offered them: dispatch refuses what they did not offer.
    pub flags: LoopFlags,
    /// The side tasks fitting the prompt made (a summary of what History Demotion evicted),
    /// for the turn's telemetry.
    pub sidecar: Vec<SidecarRecord>,
}

impl Prompt {
    /// What the post-dispatch budget check needs to know of this assembly.
    pub fn assembled(&self) -> Assembled {
        Assembled {
            tokens: self.messages.tokens,
            rev: self.rev,
        }
    }
}

/// What the context cost when this turn's prompt was assembled, and from which view revision
/// later writes count: with it, the post-dispatch budget check can often skip reassembly.
#[derive(Debug, Clone, Copy)]
pub(super) struct Assembled {
    /// The estimated tokens of the two messages.
    pub tokens: i32,
    /// The first revision written after assembly.
    pub rev: i32,
}

/// The turn's prompt, fitted to the budget: over it, History Demotion (earlier loops'
/// entries summarized, then archived, oldest first; with summarisation on, what it archives is
/// first folded into the run's summary, for which it leaves room) and, last, Prompt Demotion
/// make room, and the prompt is assembled again. `Err` when nothing can make it fit: the turn then ends 413
/// without calling the model.
pub(super) async fn fit(
    svc: &Services,
    job: &TurnJob,
    begun: Begun,
) -> Result<Result<Prompt, Full>, TurnFailure> {
    let prompt = materialise(svc, job, begun.read).await?;
    let Some(b) = prompt.budget else {
        return Ok(Ok(prompt));
    };
    budget_fit(svc, job, begun, prompt, b)
        .instrument(tracing::info_span!("budget"))
        .await
}

/// The budget's check of an assembled prompt: over the ceiling, History and Prompt Demotion
/// (with a summary folded first in a run that summarises) and the prompt assembled again.
async fn budget_fit(
    svc: &Services,
    job: &TurnJob,
    begun: Begun,
    mut prompt: Prompt,
    b: Budget,
) -> Result<Result<Prompt, Full>, TurnFailure> {
    let mut over = b.overflow(b.calibrate(prompt.messages.tokens));
    if over > 0 {
        let summarizing = summary::summarizing(svc, job);
        if let Some((plan, prior)) = plan_history(svc, job, b, summarizing).await? {
            let charge = Charge::new(begun.t, job.model_alias.clone());
            let (demotion, change) = match plan {
                HistoryPlan::Plain(demotion) => (demotion, SummaryChange::None),
                HistoryPlan::DropSummary(demotion) => (demotion, SummaryChange::Drop),
                HistoryPlan::Fold {
                    demotion,
                    evicted,
                    fallback,
                } => match summary::fold(svc, &charge, prior, render_evicted(&evicted)).await {
                    Some(text) => (demotion, SummaryChange::Store(text)),
                    None => (fallback, SummaryChange::None),
                },
            };
            tracing::info!(
                summarized = demotion.summarize.len(),
                archived = demotion.archive.len(),
                prompt = demotion.prompt,
                summary = change.name(),
                "demoted to fit the context"
            );
            let (t, divisor) = (begun.t, svc.config.limits.token_divisor);
            svc.store
                .write(move |c| {
                    budget::demote(c, t.run.run_id, &demotion, now())?;
                    match &change {
                        SummaryChange::None => {}
                        SummaryChange::Store(text) => {
                            summary_store::store(c, t, text, crate::clock::write_ctx(divisor))?;
                        }
                        SummaryChange::Drop => {
                            summary_store::leave_context(c, t, crate::clock::write_ctx(divisor))?
                        }
                    }
                    budget::record_demotion(c, t, &demotion, crate::clock::write_ctx(divisor))
                })
                .await
                .map_err(failure)?;
            prompt = materialise(svc, job, None).await?;
            prompt.sidecar = charge.records();
            over = b.overflow(b.calibrate(prompt.messages.tokens));
        }
    }
    if over > 0 {
        let message = format!("Context full: {over} tokens over the budget ceiling of {} before the model could be called.", b.ceiling);
        return Ok(Err(Full {
            message,
            ceiling: Some((over, b)),
        }));
    }
    Ok(Ok(prompt))
}

/// Materialises the turn's context from one read. With `read`, the write that allocated the
/// turn (the loop's first, or the previous turn's last: see [`read_ahead`]) already read it,
/// and the rows are in the loop's slot: nothing is read again and the messages are assembled
/// here. Otherwise the read and the assembly run on the blocking pool, so many runs' prompts
/// are built in parallel rather than on the arbiter thread every actor shares.
pub(super) async fn materialise(
    svc: &Services,
    job: &TurnJob,
    read: Option<ContextRead>,
) -> Result<Prompt, TurnFailure> {
    let run_id = job.run.run_id;
    let limits = &svc.config.limits;
    let divisor = limits.token_divisor;
    let (context_size, ceiling) = (job.context_size, limits.budget_ceiling);
    let offer = Offer::of(svc, job);
    let slot = Arc::clone(&job.context);
    if let Some(read) = read {
        if let Some(context) = take_kept(&slot) {
            let budget = Budget::new(context_size, None, ceiling, read.ratio);
            let prompt = assembled(&context, &offer, budget, divisor);
            put_kept(&slot, context);
            return Ok(prompt);
        }
    }
    svc.store
        .read(move |c| {
            let budget = Budget::new(context_size, None, ceiling, budget::last_ratio(c, run_id)?);
            let context = context_since(c, run_id, take_kept(&slot))?;
            let prompt = assembled(&context, &offer, budget, divisor);
            put_kept(&slot, context);
            Ok(prompt)
        })
        .await
        .map_err(failure)
}

/// What a loop offers its model, before the run's active skills narrow the tools: the mode,
/// the flags, whether `search` has a backend, the command cap, the persona, whether the run
/// keeps session state, where its commands run and what they reach, and the tools clients
/// offer the run now.
struct Offer {
    mode: Mode,
    flags: LoopFlags,
    search_enabled: bool,
    max_commands: usize,
    persona: Option<String>,
    session_state: bool,
    reach: CommandReach,
    client_tools: Vec<OfferedTool>,
}

impl Offer {
    fn of(svc: &Services, job: &TurnJob) -> Offer {
        let client_tools = svc.client_tools.offered(job.run.project_id, &job.alias);
        Offer {
            mode: job.mode,
            flags: LoopFlags {
                client_tools: !client_tools.is_empty(),
                ..loop_flags(job)
            },
            client_tools,
            search_enabled: svc.search.is_some(),
            max_commands: svc.config.limits.max_commands,
            persona: job.persona.clone(),
            session_state: job
                .flags
                .session_state
                .unwrap_or(svc.config.session_state.enabled),
            reach: match (svc.config.shell.runner, svc.sandbox.mode()) {
                (ShellRunner::Client, _) | (_, SandboxMode::Unconfined(_)) => {
                    CommandReach::Unconfined
                }
                (ShellRunner::Server, _) => CommandReach::sandboxed(
                    job.command_network,
                    &svc.config.shell.sandbox.network_ports,
                ),
            },
        }
    }

    /// The instructions that open the system message of a turn with these context rows — the
    /// preamble with the tools the mode, the flags and the active skills (`allowedTools`)
    /// offer, and the persona — and the flags dispatch then refuses by.
    fn instructions(&self, rows: &[ViewRow]) -> (String, LoopFlags) {
        let flags = LoopFlags {
            skill_tools: SkillTools::of_rows(rows),
            ..self.flags
        };
        let active = tools::active_tools(self.mode, flags, self.search_enabled);
        let text = tools::instructions(
            &active,
            self.max_commands,
            self.persona.as_deref(),
            &self.reach,
            &self.client_tools,
        );
        (text, flags)
    }
}

/// The prompt of a turn from its context rows.
fn assembled(context: &KeptContext, offer: &Offer, budget: Option<Budget>, divisor: u32) -> Prompt {
    let (instructions, flags) = offer.instructions(context.rows());
    let messages = assemble(AssemblyInput {
        rows: context.rows(),
        instructions: &instructions,
        mode: offer.mode,
        budget,
        divisor,
        session_state: offer.session_state,
    });
    Prompt {
        spread: distribution(context.rows()),
        messages,
        rev: context.next_rev(),
        budget,
        flags,
        sidecar: Vec::new(),
    }
}

/// What History Demotion does to the run's summary.
enum SummaryChange {
    /// Nothing: summarisation is off, nothing was evicted, or the fold failed.
    None,
    /// The new summary, with what was evicted folded in.
    Store(String),
    /// The summary leaves the context: even alone it did not fit.
    Drop,
}

impl SummaryChange {
    /// For the log line.
    fn name(&self) -> &'static str {
        match self {
            SummaryChange::None => "unchanged",
            SummaryChange::Store(_) => "folded",
            SummaryChange::Drop => "dropped",
        }
    }
}

/// The run's budget as the store's calibration stands now (`None` when the context size is
/// not known).
pub(super) async fn budget_for(
    svc: &Services,
    job: &TurnJob,
) -> Result<Option<Budget>, TurnFailure> {
    let run_id = job.run.run_id;
    let ratio = svc
        .store
        .read(move |c| budget::last_ratio(c, run_id))
        .await
        .map_err(failure)?;
    Ok(Budget::new(
        job.context_size,
        None,
        svc.config.limits.budget_ceiling,
        ratio,
    ))
}

/// The least History Demotion that makes the turn's context fit beside the note that tells the
/// model of it — with summarisation on, room for the summary to grow to its cap
/// (`summary::plan_history`) — planned on the blocking pool over the loop's kept rows, with the
/// run's summary as it stands; `None` when nothing would make it fit.
async fn plan_history(
    svc: &Services,
    job: &TurnJob,
    b: Budget,
    summarizing: bool,
) -> Result<Option<(HistoryPlan, Option<String>)>, TurnFailure> {
    let Some(kept) = take_kept(&job.context) else {
        return Ok(None);
    };
    let (mode, divisor) = (job.mode, svc.config.limits.token_divisor);
    let offer = Offer::of(svc, job);
    let session_state = offer.session_state;
    let reserve = budget::demotion_note_reserve(divisor);
    let summary_reserve = summary_store::reserve(svc.config.summary.max_chars, divisor);
    let (kept, plan) = actix_rt::task::spawn_blocking(move || {
        let (instructions, _) = offer.instructions(kept.rows());
        let plan = summary_store::plan_history(
            kept.rows(),
            summarizing,
            summary_reserve,
            |rows, extra| {
                let messages = assemble(AssemblyInput {
                    rows,
                    instructions: &instructions,
                    mode,
                    budget: Some(b),
                    divisor,
                    session_state,
                });
                b.overflow(b.calibrate(messages.tokens + reserve + extra)) == 0
            },
        );
        let prior = plan
            .as_ref()
            .filter(|p| matches!(p, HistoryPlan::Fold { .. }))
            .and_then(|_| kept.rows().iter().find(|r| summary_store::is_summary(r)))
            .map(|r| r.body.clone());
        (kept, plan.map(|plan| (plan, prior)))
    })
    .await
    .map_err(failure)?;
    put_kept(&job.context, kept);
    Ok(plan)
}

/// Kept context rows: takes the run's rows out of the loop's slot, for a read to bring up to
/// date (`store::context::context_since` rereads only the views with a revision above the one
/// they were read at, unless a change without a revision makes it read everything). `None`
/// when the slot is empty — the loop's start, a turn after a proposal — or its lock was
/// poisoned: the rows are then read whole. Turns of a run never overlap, so the lock is never
/// waited on.
pub(super) fn take_kept(slot: &Mutex<Option<KeptContext>>) -> Option<KeptContext> {
    slot.lock().ok().and_then(|mut kept| kept.take())
}

/// Keeps a read's context rows in the loop's slot for its next read (only once the write that
/// read them committed).
pub(super) fn put_kept(slot: &Mutex<Option<KeptContext>>, context: KeptContext) {
    if let Ok(mut kept) = slot.lock() {
        *kept = Some(context);
    }
}

/// Reads ahead: the run's context rows and the budget's calibration, read inside the write
/// before a turn — the loop's first (`begin`), or the previous turn's last (`end::end_turn`) —
/// for that turn. A reader's page cache starts cold after every commit (SQLite drops it when
/// the log changed), the writer's is warm, and the rows then include all that write did; the
/// turn starts by assembling its messages without a read of its own. A change another writer
/// commits before the turn's model call reaches the turn after it, as one committed a moment
/// later would. A failure only costs the turn a read of its own, so it fails nothing.
pub(super) fn read_ahead(
    c: &mut rummy_store::db::Db,
    run_id: RunId,
    kept: Option<KeptContext>,
) -> Option<(KeptContext, ContextRead)> {
    let read = context_since(c, run_id, kept).and_then(|context| {
        let ratio = budget::last_ratio(c, run_id)?;
        Ok((context, ContextRead { ratio }))
    });
    read.inspect_err(|e| tracing::warn!(error = %e, "reading a turn's context ahead failed; the turn reads its own"))
        .ok()
}
